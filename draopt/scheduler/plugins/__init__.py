"""kube-scheduler's score plugins, one module each as in kubernetes/kubernetes
pkg/scheduler/framework/plugins/<plugin>/.  Each module has NAME and
`score(scheduler, demand, pod_info, profile, feasible_nodes, dra_scores)`: normalised 0-100 scores
over the feasible nodes, or None when the plugin scores every node alike.  ImageLocality (no
images modelled) and VolumeBinding (no volumes) score 0 everywhere and have no module."""

from __future__ import annotations

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
