"""first-fit reproduces the allocator of the release asked for (Features.kubernetes_version) where
the allocator's behaviour changed between releases (draopt.kube.releases: counter-leak,
distinct-last-only, all-mode-static-capacity). Each scenario is the minimal one of
docs/differences.md ("Fixed"), where tests/test_crosscheck_allocator.py compares it with the
real allocator of 1.36 and 1.37 (when Go is there); here it runs without Go, through both
engines (the CP-SAT model and the plain reference search), and for 1.35 too, whose allocator
(k8s.io/dynamic-resource-allocation v0.35.0) still leaks counters."""

from __future__ import annotations

import contextlib
import dataclasses
import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from draopt.allocation.allocate import allocate
from draopt.crosscheck.allocator_oracle import _objects_of, with_api_defaults
from draopt.kube.features import DEFAULT_GATES, Features

V1 = "resource.k8s.io/v1"
GPU_CLASS = {
    "apiVersion": V1,
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}
ENGINES = ("cp-sat", "reference")


def _slice(name: str, pool: str, devices: list[dict[str, Any]], count: int = 1, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": "gpu.example.com",
        "nodeName": "node-1",
        "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
        **spec,
    }
    if devices:
        body["devices"] = devices
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": body}


def _claim(name: str, requests: list[dict[str, Any]], **devices: Any) -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": requests, **devices}},
    }


def _scenario(gates_on: list[str], objects: list[dict[str, Any]], claims: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": "release-behaviour",
        "gates": {g: g in gates_on for g in DEFAULT_GATES},
        "node": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"}},
        "objects": objects,
        "claims": [with_api_defaults(c) for c in claims],
    }


def _allocate(scenario: dict[str, Any], version: str, engine: str) -> dict[str, list[str]] | None:
    """{claim: ["request=device", ...]} or None (unschedulable), as `version` allocates."""
    features = dataclasses.replace(Features.from_gates(dict(scenario["gates"])), kubernetes_version=version)
    refs = [f"default/{c['metadata']['name']}" for c in scenario["claims"]]
    with contextlib.redirect_stderr(io.StringIO()):
        out = allocate(_objects_of(scenario), node="node-1", claims=refs, features=features, engine=engine)
    if out.results is None:
        return None
    return {
        claim.name: [f"{r.request}={r.device}" for r in result.devices.results]
        for claim, result in zip(out.claims, out.results)
    }


def _uses(mem: str) -> list[dict[str, Any]]:
    return [{"counterSet": "cs", "counters": {"mem": {"value": mem}}}]


def _counter_constraint_scenario() -> dict[str, Any]:
    """Pool p0: counter set cs of 6Gi, d1 (numa 0, no model) takes 6Gi, d2 (model a) 4Gi; pool p1:
    d0 (model a); two requests of one device under matchAttribute model. Trying d1 for r0 takes
    its 6Gi before the constraint refuses it."""
    counters = _slice("counters", "p0", [], 2, sharedCounters=[{"name": "cs", "counters": {"mem": {"value": "6Gi"}}}])
    devices = _slice(
        "devices",
        "p0",
        [
            {"name": "d1", "attributes": {"numa": {"int": 0}}, "consumesCounters": _uses("6Gi")},
            {"name": "d2", "attributes": {"model": {"string": "a"}}, "consumesCounters": _uses("4Gi")},
        ],
        2,
    )
    other = _slice("other", "p1", [{"name": "d0", "attributes": {"model": {"string": "a"}}}])
    claim = _claim(
        "claim-0",
        [{"name": n, "exactly": {"deviceClassName": "gpu"}} for n in ("r0", "r1")],
        constraints=[{"matchAttribute": "gpu.example.com/model"}],
    )
    gates = ["DRAPartitionableDevices", "DRAConsumableCapacity"]
    return _scenario(gates, [GPU_CLASS, counters, devices, other], [claim])


def _shared_counter_device_scenario() -> dict[str, Any]:
    """A shared device d0 (6Gi of an 8Gi counter set) that claim-0's first subrequest takes and
    gives back when claim-1 does not fit; claim-0's second subrequest then takes d0."""
    counters = _slice("counters", "p", [], 2, sharedCounters=[{"name": "cs", "counters": {"mem": {"value": "8Gi"}}}])
    bandwidth = {"value": "10G", "requestPolicy": {"default": "2G", "validValues": ["1G", "2G", "5G"]}}
    shared = {
        "name": "d0",
        "attributes": {"model": {"string": "a"}},
        "capacity": {"memory": {"value": "2Gi"}, "bandwidth": bandwidth},
        "allowMultipleAllocations": True,
        "consumesCounters": _uses("6Gi"),
    }
    plain = [
        {"name": "d1", "attributes": {"model": {"string": "a"}}},
        {"name": "d3", "attributes": {"model": {"string": "c"}}},
    ]
    devices = _slice("devices", "p", [shared, *plain], 2)
    model_a = [{"cel": {"expression": 'device.attributes["gpu.example.com"].model == "a"'}}]
    first = _claim(
        "claim-0",
        [
            {
                "name": "r",
                "firstAvailable": [
                    {"name": "alt1", "deviceClassName": "gpu", "count": 2, "selectors": model_a},
                    {"name": "alt2", "deviceClassName": "gpu", "capacity": {"requests": {"bandwidth": "3G"}}},
                ],
            }
        ],
    )
    second = _claim("claim-1", [{"name": n, "exactly": {"deviceClassName": "gpu"}} for n in ("r0", "r1")])
    gates = ["DRAConsumableCapacity", "DRAPartitionableDevices", "DRAPrioritizedList"]
    return _scenario(gates, [GPU_CLASS, counters, devices], [first, second])


@pytest.mark.parametrize("engine", ENGINES)
def test_counter_leak_only_on_135(engine):
    scenario = _counter_constraint_scenario()
    assert _allocate(scenario, "1.35", engine) is None
    for version in ("1.36", "1.37"):
        assert _allocate(scenario, version, engine) == {"claim-0": ["r0=d2", "r1=d0"]}


@pytest.mark.parametrize("engine", ENGINES)
def test_shared_counter_device_given_back_from_136(engine):
    scenario = _shared_counter_device_scenario()
    assert _allocate(scenario, "1.35", engine) is None
    for version in ("1.36", "1.37"):
        got = _allocate(scenario, version, engine)
        assert got is not None and got["claim-0"] == ["r/alt2=d0"]


@pytest.mark.parametrize("engine", ENGINES)
def test_distinct_attribute_over_every_device_from_137(engine):
    """Devices of numa 0, 2, 2, 1; requests a and b of two devices each under distinctAttribute
    numa: up to 1.36 one value per request name is kept (numa 2 twice), 1.37 finds no four
    distinct values."""
    devices = [{"name": f"d{i}", "attributes": {"numa": {"int": v}}} for i, v in enumerate([0, 2, 2, 1])]
    claim = _claim(
        "claim-0",
        [{"name": n, "exactly": {"deviceClassName": "gpu", "count": 2}} for n in ("a", "b")],
        constraints=[{"distinctAttribute": "gpu.example.com/numa"}],
    )
    scenario = _scenario(["DRAConsumableCapacity"], [GPU_CLASS, _slice("s", "p", devices)], [claim])
    for version in ("1.35", "1.36"):
        assert _allocate(scenario, version, engine) == {"claim-0": ["a=d1", "a=d3", "b=d0", "b=d2"]}
    assert _allocate(scenario, "1.37", engine) is None


def _all_mode_shared_device_scenario() -> dict[str, Any]:
    shared = {"name": "s", "allowMultipleAllocations": True, "capacity": {"memory": {"value": "2Gi"}}}
    held = {
        "request": "r",
        "driver": "gpu.example.com",
        "pool": "p",
        "device": "s",
        "shareID": "00000000-0000-0000-0000-000000000001",
        "consumedCapacity": {"memory": "2Gi"},
    }
    in_use = _claim("running", [{"name": "r", "exactly": {"deviceClassName": "gpu"}}])
    in_use["status"] = {"allocation": {"devices": {"results": [held]}}}
    claim = _claim("claim-0", [{"name": "r", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}])
    objects = [GPU_CLASS, _slice("s", "p", [shared, {"name": "d"}]), in_use]
    return _scenario(["DRAConsumableCapacity"], objects, [claim])


@pytest.mark.parametrize("engine", ENGINES)
def test_all_mode_keeps_a_full_shared_device_from_137(engine):
    """allocationMode All, a shared device whose capacity an in-use claim holds, and a device d:
    up to 1.36 All leaves the full device out and takes d; 1.37 keeps it among all devices, and
    the request fails."""
    scenario = _all_mode_shared_device_scenario()
    for version in ("1.35", "1.36"):
        assert _allocate(scenario, version, engine) == {"claim-0": ["r=d"]}
    assert _allocate(scenario, "1.37", engine) is None


TRANSCRIBED = (
    Path(__file__).parent
    / "conformance/extra2/k8s-y-consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient.yaml"
)


@pytest.mark.parametrize("engine", ENGINES)
def test_transcribed_all_mode_case_on_136(engine):
    """The transcribed case expects 1.37's answer (unschedulable, as tests/test_conformance.py
    checks with the default release); 1.36's table expected device-2 alone."""
    case = yaml.safe_load(TRANSCRIBED.read_text())
    scenario = _scenario(["DRAConsumableCapacity"], case["objects"], case["claims"])
    assert _allocate(scenario, "1.36", engine) == {"claim-0": ["req-0=device-2"]}
    assert _allocate(scenario, "1.37", engine) is None
