"""Capacity planning with several node types (`draopt.studies.planning.plan`) on the three workload mixes
of `draopt/testing/plan_scenarios.py` (training, inference, mixed; node types gpu-8 at 32, gpu-2 at 9,
cpu at 3 per node), at several sizes.

Per mix and size: the cheapest mix the CP-SAT model finds, its cost, status, proven lower bound
and whether it is proven minimal; the one-fewer checks; next to the cluster-autoscaler-style
first-fit-decreasing estimate of every type and the cheapest of those, with the saving of the
model over it (measured in the same run). Times: the estimates, model build, the pods phase, the
cost phase, the one-fewer checks and the whole plan; the model size (variables, constraints,
candidate copies per type, interchangeable-node classes).

Checked on every row (the benchmark stops with an error otherwise): the model's cost is never
above the cheapest estimate that places as many pods.

  python benchmarks/bench_plan.py            # 40, 200 and 1,000 pods per mix (~30 s)
  python benchmarks/bench_plan.py --quick    # 40 pods per mix
  python benchmarks/bench_plan.py --sizes 1000 --max-nodes 256   # the CLI's default cap
  python benchmarks/bench_plan.py --openb [--time-limit 600]      # openb's 15 node types, whole default trace

`--openb`: one node of each of openb's 15 GPU node types (../shared/data/openb/openb_node_list_gpu_node.csv,
the first of each (cpu, memory, GPUs, model)) as the templates, a node's cost = its GPUs, and every task of
openb_pod_list_default.csv (8,152) pending: the cheapest mix by column generation (draopt/model/colgen_plan.py)
next to the first-fit-decreasing estimate of each type; wall time and peak RSS (getrusage) of the whole plan.
"""

from __future__ import annotations

import argparse
import sys
import time

from draopt.allocation import allocate as api
from draopt.testing.plan_scenarios import MIXES, scenario
from draopt.studies.planning import plan


def run(mix: str, pods: int, time_limit: float, max_nodes: int) -> dict:
    objs, types = scenario(mix, pods)
    t0 = time.perf_counter()
    p = plan(objs, types, time_limit=time_limit, max_nodes=max_nodes or pods)
    wall = time.perf_counter() - t0
    best = p.ffd_best()
    if best.placed >= p.placed and p.cost > best.cost:
        raise SystemExit(f"{mix}/{pods}: the model's cost {p.cost} is above the estimate's {best.cost}")
    return {"mix": mix, "pods": pods, "plan": p, "best": best, "wall": wall}


def run_openb(time_limit: float, pods: str) -> int:
    import csv
    import os
    import resource
    from fractions import Fraction
    from pathlib import Path

    from draopt.kube.loader import load_files
    from draopt.studies import trace
    from draopt.studies.planning import NodeType

    openb = Path(__file__).resolve().parents[2] / "shared" / "data" / "openb"
    if not openb.is_dir():
        print(f"bench_plan: {openb} not found", file=sys.stderr)
        return 2
    rows = list(csv.DictReader(open(openb / "openb_node_list_gpu_node.csv")))
    first: dict[tuple, dict] = {}
    for r in rows:
        first.setdefault((r["cpu_milli"], r["memory_mib"], r["gpu"], r["model"]), r)
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / "bench_plan_openb"
    tmp.mkdir(exist_ok=True)
    nodes_csv = tmp / "types.csv"
    with open(nodes_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(first.values())
    inp = tmp / "input.yaml"
    inp.write_text(trace.dump_yaml(trace.import_trace(str(nodes_csv), str(openb / f"openb_pod_list_{pods}.csv"))))
    objs = load_files([str(inp)])
    types = [NodeType(r["sn"], r["sn"], Fraction(int(r["gpu"]))) for r in first.values()]
    t0 = time.perf_counter()
    # Candidates up to the number of pods: the estimates are not capped (256, the CLI's default, would).
    p = plan(objs, types, time_limit=time_limit, max_nodes=len([o for o in objs.pods]))
    wall = time.perf_counter() - t0
    best = p.ffd_best()
    st = p.stats.to_dict()
    print(p.table())
    print()
    print(
        "| pods | mix cost | bound | gap | status | ffd best | ffd cost | saving | rounds | columns | "
        "converged | wall s | peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    saving = float((best.cost - p.cost) / best.cost) if best.cost else 0.0
    print(
        f"| {p.placed}/{p.pods} | {float(p.cost):.0f} | {float(p.bound):.0f} | {p.gap:.2%} | {p.status} | "
        f"{best.nodes} x {best.node_type.name} | {float(best.cost):.0f} | {saving:.1%} | {st.get('colgen_rounds')} | "
        f"{st.get('colgen_columns')} | {st.get('colgen_converged')} | {wall:.1f} | "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} |"
    )
    print({k: v for k, v in st.items() if k.startswith("colgen_") or k.endswith("_s")})
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument(
        "--max-nodes",
        type=int,
        default=0,
        help="candidate copies per type at most (default: the number of pods, so that the cap "
        "never stops a proof; 256 is the CLI's default)",
    )
    ap.add_argument("--sizes", default="", help="comma-separated pod counts (default 40,200,1000)")
    ap.add_argument("--openb", action="store_true", help="openb's node types and a whole trace (see above)")
    ap.add_argument("--pods", default="default", help="--openb: the trace (default, gpushare100, ...)")
    args = ap.parse_args()
    if args.openb:
        return run_openb(args.time_limit if args.time_limit != 60.0 else 600.0, args.pods)
    api.warm_up()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([40] if args.quick else [40, 200, 1000])
    print(
        f"{'mix':10s} {'pods':>5s} {'optimal mix':34s} {'cost':>6s} {'bound':>6s} {'status':8s} {'proven':6s} "
        f"{'ffd best':18s} {'ffd cost':>8s} {'saving':>7s} {'one fewer':10s} {'ffd_s':>6s} {'build_s':>7s} "
        f"{'pods_s':>6s} {'cost_s':>6s} {'fewer_s':>7s} {'total_s':>7s} {'vars':>6s} {'cons':>6s} candidates"
    )
    for pods in sizes:
        for mix in MIXES:
            r = run(mix, pods, args.time_limit, args.max_nodes)
            p, best, st = r["plan"], r["best"], r["plan"].stats.to_dict()
            mix_text = " + ".join(f"{n} {t}" for t, n in p.mix.items() if n) or "-"
            saving = float((best.cost - p.cost) / best.cost) if best.cost else 0.0
            fewer = (
                "proven"
                if p.one_fewer and all("proven infeasible" in o.verdict for o in p.one_fewer)
                else ("-" if not p.one_fewer else "NOT PROVEN")
            )
            print(
                f"{mix:10s} {pods:5d} {mix_text:34s} {float(p.cost):6.0f} {float(p.bound):6.0f} {p.status:8s} "
                f"{p.proven_minimal!s:6s} {f'{best.nodes} {best.node_type.name}':18s} {float(best.cost):8.0f} "
                f"{saving:7.1%} {fewer:10s} {st.get('ffd_s', 0):6.2f} {st.get('build_s', 0):7.2f} "
                f"{st.get('placed_s', 0):6.2f} {st.get('cost_s', 0):6.2f} {st.get('one_fewer_s', 0):7.2f} "
                f"{r['wall']:7.2f} {st.get('variables', 0):6d} {st.get('constraints', 0):6d} "
                f"{' '.join(f'{t}={n}' for t, n in p.candidates.items())}"
            )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
