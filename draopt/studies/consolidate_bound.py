"""A lower bound on `plan --consolidate`'s cost, and a set of nodes to try first, from an aggregate
of its model (draopt.studies.consolidate_model): one literal per existing node, one count per new
type (its copies are alike), and only what every answer must satisfy:

- a node with a pinned pod is kept;
- per PodDisruptionBudget: the movable pods it selects on the drained nodes all move, so they number
  at most what it allows (a kept node's pods may move too: the aggregate does not count those);
- per resource (cpu, memory, pods, ephemeral storage, as the nodes publish them): the kept
  nodes' room holds every pod that must be placed. A node's room is what its pinned, DaemonSet and mirror pods leave (and
  the DaemonSet pods made for it, which come with it), rounded down to a multiple of the greatest
  common divisor of the requests to place: pods of 0.25, 0.5 and 1 cpu use at most 7.75 of a room
  of 7.9.

Its optimum is a lower bound of the consolidation's (the aggregate drops where each pod goes: a
relaxation); it is often the optimum itself, when its nodes can hold the pods pod by pod, which the
full model then checks with the kept nodes fixed. The full model's LP spreads a budget's pods over
fractions of nodes, and its bound stays far below (150 nodes: 10.9 against an optimum near 15.7)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draopt import interrupt


_NODE_RESOURCES = frozenset(("cpu", "memory", "pods", "ephemeral-storage"))


@dataclass
class Aggregate:
    """The aggregate problem's data (integers: resources in units of their divisor)."""

    nodes: list[str]  # existing nodes
    cost: dict[str, int]  # node or copy -> the model's integer cost
    forced: set[str]  # existing nodes every answer keeps
    room: dict[str, dict[str, int]]  # node or copy -> resource -> room in units
    demand: dict[str, int]  # resource -> units every answer places
    moved_if_drained: dict[str, dict[str, int]]  # budget -> node -> its movable pods on it
    allowed: dict[str, int]  # budget -> disruptions it allows
    copies: dict[str, list[str]] = field(default_factory=dict)  # new type -> its candidate copies, in order
    movable_on: dict[str, int] = field(default_factory=dict)  # existing node -> the movable pods it runs
    copy_limit: int = 0  # the pods to place: no answer needs more copies of a type


@dataclass
class AggregateAnswer:
    status: str  # CP-SAT's
    cost: int | None  # its optimum or best found (None: none)
    bound: int  # a lower bound of the consolidation's cost (the model's integers)
    kept: set[str]  # existing nodes and copies kept by its best answer
    solve_s: float


def aggregate(model, inp, rules, all_pending: bool) -> Aggregate:
    """The aggregate of the built model. `all_pending`: every pending pod with a feasible node must
    be placed (the pods phase placed them all), so they count in the demand too."""
    cluster, workload, prep = model.cluster, model.workload, model.prep
    must = [workload.pod(p) for p in inp.origin]  # (each has a place: consolidate_model)
    if all_pending:
        must += [d for d in model.real if d.key not in inp.origin and prep.pod_nodes.get(d.key)]
    come_with: dict[str, list] = {}
    for key, node in inp.daemon_of.items():
        come_with.setdefault(node, []).append(workload.pod(key))
    # the node's own resources only: an extended resource may also be served by DRA devices
    # (a DeviceClass's extendedResourceName), which its allocatable does not count
    published = set.intersection(*(set(n.allocatable) for n in cluster.nodes)) if cluster.nodes else set()
    published &= _NODE_RESOURCES
    room: dict[str, dict[str, int]] = {n.name: {} for n in cluster.nodes}
    demand: dict[str, int] = {}
    for r in sorted(published):
        asks = [Fraction(1) if r == "pods" else d.resources.get(r, Fraction(0)) for d in must]
        unit = _gcd([a for a in asks if a > 0])
        if unit is None:
            continue
        demand[r] = int(sum(asks, Fraction(0)) / unit)
        for n in cluster.nodes:
            extra = sum(
                (Fraction(1) if r == "pods" else d.resources.get(r, Fraction(0)) for d in come_with.get(n.name, [])),
                Fraction(0),
            )
            free = n.allocatable[r] - n.used.get(r, Fraction(0)) - extra
            room[n.name][r] = max(0, math.floor(free / unit))
    copies: dict[str, list[str]] = {}
    for copy, t in inp.type_of.items():
        copies.setdefault(t, []).append(copy)
    existing = [n.name for n in cluster.nodes if n.name not in inp.type_of]
    movable_on: dict[str, int] = {}
    for node in inp.origin.values():
        movable_on[node] = movable_on.get(node, 0) + 1
    moved: dict[str, dict[str, int]] = {}
    for b in rules.budgets:
        on = moved.setdefault(b.key, {})
        for p in b.pods:
            if p in inp.origin:
                on[inp.origin[p]] = on.get(inp.origin[p], 0) + 1
    return Aggregate(
        existing,
        dict(model.cost_ints),
        set(rules.pinned_nodes()) & set(existing),
        room,
        demand,
        moved,
        {b.key: b.allowed for b in rules.budgets},
        {t: sorted(c, key=lambda n: int(n.rsplit("-", 1)[1])) for t, c in copies.items()},
        movable_on,
        len(model.real),
    )


def _gcd(values: list[Fraction]) -> Fraction | None:
    if not values:
        return None
    num = 0
    den = 1
    for v in values:
        den = den * v.denominator // math.gcd(den, v.denominator)
    for v in values:
        num = math.gcd(num, int(v * den))
    return Fraction(num, den)


def solve_aggregate(
    agg: Aggregate, seconds: float, deadline: float | None, excluded: tuple[set[str], ...] = (), slack: float = 0.0
) -> AggregateAnswer:
    """The aggregate's cheapest answer. `excluded`: sets of kept nodes found to hold no answer of the
    full model (proven): an answer keeps some node outside each (fewer nodes cannot do better).
    `slack`: room for that share more than the demand (a guess at nodes that hold the pods one by
    one; its answer's bound is then no bound of the consolidation)."""
    from ortools.sat.python import cp_model

    from draopt.studies.plan_model import _solver

    cp = cp_model.CpModel()
    keep = {n: cp.new_bool_var(f"keep[{n}]") for n in agg.nodes}
    for n in agg.forced:
        cp.add(keep[n] == 1)
    # a type's copies up to the pods to place, not the model's candidates: the bound then holds
    # however many copies --max-nodes allows (a kept set beyond them is not tried)
    count = {t: cp.new_int_var(0, max(len(c), agg.copy_limit), f"copies[{t}]") for t, c in agg.copies.items()}
    for key, on in agg.moved_if_drained.items():
        cp.add(sum(m * (1 - keep[n]) for n, m in on.items() if n in keep) <= agg.allowed[key])
    for r, need in agg.demand.items():
        cp.add(
            sum(agg.room[n].get(r, 0) * keep[n] for n in agg.nodes)
            + sum(agg.room[c[0]].get(r, 0) * count[t] for t, c in agg.copies.items() if c)
            >= math.ceil(need * (1 + slack))
        )
    for kept in excluded:
        outside = [keep[n] for n in agg.nodes if n not in kept]
        more = [count[t] >= sum(1 for c in cs if c in kept) + 1 for t, cs in agg.copies.items()]
        lits = outside + [_lit(cp, m) for m in more]
        cp.add_bool_or(lits)
    # the least cost; then, at that cost, the most movable pods on kept nodes (fewer to move, as
    # the full model's last phase prefers), then the nodes first by name (ties: the same answer
    # every time). Two solves: one objective for all three proves its bound far slower (600 nodes)
    cost = sum(agg.cost[n] * keep[n] for n in agg.nodes) + sum(
        agg.cost[c[0]] * count[t] for t, c in agg.copies.items() if c
    )
    cp.minimize(cost)
    solver = interrupt.watch(_solver(seconds, deadline))
    started = time.perf_counter()
    status = solver.solve(cp)
    name = solver.status_name(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return AggregateAnswer(name, None, 0, set(), round(time.perf_counter() - started, 3))
    found, bound = round(solver.objective_value), math.ceil(solver.best_objective_bound - 1e-6)
    for var in [*keep.values(), *count.values()]:
        cp.add_hint(var, solver.value(var))
    cp.add(cost <= found)
    names = sorted(agg.nodes)
    by_name = sum((len(names) - i) * keep[n] for i, n in enumerate(names))
    stays = sum(agg.movable_on.get(n, 0) * keep[n] for n in agg.nodes)
    cp.maximize(stays * (len(names) * (len(names) + 1) // 2 + 1) + by_name)
    second = interrupt.watch(_solver(seconds / 2, deadline))
    if second.solve(cp) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        solver = second
    kept = {n for n in agg.nodes if solver.value(keep[n])}
    for t, cs in agg.copies.items():
        kept.update(cs[: solver.value(count[t])])
    return AggregateAnswer(name, found, bound, kept, round(time.perf_counter() - started, 3))


def _lit(cp, condition) -> Any:
    lit = cp.new_bool_var("")
    cp.add(condition).only_enforce_if(lit)
    return lit


def aggregate_cuts(model, agg: Aggregate) -> None:
    """The aggregate's constraints on the full model's node literals: per budget, the movable pods
    on drained nodes at most what it allows; per resource, the kept nodes' rounded room at least
    the demand (the rounding is what the model's LP does not see)."""
    cp = model.b.model.cp
    opened = model.opened
    for key, on in agg.moved_if_drained.items():
        cp.add(sum(m * (1 - opened[n]) for n, m in on.items() if n in opened) <= agg.allowed[key])
    for r, need in agg.demand.items():
        cp.add(sum(agg.room[n].get(r, 0) * lit for n, lit in opened.items()) >= need)
