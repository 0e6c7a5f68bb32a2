"""Round-2 real-world inputs from `../shared/realworld/round2/` (see its README: each file's source
and what Kubernetes does with it). Each test cites the file it reads and the Kubernetes code the
answer comes from; skipped when the directory is missing."""
from __future__ import annotations

from pathlib import Path

import pytest

from draopt.features import Features
from draopt.loader import load_files
from draopt.placement import place

ROOT = Path(__file__).resolve().parents[1]
ROUND2 = ROOT.parent / "shared" / "realworld" / "round2"
NODE_ALLOCATABLE = Features.from_gates({"DRANodeAllocatableResources": True})


def r2(*names: str) -> list[str]:
    paths = [ROUND2 / n for n in names]
    for p in paths:
        if not p.exists():
            pytest.skip(f"{p} not available")
    return [str(p) for p in paths]


def placed(names: list[str], features: Features = NODE_ALLOCATABLE, **kw) -> dict[str, tuple[str | None, str]]:
    objects = load_files(names)
    result = place(objects, features=features, **kw)
    return {p.pod: (p.node if p.placed else None, "; ".join(p.reasons)) for p in result.result.pods}


# ---------------------------------------------------------------- KEP-5517 node-allocatable resources
def test_pod_level_requests_are_the_whole_footprint():
    """b05-cpu-pod-level-resources-16.yaml (dra-driver-cpu pod_with_pod_level_resources): pod-level cpu 16
    with 14 CPUs claimed through a mapping, 26 free: the pod-level 16 is the footprint, nothing on top
    (kube-scheduler DynamicResources getPodNodeAllocatableResourceFootprint, PodRequests with pod level)."""
    got = placed(r2("b05-cpu-pod-level-resources-16.yaml"))
    assert got == {"default/pod-with-pod-level-resources": ("dra-driver-cpu-worker", "")}


def test_pod_level_requests_below_the_mapped_claims_are_rejected():
    """b05b-cpu-pod-level-resources-12.yaml: pod-level cpu 12 < 10 + 4 mapped CPUs: rejected
    (validatePodLevelResourcesCoverDRA)."""
    (node, reason), = placed(r2("b05b-cpu-pod-level-resources-12.yaml")).values()
    assert node is None
    assert "pod level request for cpu is insufficient to cover the aggregated container and " \
           "node-allocatable DRA requests" in reason


def test_a_mapped_claim_is_not_shared_across_pods():
    """b06-cpu-mapped-claim-shared.yaml (+ b03 cluster): two pods reference one claim whose device has
    a mapping: the second is rejected (validateNodeAllocatableDRAClaimSharing)."""
    got = placed(r2("b03-cpu-grouped-mapping-cluster.yaml", "b06-cpu-mapped-claim-shared.yaml"))
    assert got["default/consumer-a"] == ("dra-driver-cpu-worker", "")
    node, reason = got["default/consumer-b"]
    assert node is None
    assert "node allocatable resource claim shared-cpus-4 has a mapped device and cannot be shared across pods" in reason
