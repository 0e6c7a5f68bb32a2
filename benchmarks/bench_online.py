"""`optimal-batch` (draopt/studies/online_batch.py; under --protocol fgd-paper draopt/studies/paper_batch.py)
against `fgd` on the openb traces: unallocated GPU % at 100 % arrived, per seed on the same arrivals, the
difference, and wall time per seed.

  python benchmarks/bench_online.py                          # 1,213 GPU nodes, 4 traces, seeds 42-51
  python benchmarks/bench_online.py --every 8 --seeds 42:52  # every 8th node (152)
  python benchmarks/bench_online.py --traces default --batch 200,500,1000    # the paper's protocol: K
  python benchmarks/bench_online.py --protocol default --traces default --batch 50,100,200 --size-weight 0,0.3
  python benchmarks/bench_online.py --protocol fgd-paper --policy fgd,optimal-batch,lp-guided   # issue 35
  python benchmarks/bench_online.py --policy fgd,lp-guided --traces default --seeds 42:43 --time-limit 60

`--policy` (fgd-paper only): the named policies of the protocol on the same arrivals, `lp-guided`
standing for its three variants (lp-guided: the known source, lp-guided-learned, bid-price;
draopt/studies/lp_guided.py; `--variants` names fewer). Per trace: unallocated GPU % at the 100 % bin (mean of the seeds),
the worst excess over fgd at any bin 50-130 %, and the share of the gap between fgd and the
offline bound (the mean of seeds 42-44's) it closes against issue 35's targets (half for lp-guided, a third for learned).

Arrivals: `--protocol fgd-paper` is the FGD paper's (draopt.studies.paper_protocol: seeded shuffle, -tune
1.3, the whole run to 130 %, unallocated % of the arrived-% bin of --level, fgd after the
authors' fgd_score.go); `--protocol default` is draopt simulate's (tasks sampled with replacement
until the requested GPU reaches --level; fgd is draopt.studies.simulate's `place_one(..., "fgd")`, or with
`--fgd table` online_batch's delta table in arrival order: the same rule, faster, float ties may
pick another equal node). Wall time per seed is the whole run's.
Every placement is replayed from the CSV numbers alone (no node over cpu or memory, no GPU over
1000 milli, whole-GPU tasks alone on their GPUs, gpu_spec models kept).
Reads ../shared/data/openb/ (not part of the repository; stops when it is missing).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from draopt.studies import online_batch as ob  # noqa: E402
from draopt.studies.paper_batch import DEFAULT_BATCH as PAPER_BATCH  # noqa: E402
from draopt.studies import simulate as sim  # noqa: E402
from draopt.studies import trace  # noqa: E402

OPENB = ROOT.parent / "shared" / "data" / "openb"
TRACES = ("default", "gpushare100", "gpuspec33", "multigpu50")


def build(every: int, name: str):
    nodes = trace.read_nodes(str(OPENB / "openb_node_list_gpu_node.csv"))[::every]
    tasks = trace.read_tasks(str(OPENB / f"openb_pod_list_{name}.csv"))
    docs = trace.class_objects({n.model for n in nodes}) + trace.node_objects(nodes) + trace.slice_objects(nodes)
    objects = sim._object_set(docs, "openb nodes")
    objects.extend(sim._object_set(trace.workload_objects(tasks), "openb tasks"))
    return nodes, tasks, sim.build(objects)


def replay(c: sim.SimCluster, nodes, tasks, seq, log) -> list[str]:
    """Placements (one per arrival, None: failed) checked with the CSV's numbers only."""
    by_key = {f"openb/{t.name}": t for t in tasks}
    return trace.replay_errors(
        nodes, ((by_key[c.shapes[si].pods[0]], c.nodes[got[0]], got[1]) for si, got in zip(seq, log) if got is not None)
    )


def arrivals(c, seed: int, protocol: str):
    """draopt's protocol: (shape indices, cumulative requested GPU) of a seed's arrivals to 130 %."""
    return sim.arrivals(c, 1.3, np.random.default_rng([seed, 0]))


def paper_run(c, arr, label: str, cfg):
    """The paper's protocol: the whole run (to 130 %), unallocated % in the bin of `--level`
    (merge_alloc_discrete's binning), the log and the arrivals' shapes for the replay."""
    from draopt.studies import paper_protocol as pp

    if cfg is None:
        pol = "fgd"
    else:
        # The protocol's optimal-batch (draopt.studies.paper_batch), its window and horizon K.
        pol = pp.make_policy("optimal-batch")
        pol.batch = pol.horizon = cfg[0]
    r = pp.run_paper(c, arr, pol)
    b = round(LEVEL * 100)
    u = 100 - pp.bin_seed(r.arrived, r.allocated, pp.prepare(c).gpus, [b])[b]
    return u, [(x[1], x[2]) if x else None for x in r.log], [int(s) for s in arr.shapes]


LEVEL = 1.0


def run_fgd(c, frag, seq, how: str):
    st = sim.State(c)
    if how == "table":
        pol = ob.OptimalBatch(c, frag, batch=1, order="arrival")
        return st, ob.run_batches(pol, st, seq)
    log = []
    for si in seq:
        s = c.shapes[int(si)]
        got = sim.place_one(st, s, "fgd", frag)
        if got is None:
            st.failed += 1
        else:
            st.take(s, got[0], got[1])
        log.append(got)
    return st, log


# The offline optimum's bound at the 100 % bin (unallocated GPU %), the mean of seeds 42-44's
# (docs/studies/online-lp.md, "Round 5"; issue 35's table gave seed 42's alone: 2.99, 10.79, 3.21,
# 1.53; gpuspec33's seed 43 since its master LP's stall was fixed: 3.348), so that the gap
# closed is a mean against a mean; lp-guided (known) is to close half of the gap from fgd, learned a third.
OFFLINE_BOUND = {"default": 3.026, "gpushare100": 10.817, "gpuspec33": 3.196, "multigpu50": 1.595}
# Issue 35's targets for lp-guided (known) at the 100 % bin, from seed 42's bound.
TARGET_KNOWN = {"default": 3.85, "gpushare100": 12.05, "gpuspec33": 7.6, "multigpu50": 2.25}
PAPER_BINS = list(range(50, 131))
LP_VARIANTS = ("lp-guided", "lp-guided-learned", "bid-price")


def policies_main(args) -> int:
    """--policy: the protocol's policies on the same arrivals, the table of issue 35 per trace."""
    from draopt.studies import paper_protocol as pp

    names: list[str] = []
    for p in args.policy.split(","):
        names += args.variants.split(",") if p == "lp-guided" else [p]
    names = list(dict.fromkeys(["fgd"] + names))
    lo, hi = (int(x) for x in args.seeds.split(":"))
    problems = 0
    for name in args.traces.split(","):
        nodes, tasks, c = build(args.every, name)
        pc = pp.prepare(c)
        objs = {p: pp.make_policy(p, time_limit=args.time_limit) for p in names}
        curves: dict[str, list[dict[int, float]]] = {p: [] for p in names}
        secs: dict[str, float] = dict.fromkeys(names, 0.0)
        for seed in range(lo, hi):
            arr = pp.paper_arrivals(c, seed)
            for p in names:
                r = pp.run_paper(c, arr, objs[p])
                secs[p] += r.seconds
                errs = replay(c, nodes, tasks, arr.shapes, [(x[1], x[2]) if x else None for x in r.log])
                problems += len(errs)
                for e in errs[:3]:
                    print(f"    CHECK FAILED {p}: {e}")
                curves[p].append(pp.bin_seed(r.arrived, r.allocated, pc.gpus, PAPER_BINS))
                u = 100 - curves[p][-1][100]
                print(f"  {name} seed {seed}: {p} {u:.2f} % ({r.seconds:.1f} s)", flush=True)
        print(_policies_table(name, c.n, lo, hi, names, curves, secs, objs), flush=True)
    print(f"\nindependent replay: {'OK' if not problems else f'{problems} problem(s)'}")
    return 1 if problems else 0


def _policies_table(name, n, lo, hi, names, curves, secs, objs) -> str:
    def mean(p: str, b: int) -> float:
        return 100 - float(np.mean([d[b] for d in curves[p] if b in d]))

    fgd = mean("fgd", 100)
    bound = OFFLINE_BOUND.get(name)
    lines = [
        f"\n{name}: {n} nodes, seeds {lo}-{hi - 1}, unallocated GPU % at the 100 % bin "
        f"(offline bound {bound}: seeds 42-44's mean; issue 35's target for lp-guided {TARGET_KNOWN.get(name)})",
        "| policy | 100 % | vs fgd | worst bin 50-130 % over fgd | gap closed | target | s/seed | LP solves / re-solves not converged |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in names:
        u = mean(p, 100)
        worst = max(mean(p, b) - mean("fgd", b) for b in PAPER_BINS)
        closed = (fgd - u) / (fgd - bound) if bound is not None and fgd > bound else float("nan")
        want = {"lp-guided": 0.5, "lp-guided-learned": 1 / 3}.get(p)
        target = "" if want is None else ("met" if closed >= want and worst <= 0.1 else "missed") + f" ({want:.0%})"
        t = getattr(objs[p], "totals", {})
        lp = f"{t.get('solves', 0)} / {t.get('resolve_timeouts', 0)}" if t else ""
        lines.append(
            f"| {p} | {u:.2f} | {u - fgd:+.2f} | {worst:+.2f} | {closed:.0%} | {target} | "
            f"{secs[p] / (hi - lo):.1f} | {lp} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--every", type=int, default=1, help="every K-th GPU node (default all 1,213)")
    ap.add_argument("--traces", default=",".join(TRACES))
    ap.add_argument("--seeds", default="42:52", help="START:STOP (default 42:52, the paper's 10 seeds)")
    ap.add_argument(
        "--batch",
        help="K, or a comma list to compare (default: the protocol's optimal-batch's; "
        "fgd-paper: draopt.studies.paper_batch's window, its horizon too)",
    )
    ap.add_argument("--size-weight", help="a value or a comma list (default: the protocol's optimal-batch's)")
    ap.add_argument("--level", type=float, default=1.0, help="arrived share measured (default 1.0)")
    ap.add_argument("--protocol", default="fgd-paper", choices=("default", "fgd-paper"))
    ap.add_argument("--fgd", default="simulate", choices=("simulate", "table", "none"))
    ap.add_argument("--policy", help="fgd-paper: the protocol's policies to compare (issue 35's table)")
    ap.add_argument(
        "--time-limit", type=float, default=60.0, help="not used by lp-guided (its LP solves are bounded by rounds)"
    )
    ap.add_argument(
        "--variants",
        default=",".join(LP_VARIANTS),
        help="what --policy lp-guided stands for (default: its three variants)",
    )
    args = ap.parse_args()
    if not OPENB.is_dir():
        print(f"bench_online: the openb trace is not at {OPENB}: nothing to measure", file=sys.stderr)
        return 0
    if args.protocol == "fgd-paper":
        import importlib.util

        if importlib.util.find_spec("draopt.studies.paper_protocol") is None:
            print(
                "bench_online: --protocol fgd-paper needs draopt/studies/paper_protocol.py, which is absent",
                file=sys.stderr,
            )
            return 2
    if args.policy:
        if args.protocol != "fgd-paper":
            print("bench_online: --policy is --protocol fgd-paper's", file=sys.stderr)
            return 2
        return policies_main(args)
    global LEVEL
    LEVEL = args.level
    paper = args.protocol == "fgd-paper"
    args.batch = args.batch or str(PAPER_BATCH if paper else ob.DEFAULT_BATCH)
    if paper and args.size_weight:
        print(
            "bench_online: --size-weight is draopt's protocol's (OptimalBatch); --protocol fgd-paper's "
            "optimal-batch has none",
            file=sys.stderr,
        )
        return 2
    args.size_weight = args.size_weight or ("0" if paper else str(ob.DEFAULT_SIZE_WEIGHT))
    lo, hi = (int(x) for x in args.seeds.split(":"))
    configs = [(int(k), float(w)) for k in args.batch.split(",") for w in args.size_weight.split(",")]
    problems = 0
    summary = []
    for name in args.traces.split(","):
        t0 = time.perf_counter()
        nodes, tasks, c = build(args.every, name)
        frag = sim.FragModel(c, np.array([len(s.pods) for s in c.shapes], dtype=float))
        print(
            f"\n{name}: {c.n} nodes, {c.total / 1000:g} GPUs, {len(c.shapes)} shapes, built in "
            f"{time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        res: dict[str, list[float]] = {}
        secs: dict[str, list[float]] = {}
        for seed in range(lo, hi):
            if args.protocol == "fgd-paper":
                from draopt.studies import paper_protocol as pp

                arr = pp.paper_arrivals(c, seed, tune=1.3)
                line = f"  seed {seed}: {len(arr.shapes)} arrivals (to 130 %)"
            else:
                seq, cum = arrivals(c, seed, args.protocol)
                seq = seq[: int(np.searchsorted(cum, args.level * c.total, side="right"))]
                line = f"  seed {seed}: {len(seq)} arrivals"
            runs = [] if args.fgd == "none" else [("fgd", None)]
            runs += [(f"ob K={k} w={w:g}", (k, w)) for k, w in configs]
            for label, cfg in runs:
                t = time.perf_counter()
                if args.protocol == "fgd-paper":
                    u, log, seq_run = paper_run(c, arr, label, cfg)
                    dt = time.perf_counter() - t
                    errs = replay(c, nodes, tasks, seq_run, log)
                    problems += len(errs)
                    for e in errs[:3]:
                        print(f"    CHECK FAILED {label}: {e}")
                    res.setdefault(label, []).append(u)
                    secs.setdefault(label, []).append(dt)
                    line += f"  {label} {u:.3f} % ({dt:.1f} s)"
                    continue
                if cfg is None:
                    st, log = run_fgd(c, frag, seq, args.fgd)
                else:
                    st = sim.State(c)
                    log = ob.run_batches(ob.OptimalBatch(c, frag, batch=cfg[0], size_weight=cfg[1]), st, seq)
                dt = time.perf_counter() - t
                errs = replay(c, nodes, tasks, seq, log)
                problems += len(errs)
                for e in errs[:3]:
                    print(f"    CHECK FAILED {label}: {e}")
                u = 100 * (1 - st.allocated / c.total)
                res.setdefault(label, []).append(u)
                secs.setdefault(label, []).append(dt)
                line += f"  {label} {u:.3f} % ({dt:.1f} s)"
            print(line, flush=True)
        for label in res:
            u = np.array(res[label])
            diff = ""
            if "fgd" in res and label != "fgd":
                d = u - np.array(res["fgd"])
                diff = f"  vs fgd {d.mean():+.3f} (better on {(d < 0).sum()}/{len(d)} seeds, worst {d.max():+.3f})"
            row = (
                f"{name:12s} {label:16s} {u.mean():.3f} % (sd {u.std(ddof=1) if len(u) > 1 else 0:.3f}){diff}  "
                f"{np.mean(secs[label]):.1f} s/seed"
            )
            summary.append(row)
            print(row, flush=True)
    print(
        f"\nsummary (unallocated GPU % at {args.level * 100:g} % arrived, mean of seeds {lo}-{hi - 1}, "
        f"protocol {args.protocol}):"
    )
    print("\n".join(summary))
    print(f"\nindependent replay: {'OK' if not problems else f'{problems} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
