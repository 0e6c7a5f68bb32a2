"""The study table of `draopt simulate --protocol fgd-paper`: per openb trace (default, gpushare100,
gpuspec33, multigpu50) and arrived bin (95, 100, 130 %), unallocated GPU % as the paper
published it, as draopt reproduces it (fgd, seeds 42-51), draopt's online optimum
(`optimal-batch`, when registered under fgd-paper) and the offline optimum with its bound
(draopt.studies.paper_protocol.offline_paper: seed 42, bin 100 by default; minutes per solve).

  python benchmarks/bench_study_table.py                              # everything, 1,213 nodes
  python benchmarks/bench_study_table.py --offline-traces default --time-limit 300
  python benchmarks/bench_study_table.py --every 8 --seeds 2 --time-limit 10   # a quick look

Reads ../shared/data/openb/ (stops when it is missing). Every run's placement (online and
offline) is replayed from the CSV numbers (bench_simulate.independent_check); a failure is
printed and makes the exit status 1. Prints a Markdown table, then the command that made it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_simulate as bs

from draopt.studies import paper_protocol as P
from draopt.studies import simulate as sim

TRACES = ["default", "gpushare100", "gpuspec33", "multigpu50"]
BINS = [95, 100, 130]


def paper_figures(pods: str, b: int) -> tuple[float, str]:
    """The paper's FGD figure, and for default the other policies' (bench_simulate.PAPER)."""
    if pods == "default":
        others = ", ".join(f"{k} {v[b]:.2f}" for k, v in bs.PAPER.items() if k != "FGD")
        return bs.PAPER["FGD"][b], others
    return bs.PAPER_OTHER[pods][b], ""


def cell(v: dict | None) -> str:
    return "-" if v is None else f"{v['unallocated_pct']:.2f} ± {v['std_pct']:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default=",".join(TRACES))
    ap.add_argument("--bins", default=",".join(map(str, BINS)), help="arrived %% bins (each in the paper's table)")
    ap.add_argument("--every", type=int, default=1, help="every Nth GPU node (1: all 1,213)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--seeds", type=int, default=10, help="seeds of fgd and optimal-batch (42..)")
    ap.add_argument(
        "--seeds-online-optimum", type=int, default=None, help="seeds of optimal-batch (default --seeds; 0: not run)"
    )
    ap.add_argument("--seeds-offline", type=int, default=1, help="seeds of the offline optimum (0: not run)")
    ap.add_argument("--offline-bins", default="100")
    ap.add_argument("--offline-traces", default=None, help="traces with an offline optimum (default --traces)")
    ap.add_argument("--time-limit", type=float, default=300.0, help="per offline solve, seconds")
    args = ap.parse_args()
    if not bs.OPENB.is_dir():
        print(f"bench_study_table: {bs.OPENB} not found", file=sys.stderr)
        return 2
    traces = args.traces.split(",")
    bins = [int(b) for b in args.bins.split(",")]
    for b in bins:
        if b not in bs.PAPER["FGD"]:
            print(
                f"bench_study_table: --bins {b}: not a bin of the paper's table ({sorted(bs.PAPER['FGD'])})",
                file=sys.stderr,
            )
            return 2
    off_bins = [int(b) for b in args.offline_bins.split(",")] if args.seeds_offline else []
    off_traces = set((args.offline_traces or args.traces).split(","))
    seeds = list(range(args.seed, args.seed + args.seeds))
    n_ob = args.seeds if args.seeds_online_optimum is None else args.seeds_online_optimum
    online_optimum = "optimal-batch" in P.known_policies() and n_ob > 0
    t_all = time.perf_counter()
    problems = 0
    table: list[str] = []
    for pods in traces:
        t0 = time.perf_counter()
        nodes, objects = bs.cluster_objects(args.every, pods)
        c = sim.build(objects)
        pc = P.prepare(c)
        print(f"{pods}: {c.n} nodes, {pc.gpus} GPUs, built in {time.perf_counter() - t0:.0f} s", flush=True)
        runs: list[P.PaperRun] = []
        for i, seed in enumerate(seeds):
            arr = P.paper_arrivals(c, seed)
            for pol in ["fgd"] + (["optimal-batch"] if online_optimum and i < n_ob else []):
                r = P.run_paper(c, arr, pol)
                runs.append(r)
                placed = [(c.shapes[e[0]], e[1], e[2]) for e in r.log if e is not None]
                errs = bs.independent_check(c, nodes, placed, pods)
                problems += len(errs)
                for e in errs[:5]:
                    print(f"  CHECK FAILED {pods} {r.policy} seed {seed}: {e}", flush=True)
                print(f"  seed {seed}: {pol}: {len(arr.shapes)} arrivals in {r.seconds:.1f} s", flush=True)
        curves = {
            pol: P.bin_curve([P.bin_seed(r.arrived, r.allocated, pc.gpus, bins) for r in runs if r.policy == pol])
            for pol in dict.fromkeys(r.policy for r in runs)
        }
        solves: list[P.OfflineSolve] = []
        if pods in off_traces and off_bins:
            for seed in seeds[: args.seeds_offline]:
                got = P.offline_paper(
                    c,
                    P.paper_arrivals(c, seed),
                    [r for r in runs if r.seed == seed],
                    off_bins,
                    time_limit=args.time_limit,
                )
                for o in got:
                    errs = bs.independent_check(c, nodes, [(c.shapes[si], n, d) for si, n, d in o.log], pods)
                    problems += len(errs)
                    for e in errs[:5]:
                        print(f"  CHECK FAILED {pods} offline seed {seed} bin {o.bin}: {e}", flush=True)
                    print(
                        f"  seed {seed}: offline bin {o.bin}: {o.arrivals} arrivals from {o.warm} "
                        f"({100 * (1 - o.warm_allocated / pc.capacity_milli):.2f} %) -> "
                        f"{100 * (1 - o.allocated / pc.capacity_milli):.2f} %, bound "
                        f"{'-' if o.bound is None else f'{100 * max(0.0, 1 - o.bound / pc.capacity_milli):.2f} %'}, "
                        f"{o.status}, {o.seconds:.0f} s",
                        flush=True,
                    )
                solves += got
        off = {row.inflation: row.to_dict() for row in P.offline_rows(solves, pc.gpus, pc.capacity_milli)}
        # fgd's unallocated % after exactly the arrivals each offline solve placed (same seed, same
        # pods): what "below fgd on the same arrivals" is measured against.
        fgd_same: dict[int, list[float]] = {}
        for o in solves:
            fgd_run = next(r for r in runs if r.seed == o.seed and r.policy == "fgd")
            fgd_same.setdefault(o.bin, []).append(
                100 * (1 - int(fgd_run.allocated[o.arrivals - 1]) / pc.capacity_milli)
            )
        for b in bins:
            paper_fgd, others = paper_figures(pods, b)
            ours = curves["fgd"].get(b)
            ob = curves.get("optimal-batch", {}).get(b)
            o = off.get(b / 100)
            warm = [x for x in solves if x.bin == b]
            off_cell = (
                "-"
                if o is None
                else (
                    f"{o['unallocated_pct']:.2f} (seed {warm[0].seed}: {warm[0].warm} "
                    f"{100 * (1 - warm[0].warm_allocated / pc.capacity_milli):.2f})"
                    if len(warm) == 1
                    else f"{o['unallocated_pct']:.2f} ({o['runs']} seeds)"
                )
            )
            bound_cell = "-" if o is None or o["bound_unallocated_pct"] == "" else f"{o['bound_unallocated_pct']:.2f}"
            same = fgd_same.get(b)
            fgd_cell = "-" if not same else f"{sum(same) / len(same):.2f}"
            below_cell = (
                "-" if o is None or not same else f"{round(sum(same) / len(same) - o['unallocated_pct'], 2) + 0.0:.2f}"
            )
            table.append(
                f"| {pods} | {b} % | {paper_fgd:.2f} | {cell(ours)} | {cell(ob)} | {off_cell} | {bound_cell} | "
                f"{fgd_cell} | {below_cell} | "
                f"{'-' if o is None else o['status']} | {others or '-'} |"
            )
        print(f"{pods}: done in {time.perf_counter() - t0:.0f} s", flush=True)
    print(
        f"\nUnallocated GPU % (fgd-paper protocol, {'all 1,213' if args.every == 1 else f'every {args.every}th'} "
        f"GPU nodes; ours: mean ± std over seeds {seeds[0]}-{seeds[-1]}"
        + (f"; optimal-batch: {n_ob} seed(s)" if online_optimum else "; optimal-batch: not registered/run")
        + f"; offline: {args.seeds_offline} seed(s) from {args.seed}, bins {args.offline_bins}, "
        f"{args.time_limit:g} s per solve)\n"
    )
    print(
        "| trace | arrived | paper FGD | ours fgd | online optimum (optimal-batch) | offline optimum (its warm start) | "
        "offline bound | fgd, same arrivals | offline below fgd | offline status | paper, other policies |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(table))
    print(f"\nindependent check: {problems} problem(s); total {time.perf_counter() - t_all:.0f} s")
    print("command: python benchmarks/bench_study_table.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
