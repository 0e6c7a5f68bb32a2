"""NodeResourcesFit's Score: LeastAllocated, MostAllocated, RequestedToCapacityRatio, in
Kubernetes' integer arithmetic on numpy arrays (one entry per node being scored).

Sources (kubernetes/kubernetes, pkg/scheduler/framework/plugins/noderesources/):
* least_allocated.go (leastRequestedScore: (capacity-requested)*100/capacity, 0 when requested >
  capacity), most_allocated.go (mostRequestedScore: requested*100/capacity, requested capped at
  capacity) (commit 046d201c45cebd19eb1fc4612426761c64802825); both weighted by the resources'
  weights, integer division by the weight sum, resources whose allocatable is 0 skipped;
* requested_to_capacity_ratio.go (commit 0a295a8d22ebdc7ad87bb7bf9f4e639b126515e4): utilization =
  requested*100/capacity (100 when requested > capacity or capacity 0), the shape as a broken
  linear function (helper/shape_score.go BuildBrokenLinearFunction, Go's truncating division),
  shape scores x 10, only resources scoring > 0 counted, math.Round of the mean.
"""

from __future__ import annotations

import numpy as np

from draopt.scheduler.plugins.helper import MAX, go_div

NAME = "NodeResourcesFit"


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


def weighted_resource_score(
    per_resource: list[np.ndarray], capacities: list[np.ndarray], weights: list[int]
) -> np.ndarray:
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


def requested_to_capacity_ratio(
    requested: list[np.ndarray], capacities: list[np.ndarray], weights: list[int], shape: list[tuple[int, int]]
) -> np.ndarray:
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


def score_columns(cols, fit) -> np.ndarray:
    """The score from per-resource columns (requested with the pod, without, allocatable, pod
    request, weight) and the profile's `fit` arguments (scoringStrategy)."""
    req = [c[0] for c in cols]
    cap = [c[2] for c in cols]
    w = [c[4] for c in cols]
    if fit.type == "LeastAllocated":
        return weighted_resource_score([least_requested(a, b) for a, b in zip(req, cap)], cap, w)
    if fit.type == "MostAllocated":
        return weighted_resource_score([most_requested(a, b) for a, b in zip(req, cap)], cap, w)
    return requested_to_capacity_ratio(req, cap, w, list(fit.shape))


def score(sched, demand, info, prof, fe: np.ndarray, dra: np.ndarray):
    return score_columns(sched.resource_columns(demand, prof.fit.resources, fe, nonzero=True), prof.fit)
