"""The optimal policy with preemption's victims chosen by the model (issue 17, item 3).

Running pods that some pending pod could preempt become decisions of the one placement model
(draopt.model.victims): the model is built on the cluster without them (their requests off their
nodes, the claims only they use deallocated), and puts back what it keeps. Which running pods are
candidates, as DefaultPreemption and workload-aware preemption (KEP-5710) allow:

* preemptors: a pending pod not in a PodGroup whose preemptionPolicy is not Never; a pending
  PodGroup whose preemptionPolicy is not Never and that has no topology constraint (as
  PodGroupPostFilter refuses those); its priority the group's;
* victims: running pods of the input whose priority (a PodGroup's, when it sets one) is strictly
  below that of a preemptor that could run on their node (node selector, affinity, taints,
  unschedulable: `Cluster.node_rejects`; a PodGroup's domain is the whole cluster); a PodGroup with
  `disruptionMode: all` is one unit, all its running pods or none.

The placement is decoded into the fields first-fit's preemption writes (evictions with the
preemptor and why, deallocated claims, nominatedNodeName) and checked by the placement checker.
Where the model cannot take the case, `None` is returned with the reason (`why_not`), and the
caller takes the path of draopt.placement.optimal_preemption, said in the stats.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from draopt.cluster.evictions import (
    NEVER,
    Eviction,
    disrupts_whole_group,
    group_preemption_policy,
    preemption_policy,
    start_time,
)
from draopt.cluster.result import PlacementResult
from draopt.cluster.state import pod_on
from draopt.model.victims import VictimSet, VictimUnit

# Beyond this many victim units (each a variable of its own when not counted), the model is not used.
MAX_UNITS = 20_000


def victim_set(workload, cluster, objects) -> tuple[VictimSet | None, str]:
    """The victim candidates and the preemptors; (None, why) when there is nothing to decide or the
    model cannot take it (`why` empty: nothing to decide)."""
    group_objs = {f"{g.namespace}/{g.name}": g for g in objects.pod_groups}
    pod_pre, group_pre = _preemptors(workload, list(objects.priority_classes), group_objs)
    tops = list(pod_pre.values()) + list(group_pre.values())
    if not tops or not workload.running:
        return None, ""
    top = max(tops)
    group_top = max(group_pre.values(), default=None)

    def victim_priority(pod) -> int:
        obj = group_objs.get(pod.group) if pod.group else None
        if obj is not None and (obj.spec.priority is not None or obj.spec.priority_class_name):
            return workload.groups[pod.group].priority
        return pod.priority

    by_prio = sorted(((prio, key) for key, prio in pod_pre.items()), reverse=True)
    best_on: dict[str, int | None] = {}

    def highest_preemptor(node_name: str) -> int | None:
        """The highest priority of a preemptor that may run on the node (a PodGroup: any node)."""
        if node_name not in best_on:
            node = cluster.by_name[node_name]
            got = next((prio for prio, key in by_prio if cluster.node_rejects(node, workload.pod(key)) is None), None)
            if group_top is not None:
                got = group_top if got is None else max(got, group_top)
            best_on[node_name] = got
        return best_on[node_name]

    def above(node_name: str, prio: int) -> bool:
        got = highest_preemptor(node_name)
        return got is not None and got > prio

    # (each as its node serves it: a device plugin's extended resources are node resources there)
    live = [pod_on(cluster.by_name[p.node_name], p) for p in workload.running if p.node_name in cluster.by_name]
    units: list[VictimUnit] = []
    seen_groups: set[str] = set()
    for p in live:
        obj = group_objs.get(p.group) if p.group else None
        if obj is not None and disrupts_whole_group(obj):
            if p.group in seen_groups:
                continue
            seen_groups.add(p.group)
            members = [q for q in live if q.group == p.group]
            prio = max(victim_priority(q) for q in members)
            if prio >= top or not any(above(q.node_name, prio) for q in members):
                continue
            started = min(start_time(q.pod) for q in members)
            rank = (-prio, 0, -len(members), started, f"podgroup {p.group}")
            units.append(VictimUnit(f"podgroup {p.group}", members, prio, True, rank))
            continue
        prio = victim_priority(p)
        if prio >= top or not above(p.node_name, prio):
            continue
        grouped = p.group is not None
        rank = (-prio, 0 if grouped else 1, 0, start_time(p.pod), f"pod {p.key}")
        units.append(VictimUnit(f"pod {p.key}", [p], prio, grouped, rank))
    if not units:
        return None, ""
    if len(units) > MAX_UNITS:
        return None, f"{len(units)} victim candidates, more than the model takes ({MAX_UNITS})"
    why = _unsupported(workload, cluster, units)
    if why:
        return None, why
    claim_users, claim_devices = _claims(workload, units)
    why = _unsupported_claims(workload, cluster, claim_devices)
    if why:
        return None, why
    return VictimSet(units, claim_users, claim_devices, pod_pre, group_pre), ""


def _preemptors(workload, classes: list, group_objs: dict) -> tuple[dict[str, int], dict[str, int]]:
    """The pending pods (not in a PodGroup) and PodGroups that may preempt, with their priorities."""
    pod_pre: dict[str, int] = {}
    group_pre: dict[str, int] = {}
    for p in workload.pending:
        if p.group is None and preemption_policy(p.pod, classes) != NEVER:
            pod_pre[p.key] = p.priority
    for gkey, gang in workload.groups.items():
        members = [workload.pod(k) for k in gang.pods]
        if not any(m.node_name is None for m in members) or getattr(gang, "topology_key", None):
            continue
        pending = [m.pod for m in members if m.node_name is None]
        if group_preemption_policy(group_objs.get(gkey), pending, classes) != NEVER:
            group_pre[gkey] = gang.priority
    return pod_pre, group_pre


def _unsupported(workload, cluster, units) -> str:
    if cluster.features.node_allocatable_resources:
        return "victims with DRANodeAllocatableResources on (node resources derived from devices)"
    on_node: dict[str, dict] = {}
    for p in workload.running:
        if p.node_name in cluster.by_name:
            tot = on_node.setdefault(p.node_name, {})
            for r, v in pod_on(cluster.by_name[p.node_name], p).resources.items():
                tot[r] = tot.get(r, 0) + v
    for name in sorted({n for u in units for n in u.nodes}):
        node = cluster.by_name[name]
        for r, v in on_node.get(name, {}).items():
            if r in node.allocatable and v > node.allocatable[r]:
                return f"node {name}: its running pods request more {r} than it has"
    return ""


def _claims(workload, units) -> tuple[dict, dict]:
    """Claims that come free with their victims: allocated, used by candidates only (no other running
    pod, no pending pod, no consumer outside the input)."""
    unit_of = {p.key: i for i, u in enumerate(units) for p in u.pods}
    running_users: dict[str, set[str]] = {}
    for p in workload.running:
        for use in p.claims:
            running_users.setdefault(use.key, set()).add(p.key)
    pending_used = {use.key for p in workload.pending for use in p.claims}
    known = {p.key for p in workload.pending} | {p.key for p in workload.running}
    claim_users: dict[str, list[int]] = {}
    claim_devices: dict[str, list] = {}
    for i, u in enumerate(units):
        for p in u.pods:
            for use in p.claims:
                key = use.key
                if key in claim_users or key in pending_used:
                    continue
                claim = workload.claims.get(key)
                if claim is None or claim.status.allocation is None:
                    continue
                users = running_users.get(key, set())
                if any(k not in unit_of for k in users):
                    continue
                if any(
                    r.resource != "pods" or f"{claim.namespace}/{r.name}" not in known
                    for r in claim.status.reserved_for or []
                ):
                    continue  # a consumer outside the input keeps it
                claim_users[key] = sorted({unit_of[k] for k in users})
                claim_devices[key] = [
                    (p.node_name, (r.driver, r.pool, r.device)) for r in claim.status.allocation.devices.results
                ]
    for i, u in enumerate(units):
        u.claims = sorted({use.key for p in u.pods for use in p.claims if use.key in claim_users})
    return claim_users, claim_devices


def _unsupported_claims(workload, cluster, claim_devices) -> str:
    for key in sorted(claim_devices):
        for r in workload.claims[key].status.allocation.devices.results:
            if r.admin_access or r.share_id or r.consumed_capacity:
                return f"a victim's claim {key} with admin access, shares or consumed capacity"
        if cluster.features.partitionable_devices:
            for node_name, did in claim_devices[key]:
                inv = cluster.inventory(cluster.by_name[node_name])
                e = inv.by_id.get(did)
                if e is not None and e.device.consumes_counters:
                    return f"a victim's claim {key} on a device that consumes counters"
    return ""


def optimal_with_victims(
    objects,
    workload,
    features,
    first_fit: PlacementResult,
    vs: VictimSet,
    time_limit: float,
    started: float,
    build_cluster: Callable[..., Any],
    check: Callable[..., list[str]],
    outcome: Callable[..., Any],
) -> tuple[PlacementResult | None, str]:
    """The model with `vs` as decisions; (None, why) when its answer cannot be used (the caller
    falls back and says why)."""
    from draopt.placement.optimal import optimize
    from draopt.placement.optimal_preemption import _without

    vs.first_fit_evicted = {e.pod for e in first_fit.evictions}
    gone = {p.key for u in vs.units for p in u.pods}
    after = _without(workload, gone, set(vs.claim_users))
    cluster_after = build_cluster(objects, after, features)
    t0 = time.perf_counter()
    # A quarter of the limit for what follows the model: decoding the evictions, the checker run on
    # the whole cluster (measured on bench_gangs at full size, load 3: 9.5-13 s past the model's
    # deadline; with 85 % the whole run took 57.5-61.8 s of 60).
    result = optimize(
        cluster_after, after, time_limit=time_limit * 0.75, started=started, first_fit=first_fit, victims=vs
    )
    stats = result.optimal_stats
    if stats.get("fallback") and stats.get("pinned_pods") == len(workload.pending):
        # First-fit's placement whole (no time left to try another path): with its evictions.
        from draopt.placement.optimal_preemption import _nominations

        result.evictions, result.deallocated = list(first_fit.evictions), list(first_fit.deallocated)
        _nominations(result, first_fit)
        stats["evicted"] = len(result.evictions)
        stats["preemption"] = "the victim model gave no placement in time: first-fit's placement and evictions"
        stats["victims_model"] = f"not used: {stats['fallback']}"
        return result, ""
    if stats.get("fallback"):
        return None, f"the victim model gave no placement of its own ({stats['fallback']})"
    why = _decode(workload, result, vs, first_fit, objects)
    if why:
        return None, why
    if result.weighted_placed() < first_fit.weighted_placed():
        return None, "the victim model placed less than first-fit with preemption"
    errors = check(outcome(result, workload, build_cluster(objects, workload, features)))
    if errors:
        return None, f"the victim model's placement fails the placement checker: {errors[0]}"
    stats["evicted"] = len(result.evictions)
    stats["first_fit_evicted"] = len(first_fit.evictions)
    stats["victim_candidates"] = sum(len(u.pods) for u in vs.units)
    stats["preemption"] = (
        f"victims are decisions of the model: {len(result.evictions)} pod(s) evicted out of "
        f"{stats['victim_candidates']} candidates (first-fit evicted {len(first_fit.evictions)})"
        + (f"; {vs.cost_note}" if vs.cost_note else "")
    )
    beyond = _beyond_the_scheduler(workload, result, features)
    if beyond:
        stats["beyond_scheduler"] = beyond
        stats["preemption"] += f"; {beyond}"
    stats["victims_s"] = round(time.perf_counter() - t0, 3)
    return result, ""


def _beyond_the_scheduler(workload, result: PlacementResult, features) -> str:
    """What the model's evictions do that kube-scheduler's preemption cannot: without the DRAPreemption
    gate (KEP-5690; not in 1.36/1.37) the dry run never sees a victim's devices freed, so placing a
    pod on them is a what-if, not the scheduler's answer."""
    if features.dra_preemption or not result.deallocated:
        return ""
    freed: dict[tuple[str, str, str], str] = {}
    for key in result.deallocated:
        alloc = workload.claims[key].status.allocation
        for r in alloc.devices.results if alloc is not None else ():
            freed[(r.driver, r.pool, r.device)] = key
    reused = sorted(
        {
            freed[d]
            for alloc, _ in result.claims.values()
            for r in alloc.devices.results
            if (d := (r.driver, r.pool, r.device)) in freed
        }
    )
    if not reused:
        return ""
    return (
        f"beyond the scheduler: the placement uses devices the evictions free (claims {', '.join(reused)}); "
        "kube-scheduler's preemption cannot count on them without the DRAPreemption gate (KEP-5690), "
        "so first-fit would not evict for them"
    )


def _decode(workload, result: PlacementResult, vs: VictimSet, first_fit: PlacementResult, objects) -> str:
    """Evictions, each with its preemptor (the highest-priority placed preemptor on the victim's
    nodes, else the highest-priority preempting PodGroup with a pod there, else any placed PodGroup
    allowed to preempt), deallocated claims, nominatedNodeName."""
    placed = {pl.pod: pl for pl in result.pods if pl.placed}
    on_node: dict[str | None, list] = {}  # (placed pods: the node is set)
    for key, prio in vs.pod_preemptors.items():
        pl = placed.get(key)
        if pl is not None:
            on_node.setdefault(pl.node, []).append((prio, key))
    groups = sorted(
        ((prio, g) for g, prio in vs.group_preemptors.items() if any(k in placed for k in workload.groups[g].pods)),
        key=lambda t: (-t[0], t[1]),
    )
    for v in on_node.values():
        v.sort(key=lambda t: (-t[0], t[1]))
    group_nodes = {g: {placed[k].node for k in workload.groups[g].pods if k in placed} for _, g in groups}
    evictions: list[Eviction] = []
    by_preemptor: dict[tuple[str, str], list[Eviction]] = {}
    for i, u in enumerate(vs.units):
        if not vs.decided.get(i):
            continue
        here = [t for n in u.nodes for t in on_node.get(n, []) if t[0] > u.priority]
        if here:
            prio, who = min(here, key=lambda t: (-t[0], t[1]))
            kind, where = "pod", f"on {placed[who].node}"
            sample = workload.pod(who)
        else:
            # A PodGroup with a pod on the victim's node made the room (the checker holds it to
            # that); any preempting group only when none has (room on devices other nodes reach).
            higher = [(p, g) for p, g in groups if p > u.priority]
            got = next((t for t in higher if group_nodes[t[1]] & set(u.nodes)), higher[0] if higher else None)
            if got is None:
                return f"internal: the model evicted {u.key} for no placed preemptor"
            prio, who = got
            kind, where = "podgroup", "on the nodes of its pods (the whole cluster is its domain)"
            sample = workload.pod(workload.groups[who].pods[0])
        scheduler = (sample.pod.spec.model_extra or {}).get("schedulerName") or "default-scheduler"
        for p in u.pods:
            why = (
                f"evicted from {p.node_name} (priority {u.priority}) to make room for {kind} {who} "
                f"(priority {prio}) {where} (optimal's choice of victims)"
            )
            if u.key.startswith("podgroup"):
                why += f"; evicted whole with its PodGroup {p.group} (disruptionMode all)"
            e = Eviction(p.key, p.node_name, u.priority, who, kind, prio, scheduler, why)
            evictions.append(e)
            by_preemptor.setdefault((kind, who), []).append(e)
    result.evictions = sorted(evictions, key=lambda e: e.pod)
    result.deallocated = sorted(
        c for c, users in vs.claim_users.items() if all(vs.decided.get(i) for i in users) and c not in result.claims
    )
    for (kind, who), es in by_preemptor.items():
        if kind == "pod":
            pl = placed[who]
            pl.nominated_node = pl.node
            pl.preemption = f"preempted {len(es)} lower-priority pod(s) on node {pl.node}: " + ", ".join(
                f"{e.pod} (priority {e.priority})" for e in es
            )
        else:
            for k in workload.groups[who].pods:
                pl = placed.get(k)
                if pl is not None:
                    pl.nominated_node = pl.node
                    pl.preemption = f"pod group preemption: {who} placed after evicting {len(es)} lower-priority pod(s)"
    ff = {p.pod: p for p in first_fit.pods}
    for pl in result.pods:
        was = ff.get(pl.pod)
        if not pl.placed and was is not None and not was.placed:
            pl.preemption = was.preemption
    return ""
