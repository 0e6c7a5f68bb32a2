"""Random and parametric DRA instances, as Kubernetes objects (dicts).

Used by the property tests (random small instances that exercise every feature) and by the
benchmarks (large regular clusters). Everything is driven by a `random.Random`, so a seed
gives the same instance every time.
"""

from __future__ import annotations

import random
from typing import Any

V1 = "resource.k8s.io/v1"

SELECTORS = [
    'device.attributes["{d}"].model == "a"',
    'device.attributes["{d}"].numa == 0',
    '"model" in device.attributes["{d}"] && device.attributes["{d}"].model != "c"',
    'device.capacity["{d}"].memory.compareTo(quantity("2Gi")) >= 0',
    'device.attributes["{d}"].version.isGreaterThan(semver("1.1.0"))',
]


def _device(
    rng: random.Random, name: str, *, multi: bool, counter_set: str | None, taint: bool, list_attrs: bool
) -> dict[str, Any]:
    d: dict[str, Any] = {
        "name": name,
        "attributes": {
            "model": {"string": rng.choice("abc")},
            "numa": {"int": rng.randint(0, 2)},
            "version": {"version": rng.choice(["1.0.0", "1.2.0", "2.0.0-rc.1", "2.0.0"])},
        },
        "capacity": {"memory": {"value": rng.choice(["1Gi", "2Gi", "4Gi"])}},
    }
    if list_attrs:
        d["attributes"]["links"] = {"strings": rng.sample(["l0", "l1", "l2", "l3"], rng.randint(1, 2))}
    if multi:
        d["allowMultipleAllocations"] = True
        d["capacity"]["bandwidth"] = {
            "value": "10G",
            "requestPolicy": rng.choice(
                [
                    {"default": "1G", "validRange": {"min": "1G", "step": "1G"}},
                    {"default": "2G", "validValues": ["1G", "2G", "5G"]},
                    {"default": "1G", "validRange": {"min": "500M", "max": "8G"}},
                ]
            ),
        }
    if counter_set:
        d["consumesCounters"] = [
            {"counterSet": counter_set, "counters": {"mem": {"value": rng.choice(["2Gi", "4Gi", "6Gi"])}}}
        ]
        if rng.random() < 0.4:
            d["consumesCounters"][0]["compatibilityGroups"] = rng.choice([["mig"], ["vgpu"], ["mig", "vgpu"]])
    if taint:
        d["taints"] = [
            {
                "key": rng.choice(["maint", "bad"]),
                "value": "true",
                "effect": rng.choice(["NoSchedule", "NoExecute", "None"]),
            }
        ]
    return d


_ALL_FEATURES = frozenset(
    {
        "counters",
        "capacity",
        "taints",
        "admin",
        "prioritized",
        "constraints",
        "all",
        "lists",
        "derived",
        "binding",
        "taint-rules",
        "shared-pools",
    }
)

# A device held by an allocated claim can be picked: (driver, pool, device name, device).
_DeviceId = tuple[str, str, str, dict[str, Any]]


def random_instance(rng: random.Random, *, features: set[str] | None = None) -> dict[str, Any]:
    """One node, a few pools, classes, maybe allocated claims, and 1-3 claims to allocate.
    `features`: subset of {"counters", "capacity", "taints", "admin", "prioritized", "constraints",
    "all", "lists"}; default all."""
    feats = features if features is not None else set(_ALL_FEATURES)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "labels": {"zone": "z1"}}}
    drivers = ["gpu.example.com", "nic.example.com"][: rng.randint(1, 2)]
    objects: list[dict[str, Any]] = [_driver_class(drv) for drv in drivers]
    device_ids: list[_DeviceId] = []
    for pi in range(rng.randint(2, 3)):
        objects.extend(_pool_slices(rng, feats, drivers, pi, device_ids))
    if "taint-rules" in feats and rng.random() < 0.3 and device_ids:
        objects.append(_taint_rule(rng, device_ids))
    # an allocated claim holding one or two devices
    if rng.random() < 0.4 and device_ids:
        objects.append(_running_claim(rng, device_ids))
    classes = [drv.split(".")[0] for drv in drivers]
    claims = [_claim(rng, feats, drivers, classes, ci) for ci in range(rng.choice([1, 1, 2, 2, 3]))]
    return {"node": node, "objects": objects, "claims": claims}


def _driver_class(drv: str) -> dict[str, Any]:
    """The DeviceClass of every device of one driver, named after the driver's first label."""
    return {
        "apiVersion": V1,
        "kind": "DeviceClass",
        "metadata": {"name": drv.split(".")[0]},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{drv}"'}}]},
    }


def _pool_slices(
    rng: random.Random, feats: set[str], drivers: list[str], pi: int, device_ids: list[_DeviceId]
) -> list[dict[str, Any]]:
    """The ResourceSlices of pool `pi` (its devices added to `device_ids`)."""
    drv = rng.choice(drivers)
    pool = f"pool-{pi}"
    use_counters = "counters" in feats and rng.random() < 0.4
    n_slices = rng.randint(1, 2)
    slices = []
    if use_counters:
        slices.append(_counter_slice(rng, drv, pool, n_slices))
    for si in range(n_slices):
        devs = _slice_devices(rng, feats, drv, pool, si, use_counters, device_ids)
        if "binding" in feats and rng.random() < 0.15:
            for d in devs:
                d["bindingConditions"] = ["example.com/attached"]
                d["bindingFailureConditions"] = ["example.com/failed"]
                d["bindsToNode"] = rng.random() < 0.5
        where = _slice_nodes(rng, feats, use_counters, pi)
        slices.append(
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": f"{pool}-s{si}"},
                "spec": dict(
                    {
                        "driver": drv,
                        "pool": {
                            "name": pool,
                            "generation": 1,
                            "resourceSliceCount": n_slices + (1 if use_counters else 0),
                        },
                        "devices": devs,
                    },
                    **where,
                ),
            }
        )
    return slices


def _counter_slice(rng: random.Random, drv: str, pool: str, n_slices: int) -> dict[str, Any]:
    """The pool's slice of two shared counter sets."""
    return {
        "apiVersion": V1,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{pool}-counters"},
        "spec": {
            "driver": drv,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": n_slices + 1},
            "nodeName": "node-1",
            "sharedCounters": [
                {"name": f"cs-{k}", "counters": {"mem": {"value": rng.choice(["6Gi", "8Gi", "12Gi"])}}}
                for k in range(2)
            ],
        },
    }


def _slice_devices(
    rng: random.Random,
    feats: set[str],
    drv: str,
    pool: str,
    si: int,
    use_counters: bool,
    device_ids: list[_DeviceId],
) -> list[dict[str, Any]]:
    """2-5 devices of slice `si` (each added to `device_ids`)."""
    devs = []
    for di in range(rng.randint(2, 5)):
        name = f"dev-{si}-{di}"
        devs.append(
            _device(
                rng,
                name,
                multi="capacity" in feats and rng.random() < 0.25,
                counter_set=f"cs-{rng.randint(0, 1)}" if use_counters else None,
                taint="taints" in feats and rng.random() < 0.2,
                list_attrs="lists" in feats,
            )
        )
        device_ids.append((drv, pool, name, devs[-1]))
    return devs


def _slice_nodes(rng: random.Random, feats: set[str], use_counters: bool, pi: int) -> dict[str, Any]:
    """Where a slice's devices are: node-1, or (the third pool of shared-pools) every node or a selector."""
    if "shared-pools" in feats and not use_counters and pi == 2:
        return rng.choice(
            [
                {"allNodes": True},
                {
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}
                        ]
                    }
                },
            ]
        )
    return {"nodeName": "node-1"}


def _taint_rule(rng: random.Random, device_ids: list[_DeviceId]) -> dict[str, Any]:
    """A DeviceTaintRule on one device, its pool, or its driver (the selector fields every
    served version has)."""
    drv, pool, name, _ = rng.choice(device_ids)
    selector = rng.choice(
        [
            {"driver": drv, "pool": pool, "device": name},
            {"driver": drv, "pool": pool},
            {"driver": drv},
        ]
    )
    return {
        "apiVersion": "resource.k8s.io/v1beta2",
        "kind": "DeviceTaintRule",
        "metadata": {"name": f"rule-{rng.randint(0, 99)}"},
        "spec": {
            "deviceSelector": selector,
            "taint": {
                "key": rng.choice(["maint", "bad"]),
                "value": "true",
                "effect": rng.choice(["NoSchedule", "NoExecute", "None"]),
            },
        },
    }


def _running_claim(rng: random.Random, device_ids: list[_DeviceId]) -> dict[str, Any]:
    """An allocated claim holding one or two of the devices."""
    held = rng.sample(device_ids, min(len(device_ids), rng.randint(1, 2)))
    results = []
    for drv, pool, name, dev in held:
        r: dict[str, Any] = {"request": "r", "driver": drv, "pool": pool, "device": name}
        if dev.get("allowMultipleAllocations"):
            r["shareID"] = "00000000-0000-0000-0000-000000000001"
            r["consumedCapacity"] = {"memory": dev["capacity"]["memory"]["value"], "bandwidth": "2G"}
        results.append(r)
    return {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {"name": "running", "namespace": "default", "uid": "u-run"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu", "count": 1}}]}},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def _claim(rng: random.Random, feats: set[str], drivers: list[str], classes: list[str], ci: int) -> dict[str, Any]:
    """Claim `ci` to allocate: 1-2 requests, maybe a constraint."""
    requests: list[dict[str, Any]] = []
    for ri in range(rng.randint(1, 2)):
        cls = rng.choice(classes)
        drv = drivers[classes.index(cls)]
        if "prioritized" in feats and rng.random() < 0.25:
            requests.append(
                {
                    "name": f"req-{ri}",
                    "firstAvailable": [
                        dict(_exact(rng, feats, cls, drv, True), name=f"alt{k}") for k in range(rng.randint(2, 3))
                    ],
                }
            )
        else:
            requests.append({"name": f"req-{ri}", "exactly": _exact(rng, feats, cls, drv, False)})
    spec: dict[str, Any] = {"requests": requests}
    _add_constraints(rng, feats, drivers, classes, spec)
    return {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {"name": f"claim-{ci}", "namespace": "default", "uid": f"uid-{ci}"},
        "spec": {"devices": spec},
    }


def _exact(rng: random.Random, feats: set[str], cls: str, drv: str, sub: bool) -> dict[str, Any]:
    """A request for devices of class `cls` (of driver `drv`); `sub`: an alternative of a prioritized list."""
    e: dict[str, Any] = {"deviceClassName": cls}
    if "all" in feats and rng.random() < 0.1:
        e["allocationMode"] = "All"
    else:
        e["allocationMode"] = "ExactCount"
        e["count"] = rng.choice([1, 1, 1, 1, 2, 3])
    if rng.random() < 0.4:
        e["selectors"] = [{"cel": {"expression": rng.choice(SELECTORS).format(d=drv)}}]
    if "taints" in feats and rng.random() < 0.3:
        e["tolerations"] = [
            rng.choice(
                [
                    {"key": "maint", "operator": "Exists"},
                    {"operator": "Exists", "effect": "NoSchedule"},
                    {"key": "bad", "operator": "Equal", "value": "true"},
                ]
            )
        ]
    if "capacity" in feats and rng.random() < 0.3:
        e["capacity"] = {"requests": {"bandwidth": rng.choice(["1G", "1500M", "3G", "6G"])}}
    if not sub and "admin" in feats and rng.random() < 0.1:
        e["adminAccess"] = True
    return e


def _add_constraints(
    rng: random.Random, feats: set[str], drivers: list[str], classes: list[str], spec: dict[str, Any]
) -> None:
    """Maybe a constraint over the claim's requests: on a derived attribute, or on a device attribute."""
    requests = spec["requests"]
    if "derived" in feats and rng.random() < 0.15:
        kind = rng.choice(["matchAttribute", "distinctAttribute"])
        for r in requests:
            target = r.get("exactly") or (r.get("firstAvailable") or [{}])[0]
            drv = drivers[classes.index(target["deviceClassName"])]
            target["derivedAttributes"] = [
                {"name": "derived/numa", "expression": f'device.attributes["{drv}"].numa % 2'}
            ]
        if all("exactly" in r for r in requests):
            spec["constraints"] = [{kind: "derived/numa"}]
        else:
            for r in requests:  # a derived attribute must be used: drop it where no constraint can
                for target in [r.get("exactly")] + list(r.get("firstAvailable") or []):
                    if target:
                        target.pop("derivedAttributes", None)
    elif "constraints" in feats and rng.random() < 0.35:
        kind = rng.choice(["matchAttribute", "distinctAttribute"])
        attr = rng.choice(["numa", "model"] + (["links"] if "lists" in feats else []))
        domain = drivers[0] if len(drivers) == 1 else "gpu.example.com"
        c: dict[str, Any] = {kind: f"{domain}/{attr}"}
        if rng.random() < 0.5:
            c["requests"] = [r["name"] for r in requests]
        spec["constraints"] = [c]


def random_placement_instance(rng: random.Random) -> list[dict[str, Any]]:
    """A small cluster with pending pods and PodGroups: nodes with GPUs (some partitioned
    through counter sets), claim templates of several sizes, priorities, gangs."""
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        }
    ]
    for n in range(rng.randint(1, 4)):
        docs.extend(_gpu_node(rng, f"node-{n}"))
    templates = []
    for t in range(3):
        templates.append(f"tpl-{t}")
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": f"tpl-{t}", "namespace": "ml"},
                "spec": {"spec": _template_spec(rng)},
            }
        )
    groups = []
    for g in range(rng.randint(0, 2)):
        groups.append((f"gang-{g}", rng.randint(2, 3)))
        docs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": f"gang-{g}", "namespace": "ml"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": groups[-1][1]}}},
            }
        )
    n_pods = rng.randint(2, 9)
    members = {name: 0 for name, _ in groups}
    for p in range(n_pods):
        docs.append(_pending_pod(rng, p, templates, groups, members))
    # A gang whose minCount exceeds its members could never be placed: keep it meaningful.
    for d in docs:
        if d["kind"] == "PodGroup":
            name = d["metadata"]["name"]
            d["spec"]["schedulingPolicy"]["gang"]["minCount"] = max(
                1, min(d["spec"]["schedulingPolicy"]["gang"]["minCount"], members[name] or 1)
            )
    return docs


def _gpu_node(rng: random.Random, node: str) -> list[dict[str, Any]]:
    """A Node and its GPUs' slices: whole GPUs, or one GPU partitioned through a counter set."""
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node, "labels": {"zone": rng.choice("ab")}},
            "status": {"allocatable": {"cpu": str(rng.choice([4, 8, 16])), "memory": "64Gi", "pods": "20"}},
        }
    ]
    partitioned = rng.random() < 0.4
    devices = []
    count = 2 if partitioned else 1
    if partitioned:
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": f"{node}-counters"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": node,
                    "pool": {"name": node, "generation": 1, "resourceSliceCount": 2},
                    "sharedCounters": [{"name": "gpu-0", "counters": {"mem": {"value": "8"}}}],
                },
            }
        )
        for name, size in rng.sample([("7g", 7), ("4g", 4), ("2g", 2), ("1g-a", 1), ("1g-b", 1), ("3g", 3)], 4):
            devices.append(
                {
                    "name": f"mig-{name}",
                    "attributes": {"size": {"int": size}, "model": {"string": "a"}},
                    "consumesCounters": [{"counterSet": "gpu-0", "counters": {"mem": {"value": str(size)}}}],
                }
            )
    else:
        for g in range(rng.randint(1, 4)):
            devices.append(
                {"name": f"gpu-{g}", "attributes": {"size": {"int": 8}, "model": {"string": rng.choice("ab")}}}
            )
    docs.append(
        {
            "apiVersion": V1,
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpus"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": count},
                "devices": devices,
            },
        }
    )
    return docs


def _template_spec(rng: random.Random) -> dict[str, Any]:
    """A claim template's spec: 1-2 GPUs, maybe of a minimum size; or two on one model; or a prioritized list."""
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "count": rng.choice([1, 1, 2])}
    if rng.random() < 0.4:
        exactly["selectors"] = [
            {"cel": {"expression": f'device.attributes["gpu.example.com"].size >= {rng.choice([1, 2, 4])}'}}
        ]
    spec: dict[str, Any] = {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}
    if rng.random() < 0.2:  # two devices on the same model (the model counts values per node)
        spec = {
            "devices": {
                "requests": [
                    {"name": "a", "exactly": {"deviceClassName": "gpu"}},
                    {"name": "b", "exactly": {"deviceClassName": "gpu"}},
                ],
                "constraints": [{"matchAttribute": "gpu.example.com/model"}],
            }
        }
    elif rng.random() < 0.15:  # a prioritized list (alternatives counted per node)
        spec = {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "firstAvailable": [
                            {
                                "name": "a",
                                "deviceClassName": "gpu",
                                "selectors": [
                                    {"cel": {"expression": 'device.attributes["gpu.example.com"].model == "a"'}}
                                ],
                            },
                            {"name": "any", "deviceClassName": "gpu"},
                        ],
                    }
                ]
            }
        }
    return spec


def _pending_pod(
    rng: random.Random, p: int, templates: list[str], groups: list[tuple[str, int]], members: dict[str, int]
) -> dict[str, Any]:
    """Pending pod `p`: maybe a claim from a template, a gang (counted in `members`), a node selector."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{p}",
            "namespace": "ml",
            "uid": f"uid-pod-{p}",
            "creationTimestamp": f"2026-11-30T10:00:{p:02d}Z",
        },
        "spec": {
            "priority": rng.choice([0, 0, 10, 100]),
            "containers": [{"name": "c", "resources": {"requests": {"cpu": str(rng.choice([1, 2, 4]))}}}],
        },
    }
    if rng.random() < 0.85:
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": rng.choice(templates)}]
    if groups and rng.random() < 0.5:
        name = rng.choice(groups)[0]
        pod["spec"]["schedulingGroup"] = {"podGroupName": name}
        members[name] += 1
    if rng.random() < 0.15:
        pod["spec"]["nodeSelector"] = {"zone": rng.choice("ab")}
    return pod
