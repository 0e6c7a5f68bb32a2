"""The objectives of the one model: the packing objective, one definition for `allocate
--policy optimal` (one node, `allocation_packing`) and phase 3 of `place --policy optimal`
(`draopt/placement/optimal.py`), and allocate's first-fit search order (`first_fit_order`).

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

from draopt.model.encodings.base import upper_bound

MAX_WEIGHT = 2**60


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
    for a, v in items:  # amounts repeat (one per request shape): exact arithmetic once per amount
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
            expr, weight, total_max = 0, 1, 0  # drop every less important level
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


def first_fit_order(built, problem) -> list:
    """allocate's first-fit objective, as a decision order reproducing the kube-scheduler's
    search: claims, requests, sub-requests (each selector right before its devices), devices
    in search order; value 1 first. With a complete search over this fixed order the first
    solution is the lexicographically greatest feasible vector, which is the first solution of
    Kubernetes' backtracking (allocator.go allocateOne)."""
    order = []
    for owner in built.owners:
        for group in problem.claims[owner.claim_index].requests:
            for spec in group.alternatives:
                if group.has_subrequests:
                    order.append(owner.sel[spec.key])
                order.extend(t.var for t in owner.terms.get(spec.key, []))
    return order


def allocation_packing(built, problem):
    """allocate's optimal objective on the one node: the levels above without touched nodes
    and device count (one node; a request's device count is fixed by its sub-request)."""
    preferences = []
    for owner in built.owners:
        for group in problem.claims[owner.claim_index].requests:
            if group.has_subrequests:
                preferences.extend((s.sub_index, owner.sel[s.key]) for s in group.alternatives if s.sub_index > 0)
    p = built.packing
    levels = packing_levels(
        preferences=preferences, counter_sets=p["counter_sets"], amounts=p["amounts"], order=p["order"]
    )
    return lexicographic(levels) if levels else None
