"""TaintToleration's Score (kubernetes/kubernetes,
pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go): the PreferNoSchedule taints a
pod does not tolerate, fewer is better (DefaultNormalizeScore, reversed)."""

from __future__ import annotations

import numpy as np

from draopt.dra.rules import tolerates
from draopt.scheduler.plugins.helper import default_normalize

NAME = "TaintToleration"


def score(sched, demand, info, prof, fe: np.ndarray, dra: np.ndarray):
    if not sched.any_prefer_taints:
        return None
    tol = info.prefer_tolerations
    raw = np.array(
        [sum(1 for t in sched.prefer_taints[i] if not any(tolerates(x, t) for x in tol)) for i in fe], dtype=np.int64
    )
    return default_normalize(raw, reverse=True)


def uniform_score(dra: np.ndarray) -> int:
    """`score`'s None: no node has a PreferNoSchedule taint, every raw score is 0, which the
    reversed normalisation makes the maximum."""
    return int(default_normalize(np.zeros(1, dtype=np.int64), reverse=True)[0])
