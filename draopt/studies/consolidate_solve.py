"""The phases of `plan --consolidate`'s solve, on the model of draopt.studies.consolidate_model,
within one wall-clock deadline (`--time-limit` bounds the whole command):

1. the warm start: the better of the cluster as it runs and Karpenter's consolidation's answer,
   each completed by the solver with its placements fixed (the answer of last resort);
2. the most pods placed (skipped when the warm start places every pod that has a node);
3. the aggregate bound (draopt.studies.consolidate_bound): its cheapest set of kept nodes is tried
   in the full model with those nodes fixed (first-fit-decreasing first, then a search); when
   they hold the pods, that answer costs the bound and is proven minimal, with no search of the
   full model; when they are proven too few, the aggregate is solved again without them;
4. the least cost (skipped when 3 proved it), starting from the best answer so far, its bound the
   better of CP-SAT's and the aggregate's;
5. the fewest moves, then the fewest new nodes, then the first existing nodes by name, at that cost.

Each phase stops at a share of `time_limit` in CP-SAT's deterministic time (so an input gives
the same answer from run to run when the wall clock does not stop it first) and at the deadline;
a phase cut short keeps the best answer found before it. Ctrl-C on the command line
(draopt.interrupt, under `deferred`) cuts every phase short the same way; before any answer,
it raises NoAnswer with the aggregate's bound when it was computed."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from draopt import interrupt
from draopt import progress
from draopt.errors import InputError
from draopt.studies.consolidate_model import ConsolidationInput, Model

# what is kept of the time limit for decoding and checking the answer after the solves
_DECODE_SHARE = 0.1
# the aggregate solved at most this many times (each time without kept nodes proven too few)
_AGGREGATE_ROUNDS = 4
# the room asked of the aggregate's sets of nodes tried best-fit-decreasing before any warm start,
# beyond the demand: the first is the bound's, the others are guesses
_FIRST_SLACK = (0.0, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16)
# then the step between the last slack not held and the first held halved at most this many times
_FIRST_HALVINGS = 3


@dataclass
class Answer:
    values: dict  # every variable the decoding reads -> its value
    opened: dict[str, int]
    cost: int  # scaled
    bound: int  # scaled
    status: str
    placed_proven: bool
    stats: dict[str, Any]
    # the cost meets the aggregate's bound, which holds for any number of new copies: a cap on
    # the candidate copies (--max-nodes) hides no cheaper answer
    any_copies: bool = False


class NoAnswer(KeyboardInterrupt):
    """Ctrl-C before any answer of the model: the aggregate's lower bound (scaled) when computed."""

    def __init__(self, bound: int | None):
        super().__init__()
        self.bound = bound


class _Fixed:
    """A complete solution read like a solver's (`value(var)`), from its values by variable index."""

    def __init__(self, by_index: dict[int, int]):
        self.by_index = by_index

    def value(self, var) -> int:
        return self.by_index[var.index]


@dataclass
class _Clock:
    time_limit: float
    deadline: float  # perf_counter: the solves stop here (the decoding's share kept)

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def solver(self, share: float):
        from draopt.studies.plan_model import _solver

        return _solver(share * self.time_limit, self.deadline)


def solve(model: Model, inp: ConsolidationInput, rules, time_limit: float, deadline: float, karpenter=None) -> Answer:
    """The phases (see the module docstring); `deadline` is the command's (perf_counter)."""
    cp = model.b.model.cp
    stats: dict[str, Any] = {}
    clock = _Clock(time_limit, deadline - _DECODE_SHARE * time_limit)
    with progress.current().task("plan --consolidate: the aggregate's nodes"):
        first = _aggregate_first(model, inp, rules, clock, stats)
    if first is not None and _cost_of(model, first[1]) == first[0]:  # proven at once, every pod placed
        floor, incumbent = first
        placed_proven, cost, bound, status_name = True, floor, floor, "OPTIMAL"
        stats["warm_start"] = "the aggregate's nodes"
    else:
        placed_proven, cost, bound, status_name, floor, incumbent = _search(
            model, inp, rules, clock, stats, karpenter, first
        )
    stats.pop("aggregate_first_bound", None)
    cp.add(model.cost_expr <= cost)
    _hint_from(cp, incumbent.by_index)
    solver = _moves_phase(model, inp, clock, stats)
    chosen = solver if solver is not None else incumbent
    from draopt.placement.optimal_part import _values

    values = _values(chosen, model.b)
    opened = {n: chosen.value(v) for n, v in model.opened.items()}
    stats.update(cost_status=status_name, bound_aggregate=floor)
    return Answer(values, opened, cost, bound, status_name, placed_proven, stats, any_copies=cost == floor)


def _aggregate_first(model: Model, inp: ConsolidationInput, rules, clock: _Clock, stats: dict):
    """Before any warm start: the aggregate with every pending pod placed, and its cheapest kept
    nodes filled best-fit-decreasing (completed by the solver with the placements fixed). When
    that places every pod that has a node, at the aggregate's bound, it is proven minimal. When it
    does not, the aggregate is solved again asking for more room than the demand (a guess, not a
    proof: the bound stays the first one's; pods of 0.3, 0.7, 1.1 and 1.7 cpu rarely fill a set
    of nodes chosen by volume alone), _FIRST_SLACK in turn, then halving the step between the last
    slack not held and the first held, all within 20 % of the time limit. (the bound, the
    cheapest solution found) or None; on the generated clusters of benchmarks/bench_consolidate.py
    the first set is the answer from 30 nodes up."""
    from draopt.studies.consolidate_bound import aggregate, aggregate_cuts

    started = time.perf_counter()
    guess = _Guesses(model, inp, aggregate(model, inp, rules, True), clock, started + 0.2 * clock.time_limit)
    held_at = None
    for slack in _FIRST_SLACK:
        if guess.try_slack(slack):
            held_at = slack
            break
        if guess.out_of_time():
            break
    if held_at:  # the cheapest held between the last slack not held and the first held
        low, high = _FIRST_SLACK[_FIRST_SLACK.index(held_at) - 1], held_at
        for _ in range(_FIRST_HALVINGS):
            if guess.out_of_time():
                break
            middle = (low + high) / 2
            low, high = (low, middle) if guess.try_slack(middle) else (middle, high)
    stats.update(aggregate_first_s=round(time.perf_counter() - started, 3), aggregate_first_rounds=guess.rounds)
    if guess.bound is not None:  # what is known if Ctrl-C comes before any answer (taken out by `solve`)
        stats["aggregate_first_bound"] = guess.bound
    if guess.best is None or guess.bound is None:
        return None
    model.b.model.cp.add(model.placed_expr >= model.cheap)
    aggregate_cuts(model, guess.agg)
    return guess.bound, guess.best


@dataclass
class _Guesses:
    """The aggregate's sets of nodes tried best-fit-decreasing: the bound (the first solve's), the
    cheapest solution held so far, and the sets tried."""

    model: Model
    inp: ConsolidationInput
    agg: Any
    clock: _Clock
    stop: float  # perf_counter: no more guesses after this
    bound: int | None = None
    best: _Fixed | None = None
    rounds: int = 0
    tried: list = field(default_factory=list)  # sets of nodes not held

    def out_of_time(self) -> bool:
        return time.perf_counter() > self.stop or self.clock.left() < 0.5 or interrupt.requested()

    def try_slack(self, slack: float) -> bool:
        """Whether the aggregate's cheapest set with `slack` more room holds every pod (a cheaper
        one than the best so far becomes the best)."""
        from draopt.studies.consolidate_bound import solve_aggregate

        model, clock = self.model, self.clock
        answer = solve_aggregate(self.agg, 0.05 * clock.time_limit, clock.deadline, slack=slack)
        if answer.cost is None:
            return False
        self.bound = answer.bound if self.bound is None else self.bound
        if self.best is not None and answer.cost >= _cost_of(model, self.best):
            return True  # no cheaper: as held as the best
        if answer.kept in self.tried:
            return False
        self.rounds += 1
        greedy = _first_fit_decreasing(model, self.inp, answer.kept)
        found = None
        if greedy is not None:
            found = _completed(_kept_copy(model, answer.kept), model, self.inp, greedy, answer.kept, clock)
        if found is None or sum(w * found.value(v) for w, v in model.placed_terms) < model.cheap:
            self.tried.append(answer.kept)
            return False
        self.best = found
        return True


def _search(model: Model, inp: ConsolidationInput, rules, clock: _Clock, stats: dict, karpenter, first):
    """From the warm start (or `first`, the aggregate's guesses' answer, when it is cheaper): the
    pods phase, the aggregate phase, the cost phase. (pods placed proven, cost, bound, CP-SAT's
    status, the aggregate's bound, the solution)."""
    from ortools.sat.python import cp_model

    cp = model.b.model.cp
    best = _warm_start(model, inp, clock, stats, karpenter)
    if first is not None and (
        best is None or best[0] < model.cheap or _cost_of(model, first[1]) < _cost_of(model, best[1])
    ):
        best = (model.cheap, first[1])  # it places every pod, for less
        _hint_from(cp, first[1].by_index)
        stats["warm_start"] = "the aggregate's guesses"
    if best is None and interrupt.requested():  # Ctrl-C before any answer: no search starts
        raise NoAnswer(stats.get("aggregate_first_bound"))
    placed_proven = best is not None and best[0] >= model.cheap
    if not placed_proven:
        cp.maximize(model.placed_expr)
        solver = clock.solver(0.3)
        status = interrupt.watch(solver).solve(cp)
        stats["pods_status"] = solver.status_name(status)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            placed = round(solver.objective_value)
            placed_proven = status == cp_model.OPTIMAL or placed >= model.cheap
            if best is None or placed > best[0]:
                best = (placed, _Fixed(_solution(solver)))
            _hint_from(cp, best[1].by_index)
        elif best is None:
            if interrupt.requested():
                raise NoAnswer(stats.get("aggregate_first_bound"))
            raise InputError(f"--time-limit {clock.time_limit:g}: CP-SAT found no placement in time; give it more time")
    assert best is not None
    best_placed, incumbent = best
    cp.add(model.placed_expr >= best_placed)
    floor, tried = _aggregate_phase(model, inp, rules, clock, stats, best_placed >= model.cheap, first is None)
    if tried is not None:
        incumbent = tried
    cost = _cost_of(model, incumbent)
    if floor > cost:  # a lower bound above an answer: the aggregate is wrong, never say "proven"
        raise RuntimeError(f"internal: the aggregate's bound {floor} is above an answer's cost {cost}")
    cp.add(model.cost_expr <= cost)  # never dearer than the best answer so far
    status_name, bound = "OPTIMAL", floor
    if cost > floor:
        status_name, cost, bound, incumbent = _cost_phase(model, clock, stats, incumbent, cost, floor)
    return placed_proven, cost, bound, status_name, floor, incumbent


def _cost_phase(model: Model, clock: _Clock, stats: dict, incumbent: _Fixed, cost: int, floor: int):
    """The least cost, from the incumbent; (status, cost, bound, solution)."""
    from ortools.sat.python import cp_model

    cp = model.b.model.cp
    _hint_from(cp, incumbent.by_index)
    cp.add(model.cost_expr >= floor)
    cp.minimize(model.cost_expr)
    solver = clock.solver(0.3)
    started = time.perf_counter()
    with progress.current().task("plan --consolidate: least cost") as shown:
        status = interrupt.watch(solver).solve(cp, progress.solver_callback(solver, shown))
    stats["cost_s"] = round(time.perf_counter() - started, 3)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):  # cut short: the incumbent stays
        return "UNKNOWN", cost, floor, incumbent
    found = round(solver.objective_value)
    bound = max(floor, _ceil(solver.best_objective_bound))
    if found > cost:  # (the hint is a solution: never)
        return solver.status_name(status), cost, bound, incumbent
    name = "OPTIMAL" if found <= bound else solver.status_name(status)
    return name, found, min(bound, found), _Fixed(_solution(solver))


def _moves_phase(model: Model, inp: ConsolidationInput, clock: _Clock, stats: dict):
    """The most movable pods left where they run, then the fewest new nodes, at the cost found
    (a tie in cost keeps the nodes that run). The solver when it found an answer, else None."""
    from ortools.sat.python import cp_model

    if clock.left() < 0.5 or interrupt.requested():
        stats["moves_status"] = "SKIPPED (Ctrl-C)" if interrupt.requested() else "SKIPPED (time limit)"
        return None
    cp = model.b.model.cp
    new = [lit for name, lit in model.opened.items() if name in inp.type_of]
    # then, among ties, the existing nodes first by name kept (the same answer every time)
    names = sorted(n for n in model.opened if n not in inp.type_of)
    by_name = sum((len(names) - i) * model.opened[n] for i, n in enumerate(names))
    weight = len(names) * (len(names) + 1) // 2 + 1
    cp.maximize((model.stays_expr * (len(new) + 1) - sum(new)) * weight + by_name)
    solver = clock.solver(0.2)
    status = interrupt.watch(solver).solve(cp)
    stats["moves_status"] = solver.status_name(status)
    return solver if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None


def _aggregate_phase(
    model: Model, inp: ConsolidationInput, rules, clock: _Clock, stats: dict, all_pending: bool, try_nodes: bool
):
    """The aggregate's bound (its cuts added to the model), and a solution of the full model at
    that cost when its cheapest kept nodes hold the pods (else None). When the full model proves
    they cannot, the aggregate is solved again without them (and without any subset of them:
    fewer nodes hold no more), up to _AGGREGATE_ROUNDS times; its bound only rises. Not when a
    DaemonSet pod waits for a node (a node more must then hold it too: more is not always easier)."""
    from draopt.studies.consolidate_bound import aggregate, aggregate_cuts, solve_aggregate

    started = time.perf_counter()
    agg = aggregate(model, inp, rules, all_pending)
    aggregate_cuts(model, agg)
    floor, found = 0, None
    excluded: list[set[str]] = []
    for _ in range(_AGGREGATE_ROUNDS):
        answer = solve_aggregate(agg, 0.05 * clock.time_limit, clock.deadline, tuple(excluded))
        stats["aggregate_status"] = answer.status
        if answer.status not in ("OPTIMAL", "FEASIBLE"):
            break
        floor = max(floor, answer.bound)
        # not asked, not proven, no time (or Ctrl-C)
        if not try_nodes or answer.cost != answer.bound or clock.left() < 0.5 or interrupt.requested():
            break
        with progress.current().task("plan --consolidate: the aggregate's nodes"):
            found, status = _with_kept(model, inp, answer.kept, clock)
        stats["aggregate_nodes_status"] = status
        if found is not None or status != "INFEASIBLE" or inp.daemon_of:
            break
        excluded.append(answer.kept)
    stats.update(aggregate_s=round(time.perf_counter() - started, 3), aggregate_rounds=len(excluded) + 1)
    if found is not None and _cost_of(model, found) == floor:
        return floor, found
    return floor, None


def _with_kept(model: Model, inp: ConsolidationInput, kept: set[str], clock: _Clock):
    """A solution of the full model (the pods phase's count held) that keeps exactly `kept`, or
    None; and the status of its search. First first-fit-decreasing (_completed); else a search of
    the model with the kept nodes fixed, from that placement as a hint."""
    from ortools.sat.python import cp_model

    copy = _kept_copy(model, kept)
    greedy = _first_fit_decreasing(model, inp, kept)
    if greedy is not None:
        full = _completed(copy, model, inp, greedy, kept, clock)
        if full is not None:
            return full, "FEASIBLE (first-fit-decreasing)"
        copy.clear_hints()
        for var, value in _placement_hint(model, inp, greedy, kept).items():
            copy.add_hint(copy.get_int_var_from_proto_index(var.index), value)
    solver = clock.solver(0.15)
    status = interrupt.watch(solver).solve(copy)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, solver.status_name(status)
    return _Fixed(_solution(solver)), solver.status_name(status)


def _kept_copy(model: Model, kept: set[str]):
    """The model with exactly `kept` opened, and no objective."""
    copy = model.b.model.cp.clone()
    for name, lit in model.opened.items():
        copy.add(copy.get_int_var_from_proto_index(lit.index) == int(name in kept))
    copy.clear_objective()
    return copy


def _completed(copy, model: Model, inp: ConsolidationInput, node_of: dict, kept: set[str], clock: _Clock):
    """The placement `node_of` completed by the solver in `copy` with its placements fixed (found by
    propagation when it holds), or None."""
    from draopt.placement.optimal import _complete_hint

    hint = _placement_hint(model, inp, node_of, kept)
    full = _complete_hint(copy, hint, max(5.0, 0.1 * clock.time_limit), clock.deadline)
    return None if full is None else _Fixed({var.index: value for var, value in full.items()})


def _first_fit_decreasing(model: Model, inp: ConsolidationInput, kept: set[str]) -> dict[str, str | None] | None:
    """Pod -> node keeping exactly `kept`: movable pods of kept nodes where they run, the DaemonSet
    pods made for a kept node on it, the other pods by decreasing cpu then memory on the first
    kept node of their candidates with room; None when one has no room (the model decides then)."""
    from fractions import Fraction

    free: dict[str, dict[str, Fraction]] = {}
    for n in model.cluster.nodes:
        if n.name in kept:
            free[n.name] = {r: cap - n.used.get(r, Fraction(0)) for r, cap in n.allocatable.items()}
    out: dict[str, str | None] = {}

    def take(key: str, node: str) -> bool:
        asks = dict(model.workload.pod(key).resources)
        asks["pods"] = Fraction(1)
        room = free[node]
        if any(v > room[r] for r, v in asks.items() if r in room and v):
            return False
        for r, v in asks.items():
            if r in room:
                room[r] -= v
        out[key] = node
        return True

    rest = []
    for d in model.workload.pending:
        home = inp.daemon_of.get(d.key) or inp.origin.get(d.key)
        if home in free and take(d.key, home):
            continue
        if d.key in inp.daemon_of:
            out[d.key] = None
            continue
        rest.append(d)
    rest.sort(key=lambda d: (-d.resources.get("cpu", 0), -d.resources.get("memory", 0), d.key))
    for d in rest:
        # best fit: the candidate with the least cpu left first (then memory), so that the big
        # rooms stay for the big pods
        nodes = [n.name for n in model.prep.pod_nodes.get(d.key, []) if n.name in free]
        nodes.sort(key=lambda n: (free[n].get("cpu", 0), free[n].get("memory", 0), n))
        if not any(take(d.key, n) for n in nodes):
            if d.key in inp.origin:
                return None
            out[d.key] = None
    return out


def _placement_hint(model: Model, inp: ConsolidationInput, node_of: dict[str, str | None], kept: set[str]) -> dict:
    """A placement (pod -> node) and the nodes kept, in the model's placement variables and
    literals (devices left to the solver)."""
    from draopt.cluster.result import PodPlacement
    from draopt.model.warm_start import _first_fit_hint

    ff = {d.key: PodPlacement(d.key, node_of.get(d.key), d.priority, d.group) for d in model.workload.pending}
    hint = _first_fit_hint(model.b, model.prep, model.book, ff)
    b = model.b
    keep = {v.index for v in [*b.k.values(), *b.y.values(), *b.placed.values(), *b.totals.values()]}
    hint = {v: x for v, x in hint.items() if v.index in keep}
    for stay, count, pods in model.stay_caps:  # alike pods: as many stay as the kind has there
        hint[stay] = min(pods, hint.get(count, 0))
    for name, lit in model.opened.items():
        hint[lit] = int(name in kept)
    return hint


def _cost_of(model: Model, solution: _Fixed) -> int:
    return sum(model.cost_ints[n] * solution.value(lit) for n, lit in model.opened.items())


def _solution(solver) -> dict[int, int]:
    values = solver.response_proto.solution
    return {i: values[i] for i in range(len(values))}


def _ceil(x: float) -> int:
    return math.ceil(x - 1e-6)


def _hint_from(cp, by_index: dict[int, int]) -> None:
    cp.clear_hints()
    for i, value in by_index.items():
        cp.add_hint(cp.get_int_var_from_proto_index(i), value)


def _warm_start(model: Model, inp: ConsolidationInput, clock: _Clock, stats: dict, karpenter):
    """The better of two solutions of the model, as its incumbent: the cluster as it runs (every
    movable pod where it is, every existing node open, no copy), and Karpenter's consolidation's
    answer when there is one; each completed by the solver with its placements fixed. (its placed
    pods' weight, the solution), or None when neither is a solution. The completion of the cluster
    as it runs always gets a few seconds, even past the deadline: it is the answer of last resort."""
    from draopt.placement.optimal import _complete_hint

    cp = model.b.model.cp
    as_is: dict = {var: pods for var, _, pods, _ in model.stay_vars if not isinstance(var, int)}
    as_is.update({lit: int(name not in inp.type_of) for name, lit in model.opened.items()})
    tried = [("the cluster as it runs", as_is)]
    if karpenter is not None:
        tried.append(("Karpenter's consolidation", _karpenter_hint(model, inp, karpenter)))
    best = None
    limit = clock.time_limit
    for name, hint in tried:
        if interrupt.requested():  # Ctrl-C: no completion starts (the answer of last resort neither)
            break
        started = time.perf_counter()
        stop = started + max(10.0, 0.2 * limit)
        stop = min(stop, max(clock.deadline, started + 3.0)) if best is None else min(stop, clock.deadline)
        full = _complete_hint(cp, hint, max(5.0, 0.1 * limit), stop)
        if full is None:
            continue
        floor = sum(w * full[v] for w, v in model.placed_terms)
        cost = sum(model.cost_ints[n] * full[lit] for n, lit in model.opened.items())
        if best is None or (floor, -cost) > (best[1], -best[2]):
            best = (name, floor, cost, full)
    stats["warm_start"] = None if best is None else best[0]
    if best is None:
        for var, value in as_is.items():
            cp.add_hint(var, value)
        return None
    _, floor, cost, full = best
    for var, value in full.items():
        cp.add_hint(var, value)
    model.hint_cost = (floor, cost)
    return floor, _Fixed({var.index: value for var, value in full.items()})


def _karpenter_hint(model: Model, inp: ConsolidationInput, karpenter) -> dict:
    """Karpenter's answer in the model's placement variables and literals (devices left to the
    solver: its allocations were made on another cluster object)."""
    gone = set(karpenter.removed)
    node_of: dict[str, str | None] = {}
    for d in model.workload.pending:
        node = karpenter.placement.get(d.key)
        if node is None and inp.origin.get(d.key) not in (None, *gone):
            node = inp.origin[d.key]  # a movable pod Karpenter left where it runs
        node_of[d.key] = node
    counts: dict[str, int] = {}
    for t in karpenter.bought:
        counts[t] = counts.get(t, 0) + 1
    kept = {n for n in model.opened if n not in inp.type_of and n not in gone}
    # its copies open in order
    kept |= {n for n, t in inp.type_of.items() if int(n.rsplit("-", 1)[1]) < counts.get(t, 0)}
    return _placement_hint(model, inp, node_of, kept)
