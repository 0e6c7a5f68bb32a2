"""One independent part of the optimal model, solved in phases (draopt.placement.optimal): build,
first-fit's placement as the warm start, phase 1 (placed pods; the neighbourhood search first
where topology domains apply), then the victims, the preferences and the packing, each holding
what the phases before reached. A large part of counted kinds on few classes of interchangeable
nodes is solved by column generation instead.

Each step is a function over `PartSolve` (the part's model and what was found so far); the CP-SAT
models are built and solved in the same order as when this was one function.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from draopt import progress
from draopt import interrupt
from draopt.cluster.result import weight
from draopt.model import topology_domains
from draopt.model.placement import Built, build, packing_objective
from draopt.model.prepare import OutOfTime, Prepared
from draopt.model.warm_start import _first_fit_hint
from draopt.placement import optimal_lns
from draopt.placement.solver_stats import PartStats, unproven


def _solver(seconds: float, hard_stop: float) -> cp_model.CpSolver:
    solver = cp_model.CpSolver()
    # Same input, same placement: workers interleaved deterministically, limits in CP-SAT's
    # deterministic time, wall time only as a hard stop.
    solver.parameters.num_workers = 2
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = max(0.05, seconds)
    solver.parameters.max_time_in_seconds = max(0.05, hard_stop - time.perf_counter())
    return interrupt.watch(solver)  # Ctrl-C on the command line: the best found so far (draopt.interrupt)


@dataclass
class PartSolve:
    """A part's model being solved: the built model, its floor (first-fit's objective) and cheap
    bound, and the best solution so far (`values`: every variable the decoding reads)."""

    b: Built
    m: cp_model.CpModel
    victims: Any  # draopt.model.victims.VictimSet, or None
    cluster: Any
    workload: Any
    node_names: set[str]
    floor: int
    budget: float
    hard_stop: float
    t0: float
    stats: PartStats
    cheap: int = 0
    full: dict | None = None  # first-fit's placement completed into a solution, or None
    completion_status: str | None = None  # CP-SAT's status of that completion
    status: Any = None  # phase 1's CP-SAT status
    best: int = 0
    bound: int = 0
    values: dict = field(default_factory=dict)
    phase1_work: float = 0.0  # phase 1's deterministic time: the later phases' share


def solve_part(
    prep: Prepared, cluster, workload, book, kind_ids, node_names, ff_by_pod, budget, hard_stop, victims=None
) -> tuple[dict, PartStats]:
    """(what the decoding reads: built model and values, column generation's placement, or
    {"fallback": True} for first-fit's answer; the part's figures)."""
    t0 = time.perf_counter()
    if victims is not None and not (victims.nodes() & node_names):
        victims = None  # no candidate in this part
    if _by_columns(prep, cluster, workload, kind_ids, node_names, victims):
        # Its share and no more (hard_stop allows 1.5 x): the parts after it keep theirs.
        return _solve_by_columns(
            prep, cluster, workload, book, kind_ids, node_names, ff_by_pod, min(hard_stop, t0 + budget)
        )
    pods = [p for i in kind_ids for p in prep.kinds[i].pods]
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
        return {"fallback": True}, _out_of_time(prep, pods, ff_by_pod, t0, e)
    part = _built(b, victims, cluster, workload, node_names, pods, ff_by_pod, budget, hard_stop, t0)
    if not b.totals and not b.placed:
        part.stats.status, part.stats.objective, part.stats.bound = "OPTIMAL", 0, 0
        part.stats.proven = {"placed": True, "victims": True, "preferences": True, "packing": True}
        return {}, part.stats
    _warm_start(part, prep, book, ff_by_pod)
    part.cheap = sum(weight(p.priority) for p in pods if prep.pod_nodes.get(p.key))
    part.stats.cheap_bound = part.cheap
    _require_floor(part)
    if part.floor >= part.cheap and part.full is not None:
        # First-fit already places every pod that could be placed: phase 1 needs no search.
        part.stats.proof = "first-fit places every pod that has a feasible node"
        part.status, part.best, part.bound, part.values = cp_model.OPTIMAL, part.floor, part.floor, part.full
        part.stats.count_s = 0.0
        part.phase1_work = 0.0
    elif not _phase1(part):
        return {"fallback": True}, part.stats
    part.stats.objective, part.stats.bound = part.best, part.bound
    part.stats.proven["placed"] = part.status == cp_model.OPTIMAL
    _later_phases(part)
    part.stats.status = "OPTIMAL" if all(part.stats.proven.values()) else "FEASIBLE"
    part.stats.build_solve_s = round(time.perf_counter() - t0, 3)
    return {"built": b, "values": part.values}, part.stats


def _by_columns(prep: Prepared, cluster, workload, kind_ids, node_names, victims) -> bool:
    """Whether the part is solved by column generation (colgen.py) rather than the one model."""
    from draopt.model.colgen import MIN_NODES, ColumnGeneration

    return (
        victims is None
        and len(node_names) >= MIN_NODES
        and not topology_domains.applies(workload, [prep.kinds[i] for i in kind_ids])
        and ColumnGeneration.accepts(prep, kind_ids, node_names, cluster, workload) is None
    )


def _out_of_time(prep: Prepared, pods: list, ff_by_pod: dict, t0: float, error: OutOfTime) -> PartStats:
    """The model could not be built in time: first-fit's answer, with the bound of pods that have
    a feasible node (a bound without the model)."""
    floor = sum(weight(p.priority) for p in pods if ff_by_pod[p.key].placed)
    cheap = sum(weight(p.priority) for p in pods if prep.pod_nodes.get(p.key))
    return PartStats(
        status="UNKNOWN",
        objective=floor,
        bound=max(floor, cheap),
        cheap_bound=cheap,
        build_s=round(time.perf_counter() - t0, 3),
        proven={"placed": floor >= cheap, "preferences": False, "packing": False},
        fallback=f"{error}: first-fit's placement is returned",
    )


def _built(b: Built, victims, cluster, workload, node_names, pods, ff_by_pod, budget, hard_stop, t0) -> PartSolve:
    m = b.model.cp
    stats = PartStats(
        variables=len(m.proto.variables),
        constraints=len(m.proto.constraints),
        build_s=round(time.perf_counter() - t0, 3),
        owned_across_nodes=sum(1 for o in b.owners if o.spans),
        proven=unproven(),
    )
    if b.victims is not None:
        stats.proven["victims"] = b.victims.cost is None
        stats.victim_variables = len(b.victims.classes)
    floor = sum(weight(p.priority) for p in pods if ff_by_pod[p.key].placed)
    return PartSolve(b, m, victims, cluster, workload, node_names, floor, budget, hard_stop, t0, stats)


def _warm_start(part: PartSolve, prep: Prepared, book, ff_by_pod: dict) -> None:
    """First-fit's placement as a complete solution of the model (auxiliary variables found by
    propagation): the floor, the incumbent, and the start of phases 2 and 3. None if it breaks
    a documented rule (first-fit reproduces Kubernetes' allocator defects)."""
    hint = _first_fit_hint(part.b, prep, book, ff_by_pod)
    if part.b.victims is not None:
        from draopt.model.victims import first_fit_hint

        hint.update(first_fit_hint(part.victims, part.b.victims))
    t1 = time.perf_counter()
    completion: dict = {}
    with progress.current().task("optimal: first-fit as the warm start"):
        part.full = _complete_hint(part.m, hint, max(1.0, part.budget * 0.25), part.hard_stop, completion)
    part.stats.warm_start_s = round(time.perf_counter() - t1, 3)
    part.stats.first_fit_in_model = part.full is not None
    part.completion_status = completion.get("status")


def _require_floor(part: PartSolve) -> None:
    if part.full is not None:
        part.m.add(part.b.objective >= part.floor)  # never worse than first-fit (a hard constraint: parallel search)
    else:
        part.stats.floor_dropped = (
            "first-fit's placement is not valid under the documented rules (Kubernetes defect)"
            if part.completion_status == "INFEASIBLE"
            else "first-fit's placement could not be completed into a solution of the model within the time limit"
        )


def _phase1(part: PartSolve) -> bool:
    """Phase 1, the most priority-weighted placed pods. False: no placement (first-fit's kept)."""
    m, b, stats = part.m, part.b, part.stats
    # No hint: measured, a first-fit hint holds the search near first-fit (on the 100-node
    # mixed fleet: 141,548 with it, 142,720 without, bound 142,726). First-fit's placement
    # is kept as the incumbent in case the search finds nothing better in time.
    m.maximize(b.objective)
    start, start_values, share = _search_windows(part)
    solver = _solver(part.budget * share, part.hard_stop)
    with progress.current().task("optimal: phase 1 of 3, placed pods (priority-weighted)") as shown:
        shown.solver(part.floor, part.cheap)
        status = solver.solve(m, progress.solver_callback(solver, shown))
    stats.count_s = round(solver.wall_time, 3)
    part.phase1_work = solver.deterministic_time  # the later phases' share: the same on any machine
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        part.best, part.bound = int(round(solver.objective_value)), int(round(solver.best_objective_bound))
        part.values = _values(solver, b)
    elif status == cp_model.INFEASIBLE and part.full is not None:
        # Nothing reaches first-fit's objective: impossible, since first-fit's placement is a
        # solution of the model; report it rather than hide it.
        raise RuntimeError("internal: the placement model rejects first-fit's placement it accepted before")
    elif part.full is not None:
        if start == part.floor:
            stats.no_better_found = "no placement better than first-fit's found within the time limit"
        status, part.best, part.values = cp_model.FEASIBLE, start, start_values or {}
        cheap = part.cheap
        part.bound = min(cheap, int(solver.best_objective_bound)) if solver.best_objective_bound else cheap
    else:
        # The bound of pods that have a feasible node still holds (said with its gap).
        stats.status = solver.status_name(status)
        stats.objective = part.floor
        stats.bound = max(part.floor, part.cheap)
        stats.fallback = "no placement found within the time limit: first-fit's placement is returned"
        stats.proven["placed"] = part.floor >= part.cheap
        return False
    part.status = status
    return True


def _search_windows(part: PartSolve) -> tuple[int, dict | None, float]:
    """With topology domains, the search over windows of them first (optimal_lns: on bench_gangs
    the whole-model search found nothing better than first-fit in 63 s), from first-fit's
    placement; the whole-model search after it, from what it found, for the rest of phase 1's
    share (its bound, or its proof on a small part). (objective, values, phase 1's share left)."""
    start, start_values, share = part.floor, part.full, 0.7
    hoods = optimal_lns.windows(part.workload, part.cluster, part.node_names) if part.full is not None else []
    if hoods:
        start, start_values, lns = optimal_lns.improve(
            part.m,
            part.b,
            part.full,  # type: ignore[arg-type]
            part.floor,
            part.cheap,
            hoods,
            part.budget * 0.65,
            part.hard_stop,
            _solver,
            part.victims,
        )
        part.stats.lns.update(lns)
        share = max(0.05, 0.7 - lns["lns_deterministic_s"] / max(part.budget, 1e-9)) if "lns_s" in lns else 0.7
        if start > part.floor:
            part.m.add(part.b.objective >= start)
    return start, start_values, share


def _later_phases(part: PartSolve) -> None:
    """Phase 1b (victims), 2 (preferences), 3 (packing): each holds what the phases before reached."""
    m, b, stats = part.m, part.b, part.stats
    m.add(b.objective >= part.best)
    levels = [("preferences", sum(b.preference) if b.preference else None), ("packing", packing_objective(b))]
    if b.victims is not None:
        # The victims right after the placed pods: fewest, then lowest priority (model/victims.py).
        levels.insert(0, ("victims", b.victims.cost))
    for name, expr in levels:
        if expr is None:
            stats.proven[name] = True
            continue
        remaining = part.hard_stop - time.perf_counter()
        if remaining < 0.05 or interrupt.requested():
            break
        m.clear_hints()
        for var, value in part.values.items():
            m.add_hint(var, value)
        m.minimize(expr)
        # Secondary goals get a bounded share: at most the deterministic time phase 1 took plus
        # one (not its wall time: the same share, and so the same placement, on a busy machine).
        solver = _solver(max(0.05, min(remaining * 0.4, part.phase1_work + 1.0)), part.hard_stop)
        phase = {"victims": "1b", "preferences": 2}.get(name, 3)
        with progress.current().task(f"optimal: phase {phase} of 3, {name}") as shown:
            s2 = solver.solve(m, progress.solver_callback(solver, shown))
        stats.phase_s[name] = round(solver.wall_time, 3)
        if s2 not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break
        part.values = _values(solver, b)
        stats.proven[name] = s2 == cp_model.OPTIMAL
        stats.phase_value[name] = int(round(solver.objective_value))
        # Phase 1 holds as "at least": a later phase may place more than phase 1 found.
        stats.objective = max(stats.objective or 0, int(solver.value(b.objective)))
        m.add(expr <= int(round(solver.objective_value)))


def _solve_by_columns(prep, cluster, workload, book, kind_ids, node_names, ff_by_pod, hard_stop):
    """A large part of counted kinds on few classes of interchangeable nodes: column generation
    (colgen.py) proves a bound of the placed value and places from its columns."""
    from draopt.model.colgen import ColumnGeneration

    t0 = time.perf_counter()
    warm = {p.key: ff_by_pod[p.key].node for i in kind_ids for p in prep.kinds[i].pods}
    cg = ColumnGeneration()
    sol = cg.apply(prep, cluster, workload, book, kind_ids, node_names, deadline=hard_stop, warm=warm)
    proven = sol.objective >= sol.bound
    stats = PartStats(
        objective=sol.objective,
        bound=sol.bound,
        variables=len(sol.columns),
        constraints=0,
        build_s=round(time.perf_counter() - t0, 3),
        status="FEASIBLE",
        # Column generation keeps the first objective only: preferences (none: see
        # ColumnGeneration.accepts) and packing are not its goal.
        proven={"placed": proven, "preferences": True, "packing": False},
        colgen={k: v for k, v in sol.stats.items() if k.startswith("colgen_")},
    )
    if proven:
        stats.proof = "column generation: the placed value reaches the bound of its configuration LP"
    if sol.warm:
        # The warm start's own placement (its configurations are not all checked by the model).
        stats.no_better_found = f"column generation: {sol.warm}"
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
    status = interrupt.watch(solver).solve(copy)
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
