"""Strict field checking, as the API server's strict decoding (kubectl's default
`--validate=strict`): `validate` reports every unknown field by its path; allocate / place warn
once per object on stderr and go on; unknown fields are kept and written back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from draopt.kube.loader import load_text
from draopt.notes import DraoptWarning
from draopt.kube.models import (
    DeviceClass,
    Node,
    Pod,
    PodGroup,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from draopt.kube.strict import model_schema, unknown_fields
from draopt.validation import validate_documents

ROOT = Path(__file__).resolve().parents[1]

CLUSTER = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: device.driver == "gpu.example.com"}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "10"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec:
  driver: gpu.example.com
  nodeName: n1
  pool: {name: n1, generation: 1, resourceSliceCount: 1}
  devices: [{name: gpu-0}, {name: gpu-1}]
"""

# KEP 4815's claim: the template's nesting (spec.spec) in a ResourceClaim.
CLAIM_SPEC_SPEC = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: mig-devices, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu}
"""

# intel's pod-inline-aligned-gpus.yaml: lower-case keys.
POD_LOWER_CASE = """apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers:
  - name: c
    image: busybox
    resources:
      claims: [{name: gpu}]
  resourceclaims:
  - name: gpu
    resourceclaimtemplatename: one-gpu
"""


def run(*args, stdin=None):
    p = subprocess.run(
        [sys.executable, "-m", "draopt", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p


def write(tmp_path, *docs):
    f = tmp_path / "in.yaml"
    f.write_text("---\n".join(docs))
    return str(f)


def test_validate_reports_claim_spec_spec(tmp_path):
    p = run("validate", "-f", write(tmp_path, CLUSTER, CLAIM_SPEC_SPEC))
    assert p.returncode == 1
    assert 'ResourceClaim default/mig-devices: unknown field "spec.spec"' in p.stdout.splitlines()
    j = json.loads(run("validate", "-f", write(tmp_path, CLAIM_SPEC_SPEC), "-o", "json").stdout)
    assert [(e["field"], e["type"], e["error"]) for e in j["errors"]] == [
        ("spec.spec", "Unknown field", 'unknown field "spec.spec"')
    ]


def test_allocate_warns_once_and_goes_on(tmp_path):
    claim = yaml.safe_load(CLAIM_SPEC_SPEC)
    claim["spec"]["other"] = 2
    p = run("allocate", "-f", write(tmp_path, CLUSTER, yaml.safe_dump(claim, sort_keys=False)))
    warnings = [line for line in p.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, p.stderr
    assert warnings[0].startswith(
        'warning: ResourceClaim default/mig-devices: unknown field "spec.spec", unknown field "spec.other" ('
    )
    assert p.returncode == 0  # the claim has no request the API server would see: nothing to allocate


def test_pod_with_lower_case_claims(tmp_path, capsys):
    p = run("validate", "-f", write(tmp_path, POD_LOWER_CASE))
    assert p.returncode == 1
    assert p.stdout.splitlines()[:2] == [
        'Pod default/p: unknown field "spec.resourceclaims"',
        'Pod default/p: spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
        'pod.spec.resourceClaims which is empty',
    ]
    with pytest.warns(DraoptWarning) as said:  # the Python API: a warning (the command line: stderr)
        objs = load_text(POD_LOWER_CASE, "pod.yaml")
    assert [str(w.message) for w in said] == [
        'Pod default/p: unknown field "spec.resourceclaims" (pod.yaml document 1)'
    ]
    assert capsys.readouterr().err == ""
    assert objs.pods[0].spec.resource_claims == []


def test_place_warns_on_stderr_and_places(tmp_path):
    pod = POD_LOWER_CASE.replace("resources:\n      claims: [{name: gpu}]\n", "resources: {}\n")
    p = run("place", "-f", write(tmp_path, CLUSTER, pod))
    assert 'warning: Pod default/p: unknown field "spec.resourceclaims"' in p.stderr
    assert p.returncode == 0 and "n1" in p.stdout


def test_unknown_fields_are_kept_and_written_back(tmp_path):
    claim = yaml.safe_dump(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default", "uid": "0f0e0d0c-0000-4000-8000-000000000001"},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "futureField": {"x": 1}}}],
                    "futureList": ["a"],
                }
            },
        }
    )
    p = run("allocate", "-f", write(tmp_path, CLUSTER, claim), "-o", "json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)["items"][0]
    assert out["spec"]["devices"]["requests"][0]["exactly"]["futureField"] == {"x": 1}
    assert out["spec"]["devices"]["futureList"] == ["a"]
    assert p.stderr.startswith(
        'warning: ResourceClaim default/c: unknown field "spec.devices.futureList", '
        'unknown field "spec.devices.requests[0].exactly.futureField" ('
    )
    assert p.stderr.count("warning:") == 1


def test_v1_claim_with_flat_request_fields(tmp_path):
    # The v1beta1 layout under apiVersion v1: those fields are unknown in v1, the request has neither form.
    claim = yaml.safe_dump(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu"}]}},
        }
    )
    v = run("validate", "-f", write(tmp_path, claim))
    assert v.stdout.splitlines()[:2] == [
        'ResourceClaim default/c: unknown field "spec.devices.requests[0].deviceClassName"',
        'ResourceClaim default/c: spec.devices.requests[0]: Required value: exactly one of `exactly` or '
        '`firstAvailable` is required',
    ]
    a = run("allocate", "-f", write(tmp_path, CLUSTER, claim))
    assert a.returncode == 2 and "ResourceClaim default/c" in a.stderr
    assert 'unknown field "spec.devices.requests[0].deviceClassName"' in a.stderr


KUBECTL_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-7c5d",
        "namespace": "ml",
        "generateName": "web-",
        "uid": "1b2c",
        "resourceVersion": "7",
        "creationTimestamp": "2025-01-01T00:00:00Z",
        "labels": {"app": "web"},
        "annotations": {"kubectl.kubernetes.io/restartedAt": "x"},
        "finalizers": ["f"],
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": "9",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "managedFields": [
            {
                "manager": "kube-controller-manager",
                "operation": "Update",
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {}},
            }
        ],
    },
    "spec": {
        "volumes": [{"name": "v", "emptyDir": {}}],
        "restartPolicy": "Always",
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "priorityClassName": "high",
        "priority": 1000,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}, "podAntiAffinity": {}},
        "tolerations": [{"operator": "Exists"}],
        "nodeSelector": {"gpu": "true"},
        "schedulingGates": [],
        "hostNetwork": False,
        "terminationGracePeriodSeconds": 30,
        "initContainers": [
            {
                "name": "init",
                "image": "busybox",
                "restartPolicy": "Always",
                "command": ["sh"],
                "resources": {"requests": {"cpu": "100m"}},
            }
        ],
        "containers": [
            {
                "name": "c",
                "image": "nginx",
                "ports": [{"containerPort": 80}],
                "env": [{"name": "A", "value": "1"}],
                "envFrom": [],
                "readinessProbe": {"httpGet": {"path": "/", "port": 80}},
                "livenessProbe": {"tcpSocket": {"port": 80}},
                "lifecycle": {},
                "securityContext": {"privileged": False},
                "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                "resources": {
                    "requests": {"cpu": "1", "memory": "1Gi"},
                    "limits": {"memory": "1Gi"},
                    "claims": [{"name": "gpu", "request": "r"}],
                },
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "Always",
                "stdin": False,
                "tty": False,
            }
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
    },
    "status": {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False"}],
        "qosClass": "Burstable",
        "observedGeneration": 1,
        "message": "m",
        "reason": "r",
        "nominatedNodeName": "",
        "startTime": "2025-01-01T00:00:00Z",
    },
}


@pytest.mark.parametrize(
    "model, doc",
    [
        (Pod, KUBECTL_POD),
        (
            Node,
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "n"},
                "spec": {
                    "podCIDR": "10.0.0.0/24",
                    "podCIDRs": ["10.0.0.0/24"],
                    "providerID": "aws:///i-1",
                    "taints": [{"key": "k", "effect": "NoSchedule", "timeAdded": "2025-01-01T00:00:00Z"}],
                    "unschedulable": False,
                },
                "status": {
                    "capacity": {"cpu": "4"},
                    "allocatable": {"cpu": "4"},
                    "phase": "Running",
                    "conditions": [],
                    "addresses": [],
                    "daemonEndpoints": {},
                    "nodeInfo": {},
                    "images": [],
                    "volumesInUse": [],
                    "volumesAttached": [],
                    "config": {},
                    "runtimeHandlers": [],
                    "features": {},
                    "declaredFeatures": [],
                },
            },
        ),
        (
            PodGroup,
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": "g"},
                "spec": {
                    "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "t"}},
                    "schedulingPolicy": {"gang": {"minCount": 2}},
                    "disruptionMode": {"all": {}},
                    "schedulingConstraints": {"topology": [{"key": "zone"}]},
                },
                "status": {"conditions": [], "resourceClaimStatuses": []},
            },
        ),
        (
            ResourceClaim,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": "c"},
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "r",
                                "firstAvailable": [
                                    {
                                        "name": "a",
                                        "deviceClassName": "g",
                                        "count": 1,
                                        "allocationMode": "ExactCount",
                                        "tolerations": [
                                            {
                                                "key": "k",
                                                "operator": "Exists",
                                                "effect": "NoExecute",
                                                "tolerationSeconds": 5,
                                            }
                                        ],
                                        "capacity": {"requests": {"memory": "1Gi"}},
                                        "selectors": [{"cel": {"expression": "true"}}],
                                    }
                                ],
                            }
                        ],
                        "constraints": [{"requests": ["r"], "matchAttribute": "x.io/y"}],
                        "config": [{"requests": ["r"], "opaque": {"driver": "d", "parameters": {"any": "thing"}}}],
                    }
                },
                "status": {
                    "allocation": {
                        "devices": {
                            "results": [
                                {
                                    "request": "r/a",
                                    "driver": "d",
                                    "pool": "p",
                                    "device": "x",
                                    "shareID": "u",
                                    "consumedCapacity": {"memory": "1Gi"},
                                    "bindingConditions": [],
                                    "bindingFailureConditions": [],
                                    "tolerations": [],
                                    "adminAccess": False,
                                }
                            ],
                            "config": [
                                {"source": "FromClaim", "requests": ["r"], "opaque": {"driver": "d", "parameters": {}}}
                            ],
                        },
                        "nodeSelector": {
                            "nodeSelectorTerms": [
                                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
                            ]
                        },
                        "allocationTimestamp": "2025-01-01T00:00:00Z",
                    },
                    "reservedFor": [{"resource": "pods", "name": "p", "uid": "u", "apiGroup": ""}],
                    "devices": [
                        {
                            "driver": "d",
                            "pool": "p",
                            "device": "x",
                            "conditions": [],
                            "data": {"any": 1},
                            "networkData": {"interfaceName": "eth0"},
                        }
                    ],
                },
            },
        ),
        (
            ResourceSlice,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": "s"},
                "spec": {
                    "driver": "d",
                    "pool": {"name": "p", "generation": 1, "resourceSliceCount": 2},
                    "perDeviceNodeSelection": True,
                    "devices": [
                        {
                            "name": "x",
                            "attributes": {"a": {"string": "s"}, "b": {"ints": [1]}},
                            "capacity": {
                                "m": {
                                    "value": "1",
                                    "requestPolicy": {
                                        "default": "1",
                                        "validRange": {"min": "1", "max": "2", "step": "1"},
                                    },
                                }
                            },
                            "consumesCounters": [{"counterSet": "cs", "counters": {"m": {"value": "1"}}}],
                            "nodeName": "n",
                            "taints": [{"key": "k", "effect": "NoSchedule"}],
                            "bindsToNode": True,
                            "bindingConditions": ["c"],
                            "bindingFailureConditions": ["f"],
                            "allowMultipleAllocations": True,
                        }
                    ],
                },
            },
        ),
        (
            ResourceClaimTemplate,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t"},
                "spec": {
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {
                        "devices": {
                            "requests": [{"name": "r", "exactly": {"deviceClassName": "g", "adminAccess": True}}]
                        }
                    },
                },
            },
        ),
        (
            DeviceClass,
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "g"},
                "spec": {
                    "selectors": [{"cel": {"expression": "true"}}],
                    "extendedResourceName": "x.io/gpu",
                    "config": [{"opaque": {"driver": "d", "parameters": {}}}],
                },
            },
        ),
    ],
)
def test_known_kubernetes_fields_are_not_unknown(model, doc):
    assert unknown_fields(doc, model_schema(model)) == []


@pytest.mark.parametrize(
    "path",
    [
        "metadata.nmae",
        "spec.containers[0].resource",
        "spec.containers[0].resources.claim",
        "spec.resourceClaims[0].resourceClaim",
        "spec.affinity.nodeAffinity.required",
        "status.phases",
        "spec.initContainers[0].resources.request",
    ],
)
def test_misspellings_anywhere_are_found(path):
    doc = json.loads(json.dumps(KUBECTL_POD))
    cur = doc
    parts = path.replace("[0]", ".0").split(".")
    for part in parts[:-1]:
        cur = cur[int(part)] if part.isdigit() else cur[part]
    cur[parts[-1]] = "x"
    assert unknown_fields(doc, model_schema(Pod)) == [path]


def test_validate_lists_every_unknown_field_with_its_path():
    claim = yaml.safe_load(CLAIM_SPEC_SPEC)
    claim["metadata"]["lables"] = {"a": "b"}
    claim["status"] = {"allocation": {"devices": {"result": []}}}
    report = validate_documents([(claim, "in.yaml")])
    assert [f.error_string() for f in report.findings] == [
        'unknown field "metadata.lables"',
        'unknown field "spec.spec"',
        'unknown field "status.allocation.devices.result"',
    ]


def test_claim_template_metadata_is_checked_as_object_meta():
    tmpl = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t"},
        "spec": {
            "metadata": {"labels": {"a": "b"}, "annotations": {}, "lables": {"c": "d"}},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "g"}}]}},
        },
    }
    assert unknown_fields(tmpl, model_schema(ResourceClaimTemplate)) == ["spec.metadata.lables"]
