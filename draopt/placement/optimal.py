"""`place --policy optimal`: the one placement model (`model.py`), solved in phases.

Objective, lexicographic (each phase holds the previous phases' values):
1. the most priority-weighted placed pods (weight `max(1, 1 + priority)`), gangs whole;
2. the most preferred sub-requests of prioritized lists (least sum of chosen indexes);
3. packing: fewest touched nodes, then fewest counter sets newly drawn on, then the least
   counter amounts and shared capacity taken, then fewest devices, then devices early in
   Kubernetes' search order (the same tie-breaks as `allocate --policy optimal`).

Phase 1 is warm-started from the first-fit placement and required to place at least as much
(priority-weighted); the status is `OPTIMAL` only when every phase is proven optimal, else
`FEASIBLE` with the proven bound and gap of phase 1 and what was proven (`proven`).
"""
from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import Any

from ortools.sat.python import cp_model

from draopt import progress
from draopt.dra.decode import deterministic_share_id
from draopt.dra.problem import ClaimSpec
from draopt.dra.reference import Chosen
from draopt.cluster.state import Cluster
from draopt.allocation.explain import explain_failed_pod
from draopt.cluster.firstfit import ClaimBook, pending_claims, simulate
from draopt.model.placement import Built, OutOfTime, Prepared, build, packing_objective, prepare_cluster
from draopt.model.reductions import CountIdenticalPods, GroupDevices, SplitComponents
from draopt.cluster.result import PlacementResult, PodPlacement, weight
from draopt.cluster.podgroup_placement import cycle_root
from draopt.model import topology_domains


def optimize(cluster: Cluster, workload, *, time_limit: float = 60.0, first_fit: PlacementResult | None = None,
             share_id=None, started: float | None = None) -> PlacementResult:
    """`started`: when the caller's clock for `time_limit` started (reading and expanding the
    input count too); default now."""
    t0 = time.perf_counter()
    deadline = (started if started is not None else t0) + time_limit * 0.95   # the rest for decoding
    share_id = share_id or deterministic_share_id
    if first_fit is None:
        first_fit = simulate(_fresh(cluster), workload, share_id=share_id, explain_failures=explain_failed_pod)
    unmodelled = unmodelled_rule(cluster, workload)
    if unmodelled:
        return _first_fit_returned(first_fit, workload, t0, f"the optimal model does not encode {unmodelled}")
    ff_by_pod = {p.pod: p for p in first_fit.pods}
    book = ClaimBook(cluster, workload.claims)
    try:
        with progress.current().task("optimal: preparing the model"):
            prep = prepare_cluster(cluster, workload, book, deadline=deadline)
    except OutOfTime:
        return _first_fit_returned(first_fit, workload, t0, "the time limit ran out while preparing the model")
    stats: dict[str, Any] = {
        "kinds": len(prep.kinds), "counted_kinds": sum(1 for k in prep.kinds if k.counted),
        "pods_counted": sum(len(k.pods) for k in prep.kinds if k.counted),
        "pods_single": sum(len(k.pods) for k in prep.kinds if not k.counted),
        "not_counted_because": dict(Counter(k.why_not_counted for k in prep.kinds if not k.counted)),
        "pinned_pods": 0, "prepare_s": round(time.perf_counter() - t0, 3)}
    skipped = {k for p in {id(p): p for p in prep.problems.values()}.values()
               for k in p.__dict__.get("cel_skipped", {})}
    if skipped:
        stats["cel_error_candidates_skipped"] = len(skipped)
    parts = _components(prep, cluster, workload)
    stats["components"] = len(parts)
    agg = {"objective": 0, "bound": 0, "variables": 0, "constraints": 0}
    proven = {"placed": True, "preferences": True, "packing": True}
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
            sol, st = _solve_part(prep, cluster, workload, book, kind_ids, node_names, ff_by_pod, budget,
                                  min(deadline, now + budget * 1.5 + 0.5))
        solutions.append(_decode_part(prep, cluster, workload, book, sol, kind_ids, ff_by_pod, share_id))
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
            if key.startswith("colgen_"):   # column generation's figures (the largest part's)
                stats[key] = v
        for key in proven:
            proven[key] = proven[key] and st["proven"][key]
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
    stats["status"] = "OPTIMAL" if all(proven.values()) and not stats.get("fallback") else \
        ("FEASIBLE" if not stats.get("fallback") else "UNKNOWN")
    stats["part_status"] = dict(statuses)
    stats["gap"] = None if agg["bound"] is None else \
        (round((agg["bound"] - agg["objective"]) / agg["bound"], 4) if agg["bound"] else 0.0)
    stats["first_fit_objective"] = first_fit.weighted_placed()
    pods = [placements[p.key] for p in workload.pending]
    claims = {ck: (res, pl.node) for pl in pods for ck, res in pl.new_claims.items()}
    result = PlacementResult("optimal", pods, claims, {})
    if result.weighted_placed() != stats["objective"]:
        # The inverse of the reductions must place exactly what the model chose.
        raise RuntimeError(f"internal: the model places {stats['objective']} (weighted), its decoding "
                           f"{result.weighted_placed()}")
    broken = shared_mapped_claim(cluster, workload, result)
    if broken:
        return _first_fit_returned(first_fit, workload, t0, f"the optimal model does not encode {broken}")
    stats["solve_s"] = round(time.perf_counter() - t0, 3)
    stats["summary"] = _summary(stats)
    _name_first_fit(stats, first_fit)
    result.stats.update(stats)
    return result


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
    from draopt.scheduler.podinfo import pod_info
    from draopt.kube.workload import effective_container_requests
    node_allocatable = cluster.features.node_allocatable_resources and any(
        d.node_allocatable_resources for s in cluster.objects.resource_slices for d in (s.spec.devices or []))
    for pod in workload.pending:
        spec = pod.pod.spec
        info = pod_info(pod.pod)         # the scheduler's own reading of these fields
        if info.required_affinity or info.required_anti:
            anti = not info.required_affinity
            return f"required inter-pod {'anti-' if anti else ''}affinity " \
                   f"({pod.key}: spec.affinity.{'podAntiAffinity' if anti else 'podAffinity'})"
        if any(r.when_unsatisfiable == "DoNotSchedule" for r in info.spread):
            return f"topology spread constraints ({pod.key}: spec.topologySpreadConstraints)"
        if node_allocatable and effective_container_requests(spec.resources):
            return f"pod-level resources next to node-allocatable devices ({pod.key}: spec.resources)"
    return None


def shared_mapped_claim(cluster: Cluster, workload, result: PlacementResult) -> str | None:
    """A claim that allocates a device mapped as a node resource and that several placed pods use:
    Kubernetes rejects the second pod (validateNodeAllocatableDRAClaimSharing); the model does not
    encode the rule, so its placement is checked for it afterwards."""
    if not cluster.features.node_allocatable_resources:
        return None
    from draopt.kube.workload import has_mapping
    mapped = {(s.spec.driver, s.spec.pool.name, d.name) for s in cluster.objects.resource_slices
              for d in (s.spec.devices or []) if d.node_allocatable_resources and has_mapping(d)}
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
    pods = [PodPlacement(p.pod, p.node, p.priority, p.group, dict(p.new_claims), Counter(p.reasons),
                         p.prioritized_score, p.explanation) for p in first_fit.pods]
    claims = {ck: (res, pl.node) for pl in pods for ck, res in pl.new_claims.items()}
    result = PlacementResult("optimal", pods, claims, {})
    placed = first_fit.weighted_placed()
    # The model was not prepared: the only bound is every pending pod placed.
    bound = max(placed, sum(weight(p.priority) for p in workload.pending))
    stats = {"status": "UNKNOWN", "fallback": f"{why}: first-fit's placement is returned",
             "pinned_pods": len(workload.pending), "objective": placed, "bound": bound,
             "gap": round((bound - placed) / bound, 4) if bound else 0.0,
             "first_fit_objective": placed, "proven": {"placed": placed == bound, "preferences": False, "packing": False},
             "solve_s": round(time.perf_counter() - t0, 3)}
    stats["summary"] = _summary(stats)
    _name_first_fit(stats, first_fit)
    result.stats.update(stats)
    return result


def _summary(stats: dict) -> str:
    p = stats["proven"]
    done = [name for name, ok in (("placed pods", p["placed"]), ("sub-request preferences", p["preferences"]),
                                  ("packing", p["packing"])) if ok]
    not_done = [name for name, ok in (("placed pods", p["placed"]), ("sub-request preferences", p["preferences"]),
                                      ("packing", p["packing"])) if not ok]
    if stats.get("fallback"):
        text = f"{stats['fallback']} for {stats['pinned_pods']} pending pod(s)"
        if stats.get("gap") is not None:
            which = "every pod placed" if "preparing" in stats["fallback"] else "every pod that has a feasible node placed"
            if p["placed"]:
                return text + f"; placed pods proven optimal: it reaches the bound ({which}: {stats['bound']}); " \
                              "nothing else proven"
            return text + f"; nothing proven but a bound ({which}: {stats['bound']}, gap {stats['gap']})"
        return text + "; nothing proven"
    text = f"proven optimal: {', '.join(done) or 'nothing'}"
    if stats.get("no_better_found"):
        text = f"{stats['no_better_found']} (first-fit's placement kept, bound {stats['bound']}); " + text
    if not_done:
        text += f"; best found, not proven: {', '.join(not_done)} (gap of placed pods {stats['gap']})"
    return text


def _components(prep: Prepared, cluster: Cluster, workload) -> list[tuple[list[int], set[str]]]:
    """Independent parts: kinds linked to the nodes they may use, gangs linking kinds, nodes
    linked by columns (devices) several of them reach."""
    items: list = [("kind", k.index) for k in prep.kinds]
    links = []
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


def _solve_part(prep, cluster, workload, book, kind_ids, node_names, ff_by_pod, budget, hard_stop):
    t0 = time.perf_counter()
    from draopt.model.colgen import MIN_NODES, ColumnGeneration
    if len(node_names) >= MIN_NODES and not topology_domains.applies(workload, [prep.kinds[i] for i in kind_ids]) \
            and ColumnGeneration.accepts(prep, kind_ids, node_names, cluster, workload) is None:
        # Its share and no more (hard_stop allows 1.5 x): the parts after it keep theirs.
        return _solve_by_columns(prep, cluster, workload, book, kind_ids, node_names, ff_by_pod,
                                 min(hard_stop, t0 + budget))
    try:
        with progress.current().task("optimal: building the model"):
            b = build(prep, cluster, workload, book, kind_ids, node_names, pattern_seconds=min(5.0, 0.1 * budget),
                      deadline=hard_stop)
    except OutOfTime as e:
        pods = [p for i in kind_ids for p in prep.kinds[i].pods]
        floor = sum(weight(p.priority) for p in pods if ff_by_pod[p.key].placed)
        # Still a bound without the model: every pod that has a feasible node placed.
        cheap = sum(weight(p.priority) for p in pods if prep.pod_nodes.get(p.key))
        return {"fallback": True}, {
            "status": "UNKNOWN", "objective": floor, "bound": max(floor, cheap), "cheap_bound": cheap,
            "build_s": round(time.perf_counter() - t0, 3),
            "proven": {"placed": floor >= cheap, "preferences": False, "packing": False},
            "fallback": f"{e}: first-fit's placement is returned"}
    m = b.model.cp
    stats: dict[str, Any] = {"variables": len(m.proto.variables), "constraints": len(m.proto.constraints),
                             "build_s": round(time.perf_counter() - t0, 3),
                             "owned_across_nodes": sum(1 for o in b.owners if o.spans),
                             "proven": {"placed": False, "preferences": False, "packing": False}}
    pods = [p for i in kind_ids for p in prep.kinds[i].pods]
    floor = sum(weight(p.priority) for p in pods if ff_by_pod[p.key].placed)
    if not b.totals and not b.placed:
        stats.update({"status": "OPTIMAL", "objective": 0, "bound": 0,
                      "proven": {"placed": True, "preferences": True, "packing": True}})
        return {}, stats
    hint = _first_fit_hint(b, prep, book, ff_by_pod)
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
        m.add(b.objective >= floor)   # never worse than first-fit (a hard constraint: parallel search)
    else:
        stats["floor_dropped"] = (
            "first-fit's placement is not valid under the documented rules (Kubernetes defect)"
            if completion.get("status") == "INFEASIBLE" else
            "first-fit's placement could not be completed into a solution of the model within the time limit")
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
        solver = _solver(budget * 0.7, hard_stop)
        with progress.current().task("optimal: phase 1 of 3, placed pods (priority-weighted)") as shown:
            shown.solver(floor, cheap)
            status = solver.solve(m, progress.solver_callback(solver, shown))
        stats["count_s"] = round(solver.wall_time, 3)
        phase1_work = solver.deterministic_time   # the later phases' share: the same on any machine
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            best, bound = int(round(solver.objective_value)), int(round(solver.best_objective_bound))
            values = _values(solver, b)
        elif status == cp_model.INFEASIBLE and full is not None:
            # Nothing reaches first-fit's objective: impossible, since first-fit's placement is a
            # solution of the model; report it rather than hide it.
            raise RuntimeError("internal: the placement model rejects first-fit's placement it accepted before")
        elif full is not None:
            stats["no_better_found"] = "no placement better than first-fit's found within the time limit"
            status, best, values = cp_model.FEASIBLE, floor, full
            bound = min(cheap, int(solver.best_objective_bound)) if solver.best_objective_bound else cheap
        else:
            # The bound of pods that have a feasible node still holds (said with its gap).
            stats.update({"status": solver.status_name(status), "objective": floor, "bound": max(floor, cheap),
                          "fallback": "no placement found within the time limit: first-fit's placement is returned"})
            stats["proven"]["placed"] = floor >= cheap
            return {"fallback": True}, stats
    stats.update({"objective": best, "bound": bound})
    stats["proven"]["placed"] = status == cp_model.OPTIMAL
    # Phase 2: preferences; phase 3: packing. Each holds what the phases before reached.
    m.add(b.objective >= best)
    levels = [("preferences", sum(b.preference) if b.preference else None),
              ("packing", packing_objective(b))]
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
        phase = 2 if name == "preferences" else 3
        with progress.current().task(f"optimal: phase {phase} of 3, {name}") as shown:
            s2 = solver.solve(m, progress.solver_callback(solver, shown))
        stats[f"{name}_s"] = round(solver.wall_time, 3)
        if s2 not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break
        values = _values(solver, b)
        stats["proven"][name] = s2 == cp_model.OPTIMAL
        stats[f"{name}_value"] = int(round(solver.objective_value))
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
    stats.update({"objective": sol.objective, "bound": sol.bound, "variables": len(sol.columns), "constraints": 0,
                  "build_s": round(time.perf_counter() - t0, 3), "status": "FEASIBLE",
                  # Column generation keeps the first objective only: preferences (none: see
                  # ColumnGeneration.accepts) and packing are not its goal.
                  "proven": {"placed": proven, "preferences": True, "packing": False}})
    if proven:
        stats["proof"] = "column generation: the placed value reaches the bound of its configuration LP"
    if sol.warm:
        # The warm start's own placement (its configurations are not all checked by the model).
        stats["no_better_found"] = f"column generation: {sol.warm}"
        return {"fallback": True}, stats
    return {"colgen": ColumnGeneration.invert(sol, prep, kind_ids)}, stats


def _complete_hint(m: cp_model.CpModel, hint: dict, seconds: float, hard_stop: float,
                   outcome: dict | None = None) -> dict | None:
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
    for var in list(b.k.values()) + list(b.y.values()) + list(b.placed.values()) + list(b.totals.values()) + \
            [v for nc in b.node_classes for v in nc.vars] + [kj for parts in b.unit_parts.values() for _, kj in parts]:
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


# ====================================================================== warm start
def _first_fit_hint(b: Built, prep: Prepared, book: ClaimBook, ff_by_pod: dict) -> dict:
    """First-fit's placement in the model's variables."""
    hint: dict = defaultdict(int)
    ff_counts: dict[str, Counter] = defaultdict(Counter)
    for var in list(b.k.values()) + list(b.y.values()) + list(b.placed.values()) + list(b.totals.values()):
        hint[var] = 0
    owner_at = {(o.kind.index, name): o for o in b.owners if o.counted for name in (o.spans or [o.node.name])}
    owner_of_claim = {o.claim_key: o for o in b.owners if not o.counted}
    for o in b.owners:
        if not o.counted:
            hint[o.mult] = 0
        for v in o.sel.values():
            hint[v] = 0
        for ts in o.terms.values():
            for t in ts:
                hint[t.var] = 0
    for kind in b.kinds:
        if kind.counted and kind.unit_size > 1:
            _hint_units(hint, b, prep, kind, ff_by_pod, owner_at)
            continue
        for pod in kind.pods:
            pl = ff_by_pod[pod.key]
            if not pl.placed:
                continue
            if kind.counted:
                hint[b.totals[(kind.index, (pod.priority, pod.group))]] += 1
                if (kind.index, pl.node) not in b.k:
                    ff_counts[pl.node][kind.index] += 1   # an interchangeable node, or none of the model's
                    continue
                hint[b.k[(kind.index, pl.node)]] += 1
                o = owner_at.get((kind.index, pl.node))
                results = [] if o is None else \
                    [(o, r) for alloc in pl.new_claims.values() for r in alloc.devices.results]
                _hint_results(hint, prep, pl.node, results)
            else:
                if (pod.key, pl.node) not in b.y:
                    continue
                hint[b.y[(pod.key, pl.node)]] = 1
                hint[b.placed[pod.key]] = 1
                for ck, alloc in pl.new_claims.items():
                    o = owner_of_claim.get(ck)
                    if o is None:
                        continue
                    hint[o.mult] = 1
                    _hint_results(hint, prep, pl.node, [(o, r) for r in alloc.devices.results])
    # Kinds owned across nodes: the owner's multiplicity is the kind's pods on its nodes.
    for o in b.owners:
        if o.spans:
            hint[o.mult] = sum(hint.get(b.k[(o.kind.index, n)], 0) for n in o.spans)
    # Interchangeable nodes: first-fit's node contents as configurations.
    for nc in b.node_classes:
        index = {conf.counts: v for conf, v in zip(nc.configurations, nc.vars)}
        for v in nc.vars:
            hint[v] = 0
        for node in nc.nodes:
            counts = tuple(ff_counts[node.name][ki] for ki in nc.kinds)
            v = index.get(counts)
            if v is not None:
                hint[v] += 1
    return dict(hint)


def _hint_units(hint, b, prep, kind, ff_by_pod, owner_at) -> None:
    """First-fit's placement of counted units: per node, units by pods placed."""
    for (ki, name), parts in b.unit_parts.items():
        if ki == kind.index:
            for _, kj in parts:
                hint.setdefault(kj, 0)
    for unit, claims in zip(kind.units, kind.unit_claims):
        placed = [ff_by_pod[p.key] for p in unit if ff_by_pod[p.key].placed]
        if not placed:
            continue
        node = placed[0].node
        parts = dict(b.unit_parts.get((kind.index, node), []))
        if len(placed) not in parts or any(pl.node != node for pl in placed):
            continue   # not expressible: the completion of the hint will say so
        hint[parts[len(placed)]] += 1
        hint[b.k[(kind.index, node)]] += 1
        hint[b.totals[(kind.index, (unit[0].priority, unit[0].group))]] += len(placed)
        o = owner_at.get((kind.index, node))
        if o is None:
            continue
        results = [(o, r) for pl in placed for ck in claims if ck in pl.new_claims
                   for r in pl.new_claims[ck].devices.results]
        _hint_results(hint, prep, node, results)


def _hint_results(hint, prep, node, results) -> None:
    seen_sel = set()
    for o, r in results:
        ref = prep.column(node, (r.driver, r.pool, r.device))
        if ref is None:
            continue
        index = o.__dict__.get("_term_of")
        if index is None:
            # (request, column) -> the owner's first term there (built once per owner).
            index = o._term_of = {}
            for key, ts in o.terms.items():
                for t in ts:
                    index.setdefault((t.spec.full_name, t.ref.key), (key, t))
        got = index.get((r.request, ref.key))
        if got is None:
            continue
        key, t = got
        hint[t.var] += 1
        sel = o.sel.get(key)
        if sel is not None and sel is not o.mult and (id(o), key, r.request) not in seen_sel:
            seen_sel.add((id(o), key, r.request))
            hint[sel] += 1


# ====================================================================== decode (invert)
def _decode_part(prep: Prepared, cluster: Cluster, workload, book: ClaimBook, sol: dict, kind_ids, ff_by_pod,
                 share_id) -> dict[str, PodPlacement]:
    """Invert the reductions for one part: nodes to the pods of counted kinds, devices out of
    groups, then AllocationResults as Kubernetes writes them."""
    out: dict[str, PodPlacement] = {}
    kinds = [prep.kinds[i] for i in kind_ids]
    if sol.get("fallback"):
        for kind in kinds:
            for pod in kind.pods:
                ff = ff_by_pod[pod.key]
                out[pod.key] = PodPlacement(pod.key, ff.node, pod.priority, pod.group, dict(ff.new_claims),
                                            Counter(ff.reasons), ff.prioritized_score, ff.explanation)
        return out
    b: Built | None = sol.get("built")
    val = sol.get("values", {})
    taken: dict = {}
    assignment = _pattern_assignment(b, val) if b is not None else {}
    chosen = None
    if "colgen" in sol:
        assignment, chosen = sol["colgen"]
    for kind in kinds:
        if chosen is not None:
            _decode_counted(prep, cluster, workload, None, {}, kind, book, share_id, taken, out, assignment,
                            chosen=chosen[kind.index])
        elif kind.counted and kind.unit_size > 1:
            _decode_units(prep, cluster, b, val, kind, book, share_id, taken, out)
        elif kind.counted:
            _decode_counted(prep, cluster, workload, b, val, kind, book, share_id, taken, out, assignment)
        else:
            _decode_unit(prep, b, val, kind, book, share_id, taken, out)
    for kind in kinds:
        for pod in kind.pods:
            pl = out.get(pod.key)
            if pl is None:
                pl = out[pod.key] = PodPlacement(pod.key, None, pod.priority, pod.group)
            if not pl.placed:
                ff = ff_by_pod[pod.key]
                if ff.placed:
                    pl.reasons = Counter({"not placed by the optimum (its room serves pods of more weight)":
                                          len(cluster.nodes)})
                else:
                    pl.reasons = Counter(ff.reasons)
                    pl.explanation = ff.explanation
    return out


def _pattern_assignment(b: Built, val: dict) -> dict[str, tuple]:
    """Interchangeable nodes: each node of a class gets the configurations the solution
    counts, in node order (the reduction's invert)."""
    out: dict[str, tuple] = {}
    for nc in b.node_classes:
        confs = [conf for conf, v in zip(nc.configurations, nc.vars) for _ in range(val.get(v, 0))]
        for node, conf in zip(nc.nodes, confs):
            out[node.name] = (nc, conf)
    return out


def _view_owner(prep, cluster, workload, book, nc, conf, kind, node):
    """The representative node's owner of `kind` with `conf`'s values, mapped onto `node`:
    its own problem and device columns, the representative's variables as keys."""
    from draopt.model.placement import Owner, Term
    from draopt.model.placement import representative_owners
    rep = representative_owners(nc, prep, cluster, workload, book).get(kind.index)
    if rep is None:
        return None, {}
    rep_refs = {r.key: i for i, r in enumerate(prep.refs[nc.nodes[0].name])}
    refs = prep.refs[node.name]
    o = Owner(-1, kind, node, None, prep.problems[(kind.index, node.name)], None)
    val: dict = {}
    for key, v in rep.sel.items():
        o.sel[key] = ("sel", key)
        val[("sel", key)] = conf.values.get((kind.index, "sel", key), 0)
    for key, ts in rep.terms.items():
        o.terms[key] = []
        for pos, t in enumerate(ts):
            var = ("term", key, pos)
            o.terms[key].append(Term(o, t.spec, t.problem, refs[rep_refs[t.ref.key]], var, {node.name}, t.entry))
            val[var] = conf.values.get((kind.index, "term", key, pos), 0)
    for wkey, chosen in rep.witness.items():
        o.witness[wkey] = {e: ("wit", wkey, e) for e in chosen}
        for e in chosen:
            val[("wit", wkey, e)] = conf.values.get((kind.index, "wit", wkey, e), 0)
    return o, val


def _decode_counted(prep, cluster, workload, b, val, kind, book, share_id, taken, out, assignment,
                    chosen=None) -> None:
    """`chosen`: the kind's placed pods (column generation), else the model's totals say."""
    owners = {name: o for o in b.owners if o.counted and o.kind is kind
              for name in (o.spans or [o.node.name])} if b is not None else {}
    per_node = [(name, val.get(var, 0)) for (ki, name), var in b.k.items() if ki == kind.index] if b is not None else []
    for name, (nc, conf) in assignment.items():
        if kind.index in nc.kinds:
            per_node.append((name, conf.counts[nc.kinds.index(kind.index)]))
    index = {n.name: n.index for n in cluster.nodes}
    per_node.sort(key=lambda nk: index[nk[0]])
    # Which pods: each (priority, gang) class gets its count, in queue order.
    chosen_pods = list(chosen or [])
    for (ki, ck), var in (b.totals.items() if b is not None else []):
        if ki != kind.index:
            continue
        chosen_pods.extend(b.class_pods[(ki, ck)][:val.get(var, 0)])
    order = {p.key: i for i, p in enumerate(kind.pods)}
    chosen_pods.sort(key=lambda p: order[p.key])
    on_node: dict[str, list] = defaultdict(list)
    node_of = CountIdenticalPods.invert(chosen_pods, per_node)
    for pod in chosen_pods:
        on_node[node_of[pod.key]].append(pod)
    started: dict[int, Any] = {}   # id -> owner (kept alive: ids stay unique)
    for name, pods in on_node.items():
        problem = None
        if name in assignment:
            nc, conf = assignment[name]
            o, local = _view_owner(prep, cluster, workload, book, nc, conf, kind, cluster.by_name[name])
        else:
            o, local = owners.get(name), val
            if o is not None and o.spans:
                problem = prep.problems[(kind.index, name)]   # the pod's own node writes its claims
        if o is not None and id(o) not in started:
            # An owner across nodes deals to the pods of all its nodes from one count.
            started[id(o)] = o
            _start_dealing(o, local)
        for pod in pods:
            pl = out[pod.key] = PodPlacement(pod.key, name, pod.priority, pod.group)
            if o is not None:
                _deal_one_pod(prep, o, pod, book, share_id, taken, pl, local, problem=problem)


def _decode_units(prep, cluster, b, val, kind, book, share_id, taken, out) -> None:
    """Counted units alike: each (node, pods placed) slot to the next unit in queue order; the
    unit's first pods are placed, its claims allocated once, reported with its first pod."""
    if b is None:
        return
    index = {n.name: n.index for n in cluster.nodes}
    slots = []
    for (ki, name), parts in sorted(b.unit_parts.items(), key=lambda kv: index[kv[0][1]]):
        if ki == kind.index:
            for j, kj in parts:
                slots.extend([(name, j)] * val.get(kj, 0))
    if len(slots) > len(kind.units):
        raise RuntimeError(f"internal: {len(slots)} unit slots for {len(kind.units)} units")
    owners = {o.node.name: o for o in b.owners if o.counted and o.kind is kind}
    ready = set()
    for (name, j), unit, claims in zip(slots, kind.units, kind.unit_claims):
        for pod in unit[:j]:
            out[pod.key] = PodPlacement(pod.key, name, pod.priority, pod.group)
        o = owners.get(name)
        if o is None:
            continue
        if name not in ready:
            ready.add(name)
            _start_dealing(o, val)
        _deal_one_pod(prep, o, unit[0], book, share_id, taken, out[unit[0].key], val, claim_keys=claims)


def _start_dealing(o, val: dict) -> None:
    """What a counted owner has left to deal to its pods: device counts per column,
    sub-request counts, matchAttribute elements."""
    o._left = {t.var: val.get(t.var, 0) for ts in o.terms.values() for t in ts}
    o._sel_left = {k: val.get(v, 0) for k, v in o.sel.items()}
    o._wit_left = {key: {e: val.get(v, 0) for e, v in ch.items()} for key, ch in o.witness.items()}


def _deal_one_pod(prep, o, pod, book, share_id, taken, pl, val, claim_keys=None, problem=None) -> None:
    """One pod's share of a counted owner's devices (greedy; exact for what `countable` admits).
    `problem`: the pod's node's problem when the owner spans nodes (default the owner's)."""
    p = problem or o.problem
    left = o._left
    sel_left = o._sel_left
    wit_left = o._wit_left
    chosen_lists: list[list[Chosen]] = [[] for _ in p.claims]
    selected: dict = {}
    for claim in p.claims:
        # The pod's matchAttribute element (at most one counted choice per pod).
        witness: dict = {}
        for ci, c in enumerate(claim.constraints):
            if (claim.index, ci) in wit_left:
                counts = wit_left[(claim.index, ci)]
                e = next((e for e in sorted(counts, key=repr) if counts[e] > 0), None)
                if e is not None:
                    counts[e] -= 1
                    witness[ci] = e
        for ri, g in enumerate(claim.requests):
            alts = g.alternatives
            if g.has_subrequests:
                spec = next((s for s in alts if sel_left.get(s.key, 0) > 0), None)
                if spec is None:
                    raise RuntimeError(f"internal: no sub-request left for {pod.key}")
                sel_left[spec.key] -= 1
                selected[(claim.index, ri)] = spec.sub_index
            else:
                spec = alts[0]
            ts = o.terms.get(spec.key, [])
            need = spec.count
            allowed = _allowed_terms(o, claim, spec, ts, witness)
            picks = _choose_terms(o, claim, spec, allowed, left, need)
            for t in picks:
                left[t.var] -= 1
                reusable = spec.admin_access or (p.features.consumable_capacity and t.entry.multi_allocatable)
                dev = GroupDevices.invert(t.ref, 1, taken, reusable)[0]
                entry = p.inventory.by_id[dev.id]
                consumed = p.consumption(spec, entry) if entry.multi_allocatable and p.features.consumable_capacity \
                    else None
                chosen_lists[claim.index].append(Chosen(spec, entry, consumed))
    keys = claim_keys if claim_keys is not None else pending_claims(book, pod)
    if len(keys) != len(p.claims):
        raise RuntimeError(f"internal: pod {pod.key} has {len(keys)} pending claims, its kind {len(p.claims)}")
    _write_claims(p, [book.claims[u] for u in keys], chosen_lists, selected, share_id, pl)


def _allowed_terms(o, claim, spec, ts, witness: dict) -> list:
    """The terms whose device holds the pod's matchAttribute element of every constraint that
    covers the request (an index per owner, request and constraint: built once per owner)."""
    from draopt.dra.constraints import constraint_applies, normalise
    index = o.__dict__.setdefault("_by_element", {})
    out = None
    for ci, e in witness.items():
        c = claim.constraints[ci]
        if not constraint_applies(list(c.requests), spec.request_name, spec.sub_name):
            continue
        by_element = index.get((spec.key, ci))
        if by_element is None:
            by_element = index[(spec.key, ci)] = defaultdict(list)
            for t in ts:
                raw = t.problem.attribute_for_constraint(t.spec, t.entry, c.match_attribute)
                v = normalise(raw, t.problem.features.list_type_attributes) if raw is not None else None
                if v is not None:
                    by_element[(v[0], next(iter(v[1])))].append(t)
        got = by_element.get(e, [])
        out = got if out is None else [t for t in out if t in set(got)]
    return list(ts) if out is None else out


def _choose_terms(o, claim, spec, allowed, left, need) -> list:
    """`need` column picks for one pod: distinct values when a distinctAttribute covers the
    request (most remaining first), a column at most once per pod when it is shared or admin."""
    from draopt.dra.constraints import constraint_applies, normalise
    distinct = [c.distinct_attribute for c in claim.constraints if c.distinct_attribute is not None and
                constraint_applies(list(c.requests), spec.request_name, spec.sub_name)]
    once = spec.admin_access or (o.problem.features.consumable_capacity and
                                 any(t.entry.multi_allocatable for t in allowed))
    picks = []
    if distinct:
        def value(t):
            raw = t.problem.attribute_for_constraint(t.spec, t.entry, distinct[0])
            v = normalise(raw, t.problem.features.list_type_attributes)
            return (v[0], next(iter(v[1])))
        by_value: dict = defaultdict(list)
        for t in allowed:
            if left.get(t.var, 0) > 0:
                by_value[value(t)].append(t)
        ranked = sorted(by_value, key=lambda e: (-sum(left[t.var] for t in by_value[e]), repr(e)))
        for e in ranked[:need]:
            picks.append(next(t for t in by_value[e] if left[t.var] > 0))
    else:
        for t in allowed:
            avail = left.get(t.var, 0)
            n = min(avail, need - len(picks), 1 if once else avail)
            picks.extend([t] * n)
            if len(picks) == need:
                break
    if len(picks) != need:
        raise RuntimeError(f"internal: request {spec.full_name}: {len(picks)} of {need} devices dealt")
    return picks


def _decode_unit(prep, b, val, kind, book, share_id, taken, out) -> None:
    for pod in kind.pods:
        node = None
        if b is not None:
            for n in prep.pod_nodes.get(pod.key, []):
                var = b.y.get((pod.key, n.name))
                if var is not None and val.get(var, 0):
                    node = n.name
                    break
        out[pod.key] = PodPlacement(pod.key, node, pod.priority, pod.group)
    if b is None:
        return
    for o in b.owners:
        if o.counted or o.kind is not kind or not val.get(o.mult, 0):
            continue
        key = o.claim_key
        users = [u for u in o.kind.users[key] if out[u].placed]
        anchor = out[users[0]].node
        p = prep.problems.get((kind.index, anchor)) or o.problem
        claim = p.claims[o.claim_index]
        chosen: list[Chosen] = []
        selected = {}
        in_claim: set = set()
        # Requests that need free devices first, admin access after (it may reuse any other).
        order = sorted(((ri, g, s) for ri, g in enumerate(claim.requests) for s in g.alternatives),
                       key=lambda x: x[2].admin_access)
        for ri, g, s in order:
            if True:
                sel = o.sel.get(s.key)
                if sel is None or not val.get(sel, 0):
                    continue
                if g.has_subrequests:
                    selected[(claim.index, ri)] = s.sub_index
                for t in o.terms.get(s.key, []):
                    n = val.get(t.var, 0)
                    if not n:
                        continue
                    reusable = s.admin_access or (p.features.consumable_capacity and t.entry.multi_allocatable)
                    for dev in GroupDevices.invert(t.ref, n, taken, reusable, in_claim):
                        if not (p.features.consumable_capacity and dev.multi_allocatable):
                            in_claim.add(dev.id)
                        entry = p.inventory.by_id.get(dev.id)
                        if entry is None:
                            raise RuntimeError(f"internal: device {dev.id} not reachable from {anchor}")
                        spec = p.claims[claim.index].requests[ri].alternatives[max(0, s.sub_index)]
                        consumed = p.consumption(spec, entry) if entry.multi_allocatable and \
                            p.features.consumable_capacity else None
                        chosen.append(Chosen(spec, entry, consumed))
        lists: list[list[Chosen]] = [[] for _ in p.claims]
        lists[claim.index] = chosen
        results = _results(p, lists, selected, share_id, only=claim.index, real=book.claims[key])
        for u in users:
            out[u].new_claims[key] = results
        # The claim is reported once, with the first user (as the scheduler allocates it once).
        for u in users[1:]:
            out[u].new_claims.pop(key, None)


def _results(problem, lists, selected, share_id, only: int, real=None):
    order = {}
    for claim in problem.claims:
        for ri, g in enumerate(claim.requests):
            for s in g.alternatives:
                order[s.key] = ri
    ordered = [sorted(ch, key=lambda c: (order[c.request.key], c.device.index)) for ch in lists]
    claim = problem.claims[only]
    if real is not None:   # the problem may belong to a claim alike: write this one
        claim = ClaimSpec(claim.index, real, claim.requests, claim.constraints)
    from draopt.dra.decode import decode_claim
    return decode_claim(problem, claim, ordered[only], selected, share_id)


def _write_claims(p, claims, chosen_lists, selected, share_id, pl: PodPlacement) -> None:
    order = {}
    for claim in p.claims:
        for ri, g in enumerate(claim.requests):
            for s in g.alternatives:
                order[s.key] = ri
    for claim, real in zip(p.claims, claims):
        spec = ClaimSpec(claim.index, real, claim.requests, claim.constraints)
        ordered = sorted(chosen_lists[claim.index], key=lambda c: (order[c.request.key], c.device.index))
        from draopt.dra.decode import decode_claim
        pl.new_claims[f"{real.namespace}/{real.name}"] = decode_claim(p, spec, ordered, selected, share_id)


def _fresh(cluster: Cluster) -> Cluster:
    import copy
    fresh = Cluster.__new__(Cluster)
    fresh.__dict__.update(cluster.__dict__)
    fresh.allocated = copy.deepcopy(cluster.allocated)
    fresh.nodes = [copy.copy(n) for n in cluster.nodes]
    for n in fresh.nodes:
        n.used = dict(n.used)
    fresh.by_name = {n.name: n for n in fresh.nodes}
    fresh._inventories = {}
    return fresh
