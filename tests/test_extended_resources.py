"""DRA-backed extended resources served node by node (issue 31, item 3): by the node's device
plugin where its status.allocatable lists the resource above 0, by DRA elsewhere
(k8s.io/kubernetes pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go,
filterExtendedResources; pkg/scheduler/framework/plugins/noderesources/fit.go,
shouldDelegateResourceToDRA). The first-fit answers on this input are the scheduler oracle's
(tests/test_crosscheck_pinned.py::test_fixed_extended_resources_device_plugin); here the other
policies, the checker and the per-node view itself."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from draopt.cluster.check import check_placement
from draopt.errors import InputError
from draopt.kube.extended_resources import EXTENDED_CLAIM_USE, on_node
from draopt.kube.features import Features
from draopt.kube.loader import load_files
from draopt.kube.workload import expand
from draopt.placement import place
from draopt.studies.node_types import NodeType
from draopt.studies.planning import plan

MIXED = Path(__file__).resolve().parent / "data" / "crosscheck" / "extended-mixed.yaml"
GPU = "nvidia.com/gpu"


def _mixed():
    return load_files([str(MIXED)])


def _pending(name: str):
    workload = expand(_mixed(), Features.from_gates())
    return next(d for d in workload.pending if d.key == f"default/{name}")


def test_view_on_a_device_plugin_node_counts_the_request_and_drops_the_claim():
    a = _pending("a")
    assert a.extended_resources == {GPU: 1} and GPU not in a.resources
    served = on_node(a, {"cpu": Fraction(8), GPU: Fraction(2)})
    assert served.resources[GPU] == 1
    assert all(u.name != EXTENDED_CLAIM_USE for u in served.claims)
    assert served is on_node(a, {GPU: Fraction(1)})  # one view per set of served names
    # no device plugin (missing or 0): DRA serves it, the pod as it is
    assert on_node(a, {"cpu": Fraction(8)}) is a
    assert on_node(a, {GPU: Fraction(0)}) is a


def test_the_implicit_class_name_is_served_by_dra_on_a_device_plugin_node():
    e = _pending("e")  # deviceclass.resource.kubernetes.io/gpu.nvidia.com
    assert on_node(e, {GPU: Fraction(2)}) is e


BOTH = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: nic}
spec: {selectors: [{cel: {expression: 'device.driver == "nic.example.com"'}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: both, namespace: default}
spec:
  containers:
  - {name: c, image: x, resources: {limits: {nvidia.com/gpu: "1", deviceclass.resource.kubernetes.io/nic: "1"}}}
"""


def test_a_pod_served_partly_by_each_is_an_error(tmp_path):
    extra = tmp_path / "both.yaml"
    extra.write_text(BOTH)
    objs = load_files([str(MIXED), str(extra)])
    both = next(d for d in expand(objs, Features.from_gates()).pending if d.key == "default/both")
    with pytest.raises(InputError, match="default/both.*device plugin.*DRA"):
        on_node(both, {GPU: Fraction(2)})
    assert on_node(both, {"cpu": Fraction(8)}) is both  # DRA serves both: modelled


def test_optimal_uses_both_kinds_of_node():
    """Device-plugin GPUs: dp-1's 2 (dp-2's held); DRA GPUs: dra-1's 2. a, b, c ask 1 either
    way, d 2, e 1 from DRA only: at most 4 pods of 5 (6 units asked, 4 there)."""
    out = place(_mixed(), policy="optimal", time_limit=10)
    nodes = {p.pod: p.node for p in out.result.pods}
    assert sum(1 for n in nodes.values() if n) == 4
    assert nodes["default/e"] == "dra-1"
    on_dp = [p for p, n in nodes.items() if n in ("dp-1", "dp-2")]
    assert on_dp and all(n != "dp-2" for n in nodes.values())
    for pod in on_dp:  # no claim allocated for what the device plugin serves
        assert f"{pod}-extended-resources" not in out.result.claims
    for pod, n in nodes.items():
        if n == "dra-1":
            assert out.result.claims[f"{pod}-extended-resources"][1] == "dra-1"
    assert check_placement(out) == []


def test_first_fit_is_checked_clean_and_the_checker_sees_the_device_plugin():
    out = place(_mixed(), policy="first-fit", tie_break="name")
    assert check_placement(out) == []
    placed = [p for p in out.result.pods if p.node in ("dp-1", "dp-2")]
    assert placed
    # a third GPU on dp-1 (allocatable 2): over-committed, as NodeResourcesFit counts it
    for p in out.result.pods:
        if p.node is None and p.pod != "default/e":
            p.node = "dp-1"
    moved = [p for p in out.result.pods if p.node == "dp-1"]
    assert len(moved) >= 3
    assert any(f"node dp-1: {GPU} over-committed" in e for e in check_placement(out))


def test_the_checker_rejects_a_claim_where_the_device_plugin_serves():
    out = place(_mixed(), policy="first-fit", tie_break="name")
    on_dra = next(p for p in out.result.pods if p.node == "dra-1" and p.pod != "default/e")
    on_dra.node = "dp-1"  # its claim stays allocated on dra-1
    errors = check_placement(out)
    assert any(f"claim {on_dra.pod}-extended-resources is allocated but node dp-1's device plugin" in e for e in errors)


def test_plan_buys_device_plugin_nodes():
    """Only dp-1 copies on offer: one more (2 device-plugin GPUs) places all 5 pods (e on
    dra-1's second GPU), which it could not if every request went to DRA."""
    mix = plan(_mixed(), [NodeType("dp", "dp-1", Fraction(1))], time_limit=20)
    assert (mix.mix, mix.placed, mix.pods) == ({"dp": 1}, 5, 5)


INIT = Path(__file__).resolve().parent / "data" / "crosscheck" / "extended-init-containers.yaml"


def _claim_counts(name: str) -> dict[str, int]:
    workload = expand(load_files([str(INIT)]), Features.from_gates())
    claim = workload.claims[f"default/{name}-extended-resources"]
    return {r.name: r.exactly.count for r in claim.spec.devices.requests}


@pytest.mark.parametrize(
    "pod, counts",
    [
        # i1 (2) reuses c's request (1) and asks 1 more; i2 (1) reuses c's
        ("a", {"container-0-request-0": 1, "container-2-request-0": 1}),
        ("b", {"container-1-request-0": 1}),  # i1 reuses c's whole
        # i1 (2) reuses the sidecar's (1, index 1 >= 0); the sidecar has its own
        ("c", {"container-0-request-0": 1, "container-1-request-0": 1}),
        # the sidecar before i has its own; i (index 1) reuses c's (index 2)
        ("d", {"container-0-request-0": 1, "container-2-request-0": 1}),
    ],
)
def test_init_containers_reuse_long_lived_requests(pod, counts):
    """extendeddynamicresources.go createRequestsAndMappings / createResourceRequestAndMappings:
    a non-sidecar init container reuses the requests of long-lived containers at its index and
    after; only the largest remainder of the init containers is asked for. (The oracle agrees on
    the placements: test_crosscheck_pinned.py::test_fixed_extended_resources_of_init_containers.)"""
    assert _claim_counts(pod) == counts


def test_largest_init_remainder_is_kept():
    from draopt.kube.extended_resources import claim_requests

    got = claim_requests(
        [({GPU: 3}, False), ({GPU: 2, "cpu": 0}, False), ({GPU: 1}, True)], {GPU: "gpu.nvidia.com"}, [GPU]
    )
    # remainders 3 - 1 = 2 and 2 - 1 = 1: the first, larger, is kept; the second's name sorts
    # its resource after cpu (index 1), but it is dropped
    assert [(r["name"], r["exactly"]["count"]) for r in got] == [
        ("container-0-request-0", 2),
        ("container-2-request-0", 1),
    ]


def test_the_arrival_simulation_refuses_pods_served_both_ways(tmp_path):
    """draopt simulate gives a pod one shape on every node: a pod the device plugin serves on one
    node and DRA on another is refused, with the pod and node named."""
    from draopt.studies.simulate import build

    text = MIXED.read_text()
    # (the simulation starts from an empty cluster: the running pod goes)
    docs = [d for d in text.split("\n---\n") if "name: holder" not in d]
    path = tmp_path / "mixed.yaml"
    path.write_text("\n---\n".join(docs))
    with pytest.raises(InputError, match="Pod default/a: .*node dp-1's device plugin.*not simulated"):
        build(load_files([str(path)]))


def test_a_pod_kube_scheduler_cannot_bind_is_noted():
    """extendeddynamicresources.go patchPodExtendedResourceClaimStatus: a pod with claims of its own
    on a node whose device plugin serves all its extended resources fails PreBind (pinned against
    the oracle: test_crosscheck_pinned.py::test_open_extended_resources_prebind). draopt says so."""
    out = place(load_files([str(Path(__file__).resolve().parent / "data" / "crosscheck" / "extended-prebind.yaml")]))
    (note,) = [n for n in out.notes if "PreBind" in n]
    assert note.startswith("Pod default/a-user-and-ext: ") and "node both-1's device plugin" in note
    assert not any("b-zero" in n or "c-other" in n for n in out.notes)
