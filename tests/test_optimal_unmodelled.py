"""The optimal model never breaks a rule it does not encode: on inputs whose pods use one
(required inter-pod affinity, DoNotSchedule topology spread, KEP-5517 pod-level resources or a
shared claim next to node-allocatable devices), `place --policy optimal` returns the scheduler
profile's first-fit placement with status UNKNOWN and a message naming the rule and the pod.

Shapes: ../shared/realworld/round2/ (README there): g01 (JobSet exclusive-topology, turned into
required pod affinity by JobSet's pod_mutating_webhook.go), g02 (LWS SetExclusiveAffinities),
b05b (dra-driver-cpu pod_with_pod_level_resources, validatePodLevelResourcesCoverDRA), b06
(validateNodeAllocatableDRAClaimSharing). Before, optimal placed 6 of 6 on g01/g02 (Kubernetes: 4),
placed b05b's pod and both b06 pods, each reported OPTIMAL."""

from __future__ import annotations

from pathlib import Path

import pytest

from draopt.kube.features import Features
from draopt.kube.loader import load_files
from draopt.placement import place

ROUND2 = Path(__file__).resolve().parents[2] / "shared" / "realworld" / "round2"
NODE_ALLOCATABLE = Features.from_gates({"DRANodeAllocatableResources": True})


def files(*names: str) -> list[str]:
    paths = [ROUND2 / n for n in names]
    if not all(p.exists() for p in paths):
        pytest.skip(f"{ROUND2} not available")
    return [str(p) for p in paths]


@pytest.mark.parametrize(
    "names, features, rule",
    [
        (("g01-gke-a3-2pools-cluster.yaml", "g01-jobset-exclusive.yaml"), None, "required inter-pod affinity"),
        (("g01-gke-a3-2pools-cluster.yaml", "g02-lws-exclusive.yaml"), None, "required inter-pod affinity"),
        (("b05b-cpu-pod-level-resources-12.yaml",), NODE_ALLOCATABLE, "pod-level resources"),
        (
            ("b03-cpu-grouped-mapping-cluster.yaml", "b06-cpu-mapped-claim-shared.yaml"),
            NODE_ALLOCATABLE,
            "a claim with a mapped node-allocatable device shared by several pods",
        ),
    ],
    ids=["g01", "g02", "b05b", "b06"],
)
def test_optimal_keeps_first_fit_where_it_does_not_encode_the_rule(names, features, rule):
    objects = load_files(files(*names))
    ff = place(objects, policy="first-fit", features=features).result
    opt = place(load_files(files(*names)), policy="optimal", features=features, time_limit=10).result
    assert {p.pod: p.node for p in opt.pods} == {p.pod: p.node for p in ff.pods}
    assert opt.stats["status"] == "UNKNOWN"
    assert "does not encode " + rule in opt.stats["summary"]
    assert sum(p.placed for p in opt.pods) < len(opt.pods)  # Kubernetes leaves some pending here


def test_optimal_still_proves_inputs_without_such_rules():
    """b03 (node-allocatable mapping, no pod-level resources, no shared claim): the model encodes it."""
    names = files("b03-cpu-grouped-mapping-cluster.yaml", "b03-cpu-node-allocatable-pods.yaml")
    opt = place(load_files(names), policy="optimal", features=NODE_ALLOCATABLE, time_limit=10).result
    assert opt.stats["status"] == "OPTIMAL"
