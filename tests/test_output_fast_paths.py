"""The fast paths of decoding and of writing output objects give what pydantic gives: decode's
models built from typed values have the constructors' state, and output_objects' dumps are
to_k8s() (same dicts, same key order, no dict shared between objects)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import draopt.dra.decode as decode_module
import draopt.placement as placement
from draopt.kube.features import Features
from draopt.kube.loader import load_files
from draopt.kube.models import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    DeviceToleration,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from draopt.kube.models.resource import OpaqueDeviceConfiguration

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(str(p) for p in (ROOT / "examples").glob("*.yaml"))
STATE = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")


def model_state(x):
    if hasattr(x, "__pydantic_fields_set__"):
        return (type(x), [(k, model_state(v)) for k, v in x.__dict__.items()], *(getattr(x, k) for k in STATE[1:]))
    if isinstance(x, list):
        return [model_state(v) for v in x]
    return x


def test_decode_builds_models_without_validating_them_again():
    assert decode_module._trusted is decode_module._trusted_fast


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: Path(p).stem)
def test_decoded_allocations_are_what_the_constructors_make(path, monkeypatch):
    objs = load_files([path])
    fast = placement.place(objs, policy="first-fit", features=Features.from_gates())
    monkeypatch.setattr(decode_module, "_trusted", decode_module._trusted_validated)
    slow = placement.place(objs, policy="first-fit", features=Features.from_gates())
    for key in fast.result.claims:
        assert model_state(fast.result.claims[key][0]) == model_state(slow.result.claims[key][0])
    assert json.dumps(fast.objects) == json.dumps(slow.objects)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: Path(p).stem)
def test_output_objects_are_pydantic_dumps(path, monkeypatch):
    out = placement.place(load_files([path]), policy="first-fit", features=Features.from_gates())
    fast = placement.output_objects(out.result, out.workload)
    monkeypatch.setattr(placement._Dumps, "claim", lambda self, c: c.to_k8s())
    monkeypatch.setattr(placement._Dumps, "allocation", lambda self, a: a.to_k8s())
    slow = placement.output_objects(out.result, out.workload)
    assert json.dumps(fast) == json.dumps(slow)  # key order included


def _allocations():
    selector = NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(match_fields=[NodeSelectorRequirement(key="metadata.name", operator="In", values=["n"])])
        ]
    )
    result = DeviceRequestAllocationResult(request="r", driver="d", pool="p", device="x")
    rich = DeviceRequestAllocationResult(
        request="r",
        driver="d",
        pool="p",
        device="y",
        admin_access=True,
        tolerations=[DeviceToleration(key="k", operator="Exists")],
        binding_conditions=["ready"],
    )
    rich.share_id = "id"  # assigned, as decode does
    rich.consumed_capacity = {"memory": "1Gi"}
    config = DeviceAllocationConfiguration(
        source="FromClaim", requests=None, opaque=OpaqueDeviceConfiguration(driver="d", parameters={"a": [1, 2.5]})
    )
    odd = DeviceRequestAllocationResult(request="r", driver="d", pool="p", device="z", unknownField={"k": 1})
    return [
        AllocationResult(devices=DeviceAllocationResult(results=[result])),
        AllocationResult(
            devices=DeviceAllocationResult(results=[result, rich], config=[config]), node_selector=selector
        ),
        AllocationResult(devices=DeviceAllocationResult(results=[odd]), allocation_timestamp="2026-01-01T00:00:00Z"),
        AllocationResult(devices=DeviceAllocationResult(results=[]), node_selector=selector, extraField=1),
        AllocationResult(),
    ]


def test_allocation_dumps_fast_or_not_are_to_k8s():
    dumps = placement._Dumps()
    written = []
    for allocation in _allocations() * 2:  # twice: the shared selector's dump is copied
        d = dumps.allocation(allocation)
        assert json.dumps(d) == json.dumps(allocation.to_k8s())
        written.append(d)
    assert written[1]["nodeSelector"] is not written[6]["nodeSelector"]
