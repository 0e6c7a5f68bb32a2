"""The packing objective, one definition for both models: `allocate --policy optimal` (one
node, `add_packing_objective`) and phase 3 of `place --policy optimal` (the cluster model,
`draopt/placement/optimal.py`).

Levels, most important first (`lexicographic` keeps them apart with weights):
1. prioritized lists: the lowest sub-request indexes (most preferred alternatives; in the
   cluster model this is its own phase, before packing);
2. the fewest touched nodes (cluster model only);
3. the fewest counter sets newly drawn on (keeps whole partitionable GPUs free);
4. the least counter amount and consumable capacity taken (smallest fitting devices),
   normalised to at most 1000 so that one step of level 3 always outweighs it;
5. the fewest devices (cluster model; `All` and alternatives can change the count);
6. among equals, devices earlier in Kubernetes' search order (a deterministic, familiar choice).
"""
from __future__ import annotations

from fractions import Fraction

from ortools.sat.python import cp_model

from draopt.model.encodings.base import ModelData, upper_bound
from draopt.dra.inventory import counter_sets_in_use

MAX_WEIGHT = 2 ** 60


def weighted_sum(items) -> tuple:
    """(expression, largest value) of variables or (coefficient, variable) pairs."""
    pairs = [x if isinstance(x, tuple) else (1, x) for x in items]
    if not pairs:
        return 0, 0
    # One flat weighted sum (not a chain of additions: tens of thousands of terms at scale).
    if all(isinstance(c, int) for c, _ in pairs):
        expr = cp_model.LinearExpr.weighted_sum([v for _, v in pairs], [c for c, _ in pairs])
    else:
        expr = sum(c * v for c, v in pairs)
    return expr, sum(c * upper_bound(v) for c, v in pairs)


def normalised_amounts(items: list) -> list:
    """(amount, variable) pairs as integer coefficients summing to at most 1000."""
    reach: dict = {}
    for a, v in items:   # amounts repeat (one per request shape): exact arithmetic once per amount
        reach[a] = reach.get(a, 0) + upper_bound(v)
    total = sum(a * n for a, n in reach.items()) or Fraction(1)
    coefficient = {a: int(round(1000 * a / total)) for a in reach}
    return [(coefficient[a], v) for a, v in items]


def lexicographic(levels: list[tuple]):
    """One objective from (expression, largest value) levels, most important first. When the
    weights would not fit 64 bits, the levels below the one that overflows are dropped."""
    weight, expr, total_max = 1, 0, 0
    for e, hi in reversed(levels):
        if weight * (hi + 1) + total_max > MAX_WEIGHT:
            expr, weight, total_max = 0, 1, 0   # drop every less important level
        expr = expr + weight * e
        total_max += weight * hi
        weight *= hi + 1
    return expr


def packing_levels(*, preferences=(), nodes=(), counter_sets=(), amounts=(), devices=(), order=()) -> list[tuple]:
    """The levels above as (expression, largest value), empty levels left out."""
    levels = []
    for items in (preferences, nodes, counter_sets):
        if items:
            levels.append(weighted_sum(items))
    if amounts:
        levels.append(weighted_sum(normalised_amounts(list(amounts))))
    if devices:
        levels.append(weighted_sum(devices))
    if order:
        levels.append(weighted_sum(list(order)))
    return levels


def add_packing_objective(m: ModelData) -> None:
    p = m.problem
    cp = m.cp
    preferences = []
    for spec in m.specs:
        sel = m.select[spec.key]
        if sel is not None and spec.sub_index > 0:
            preferences.append((spec.sub_index, sel))
    amounts = []
    allocated = p.inventory.allocated
    touched: dict[tuple, list] = {}
    for dev in p.devices:
        if not m.by_device.get(dev.index) or not dev.device.consumes_counters:
            continue
        used = m.device_used(dev)
        for c in dev.device.consumes_counters:
            touched.setdefault((id(dev.pool), c.counter_set), []).append(used)
            for v in c.counters.values():
                amounts.append((p.counter_value(v.value), used))
    fresh = []
    pools = {id(d.pool): d.pool for d in p.devices}
    for (pool_id, set_name), lits in touched.items():
        if set_name in counter_sets_in_use(allocated, pools[pool_id]):
            continue   # drawing on a set already in use costs nothing new
        t = cp.new_bool_var(f"touched[{set_name}]")
        cp.add_max_equality(t, lits)
        fresh.append(t)
    for (key, idx), consumed in m.consumed.items():
        if consumed:
            lit = m.x[(key, idx)]
            for q in consumed.values():
                amounts.append((q.value, lit))
    order = [(dev_index, lit) for (_, dev_index), lit in m.x.items()]
    levels = packing_levels(preferences=preferences, counter_sets=fresh, amounts=amounts, order=order)
    if levels:
        cp.minimize(lexicographic(levels))
