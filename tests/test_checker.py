"""The solver-independent checker accepts valid allocations and rejects hand-made wrong ones."""

from __future__ import annotations

import copy


from draopt.dra.checker import check
from draopt.kube.features import Features
from draopt.kube.models import AllocationResult

from helpers import decoded, problem_from, run_cpsat

V1 = "resource.k8s.io/v1"


def instance(claims, devices=None, counters=None, allocated=None):
    devices = devices or [
        {"name": f"gpu-{i}", "attributes": {"numa": {"int": i // 2}}, "capacity": {"memory": {"value": "8Gi"}}}
        for i in range(4)
    ]
    objects = [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        }
    ]
    count = 2 if counters else 1
    if counters:
        objects.append(
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": "counters"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": "node-1",
                    "pool": {"name": "p", "generation": 1, "resourceSliceCount": count},
                    "sharedCounters": counters,
                },
            }
        )
    objects.append(
        {
            "apiVersion": V1,
            "kind": "ResourceSlice",
            "metadata": {"name": "devices"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "node-1",
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": count},
                "devices": devices,
            },
        }
    )
    if allocated:
        objects.append(
            {
                "apiVersion": V1,
                "kind": "ResourceClaim",
                "metadata": {"name": "old", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
                "status": {
                    "allocation": {
                        "devices": {
                            "results": [
                                {"request": "r", "driver": "gpu.example.com", "pool": "p", "device": d}
                                for d in allocated
                            ]
                        }
                    }
                },
            }
        )
    return {
        "node": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        "objects": objects,
        "claims": [
            {
                "apiVersion": V1,
                "kind": "ResourceClaim",
                "metadata": {"name": f"c{i}", "namespace": "default"},
                "spec": {"devices": c},
            }
            for i, c in enumerate(claims)
        ],
    }


def req(name="r", count=1, **extra):
    return {"name": name, "exactly": dict({"deviceClassName": "gpu", "count": count}, **extra)}


def solved(inst, features=None):
    p = problem_from(inst, features or Features.all_enabled())
    status, _, chosen, selected = run_cpsat(p, "first-fit-documented")
    assert chosen is not None
    return p, decoded(p, chosen, selected)


def set_devices(result: AllocationResult, names):
    r = copy.deepcopy(result)
    for item, name in zip(r.devices.results, names):
        item.device = name
    return r


def test_valid_allocation_accepted():
    p, res = solved(instance([{"requests": [req(count=2)]}, {"requests": [req()]}]))
    assert check(p, res) == []


def test_device_given_to_two_claims():
    p, res = solved(instance([{"requests": [req()]}, {"requests": [req()]}]))
    bad = [res[0], set_devices(res[1], [res[0].devices.results[0].device])]
    assert any("allocated to 2 requests" in e for e in check(p, bad))


def test_device_in_use_by_allocated_claim():
    p, res = solved(instance([{"requests": [req()]}], allocated=["gpu-0"]))
    assert any("in use" in e for e in check(p, [set_devices(res[0], ["gpu-0"])]))


def test_wrong_count_and_unknown_device():
    p, res = solved(instance([{"requests": [req(count=2)]}]))
    short = copy.deepcopy(res[0])
    short.devices.results.pop()
    assert any("1 devices, 2 requested" in e for e in check(p, [short]))
    assert any("not a device" in e for e in check(p, [set_devices(res[0], ["gpu-9", "gpu-1"])]))


def test_selector_mismatch():
    sel = [{"cel": {"expression": 'device.attributes["gpu.example.com"].numa == 1'}}]
    p, res = solved(instance([{"requests": [req(selectors=sel)]}]))
    assert res[0].devices.results[0].device == "gpu-2"
    assert any("selectors" in e for e in check(p, [set_devices(res[0], ["gpu-0"])]))


def test_match_and_distinct_violations():
    match = {"requests": [req(count=2)], "constraints": [{"matchAttribute": "gpu.example.com/numa"}]}
    p, res = solved(instance([match]))
    assert any("no common value" in e for e in check(p, [set_devices(res[0], ["gpu-1", "gpu-2"])]))
    distinct = {"requests": [req(count=2)], "constraints": [{"distinctAttribute": "gpu.example.com/numa"}]}
    p, res = solved(instance([distinct]))
    assert [r.device for r in res[0].devices.results] == ["gpu-0", "gpu-2"]
    assert any("share a value" in e for e in check(p, [set_devices(res[0], ["gpu-0", "gpu-1"])]))


def test_counter_overuse():
    devices = [
        {"name": f"part-{i}", "consumesCounters": [{"counterSet": "gpu-0", "counters": {"mem": {"value": "6Gi"}}}]}
        for i in range(2)
    ]
    counters = [{"name": "gpu-0", "counters": {"mem": {"value": "8Gi"}}}]
    p, res = solved(instance([{"requests": [req()]}], devices=devices, counters=counters))
    two = copy.deepcopy(res[0])
    two.devices.results.append(copy.deepcopy(two.devices.results[0]))
    two.devices.results[1].device = "part-1"
    errors = check(p, [two])
    assert any("counter gpu-0/mem over-used" in e for e in errors)


def test_untolerated_taint():
    devices = [{"name": "gpu-0", "taints": [{"key": "maint", "effect": "NoSchedule"}]}, {"name": "gpu-1"}]
    p, res = solved(instance([{"requests": [req()]}], devices=devices))
    assert res[0].devices.results[0].device == "gpu-1"
    assert any("taint" in e for e in check(p, [set_devices(res[0], ["gpu-0"])]))


def test_missing_node_selector():
    p, res = solved(instance([{"requests": [req()]}]))
    r = copy.deepcopy(res[0])
    r.node_selector = None
    assert any("nodeSelector" in e for e in check(p, [r]))


def test_capacity_overuse():
    devices = [{"name": "nic-0", "allowMultipleAllocations": True, "capacity": {"bw": {"value": "10G"}}}]
    p, res = solved(
        instance(
            [
                {"requests": [req(capacity={"requests": {"bw": "6G"}})]},
                {"requests": [req(capacity={"requests": {"bw": "4G"}})]},
            ],
            devices=devices,
        )
    )
    assert check(p, res) == []
    bad = copy.deepcopy(res)
    bad[1].devices.results[0].consumed_capacity = {"bw": "6G"}
    assert any("consumedCapacity" in e for e in check(p, bad))
