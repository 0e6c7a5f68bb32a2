"""The plan's lower bound from every dual point priced so far, not from one at a time.

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


class DualFace:
    """The covering master's optimal dual face, for prices inside it rather than at a vertex.

    GLOP's duals of the restricted master are a vertex of its optimal dual face, and the master is
    degenerate: the vertex jumps between rounds and prices columns far from the full LP's duals.
    Any point of the face prices the same master at its optimum, so the average of a few of its
    vertices (the face's extremes under seeded random objectives, half maximised, half minimised:
    Rousseau, Gendreau and Feillet's interior point stabilisation) is a dual of the master too,
    nearer the face's centre. The dual LP kept here grows by a row per column, as the master."""

    def __init__(self, classes, demand: dict[int, int], cost: list[float | None], free_nodes: list[int], subs):
        self.lp = pywraplp.Solver.CreateSolver("GLOP")
        inf = self.lp.infinity()
        self.classes, self.cost, self.free_nodes = classes, cost, free_nodes
        self.kinds = sorted(demand)
        # At most the master's price of a pod left short (its slack): no face vertex is unbounded.
        big = 1.0 + 10 * sum(c for c in cost if c is not None) * max([1] + list(demand.values()))
        self.pi = {k: self.lp.NumVar(0.0, big, f"pi{k}") for k in self.kinds}
        self.sigma = [self.lp.NumVar(0.0, inf, f"s{j}") if n else None for j, n in enumerate(free_nodes)]
        # The master's value: the face is the duals that reach it (its lower bound set per solve).
        self.value = self.lp.Constraint(-inf, inf)
        for k in self.kinds:
            self.value.SetCoefficient(self.pi[k], demand[k])
        for j, s in enumerate(self.sigma):
            if s is not None:
                self.value.SetCoefficient(s, -free_nodes[j])
        for a, b in subs:  # a pod of b in a's place: b's price at most a's
            row = self.lp.Constraint(-inf, 0.0)
            row.SetCoefficient(self.pi[b], 1)
            row.SetCoefficient(self.pi[a], -1)

    def add_columns(self, cols) -> None:
        inf = self.lp.infinity()
        for col in cols:
            j = col.cls
            terms = [(self.pi[k], n) for k, n in zip(self.classes[j].kinds, col.counts) if n and k in self.pi]
            if self.cost[j] is not None:
                row = self.lp.Constraint(-inf, self.cost[j])
                for v, n in terms:
                    row.SetCoefficient(v, n)
            if self.sigma[j] is not None:
                row = self.lp.Constraint(-inf, 0.0)
                row.SetCoefficient(self.sigma[j], -1)
                for v, n in terms:
                    row.SetCoefficient(v, n)

    def centre(self, value: float, pi_lp: dict[int, float], draws: int, seed: int) -> dict[int, float]:
        """The average of `draws` vertices of the face at the master's `value` (`pi_lp` where a
        solve fails: GLOP's own vertex is in the face)."""
        import random

        rng = random.Random(seed)
        self.value.SetLb(value - 1e-7 * max(1.0, abs(value)))
        got = []
        objective = self.lp.Objective()
        for t in range(draws):
            objective.Clear()
            for k in self.kinds:
                objective.SetCoefficient(self.pi[k], rng.random())
            if t % 2:
                objective.SetMinimization()
            else:
                objective.SetMaximization()
            if self.lp.Solve() == pywraplp.Solver.OPTIMAL:
                got.append({k: max(0.0, self.pi[k].solution_value()) for k in self.kinds})
        if not got:
            return pi_lp
        return {k: sum(p[k] for p in got) / len(got) for k in self.kinds}


class RelaxedPricing:
    """An upper bound of one class's best configuration value at any prices, without CP-SAT: the
    compact model (colgen_pricing.DevicePricing) with its devices pooled (a share counts its part
    of one device, a whole device one) and its counts fractional, a relaxation of every rule it
    keeps. A class whose bound is at most its cost has no column to give and does not lower
    Farley's theta: the exact round skips it (at 8,000 scale pods, most of the expensive
    types). The LP's duals give the bound by weak duality, computed here from the rows, so
    GLOP's tolerances cannot make it too low."""

    def __init__(self, fast):
        self.kinds = list(fast.kinds)
        rows: list[tuple[list[float], float]] = []
        for r, free in fast.free.items():
            rows.append(([float(d.get(r, 0)) for d in fast.demand], float(free)))
        per_device = [float(w + s / fast.capacity) for w, s in zip(fast.whole, fast.share)]
        rows.append((per_device, float(fast.devices)))
        self.rows = rows
        self.hi = []
        for i in range(len(self.kinds)):
            hi = float(fast.ub[i])
            for coef, room in rows:
                if coef[i] > 0:
                    hi = min(hi, room / coef[i])
            self.hi.append(max(0.0, hi))
        self.lp = pywraplp.Solver.CreateSolver("GLOP")
        self.vars = [self.lp.NumVar(0.0, h, f"a{i}") for i, h in enumerate(self.hi)]
        self.constraints = []
        for coef, room in rows:
            c = self.lp.Constraint(-self.lp.infinity(), room)
            for v, a in zip(self.vars, coef):
                if a:
                    c.SetCoefficient(v, a)
            self.constraints.append(c)
        self.lp.Objective().SetMaximization()

    def upper(self, reduced: dict[int, float]) -> float:
        """At least the best configuration's value sum_k reduced_k n_k (inf if the LP fails)."""
        value = [max(0.0, reduced.get(k, 0.0)) for k in self.kinds]
        objective = self.lp.Objective()
        for v, r in zip(self.vars, value):
            objective.SetCoefficient(v, r)
        if self.lp.Solve() != pywraplp.Solver.OPTIMAL:
            return float("inf")
        y = [max(0.0, c.dual_value()) for c in self.constraints]
        # Weak duality with the counts' upper bounds: any y >= 0 bounds the LP, hence every count.
        bound = sum(yr * room for yr, (_, room) in zip(y, self.rows))
        for i, r in enumerate(value):
            bound += self.hi[i] * max(0.0, r - sum(yr * coef[i] for yr, (coef, _) in zip(y, self.rows)))
        return bound
