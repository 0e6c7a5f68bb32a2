"""allocate on one node: the one model (`draopt.model.placement.build`) with one candidate node
(`ClaimsOnOneNode`), under a policy: first-fit (kube-scheduler's choice: its search order as the
objective, replaying the search where its answer depends on the path) or optimal (packing)."""

from __future__ import annotations

import time
from typing import Any

from ortools.sat.python import cp_model

from draopt import interrupt
from draopt.errors import AllocationError
from draopt.dra.problem import Problem
from draopt.dra.reference import ReferenceAllocator, SearchLimit
from draopt.model.objective import allocation_packing, first_fit_order
from draopt.model.placement import Built, build
from draopt.model.reductions.chain import Chain, allocation_chain

REPLAY_NODE_LIMIT = 1_000_000  # about 15 s of Python search; Kubernetes stops at 10 s


def _solver(time_limit: float | None) -> cp_model.CpSolver:
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.random_seed = 0
    if time_limit:
        s.parameters.max_time_in_seconds = time_limit
    return s


def path_dependent(problem: Problem) -> list[str]:
    """Why Kubernetes' answer on this problem depends on its search path (so first-fit must
    replay the search): lazily evaluated CEL that fails somewhere, and the allocator's defects."""
    why = []
    f = problem.features
    # The counter leak is 1.35's (Features.counter_leak): later releases roll a refused device
    # back, so their search finds the model's first solution.
    has_counters = (
        f.counter_leak and f.partitionable_devices and any(d.device.consumes_counters for d in problem.devices)
    )
    for claim in problem.claims:
        for c in claim.constraints:
            if c.distinct_attribute is not None:
                why.append(
                    "distinctAttribute (DEFECT distinct-last-only)"
                    if f.distinct_last_only
                    else "distinctAttribute (values of unknown type)"
                )
            elif f.list_type_attributes:
                why.append("list-type matchAttribute (DEFECT match-intersection)")
            elif has_counters:
                why.append("constraints with counters (DEFECT counter-leak)")
        for group in claim.requests:
            for spec in group.alternatives:
                if spec.mode == "All" and claim.constraints:
                    why.append("All request under a constraint (constraint failures are errors)")
    if has_counters:
        if f.device_taints and any(d.taints for d in problem.devices if d.device.consumes_counters):
            why.append("tainted counter devices (DEFECT counter-leak)")
        if f.consumable_capacity and any(d.multi_allocatable for d in problem.devices if d.device.consumes_counters):
            why.append("multi-allocatable counter devices (DEFECT counter-leak)")
    return why


def build_one_node(
    problem: Problem, *, kubernetes_quirks: bool, explain: bool = False, packing: bool = False
) -> tuple[Built, Chain, list]:
    """The one model of the problem's claims on its node (CEL runtime errors raised), with the
    chain that reduced the problem to it and that chain's inverse data."""
    chain = allocation_chain(problem)
    one, inverse_data = chain.apply(problem)
    b = build(
        one.prepared,
        one.cluster,
        one.workload,
        None,
        [0],
        {one.node_name},
        one_node=True,
        patterns=False,
        across=False,
        kubernetes_quirks=kubernetes_quirks,
        explain=explain,
        allocation=True,
        packing_terms=packing,
    )
    # The one pod is placed: allocate asks whether its claims fit together on the node.
    for var in b.placed.values():
        b.model.cp.add(var == 1)
    return b, chain, inverse_data


def static_infeasibility(problem: Problem, b: Built) -> list[str]:
    """Why a plain request fails before any search: fewer candidates than it needs, or (All) a
    matching device that cannot be used."""
    why = []
    for owner in b.owners:
        assert owner.claim_index is not None  # allocate's owners are the claims of its one pod
        claim = problem.claims[owner.claim_index]
        for group in claim.requests:
            if group.has_subrequests:
                continue
            spec = group.alternatives[0]
            n = len(owner.terms.get(spec.key, []))
            if spec.mode == "All":
                if n < len(spec.all_devices) or not n:
                    why.append(
                        f"claim {claim.key}, request {spec.full_name}: not every matching device is usable"
                        if n
                        else f"claim {claim.key}, request {spec.full_name}: no matching device"
                    )
            elif n < spec.count:
                why.append(f"claim {claim.key}, request {spec.full_name}: {n} candidate devices, {spec.count} needed")
    return why


def solve_problem(problem: Problem, *, policy: str = "first-fit", time_limit: float | None = None):
    """Returns (chosen per claim or None, selected sub-requests, stats)."""
    stats: dict[str, Any] = {}
    quirks = policy == "first-fit"
    t0 = time.perf_counter()
    why = path_dependent(problem) if quirks else []
    # Restrictive defects cannot create solutions, but distinct-last-only can, and an All
    # request under a constraint fails with an error rather than unschedulable: those replay.
    replay_if_infeasible = any("distinct" in w or "All request" in w for w in why)
    if replay_if_infeasible:
        # Every way out below replays Kubernetes' search then, and answers with it (the model's
        # answer only where the search stops at its limit): the search first, no model unless then.
        replayed = _replay_before_model(problem, stats, t0, why)
        if replayed is not None:
            return replayed
    try:
        b, chain, inverse_data = build_one_node(problem, kubernetes_quirks=quirks, packing=policy == "optimal")
    except AllocationError:
        if not quirks:
            raise
        # A CEL runtime error somewhere: Kubernetes only fails if its search reaches it.
        return _replay(problem, stats, t0, ["CEL runtime error on some device"], stopped=replay_if_infeasible)
    cp = b.model.cp
    stats["build_ms"] = (time.perf_counter() - t0) * 1000
    stats["variables"] = len(cp.proto.variables)
    stats["constraints"] = len(cp.proto.constraints)
    if static_infeasibility(problem, b):
        stats["solve_ms"] = 0.0
        if replay_if_infeasible:
            return _replay(problem, stats, t0, why, stopped=True)
        return None, {}, stats
    if policy == "optimal":
        objective = allocation_packing(b, problem)
        if objective is not None:
            cp.minimize(objective)
    solver = _solver(time_limit)
    if policy in ("first-fit", "first-fit-documented"):
        cp.add_decision_strategy(first_fit_order(b, problem), cp_model.CHOOSE_FIRST, cp_model.SELECT_MAX_VALUE)
        solver.parameters.search_branching = cp_model.FIXED_SEARCH
        # Presolve may remove feasible solutions (even with keep_all_feasible_solutions_in_presolve
        # it was seen to lose the lexicographically first one), so the search runs on the model
        # exactly as built.
        solver.parameters.cp_model_presolve = False
    t1 = time.perf_counter()
    status = interrupt.watch(solver).solve(cp)
    stats["solve_ms"] = (time.perf_counter() - t1) * 1000
    stats["status"] = solver.status_name(status)
    if status == cp_model.INFEASIBLE:
        if replay_if_infeasible:
            return _replay(problem, stats, t0, why, stopped=True)
        return None, {}, stats
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise AllocationError(f"solver stopped without an answer ({solver.status_name(status)}); raise --time-limit")
    chosen, selected = chain.invert((b, solver.value), inverse_data)
    if quirks and why:
        # A solution exists under the documented rules; Kubernetes' search may still take a
        # different path. Replay it (restrictive defects cannot create solutions, so an
        # infeasible model needs no replay).
        return _replay(problem, stats, t0, why, fallback=(chosen, selected), stopped=replay_if_infeasible)
    return chosen, selected, stats


def _replay_before_model(problem: Problem, stats: dict, t0: float, why: list[str]):
    """Kubernetes' search, as _replay runs it, before any model: its answer and figures, or None
    when it stops at its step limit (the same search stops there again: see _replay's `stopped`)."""
    t = time.perf_counter()
    answer = _search_to_the_end(problem)
    if answer is None:
        return None
    stats["replay"] = sorted(set(why))
    stats["solve_ms"] = (time.perf_counter() - t) * 1000
    stats["build_ms"] = (t - t0) * 1000
    return answer[0], answer[1], stats


def _search_to_the_end(problem: Problem):
    """Kubernetes' search on the problem: (its answer, the sub-requests it selected), or None when
    it stops at its step limit."""
    ref = ReferenceAllocator(problem, kubernetes_defects=True, node_limit=REPLAY_NODE_LIMIT)
    try:
        return ref.allocate(), ref.selected_sub
    except SearchLimit:
        return None


def _replay(problem: Problem, stats: dict, t0: float, why: list[str], fallback=None, stopped: bool = False):
    """Kubernetes' search replayed to the end (its answer), or `fallback` when it stops at its step
    limit (an AllocationError without one). `stopped`: it is known to stop there (it was run, on
    the same problem, by _replay_before_model), so it is not run again."""
    t = time.perf_counter()
    answer = None if stopped else _search_to_the_end(problem)
    if answer is None:
        if fallback is None:
            raise AllocationError("the kube-scheduler search did not finish within its step limit")
        answer = fallback
        stats["replay_truncated"] = True
    chosen, selected = answer
    stats["replay"] = sorted(set(why))
    stats["solve_ms"] = stats.get("solve_ms", 0.0) + (time.perf_counter() - t) * 1000
    stats.setdefault("build_ms", (t - t0) * 1000)
    return chosen, selected, stats
