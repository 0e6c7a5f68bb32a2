"""Every reservedFor entry draopt writes names a uid (issue 31 item 10): the API server refuses an
entry without one (pkg/apis/resource/validation/validation.go validateResourceClaimUserReference:
uid Required). Pods draopt's controllers create get a uid derived from their namespace and name,
the same on every run; pods and PodGroups of the input without a uid get one derived the same way."""

from __future__ import annotations

import io
from pathlib import Path

from draopt.kube.controllers import stable_uid
from draopt.kube.features import Features
from draopt.kube.loader import load_text
from draopt.placement import place

DATA = Path(__file__).parent / "data"

SLICE = """
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpus}
spec:
  driver: gpu.example.com
  nodeName: NODE
  pool: {name: NODE, generation: 1, resourceSliceCount: 1}
  devices: [DEVICES]
"""


def gpu_slice(node: str, n: int) -> str:
    return SLICE.replace("NODE", node).replace("DEVICES", ", ".join(f"{{name: gpu-{i}}}" for i in range(n)))


DEPLOYMENT = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.example.com'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: infer, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      containers:
      - name: c
        image: i
        resources: {claims: [{name: gpu}]}
      resourceClaims:
      - {name: gpu, resourceClaimTemplateName: one-gpu}
""" + gpu_slice("n1", 2)


def reservations(objects: list[dict]) -> list[dict]:
    return [r for o in objects if o["kind"] == "ResourceClaim" for r in o["status"].get("reservedFor", [])]


def test_generated_pods_have_stable_uids_named_by_their_claims():
    """A Deployment's two pods: each has the uid of its namespace and name (the same on a second
    read), and the claim made from the template is reserved for that uid."""
    first = load_text(DEPLOYMENT, "in.yaml", notes=io.StringIO())
    again = load_text(DEPLOYMENT, "in.yaml", notes=io.StringIO())
    uids = {p.name: p.metadata.uid for p in first.pods}
    assert len(uids) == 2 and len(set(uids.values())) == 2
    assert uids == {p.name: p.metadata.uid for p in again.pods}
    assert all(uid == stable_uid("Pod", "default", name) for name, uid in uids.items())
    out = place(first).objects
    written = {o["metadata"]["name"]: o["metadata"]["uid"] for o in out if o["kind"] == "Pod"}
    assert written == uids
    refs = reservations(out)
    assert sorted((r["name"], r["uid"]) for r in refs) == sorted(uids.items())


def test_input_pods_and_podgroups_without_uid_get_one_in_reserved_for():
    """training-group.yaml (pods and PodGroup without uids) on a node with 8 GPUs, workload claims on:
    the claims reserved for the PodGroup and for pod 1 name uids, the pods' as written on the pods."""
    text = (DATA / "workload" / "training-group.yaml").read_text() + gpu_slice("my-node", 8)
    objects = load_text(text, "training-group.yaml", notes=io.StringIO())
    out = place(objects, features=Features.from_gates({"DRAWorkloadResourceClaims": True})).objects
    pods = {o["metadata"]["name"]: o for o in out if o["kind"] == "Pod"}
    assert all("nodeName" in p["spec"] for p in pods.values())
    refs = reservations(out)
    assert refs and all(r.get("uid") for r in refs)
    for r in refs:
        if r["resource"] == "podgroups":
            assert r["uid"] == stable_uid("PodGroup", "some-ns", "training-group")
        else:
            assert r["uid"] == pods[r["name"]]["metadata"]["uid"] == stable_uid("Pod", "some-ns", r["name"])


def test_batch_gang_podgroups_get_uids():
    """An MPIJob's gang PodGroup (made by draopt for the operator's PodGroup) has a uid, so a claim
    reserved for it can name it."""
    from draopt.kube.batch_controllers import expand

    mpijob = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi", "namespace": "default"},
        "spec": {
            "runPolicy": {"schedulingPolicy": {"minAvailable": 2}},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [{"name": "l", "image": "i"}]}}},
                "Worker": {"replicas": 1, "template": {"spec": {"containers": [{"name": "w", "image": "i"}]}}},
            },
        },
    }
    created = expand([(mpijob, "in.yaml")], [], [])
    assert [g["metadata"]["uid"] for g, _ in created.groups] == [stable_uid("PodGroup", "default", "pi")]


def test_a_podgroup_uid_given_in_the_input_is_the_one_named():
    text = (DATA / "workload" / "training-group.yaml").read_text() + gpu_slice("my-node", 8)
    given = text.replace(
        "  name: training-group\n  namespace: some-ns\n",
        "  name: training-group\n  namespace: some-ns\n  uid: 3b1c9e2a-0000-4000-8000-00000000abcd\n",
    )
    assert given != text
    objects = load_text(given, "training-group.yaml", notes=io.StringIO())
    out = place(objects, features=Features.from_gates({"DRAWorkloadResourceClaims": True})).objects
    groups = [r for r in reservations(out) if r["resource"] == "podgroups"]
    assert groups and {r["uid"] for r in groups} == {"3b1c9e2a-0000-4000-8000-00000000abcd"}
