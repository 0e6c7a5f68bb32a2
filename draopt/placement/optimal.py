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
from typing import Any

from ortools.sat.python import cp_model

from draopt import progress
from draopt.dra.decode import deterministic_share_id
from draopt.cluster.state import Cluster
from draopt.allocation.explain import explain_failed_pod
from draopt.cluster.firstfit import ClaimBook, simulate
from draopt.model.placement import Built, build, packing_objective
from draopt.model.prepare import OutOfTime, Prepared, prepare_cluster
from draopt.model.reductions import SplitComponents
from draopt.cluster.result import PlacementResult, PodPlacement, weight
from draopt.cluster.podgroup_placement import cycle_root
from draopt.model import topology_domains
from draopt.model.solution import decode_part
from draopt.model.warm_start import _first_fit_hint
from draopt.placement import optimal_lns


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
    book._signature.update(getattr(workload, "spec_texts", None) or {})
    try:
        with progress.current().task("optimal: preparing the model"):
            prep = prepare_cluster(
                cluster, workload, book, deadline=deadline, extra_tag=victims.kind_tag if victims else None
            )
    except OutOfTime:
        return _first_fit_returned(first_fit, workload, t0, "the time limit ran out while preparing the model")
    unmodelled = prep.unmodelled_extended()
    if unmodelled:
        return _first_fit_returned(first_fit, workload, t0, f"the optimal model does not encode {unmodelled}")
    stats: dict[str, Any] = {
        "kinds": len(prep.kinds),
        "counted_kinds": sum(1 for k in prep.kinds if k.counted),
        "pods_counted": sum(len(k.pods) for k in prep.kinds if k.counted),
        "pods_single": sum(len(k.pods) for k in prep.kinds if not k.counted),
        "not_counted_because": dict(Counter(k.why_not_counted for k in prep.kinds if not k.counted)),
        "pinned_pods": 0,
        "prepare_s": round(time.perf_counter() - t0, 3),
    }
    skipped = {k for p in {id(p): p for p in prep.problems.values()}.values() for k in getattr(p, "cel_skipped", {})}
    if skipped:
        stats["cel_error_candidates_skipped"] = len(skipped)
    parts = _components(prep, cluster, workload, victims)
    stats["components"] = len(parts)
    agg = {"objective": 0, "bound": 0, "variables": 0, "constraints": 0}
    proven = {"placed": True, "preferences": True, "packing": True}
    if victims is not None:
        proven = {"placed": True, "victims": True, "preferences": True, "packing": True}
        agg["victim_cost"] = 0
    statuses = Counter()
    solutions = []
    weights = [sum(len(prep.kinds[i].pods) for i in kinds) * max(1, len(nodes)) for kinds, nodes in parts]
    left_weight = sum(weights)
    for number, ((kind_ids, node_names), w) in enumerate(zip(parts, weights), start=1):
        now = time.perf_counter()
        budget = max(0.05, (deadline - now) * w / max(1, left_weight))
        left_weight -= w
        # A line per part only when there are several (one part is the whole model).
        parts_shown = progress.current() if len(parts) > 1 else progress.Progress()
        with parts_shown.task(f"optimal: part {number} of {len(parts)}", total=len(parts)) as shown:
            shown.update_to(number - 1)
            sol, st = _solve_part(
                prep,
                cluster,
                workload,
                book,
                kind_ids,
                node_names,
                ff_by_pod,
                budget,
                min(deadline, now + budget * 1.5 + 0.5),
                victims,
            )
        held = None
        if victims is not None:
            from draopt.model.victims import decide

            built, values = sol.get("built"), sol.get("values") or {}
            held = decide(victims, built.victims if built is not None else None, lambda v: values.get(v, 0))
        solutions.append(decode_part(prep, cluster, workload, book, sol, kind_ids, ff_by_pod, share_id, held))
        for key in ("objective", "bound", "variables", "constraints"):
            agg[key] = None if agg[key] is None or (key in st and st[key] is None) else agg[key] + st.get(key, 0)
        agg["subrequest_index_sum"] = agg.get("subrequest_index_sum", 0) + st.get("preferences_value", 0)
        agg["cheap_bound"] = agg.get("cheap_bound", 0) + st.get("cheap_bound", 0)
        for key in ("build_s", "warm_start_s", "count_s", "preferences_s", "packing_s", "owned_across_nodes"):
            if key in st:
                agg[key] = round(agg.get(key, 0) + st[key], 3)
        if "proof" in st:
            stats["proof"] = st["proof"]
        for key, v in st.items():
            if key.startswith("colgen_"):  # column generation's figures (the largest part's)
                stats[key] = v
            elif key.startswith("lns_"):  # the neighbourhood search's figures, summed over parts
                stats[key] = v if isinstance(v, str) else round(stats.get(key, 0) + v, 3)
        for key in proven:
            proven[key] = proven[key] and st["proven"].get(key, True)  # a part without victims decides none
        if "victim_cost" in st and "victim_cost" in agg:
            agg["victim_cost"] += st["victim_cost"]
        statuses[st["status"]] += 1
        stats["first_fit_in_model"] = stats.get("first_fit_in_model", True) and st.get("first_fit_in_model", True)
        for key in ("floor_dropped", "fallback", "no_better_found"):
            if key in st:
                stats[key] = st[key]
        if "fallback" in st:
            # Pods of a part with no solution in time keep first-fit's answer: said, counted.
            stats["pinned_pods"] += sum(len(prep.kinds[i].pods) for i in kind_ids)
    placements = SplitComponents.invert(solutions)
    stats.update(agg)
    stats["proven"] = proven
    stats["status"] = (
        "OPTIMAL"
        if all(proven.values()) and not stats.get("fallback")
        else ("FEASIBLE" if not stats.get("fallback") else "UNKNOWN")
    )
    stats["part_status"] = dict(statuses)
    stats["gap"] = (
        None
        if agg["bound"] is None
        else (round((agg["bound"] - agg["objective"]) / agg["bound"], 4) if agg["bound"] else 0.0)
    )
    stats["first_fit_objective"] = first_fit.weighted_placed()
    pods = [placements[p.key] for p in workload.pending]
    claims = {ck: (res, pl.node) for pl in pods for ck, res in pl.new_claims.items()}
    result = PlacementResult("optimal", pods, claims, {})
    if result.weighted_placed() != stats["objective"]:
        # The inverse of the reductions must place exactly what the model chose.
        raise RuntimeError(
            f"internal: the model places {stats['objective']} (weighted), its decoding {result.weighted_placed()}"
        )
    broken = shared_mapped_claim(cluster, workload, result)
    if broken:
        return _first_fit_returned(first_fit, workload, t0, f"the optimal model does not encode {broken}")
    stats["solve_s"] = round(time.perf_counter() - t0, 3)
    stats["summary"] = _summary(stats)
    _name_first_fit(stats, first_fit)
    result.stats.update(stats)
    return result


def restate_summary(stats: dict, scope: str) -> None:
    """The summary again after the status was lowered for a reason outside the model (preemption:
    draopt.placement.optimal_preemption), the proofs said to hold `scope` only; the first-fit it
    names named as before."""
    text = _summary(stats, scope)
    label = stats.get("first_fit_scheduler")
    if label:
        text = re.sub(r"first-fit's placement(?! \()", f"first-fit's placement ({label})", text)
    stats["summary"] = text


def _name_first_fit(stats: dict, first_fit: PlacementResult) -> None:
    """Say which first-fit is the floor (its scheduler profile), in the stats and in the messages
    that mention its placement."""
    label = stats["first_fit_scheduler"] = first_fit.stats.get("scheduler", "builtin:name-order")
    for key in ("summary", "fallback", "no_better_found"):
        if isinstance(stats.get(key), str):
            stats[key] = stats[key].replace("first-fit's placement", f"first-fit's placement ({label})")


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
    claims = {ck: (res, pl.node) for pl in pods for ck, res in pl.new_claims.items()}
    result = PlacementResult("optimal", pods, claims, {})
    placed = first_fit.weighted_placed()
    # The model was not prepared: the only bound is every pending pod placed.
    bound = max(placed, sum(weight(p.priority) for p in workload.pending))
    stats = {
        "status": "UNKNOWN",
        "fallback": f"{why}: first-fit's placement is returned",
        "pinned_pods": len(workload.pending),
        "objective": placed,
        "bound": bound,
        "gap": round((bound - placed) / bound, 4) if bound else 0.0,
        "first_fit_objective": placed,
        "proven": {"placed": placed == bound, "preferences": False, "packing": False},
        "solve_s": round(time.perf_counter() - t0, 3),
    }
    stats["summary"] = _summary(stats)
    _name_first_fit(stats, first_fit)
    result.stats.update(stats)
    return result


def _summary(stats: dict, scope: str = "") -> str:
    """What the model proved, in words, led by the status: "proven optimal" only when the status is
    OPTIMAL (every phase proven); otherwise the status, what was proven (`scope`: what the proofs hold
    for, when not the whole question) and what is best found only."""
    p = stats["proven"]
    levels = [("placed pods", p["placed"])]
    if "victims" in p:  # victims chosen by the model (draopt.model.victims)
        levels.append(("victims (fewest, then lowest priority)", p["victims"]))
    levels += [("sub-request preferences", p["preferences"]), ("packing", p["packing"])]
    done = [name for name, ok in levels if ok]
    not_done = [name for name, ok in levels if not ok]
    if stats.get("fallback"):
        text = f"{stats['fallback']} for {stats['pinned_pods']} pending pod(s)"
        if stats.get("gap") is not None:
            which = (
                "every pod placed" if "preparing" in stats["fallback"] else "every pod that has a feasible node placed"
            )
            if p["placed"]:
                return (
                    text + f"; placed pods proven optimal: it reaches the bound ({which}: {stats['bound']}); "
                    "nothing else proven"
                )
            return text + f"; nothing proven but a bound ({which}: {stats['bound']}, gap {stats['gap']})"
        return text + "; nothing proven"
    status = stats.get("status", "FEASIBLE")
    if status == "OPTIMAL":
        text = f"proven optimal: {', '.join(done)}"
    else:
        text = f"{status}, not proven optimal: " + (f"proven{scope}: {', '.join(done)}" if done else "nothing proven")
    if stats.get("no_better_found"):
        text = f"{stats['no_better_found']} (first-fit's placement kept, bound {stats['bound']}); " + text
    if not_done:
        text += f"; best found, not proven: {', '.join(not_done)} (gap of placed pods {stats['gap']})"
    return text


def _components(prep: Prepared, cluster: Cluster, workload, victims=None) -> list[tuple[list[int], set[str]]]:
    """Independent parts: kinds linked to the nodes they may use, gangs linking kinds, nodes
    linked by columns (devices) several of them reach, and by victims decided together."""
    items: list = [("kind", k.index) for k in prep.kinds]
    links = []
    if victims is not None:
        links.extend((("node", a), ("node", b)) for a, b in victims.links())
    gang_of: dict[str, Any] = {}
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
    nodes = sorted({b for _, b in links if b[0] == "node"} | {a for a, _ in links if a[0] == "node"})
    parts = SplitComponents().apply(items + nodes + list(cols), links)
    out = []
    for part in parts:
        kinds = sorted(i for t, i in part if t == "kind")
        if kinds:
            out.append((kinds, {n for t, n in part if t == "node"}))
    return out


def _solver(seconds: float, hard_stop: float) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    # Same input, same placement: workers interleaved deterministically, limits in CP-SAT's
    # deterministic time, wall time only as a hard stop.
    solver.parameters.num_workers = 2
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = max(0.05, seconds)
    solver.parameters.max_time_in_seconds = max(0.05, hard_stop - time.perf_counter())
    return solver


def _solve_part(prep, cluster, workload, book, kind_ids, node_names, ff_by_pod, budget, hard_stop, victims=None):
    t0 = time.perf_counter()
    from draopt.model.colgen import MIN_NODES, ColumnGeneration

    if victims is not None and not (victims.nodes() & node_names):
        victims = None  # no candidate in this part
    if (
        victims is None
        and len(node_names) >= MIN_NODES
        and not topology_domains.applies(workload, [prep.kinds[i] for i in kind_ids])
        and ColumnGeneration.accepts(prep, kind_ids, node_names, cluster, workload) is None
    ):
        # Its share and no more (hard_stop allows 1.5 x): the parts after it keep theirs.
        return _solve_by_columns(
            prep, cluster, workload, book, kind_ids, node_names, ff_by_pod, min(hard_stop, t0 + budget)
        )
    try:
        with progress.current().task("optimal: building the model"):
            b = build(
                prep,
                cluster,
                workload,
                book,
                kind_ids,
                node_names,
                pattern_seconds=min(5.0, 0.1 * budget),
                deadline=hard_stop,
                victims=victims,
            )
    except OutOfTime as e:
        pods = [p for i in kind_ids for p in prep.kinds[i].pods]
        floor = sum(weight(p.priority) for p in pods if ff_by_pod[p.key].placed)
        # Still a bound without the model: every pod that has a feasible node placed.
        cheap = sum(weight(p.priority) for p in pods if prep.pod_nodes.get(p.key))
        return {"fallback": True}, {
            "status": "UNKNOWN",
            "objective": floor,
            "bound": max(floor, cheap),
            "cheap_bound": cheap,
            "build_s": round(time.perf_counter() - t0, 3),
            "proven": {"placed": floor >= cheap, "preferences": False, "packing": False},
            "fallback": f"{e}: first-fit's placement is returned",
        }
    m = b.model.cp
    stats: dict[str, Any] = {
        "variables": len(m.proto.variables),
        "constraints": len(m.proto.constraints),
        "build_s": round(time.perf_counter() - t0, 3),
        "owned_across_nodes": sum(1 for o in b.owners if o.spans),
        "proven": {"placed": False, "preferences": False, "packing": False},
    }
    enc = b.victims
    if enc is not None:
        stats["proven"]["victims"] = enc.cost is None
        stats["victim_variables"] = len(enc.classes)
    pods = [p for i in kind_ids for p in prep.kinds[i].pods]
    floor = sum(weight(p.priority) for p in pods if ff_by_pod[p.key].placed)
    if not b.totals and not b.placed:
        stats.update(
            {
                "status": "OPTIMAL",
                "objective": 0,
                "bound": 0,
                "proven": {"placed": True, "victims": True, "preferences": True, "packing": True},
            }
        )
        return {}, stats
    hint = _first_fit_hint(b, prep, book, ff_by_pod)
    if enc is not None:
        from draopt.model.victims import first_fit_hint

        hint.update(first_fit_hint(victims, enc))
    # First-fit's placement as a complete solution of the model (auxiliary variables found by
    # propagation): the floor, the incumbent, and the start of phases 2 and 3. None if it breaks
    # a documented rule (first-fit reproduces Kubernetes' allocator defects).
    t1 = time.perf_counter()
    completion: dict = {}
    with progress.current().task("optimal: first-fit as the warm start"):
        full = _complete_hint(m, hint, max(1.0, budget * 0.25), hard_stop, completion)
    stats["warm_start_s"] = round(time.perf_counter() - t1, 3)
    stats["first_fit_in_model"] = full is not None
    # A cheap bound first: the pods that have a node at all, each placed alone.
    cheap = sum(weight(p.priority) for p in pods if prep.pod_nodes.get(p.key))
    stats["cheap_bound"] = cheap
    if full is not None:
        m.add(b.objective >= floor)  # never worse than first-fit (a hard constraint: parallel search)
    else:
        stats["floor_dropped"] = (
            "first-fit's placement is not valid under the documented rules (Kubernetes defect)"
            if completion.get("status") == "INFEASIBLE"
            else "first-fit's placement could not be completed into a solution of the model within the time limit"
        )
    if floor >= cheap and full is not None:
        # First-fit already places every pod that could be placed: phase 1 needs no search.
        stats["proof"] = "first-fit places every pod that has a feasible node"
        status, best, bound, values = cp_model.OPTIMAL, floor, floor, full
        stats["count_s"] = 0.0
        phase1_work = 0.0
    else:
        # No hint: measured, a first-fit hint holds the search near first-fit (on the 100-node
        # mixed fleet: 141,548 with it, 142,720 without, bound 142,726). First-fit's placement
        # is kept as the incumbent in case the search finds nothing better in time.
        m.maximize(b.objective)
        # With topology domains, the search over windows of them first (optimal_lns: on
        # bench_gangs the whole-model search found nothing better than first-fit in 63 s), from
        # first-fit's placement; the whole-model search after it, from what it found, for the
        # rest of phase 1's share (its bound, or its proof on a small part).
        start, start_values, share = floor, full, 0.7
        hoods = optimal_lns.windows(workload, cluster, node_names) if full is not None else []
        if hoods:
            start, start_values, lns = optimal_lns.improve(
                m, b, full, floor, cheap, hoods, budget * 0.65, hard_stop, _solver, victims
            )
            stats.update(lns)
            share = max(0.05, 0.7 - lns["lns_deterministic_s"] / max(budget, 1e-9)) if "lns_s" in lns else 0.7
            if start > floor:
                m.add(b.objective >= start)
        solver = _solver(budget * share, hard_stop)
        with progress.current().task("optimal: phase 1 of 3, placed pods (priority-weighted)") as shown:
            shown.solver(floor, cheap)
            status = solver.solve(m, progress.solver_callback(solver, shown))
        stats["count_s"] = round(solver.wall_time, 3)
        phase1_work = solver.deterministic_time  # the later phases' share: the same on any machine
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            best, bound = int(round(solver.objective_value)), int(round(solver.best_objective_bound))
            values = _values(solver, b)
        elif status == cp_model.INFEASIBLE and full is not None:
            # Nothing reaches first-fit's objective: impossible, since first-fit's placement is a
            # solution of the model; report it rather than hide it.
            raise RuntimeError("internal: the placement model rejects first-fit's placement it accepted before")
        elif full is not None:
            if start == floor:
                stats["no_better_found"] = "no placement better than first-fit's found within the time limit"
            status, best, values = cp_model.FEASIBLE, start, start_values
            bound = min(cheap, int(solver.best_objective_bound)) if solver.best_objective_bound else cheap
        else:
            # The bound of pods that have a feasible node still holds (said with its gap).
            stats.update(
                {
                    "status": solver.status_name(status),
                    "objective": floor,
                    "bound": max(floor, cheap),
                    "fallback": "no placement found within the time limit: first-fit's placement is returned",
                }
            )
            stats["proven"]["placed"] = floor >= cheap
            return {"fallback": True}, stats
    stats.update({"objective": best, "bound": bound})
    stats["proven"]["placed"] = status == cp_model.OPTIMAL
    # Phase 2: preferences; phase 3: packing. Each holds what the phases before reached.
    m.add(b.objective >= best)
    levels = [("preferences", sum(b.preference) if b.preference else None), ("packing", packing_objective(b))]
    if enc is not None:
        # The victims right after the placed pods: fewest, then lowest priority (model/victims.py).
        levels.insert(0, ("victims", enc.cost))
    for name, expr in levels:
        if expr is None:
            stats["proven"][name] = True
            continue
        remaining = hard_stop - time.perf_counter()
        if remaining < 0.05:
            break
        m.clear_hints()
        for var, value in values.items():
            m.add_hint(var, value)
        m.minimize(expr)
        # Secondary goals get a bounded share: at most the deterministic time phase 1 took plus
        # one (not its wall time: the same share, and so the same placement, on a busy machine).
        solver = _solver(max(0.05, min(remaining * 0.4, phase1_work + 1.0)), hard_stop)
        phase = {"victims": "1b", "preferences": 2}.get(name, 3)
        with progress.current().task(f"optimal: phase {phase} of 3, {name}") as shown:
            s2 = solver.solve(m, progress.solver_callback(solver, shown))
        stats[f"{name}_s"] = round(solver.wall_time, 3)
        if s2 not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break
        values = _values(solver, b)
        stats["proven"][name] = s2 == cp_model.OPTIMAL
        stats[f"{name}_value"] = int(round(solver.objective_value))
        if name == "victims":
            stats["victim_cost"] = stats["victims_value"]
        # Phase 1 holds as "at least": a later phase may place more than phase 1 found.
        stats["objective"] = max(stats["objective"], int(solver.value(b.objective)))
        m.add(expr <= int(round(solver.objective_value)))
    stats["status"] = "OPTIMAL" if all(stats["proven"].values()) else "FEASIBLE"
    stats["build_solve_s"] = round(time.perf_counter() - t0, 3)
    return {"built": b, "values": values}, stats


def _solve_by_columns(prep, cluster, workload, book, kind_ids, node_names, ff_by_pod, hard_stop):
    """A large part of counted kinds on few classes of interchangeable nodes: column generation
    (colgen.py) proves a bound of the placed value and places from its columns."""
    from draopt.model.colgen import ColumnGeneration

    t0 = time.perf_counter()
    warm = {p.key: ff_by_pod[p.key].node for i in kind_ids for p in prep.kinds[i].pods}
    cg = ColumnGeneration()
    sol = cg.apply(prep, cluster, workload, book, kind_ids, node_names, deadline=hard_stop, warm=warm)
    proven = sol.objective >= sol.bound
    stats: dict[str, Any] = dict(sol.stats)
    stats.update(
        {
            "objective": sol.objective,
            "bound": sol.bound,
            "variables": len(sol.columns),
            "constraints": 0,
            "build_s": round(time.perf_counter() - t0, 3),
            "status": "FEASIBLE",
            # Column generation keeps the first objective only: preferences (none: see
            # ColumnGeneration.accepts) and packing are not its goal.
            "proven": {"placed": proven, "preferences": True, "packing": False},
        }
    )
    if proven:
        stats["proof"] = "column generation: the placed value reaches the bound of its configuration LP"
    if sol.warm:
        # The warm start's own placement (its configurations are not all checked by the model).
        stats["no_better_found"] = f"column generation: {sol.warm}"
        return {"fallback": True}, stats
    return {"colgen": ColumnGeneration.invert(sol, prep, kind_ids)}, stats


def _complete_hint(
    m: cp_model.CpModel, hint: dict, seconds: float, hard_stop: float, outcome: dict | None = None
) -> dict | None:
    """Every variable's value in first-fit's placement: the hinted variables fixed in a copy
    of the model, the rest found by propagation. None if the placement breaks the model, or
    if no completion was found in time (`outcome["status"]` says which)."""
    copy = m.clone()
    for var, value in hint.items():
        copy.add(copy.get_int_var_from_proto_index(var.index) == value)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_time_in_seconds = max(0.05, min(seconds, hard_stop - time.perf_counter()))
    status = solver.solve(copy)
    if outcome is not None:
        outcome["status"] = solver.status_name(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    values = solver.response_proto.solution
    return {m.get_int_var_from_proto_index(i): values[i] for i in range(len(values))}


def _values(solver, b: Built) -> dict:
    out = {}
    for var in (
        list(b.k.values())
        + list(b.y.values())
        + list(b.placed.values())
        + list(b.totals.values())
        + [v for nc in b.node_classes for v in nc.vars]
        + [kj for parts in b.unit_parts.values() for _, kj in parts]
        + (b.victims.variables if b.victims is not None else [])
    ):
        out[var] = solver.value(var)
    for o in b.owners:
        if not o.counted:
            out[o.mult] = solver.value(o.mult)
        for v in o.sel.values():
            out[v] = solver.value(v)
        for ts in o.terms.values():
            for t in ts:
                out[t.var] = solver.value(t.var)
        for chosen in o.witness.values():
            for v in chosen.values():
                out[v] = solver.value(v)
    return out


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
