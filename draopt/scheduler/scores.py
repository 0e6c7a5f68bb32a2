"""The score plugins' formulas, in Kubernetes' integer arithmetic, on numpy arrays (one entry per
node being scored) or plain ints.

Sources (kubernetes/kubernetes, pkg/scheduler/framework/plugins/):
* noderesources/least_allocated.go (leastRequestedScore: (capacity-requested)*100/capacity, 0
  when requested > capacity), most_allocated.go (mostRequestedScore: requested*100/capacity,
  requested capped at capacity) (commit 046d201c45cebd19eb1fc4612426761c64802825); both
  weighted by the resources' weights, integer division by the weight sum, resources whose
  allocatable is 0 skipped;
* noderesources/requested_to_capacity_ratio.go (commit 0a295a8d22ebdc7ad87bb7bf9f4e639b126515e4):
  utilization = requested*100/capacity (100 when requested > capacity or capacity 0), the shape
  as a broken linear function (helper/shape_score.go BuildBrokenLinearFunction, Go's truncating
  division), shape scores x 10, only resources scoring > 0 counted, math.Round of the mean;
* noderesources/balanced_allocation.go (commit 02d7708af661e2fb5a089a04c3944a54d2afcc0e) with
  kubernetes/kubernetes#135573 (merged for 1.36): the score is 50 + (50 + with - without) / 2,
  where with/without = int((1 - std) * 100) of the requested/allocatable fractions (capped at 1)
  with and without the pod; std = |f1 - f2| / 2 for two resources, the population standard
  deviation for more, 0 for one;
* helper/normalize_score.go DefaultNormalizeScore: score * 100 / max (reverse: 100 - that), all
  0 -> 0 (reverse: 100);
* podtopologyspread/scoring.go: log(size + 2) weights, cnt * weight + maxSkew - 1, normalised
  100 * (max + min - s) / max.
"""
from __future__ import annotations

import math

import numpy as np

MAX = 100


def go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _safe(cap: np.ndarray) -> np.ndarray:
    return np.where(cap > 0, cap, 1)


def least_requested(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """leastRequestedScore per node (int64 arrays)."""
    out = (capacity - requested) * MAX // _safe(capacity)
    return np.where((capacity == 0) | (requested > capacity), 0, out)


def most_requested(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """mostRequestedScore per node."""
    req = np.minimum(requested, capacity)
    return np.where(capacity == 0, 0, req * MAX // _safe(capacity))


def weighted_resource_score(per_resource: list[np.ndarray], capacities: list[np.ndarray],
                            weights: list[int]) -> np.ndarray:
    """sum(score_r * w_r) / sum(w_r) over the resources whose allocatable is not 0 (per node)."""
    n = len(per_resource[0]) if per_resource else 0
    total = np.zeros(n, dtype=np.int64)
    wsum = np.zeros(n, dtype=np.int64)
    for s, cap, wgt in zip(per_resource, capacities, weights):
        on = cap != 0
        total += np.where(on, s * wgt, 0)
        wsum += np.where(on, wgt, 0)
    return np.where(wsum > 0, total // np.where(wsum > 0, wsum, 1), 0)


def broken_linear(shape: list[tuple[int, int]], p: int) -> int:
    """helper.BuildBrokenLinearFunction for one utilization p (shape scores already scaled)."""
    for i, (u, s) in enumerate(shape):
        if p <= u:
            if i == 0:
                return s
            pu, ps = shape[i - 1]
            return ps + go_div((s - ps) * (p - pu), u - pu)
    return shape[-1][1]


def rtcr_utilization(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """scaledUtilization, with capacity 0 or requested > capacity giving 100."""
    out = np.where(requested <= 0, 0, np.minimum(requested, capacity) * MAX // _safe(capacity))
    return np.where((capacity == 0) | (requested > capacity), MAX, out)


def requested_to_capacity_ratio(requested: list[np.ndarray], capacities: list[np.ndarray], weights: list[int],
                                shape: list[tuple[int, int]]) -> np.ndarray:
    """The RequestedToCapacityRatio node score; `shape` in 0-10 scores (scaled x 10 here)."""
    scaled = [(u, s * (MAX // 10)) for u, s in shape]
    table = np.array([broken_linear(scaled, p) for p in range(MAX + 1)], dtype=np.int64)
    n = len(requested[0]) if requested else 0
    total = np.zeros(n, dtype=np.int64)
    wsum = np.zeros(n, dtype=np.int64)
    for req, cap, wgt in zip(requested, capacities, weights):
        s = table[rtcr_utilization(req, cap)]
        on = (cap != 0) & (s > 0)
        total += np.where(on, s * wgt, 0)
        wsum += np.where(on, wgt, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(wsum > 0, total / np.where(wsum > 0, wsum, 1), 0.0)
    # math.Round: halves away from zero (scores are >= 0).
    return np.floor(mean + 0.5).astype(np.int64)


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


def balanced_allocation(requested_with: list[np.ndarray], requested_without: list[np.ndarray],
                        capacities: list[np.ndarray]) -> np.ndarray:
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


def default_normalize(scores: np.ndarray, reverse: bool = False) -> np.ndarray:
    """helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)."""
    m = int(scores.max()) if len(scores) else 0
    if m == 0:
        return np.full(len(scores), MAX if reverse else 0, dtype=np.int64)
    out = MAX * scores // m
    return MAX - out if reverse else out


def spread_normalize(scores: np.ndarray, ignored: np.ndarray) -> np.ndarray:
    """PodTopologySpread.NormalizeScore: ignored nodes 0; else 100 * (max + min - s) / max."""
    valid = ~ignored
    if not valid.any():
        return np.zeros(len(scores), dtype=np.int64)
    lo = int(scores[valid].min())
    hi = int(scores[valid].max())
    if hi == 0:
        return np.where(valid, MAX, 0).astype(np.int64)
    return np.where(valid, MAX * (hi + lo - scores) // hi, 0).astype(np.int64)


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)
