"""The covering LP of colgen_plan.py rounded into integer counts by diving (a start for CP-SAT).

CP-SAT over thousands of generated columns, hinted with a cover built kind by kind, can stay far
above the LP in the time it has (at 8,000 pods of 40 node types, 30,877 against an LP of 16,374).
Diving keeps the LP's choices: solve the covering LP over the columns, fix every column's whole
part (free nodes and copies), lower the demand by what the fixed nodes hold, solve again; when no
value is whole, the largest is rounded up to one. The residual LPs are small, so the rounding
costs a few nodes above the LP, whatever the number of pods. Deterministic (GLOP, ties broken by
column order). Substitutions (pods of a smaller kind in places of a larger one) are variables of
every LP, as in the master: the rows they join form a network, so once the counts are whole the
last LP's moves are whole too.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from ortools.linear_solver import pywraplp

MAX_DIVES = 2000  # LP solves at most
RESIDUAL_ROUNDS = 5  # per LP of the dive: pricing of the residual demand, then solved again


@dataclass
class Dive:
    free: list[int]  # free nodes per column
    copy: list[int]  # copies per column
    moves: dict[tuple[int, int], int]  # pods moved per substitution (a, b)
    floor_free: list[int]  # the first LP's whole part (the integer counts keep at least it)
    floor_copy: list[int]


def move_caps(subs, demand) -> dict[int, int]:
    """Per kind b of a substitution (a, b), the most pods that can move into a's places through b:
    its own and those of every kind after it in the chains. The pairs are transitively reduced,
    so the master moves c's pods along a -> b -> c; a move capped at b's own pods keeps the
    rounding from such chains (at 80,000 scale pods its first whole part was above the LP)."""
    succ: dict[int, list[int]] = {}
    for a, b in subs:
        succ.setdefault(a, []).append(b)
    caps = {}
    for b in sorted({b for _, b in subs}):
        seen, todo = {b}, [b]
        while todo:
            for c in succ.get(todo.pop(), ()):
                if c not in seen:
                    seen.add(c)
                    todo.append(c)
        caps[b] = sum(demand.get(c, 0) for c in seen)
    return caps


def dive(
    classes,
    free_nodes,
    cost,
    demand,
    columns,
    banned,
    subs,
    deadline: float,
    price=None,
    price_until: float = math.inf,
    chains: bool = False,
) -> Dive | None:
    """Free nodes and copies per column covering every kind's `demand`, the pods moved per
    substitution (a, b) of `subs`, and the first LP's whole part; or None (no cover over the
    columns, or `deadline` (perf_counter) passed). `cost`: per class, a copy's cost (None: no
    copies); `banned`: columns not to use. `price(pi, left, free_left, sigma)`: new columns for
    the residual LP at its duals (kind -> pi, per class the free row's sigma), appended to
    `columns`, their indices returned; asked after every LP, before its values are fixed, until
    it gives none (at most RESIDUAL_ROUNDS times), until `price_until` (perf_counter; the dive
    goes on without it after, so that a loaded machine still gets the plain rounding in time).
    `chains`: a substitution (a, b) moves at most the pods of b and of the kinds after it
    (move_caps), else b's own (their configurations are fewer, the one model checks them sooner)."""
    res = _ResidualLP(classes, free_nodes, cost, demand, columns)
    for i in range(len(columns)):
        if i not in banned:
            res.add(i)
    res.add_moves(subs, move_caps(subs, demand) if chains else demand)  # after the columns' variables, as before
    floor: tuple[list[int], list[int]] | None = None
    for _ in range(MAX_DIVES):
        if not res.solved(deadline, price, price_until):
            return None
        values = [v.solution_value() for _, _, v in res.variables]
        grown = len(columns) - len(res.free_counts)
        res.free_counts += [0] * grown
        res.copy_counts += [0] * grown
        if all(x <= 1e-9 for x in values):
            moves = {p: round(z.solution_value()) for p, z in res.moved}
            first = floor or (res.free_counts, res.copy_counts)
            pad = [0] * (len(columns) - len(first[0]))
            return Dive(res.free_counts, res.copy_counts, moves, first[0] + pad, first[1] + pad)
        fixed = [(k, math.floor(x + 1e-6)) for k, x in enumerate(values) if x >= 1 - 1e-6]
        if not fixed:
            top = max(range(len(values)), key=lambda k: (values[k], -k))
            if values[top] <= 1e-9:
                return None
            fixed = [(top, 1)]
        for k, n in fixed:
            res.fix(k, n)
        if floor is None:
            floor = (list(res.free_counts), list(res.copy_counts))
    return None


class _ResidualLP:
    """The dive's covering LP (GLOP) over the columns, its rows lowered as counts are fixed."""

    def __init__(self, classes, free_nodes, cost, demand, columns):
        self.classes, self.free_nodes, self.cost, self.columns = classes, free_nodes, cost, columns
        self.lp = lp = pywraplp.Solver.CreateSolver("GLOP")
        inf = lp.infinity()
        self.kind_rows = {k: lp.Constraint(float(d), inf) for k, d in demand.items()}
        self.free_rows = [lp.Constraint(-inf, float(n)) if n else None for n in free_nodes]
        self.objective = lp.Objective()
        self.objective.SetMinimization()
        self.variables: list[tuple[int, bool, Any]] = []  # (column, is a copy, LP variable)
        self.moved: list[tuple[tuple[int, int], Any]] = []
        self.free_counts, self.copy_counts = [0] * len(columns), [0] * len(columns)
        self.left = dict(demand)
        self.free_left = list(free_nodes)

    def add(self, i: int) -> None:
        """Column i's variables: a free node's (where the class has some) and a copy's (where it
        can be bought)."""
        j = self.columns[i].cls
        holds = [(ki, n) for ki, n in zip(self.classes[j].kinds, self.columns[i].counts) if n and ki in self.kind_rows]
        if not holds:
            return
        for copy in (False, True):
            if (copy and self.cost[j] is None) or (not copy and not self.free_nodes[j]):
                continue
            v = self.lp.NumVar(0.0, self.lp.infinity(), "")
            if copy:
                self.objective.SetCoefficient(v, float(self.cost[j]))
            else:
                self.free_rows[j].SetCoefficient(v, 1)
            for ki, n in holds:
                self.kind_rows[ki].SetCoefficient(v, n)
            self.variables.append((i, copy, v))

    def add_moves(self, subs, caps) -> None:
        """A variable per substitution (a, b): b's pods in a's places, at most caps[b]."""
        for a, b in subs:
            z = self.lp.NumVar(0.0, float(caps[b]), "")
            self.kind_rows[a].SetCoefficient(z, -1)
            self.kind_rows[b].SetCoefficient(z, 1)
            self.moved.append(((a, b), z))

    def solved(self, deadline: float, price, price_until: float) -> bool:
        """Solved (False: not optimal, or past `deadline`), then priced at its duals and solved
        again while `price` gives columns (dive's `price`)."""
        if time.perf_counter() > deadline or self.lp.Solve() != pywraplp.Solver.OPTIMAL:
            return False
        for _ in range(RESIDUAL_ROUNDS if price is not None else 0):
            if time.perf_counter() > price_until:
                break
            pi = {k: max(0.0, r.dual_value()) for k, r in self.kind_rows.items()}
            sigma = [(-min(0.0, r.dual_value()) if r is not None else 0.0) for r in self.free_rows]
            new = price(pi, {k: max(0, n) for k, n in self.left.items()}, list(self.free_left), sigma)
            if not new:
                break
            for i in new:
                self.add(i)
            if time.perf_counter() > deadline or self.lp.Solve() != pywraplp.Solver.OPTIMAL:
                return False
        return True

    def fix(self, k: int, n: int) -> None:
        """n more of LP variable k's column (free nodes: at most those left), the rows lowered."""
        i, copy, _ = self.variables[k]
        j = self.columns[i].cls
        if not copy:
            n = min(n, self.free_left[j])
            self.free_left[j] -= n
            self.free_rows[j].SetUb(float(self.free_left[j]))
            self.free_counts[i] += n
        else:
            self.copy_counts[i] += n
        for ki, c in zip(self.classes[j].kinds, self.columns[i].counts):
            if c and ki in self.left:
                self.left[ki] -= c * n
                self.kind_rows[ki].SetLb(float(self.left[ki]))  # below 0: places other kinds may take
