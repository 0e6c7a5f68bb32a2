"""The plan's lower bounds (colgen_plan.py): Farley's at one dual point, the pooled resources' one before
any round, and the best combination of every dual point priced so far.

colgen_plan.py prices the classes exactly at a dual point pi_t (kind -> price of one pod) and gets,
per class j, a proven upper bound U_tj of its best configuration's value v_j(pi_t) = max over the
configurations a of class j of pi_t . a. Farley's bound reads one point: scaled by theta so that
no copy is worth more than its cost, theta * (pi_t . d - sum over free classes of nodes_j U_tj).

Each v_j is a maximum of linear functions of pi, so it is sublinear: for any weights mu_t >= 0,
v_j(sum_t mu_t pi_t) <= sum_t mu_t v_j(pi_t) <= sum_t mu_t U_tj. Hence the point
pi = sum_t mu_t pi_t, with sigma_j = sum_t mu_t U_tj for a free node of class j, is a feasible
dual of the covering LP whenever sum_t mu_t U_tj <= cost_j for every class with copies, and its
value sum_t mu_t (pi_t . d - sum_j nodes_j U_tj) is a lower bound of every mix's cost (the LP's,
hence the integer one's). The best such mu is a small LP (one variable per point priced, one row
per class with copies): the cutting-plane model of the Lagrangian dual over the points seen.
With mu on one point it is Farley's bound, so it is never weaker; where the duals oscillate
between rounds (the master is degenerate), their combination averages the oscillation out.

The combined point is also the best dual point known, the centre the pricing's prices are
smoothed towards (Wentges).
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

from ortools.linear_solver import pywraplp


class DualBundle:
    """The points priced so far and the best bound their combinations give."""

    def __init__(self, demand: dict[int, int], cost: list[float | None], free_nodes: list[int]):
        self.demand = demand  # kind -> its pods
        self.cost = cost  # per class, a copy's cost (None: no copies)
        self.free_nodes = free_nodes  # per class, the input's own nodes
        self.points: list[tuple[dict[int, float], list[float], float]] = []  # (pi, upper per class, value)

    def add(self, pi: dict[int, float], upper: list[float]) -> None:
        """A point priced exactly: its prices and, per class, a proven upper bound of its best
        configuration's value (all classes: a dominated one carries its dominating class's)."""
        value = sum(pi.get(k, 0.0) * d for k, d in self.demand.items())
        value -= sum(n * u for n, u in zip(self.free_nodes, upper) if n)
        self.points.append((dict(pi), list(upper), value))

    def best(self) -> tuple[float, dict[int, float] | None]:
        """(the best bound of the points' combinations, the combined prices), (0, None) before
        any point (or when the LP fails: no bound is claimed from it)."""
        mu = self._weights()
        if mu is None:
            return 0.0, None
        # The weights scaled down where the LP's tolerance let a row exceed its cost: the bound
        # below is computed exactly from the weights it states, so it stays valid.
        scale = 1.0
        for j, c in enumerate(self.cost):
            if c is None:
                continue
            used = sum(m * upper[j] for m, (_, upper, _) in zip(mu, self.points))
            if used > c:
                scale = min(scale, c / used)
        mu = [m * scale for m in mu]
        bound = sum(m * value for m, (_, _, value) in zip(mu, self.points))
        if bound <= 0:
            return 0.0, None
        combined: dict[int, float] = {}
        for m, (pi, _, _) in zip(mu, self.points):
            if m > 0:
                for k, p in pi.items():
                    combined[k] = combined.get(k, 0.0) + m * p
        return bound, combined

    def _weights(self) -> list[float] | None:
        if not self.points:
            return None
        lp = pywraplp.Solver.CreateSolver("GLOP")
        mu = [lp.NumVar(0.0, lp.infinity(), f"mu{t}") for t in range(len(self.points))]
        for j, c in enumerate(self.cost):
            if c is not None:
                row = lp.Constraint(-lp.infinity(), c)
                for m, (_, upper, _) in zip(mu, self.points):
                    row.SetCoefficient(m, upper[j])
        objective = lp.Objective()
        for m, (_, _, value) in zip(mu, self.points):
            objective.SetCoefficient(m, value)
        objective.SetMaximization()
        if lp.Solve() != pywraplp.Solver.OPTIMAL:
            return None  # unbounded (no class with copies limits it) or numerically lost
        return [max(0.0, m.solution_value()) for m in mu]


def pooled_bound(fast, classes, free_nodes, class_cost, demand) -> float:
    """A bound without any round: per resource (node resources, and devices: a share counts its
    part of one), the demand the free nodes cannot hold, bought at the best capacity per cost.
    Pooling a resource over nodes relaxes every node's limits, so any mix costs at least this.
    Needs the compact structure (colgen_pricing) of every class; 0 otherwise."""
    if any(f is None for f in fast):
        return 0.0
    need: dict = defaultdict(Fraction)
    for kind_index, pods in demand.items():
        for f in fast:
            if kind_index in f.kinds:
                i = f.kinds.index(kind_index)
                for r, a in f.demand[i].items():
                    need[r] += a * pods
                need["devices"] += (f.whole[i] + f.share[i] / f.capacity) * pods
                break
    best = 0.0
    for r, total in need.items():
        have = Fraction(0)
        per_cost = 0.0
        for j, f in enumerate(fast):
            cap = Fraction(f.devices) if r == "devices" else f.free.get(r)
            if cap is None:
                break  # a class that does not limit r: no bound from r
            have += cap * free_nodes[j]
            if class_cost[j] is not None:
                per_cost = max(per_cost, float(cap / class_cost[j]))
        else:
            if total > have and per_cost > 0:
                best = max(best, float(total - have) / per_cost)
    return best


def theta(best: list[float], cost: list[float | None]) -> float:
    """Farley's scale: no copy worth more than its cost at theta * pi (`best`: per class, an upper
    bound of its best configuration's value at pi)."""
    out = 1.0
    for b, c in zip(best, cost):
        if c is not None and b > c:
            out = min(out, c / b)
    return out


def farley(
    pi: dict[int, float], demand: dict[int, int], best: list[float], cost: list[float | None], free_nodes: list[int]
) -> float:
    """Lagrangian lower bound at theta * pi (colgen_plan.py's module docstring)."""
    scale = theta(best, cost)
    value = sum(pi.get(k, 0.0) * d for k, d in demand.items()) - sum(n * b for n, b in zip(free_nodes, best))
    return max(0.0, scale * value)
