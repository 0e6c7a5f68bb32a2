"""The plan's bound from the combined dual points (draopt/model/colgen_stabilise.py): never above
the covering LP's optimum (hence every mix's cost), and above Farley's single-point bound where
the duals oscillate."""

from __future__ import annotations

import itertools
import random

from ortools.linear_solver import pywraplp

from draopt.model.colgen_stabilise import DualBundle


def test_two_oscillating_points_combine_to_the_optimum():
    """One pod of each of two kinds; class 0 holds a pod of kind 0, class 1 one of kind 1, each
    at cost 1: the optimum is 2. Each point alone gives Farley's 1.5; their combination 2."""
    bundle = DualBundle({0: 1, 1: 1}, [1.0, 1.0], [0, 0])
    bundle.add({0: 1.0, 1: 0.5}, [1.0, 0.5])
    bundle.add({0: 0.5, 1: 1.0}, [0.5, 1.0])
    bound, centre = bundle.best()
    assert abs(bound - 2.0) < 1e-9
    assert centre is not None and abs(centre[0] - 1.0) < 1e-9 and abs(centre[1] - 1.0) < 1e-9


def test_no_point_no_bound():
    assert DualBundle({0: 3}, [1.0], [0]).best() == (0.0, None)


def _covering_lp(configs, cost, free_nodes, demand) -> float:
    lp = pywraplp.Solver.CreateSolver("GLOP")
    rows = {k: lp.Constraint(d, lp.infinity()) for k, d in demand.items()}
    free_rows = [lp.Constraint(-lp.infinity(), n) for n in free_nodes]
    objective = lp.Objective()
    for j, confs in enumerate(configs):
        for a in confs:
            for is_copy in (False, True):
                if (is_copy and cost[j] is None) or (not is_copy and not free_nodes[j]):
                    continue
                x = lp.NumVar(0.0, lp.infinity(), "")
                for k, n in enumerate(a):
                    rows[k].SetCoefficient(x, n)
                if is_copy:
                    objective.SetCoefficient(x, cost[j])
                else:
                    free_rows[j].SetCoefficient(x, 1)
    objective.SetMinimization()
    assert lp.Solve() == pywraplp.Solver.OPTIMAL
    return objective.Value()


def test_the_bound_never_exceeds_the_covering_lp_on_random_instances():
    """Random classes (their configurations: every count vector within random capacities),
    random dual points priced exactly: the bundle's bound is at most the covering LP's value
    over every configuration, and at least the best single point's Farley bound."""
    rng = random.Random(7)
    for _ in range(40):
        kinds = rng.randint(2, 4)
        classes = rng.randint(1, 4)
        demand = {k: rng.randint(1, 20) for k in range(kinds)}
        configs, cost, free_nodes = [], [], []
        for j in range(classes):
            size = [rng.randint(1, 4) for _ in range(kinds)]
            room = rng.randint(4, 10)  # every kind fits alone
            confs = [
                a
                for a in itertools.product(range(room + 1), repeat=kinds)
                if any(a) and sum(s * n for s, n in zip(size, a)) <= room
            ]
            configs.append(confs)
            cost.append(None if j == 0 and rng.random() < 0.3 else float(rng.randint(1, 9)))
            free_nodes.append(rng.randint(0, 2) if j == 0 else 0)
        if all(c is None for c in cost):
            cost[-1] = 1.0
        best_farley = 0.0
        bundle = DualBundle(demand, cost, free_nodes)
        for _ in range(rng.randint(1, 6)):
            pi = {k: rng.random() for k in range(kinds)}
            upper = [max(sum(pi[k] * n for k, n in enumerate(a)) for a in confs) for confs in configs]
            bundle.add(pi, upper)
            theta = min([1.0] + [c / u for c, u in zip(cost, upper) if c is not None and u > c])
            value = sum(pi[k] * d for k, d in demand.items()) - sum(n * u for n, u in zip(free_nodes, upper))
            best_farley = max(best_farley, theta * value)
        bound, _ = bundle.best()
        assert bound <= _covering_lp(configs, cost, free_nodes, demand) + 1e-6
        assert bound >= best_farley - 1e-6
