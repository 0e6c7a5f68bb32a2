"""NodeAffinity's Score (kubernetes/kubernetes,
pkg/scheduler/framework/plugins/nodeaffinity/node_affinity.go): the weights of the preferred
scheduling terms a node matches (DefaultNormalizeScore)."""

from __future__ import annotations

import numpy as np

from draopt.kube.nodeselect import node_selector_matches
from draopt.scheduler.plugins.helper import default_normalize

NAME = "NodeAffinity"


def score(sched, demand, info, prof, fe: np.ndarray, dra: np.ndarray):
    if not info.preferred_node_terms:
        return None
    raw = np.array(
        [
            sum(w for w, term in info.preferred_node_terms if node_selector_matches(term, sched.nodes[i].node))
            for i in fe
        ],
        dtype=np.int64,
    )
    return default_normalize(raw)
