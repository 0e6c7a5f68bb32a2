"""A solved problem rebound to another node's inventory (firstfit._rebind: claims alike for the
allocator, prepared once) keeps no answer it kept per device position: on a node with devices of
its own, position 0 is another device. Nothing searches a rebound problem today; this keeps a
search on one from reading the first node's answers."""

from __future__ import annotations

import io

from draopt.cluster.firstfit import _rebind
from draopt.dra.problem import prepare
from draopt.kube.features import Features
from draopt.kube.loader import load_text
from draopt.kube.workload import expand
from draopt.placement import build_cluster

# Two nodes, each with its own slice (nodeName): one GPU that the class selects, one it does not.
CLUSTER = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: big}
spec: {selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].memory >= 40'}}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: default}
spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: big}}]}}
"""
for node, memory in (("a", 80), ("b", 16)):
    CLUSTER += f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {node}}}
status: {{allocatable: {{cpu: "8", memory: 8Gi, pods: "10"}}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {node}-gpus}}
spec:
  driver: gpu.example.com
  nodeName: {node}
  pool: {{name: {node}, resourceSliceCount: 1}}
  devices: [{{name: gpu-0, attributes: {{memory: {{int: {memory}}}}}}}]
"""


def test_rebinding_to_other_devices_keeps_no_per_device_answers():
    objects = load_text(CLUSTER, "two-nodes.yaml", notes=io.StringIO())
    features = Features.from_gates()
    workload = expand(objects, features)
    cluster = build_cluster(objects, workload, features)
    node_a, node_b = cluster.by_name["a"], cluster.by_name["b"]
    inv_a, inv_b = cluster.inventory(node_a), cluster.inventory(node_b)
    assert inv_a.devices is not inv_b.devices
    claims = [workload.claims["default/c"]]
    problem = prepare(claims, inv_a, cluster.classes, features, cluster.cel_env, cluster.expr_cache)
    req = problem.claims[0].requests[0].alternatives[0]
    assert problem.selectable(req, inv_a.devices[0])  # node a's GPU has 80: selected, and kept
    rebound = _rebind(problem, claims, inv_b)
    assert rebound.inventory is inv_b and problem.inventory is inv_a
    assert not rebound._match_cache and problem._match_cache
    assert not rebound.selectable(req, inv_b.devices[0])  # node b's GPU at the same position: 16
    same = _rebind(problem, claims, inv_a)
    assert same is problem  # same claims, same inventory: nothing to rebind
