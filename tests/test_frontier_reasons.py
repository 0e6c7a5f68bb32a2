"""Why a pod fits nowhere, as the filters say it now, not as they said it when a node first
rejected a pod of its kind.

First-fit does not filter again the nodes before a kind's frontier (each rejected a pod of the
kind and nodes only fill up until a release), but Kubernetes filters every node for every pod, and
the first filter that rejects may change: NodeResourcesFit runs before DynamicResources, so a node
whose GPU was taken and whose cpu has run out since says "Insufficient cpu". The reasons of an
unplaced pod are checked against first-fit with the frontiers off (every node filtered for every
pod, draopt.cluster.firstfit.KIND_FRONTIERS), on random clusters of every feature family, with
draopt's own node choice and with Kubernetes' default profile.
"""

from __future__ import annotations

import random
from unittest import mock

import pytest

from draopt.cluster import firstfit
from draopt.errors import DraoptError
from draopt.kube.features import Features
from draopt.kube.loader import load_text
from draopt.kube.workload import expand
from draopt.placement import build_cluster, place, scheduler_for
from draopt.testing.audit import objects_of
from draopt.testing.synth_cluster import FAMILIES, features_for, random_cluster

# One node with 4 cpu and one GPU (a single-device driver, as in NVIDIA's k8s-dra-driver-gpu
# quickstart `gpu-test1`: a pod per GPU claim), pods in name order.
_GPU_POD = """
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: one-gpu}}]
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}, claims: [{{name: gpu}}]}}}}]
"""
ONE_GPU_NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec: {selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec: {driver: gpu.example.com, nodeName: n1, pool: {name: n1, resourceSliceCount: 1}, devices: [{name: gpu-0}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: default}
spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}}
---
apiVersion: v1
kind: Pod
metadata: {name: p3, namespace: default}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "3"}}}]}
""" + "".join(_GPU_POD.format(name=n) for n in ("p1", "p2", "p4"))


@pytest.mark.parametrize("scheduler", [None, "builtin:name-order"])
def test_a_node_that_filled_up_since_says_what_rejects_first_now(scheduler):
    kw = {"scheduler_config": scheduler} if scheduler else {}
    result = place(load_text(ONE_GPU_NODE, "one-gpu-node.yaml"), policy="first-fit", **kw).result
    by_pod = {p.pod: p for p in result.pods}
    assert by_pod["default/p1"].node == "n1" and by_pod["default/p3"].node == "n1"
    # p2: the GPU is p1's; p4, after p3 took the last 3 cpu: NodeResourcesFit rejects first.
    assert dict(by_pod["default/p2"].reasons) == {"cannot allocate all claims": 1}
    assert dict(by_pod["default/p4"].reasons) == {"Insufficient cpu": 1}
    assert not by_pod["default/p4"].explanation  # no device-side story for a cpu shortage


def _digest(docs, features, profile: bool):
    """Per pod: node and reasons (and the claims' devices), first-fit as place() runs it."""
    objects = objects_of(docs)
    features = features or Features.from_gates()
    try:
        workload = expand(objects, features)
        cluster = build_cluster(objects, workload, features)
        sched = scheduler_for(None, cluster, workload) if profile else None
        result = firstfit.simulate(cluster, workload, scheduler=sched)
    except DraoptError as e:
        return ("error", str(e))
    return [
        (p.pod, p.node, dict(sorted(p.reasons.items())), {k: v.to_k8s() for k, v in sorted(p.new_claims.items())})
        for p in result.pods
    ]


@pytest.mark.parametrize("profile", [False, True], ids=["name-order", "default-profile"])
@pytest.mark.parametrize("family", FAMILIES)
def test_reasons_are_those_of_filtering_every_node(family, profile):
    refused = 0
    for seed in range(30, 38):
        rng = random.Random(f"frontier-{family}-{seed}")
        docs = random_cluster(rng, family, nodes=(2, 7), pods=(6, 28))
        features = features_for(seed)
        with_frontiers = _digest(docs, features, profile)
        with mock.patch.object(firstfit, "KIND_FRONTIERS", False):
            every_node = _digest(docs, features, profile)
        assert with_frontiers == every_node, f"{family} seed {seed}"
        if with_frontiers[0] != "error":
            refused += sum(1 for _, node, reasons, _ in with_frontiers if node is None and reasons)
    assert refused > 0  # (the draws leave pods unplaced: the reasons are compared)
