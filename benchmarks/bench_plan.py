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
  python benchmarks/bench_plan.py --dra [--csv docs/studies/planning.csv]   # GPU + NIC and MIG fleets
  python benchmarks/bench_plan.py --scale [--sizes 8000,20000,40000,80000]  # 40 types, growth in pods

`--openb`: one node of each of openb's 15 GPU node types (../shared/data/openb/openb_node_list_gpu_node.csv,
the first of each (cpu, memory, GPUs, model)) as the templates, a node's cost = its GPUs, and every task of
openb_pod_list_default.csv (8,152) pending. First Karpenter's provisioning and cluster-autoscaler's loop
with each expander (priority: more GPUs first), each timed; then the cheapest mix by column generation
(draopt/model/colgen_plan.py), started from the cheapest baseline that places every pod (its incumbent:
the mix is never dearer), next to the first-fit-decreasing estimate of each type, with the wall time and
peak RSS (getrusage) of the whole run so far; then the baselines, each placing the whole trace (a
baseline that leaves pods says how many and why), the incumbent, the optimal mix's cost, bound and gap,
and one "optimal saves N (x %) against ..." line per baseline (--no-baselines: the mix only).

`--dra`: `dra_fleets` (GPU + NIC alignment, partitionable MIG; two node types each), the mix and every
baseline through draopt.plan. `--scale`: `write_scale_fleet` per size, `draopt plan` in a process of
its own; wall and cpu seconds, the phases, peak RSS and the load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction

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


def run_openb(time_limit: float, pods: str, baselines: bool = True) -> int:
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
    # The baselines first: the cheapest that places every pod is the plan's incumbent.
    done = run_baselines_timed(objs, types) if baselines else []
    t0 = time.perf_counter()
    # Candidates up to the number of pods: the estimates are not capped (256, the CLI's default, would).
    p = plan(objs, types, time_limit=time_limit, max_nodes=len([o for o in objs.pods]), incumbents=[b for b, _ in done])
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
    saving = float((best.cost - p.cost) / best.cost) if best is not None and best.cost else 0.0
    best_text = "-" if best is None else f"{best.nodes} x {best.node_type.name}"
    best_cost = "-" if best is None else f"{float(best.cost):.0f}"
    print(
        f"| {p.placed}/{p.pods} | {float(p.cost):.0f} | {float(p.bound):.0f} | {p.gap:.2%} | {p.status} | "
        f"{best_text} | {best_cost} | {saving:.1%} | {st.get('colgen_rounds')} | "
        f"{st.get('colgen_columns')} | {st.get('colgen_converged')} | {wall:.1f} | "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} |"
    )
    print({k: v for k, v in st.items() if k.startswith("colgen_") or k.endswith("_s") or k.startswith("incumbent")})
    if baselines:
        print()
        print_baselines(p, done)
    return 0


def openb_priorities(types) -> dict:
    """The priority expander's rules for the openb run: the types with more GPUs first (a team that
    prefers big nodes), one priority per GPU count."""
    import re

    out: dict[int, list[str]] = {}
    for t in types:
        out.setdefault(int(t.cost), []).append(f"^{re.escape(t.name)}$")
    return out


def run_baselines_timed(objs, types) -> list:
    """Karpenter's provisioning and cluster-autoscaler's loop with each expander on the same input,
    each timed: [(AutoscalerBaseline, seconds)]. They share the kube-scheduler's view of the input
    and the runs on copies of each type (made by the first that needs them: their time is in its
    row)."""
    from draopt.kube.features import Features
    from draopt.studies.baselines import BASELINES, SharedInput

    shared = SharedInput(objs, types, Features.from_gates())
    done = []
    for name in BASELINES:
        t0 = time.perf_counter()
        done.append((shared.run(name, openb_priorities(types), 0), time.perf_counter() - t0))
    return done


def print_baselines(p, done: list) -> None:
    """The baselines of `run_baselines_timed` beside the optimal mix `p`, and what it saves
    against each (draopt.studies.baselines). A baseline that leaves pods pending says how many
    and why."""
    from collections import Counter

    from draopt.studies.autoscalers import savings

    print("| baseline | cost | new nodes | nodes per type | placed | rounds | s | optimal saves |")
    print("|---|---|---|---|---|---|---|---|")
    for b, seconds in done:
        saved = b.cost - p.cost
        share = f"{float(saved / b.cost):.1%}" if b.cost else "-"
        mix = " + ".join(f"{n} {t}" for t, n in b.nodes.items() if n) or "-"
        print(
            f"| {b.name} | {float(b.cost):.0f} | {sum(b.nodes.values())} | {mix} | {b.placed}/{b.pods} | {b.rounds} | "
            f"{seconds:.1f} | {float(saved):.0f} ({share}) |"
        )
    print()
    for b, _ in done:
        if b.placed < b.pods:
            why = Counter(b.not_placed.values()).most_common(3)
            print(
                f"{b.name} leaves {b.pods - b.placed} of {b.pods} pods pending: "
                + "; ".join(f"{n} x {w}" for w, n in why)
            )
        for note in b.notes:
            print(f"{b.name}: {note}")
    if p.stats.incumbent:
        print(p.incumbent_line())
    print(
        f"optimal mix: cost {float(p.cost):.0f}, bound {float(p.bound):.0f}, gap {p.gap:.2%}, "
        f"places {p.placed} of {p.pods}"
    )
    for b, _ in done:
        print(savings(p.cost, p.placed, [b]))


# ---------------------------------------------------------------- --scale: 8,000 to 80,000 pods, 40 types

# A GPU's price per model (a unit a GPU of the cheapest models costs), for the scaled types' costs.
_GPU_PRICE = {"P100": 2, "T4": 2, "V100M16": 3, "V100M32": 4, "G2": 3, "G3": 5, "A10": 4}
# (size factor, price factor), in the order the types are taken: half-size nodes cost 10 % more per
# GPU, double-size 5 % less, four times 10 % less.
_SIZES = (
    (Fraction(1), Fraction(1)),
    (Fraction(1, 2), Fraction(11, 10)),
    (Fraction(2), Fraction(19, 20)),
    (Fraction(4), Fraction(9, 10)),
)
SCALE_TYPES = 40


def _openb_dir():
    from pathlib import Path

    return Path(__file__).resolve().parents[2] / "shared" / "data" / "openb"


def scale_node_types() -> list[tuple[str, int, int, int, str, Fraction]]:
    """The 40 node types of --scale: openb's 15 GPU node shapes (the first node of each (cpu, memory,
    GPUs, model)) at half, whole and double size where the GPU count stays whole, the first 40 in that
    order; a node's cost = (GPUs x its model's price + cores / 16) x the size's price factor.
    Rows: (name, cpu milli, memory MiB, GPUs, model, cost)."""
    import csv

    first: dict[tuple, dict] = {}
    for r in csv.DictReader(open(_openb_dir() / "openb_node_list_gpu_node.csv")):
        first.setdefault((r["cpu_milli"], r["memory_mib"], r["gpu"], r["model"]), r)
    out: list = []
    seen = set()
    for size, premium in _SIZES:
        for cpu, mem, gpu, model in first:
            gpus = int(gpu) * size
            if gpus.denominator != 1 or gpus < 1:
                continue
            c, m = int(int(cpu) * size), int(int(mem) * size)
            if (c, m, gpus, model) in seen:  # a half of one shape is another's whole: one type
                continue
            seen.add((c, m, gpus, model))
            cost = (_GPU_PRICE[model] * gpus + Fraction(c, 16000)) * premium
            out.append((f"{model.lower()}-{int(gpus)}g-{c // 1000}c-{m // 1024}gi", c, m, int(gpus), model, cost))
    return out[:SCALE_TYPES]


def write_scale_fleet(pods: int, seed: int, into) -> tuple:
    """--scale's input in directory `into`: nodes.csv (one node per type, its template), pods.csv
    (`pods` tasks drawn with replacement from openb's default trace with random.Random(seed), named
    anew), input.yaml (draopt trace import of both) and types.yaml (--node-types). Returns the paths
    of input.yaml and types.yaml."""
    import csv
    import random

    from draopt.studies import trace

    types = scale_node_types()
    nodes_csv, pods_csv = into / "nodes.csv", into / "pods.csv"
    with open(nodes_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sn", "cpu_milli", "memory_mib", "gpu", "model"])
        w.writerows(t[:5] for t in types)
    trace_rows = list(csv.DictReader(open(_openb_dir() / "openb_pod_list_default.csv")))
    drawn = random.Random(seed).choices(trace_rows, k=pods)
    with open(pods_csv, "w", newline="") as f:
        w2 = csv.DictWriter(f, fieldnames=list(trace_rows[0].keys()))
        w2.writeheader()
        w2.writerows(dict(r, name=f"scale-pod-{i:05d}") for i, r in enumerate(drawn))
    inp, types_yaml = into / "input.yaml", into / "types.yaml"
    inp.write_text(trace.dump_yaml(trace.import_trace(str(nodes_csv), str(pods_csv))))
    types_yaml.write_text("".join(f"- {{name: {t[0]}, template: {t[0]}, cost: '{t[5]}'}}\n" for t in types))
    return inp, types_yaml


def run_scale(sizes: list[int], time_limit: float, seed: int) -> int:
    """`draopt plan` (a process of its own per size, so its peak RSS is its own) on the scaled fleet."""
    import json
    import os
    import resource
    import subprocess
    import tempfile
    from pathlib import Path

    if not _openb_dir().is_dir():
        print(f"bench_plan: {_openb_dir()} not found", file=sys.stderr)
        return 2
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores, shared)")
    print(
        "| pods | kinds | cost | bound | gap | status | wall s | cpu s | plan s | load s | ffd s | colgen s | integer s | "
        "rounds | columns | peak RSS MiB | load avg |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for pods in sizes:
        with tempfile.TemporaryDirectory() as d:
            inp, types_yaml = write_scale_fleet(pods, seed, Path(d))
            cmd = [
                sys.executable,
                "-m",
                "draopt",
                "plan",
                "-f",
                str(inp),
                "--node-types",
                str(types_yaml),
                "--time-limit",
                str(time_limit),
                "--stats",
                "-o",
                "json",
                "--quiet",
            ]
            t0 = time.perf_counter()
            cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            done = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
        if done.returncode not in (0, 1):
            print(done.stderr, file=sys.stderr)
            return done.returncode
        out = json.loads(done.stdout)
        st = json.loads(done.stderr.strip().splitlines()[-1])
        print(
            f"| {pods} | {st.get('colgen_kinds', '-')} | {out['cost']} | {out['bound']} | {out['gap']:.2%} | {out['status']} | "
            f"{wall:.1f} | {cpu:.1f} | {st.get('solve_s', 0):.1f} | {st.get('load_s', 0):.1f} | {st.get('ffd_s', 0):.1f} | "
            f"{st.get('colgen_s', 0):.1f} | {st.get('colgen_integer_s', 0):.1f} | {st.get('colgen_rounds')} | "
            f"{st.get('colgen_columns')} | {st['peak_rss_mib']:.0f} | {os.getloadavg()[0]:.2f} |"
        )
        # The figures behind the row (why not proven, the integer counts' status, estimates kept or skipped).
        print("  " + json.dumps({k: st[k] for k in sorted(st) if k != "candidates"}, default=str), file=sys.stderr)
        sys.stdout.flush()
    return 0


# ---------------------------------------------------------------- --dra: GPU + NIC alignment, partitionable MIG


def _renamed(doc, old: str, new: str):
    """`doc` with every string that starts with `old` starting with `new` instead (a generated node's
    name in its Node, slices, pools and nodeName)."""
    if isinstance(doc, dict):
        return {k: _renamed(v, old, new) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_renamed(v, old, new) for v in doc]
    if isinstance(doc, str) and doc.startswith(old):
        return new + doc[len(old) :]
    return doc


def dra_fleets(pods: int = 48) -> dict[str, tuple[list, list[str]]]:
    """Two DRA-shaped planning inputs from benchmarks/placement_clusters.py, each with two node
    types (one template Node of each, with its slices; the templates are free nodes of the input):

    * `gpu-nic`: gpu_nic_fleet's pods (1 GPU each, 30 % also a NIC on the GPU's PCIe root, a quarter
      in gangs of 4), types gpu8x4nic (8 GPUs, 4 roots with a NIC each, cost 8) and gpu4x2nic (4 GPUs,
      2 roots, cost 4.4);
    * `mig`: mig_fleet's pods (MIG profiles 1g-7g by counters, a share of `any slice`, gangs),
      types mig8 (8 partitionable GPUs, cost 8) and mig4 (4, cost 4.4).
    Returns name -> (docs, --node-type texts)."""
    import placement_clusters as pc

    def two(make, old: str, big: str, small: str, **kw) -> list:
        a = make(nodes=1, gpus=8, **kw)
        b = make(nodes=1, gpus=4, **{k: v for k, v in kw.items() if k != "pods"})
        extra = [d for d in b["docs"] if d.get("kind") in ("Node", "ResourceSlice")]
        return _renamed(a["docs"], old, big) + _renamed(extra, old, small)

    nic = two(pc.gpu_nic_fleet, "node-0000", "gpu8x4nic", "gpu4x2nic", pods=pods, gang_size=4, roots=4)
    mig = two(pc.mig_fleet, "mig-node-00", "mig8", "mig4", demand_ratio=pods / 8)
    return {
        "gpu-nic": (nic, ["gpu8x4nic=8", "gpu4x2nic=4.4"]),
        "mig": (mig, ["mig8=8", "mig4=4.4"]),
    }


def run_dra(time_limit: float, csv_path: str | None, pods: int) -> int:
    """The optimal mix and every autoscaler baseline on each DRA-shaped fleet (draopt.plan, the
    public API), a row per (fleet, who); with `csv_path` the rows as CSV (docs/studies/planning.csv)."""
    import csv

    import draopt
    from draopt.studies.baselines import BASELINES
    from draopt.testing.audit import objects_of

    rows = []
    for fleet, (docs, types) in dra_fleets(pods).items():
        objs = objects_of(docs)
        prio = {int(float(t.split("=")[1])): [f"^{t.split('=')[0]}$"] for t in types}
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            import yaml

            yaml.safe_dump(prio, f)
        t0 = time.perf_counter()
        p = draopt.plan(objs, types, time_limit=time_limit, baselines=BASELINES, expander_priorities=f.name)
        print(f"{fleet}: {time.perf_counter() - t0:.1f} s")
        print(p.table())
        print()
        rows.append([fleet, "optimal", float(p.cost), sum(p.mix.values()), p.placed, p.pods, float(p.bound)])
        rows += [[fleet, b.name, float(b.cost), sum(b.nodes.values()), b.placed, b.pods, ""] for b in p.baselines]
    if csv_path:
        with open(csv_path, "w", newline="") as out:
            w = csv.writer(out)
            w.writerow(["fleet", "who", "cost", "new_nodes", "placed", "pods", "bound"])
            w.writerows(rows)
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
    ap.add_argument("--no-baselines", action="store_true", help="--openb: the optimal mix only")
    ap.add_argument(
        "--scale", action="store_true", help="the scaled fleet: openb's shapes drawn 8,000 to 80,000 times, 40 types"
    )
    ap.add_argument("--seed", type=int, default=0, help="--scale: the draw's seed")
    ap.add_argument("--dra", action="store_true", help="the DRA-shaped fleets (GPU + NIC, MIG) and every baseline")
    ap.add_argument("--csv", help="--dra: write the rows as CSV here")
    args = ap.parse_args()
    if args.dra:
        return run_dra(args.time_limit, args.csv, int(args.sizes or 48))
    if args.scale:
        sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [8000, 20000, 40000, 80000]
        return run_scale(sizes, args.time_limit if args.time_limit != 60.0 else 600.0, args.seed)
    if args.openb:
        return run_openb(args.time_limit if args.time_limit != 60.0 else 600.0, args.pods, not args.no_baselines)
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
