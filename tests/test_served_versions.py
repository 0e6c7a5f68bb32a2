"""Objects in an API version the chosen release does not serve (kube.admission.served_notes): the
release's API server refuses them (pkg/registry/scheduling/rest/storage_scheduling.go and
pkg/registry/resource/rest/storage_resource.go at v1.36.3 and v1.37.2: 1.36 serves PodGroup and
Workload as v1alpha2, 1.37 as v1beta1 and v1alpha3; DeviceTaintRule is resource.k8s.io/v1 from
1.37, v1beta2 and v1alpha3 in 1.36). draopt reads them with their own version's fields and says
so in a note, never silently (the DRA example driver's gang demo, written for 1.36, is the
shape: ../shared/realworld/19-example-driver-podgroup-gang.yaml)."""

from __future__ import annotations

import pytest

import draopt
from draopt.kube.features import Features
from draopt.kube.loader import load_text
from draopt.kube.workload import expand

NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
"""


def _gang(version: str) -> str:
    return (
        NODE
        + f"""---
apiVersion: scheduling.k8s.io/{version}
kind: PodGroup
metadata: {{name: g, namespace: default}}
spec: {{schedulingPolicy: {{gang: {{minCount: 1}}}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: default}}
spec:
  schedulingGroup: {{podGroupName: g}}
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "1"}}}}}}]
"""
    )


@pytest.mark.parametrize(
    "version, release, refused",
    [("v1beta1", "1.36", True), ("v1alpha2", "1.36", False), ("v1alpha2", "1.37", True), ("v1beta1", "1.37", False)],
)
def test_a_pod_group_in_a_version_the_release_does_not_serve_is_said(version, release, refused):
    workload = expand(load_text(_gang(version)), Features.from_gates({}, release))
    said = [n for n in workload.notes if n.startswith("PodGroup default/g: Kubernetes")]
    assert bool(said) == refused
    if refused:
        assert f"not scheduling.k8s.io/{version}, and its API server refuses the object" in said[0]
    assert workload.groups["default/g"].min_count == 1  # read all the same


def test_the_note_reaches_the_answer():
    out = draopt.place(load_text(_gang("v1beta1")), kubernetes_version="1.36")
    assert any("serves PodGroup as scheduling.k8s.io/v1alpha2, not scheduling.k8s.io/v1beta1" in n for n in out.notes)


def test_a_device_taint_rule_as_v1_on_136():
    text = (
        NODE
        + """---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: r}
spec:
  deviceSelector: {driver: gpu.example.com}
  taint: {key: k, effect: NoSchedule}
"""
    )
    notes = expand(load_text(text), Features.from_gates({}, "1.36")).notes
    assert any(
        n.startswith("DeviceTaintRule r: Kubernetes 1.36 serves DeviceTaintRule as resource.k8s.io/v1beta2")
        for n in notes
    )
    assert not any(
        "serves DeviceTaintRule" in n for n in expand(load_text(text), Features.from_gates({}, "1.37")).notes
    )
