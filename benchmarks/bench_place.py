"""Batch placement (`draopt.placement.place`): kube-scheduler first-fit simulation vs the
optimal CP-SAT model (one cluster-wide model), on generated (seeded) scenarios:

  growth: gpu-fleet at 62 / 125 / 250 / 500 nodes with 8 pods per node, nodes all alike and no
      two alike: model size (variables, constraints) and optimal time against pods x candidate
      nodes, with the ratios between consecutive sizes (growth about linear in pods x candidate
      nodes).
  (a) gpu-fleet: 500 nodes x 8 whole GPUs, 4,000 pending pods (single-GPU pods + gangs).
      Targets: first-fit >= 200 pods/s; optimal within --time-limit (60 s), gap reported.
  (b) mig-fleet: 32 nodes x 8 MIG-partitionable GPUs (counter sets), pods asking for a profile
      (or any slice), gangs. Target: optimal places >= 10 % more priority-weighted pods than
      first-fit, or proves first-fit optimal (OPTIMAL, objective == first-fit objective).
      (b2): the same with one priority.
  (c) gpu-nic-fleet: 5,000 nodes x (8 GPUs + 4 NICs on 4 PCIe roots), 40,000 pods: single-GPU,
      GPU+NIC aligned (matchAttribute resource.kubernetes.io/pcieRoot), gangs of 8. Target:
      optimal within 2 x --time-limit (120 s) with gap <= 1 %.
  (c2) the same with no two nodes alike (node memory 768Gi + 1..5000 Mi: no fit changes, but
      no node is interchangeable with another). Same target.
  (d) the (a) cluster with 10 % of the pods using distinctAttribute, admin access or a claim
      shared by two pods. Target: optimal within --time-limit (60 s), no pinned pods, gap printed.

Every policy run is a child process (fork): its peak RSS (getrusage ru_maxrss, the parsed
input inherited from the parent included) is printed per run, and a native crash fails one
run, not the benchmark. Every placement is checked: draopt.cluster.check.check_placement and
an independent check written here from the generator's own numbers (no device twice,
counters, node cpu/memory/pods, claims on their pods' node with the right driver / count /
profile, GPU+NIC on one PCIe root, distinct NUMA nodes, admin access, shared claims, gangs whole).

  python benchmarks/bench_place.py            # everything, full size (~11 min)
  python benchmarks/bench_place.py --quick    # small sizes, 20 s limit (~2 min)
  python benchmarks/bench_place.py --only c   # one scenario: growth, a, b, b2, c, c2, d
  python benchmarks/bench_place.py --profile optimal-a   # cProfile of one run, top functions
"""

from __future__ import annotations

import argparse
import cProfile
import io
import multiprocessing
import os
import pstats
import resource
import sys
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from clusters import objects_from_docs  # noqa: E402
from placement_clusters import (
    GPU_DRIVER,
    NIC_DRIVER,
    PCIE,
    PRIORITIES,
    gpu_fleet,
    gpu_nic_fleet,  # noqa: E402
    mig_fleet,
)

from draopt.allocation import allocate as api  # noqa: E402
from draopt.placement import place  # noqa: E402
from draopt.cluster.check import check_placement  # noqa: E402
from draopt.cluster.result import weight  # noqa: E402


# ----------------------------------------------------------------------------- independent check
def independent_check(outcome, meta: dict[str, Any]) -> list[str]:
    """The placement checked against the generator's own numbers (meta), not draopt's model:
    claims on the node of every placed pod that uses them, the right driver / count / profile
    per request, admin-access results exactly on admin requests (they may share a device, the
    others may not), matchAttribute (one value over the claim's results) and distinctAttribute
    (all values differ), no device twice, counters, node cpu/memory/pods, gangs whole, claims
    allocated exactly when one of their pods is placed."""
    res = outcome.result
    errs: list[str] = []
    devices, counters, claims = meta["devices"], meta["counters"], meta["claims"]
    node_of = {pl.pod: pl.node for pl in res.pods if pl.placed}
    owner: dict[tuple, str] = {}
    used_units: dict[tuple, int] = defaultdict(int)
    for ck, (alloc, node) in res.claims.items():
        spec = claims.get(ck)
        if spec is None:
            errs.append(f"claim {ck}: allocated but the generator made no such pending claim")
            continue
        users = [u for u in spec["users"] if u in node_of]
        if not users:
            errs.append(f"claim {ck}: allocated but none of its pods is placed")
        for u in users:
            if node_of[u] != node:
                errs.append(f"claim {ck}: allocated for {node}, its pod {u} is on {node_of[u]}")
        got: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in alloc.devices.results:
            did = (r.driver, r.pool, r.device)
            d = devices.get(did)
            if d is None:
                errs.append(f"{ck}: unknown device {did}")
                continue
            if d["node"] != node:
                errs.append(f"{ck}: device {did} is on {d['node']}, claim placed on {node}")
            req = spec["requests"].get(r.request)
            if req is None:
                errs.append(f"{ck}: result for unknown request {r.request}")
                continue
            got[r.request].append(d)
            if d["driver"] != req["driver"]:
                errs.append(f"{ck}/{r.request}: device {did} of driver {d['driver']}, wants {req['driver']}")
            if req["profile"] and d["profile"] != req["profile"]:
                errs.append(f"{ck}: device {r.device} has profile {d['profile']}, wants {req['profile']}")
            if bool(r.admin_access) != req["admin"]:
                errs.append(
                    f"{ck}/{r.request}: adminAccess {bool(r.admin_access)} on the result, {req['admin']} on the request"
                )
            if req["admin"]:
                continue  # admin access: the device is not taken
            if did in owner:
                errs.append(f"device {did} used twice ({owner[did]}, {ck})")
            owner[did] = ck
            if d["counter"]:
                used_units[d["counter"]] += d["units"]
        for name, req in spec["requests"].items():
            if len(got[name]) != req["count"]:
                errs.append(f"claim {ck}/{name}: {len(got[name])} devices, wants {req['count']}")
        picked = [d for ds in got.values() for d in ds]
        for attr in spec["match"]:
            vals = {d["attrs"].get(attr) for d in picked}
            if len(vals) != 1 or None in vals:
                errs.append(f"claim {ck}: matchAttribute {attr} not met: {sorted(map(str, vals))}")
        for attr in spec["distinct"]:
            vals = [d["attrs"].get(attr) for d in picked]
            if None in vals or len(set(vals)) != len(vals):
                errs.append(f"claim {ck}: distinctAttribute {attr} not met: {vals}")
    for cs, u in used_units.items():
        if u > counters[cs]:
            errs.append(f"counter set {cs}: {u} units used > {counters[cs]}")
    node_use: dict[str, Counter] = defaultdict(Counter)
    placed_in_gang: Counter = Counter()
    for pl in res.pods:
        p = meta["pods"].get(pl.pod)
        if p is None:
            errs.append(f"pod {pl.pod}: not made by the generator")
            continue
        if not pl.placed:
            continue
        if p["group"]:
            placed_in_gang[p["group"]] += 1
        node_use[pl.node].update({"cpu": p["cpu"], "memory": p["mem"], "pods": 1})
        for k in p["claims"]:
            if k not in res.claims:
                errs.append(f"pod {pl.pod} placed on {pl.node} without claim {k}")
    for node, use in node_use.items():
        cap = meta["node_alloc"][node]
        for r, v in use.items():
            if v > cap[r]:
                errs.append(f"node {node}: {r} {v} > allocatable {cap[r]}")
    for g, info in meta["gangs"].items():
        n = placed_in_gang[g]
        if 0 < n < info["min"]:
            errs.append(f"gang {g}: {n} pods placed < minCount {info['min']}")
    return errs


# ----------------------------------------------------------------------------- stranding
def stranding(outcome, meta: dict[str, Any]) -> tuple[int, int]:
    """(free, stranded) in meta['unit'] after placement. Free: devices (whole GPUs) or counter
    units (MIG) not in use. Stranded: free capacity where no still-pending pod would fit on its
    own (GPU count, GPU+NIC on one PCIe root, distinct NUMA nodes, MIG profile, node
    cpu/memory/pods); gang membership is ignored, so a pending gang pod that would fit alone
    counts as able to use the room. Admin-access pods take no capacity and are left out; a
    pending pod of a shared claim counts as needing its claim's GPU."""
    res = outcome.result
    devices = meta["devices"]
    used = set()
    for alloc, _ in res.claims.values():
        for r in alloc.devices.results:
            if not r.admin_access:
                used.add((r.driver, r.pool, r.device))
    node_use: dict[str, Counter] = defaultdict(Counter)
    for pl in res.pods:
        if pl.placed:
            p = meta["pods"][pl.pod]
            node_use[pl.node].update({"cpu": p["cpu"], "memory": p["mem"], "pods": 1})
    pending = {
        (p["gpus"], p["profile"], bool(p.get("nic")), p.get("feature") == "distinct", p["cpu"], p["mem"])
        for pl in res.pods
        if not pl.placed
        for p in [meta["pods"][pl.pod]]
        if p["gpus"]
    }

    def node_room(node: str, cpu: int, mem: int) -> bool:
        cap, use = meta["node_alloc"][node], node_use[node]
        return (
            use["cpu"] + cpu <= cap["cpu"] and use["memory"] + mem <= cap["memory"] and use["pods"] + 1 <= cap["pods"]
        )

    free = stranded = 0
    if not meta["counters"]:  # whole GPUs (and NICs): per node
        free_gpus: Counter = Counter()
        root_gpu: dict[str, set] = defaultdict(set)
        root_nic: dict[str, set] = defaultdict(set)
        numa: dict[str, set] = defaultdict(set)
        for did, d in devices.items():
            if did in used:
                continue
            root = d["attrs"].get(PCIE)
            if d["driver"] == NIC_DRIVER:
                root_nic[d["node"]].add(root)
                continue
            free_gpus[d["node"]] += 1
            root_gpu[d["node"]].add(root)
            numa[d["node"]].add(d["attrs"].get(f"{GPU_DRIVER}/numa"))

        def fits(node: str, g: int, nic: bool, distinct: bool, c: int, m: int) -> bool:
            if g > free_gpus[node] or not node_room(node, c, m):
                return False
            if nic and not root_gpu[node] & root_nic[node]:
                return False
            return not distinct or len(numa[node]) >= g

        for node, f in free_gpus.items():
            free += f
            if not any(fits(node, g, nic, dist, c, m) for g, _, nic, dist, c, m in pending):
                stranded += f
        return free, stranded
    left = dict(meta["counters"])  # MIG: per GPU (counter set)
    for did in used:
        d = devices[did]
        left[d["counter"]] -= d["units"]
    free_profiles: dict[tuple, set] = defaultdict(set)
    for did, d in devices.items():
        if did not in used and d["units"] <= left[d["counter"]]:
            free_profiles[d["counter"]].add(d["profile"])
    for cs, units in left.items():
        free += units
        node = cs[0]
        if units and not any(
            (prof is None and free_profiles[cs] or prof in free_profiles[cs]) and node_room(node, c, m)
            for _, prof, _, _, c, m in pending
        ):
            stranded += units
    return free, stranded


# ----------------------------------------------------------------------------- running
MAX_ERRORS = 20


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _measure(objs, policy: str, time_limit: float, meta: dict[str, Any]) -> dict[str, Any]:
    """One policy run and everything measured on its outcome (in the child process)."""
    t = time.perf_counter()
    outcome = place(objs, policy=policy, time_limit=time_limit)
    wall = time.perf_counter() - t
    rss = _rss_mib()
    r = outcome.result
    by_prio = Counter(pl.priority for pl in r.pods if pl.placed)
    free, strand = stranding(outcome, meta)
    t = time.perf_counter()
    local = independent_check(outcome, meta)
    shared = check_placement(outcome)
    check_s = time.perf_counter() - t
    obj = sum(weight(pl.priority) for pl in r.pods if pl.placed)
    features: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for pl in r.pods:
        f = meta["pods"][pl.pod].get("feature")
        if f:
            features[f][0] += 1
            features[f][1] += pl.placed
    return {
        "policy": policy,
        "wall_s": wall,
        "placed": len(r.placed_pods()),
        "pods": len(r.pods),
        "weighted": r.weighted_placed(),
        "objective": obj,
        "by_prio": by_prio,
        "devices": r.devices_used(),
        "nodes_used": r.nodes_used(),
        "free": free,
        "stranded": strand,
        "stats": dict(r.stats),
        "n_local_errors": len(local),
        "local_errors": local[:MAX_ERRORS],
        "n_check_errors": len(shared),
        "check_errors": shared[:MAX_ERRORS],
        "check_s": check_s,
        "rss_mib": rss,
        "features": {k: tuple(v) for k, v in features.items()},
        "nodes_of": {pl.pod: pl.node for pl in r.pods if meta["pods"][pl.pod].get("feature")},
    }


def _child(conn, objs, policy, time_limit, meta) -> None:
    try:
        conn.send(("ok", _measure(objs, policy, time_limit, meta)))
    except BaseException:  # noqa: BLE001  (reported by the parent as a failed run)
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


def run_policy(objs, policy: str, time_limit: float, meta: dict[str, Any]) -> dict[str, Any]:
    """The run in a forked child: its own peak RSS, and a crash (exception or native abort)
    is reported as a failed run."""
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, objs, policy, time_limit, meta))
    t = time.perf_counter()
    proc.start()
    send.close()
    try:
        status, payload = recv.recv()
    except EOFError:
        status, payload = "error", "the child process died without an answer"
    proc.join()
    if status == "ok":
        return payload
    wall = time.perf_counter() - t
    print(f"   FAILED {policy}: exit code {proc.exitcode}\n" + "\n".join("     " + x for x in payload.splitlines()))
    return {
        "policy": policy,
        "failed": True,
        "wall_s": wall,
        "placed": 0,
        "pods": len(meta["pods"]),
        "weighted": 0,
        "objective": 0,
        "by_prio": Counter(),
        "devices": 0,
        "nodes_used": 0,
        "free": 0,
        "stranded": 0,
        "stats": {},
        "n_local_errors": 0,
        "local_errors": [],
        "n_check_errors": 0,
        "check_errors": [],
        "check_s": 0.0,
        "rss_mib": 0.0,
        "features": {},
        "nodes_of": {},
    }


def _gap(st: dict[str, Any]) -> str:
    if st.get("fallback"):
        return "n/a (no solution)"
    if st.get("bound") and "objective" in st:
        return f"{(st['bound'] - st['objective']) / st['bound']:.6f}"
    return str(st.get("gap", "-"))


def _table(cols: list[str], lines: list[list[str]]) -> str:
    widths = [max(len(c), *(len(x[i]) for x in lines)) for i, c in enumerate(cols)]
    out = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()]
    out += ["  ".join(v.ljust(w) for v, w in zip(x, widths)).rstrip() for x in lines]
    return "\n".join(out)


def fmt_table(rows: list[dict[str, Any]], unit: str) -> str:
    cols = [
        "policy",
        "placed",
        "by prio 1000/100/0",
        "weighted",
        "devices",
        "nodes",
        f"free {unit}",
        f"stranded {unit}",
        "wall s",
        "solve s",
        "prep s",
        "pods/s",
        "peak RSS MiB",
        "status",
        "objective",
        "bound",
        "gap",
        "valid",
    ]
    lines = []
    for r in rows:
        st = r["stats"]
        prio = "/".join(str(r["by_prio"].get(v, 0)) for v in sorted(PRIORITIES.values(), reverse=True))
        valid = (
            "FAILED"
            if r.get("failed")
            else "ok"
            if not r["n_local_errors"] and not r["n_check_errors"]
            else f"{r['n_local_errors']} local, {r['n_check_errors']} check_placement errors"
        )
        if r["policy"] == "first-fit":
            status, objective, bound, gap, build = "-", str(r["objective"]), "-", "-", "-"
        else:
            status = st.get("status", "?") + ("/fallback" if st.get("fallback") else "")
            objective = str(st.get("objective", r["objective"]))
            bound = str(st.get("bound", "-"))
            gap = _gap(st)
            build = str(st.get("prepare_s", "-"))
        lines.append(
            [
                r["policy"],
                f"{r['placed']}/{r['pods']}",
                prio,
                str(r["weighted"]),
                str(r["devices"]),
                str(r["nodes_used"]),
                str(r["free"]),
                str(r["stranded"]),
                f"{r['wall_s']:.2f}",
                str(st.get("solve_s", "-")),
                build,
                str(st.get("pods_per_s", "-")) if r["policy"] == "first-fit" else "-",
                f"{r['rss_mib']:.0f}",
                status,
                objective,
                bound,
                gap,
                valid,
            ]
        )
    return _table(cols, lines)


MODEL_KEYS = (
    "variables",
    "constraints",
    "kinds",
    "counted_kinds",
    "pods_counted",
    "pods_single",
    "not_counted_because",
    "pinned_pods",
    "fixed_pods",
    "components",
    "proven",
    "prepare_s",
    "count_s",
    "preferences_s",
    "packing_s",
    "cheap_bound",
    "proof",
    "first_fit_objective",
    "part_status",
    "floor_dropped",
    "fallback",
)


def scenario(title: str, gen: dict[str, Any], time_limit: float, target: str) -> list[dict[str, Any]]:
    meta = gen["meta"]
    print(f"\n== {title}\n   {meta['describe']}")
    t = time.perf_counter()
    objs = objects_from_docs(gen["docs"])
    print(
        f"   {len(gen['docs'])} objects, parsed in {time.perf_counter() - t:.2f} s; optimal time_limit={time_limit:g} s; "
        f"RSS before the runs {_rss_mib():.0f} MiB (parent, inherited by each run)"
    )
    rows = [run_policy(objs, "first-fit", time_limit, meta), run_policy(objs, "optimal", time_limit, meta)]
    print(fmt_table(rows, meta["unit"]))
    ff, opt = rows
    st = opt["stats"]
    print(f"   optimal: {st.get('summary', '-')}")
    print(f"   optimal model: { ({k: st[k] for k in MODEL_KEYS if k in st}) }")
    for r in rows:
        errs = r["local_errors"] + r["check_errors"]
        for e in errs[:5]:
            print(f"   INVALID {r['policy']}: {e}")
        if r["n_local_errors"] + r["n_check_errors"] > 5:
            print(f"   ... {r['n_local_errors'] + r['n_check_errors'] - 5} more")
    print(f"   checks took {ff['check_s']:.2f} s (first-fit) / {opt['check_s']:.2f} s (optimal)")
    within = opt["wall_s"] <= time_limit * 1.05 and not opt.get("failed") and not st.get("fallback")
    valid = not any(r.get("failed") or r["n_local_errors"] or r["n_check_errors"] for r in rows)
    never_worse = opt["weighted"] >= ff["weighted"]
    print(
        f"   optimal vs first-fit: weighted {opt['weighted'] - ff['weighted']:+d} "
        f"({'never worse' if never_worse else 'WORSE'}), pods {opt['placed'] - ff['placed']:+d}; "
        f"both valid: {'yes' if valid else 'NO'}"
    )
    if target == "speed":
        pps = ff["stats"].get("pods_per_s") or 0
        print(f"   target first-fit >= 200 pods/s: {pps} -> {'MET' if pps >= 200 else 'NOT MET'}")
        print(
            f"   target optimal within {time_limit:g} s with a solution and gap: wall {opt['wall_s']:.1f} s, "
            f"status {st.get('status')}, gap {_gap(st)} -> {'MET' if within else 'NOT MET'}"
        )
    elif target == "large":
        try:
            gap = float(_gap(st))
        except ValueError:
            gap = None
        ok = within and gap is not None and gap <= 0.01 and valid
        print(
            f"   target optimal within {time_limit:g} s with gap <= 1 %: wall {opt['wall_s']:.1f} s, status "
            f"{st.get('status')}, gap {_gap(st) if gap is None else f'{gap:.4%}'} -> {'MET' if ok else 'NOT MET'}"
        )
    elif target == "features":
        for f, (n, k) in sorted(opt["features"].items()):
            k_ff = ff["features"].get(f, (0, 0))[1]
            moved = sum(
                1
                for p, node in opt["nodes_of"].items()
                if meta["pods"][p].get("feature") == f and node != ff["nodes_of"].get(p)
            )
            print(
                f"   {f} pods: {n}; placed first-fit {k_ff}, optimal {k}; optimal put {moved} of them elsewhere "
                f"than first-fit"
            )
        pinned = st.get("pinned_pods", 0) + st.get("fixed_pods", 0)
        ok = within and pinned == 0 and valid and never_worse
        print(
            f"   target optimal within {time_limit:g} s, no pinned pods, gap printed: wall {opt['wall_s']:.1f} s, "
            f"pinned {pinned}, status {st.get('status')}, gap {_gap(st)} -> {'MET' if ok else 'NOT MET'}"
        )
    else:
        gain = (opt["weighted"] - ff["weighted"]) / ff["weighted"] if ff["weighted"] else 0.0
        proven_ff = st.get("status") == "OPTIMAL" and st.get("objective") == st.get("first_fit_objective")
        print(
            f"   target optimal >= +10 % weighted, or first-fit proven optimal: weighted gain {gain:+.2%} "
            f"(pods {opt['placed'] - ff['placed']:+d}, {(opt['placed'] - ff['placed']) / max(1, ff['placed']):+.1%}); "
            f"status {st.get('status')}, objective {st.get('objective')} vs first-fit "
            f"{st.get('first_fit_objective')} -> {'MET' if gain >= 0.10 or proven_ff else 'NOT MET'}"
        )
        if st.get("bound") and ff["weighted"]:
            print(
                f"   proven bound {st['bound']}: no placement beats first-fit by more than "
                f"{(st['bound'] - ff['weighted']) / ff['weighted']:+.2%} weighted on this instance"
            )
    return rows


# ----------------------------------------------------------------------------- growth
def growth(sizes: list[int], pods_per_node: int, time_limit: float) -> list[dict[str, Any]]:
    """Optimal on the same workload (gpu_fleet, same mix and seed) at several sizes: nodes all
    alike (the interchangeable-nodes reduction applies) and no two nodes alike (it cannot)."""
    print(
        f"\n== growth: gpu-fleet at {'/'.join(map(str, sizes))} nodes, {pods_per_node} pods per node "
        f"(same mix and seed as (a)); optimal time_limit={time_limit:g} s"
    )
    print(
        "   nodes alike: the (a) cluster; no two alike: node memory 768Gi + (1..n)Mi (changes no fit; no node is "
        "interchangeable with another, so the model holds every node)"
    )
    print(
        "   pods x cand = pending pods x their candidate nodes: every node is a candidate for every pod here "
        "(no selectors, taints or node filters; every pod shape fits an empty node)"
    )
    rows = []
    for distinct in (False, True):
        for n in sizes:
            gen = gpu_fleet(nodes=n, pods=pods_per_node * n, distinct_nodes=distinct)
            objs = objects_from_docs(gen["docs"])
            r = run_policy(objs, "optimal", time_limit, gen["meta"])
            r["nodes"], r["pxc"], r["alike"] = (
                n,
                len(gen["meta"]["pods"]) * n,
                "no two alike" if distinct else "all alike",
            )
            rows.append(r)
    cols = [
        "nodes",
        "",
        "pods",
        "pods x cand",
        "kinds",
        "variables",
        "constraints",
        "vars/(pods x cand)",
        "prep s",
        "phase 1 s",
        "solve s",
        "wall s",
        "peak RSS MiB",
        "status",
        "gap",
        "valid",
        "x pods x cand",
        "x variables",
        "x constraints",
        "x solve s",
    ]
    lines = []
    prev = None
    for r in rows:
        st = r["stats"]
        v, c = st.get("variables", 0), st.get("constraints", 0)
        if prev and prev["alike"] != r["alike"]:
            prev = None

        def ratio(
            key: Callable[[dict[str, Any]], Any], r: dict[str, Any] = r, prev: dict[str, Any] | None = prev
        ) -> str:
            a, b = key(r), prev and key(prev)
            return f"{a / b:.2f}" if prev and a is not None and b else "-"

        valid = (
            "FAILED"
            if r.get("failed")
            else "ok"
            if not r["n_local_errors"] and not r["n_check_errors"]
            else f"{r['n_local_errors'] + r['n_check_errors']} errors"
        )
        lines.append(
            [
                str(r["nodes"]),
                r["alike"],
                str(r["pods"]),
                str(r["pxc"]),
                str(st.get("kinds", "-")),
                str(v),
                str(c),
                f"{v / r['pxc']:.4f}",
                str(st.get("prepare_s", "-")),
                str(st.get("count_s", "-")),
                str(st.get("solve_s", "-")),
                f"{r['wall_s']:.2f}",
                f"{r['rss_mib']:.0f}",
                str(st.get("status", "?")),
                _gap(st),
                valid,
                ratio(lambda x: x["pxc"]),
                ratio(lambda x: x["stats"].get("variables")),
                ratio(lambda x: x["stats"].get("constraints")),
                ratio(lambda x: x["stats"].get("solve_s")),
            ]
        )
        prev = r
    print(_table(cols, lines))
    print(
        "   x ...: ratio to the previous size. phase 1 s: the placed-pods solve; solve s: optimize() in all "
        "(first-fit warm start, model, the three phases, decoding); wall s: place() end to end"
    )
    return rows


def _git_head() -> str:
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=False
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "draopt"], cwd=root, capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        return "unknown commit"
    return f"{head}{' + uncommitted draopt changes' if dirty.strip() else ''}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--quick",
        action="store_true",
        help="small sizes: growth 8/16/32/64 nodes, (a) and (d) 50 nodes / 400 pods, (b) 8 nodes, "
        "(c) 250 nodes / 2,000 pods",
    )
    ap.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="optimal time limit, s (default 60; --quick 20); (c) gets twice this",
    )
    ap.add_argument("--only", choices=["growth", "a", "b", "b2", "c", "c2", "d"], help="one scenario only")
    ap.add_argument(
        "--profile",
        choices=[f"{p}-{w}" for p in ("first-fit", "optimal") for w in ("a", "b", "b2", "c", "c2", "d")],
        help="cProfile one policy on one scenario and print the top functions instead",
    )
    args = ap.parse_args(argv)
    time_limit = args.time_limit or (20.0 if args.quick else 60.0)
    q = args.quick
    gens: dict[str, Callable[[], dict[str, Any]]] = {
        "a": lambda: gpu_fleet(nodes=50, pods=400) if q else gpu_fleet(nodes=500, pods=4000),
        "b": lambda: mig_fleet(nodes=8 if q else 32),
        # The same fleet and jobs with one priority: fragmentation, not priority, decides.
        "b2": lambda: mig_fleet(nodes=8 if q else 32, uniform_priority=True),
        "c": lambda: gpu_nic_fleet(nodes=250, pods=2000) if q else gpu_nic_fleet(nodes=5000, pods=40000),
        "c2": lambda: (
            gpu_nic_fleet(nodes=250, pods=2000, distinct_nodes=True)
            if q
            else gpu_nic_fleet(nodes=5000, pods=40000, distinct_nodes=True)
        ),
        "d": lambda: (
            gpu_fleet(nodes=50, pods=400, feature_share=0.1)
            if q
            else gpu_fleet(nodes=500, pods=4000, feature_share=0.1)
        ),
    }
    t0 = time.perf_counter()
    api.warm_up()
    print(f"bench_place: {'quick' if q else 'full'} run; draopt at {_git_head()}; {os.cpu_count()} cpus")
    print(
        "free = devices (GPUs; b: MIG counter units) not in use after placement; stranded = the free ones where "
        "no still-pending pod would fit on its own (count/profile/NIC root/NUMA + node cpu/memory/pods); "
        "nodes = nodes with a placed pod; peak RSS = the run's child process (getrusage ru_maxrss)"
    )
    if args.profile:
        policy, which = args.profile.rsplit("-", 1)
        objs = objects_from_docs(gens[which]()["docs"])
        limit = time_limit * (2 if which == "c" else 1)
        prof = cProfile.Profile()
        prof.enable()
        out = place(objs, policy=policy, time_limit=limit)
        prof.disable()
        print(out.result.summary().to_dict())
        s = io.StringIO()
        ps = pstats.Stats(prof, stream=s)
        ps.sort_stats("cumulative").print_stats(30)
        ps.sort_stats("tottime").print_stats(15)
        print(s.getvalue())
        return 0
    tag = " (quick)" if q else ""
    if args.only in (None, "growth"):
        growth([8, 16, 32, 64] if q else [62, 125, 250, 500], 8, time_limit)
    if args.only in (None, "a"):
        scenario("(a) gpu-fleet" + tag, gens["a"](), time_limit, "speed")
    if args.only in (None, "b"):
        scenario("(b) mig-fleet" + tag, gens["b"](), time_limit, "gain")
    if args.only in (None, "b2"):
        scenario("(b2) mig-fleet, one priority" + tag, gens["b2"](), time_limit, "gain")
    if args.only in (None, "c"):
        scenario("(c) gpu-nic-fleet" + tag, gens["c"](), time_limit * 2, "large")
    if args.only in (None, "c2"):
        scenario("(c2) gpu-nic-fleet, no two nodes alike" + tag, gens["c2"](), time_limit * 2, "large")
    if args.only in (None, "d"):
        scenario("(d) gpu-fleet with distinct / admin / shared claims" + tag, gens["d"](), time_limit, "features")
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
