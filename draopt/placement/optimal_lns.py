"""Large-neighbourhood search in phase 1 of the optimal model (placed pods, priority-weighted).

On a large part, CP-SAT's whole-model search may find nothing better than first-fit's placement
in the time it has (bench_gangs at full size: 189,197 variables, 63 s of phase 1 without an
improvement). What does help is to free a few topology domains at a time: every count of pods
on a node outside the neighbourhood fixed to the incumbent's value, and every victim variable
whose pods are all outside it, then the model solved again over the neighbourhood alone, with
the incumbent as its hint and "at least the incumbent" as the floor it already has. A better
solution of the neighbourhood is a solution of the whole model (the other variables are the
incumbent's); it becomes the incumbent, and the next neighbourhood starts from it.

Neighbourhoods: the values of the topology keys the pending groups are constrained to (racks,
NVLink domains), `width` of them at a time, in name order, as windows that move on by `width`
(nodes without the label: runs of them after); without topology keys no search (not measured
there: phase 1 searches the whole model as before). The search stops when a sweep over
every window improves nothing, when the deterministic-time budget (CP-SAT's deterministic time,
summed: the same number of windows on any machine) is spent, or at the hard stop (wall time).
Nothing is proven by it: the status stays what phase 1 proved (its bound, its gap).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ortools.sat.python import cp_model

from draopt import interrupt

# Nodes per neighbourhood: measured on bench_gangs (64 racks x 8 nodes): 4 racks solve in
# about a second of deterministic time each, 8 in several.
NODES_PER_WINDOW = 32
WINDOW_SECONDS = 2.0  # CP-SAT deterministic time per neighbourhood at most


def windows(workload, cluster, node_names: set[str]) -> list[list[str]]:
    """The neighbourhoods of a part over `node_names` (each a list of node names)."""
    keys = sorted({g.topology_key for g in workload.groups.values() if getattr(g, "topology_key", None)})
    keys += sorted({c.topology_key for c in getattr(workload, "composites", {}).values() if c.topology_key})
    nodes = [n for n in cluster.nodes if n.name in node_names]
    if keys:
        key = keys[0]  # the first key's domains; nodes without the label go in runs after them
        by_value: dict[str, list[str]] = {}
        rest: list[str] = []
        for n in nodes:
            value = (n.node.metadata.labels or {}).get(key)
            if value is None:
                rest.append(n.name)
            else:
                by_value.setdefault(value, []).append(n.name)
        domains = [by_value[v] for v in sorted(by_value)]
        per = max(1, sum(len(d) for d in domains) // max(1, len(domains)))
        width = max(1, NODES_PER_WINDOW // per)
        out = [sum(domains[i : i + width], []) for i in range(0, len(domains), width)]
        out += [rest[i : i + NODES_PER_WINDOW] for i in range(0, len(rest), NODES_PER_WINDOW)]
    else:
        return []  # measured only with topology domains: without them, phase 1 searches alone
    return out if len(out) > 1 else []


def _node_vars(b) -> dict[str, list]:
    """Per node, the variables that say what the placement puts there."""
    out: dict[str, list] = {}
    for (_, node), var in b.k.items():
        out.setdefault(node, []).append(var)
    for (_, node), var in b.y.items():
        out.setdefault(node, []).append(var)
    for (_, node), parts in b.unit_parts.items():
        out.setdefault(node, []).extend(kj for _, kj in parts)
    return out


def _victim_vars(b, victims) -> list[tuple[set[str], Any]]:
    enc = b.victims
    if enc is None or victims is None:
        return []
    return [({n for i in units for n in victims.units[i].nodes}, var) for units, var in enc.classes]


@dataclass
class _Neighbourhoods:
    """The copy of the model every window is solved in, and the incumbent (`value_at`: proto
    index -> value). Variables outside a window are fixed by their domains."""

    work: cp_model.CpModel
    by_node: dict[str, list[int]]  # node -> indexes of its variables
    victim_vars: list[tuple[set[str], int]]  # (the victim's nodes, its variable's index)
    index_of: dict[Any, int]  # variable -> proto index
    value_at: dict[int, int]
    original: dict[int, list[int]]  # index -> its domain in the model
    weights: list[tuple[int, int]]  # (victim cost, variable index)
    score: Any  # what a window maximises

    def fix(self, i: int) -> None:
        v = self.value_at.get(i, 0)
        domain = self.work.proto.variables[i].domain
        domain.clear()
        domain.extend([v, v])

    def free(self, hood: set[str]) -> list[int]:
        """The window's variables back to their domains; their indexes."""
        free = [i for node in hood for i in self.by_node.get(node, ())]
        free += [i for nodes, i in self.victim_vars if nodes & hood]
        for i in free:
            domain = self.work.proto.variables[i].domain
            domain.clear()
            domain.extend(self.original[i])
        return free

    def cost(self) -> int:
        return sum(c * self.value_at.get(i, 0) for c, i in self.weights)

    def hint(self) -> None:
        """The incumbent as the copy's hint."""
        hint = self.work.proto.solution_hint
        hint.vars.clear()
        hint.values.clear()
        hint.vars.extend(list(self.value_at))
        hint.values.extend(list(self.value_at.values()))


def _neighbourhoods(m: cp_model.CpModel, b, values: dict, victims) -> tuple[_Neighbourhoods, int]:
    """The copy of `m` with every node's and victim's variable fixed to the incumbent, maximising
    the placed value (then the fewest victims); and the score's scale (1 without victims)."""
    work = m.clone()
    work.clear_hints()
    proto_vars = work.proto.variables
    by_node = {node: [v.index for v in vs] for node, vs in _node_vars(b).items()}
    victim_vars = [(nodes, var.index) for nodes, var in _victim_vars(b, victims)]
    index_of = {var: var.index for var in values}
    value_at = {var.index: int(v) for var, v in values.items()}
    original = {i: list(proto_vars[i].domain) for vs in by_node.values() for i in vs}
    original.update((i, list(proto_vars[i].domain)) for _, i in victim_vars)
    # The victims right after the placed pods (as phase 1b orders them): a window's score is the
    # placed value times more than any victim cost, minus the cost (one linear objective).
    weights = [(c, var.index) for c, var in (b.victims.weights if b.victims is not None else [])]
    scale = 1 + sum(c * original[i][-1] for c, i in weights)
    score = b.objective * scale - sum(c * var for c, var in b.victims.weights) if weights else b.objective
    hoods = _Neighbourhoods(work, by_node, victim_vars, index_of, value_at, original, weights, score)
    for i in original:
        hoods.fix(i)
    work.maximize(score)
    return hoods, scale


def improve(
    m: cp_model.CpModel,
    b,
    values: dict,
    best: int,
    bound: int,
    hoods: list[list[str]],
    budget: float,
    hard_stop: float,
    solver_for,
    victims=None,
) -> tuple[int, dict, dict[str, Any]]:
    """(objective, values, stats) after the search; `values` a complete solution of `m` worth
    `best` (every variable phase 1 keeps; the same keys come back). `solver_for(seconds,
    hard_stop)`: the CP-SAT solver as phase 1 sets it up. One copy of the model for every window:
    the variables outside the window fixed by their domains (no constraint added per window)."""
    stats: dict[str, Any] = {"lns_windows": 0, "lns_improved": 0, "lns_gain": 0}
    if not hoods or best >= bound or b.node_classes:
        return best, values, stats
    t0 = time.perf_counter()
    search, scale = _neighbourhoods(m, b, values, victims)
    work = search.work
    best_cost = search.cost()
    spent = 0.0
    floor_set = None  # the score the copy is required to beat
    since_gain = 0
    n = 0
    start = best
    while spent < budget and since_gain < len(hoods) and best < bound:
        if hard_stop - time.perf_counter() < 0.5:
            stats["lns_stopped"] = "hard stop (wall time)"
            break
        hood = set(hoods[n % len(hoods)])
        n += 1
        free = search.free(hood)
        target = best * scale - best_cost + 1 if search.weights else best + 1
        if floor_set != target:
            # Better or nothing: a window that cannot improve is proven so fast.
            work.add(search.score >= target)
            floor_set = target
        search.hint()
        solver = solver_for(min(WINDOW_SECONDS, budget - spent), hard_stop)
        # Most of the model is fixed: presolve's removal of it is the cost, not the search.
        solver.parameters.max_presolve_iterations = 1
        solver.parameters.cp_model_probing_level = 0
        solver.parameters.symmetry_level = 0
        status = interrupt.watch(solver).solve(work)
        spent += solver.deterministic_time
        stats["lns_windows"] += 1
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            solution = solver.response_proto.solution
            search.value_at = {i: int(solution[i]) for i in search.value_at}
            best = int(solver.value(b.objective))
            best_cost = search.cost()
            stats["lns_improved"] += 1
            since_gain = 0
        else:
            since_gain += 1
        for i in free:
            search.fix(i)
    stats["lns_gain"] = best - start
    stats["lns_victim_cost"] = best_cost
    stats["lns_s"] = round(time.perf_counter() - t0, 3)
    stats["lns_deterministic_s"] = round(spent, 3)
    if stats["lns_improved"]:
        values = {var: search.value_at[i] for var, i in search.index_of.items()}
    return best, values, stats
