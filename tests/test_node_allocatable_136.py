"""DRANodeAllocatableResources as Kubernetes 1.36 has it (draopt.kube.releases, node-allocatable-1.37):
its field nodeAllocatableResourceMappings written back for a 1.36 oracle, and DynamicResources 1.36's
accounting (the claims allocated in the pod's cycle, mappings only, a claim no container lists
rejects the node). The oracle's answers on the same inputs: tests/test_crosscheck_pinned.py."""

from __future__ import annotations

from pathlib import Path

from draopt.crosscheck.scheduler_oracle import oracle_objects
from draopt.kube.features import Features
from draopt.kube.loader import load_files, node_allocatable_136, node_allocatable_as_136
from draopt.placement import place

DATA = Path(__file__).resolve().parent / "data" / "crosscheck"
GATE = {"DRANodeAllocatableResources": True}


def _slice(devices: list[dict]) -> dict:
    return {"kind": "ResourceSlice", "spec": {"driver": "d", "devices": devices}}


def test_136_field_written_back_from_137_shape():
    """Mappings go back to capacityKey/allocationMultiplier; an overhead (1.36 has none) goes, and a
    device left with no mapping loses the field; devices without it are untouched."""
    doc = _slice(
        [
            {
                "name": "a",
                "nodeAllocatableResourceMappings": {"cpu": {"capacityKey": "k", "allocationMultiplier": "2"}},
            },
            {"name": "b", "nodeAllocatableResourceMappings": {"memory": {"allocationMultiplier": "2Gi"}}},
            {"name": "c"},
        ]
    )
    assert node_allocatable_as_136(node_allocatable_136(doc, "s")) == doc
    overhead = _slice(
        [
            {"name": "o", "nodeAllocatableResources": {"memory": {"overhead": {"perPod": "1Gi"}}}},
            {
                "name": "m",
                "nodeAllocatableResources": {
                    "cpu": {"mapping": {"deviceMultiplier": "2"}, "overhead": {"perPod": "1"}},
                    "memory": {"overhead": {"perContainer": "1Gi"}},
                },
            },
        ]
    )
    assert node_allocatable_as_136(overhead)["spec"]["devices"] == [
        {"name": "o"},
        {"name": "m", "nodeAllocatableResourceMappings": {"cpu": {"allocationMultiplier": "2"}}},
    ]


def _device(minor: str) -> dict:
    objects = load_files([str(DATA / "node-allocatable-136.yaml")])
    (s,) = [d for d in oracle_objects(objects, Features.from_gates(GATE, minor)) if d["kind"] == "ResourceSlice"]
    return s["spec"]["devices"][0]


def test_oracle_gets_the_releases_field():
    assert _device("1.36") == {
        "name": "gpu-0",
        "nodeAllocatableResourceMappings": {"cpu": {"allocationMultiplier": "2"}},
    }
    assert _device("1.37") == {
        "name": "gpu-0",
        "nodeAllocatableResources": {"cpu": {"mapping": {"deviceMultiplier": "2"}}},
    }


def _placed(name: str, minor: str) -> tuple[str | None, str]:
    result = place(load_files([str(DATA / name)]), features=Features.from_gates(GATE, minor))
    ((pod),) = result.result.pods
    return (pod.node if pod.placed else None, "; ".join(pod.reasons))


def test_a_claim_no_container_lists_rejects_the_node_on_136_only():
    node, reason = _placed("node-allocatable-136-unlisted.yaml", "1.36")
    assert node is None
    assert (
        "claim unlisted-gpu: node-allocatable resource claim not referenced by any container within the pod" in reason
    )
    assert _placed("node-allocatable-136-unlisted.yaml", "1.37") == ("n1", "")


def test_the_devices_cpu_counts_on_both_releases():
    for minor in ("1.36", "1.37"):
        node, reason = _placed("node-allocatable-136.yaml", minor)
        assert node is None and "Insufficient cpu" in reason, minor
