"""`place --policy optimal`: the one placement model (`model.py`), solved in phases.

Objective, lexicographic (each phase holds the previous phases' values):
1. the most priority-weighted placed pods (weight `max(1, 1 + priority)`), gangs whole;
1b. with victims (draopt.model.victims): the fewest evicted pods, then the lowest priorities;
2. the most preferred sub-requests of prioritized lists (least sum of chosen indexes);
3. packing: fewest touched nodes, then fewest counter sets newly drawn on, then the least
   counter amounts and shared capacity taken, then fewest devices, then devices early in
   Kubernetes' search order (the same tie-breaks as `allocate --policy optimal`).

Phase 1 is warm-started from the first-fit placement and required to place at least as much
(priority-weighted); on a part with several windows of topology domains, a large-neighbourhood
search from first-fit's placement comes first (`optimal_lns.py`: a few domains free at a time, the
rest fixed), then the whole-model search from what it found; the status is `OPTIMAL` only when every phase is proven optimal, else
`FEASIBLE` with the proven bound and gap of phase 1 and what was proven (`proven`).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from typing import Any, cast

from draopt import interrupt, progress
from draopt.dra.decode import deterministic_share_id
from draopt.cluster.state import Cluster
from draopt.allocation.explain import explain_failed_pod
from draopt.cluster.firstfit import ClaimBook, simulate
from draopt.model.prepare import OutOfTime, Prepared, prepare_cluster
from draopt.model.reductions.chain import Chain
from draopt.model.reductions.split_components import LinkedItems
from draopt.placement.chain import model_reductions, place_chain
from draopt.cluster.result import PlacementResult, PodPlacement, weight
from draopt.cluster.podgroup_placement import cycle_root
from draopt.model.solution import decode_part
from draopt.model.warm_start import _first_fit_hint  # noqa: F401  (studies.planning reads it here)
from draopt.placement.optimal_part import _complete_hint  # noqa: F401  (studies.planning reads it here)
from draopt.placement.optimal_part import solve_part as _solve_part
from draopt.placement.solver_stats import PartsTotal, SolverStats, name_first_fit, summary_text


def optimize(
    cluster: Cluster,
    workload,
    *,
    time_limit: float = 60.0,
    first_fit: PlacementResult | None = None,
    share_id=None,
    started: float | None = None,
    victims=None,
) -> PlacementResult:
    """`started`: when the caller's clock for `time_limit` started (reading and expanding the
    input count too); default now. `victims` (draopt.model.victims.VictimSet): running pods the
    model may evict, `cluster` and `workload` being without them (draopt.placement.optimal_victims);
    the model's choice is left in `victims.decided`."""
    t0 = time.perf_counter()
    deadline = (started if started is not None else t0) + time_limit * 0.95  # the rest for decoding
    share_id = share_id or deterministic_share_id
    if first_fit is None:
        first_fit = simulate(_fresh(cluster), workload, share_id=share_id, explain_failures=explain_failed_pod)
    unmodelled = unmodelled_rule(cluster, workload)
    if unmodelled:
        return _first_fit_returned(first_fit, workload, t0, f"the optimal model does not encode {unmodelled}")
    ff_by_pod = {p.pod: p for p in first_fit.pods}
    book = ClaimBook(cluster, workload.claims)
    # The generated claims' spec texts, as first-fit's book has them (not dumped claim by claim).
    book.know_signatures(workload)
    try:
        with progress.current().task("optimal: preparing the model"):
            prep = prepare_cluster(
                cluster,
                workload,
                book,
                deadline=deadline,
                extra_tag=victims.kind_tag if victims else None,
                reductions=model_reductions(),
            )
    except OutOfTime:
        return _first_fit_returned(first_fit, workload, t0, "the time limit ran out while preparing the model")
    unmodelled = prep.unmodelled_extended()
    if unmodelled:
        return _first_fit_returned(first_fit, workload, t0, f"the optimal model does not encode {unmodelled}")
    stats = _prepared_stats(prep, t0)
    chain = place_chain()
    parts, inverse_data = _components(prep, cluster, workload, victims, chain)
    stats.components = len(parts)
    weighted = _weighted(prep, parts)
    run = _PartsRun(prep, cluster, workload, book, ff_by_pod, share_id, victims, deadline, stats)
    run.left_weight = sum(w for _, w in weighted)
    with interrupt.deferred():  # Ctrl-C: each part keeps what it has (first-fit's at least), no more search
        solutions = [run.solve(number, part, w, len(parts)) for number, (part, w) in enumerate(weighted, start=1)]
    placements = chain.invert(solutions, inverse_data)
    stats = run.total.close()
    stats.first_fit_objective = first_fit.weighted_placed()
    pods = [placements[p.key] for p in workload.pending]
    claims = {ck: (res, pl.node) for pl in pods for ck, res in pl.new_claims.items()}
    result = PlacementResult("optimal", pods, claims, {})
    if result.weighted_placed() != stats.objective:
        # The inverse of the reductions must place exactly what the model chose.
        raise RuntimeError(
            f"internal: the model places {stats.objective} (weighted), its decoding {result.weighted_placed()}"
        )
    broken = shared_mapped_claim(cluster, workload, result)
    if broken:
        return _first_fit_returned(first_fit, workload, t0, f"the optimal model does not encode {broken}")
    stats.solve_s = round(time.perf_counter() - t0, 3)
    stats.summary = _summary(stats.to_dict())
    name_first_fit(stats, first_fit.stats.get("scheduler", "builtin:name-order"))
    result.optimal_stats.update(stats.to_dict())
    return result


def _prepared_stats(prep: Prepared, t0: float) -> SolverStats:
    """The reductions' figures: kinds, pods counted together or not and why."""
    stats = SolverStats(
        kinds=len(prep.kinds),
        counted_kinds=sum(1 for k in prep.kinds if k.counted),
        pods_counted=sum(len(k.pods) for k in prep.kinds if k.counted),
        pods_single=sum(len(k.pods) for k in prep.kinds if not k.counted),
        not_counted_because=dict(Counter(k.why_not_counted for k in prep.kinds if not k.counted)),
        pinned_pods=0,
        prepare_s=round(time.perf_counter() - t0, 3),
    )
    skipped = {k for p in {id(p): p for p in prep.problems.values()}.values() for k in p.cel_skipped}
    if skipped:
        stats.cel_error_candidates_skipped = len(skipped)
    return stats


def _weighted(prep: Prepared, parts: list[tuple[list[int], set[str]]]) -> list[tuple[tuple[list[int], set[str]], int]]:
    """Each part with its weight (its pods times its nodes): its share of the time left."""
    return [(part, sum(len(prep.kinds[i].pods) for i in part[0]) * max(1, len(part[1]))) for part in parts]


class _PartsRun:
    """The parts solved one after the other, each with its share of the time left; their figures
    summed in `total`."""

    def __init__(self, prep, cluster, workload, book, ff_by_pod, share_id, victims, deadline, stats: SolverStats):
        self.prep, self.cluster, self.workload, self.book = prep, cluster, workload, book
        self.ff_by_pod, self.share_id, self.victims, self.deadline = ff_by_pod, share_id, victims, deadline
        self.total = PartsTotal(stats, victims is not None)
        self.left_weight = 0  # the weights of the parts not solved yet

    def solve(self, number: int, part: tuple[list[int], set[str]], w: int, count: int) -> dict:
        """One part solved and decoded: pod key -> its placement."""
        kind_ids, node_names = part
        prep = self.prep
        now = time.perf_counter()
        budget = max(0.05, (self.deadline - now) * w / max(1, self.left_weight))
        self.left_weight -= w
        # A line per part only when there are several (one part is the whole model).
        parts_shown = progress.current() if count > 1 else progress.Progress()
        with parts_shown.task(f"optimal: part {number} of {count}", total=count) as shown:
            shown.update_to(number - 1)
            sol, st = _solve_part(
                prep,
                self.cluster,
                self.workload,
                self.book,
                kind_ids,
                node_names,
                self.ff_by_pod,
                budget,
                min(self.deadline, now + budget * 1.5 + 0.5),
                self.victims,
            )
        held = None
        if self.victims is not None:
            from draopt.model.victims import decide

            built, values = sol.get("built"), sol.get("values") or {}
            held = decide(self.victims, built.victims if built is not None else None, lambda v: values.get(v, 0))
        decoded = decode_part(
            prep, self.cluster, self.workload, self.book, sol, kind_ids, self.ff_by_pod, self.share_id, held
        )
        self.total.add(st, sum(len(prep.kinds[i].pods) for i in kind_ids))
        return decoded


def restate_summary(stats: dict, scope: str) -> None:
    """The summary again after the status was lowered for a reason outside the model (preemption:
    draopt.placement.optimal_preemption), the proofs said to hold `scope` only; the first-fit it
    names named as before."""
    text = _summary(stats, scope)
    label = stats.get("first_fit_scheduler")
    if label:
        text = re.sub(r"first-fit's placement(?! \()", f"first-fit's placement ({label})", text)
    stats["summary"] = text


def unmodelled_rule(cluster: Cluster, workload) -> str | None:
    """A scheduling rule of the input that the optimal model does not encode, named with the first
    pod that uses it; None when the model encodes every rule the pending pods use. Such an input
    gets first-fit's placement, said so (UNKNOWN), never a placement that breaks the rule."""
    rules = unmodelled_rules(cluster, workload)
    return rules[0] if rules else None


def unmodelled_rules(cluster: Cluster, workload) -> list[str]:
    """Every scheduling rule of the input that the placement model does not encode (each once,
    named with the first pod that uses it): what kube-scheduler's filters check against the pods
    already on the nodes (required inter-pod affinity and anti-affinity, the pending pods' own and
    the running pods' anti-affinity towards them; DoNotSchedule topology spread), and pod-level
    resources next to node-allocatable devices."""
    from draopt.scheduler.podinfo import _extra, pod_info
    from draopt.kube.workload import effective_container_requests

    node_allocatable = cluster.features.node_allocatable_resources and any(
        d.node_allocatable_resources for s in cluster.objects.resource_slices for d in (s.spec.devices or [])
    )
    found: dict[str, str] = {}  # rule -> its message (the first pod that uses it)
    for pod in workload.pending:
        spec = pod.pod.spec
        # Only a pod with affinity or spread constraints is read whole (40,000 pods: a second).
        if spec.affinity is not None or _extra(spec, "topologySpreadConstraints"):
            info = pod_info(pod.pod)  # the scheduler's own reading of these fields
            if info.required_affinity:
                found.setdefault("affinity", f"required inter-pod affinity ({pod.key}: spec.affinity.podAffinity)")
            if info.required_anti:
                found.setdefault("anti", f"required inter-pod anti-affinity ({pod.key}: spec.affinity.podAntiAffinity)")
            if any(r.when_unsatisfiable == "DoNotSchedule" for r in info.spread):
                found.setdefault("spread", f"topology spread constraints ({pod.key}: spec.topologySpreadConstraints)")
        if node_allocatable and "pod-level" not in found and effective_container_requests(spec.resources):
            found["pod-level"] = f"pod-level resources next to node-allocatable devices ({pod.key}: spec.resources)"
    running = _running_anti_affinity(cluster, workload)
    if running:
        found.setdefault("anti", running)
    order = ("affinity", "anti", "spread", "pod-level")
    return [found[k] for k in order if k in found]


def _running_anti_affinity(cluster: Cluster, workload) -> str | None:
    """A running pod whose required anti-affinity selects a pending pod (kube-scheduler's filter
    keeps the pending pod out of its domain: interpodaffinity/filtering.go, the existing pods'
    anti-affinity), named with both pods; None when there is none."""
    from draopt.scheduler.podinfo import pod_info

    holders = [p for p in workload.running if p.pod.spec.affinity is not None]
    terms = [(p, t) for p in holders for t in pod_info(p.pod).required_anti]
    if not terms:
        return None
    ns_labels = {ns.name: dict(ns.metadata.labels or {}) for ns in cluster.objects.namespaces}
    for pod in workload.pending:
        info = pod_info(pod.pod)
        for holder, term in terms:
            if term.matches(info, ns_labels):
                return (
                    f"required inter-pod anti-affinity of a running pod ({holder.key}: spec.affinity.podAntiAffinity, "
                    f"selects {pod.key})"
                )
    return None


def shared_mapped_claim(cluster: Cluster, workload, result: PlacementResult) -> str | None:
    """A claim that allocates a device mapped as a node resource and that several placed pods use:
    Kubernetes rejects the second pod (validateNodeAllocatableDRAClaimSharing); the model does not
    encode the rule, so its placement is checked for it afterwards."""
    if not cluster.features.node_allocatable_resources:
        return None
    from draopt.kube.node_allocatable import has_mapping

    mapped = {
        (s.spec.driver, s.spec.pool.name, d.name)
        for s in cluster.objects.resource_slices
        for d in (s.spec.devices or [])
        if d.node_allocatable_resources and has_mapping(d)
    }
    if not mapped:
        return None
    demand = {p.key: p for p in workload.pending}
    users: Counter = Counter(use.key for pl in result.pods if pl.placed for use in demand[pl.pod].claims)
    for ck, (res, _) in result.claims.items():
        if users[ck] > 1 and any((r.driver, r.pool, r.device) in mapped for r in res.devices.results):
            return f"a claim with a mapped node-allocatable device shared by several pods ({ck})"
    return None


def _first_fit_returned(first_fit: PlacementResult, workload, t0: float, why: str) -> PlacementResult:
    """Nothing of the model could be solved in time: first-fit's placement, said so (UNKNOWN)."""
    pods = [
        PodPlacement(
            p.pod,
            p.node,
            p.priority,
            p.group,
            dict(p.new_claims),
            Counter(p.reasons),
            p.prioritized_score,
            p.explanation,
        )
        for p in first_fit.pods
    ]
    # (a pod with new claims is placed: its node is set)
    claims = {ck: (res, cast(str, pl.node)) for pl in pods for ck, res in pl.new_claims.items()}
    result = PlacementResult("optimal", pods, claims, {})
    placed = first_fit.weighted_placed()
    # The model was not prepared: the only bound is every pending pod placed.
    bound = max(placed, sum(weight(p.priority) for p in workload.pending))
    stats = SolverStats(
        status="UNKNOWN",
        fallback=f"{why}: first-fit's placement is returned",
        pinned_pods=len(workload.pending),
        objective=placed,
        bound=bound,
        gap=round((bound - placed) / bound, 4) if bound else 0.0,
        first_fit_objective=placed,
        proven={"placed": placed == bound, "preferences": False, "packing": False},
        solve_s=round(time.perf_counter() - t0, 3),
    )
    stats.summary = _summary(stats.to_dict())
    name_first_fit(stats, first_fit.stats.get("scheduler", "builtin:name-order"))
    result.optimal_stats.update(stats.to_dict())
    return result


_summary = summary_text  # (tests and optimal_preemption read it here)


def _components(
    prep: Prepared, cluster: Cluster, workload, victims, chain: Chain
) -> tuple[list[tuple[list[int], set[str]]], list]:
    """Independent parts (`SplitComponents`, through `chain`): kinds linked to the nodes they may
    use, gangs linking kinds, nodes linked by columns (devices) several of them reach, and by
    victims decided together. (The parts with kinds, each as (kind indexes, node names); the
    chain's inverse data.)"""
    items: list[tuple[str, Any]] = [("kind", k.index) for k in prep.kinds]
    links: list[tuple[tuple[str, Any], tuple[str, Any]]] = []
    if victims is not None:
        links.extend((("node", a), ("node", b)) for a, b in victims.links())
    gang_of: dict[Any, Any] = {}
    for kind in prep.kinds:
        # Pods of a counted kind share their nodes: the first pod's list stands for all.
        seen_nodes = set()
        for pod in kind.pods:
            nodes = prep.pod_nodes.get(pod.key, [])
            if id(nodes) not in seen_nodes:
                seen_nodes.add(id(nodes))
                links.extend((("kind", kind.index), ("node", node.name)) for node in nodes)
            if pod.group is not None:
                # One part per gang; a CompositePodGroup tree is one part (its minGroupCount).
                root = cycle_root(workload, pod.group)
                first = gang_of.setdefault(root if root is not None else pod.group, ("kind", kind.index))
                links.append((first, ("kind", kind.index)))
    # Nodes linked through the columns they share (nodes with the same columns hold one list:
    # its columns are linked once).
    shared_of: dict[int, list] = {}
    cols: dict = {}
    for node_name, refs in prep.refs.items():
        shared = shared_of.get(id(refs))
        if shared is None:
            shared = shared_of[id(refs)] = [ref for ref in refs if ref.node is None]
            for a, b in zip(shared, shared[1:]):
                links.append((("col", a.key), ("col", b.key)))
            cols.update((("col", ref.key), None) for ref in shared)
        if shared:
            links.append((("node", node_name), ("col", shared[0].key)))
    linked_nodes = sorted({b for _, b in links if b[0] == "node"} | {a for a, _ in links if a[0] == "node"})
    parts, inverse_data = chain.apply(LinkedItems(items + linked_nodes + list(cols), list(links)))
    out: list[tuple[list[int], set[str]]] = []
    for part in parts:
        kinds = sorted(i for t, i in part if t == "kind")
        if kinds:
            out.append((kinds, {n for t, n in part if t == "node"}))
    return out, inverse_data


def _fresh(cluster: Cluster) -> Cluster:
    import copy

    fresh = copy.copy(cluster)  # every attribute shared, then the mutable state copied below
    fresh.allocated = copy.deepcopy(cluster.allocated)
    fresh.nodes = [copy.copy(n) for n in cluster.nodes]
    for n in fresh.nodes:
        n.used = dict(n.used)
    fresh.by_name = {n.name: n for n in fresh.nodes}
    fresh.attach_versions()  # its own array (the copied nodes are in none)
    fresh._inventories = {}
    return fresh
