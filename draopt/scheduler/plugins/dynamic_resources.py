"""DynamicResources' Score (kubernetes/kubernetes,
pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go): the allocator's score of
the devices a node would give the pod (prioritized lists; the scores come from the allocation
itself, DefaultNormalizeScore)."""

from __future__ import annotations

import numpy as np

from draopt.scheduler.plugins.helper import default_normalize

NAME = "DynamicResources"


def score(sched, demand, info, prof, fe: np.ndarray, dra: np.ndarray):
    # Every node alike (all 0, or the same prioritized-list choice everywhere): the normalised
    # scores are alike too and cannot change the choice (Scheduler._plugin_score's None).
    # (count_nonzero: numpy's direct count, cheaper per cycle than any()/min()/max() reductions)
    if not len(dra) or not np.count_nonzero(dra) or not np.count_nonzero(dra != dra[0]):
        return None
    return default_normalize(dra)


def uniform_score(dra: np.ndarray) -> int:
    """`score`'s None: every node's raw score is the same, normalised to 100 (0 when it is 0)."""
    return int(default_normalize(np.asarray(dra[:1], dtype=np.int64))[0]) if len(dra) else 0
