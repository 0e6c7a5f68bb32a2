"""The six node scorers of the FGD paper's simulator, on draopt's cluster arrays.

Transcribed (rules, not code) from hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/
plugin/*.go, pkg/utils/frag.go, pkg/type/resource.go and pkg/simulator/plugin/open_gpu_share.go.
Every scorer returns the plugin's integer score (0-100) per candidate node, as the plugin does;
`draopt.studies.paper_protocol` picks the node (highest score, ties: the node whose random name prefix is
smallest: their vendored kube-scheduler's selectHost, vendor/k8s.io/kubernetes/pkg/scheduler/
core/generic_scheduler.go, keeps the smallest name among equal scores) and then the GPUs with the
policy's GPU selection (`gpuSelMethod` of scripts/generate_config_and_run.py):

  policy          score plugin (weight 1000)   gpuSelMethod      experiments/run_scripts flags
  fgd             FGDScore                     FGDScore          -gpusel FGD -dimext share -norm max
  best-fit        BestFitScore                 best              (defaults)
  gpu-packing     GpuPackingScore              best              (defaults)
  gpu-clustering  GpuClusteringScore           best              (defaults)
  dot-product     DotProductScore              best              -gpusel best -dimext merge -norm max
  random          RandomScore                  random            -gpusel random

Units are theirs: milli CPU, milli GPU (1000 = one GPU), MaxSpecCpu 128000, MaxSpecGpu 8000
(pkg/type/open-gpu-share/utils/const.go).
"""

from __future__ import annotations

import numpy as np

MILLI = 1000
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000
MAX_SCORE = 100


# ------------------------------------------------------------------ GPU selection on bind
def gpus_best(left: np.ndarray, usable: np.ndarray, milli: int, count: int) -> list[int]:
    """allocateGpuIdBasedOnBestFit (open_gpu_share.go): a shared-GPU pod takes the usable GPU
    with the least milli left (the first by index among equal ones); a whole-GPU pod takes the
    first fully free GPUs by index (simontype.AllocateExclusiveGpuId, pkg/type/resource.go)."""
    idx = np.flatnonzero(usable)
    if milli < MILLI:
        return [int(idx[int(np.argmin(left[idx]))])]
    return [int(i) for i in idx[:count]]


def gpus_random(left: np.ndarray, usable: np.ndarray, milli: int, count: int, rng) -> list[int]:
    """allocateGpuIdBasedOnRandomFit: a uniform choice among usable GPUs (their reservoir
    sampling) for a shared-GPU pod; the first free GPUs for a whole-GPU pod."""
    idx = np.flatnonzero(usable)
    if milli < MILLI:
        return [int(idx[int(rng.integers(len(idx)))])]
    return [int(i) for i in idx[:count]]


# ------------------------------------------------------------------ simple scorers
def score_best_fit(cpu_left, gpu_total_left, cpu, request) -> np.ndarray:
    """getBestFitScore (best_fit_score.go): 100 x (1 - sum of 0.5 x (free - request) / MaxSpec
    over cpu and GPU), truncated; float operations in their order. Its min-max NormalizeScore
    keeps the order and the ties of scores within 0-100, so it is not applied."""
    s = (cpu_left - cpu) / MAX_SPEC_CPU * 0.5
    s = s + (gpu_total_left - request) / MAX_SPEC_GPU * 0.5
    return np.trunc((1.0 - s) * MAX_SCORE).astype(np.int64)


def score_dot_product(cpu_left, gpu_total_left, cpu, request) -> np.ndarray:
    """calculateDotProductScore (dot_product_score.go) with dimExtMethod merge, normMethod max:
    the node's free [cpu, total GPU] and the pod's request, each divided by [MaxSpecCpu,
    MaxSpecGpu]; 100 x (1 - dot / 2), truncated."""
    dot = (cpu_left / MAX_SPEC_CPU) * (cpu / MAX_SPEC_CPU)
    dot = dot + (gpu_total_left / MAX_SPEC_GPU) * (request / MAX_SPEC_GPU)
    return np.trunc(MAX_SCORE * (1 - dot / 2)).astype(np.int64)


def score_gpu_packing(left: np.ndarray, present: np.ndarray, milli: int, count: int) -> np.ndarray:
    """getPackingScore (gpu_packing_score.go), integer arithmetic, for candidate rows `left`
    [C, D] (milli left, 0 where no GPU), `present` [C, D]:
      all GPUs of the node free      -> max(100/3 - free GPUs, free GPUs);
      it must use free GPUs          -> max(100/2 - free GPUs used, 100/3);
      it uses shared GPUs only       -> max(100 - (sum of left x 100 / 1000 on them) / 10, 100/2).
    A pod without GPU scores 0 everywhere (MinNodeScore)."""
    n = len(left)
    if count == 0:
        return np.zeros(n, dtype=np.int64)
    full = (left == MILLI) & present
    n_free = full.sum(axis=1)
    n_gpu = present.sum(axis=1)
    all_free = n_free == n_gpu
    out = np.empty(n, dtype=np.int64)
    out[all_free] = np.maximum(MAX_SCORE // 3 - n_free[all_free], n_free[all_free])
    if milli >= MILLI:
        # GPUs taken in ascending order of milli left among those with >= 1000: free ones.
        out[~all_free] = max(MAX_SCORE // 2 - count, MAX_SCORE // 3)
        return out
    # A shared-GPU pod takes the fitting GPU with the least left (stable ascending sort).
    fit = (left >= milli) & present
    chosen = np.where(fit, left, MILLI + 1).min(axis=1)
    case2 = ~all_free & (chosen == MILLI)
    out[case2] = max(MAX_SCORE // 2 - 1, MAX_SCORE // 3)
    case1 = ~all_free & (chosen < MILLI)
    out[case1] = np.maximum(MAX_SCORE - (chosen[case1] * 100 // MILLI) // 10, MAX_SCORE // 2)
    return out


def score_gpu_clustering(gpu_total_left, same_tag: np.ndarray, n_tags: np.ndarray, has_gpu: bool) -> np.ndarray:
    """GpuClusteringScorePlugin.Score (gpu_clustering_score.go), integer arithmetic: base =
    25 x (8000 - total milli left) / 8000, plus 75 when the node only holds pods of the pod's
    GPU affinity (share-gpu, or N-gpu for N whole GPUs), 50 when it holds that affinity and
    others, 25 when it holds no GPU pod, 0 otherwise. A pod without GPU scores 0."""
    if not has_gpu:
        return np.zeros(len(gpu_total_left), dtype=np.int64)
    base = (MAX_SCORE // 4) * (MAX_SPEC_GPU - gpu_total_left.astype(np.int64)) // MAX_SPEC_GPU
    bonus = np.where(same_tag, np.where(n_tags == 1, 75, 50), np.where(n_tags == 0, 25, 0))
    return base + bonus


def gpu_tag(milli: int, count: int) -> int:
    """GetGpuAffinityFromPodAnnotation (open-gpu-share/utils/pod.go): -1 no GPU, 0 share-gpu,
    N for N whole GPUs (N-gpu)."""
    if count == 0:
        return -1
    return 0 if (count == 1 and milli < MILLI) else count


# ------------------------------------------------------------------ FGD
class FragModel:
    """The GPU fragmentation of node states against the typical pods (pkg/utils/frag.go,
    NodeGpuShareFragAmount, summed except the Q3 share, FragAmountSumExceptQ3), in exact
    integer arithmetic: frag x cum = sum over typical pods t of W_t x amount_t, where W_t is
    t's count in the trace and cum the count of the typical pods kept, and amount_t is
      - the node's total milli GPU left when t needs no GPU (XL/XR are counted as fragment),
      - the milli left on GPUs with less left than t asks per GPU, when t fits: enough GPUs
        with that much left, enough CPU left, its GPU type accessible (Q3),
      - the node's total milli GPU left otherwise (Q1, Q2, Q4, no access).
    Memory plays no part, as in theirs. The exact sum makes a zero change exactly zero (their
    float sums are equal bit for bit in that case, as they add the same terms in the same order)."""

    def __init__(self, cpu: np.ndarray, milli: np.ndarray, count: np.ndarray, weight: np.ndarray, access: np.ndarray):
        # access: [T, K] typical pod t may use nodes of kind k
        gpu = count > 0
        self.w_cpu_only = int(weight[~gpu].sum())
        self.cpu, self.milli, self.count = cpu[gpu], milli[gpu], count[gpu]
        self.w = weight[gpu].astype(np.int64)
        self.access = access[gpu]
        self.cum = float(weight.sum())

    def frag(self, cpu_left: np.ndarray, left: np.ndarray, kind: np.ndarray) -> np.ndarray:
        """frag x cum (int64) of states: cpu_left [M], left [M, D] (milli, 0 where no GPU), kind [M]."""
        left = left.astype(np.int64)
        total = left.sum(axis=1)
        out = total * self.w_cpu_only
        if len(self.w) == 0:
            return out
        ge = left[:, None, :] >= self.milli[None, :, None]  # [M, T, D]
        can_host = ge.sum(axis=2) >= self.count[None, :]
        low = np.where(ge, 0, left[:, None, :]).sum(axis=2)  # [M, T]
        q3 = can_host & (cpu_left[:, None] >= self.cpu[None, :]) & self.access[:, kind].T
        return out + (np.where(q3, low, total[:, None]) * self.w[None, :]).sum(axis=1)

    def score(self, before: np.ndarray, after: np.ndarray) -> np.ndarray:
        """calculateGpuShareFragExtendScore (fgd_score.go): int(sigmoid((before - after) / 1000)
        x 100), the frag amounts in milli GPU."""
        x = (before - after) / self.cum / 1000.0
        return np.trunc((1.0 / (1.0 + np.exp(-x))) * MAX_SCORE).astype(np.int64)
