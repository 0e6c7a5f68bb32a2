"""The optimal policy when first-fit preempted.

The model (draopt.placement.optimal) places the pending pods on the cluster without first-fit's
victims, their claims deallocated as first-fit did: never worse than first-fit with preemption.
Then victims the model's placement does not need are put back (reprieved), the most important
first (MoreImportantVictim's order), when their node still has room for them, their devices were
not given to another claim, and they use no rule the check below does not cover; one run of the
placement checker confirms the end result (otherwise no victim is put back). Which pods to evict
is not a decision of the model: the status is never OPTIMAL then, and the stats say so.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from draopt.cluster.evictions import start_time
from draopt.cluster.result import PlacementResult
from draopt.cluster.state import pod_on


def optimal_after_evictions(
    objects,
    workload,
    features,
    first_fit: PlacementResult,
    time_limit: float,
    started: float,
    build_cluster: Callable[..., Any],
    check: Callable[..., list[str]],
    outcome: Callable[..., Any],
) -> PlacementResult:
    """`build_cluster(objects, workload, features)`, `check(outcome)` and `outcome(result, workload,
    cluster)` come from draopt.placement (passed in: it imports this module)."""
    from draopt.placement.optimal import optimize

    gone = {e.pod for e in first_fit.evictions}
    after = _without(workload, gone, set(first_fit.deallocated))
    cluster_after = build_cluster(objects, after, features)
    # 5 % of the time for putting victims back and checking it
    result = optimize(cluster_after, after, time_limit=time_limit * 0.95, started=started, first_fit=first_fit)
    result.evictions = list(first_fit.evictions)
    result.deallocated = [k for k in first_fit.deallocated if k not in result.claims]
    kept = _reprieve(workload, cluster_after, result)
    if kept:
        trial = dataclasses.replace(
            result,
            evictions=[e for e in result.evictions if e.pod not in kept],
            deallocated=_still_deallocated(workload, result, kept),
        )
        if _attribute(workload, trial) is None and not check(
            outcome(trial, workload, build_cluster(objects, workload, features))
        ):
            result.evictions, result.deallocated = trial.evictions, trial.deallocated
        else:
            kept = set()
    unjustified = _attribute(workload, result) if not kept else None
    if unjustified:
        # The model used a victim's room for no pod of higher priority: not an eviction Kubernetes makes.
        from draopt.placement.optimal import _first_fit_returned

        out = _first_fit_returned(
            first_fit,
            workload,
            time.perf_counter(),
            f"the model's placement uses the room of evicted pod {unjustified} for no pod of higher priority",
        )
        out.evictions, out.deallocated = list(first_fit.evictions), list(first_fit.deallocated)
        out.optimal_stats["evicted"] = len(out.evictions)
        _nominations(out, first_fit)
        return out
    _nominations(result, first_fit)
    stats = result.optimal_stats
    stats["evicted"] = len(result.evictions)
    stats["victims_put_back"] = len(kept)
    stats["preemption"] = (
        f"first-fit's {len(first_fit.evictions)} evictions, less {len(kept)} the placement does not "
        f"need: the model places the pods on the cluster without them; which pods to evict is not "
        f"a decision of the model, so the bound and gap hold for these evictions only"
    )
    _lowered(stats, " for these evictions")
    return result


def _nominations(result: PlacementResult, first_fit: PlacementResult) -> None:
    """First-fit's nominatedNodeName and preemption messages, where the model placed the pod there
    (or did not place it either)."""
    ff = {p.pod: p for p in first_fit.pods}
    for pl in result.pods:
        was = ff.get(pl.pod)
        if was is None:
            continue
        if was.nominated_node and pl.node == was.nominated_node:
            pl.nominated_node, pl.preemption = was.nominated_node, was.preemption
        elif not pl.placed and not was.placed:
            pl.preemption = was.preemption


def _attribute(workload, result: PlacementResult) -> str | None:
    """Each eviction names a preemptor the model placed where the victim was (on its node, or on a
    node of its PodGroup evicted whole): first-fit's, if the model placed it there (its pod, or a
    pod of its PodGroup), else a placed pod of higher priority there.
    Returns a victim with no such pod (None: all attributed)."""
    placed = {pl.pod: pl for pl in result.pods if pl.placed}
    whole: dict[str, set[str]] = {}  # PodGroup evicted whole -> the nodes of its evicted pods
    for e in result.evictions:
        group = workload.pod(e.pod).group
        if group is not None and "disruptionMode all" in e.why:
            whole.setdefault(group, set()).add(e.node)
    out = []
    for e in result.evictions:
        # Where the preemptor must be: the victim's node (or a node of its PodGroup evicted whole).
        group = workload.pod(e.pod).group
        where = whole.get(group, set()) | {e.node} if group is not None else {e.node}
        if (
            e.preemptor_kind == "pod"
            and e.preemptor in placed
            and placed[e.preemptor].node in where
            or e.preemptor_kind == "podgroup"
            and any(p in placed and placed[p].node in where for p in workload.groups[e.preemptor].pods)
        ):
            out.append(e)
            continue
        heir = next(
            (
                pl
                for pl in sorted(placed.values(), key=lambda pl: (-pl.priority, pl.pod))
                if pl.node in where and pl.priority > e.priority
            ),
            None,
        )
        if heir is None:
            return e.pod
        out.append(
            dataclasses.replace(
                e,
                preemptor=heir.pod,
                preemptor_kind="pod",
                preemptor_priority=heir.priority,
                why=f"evicted from {e.node} (priority {e.priority}) to make room for pod "
                f"{heir.pod} (priority {heir.priority}) on {heir.node} (optimal's placement)"
                + (f"; evicted whole with its PodGroup {group} (disruptionMode all)" if group in whole else ""),
            )
        )
    result.evictions = out
    return None


def _without(workload, gone: set[str], deallocated: set[str]):
    claims = dict(workload.claims)
    for key in deallocated:
        claim = claims[key].model_copy(deep=True)
        claim.status.allocation = None
        claim.status.reserved_for = [
            r
            for r in claim.status.reserved_for or []
            if not (r.resource == "pods" and f"{claim.namespace}/{r.name}" in gone)
        ]
        claims[key] = claim
    return dataclasses.replace(workload, running=[p for p in workload.running if p.key not in gone], claims=claims)


def _still_deallocated(workload, result: PlacementResult, kept: set[str]) -> list[str]:
    back = {u.key for k in kept for u in workload.pod(k).claims}
    return [k for k in result.deallocated if k not in back]


def _reprieve(workload, cluster_after, result: PlacementResult) -> set[str]:
    """Victims that can go back next to the model's placement: their whole unit (a PodGroup with
    disruptionMode all goes back whole or not at all), node resources, dedicated devices free."""
    if cluster_after.features.node_allocatable_resources:
        return set()
    used: dict[str, dict[str, Fraction]] = {n.name: dict(n.used) for n in cluster_after.nodes}
    for pl in result.pods:
        if pl.node is not None:
            on = used[pl.node]
            for r, v in pod_on(cluster_after.by_name[pl.node], workload.pod(pl.pod)).resources.items():
                on[r] = on.get(r, Fraction(0)) + v
    taken = {(r.driver, r.pool, r.device) for alloc, _ in result.claims.values() for r in alloc.devices.results}
    by_pod = {e.pod: e for e in result.evictions}
    units: dict[str, list[str]] = {}
    for e in result.evictions:
        pod = workload.pod(e.pod)
        whole = "disruptionMode all" in e.why and pod.group is not None
        units.setdefault(f"podgroup {pod.group}" if whole else f"pod {e.pod}", []).append(e.pod)

    def importance(item):
        key, pods = item
        prio = by_pod[pods[0]].priority
        return (
            -prio,
            0 if key.startswith("podgroup") else 1,
            -len(pods),
            min(start_time(workload.pod(p).pod) for p in pods),
            key,
        )

    kept: set[str] = set()
    reclaimed = set(result.claims)
    for _, pods in sorted(units.items(), key=importance):
        demands = [workload.pod(p) for p in pods]
        if any(_has_pod_rules(d) for d in demands):
            continue
        trial = {n: dict(v) for n, v in ((d.node_name, used[d.node_name]) for d in demands)}
        fits = True
        devices: set = set()
        for d in demands:
            node = cluster_after.by_name[d.node_name]
            for r, v in pod_on(node, d).resources.items():
                trial[d.node_name][r] = trial[d.node_name].get(r, Fraction(0)) + v
                cap = node.allocatable.get(r)
                if cap is not None and trial[d.node_name][r] > cap:
                    fits = False
            for use in d.claims:
                if use.key in reclaimed:
                    fits = False  # allocated again for a pending pod
                alloc = workload.claims[use.key].status.allocation
                for res in alloc.devices.results if alloc is not None else []:
                    if res.share_id or res.admin_access or res.consumed_capacity:
                        fits = False  # shares and capacity: not checked here
                    did = (res.driver, res.pool, res.device)
                    if did in taken:
                        fits = False
                    devices.add(did)
        if not fits:
            continue
        for name, per in trial.items():
            used[name] = per
        taken |= devices
        kept.update(pods)
    return kept


def _has_pod_rules(demand) -> bool:
    spec = demand.pod.spec
    affinity = spec.affinity
    extra = (affinity.model_extra or {}) if affinity is not None else {}
    if extra.get("podAffinity") or extra.get("podAntiAffinity"):
        return True
    return bool((spec.model_extra or {}).get("topologySpreadConstraints"))


def note_unsearched_preemption(result: PlacementResult, workload, priority_classes) -> None:
    """Optimal without evictions (first-fit's floor evicted none): when an unplaced pod that may
    preempt outranks a running pod, evicting could place more, and the model does not search that:
    said in stats.preemption, and the status is not OPTIMAL."""
    from draopt.cluster.evictions import NEVER, preemption_policy

    if not workload.running:
        return
    lowest = min(p.priority for p in workload.running)
    could = [
        pl.pod
        for pl in result.pods
        if not pl.placed
        and pl.priority > lowest
        and preemption_policy(workload.pod(pl.pod).pod, priority_classes) != NEVER
    ]
    if not could:
        return
    stats = result.optimal_stats
    stats["preemption"] = (
        f"{len(could)} unplaced pod(s) outrank running pods (first {could[0]}): evicting is not a "
        f"decision of the model and first-fit's floor evicted none, so placements with evictions "
        f"were not searched"
    )
    _lowered(stats, " without evictions")


def _lowered(stats: dict, scope: str) -> None:
    """Evictions are not a decision of the model: the status is not OPTIMAL, and the summary says the
    proofs hold `scope` only, then why."""
    from draopt.placement.optimal import restate_summary

    if stats.get("status") == "OPTIMAL":
        stats["status"] = "FEASIBLE"
    if isinstance(stats.get("summary"), str):
        restate_summary(stats, scope)
        stats["summary"] += f" ({stats['preemption']})"
