"""`allocationMode: All` requests counted (CountIdenticalPods) where that is exact.

Kubernetes (resource.k8s.io/v1 DeviceAllocationModeAll, structured/allocator.go): All takes every
matching device of the node; it fails when one of them is allocated, or when none exists. Counted
as the exact count of the node's matching devices, a kind gets at most one pod per node, none on
a node where a matching device is in use or absent: the answers below are first-fit's and
optimal's alike. The round-2 shape is ../shared/realworld/round2/h-jobset-train.yaml (96 whole-node
pods, All of 8 GPUs; measured in benchmarks, not here).
"""

from __future__ import annotations

from draopt.kube.loader import load_text
from draopt.placement import place


def cluster(nodes: int, gpus: int, extra_node_without_gpus: bool = True) -> str:
    docs = [
        """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: device.driver == "gpu.example.com"}"""
    ]
    names = [f"n{i}" for i in range(nodes)] + (["cpu-only"] if extra_node_without_gpus else [])
    for name in names:
        docs.append(f"""apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status: {{allocatable: {{cpu: "32", memory: 128Gi, pods: "110"}}}}""")
        if name == "cpu-only":
            continue
        devices = "\n".join(f"  - name: gpu-{j}\n    attributes: {{index: {{int: {j}}}}}" for j in range(gpus))
        docs.append(f"""apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name}-gpus}}
spec:
  driver: gpu.example.com
  nodeName: {name}
  pool: {{name: {name}, generation: 1, resourceSliceCount: 1}}
  devices:
{devices}""")
    return "\n---\n".join(docs) + "\n---\n"


def workload(pods: int, mode: str = "allocationMode: All") -> str:
    docs = [
        f"""apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: all-gpus}}
spec:
  spec:
    devices:
      requests:
      - name: gpus
        exactly: {{deviceClassName: gpu.example.com, {mode}}}"""
    ]
    for i in range(pods):
        docs.append(f"""apiVersion: v1
kind: Pod
metadata: {{name: w{i}}}
spec:
  resourceClaims: [{{name: gpus, resourceClaimTemplateName: all-gpus}}]
  containers: [{{name: c, image: x, resources: {{claims: [{{name: gpus}}]}}}}]""")
    return "\n---\n".join(docs) + "\n"


def answer(text: str, policy: str):
    out = place(load_text(text), policy=policy)
    return sorted(p.pod for p in out.result.pods if p.placed), out.result.stats


def test_all_requests_are_counted_one_pod_per_node():
    """5 pods asking All of a 2-GPU node's GPUs, 4 GPU nodes and one without GPUs (All needs at least
    one device): 4 placed, one per GPU node, counted (no "All request" among the reasons)."""
    text = cluster(4, 2) + workload(5)
    ff, _ = answer(text, "first-fit")
    opt, stats = answer(text, "optimal")
    assert len(ff) == len(opt) == 4
    assert stats.get("not_counted_because", {}) == {} and stats.get("counted_kinds") == 1


def test_all_and_exact_count_of_the_node_give_the_same_answer():
    """All on 2-GPU nodes places as `count: 2` does."""
    all_mode, _ = answer(cluster(3, 2) + workload(4), "optimal")
    counted, _ = answer(cluster(3, 2) + workload(4, "count: 2"), "optimal")
    assert len(all_mode) == len(counted) == 3


def test_an_all_request_in_a_prioritized_list_is_not_counted():
    text = cluster(2, 2) + workload(2).replace(
        "exactly: {deviceClassName: gpu.example.com, allocationMode: All}",
        "firstAvailable: [{name: all, deviceClassName: gpu.example.com, allocationMode: All}, "
        "{name: one, deviceClassName: gpu.example.com}]",
    )
    _, stats = answer(text, "optimal")
    assert stats.get("not_counted_because") == {"All request in a prioritized list": 2}
