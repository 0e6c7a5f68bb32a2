"""Older served API versions (resource.k8s.io/v1beta1, v1beta2, DeviceTaintRule v1alpha3,
PodGroup scheduling.k8s.io v1alpha2/v1alpha3/v1beta1) are read as the API server converts them
(`pkg/apis/resource/v1beta1/conversion.go`), and allocate / place / validate agree on them."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from draopt.allocation import allocate as api
from draopt.kube.convert import schema_for, to_v1
from draopt.errors import InputError
from draopt.notes import DraoptWarning
from draopt.kube.loader import load_text
from draopt.kube.models import ResourceClaim, ResourceSlice
from draopt.placement import place
from draopt.kube.strict import unknown_fields
from draopt.validation import validate_documents

ROOT = Path(__file__).resolve().parents[1]
REALWORLD = ROOT.parent / "shared" / "realworld"

MANAGED = [
    {
        "apiVersion": "resource.k8s.io/v1beta1",
        "fieldsType": "FieldsV1",
        "manager": "kubectl-client-side-apply",
        "operation": "Update",
        "time": "2025-05-02T10:00:00Z",
        "fieldsV1": {"f:metadata": {"f:annotations": {".": {}}}, "f:spec": {"f:devices": {}}},
    }
]

# A `kubectl get deviceclasses,resourceslices,resourceclaims,resourceclaimtemplates,nodes,pods -o yaml`
# of a 1.32/1.33 cluster (v1beta1 is the version it serves), in the example driver's shapes.
V1BETA1_DUMP = {
    "apiVersion": "v1",
    "kind": "List",
    "metadata": {"resourceVersion": ""},
    "items": [
        {
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "DeviceClass",
            "metadata": {
                "name": "gpu.example.com",
                "uid": "0c9a4fd4-6a4e-4bd2-9d53-1f9c3b0f6a11",
                "generation": 1,
                "resourceVersion": "1201",
                "creationTimestamp": "2025-05-02T10:00:00Z",
                "annotations": {"meta.helm.sh/release-name": "dra-example-driver"},
                "labels": {"app.kubernetes.io/managed-by": "Helm"},
                "managedFields": MANAGED,
            },
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceSlice",
            "metadata": {
                "name": "kind-worker-gpu.example.com-9xk2l",
                "generateName": "kind-worker-gpu.example.com-",
                "uid": "6b1c1a39-3f0b-4d1e-8f0e-2b6a9a6b1d22",
                "generation": 1,
                "resourceVersion": "1310",
                "creationTimestamp": "2025-05-02T10:01:00Z",
                "managedFields": MANAGED,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "controller": True,
                        "kind": "Node",
                        "name": "kind-worker",
                        "uid": "48a17ac9-90ac-4b1c-8214-4448e27a6830",
                    }
                ],
            },
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "kind-worker",
                "pool": {"generation": 1, "name": "kind-worker", "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": f"gpu-{i}",
                        "basic": {
                            "attributes": {
                                "driverVersion": {"version": "1.0.0"},
                                "index": {"int": i},
                                "model": {"string": "LATEST-GPU-MODEL"},
                                "uuid": {"string": f"gpu-18db0e85-99e9-c746-8531-ffeb86328b3{i}"},
                            },
                            "capacity": {"memory": {"value": "80Gi"}},
                            **(
                                {"taints": [{"key": "example.com/unhealthy", "value": "ecc", "effect": "NoSchedule"}]}
                                if i == 1
                                else {}
                            ),
                        },
                    }
                    for i in range(4)
                ],
            },
        },
        # In use: allocated by the scheduler of that cluster (status as it wrote it).
        {
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaim",
            "metadata": {
                "name": "pod0-gpu-5x2kq",
                "namespace": "gpu-test1",
                "generateName": "pod0-gpu-",
                "uid": "f1f6e3a0-8f42-4b2a-9c51-0d0e8b1c7a01",
                "resourceVersion": "1402",
                "finalizers": ["resource.kubernetes.io/delete-protection"],
                "managedFields": MANAGED,
                "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "blockOwnerDeletion": True,
                        "controller": True,
                        "kind": "Pod",
                        "name": "pod0",
                        "uid": "2a3b4c5d-0000-4000-8000-000000000001",
                    }
                ],
            },
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpu",
                            "deviceClassName": "gpu.example.com",
                            "allocationMode": "ExactCount",
                            "count": 1,
                        }
                    ]
                }
            },
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {"request": "gpu", "driver": "gpu.example.com", "pool": "kind-worker", "device": "gpu-0"}
                        ]
                    },
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["kind-worker"]}]}
                        ]
                    },
                },
                "reservedFor": [{"resource": "pods", "name": "pod0", "uid": "2a3b4c5d-0000-4000-8000-000000000001"}],
            },
        },
        # Pending: two GPUs, tolerating the NoSchedule taint of gpu-1 (v1beta1: fields on the request).
        {
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaim",
            "metadata": {
                "name": "two-gpus",
                "namespace": "gpu-test1",
                "uid": "f1f6e3a0-8f42-4b2a-9c51-0d0e8b1c7a02",
                "resourceVersion": "1403",
                "managedFields": MANAGED,
            },
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "gpus",
                            "deviceClassName": "gpu.example.com",
                            "allocationMode": "ExactCount",
                            "count": 2,
                            "selectors": [
                                {
                                    "cel": {
                                        "expression": "device.capacity['gpu.example.com'].memory.compareTo("
                                        "quantity('40Gi')) >= 0"
                                    }
                                }
                            ],
                            "tolerations": [
                                {"key": "example.com/unhealthy", "operator": "Exists", "effect": "NoSchedule"}
                            ],
                        }
                    ]
                }
            },
            "status": {},
        },
        {
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaimTemplate",
            "metadata": {
                "name": "prioritized",
                "namespace": "gpu-test1",
                "uid": "9e1d2c3b-1111-4222-8333-444455556666",
                "managedFields": MANAGED,
            },
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "gpu",
                                "firstAvailable": [
                                    {
                                        "name": "big",
                                        "deviceClassName": "gpu.example.com",
                                        "selectors": [
                                            {"cel": {"expression": "device.attributes['gpu.example.com'].index == 7"}}
                                        ],
                                    },
                                    {"name": "any", "deviceClassName": "gpu.example.com"},
                                ],
                            }
                        ]
                    }
                }
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "kind-worker",
                "uid": "48a17ac9-90ac-4b1c-8214-4448e27a6830",
                "labels": {"kubernetes.io/hostname": "kind-worker", "kubernetes.io/os": "linux"},
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
                "managedFields": MANAGED,
            },
            "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"], "providerID": "kind://docker/kind/w"},
            "status": {
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                "addresses": [{"type": "InternalIP", "address": "172.18.0.3"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"kubeletVersion": "v1.33.1", "architecture": "amd64"},
                "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "pod0",
                "namespace": "gpu-test1",
                "uid": "2a3b4c5d-0000-4000-8000-000000000001",
                "managedFields": MANAGED,
                "labels": {"app": "pod"},
            },
            "spec": {
                "nodeName": "kind-worker",
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst",
                "serviceAccountName": "default",
                "enableServiceLinks": True,
                "preemptionPolicy": "PreemptLowerPriority",
                "priority": 0,
                "tolerations": [
                    {
                        "key": "node.kubernetes.io/not-ready",
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": 300,
                    }
                ],
                "volumes": [{"name": "kube-api-access-x", "projected": {"defaultMode": 420, "sources": []}}],
                "containers": [
                    {
                        "name": "ctr0",
                        "image": "ubuntu:22.04",
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["bash", "-c"],
                        "args": ["export; trap 'exit 0' TERM; sleep 9999"],
                        "resources": {"claims": [{"name": "gpu"}]},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "volumeMounts": [
                            {"name": "kube-api-access-x", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
                        ],
                    }
                ],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
            },
            "status": {
                "phase": "Running",
                "qosClass": "BestEffort",
                "hostIP": "172.18.0.3",
                "podIP": "10.244.1.5",
                "startTime": "2025-05-02T10:05:00Z",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "ctr0", "ready": True, "restartCount": 0}],
                "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "pod0-gpu-5x2kq"}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pod1", "namespace": "gpu-test1", "uid": "2a3b4c5d-0000-4000-8000-000000000002"},
            "spec": {
                "containers": [{"name": "ctr0", "image": "ubuntu:22.04", "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "prioritized"}],
            },
        },
    ],
}


def _v1_by_hand() -> dict:
    """The same dump as a v1 cluster prints it (written out, not converted by draopt)."""
    doc = copy.deepcopy(V1BETA1_DUMP)
    for item in doc["items"]:
        if item["apiVersion"] == "resource.k8s.io/v1beta1":
            item["apiVersion"] = "resource.k8s.io/v1"  # managedFields keep the version they were written in
    sl = doc["items"][1]
    sl["spec"]["devices"] = [{"name": d["name"], **d["basic"]} for d in sl["spec"]["devices"]]
    for claim in (doc["items"][2], doc["items"][3]):
        for r in claim["spec"]["devices"]["requests"]:
            exact = {k: r.pop(k) for k in list(r) if k != "name"}
            r["exactly"] = exact
    return doc


def _load(doc, capsys=None):
    objs = load_text(yaml.safe_dump(doc), "dump.yaml")
    if capsys is not None:
        assert capsys.readouterr().err == ""  # known Kubernetes fields are never "unknown"
    return objs


def test_v1beta1_dump_converts_like_the_api_server(capsys):
    objs = _load(V1BETA1_DUMP, capsys)
    sl = objs.resource_slices[0]
    assert sl.api_version == "resource.k8s.io/v1"
    assert [d.name for d in sl.spec.devices] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert sl.spec.devices[2].attributes["index"].int_ == 2
    assert sl.spec.devices[2].capacity["memory"].value == "80Gi"
    assert [t.key for t in sl.spec.devices[1].taints] == ["example.com/unhealthy"]
    assert "basic" not in sl.spec.devices[0].to_k8s()
    pending = objs.resource_claims[1]
    req = pending.spec.devices.requests[0]
    assert req.exactly is not None and req.exactly.count == 2 and req.exactly.allocation_mode == "ExactCount"
    assert req.exactly.tolerations[0].key == "example.com/unhealthy"
    tmpl = objs.claim_templates[0].spec.spec.devices.requests[0]
    assert tmpl.exactly is None and [s.name for s in tmpl.first_available] == ["big", "any"]
    # What the v1 cluster prints for the same objects is read the same way.
    assert [c.to_k8s() for c in objs.resource_claims] == [c.to_k8s() for c in _load(_v1_by_hand()).resource_claims]
    assert [s.to_k8s() for s in objs.resource_slices] == [s.to_k8s() for s in _load(_v1_by_hand()).resource_slices]


def test_v1beta1_dump_allocates_like_its_v1_form():
    beta = api.allocate(_load(V1BETA1_DUMP), claims=["gpu-test1/two-gpus"])
    v1 = api.allocate(_load(_v1_by_hand()), claims=["gpu-test1/two-gpus"])
    devices = [r.device for r in beta.claims[0].status.allocation.devices.results]
    # gpu-0 is in use; gpu-1's NoSchedule taint is tolerated: first fit takes gpu-1 and gpu-2.
    assert beta.node == "kind-worker" and devices == ["gpu-1", "gpu-2"]
    assert [c.to_k8s() for c in beta.claims] == [c.to_k8s() for c in v1.claims]
    assert beta.claims[0].api_version == "resource.k8s.io/v1"


def test_v1beta1_template_places_pod_with_prioritized_list():
    out = place(_load(V1BETA1_DUMP), policy="first-fit")
    pod1 = next(p for p in out.result.pods if p.pod == "gpu-test1/pod1")
    assert pod1.node == "kind-worker"
    claim = next(o for o in out.objects if o["kind"] == "ResourceClaim" and o["metadata"]["name"].startswith("pod1"))
    assert claim["apiVersion"] == "resource.k8s.io/v1"
    results = claim["status"]["allocation"]["devices"]["results"]
    # no device has index 7: the second alternative; gpu-0 in use, gpu-1 tainted (not tolerated here)
    assert [(r["request"], r["device"]) for r in results] == [("gpu/any", "gpu-2")]


def test_validate_agrees_with_allocate_on_v1beta1():
    docs = [(d, f"dump items[{i}]") for i, d in enumerate(V1BETA1_DUMP["items"])]
    report = validate_documents(docs)
    assert report.findings == [], [str(f) for f in report.findings]


@pytest.mark.parametrize(
    "request_fields, exactly",
    [
        ({"deviceClassName": "gpu"}, {"deviceClassName": "gpu"}),
        # hasAnyMainRequestFieldsSet: Go zero values are unset, present pointers/slices are set
        ({"deviceClassName": "", "count": 0, "allocationMode": ""}, None),
        ({"selectors": []}, {"selectors": []}),
        ({"tolerations": []}, {}),  # set, but an empty list converts to nil
        ({"adminAccess": False}, {"adminAccess": False}),
        ({"capacity": {"requests": {"memory": "1Gi"}}}, {"capacity": {"requests": {"memory": "1Gi"}}}),
        ({"allocationMode": "All", "deviceClassName": "gpu"}, {"deviceClassName": "gpu", "allocationMode": "All"}),
    ],
)
def test_v1beta1_request_fields_move_into_exactly(request_fields, exactly):
    doc = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", **request_fields}]}},
    }
    out = to_v1(doc)
    assert out["apiVersion"] == "resource.k8s.io/v1"
    req = out["spec"]["devices"]["requests"][0]
    assert req.get("exactly") == exactly
    assert set(req) <= {"name", "exactly", "firstAvailable"}
    assert doc["spec"]["devices"]["requests"][0] == {"name": "r", **request_fields}  # input not changed


def test_v1beta1_request_with_both_forms_is_rejected_by_both():
    doc = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "r", "deviceClassName": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "gpu"}]}
                ]
            }
        },
    }
    report = validate_documents([(doc, "in.yaml")])
    assert [f.error_string() for f in report.findings] == [
        "spec.devices.requests[0]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, "
        "but multiple fields are set"
    ]
    objs = load_text(
        yaml.safe_dump(doc) + "---\n" + yaml.safe_dump({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})
    )
    with pytest.raises(Exception, match="mutually exclusive"):
        api.allocate(objs)


def test_v1beta1_slice_zero_values_and_wrong_basic():
    doc = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "d.example.com",
            "nodeName": "",
            "allNodes": True,
            "pool": {"name": "p", "generation": 0, "resourceSliceCount": 1},
            "devices": [{"name": "d0", "basic": {}}, {"name": "d1"}],
        },
    }
    out = to_v1(doc)
    assert "nodeName" not in out["spec"] and out["spec"]["allNodes"] is True
    assert out["spec"]["devices"] == [{"name": "d0"}, {"name": "d1"}]
    doc["spec"]["devices"][0]["basic"] = "gpu"
    with pytest.raises(InputError, match=r"spec\.devices\[0\]\.basic: expected an object"):
        load_text(yaml.safe_dump(doc))
    report = validate_documents([(doc, "in.yaml")])
    assert any(f.field == "spec.devices[0].basic" for f in report.findings)


def test_unknown_fields_are_checked_against_the_version_written(capsys):
    beta = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "d.example.com",
            "nodeName": "n",
            "pool": {"name": "p", "resourceSliceCount": 1},
            "devices": [
                {"name": "d0", "basic": {"attributes": {}, "attribute": {}}},
                {"name": "d1", "attributes": {"x": {"int": 1}}},
            ],
        },
    }
    # v1beta1: a device's fields belong under `basic`; `attributes` next to `basic` is unknown
    assert unknown_fields(beta, schema_for(ResourceSlice, beta["apiVersion"])) == [
        "spec.devices[0].basic.attribute",
        "spec.devices[1].attributes",
    ]
    v1 = {**beta, "apiVersion": "resource.k8s.io/v1"}
    assert unknown_fields(v1, schema_for(ResourceSlice, v1["apiVersion"])) == ["spec.devices[0].basic"]
    claim = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
    }
    # `exactly` does not exist in v1beta1
    assert unknown_fields(claim, schema_for(ResourceClaim, claim["apiVersion"])) == ["spec.devices.requests[0].exactly"]


@pytest.mark.parametrize("version", ["resource.k8s.io/v1beta2", "resource.k8s.io/v1alpha3"])
def test_device_taint_rule_versions(version, capsys):
    rule = {
        "apiVersion": version,
        "kind": "DeviceTaintRule",
        "metadata": {"name": "r"},
        "spec": {
            "deviceSelector": {"driver": "gpu.example.com", "device": "gpu-1"},
            "taint": {"key": "example.com/maintenance", "effect": "NoExecute"},
        },
        "status": {"conditions": [{"type": "EvictionInProgress", "status": "False"}]},
    }
    objs = load_text(yaml.safe_dump(rule))
    assert objs.taint_rules[0].api_version == "resource.k8s.io/v1"
    assert objs.taint_rules[0].spec.device_selector.device == "gpu-1"
    assert capsys.readouterr().err == ""


def test_device_taint_rule_is_not_served_as_v1beta1():
    rule = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "r"},
        "spec": {"taint": {"key": "k", "effect": "NoExecute"}},
    }
    with pytest.raises(InputError, match="is not served for DeviceTaintRule"):
        load_text(yaml.safe_dump(rule))
    assert validate_documents([(rule, "x")]).findings[0].field == "apiVersion"


@pytest.mark.parametrize(
    "version", ["scheduling.k8s.io/v1alpha2", "scheduling.k8s.io/v1alpha3", "scheduling.k8s.io/v1beta1"]
)
def test_pod_group_versions(version, capsys):
    group = {
        "apiVersion": version,
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ml"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        },
        "status": {"conditions": []},
    }
    objs = load_text(yaml.safe_dump(group))
    assert objs.pod_groups[0].spec.scheduling_policy.gang.min_count == 2
    assert capsys.readouterr().err == ""


def test_cli_allocate_reads_v1beta1_and_prints_v1(tmp_path):
    f = tmp_path / "dump.yaml"
    f.write_text(yaml.safe_dump(V1BETA1_DUMP))
    p = subprocess.run(
        [sys.executable, "-m", "draopt", "allocate", "-f", str(f), "--claim", "gpu-test1/two-gpus", "-o", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert [c["apiVersion"] for c in out["items"]] == ["resource.k8s.io/v1"]
    assert out["items"][0]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert "warning" not in p.stderr
    v = subprocess.run(
        [sys.executable, "-m", "draopt", "validate", "-f", str(f)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert v.returncode == 0 and "object(s) valid" in v.stdout


def _realworld(rel: str) -> Path:
    path = REALWORLD / rel
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def test_realworld_rocm_v1beta1_slice_equals_its_hand_conversion():
    beta = api.allocate(load_text(_realworld("rough/r01-rocm-v1beta1-slice.yaml").read_text()))
    v1 = api.allocate(load_text(_realworld("rough/r01b-rocm-converted-v1.yaml").read_text()))
    assert beta.allocated and beta.node == v1.node
    assert [c.to_k8s() for c in beta.claims] == [c.to_k8s() for c in v1.claims]


def test_realworld_nvidia_v1beta1_template_is_read_as_v1(capsys):
    objs = load_text(_realworld("rough/r02-nvidia-v1beta1-gpu-test1.yaml").read_text())
    assert capsys.readouterr().err == ""
    tmpl = objs.claim_templates[0]
    assert tmpl.api_version == "resource.k8s.io/v1"
    assert tmpl.spec.spec.devices.requests[0].exactly.device_class_name == "gpu.nvidia.com"
    assert [p.name for p in objs.pods] == ["pod1", "pod2"]


def test_taint_selector_class_and_cel_are_in_no_served_version(capsys):
    """1.33/1.34's v1alpha3 DeviceTaintSelector had deviceClassName and selectors; 1.35 removed them
    (from v1alpha3 too: k8s.io/api v0.36.3, v0.37.2) and v1beta2/v1 never had them: unknown fields
    in every version, which the API server drops and draopt applies nowhere."""
    rule = {
        "kind": "DeviceTaintRule",
        "metadata": {"name": "r"},
        "spec": {
            "deviceSelector": {"deviceClassName": "gpu", "selectors": [{"cel": {"expression": "true"}}]},
            "taint": {"key": "k", "effect": "NoSchedule"},
        },
    }
    for version in ("v1alpha3", "v1beta2", "v1"):
        with pytest.warns(DraoptWarning) as said:
            objs = load_text(yaml.safe_dump({"apiVersion": f"resource.k8s.io/{version}", **rule}))
        assert (
            'unknown field "spec.deviceSelector.deviceClassName", unknown field "spec.deviceSelector.selectors"'
            in str(said[0].message)
        )
        assert not hasattr(objs.taint_rules[0].spec.device_selector, "device_class_name")
    report = validate_documents([({"apiVersion": "resource.k8s.io/v1beta2", **rule}, "x")])
    assert [f.field for f in report.findings] == [
        "spec.deviceSelector.deviceClassName",
        "spec.deviceSelector.selectors",
    ]
