"""A 200-scenario `draopt sweep` on the openb trace: a Dask local cluster against the local
process pool, the same rows checked, both timed.

  python benchmarks/bench_sweep.py                 # 200 scenarios, 2 workers each way
  python benchmarks/bench_sweep.py --quick         # 16 scenarios

The grid: node counts 20, 40, 60, 80, 100 (every k-th openb GPU node) x first-node, best-fit,
least-allocated, fgd x seeds 0-4 x inflation 0.9, 1.0 (`draopt simulate` runs, one per
scenario). Prints the wall time of each engine (progress bars on stderr), whether the rows are
equal (every column but elapsed_s), and the rows per second. Reads ../shared/data/openb/ (stops
with a message when it is missing); writes into a temporary directory.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from draopt.studies import sweep as sw  # noqa: E402
from draopt.studies import trace  # noqa: E402

OPENB = ROOT.parent / "shared" / "data" / "openb"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="16 scenarios")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    if not OPENB.is_dir():
        print(f"bench_sweep: the openb trace is not in {OPENB}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Path(tmp) / "openb-cluster.yaml"
        cluster.write_text(trace.dump_yaml(trace.import_trace(str(OPENB / "openb_node_list_gpu_node.csv"), None)))
        grid = sw.Grid(
            study="simulate",
            clusters=[[str(cluster)]],
            traces=[str(OPENB / "openb_pod_list_default.csv")],
            nodes=[20, 40] if args.quick else [20, 40, 60, 80, 100],
            policies=["first-node", "fgd"] if args.quick else ["first-node", "best-fit", "least-allocated", "fgd"],
            seeds=[0, 1] if args.quick else [0, 1, 2, 3, 4],
            inflation=[0.9, 1.0],
        )
        scenarios = grid.scenarios()
        print(f"{len(scenarios)} scenarios, {args.workers} workers")
        times, rows = {}, {}
        for engine in ("dask", "processes"):
            t0 = time.perf_counter()
            rows[engine] = sw.run_sweep(
                scenarios, str(Path(tmp) / f"{engine}.parquet"), engine=engine, workers=args.workers
            )
            times[engine] = time.perf_counter() - t0
            where = "a Dask local cluster" if engine == "dask" else "a process pool"
            print(
                f"{engine:10s} {times[engine]:7.1f} s  {len(scenarios) / times[engine]:6.2f} scenarios/s "
                f"({where} of {args.workers} worker processes; start-up and loading included)"
            )
        strip = [[{k: v for k, v in r.items() if k != "elapsed_s"} for r in rows[e]] for e in ("dask", "processes")]
        same = strip[0] == strip[1]
        print(f"rows equal (every column but elapsed_s): {same}")
        print(f"dask / processes time: {times['dask'] / times['processes']:.2f}")
        # Resume: a second run finds every row and runs nothing.
        t0 = time.perf_counter()
        sw.run_sweep(
            scenarios, str(Path(tmp) / "processes.parquet"), engine="processes", workers=args.workers, progress=False
        )
        print(f"resume with every row done: {time.perf_counter() - t0:.2f} s")
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
