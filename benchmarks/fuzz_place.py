"""Optimal placement vs first-fit on random clusters of every DRA feature family, by hand and
larger than CI's (issue 7): the checks of tests/test_optimal_families.py, counted per family.

For each family and seed: `random_cluster(random.Random(seed), family, nodes=..., pods=...)`
(draopt.testing.synth_cluster), placed with `place(policy="first-fit")` and `place(policy="optimal")`
under `features_for(seed)` (every third seed every gate on), both checked with
`check_placement`. Printed per family:

  instances     clusters drawn
  invalid       DraoptError from reading or first-fit (the generator should avoid these)
  crashes       any other exception (optimal rejecting what first-fit read counts here), or
                the process dying (placement runs in a child process, restarted after that)
  ff_bad        first-fit placements the checker rejects (its documented defects excepted)
  ff_defect     first-fit placements whose only violations are the allocator's known defects
  opt_bad       optimal placements the checker rejects
  worse         optimal below first-fit (priority-weighted), or below first-fit in another
                queue order (--reorders)
  pinned        instances with pods kept at first-fit's answer (fixed_pods / pinned_pods), and
                those pods in all
  dishonest     status OPTIMAL with a non-zero gap; bad_status: neither OPTIMAL nor FEASIBLE
  better        optimal above first-fit; nontriv: better, or first-fit below the bound or
                below first-fit in another order
  gain          mean (optimal - first-fit) weighted pods, and mean relative gain over instances
  opt_s         mean / max optimal time
  status        solver status counts

It runs against whatever `draopt.placement.place` is current (public API only).

  python benchmarks/fuzz_place.py                                  # 8 families x 50 seeds, 4-12 nodes, 20-60 pods
  python benchmarks/fuzz_place.py --quick                          # 8 x 10, CI sizes
  python benchmarks/fuzz_place.py --families gpu-nic,shared --seeds 200 --nodes 2,6 --pods 10,30
  python benchmarks/fuzz_place.py --ci                             # CI's sizes and seeds 0..63 (the baseline)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections import Counter, defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from draopt.testing.synth_cluster import FAMILIES, features_for, random_cluster  # noqa: E402

from draopt.testing.audit import IsolatedAudit  # noqa: E402


def _range(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition(",")
    lo_i, hi_i = int(lo), int(hi or lo)
    if lo_i < 1 or hi_i < lo_i:
        raise argparse.ArgumentTypeError(f"{text!r}: want LOW,HIGH with 1 <= LOW <= HIGH")
    return lo_i, hi_i


def _brief(stats: dict) -> str:
    return json.dumps({k: v for k, v in stats.items() if isinstance(v, (int, float, str)) and k != "summary"})


def run_family(
    audit, family: str, seeds: range, nodes, pods, time_limit: float, reorders: int, examples: int, verbose: bool
) -> dict:
    row: dict = defaultdict(int)
    row["family"] = family
    status: Counter = Counter()
    gains, rel, times = [], [], []
    samples: dict[str, list[str]] = defaultdict(list)
    for seed in seeds:
        docs = random_cluster(random.Random(seed), family, nodes=nodes, pods=pods)
        a = audit(docs, features=features_for(seed), time_limit=time_limit, reorders=reorders, seed=seed)
        row["instances"] += 1
        row["pods"] += a.pods

        def note(kind: str, text: str) -> None:
            if len(samples[kind]) < examples:
                samples[kind].append(f"seed {seed}: {text[:300]}")
            if verbose:
                print(f"  {family} seed {seed} {kind}: {text[:300]}", flush=True)

        if a.invalid is not None:
            row["invalid"] += 1
            note("invalid", a.invalid)
            continue
        if a.crash is not None:
            row["crashes"] += 1
            note("crash", a.crash)
        if a.ff_errors:
            row["ff_bad"] += 1
            note("ff_bad", "; ".join(a.ff_errors[:3]))
        if a.ff_defects:
            row["ff_defect"] += 1
        if a.nontrivial:
            row["nontriv"] += 1
        if a.crash is not None:
            continue
        if a.opt_errors:
            row["opt_bad"] += 1
            note("opt_bad", "; ".join(a.opt_errors[:3]))
        if a.worse or a.worse_than_reordered:
            row["worse"] += 1
            note(
                "worse",
                f"optimal {a.opt_weighted}, first-fit {a.ff_weighted}, reordered first-fit {a.reordered_weighted}",
            )
        if a.pinned:
            row["pinned"] += 1
            row["pinned_pods"] += a.pinned
            note("pinned", f"{a.pinned} pods; stats {_brief(a.stats)}")
        if a.status not in ("OPTIMAL", "FEASIBLE"):
            row["bad_status"] += 1
            note("status", f"status {a.status!r}; stats {_brief(a.stats)}")
        if a.dishonest:
            row["dishonest"] += 1
            note("dishonest", f"status {a.status} gap {a.gap}")
        if a.opt_weighted > a.ff_weighted:
            row["better"] += 1
        status[str(a.status)] += 1
        gains.append(a.opt_weighted - a.ff_weighted)
        rel.append((a.opt_weighted - a.ff_weighted) / a.ff_weighted if a.ff_weighted else 0.0)
        times.append(a.opt_s)
    row["gain"] = round(sum(gains) / len(gains), 2) if gains else 0.0
    row["gain_pct"] = round(100 * sum(rel) / len(rel), 1) if rel else 0.0
    row["opt_s_mean"] = round(sum(times) / len(times), 3) if times else 0.0
    row["opt_s_max"] = round(max(times), 3) if times else 0.0
    row["status"] = dict(sorted(status.items()))
    row["samples"] = dict(samples)
    return dict(row)


COLUMNS = [
    "family",
    "instances",
    "pods",
    "invalid",
    "crashes",
    "ff_bad",
    "ff_defect",
    "opt_bad",
    "worse",
    "pinned",
    "pinned_pods",
    "dishonest",
    "bad_status",
    "better",
    "nontriv",
    "gain",
    "gain_pct",
    "opt_s_mean",
    "opt_s_max",
]


def table(rows: list[dict]) -> str:
    cells = [[str(r.get(c, 0)) for c in COLUMNS] + [" ".join(f"{k}:{v}" for k, v in r["status"].items())] for r in rows]
    head = COLUMNS + ["status"]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(head)]
    lines = ["  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths)))]
    for row in cells:
        lines.append(
            "  ".join(v.rjust(w) if 0 < i < len(head) - 1 else v.ljust(w) for i, (v, w) in enumerate(zip(row, widths)))
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated, from: " + ", ".join(FAMILIES))
    ap.add_argument("--seeds", type=int, default=50, help="seeds per family (default 50)")
    ap.add_argument("--start", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("--nodes", type=_range, default=(4, 12), help="LOW,HIGH nodes (default 4,12)")
    ap.add_argument("--pods", type=_range, default=(20, 60), help="LOW,HIGH pending pods (default 20,60)")
    ap.add_argument("--time-limit", type=float, default=20.0, help="optimal's time limit per instance (default 20)")
    ap.add_argument("--reorders", type=int, default=2, help="first-fit queue orders to compare with (default 2)")
    ap.add_argument("--quick", action="store_true", help="10 seeds per family at CI's sizes (1-4 nodes, 2-10 pods)")
    ap.add_argument("--ci", action="store_true", help="CI's sizes and seeds 0..63, time limit 10 s")
    ap.add_argument("--examples", type=int, default=2, help="sample messages printed per kind of failure")
    ap.add_argument("--verbose", action="store_true", help="print every failure as it happens")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON lines too")
    args = ap.parse_args(argv)
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        ap.error(f"unknown families: {', '.join(unknown)} (known: {', '.join(FAMILIES)})")
    if args.quick or args.ci:
        args.nodes, args.pods = (1, 4), (2, 10)
        args.seeds = 10 if args.quick else 64
        if args.ci:
            args.time_limit, args.start = 10.0, 0
    seeds = range(args.start, args.start + args.seeds)
    print(
        f"families {', '.join(families)}; seeds {seeds.start}..{seeds.stop - 1}; nodes {args.nodes[0]}-{args.nodes[1]}; "
        f"pods {args.pods[0]}-{args.pods[1]}; time limit {args.time_limit} s; reorders {args.reorders}",
        flush=True,
    )
    rows = []
    t0 = time.perf_counter()
    with IsolatedAudit() as audit:  # a native abort counts as a crash of that seed
        for family in families:
            t = time.perf_counter()
            rows.append(
                run_family(
                    audit,
                    family,
                    seeds,
                    args.nodes,
                    args.pods,
                    args.time_limit,
                    args.reorders,
                    args.examples,
                    args.verbose,
                )
            )
            print(f"  {family}: {time.perf_counter() - t:.1f} s", flush=True)
    print()
    print(table(rows))
    total = {c: sum(r.get(c, 0) for r in rows) for c in COLUMNS[1:13]}
    print("\ntotal: " + ", ".join(f"{k} {v}" for k, v in total.items()) + f"; {time.perf_counter() - t0:.1f} s")
    for r in rows:
        for kind, msgs in r["samples"].items():
            for m in msgs:
                print(f"{r['family']:9s} {kind:9s} {m}")
    if args.json:
        for r in rows:
            print(json.dumps(r, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
