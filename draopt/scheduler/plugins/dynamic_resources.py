"""DynamicResources' Score (kubernetes/kubernetes,
pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go): the allocator's score of
the devices a node would give the pod (prioritized lists; the scores come from the allocation
itself, DefaultNormalizeScore)."""

from __future__ import annotations

import numpy as np

from draopt.scheduler.plugins.helper import default_normalize

NAME = "DynamicResources"


def score(sched, demand, info, prof, fe: np.ndarray, dra: np.ndarray):
    if not dra.any():
        return None
    return default_normalize(dra)
