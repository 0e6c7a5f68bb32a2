"""NodeResourcesBalancedAllocation's Score (kubernetes/kubernetes,
pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go, commit
02d7708af661e2fb5a089a04c3944a54d2afcc0e, with kubernetes/kubernetes#135573 merged for 1.36): the
score is 50 + (50 + with - without) / 2, where with/without = int((1 - std) * 100) of the
requested/allocatable fractions (capped at 1) with and without the pod; std = |f1 - f2| / 2 for two
resources, the population standard deviation for more, 0 for one."""

from __future__ import annotations

import math

import numpy as np

from draopt.scheduler.plugins.helper import MAX
from draopt.scheduler.plugins.node_resources_fit import _safe

NAME = "NodeResourcesBalancedAllocation"


def _balance(fractions: list[np.ndarray], present: list[np.ndarray]) -> np.ndarray:
    """int64((1 - std) * 100) per node over the resources present (allocatable != 0)."""
    k = len(fractions)
    n = len(fractions[0]) if k else 0
    if k == 2:
        # The plugin's two-resource form, |f1 - f2| / 2, computed as Go computes it.
        both = present[0] & present[1]
        std = np.where(both, np.abs((fractions[0] - fractions[1]) / 2), 0.0)
    elif k > 2:
        f = np.stack(fractions)
        on = np.stack(present)
        count = on.sum(axis=0)
        mean = np.where(on, f, 0.0).sum(axis=0) / np.where(count > 0, count, 1)
        var = np.where(on, (f - mean) ** 2, 0.0).sum(axis=0) / np.where(count > 0, count, 1)
        std = np.where(count >= 2, np.sqrt(var), 0.0)
    else:
        std = np.zeros(n)
    return ((1.0 - std) * MAX).astype(np.int64)


def balanced_allocation(
    requested_with: list[np.ndarray], requested_without: list[np.ndarray], capacities: list[np.ndarray]
) -> np.ndarray:
    """NodeResourcesBalancedAllocation (1.36): the change in balance the pod brings."""
    present = [cap != 0 for cap in capacities]
    with np.errstate(invalid="ignore", divide="ignore"):
        fw = [np.minimum(np.where(cap != 0, r / _safe(cap), 0.0), 1.0) for r, cap in zip(requested_with, capacities)]
        fo = [np.minimum(np.where(cap != 0, r / _safe(cap), 0.0), 1.0) for r, cap in zip(requested_without, capacities)]
    with_pod = _balance(fw, present)
    without = _balance(fo, present)
    # Go: MaxNodeScore/2 + (MaxNodeScore/2 + with - without) / 2, the inner term never negative.
    return MAX // 2 + (MAX // 2 + with_pod - without) // 2


def balanced_one(requested: list[int], allocatable: list[int]) -> int:
    """The pre-1.36 balancedResourceScorer for one node (the `with` or `without` term): kept for
    the unit tests transcribed from balanced_allocation_test.go."""
    fr = []
    for r, a in zip(requested, allocatable):
        if a == 0:
            continue
        fr.append(min(r / a, 1.0))
    std = 0.0
    if len(fr) == 2:
        std = abs((fr[0] - fr[1]) / 2)
    elif len(fr) > 2:
        mean = sum(fr) / len(fr)
        std = math.sqrt(sum((x - mean) ** 2 for x in fr) / len(fr))
    return int((1 - std) * MAX)


def score_columns(cols):
    """None for a best-effort pod (PreScore returns Skip)."""
    if all(c[3] == 0 for c in cols):
        return None
    return balanced_allocation([c[0] for c in cols], [c[1] for c in cols], [c[2] for c in cols])


def score(sched, demand, info, prof, fe: np.ndarray, dra: np.ndarray):
    return score_columns(sched.resource_columns(demand, prof.balanced_resources, fe, nonzero=False))
