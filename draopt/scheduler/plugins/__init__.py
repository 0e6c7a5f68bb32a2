"""kube-scheduler's score plugins, one module each as in kubernetes/kubernetes
pkg/scheduler/framework/plugins/<plugin>/.  Each module has NAME and
`score(scheduler, demand, pod_info, profile, feasible_nodes, dra_scores)`: normalised 0-100 scores
over the feasible nodes, or None when the plugin scores every node alike.  ImageLocality (no
images modelled) and VolumeBinding (no volumes) score 0 everywhere and have no module.

`uniform_score`: what a plugin whose `score` returned None gives every node (the total
kube-scheduler compares includes it; draopt.scheduler.score_breakdown)."""

from __future__ import annotations

import numpy as np

from draopt.scheduler.plugins import (
    balanced_allocation,
    dynamic_resources,
    inter_pod_affinity,
    node_affinity,
    node_resources_fit,
    pod_topology_spread,
    taint_toleration,
)

SCORE_PLUGINS = {
    m.NAME: m.score
    for m in (
        node_resources_fit,
        balanced_allocation,
        taint_toleration,
        node_affinity,
        dynamic_resources,
        pod_topology_spread,
        inter_pod_affinity,
    )
}


# The plugins whose None from `score` stands for a score other than 0 on every node.
_UNIFORM = {
    taint_toleration.NAME: taint_toleration.uniform_score,
    dynamic_resources.NAME: dynamic_resources.uniform_score,
}


def uniform_score(plugin: str, dra: np.ndarray) -> int:
    """The normalised score every node gets from `plugin` when its `score` returns None: 0 for a
    plugin whose PreScore skips the pod or that normalises equal raw scores to 0."""
    got = _UNIFORM.get(plugin)
    return got(dra) if got is not None else 0
