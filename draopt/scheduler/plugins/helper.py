"""What the score plugins share: MaxNodeScore, Go's integer division, DefaultNormalizeScore
(kubernetes/kubernetes, pkg/scheduler/framework/plugins/helper/normalize_score.go: score * 100 /
max, reverse 100 - that; all 0 -> 0, reverse 100)."""

from __future__ import annotations

import numpy as np

MAX = 100


def go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _safe(cap: np.ndarray) -> np.ndarray:
    return np.where(cap > 0, cap, 1)


def default_normalize(scores: np.ndarray, reverse: bool = False) -> np.ndarray:
    """helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)."""
    m = int(scores.max()) if len(scores) else 0
    if m == 0:
        return np.full(len(scores), MAX if reverse else 0, dtype=np.int64)
    out = MAX * scores // m
    return MAX - out if reverse else out
