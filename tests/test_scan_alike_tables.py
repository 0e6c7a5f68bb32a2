"""The scheduler's filter loop keeps one table of node answers for alike kinds of pods (claims the
allocator sees alike: the same specs with classes replaced by their selectors; see
draopt.scheduler.cycle.Scheduler.select). Placements, allocations and every unplaced pod's
reasons are the same as with one table per kind, including errors that name a pod's own classes
(a CEL runtime error in a class selector), after which the kinds keep their own tables.

Shapes: Kubernetes' scheduler_perf ExtendedResource_25Classes workload (benchmarks/
schedperf_workloads.py, test/integration/scheduler_perf/dra/extendedresource/), overfilled so
that pods fail; and a small cluster of two classes with the same selector that raises on one
node's devices (the allocator aborts there: dynamic-resource-allocation/structured's CEL error).
"""

from __future__ import annotations

import json
import os
import sys
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import schedperf_workloads as sw  # noqa: E402

from draopt.kube.features import Features  # noqa: E402
from draopt.kube.loader import load_text  # noqa: E402
from draopt.placement import place  # noqa: E402
from draopt.scheduler.cycle import Scheduler  # noqa: E402

DRIVER = sw.DRIVER
V1 = "resource.k8s.io/v1"


def outcome(docs: list[dict]) -> dict:
    objects = load_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}), "test.json")
    res = place(objects, policy="first-fit", features=Features.from_gates()).result
    return {
        "pods": [(p.pod, p.node, dict(sorted(p.reasons.items())), p.error) for p in res.pods],
        "claims": {k: [a.to_k8s(), n] for k, (a, n) in sorted(res.claims.items())},
    }


def both(docs: list[dict]) -> tuple[dict, dict]:
    with mock.patch.object(Scheduler, "share_alike_tables", False):
        apart = outcome(docs)
    with mock.patch.object(Scheduler, "share_alike_tables", True):
        shared = outcome(docs)
    return apart, shared


def _extended_pod(i: int, classes: int) -> dict:
    res = {f"example.com/gpu-{i % classes}": "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"extra-{i}", "namespace": "extra", "uid": f"extra-{i}"},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": res, "limits": res}}]},
    }


def test_overfilled_extended_resource_workload_same_as_one_table_per_kind():
    docs = sw.objects("extended-resource-25", scale=0.04)  # 20 nodes x 10 devices, 200 pods
    docs += [_extended_pod(i, 25) for i in range(40)]  # 40 more than the devices
    apart, shared = both(docs)
    assert shared == apart
    unplaced = [p for p in shared["pods"] if p[1] is None]
    assert len(unplaced) == 40
    assert all(reasons for _, _, reasons, _ in unplaced)


def _node(i: int) -> dict:
    res = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": {"zone": "a"}},
        "status": {"capacity": res, "allocatable": res},
    }


def _slice(i: int, devices: int, with_attribute: bool) -> dict:
    attrs = {"model": {"string": "A100"}}
    if with_attribute:
        attrs["ready"] = {"bool": True}
    return {
        "apiVersion": V1,
        "kind": "ResourceSlice",
        "metadata": {"name": f"node-{i}-slice"},
        "spec": {
            "driver": DRIVER,
            "nodeName": f"node-{i}",
            "pool": {"name": f"node-{i}", "generation": 0, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{d}", "attributes": attrs} for d in range(devices)],
        },
    }


def _class(name: str) -> dict:
    # The same selector in both classes (alike kinds); it raises on a device without `ready`.
    expr = f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].ready'
    return {
        "apiVersion": V1,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }


def _pod_with_claim(i: int, cls: str) -> list[dict]:
    claim = {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {"name": f"claim-{i}", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": cls}}]}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:02d}", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "pause", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": f"claim-{i}"}],
        },
    }
    return [claim, pod]


def test_reasons_naming_a_class_stay_each_kinds_own():
    nodes = 4
    docs = [_node(i) for i in range(nodes)]
    # node-2's devices lack the attribute: the selector raises there, naming the pod's class.
    docs += [_slice(i, 2, with_attribute=i != 2) for i in range(nodes)]
    docs += [_class("class-a"), _class("class-b")]
    for i in range(12):  # every pod's filter loop meets node-2: each stops there, naming its own class
        docs += _pod_with_claim(i, "class-a" if i % 2 == 0 else "class-b")
    apart, shared = both(docs)
    assert shared == apart
    unplaced = [p for p in shared["pods"] if p[1] is None]
    assert len(unplaced) == 12
    for pod, _, reasons, error in unplaced:
        own = "class-a" if int(pod.rsplit("-", 1)[1]) % 2 == 0 else "class-b"
        assert not reasons and "CEL runtime error" in error and f"class {own}:" in error, (pod, error)
