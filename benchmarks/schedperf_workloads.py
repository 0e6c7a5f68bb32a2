"""Kubernetes' scheduler_perf DRA workloads, as Kubernetes objects draopt reads.

Read from kubernetes/kubernetes, test/integration/scheduler_perf/dra/ (the versions the library
holds; file -> commit):
  performance-config.yaml                                    49bcfe685dd18558e761ca5bfa6d3a680df5819d
  extendedresource/performance-config.yaml                   439aa979cf9459fb3d53a354551b9a9d48e06828
  prioritizedlist/performance-config.yaml                    2e0908106e4420a601e50d6edfd41475de87a3e1
  partitionabledevices/performance-config.yaml               030880a5dc5449403c6d1f0aa146a7dc21d6c6dc
  templates/node-with-dra-test-driver.yaml                   fa7ba8e2f963aad48acbd0aee416f9743af443f5
  templates/deviceclass.yaml                                 030880a5dc5449403c6d1f0aa146a7dc21d6c6dc
  templates/resourceclaimtemplate.yaml                       958ef682daed8439d26204563d78519e6b656dcc
  templates/pod-with-claim-template.yaml                     81810de635aa13aa0a32992f6def3aa9d6025ebc
  templates/deviceclass-extended-resource.yaml               5434a181087b6e3d59558e9d4d165a50ad4ce838
  templates/pod-with-extended-resource-mod25.yaml            8fb766099ddafde809e358ceee175d93b534ab6a
  templates/resourceclaimtemplate-first-available.yaml       225d8bb2656df060a346d3d09f94fc84c996e27e
  templates/deviceclass-no-devices.yaml                      2e0908106e4420a601e50d6edfd41475de87a3e1
  templates/resourceslice-partitionable-countersets.yaml     16913111deb1a4c4ff76f4ba7ffd9ebef397a303
  templates/resourceslice-partitionable-devices.yaml         76b564f18e878c5c69034301fb6fcf324b666033
      (the split layout: counter sets and devices in two slices of one pool; the older
      single-slice resourceslice-partitionable.yaml @55b110a5 is the 1.34 layout that 1.35's
      API server rejects)
  templates/resourceclaim-with-selector.yaml                 898b9f800267a757615ecfb71fc377d04d996c6b
  templates/resourceclaimtemplate-for-two-devices.yaml       07df777c56f8a656819741536f3a612fd394a734
  test/integration/scheduler_perf/dra.go (createResourceDriver: one ResourceSlice per node with
      maxClaimsPerNode devices "instance-<i>")              03312ae5588ff4027cd0145223343faf91959c1d

Translation choices (the scheduler_perf harness does things draopt's input has no word for):
- Pods the harness creates in its "init" phase are scheduled by the same scheduler before the
  measured ones: here they are pending pods too, first in the queue (namespace ``init``).
- ``allocResourceClaims`` allocates claims with the allocator on randomly shuffled nodes; here
  they are written already allocated, deterministically (claim i on the i-th free device that
  fits), which is one of the allocations that op can produce.
- ``steadyState`` (create / delete pods for a duration) becomes ``measurePods`` pending pods.
- Device fields that only matter under the DRADeviceBindingConditions gate (bindingConditions,
  usageRestrictedToNode, set by dra.go) are left out: the workloads run without that gate.
- Nodes are named scheduler-perf-dra-<i> (the template's generateName plus an index) and carry
  the template's label ``node-with-dra=true``, which the partitionable slices select: every node
  reaches every partitionable pool, which is what that workload measures.
- The prioritized-list config at the commit read has only 1-node "fast" sizes; issue 11 measures
  it at the basic workload's size (500 nodes x 10 devices, 5,000 pods), which is used here. Its
  claim template's first sub-request names a class that does not exist (``no-such-class``)
  while the workload creates ``no-devices-class``; the sub-request uses ``no-devices-class``
  (a class that selects no device), so the first alternative always fails for lack of devices.

Thresholds: the pods/s Kubernetes' CI asserts (the ``threshold`` of a workload; None where the
config read sets none).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DRIVER = "test-driver.cdi.k8s.io"
RESOURCE_V1 = "resource.k8s.io/v1"


@dataclass(frozen=True)
class Workload:
    name: str
    source: str  # scheduler_perf test case / workload name
    nodes: int
    pods: int  # pending pods (init + measured)
    threshold: float | None  # pods/s Kubernetes' CI asserts
    threshold_source: str
    params: dict[str, Any] = field(default_factory=dict)


WORKLOADS: dict[str, Workload] = {
    "basic": Workload(
        "basic",
        "SchedulingWithResourceClaimTemplate/5000pods_500nodes",
        500,
        5000,
        56.0,
        "performance-config.yaml threshold dra: 56 (raised to 120 by kubernetes/kubernetes PR #138916)",
        {"maxClaimsPerNode": 10, "initPods": 2500, "measurePods": 2500},
    ),
    "extended-resource-25": Workload(
        "extended-resource-25",
        "ExtendedResource_25Classes/5000pods_500nodes",
        500,
        5000,
        197.0,
        "extendedresource/performance-config.yaml @439aa979 threshold: 197",
        {"maxClaimsPerNode": 10, "initPods": 2500, "measurePods": 2500, "classes": 25},
    ),
    "extended-resource-50": Workload(
        "extended-resource-50",
        "ExtendedResource_50Classes/5000pods_500nodes",
        500,
        5000,
        195.0,
        "extendedresource/performance-config.yaml @439aa979 threshold: 195",
        {"maxClaimsPerNode": 10, "initPods": 2500, "measurePods": 2500, "classes": 50},
    ),
    "prioritized-list": Workload(
        "prioritized-list",
        "FirstAvailable (at the basic workload's size, see module doc)",
        500,
        5000,
        None,
        "prioritizedlist/performance-config.yaml @2e090810 sets no threshold",
        {"maxClaimsPerNode": 10, "initPods": 2500, "measurePods": 2500},
    ),
    "partitionable": Workload(
        "partitionable",
        "SteadyStateClusterResourceClaimTemplatePartitionable/2000pods_100nodes",
        100,
        2000,
        None,
        "partitionabledevices/performance-config.yaml @030880a5 sets no threshold",
        {"resourceSlices": 2000, "initClaims": 2000, "measurePods": 2000},
    ),
}


def _scaled(n: int, scale: float) -> int:
    return max(1, int(math.floor(n * scale + 0.5)))


def _node(i: int) -> dict[str, Any]:
    resources = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    meta: dict[str, Any] = {"name": f"scheduler-perf-dra-{i}", "labels": {"node-with-dra": "true"}}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def _driver_slice(node: str, devices: int) -> dict[str, Any]:
    """dra.go resourceSlice(): one pool per node, named after it, maxClaimsPerNode devices."""
    return {
        "apiVersion": RESOURCE_V1,
        "kind": "ResourceSlice",
        "metadata": {"name": node},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{i}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": i},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for i in range(devices)
            ],
        },
    }


def _class(name: str, driver: str = DRIVER, extended: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": RESOURCE_V1, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def _template(namespace: str, devices: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_V1,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "test-claim-template", "namespace": namespace},
        "spec": {"spec": {"devices": devices}},
    }


def _claim_pod(namespace: str, i: int) -> dict[str, Any]:
    """pod-with-claim-template.yaml (generateName test-dra: named test-dra-<i> here)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"test-dra-{i}", "namespace": namespace, "uid": f"{namespace}-test-dra-{i}"},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10.1",
                    "resources": {"claims": [{"name": "resource"}]},
                }
            ],
            "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": "test-claim-template"}],
        },
    }


def _extended_pod(namespace: str, i: int, classes: int) -> dict[str, Any]:
    """pod-with-extended-resource-mod25/50.yaml."""
    res = {f"example.com/gpu-{i % classes}": "1"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"test-dra-{i}", "namespace": namespace, "uid": f"{namespace}-test-dra-{i}"},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": dict(res), "limits": dict(res)},
                }
            ]
        },
    }


def _basic(w: Workload, scale: float, devices: dict[str, Any], extra_classes=()) -> list[dict[str, Any]]:
    n = _scaled(w.nodes, scale)
    init, measure = _scaled(w.params["initPods"], scale), _scaled(w.params["measurePods"], scale)
    out = [_node(i) for i in range(n)]
    out += [_driver_slice(f"scheduler-perf-dra-{i}", w.params["maxClaimsPerNode"]) for i in range(n)]
    out.append(_class("test-class"))
    out += list(extra_classes)
    out.append(_template("init", devices))
    out += [_claim_pod("init", i) for i in range(init)]
    out.append(_template("test", devices))
    out += [_claim_pod("test", i) for i in range(measure)]
    return out


def _extended(w: Workload, scale: float) -> list[dict[str, Any]]:
    n = _scaled(w.nodes, scale)
    classes = w.params["classes"]
    init, measure = _scaled(w.params["initPods"], scale), _scaled(w.params["measurePods"], scale)
    out = [_node(i) for i in range(n)]
    out += [_driver_slice(f"scheduler-perf-dra-{i}", w.params["maxClaimsPerNode"]) for i in range(n)]
    out += [_class(f"test-class-{i}", extended=f"example.com/gpu-{i}") for i in range(classes)]
    out += [_extended_pod("init", i, classes) for i in range(init)]
    out += [_extended_pod("test", i, classes) for i in range(measure)]
    return out


_SLICE_SELECTOR = {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "node-with-dra", "operator": "In", "values": ["true"]}]}]
}


def _partitionable_slices(i: int) -> list[dict[str, Any]]:
    """resourceslice-partitionable-countersets/-devices.yaml: pool resourceslice-<i> in two
    slices, reachable from every DRA node: one counter set (4 counters of 1) and six devices
    drawing on it."""

    def dev(name, preallocate, counters_cap, uses):
        return {
            "name": name,
            "attributes": {"preallocate": {"bool": preallocate}, "dra.example.com/slice": {"int": i}},
            "capacity": {"counters": {"value": str(counters_cap)}},
            "consumesCounters": [{"counterSet": "counter-set", "counters": {c: {"value": "1"} for c in uses}}],
        }

    pool = {"name": f"resourceslice-{i}", "generation": 1, "resourceSliceCount": 2}
    counters = {
        "apiVersion": RESOURCE_V1,
        "kind": "ResourceSlice",
        "metadata": {"name": f"resourceslice-countersets-{i}"},
        "spec": {
            "driver": DRIVER,
            "pool": dict(pool),
            "nodeSelector": _SLICE_SELECTOR,
            "sharedCounters": [
                {"name": "counter-set", "counters": {f"counter{k}": {"value": "1"} for k in range(1, 5)}}
            ],
        },
    }
    return [
        counters,
        {
            "apiVersion": RESOURCE_V1,
            "kind": "ResourceSlice",
            "metadata": {"name": f"resourceslice-devices-{i}"},
            "spec": {
                "driver": DRIVER,
                "pool": dict(pool),
                "nodeSelector": _SLICE_SELECTOR,
                "devices": [
                    dev("device-2-counters-1", True, 2, ["counter1", "counter2"]),
                    dev("device-2-counters-2", False, 2, ["counter3", "counter4"]),
                    dev("device-1-counter-1", False, 1, ["counter1"]),
                    dev("device-1-counter-2", False, 1, ["counter2"]),
                    dev("device-1-counter-3", False, 1, ["counter3"]),
                    dev("device-1-counter-4", False, 1, ["counter4"]),
                ],
            },
        },
    ]


def _partitionable(w: Workload, scale: float) -> list[dict[str, Any]]:
    n = _scaled(w.nodes, scale)
    slices = _scaled(w.params["resourceSlices"], scale)
    init = min(_scaled(w.params["initClaims"], scale), slices)
    measure = _scaled(w.params["measurePods"], scale)
    out = [_node(i) for i in range(n)]
    for i in range(slices):
        out += _partitionable_slices(i)
    out.append(_class("test-class"))
    selector = (
        "device.capacity['test-driver.cdi.k8s.io'].counters.compareTo(quantity('2')) >= 0 &&\n"
        "device.attributes['test-driver.cdi.k8s.io'].preallocate"
    )
    for i in range(init):
        # resourceclaim-with-selector.yaml, allocated: only device-2-counters-1 of a slice matches
        # (preallocate and 2 counters); claim i takes slice i's.
        out.append(
            {
                "apiVersion": RESOURCE_V1,
                "kind": "ResourceClaim",
                "metadata": {
                    "name": f"test-claim-with-selector-{i}",
                    "namespace": "init",
                    "uid": f"init-test-claim-with-selector-{i}",
                },
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "req-0",
                                "exactly": {
                                    "deviceClassName": "test-class",
                                    "selectors": [{"cel": {"expression": selector}}],
                                },
                            }
                        ]
                    }
                },
                "status": {
                    "allocation": {
                        "devices": {
                            "results": [
                                {
                                    "request": "req-0",
                                    "driver": DRIVER,
                                    "pool": f"resourceslice-{i}",
                                    "device": "device-2-counters-1",
                                }
                            ]
                        },
                        "nodeSelector": _SLICE_SELECTOR,
                    }
                },
            }
        )
    out.append(
        _template(
            "test",
            {
                "requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class", "count": 2}}],
                "constraints": [{"requests": ["req-0"], "matchAttribute": "dra.example.com/slice"}],
            },
        )
    )
    out += [_claim_pod("test", i) for i in range(measure)]
    return out


def objects(name: str, *, scale: float = 1.0) -> list[dict[str, Any]]:
    """The workload's objects in creation order (Nodes, ResourceSlices, DeviceClasses,
    claims / ResourceClaimTemplates, Pods); `scale` multiplies node, slice, claim and pod counts
    (at least 1 each; device classes and devices per node stay as configured)."""
    if name not in WORKLOADS:
        raise KeyError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})")
    if not scale > 0:
        raise ValueError("scale must be > 0")
    w = WORKLOADS[name]
    if name == "basic":
        return _basic(w, scale, {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]})
    if name.startswith("extended-resource"):
        return _extended(w, scale)
    if name == "prioritized-list":
        return _basic(
            w,
            scale,
            {
                "requests": [
                    {
                        "name": "req-0",
                        "firstAvailable": [
                            {"name": "sub-0", "deviceClassName": "no-devices-class"},
                            {"name": "sub-1", "deviceClassName": "test-class"},
                        ],
                    }
                ]
            },
            extra_classes=[_class("no-devices-class", driver="no-such-driver.cdi.k8s.io")],
        )
    if name == "partitionable":
        return _partitionable(w, scale)
    raise AssertionError(name)


class _KubectlLikeDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    def ignore_aliases(self, data):
        return True


def write(name: str, path: str | Path, *, fmt: str = "yaml", scale: float = 1.0) -> int:
    """Write the workload as one ``kind: List`` document (YAML or JSON); returns bytes written."""
    doc = {"apiVersion": "v1", "kind": "List", "items": objects(name, scale=scale)}
    if fmt == "json":
        text = json.dumps(doc, separators=(",", ":"))
    elif fmt == "yaml":
        # Without anchors, as kubectl writes: the generator shares one device list between slices.
        text = yaml.dump(doc, Dumper=_KubectlLikeDumper, sort_keys=False, default_flow_style=False)
    else:
        raise ValueError(f"fmt must be 'yaml' or 'json', not {fmt!r}")
    data = text.encode()
    Path(path).write_bytes(data)
    return len(data)


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description="write a scheduler_perf DRA workload as a kind: List file")
    p.add_argument("workload", choices=list(WORKLOADS))
    p.add_argument("path")
    p.add_argument("--format", default="yaml", choices=("yaml", "json"))
    p.add_argument("--scale", type=float, default=1.0)
    a = p.parse_args()
    print(write(a.workload, a.path, fmt=a.format, scale=a.scale), "bytes")
