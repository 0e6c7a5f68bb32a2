"""A deterministic `kubectl get -o yaml` style cluster dump for bench_load.py and tests.

Shaped after Kubernetes' scheduler_perf DRA "basic" workload (kubernetes/kubernetes
`test/integration/scheduler_perf/dra/`: nodes with one ResourceSlice of N devices each, a
DeviceClass, a ResourceClaimTemplate, pods with one claim from it), but written as a live cluster
returns it: every object carries the metadata the API server adds (uid, resourceVersion,
creationTimestamp, managedFields, ownerReferences, labels, annotations) and a status; running pods
have their generated, allocated and reserved ResourceClaims; pending pods have none yet. The
fields and their values follow what `kubectl get -o yaml` prints for these kinds (v1.34/1.35);
the numbers (sizes, images, addresses) are made up but stable: same arguments, same dump.
"""

from __future__ import annotations

import hashlib
from typing import Any

V1 = "resource.k8s.io/v1"
DRIVER = "test-driver.cdi.k8s.io"
CLASS = "test-class"
TEMPLATE = "test-claim-template"
NAMESPACE = "test"
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _uid(*parts: Any) -> str:
    h = hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _suffix(*parts: Any) -> str:
    h = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in h[:5])


def _ts(seconds: int) -> str:
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"2026-11-30T{10 + h % 12:02d}:{m:02d}:{s:02d}Z"


def _fields(keys: list[str]) -> dict[str, Any]:
    """A managedFields `fieldsV1` tree from paths `f:spec|f:containers` (a set's members are
    `{}`, a member that has members also lists itself as `.`)."""
    out: dict[str, Any] = {}
    for key in keys:
        node = out
        for part in key.split("|"):
            if node is not out:
                node.setdefault(".", {})
            node = node.setdefault(part, {})
    return out


def _managed(
    manager: str, t: str, keys: list[str], subresource: str | None = None, api_version: str = "v1"
) -> dict[str, Any]:
    entry = {
        "apiVersion": api_version,
        "fieldsType": "FieldsV1",
        "fieldsV1": _fields(keys),
        "manager": manager,
        "operation": "Update",
        "time": t,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def device_class() -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "DeviceClass",
        "metadata": {
            "creationTimestamp": _ts(0),
            "generation": 1,
            "name": CLASS,
            "managedFields": [_managed("kubectl-create", _ts(0), ["f:spec|f:selectors"], api_version=V1)],
            "resourceVersion": "101",
            "uid": _uid("DeviceClass", CLASS),
        },
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def claim_spec() -> dict[str, Any]:
    return {
        "devices": {
            "requests": [
                {"name": "req-0", "exactly": {"allocationMode": "ExactCount", "count": 1, "deviceClassName": CLASS}}
            ]
        }
    }


def claim_template() -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "creationTimestamp": _ts(1),
            "name": TEMPLATE,
            "namespace": NAMESPACE,
            "managedFields": [
                _managed("kubectl-create", _ts(1), ["f:spec|f:spec|f:devices|f:requests"], api_version=V1)
            ],
            "resourceVersion": "102",
            "uid": _uid("ResourceClaimTemplate", TEMPLATE),
        },
        "spec": {"spec": claim_spec()},
    }


_IMAGES = [
    (f"registry.k8s.io/{name}@sha256:{hashlib.sha256(name.encode()).hexdigest()}", f"registry.k8s.io/{name}", size)
    for name, size in [
        ("pause:3.10", 320368),
        ("kube-proxy:v1.35.0", 30400000),
        ("coredns/coredns:v1.12.0", 20900000),
        ("etcd:3.5.21-0", 57600000),
        ("e2e-test-images/agnhost:2.53", 54100000),
        ("metrics-server:v0.7.2", 19500000),
        ("dra-example-driver:v0.2.0", 41200000),
        ("busybox:1.37", 2200000),
    ]
]


def node(i: int, devices: int) -> dict[str, Any]:
    name = f"node-{i}"
    t = _ts(10 + i)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
            },
            "creationTimestamp": t,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": f"zone-{i % 3}",
                "topology.kubernetes.io/region": "region-1",
                "node.kubernetes.io/instance-type": "gpu-10x",
            },
            "managedFields": [
                _managed(
                    "kubelet",
                    t,
                    [
                        "f:metadata|f:annotations|f:volumes.kubernetes.io/controller-managed-attach-detach",
                        "f:metadata|f:labels|f:kubernetes.io/hostname",
                        "f:metadata|f:labels|f:kubernetes.io/os",
                        "f:spec|f:providerID",
                    ],
                ),
                _managed(
                    "kube-controller-manager",
                    t,
                    [
                        "f:metadata|f:annotations|f:node.alpha.kubernetes.io/ttl",
                        "f:spec|f:podCIDR",
                        "f:spec|f:podCIDRs",
                    ],
                ),
                _managed(
                    "kubelet",
                    t,
                    [
                        "f:status|f:allocatable",
                        "f:status|f:capacity",
                        "f:status|f:conditions",
                        "f:status|f:images",
                        "f:status|f:nodeInfo",
                    ],
                    subresource="status",
                ),
            ],
            "name": name,
            "resourceVersion": str(1000 + i),
            "uid": _uid("Node", name),
        },
        "spec": {
            "podCIDR": f"10.{i // 256}.{i % 256}.0/24",
            "podCIDRs": [f"10.{i // 256}.{i % 256}.0/24"],
            "providerID": f"kind://docker/cluster/{name}",
        },
        "status": {
            "addresses": [
                {"address": f"172.18.{i // 256}.{i % 256}", "type": "InternalIP"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": {
                "cpu": "32",
                "ephemeral-storage": "102625208Ki",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "0",
                "memory": "131716860Ki",
                "pods": "110",
            },
            "capacity": {
                "cpu": "32",
                "ephemeral-storage": "102625208Ki",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "0",
                "memory": "131819260Ki",
                "pods": "110",
            },
            "conditions": [
                {
                    "lastHeartbeatTime": t,
                    "lastTransitionTime": t,
                    "message": msg,
                    "reason": reason,
                    "status": status,
                    "type": ctype,
                }
                for ctype, status, reason, msg in [
                    (
                        "MemoryPressure",
                        "False",
                        "KubeletHasSufficientMemory",
                        "kubelet has sufficient memory available",
                    ),
                    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                ]
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [{"names": [digest, tag], "sizeBytes": size} for digest, tag, size in _IMAGES],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": _uid("boot", name),
                "containerRuntimeVersion": "containerd://2.1.1",
                "kernelVersion": "6.8.0-59-generic",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.35.0",
                "machineID": _uid("machine", name).replace("-", ""),
                "operatingSystem": "linux",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "systemUUID": _uid("system", name),
            },
        },
    }


def resource_slice(i: int, devices: int) -> dict[str, Any]:
    node_name = f"node-{i}"
    name = f"{node_name}-{DRIVER}-{_suffix('slice', i)}"
    t = _ts(20 + i)
    return {
        "apiVersion": V1,
        "kind": "ResourceSlice",
        "metadata": {
            "creationTimestamp": t,
            "generateName": f"{node_name}-{DRIVER}-",
            "generation": 1,
            "managedFields": [
                _managed(
                    "kubelet",
                    t,
                    [
                        "f:metadata|f:generateName",
                        "f:metadata|f:ownerReferences",
                        "f:spec|f:devices",
                        "f:spec|f:driver",
                        "f:spec|f:nodeName",
                        "f:spec|f:pool",
                    ],
                    api_version=V1,
                )
            ],
            "name": name,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "controller": True,
                    "kind": "Node",
                    "name": node_name,
                    "uid": _uid("Node", node_name),
                }
            ],
            "resourceVersion": str(2000 + i),
            "uid": _uid("ResourceSlice", name),
        },
        "spec": {
            "devices": [
                {
                    "attributes": {
                        "driverVersion": {"version": "1.0.0"},
                        "index": {"int": d},
                        "model": {"string": "LATEST-GPU-MODEL"},
                        "uuid": {"string": _uid("gpu", node_name, d)},
                        "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{d // 4:02x}"},
                    },
                    "capacity": {"memory": {"value": "80Gi"}},
                    "name": f"gpu-{d}",
                }
                for d in range(devices)
            ],
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"generation": 1, "name": node_name, "resourceSliceCount": 1},
        },
    }


def _pod_name(j: int) -> str:
    return f"test-pod-{j}-{_suffix('pod', j)}"


def pod(j: int, node_name: str | None, claim_name: str | None) -> dict[str, Any]:
    name = _pod_name(j)
    t = _ts(600 + j)
    vol = f"kube-api-access-{_suffix('vol', j)}"
    meta = {
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "", "example.com/team": f"team-{j % 7}"},
        "creationTimestamp": t,
        "generateName": f"test-pod-{j}-",
        "labels": {"app": "test", "batch": str(j // 100), "pod-template-hash": _suffix("hash", j // 1000)},
        "managedFields": [
            _managed(
                "kube-controller-manager",
                t,
                [
                    "f:metadata|f:generateName",
                    "f:metadata|f:labels|f:app",
                    "f:metadata|f:ownerReferences",
                    'f:spec|f:containers|k:{"name":"pause"}|f:image',
                    'f:spec|f:containers|k:{"name":"pause"}|f:resources|f:claims',
                    "f:spec|f:resourceClaims",
                    "f:spec|f:dnsPolicy",
                ],
            )
        ],
        "name": name,
        "namespace": NAMESPACE,
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": "ReplicaSet",
                "name": "test-rs",
                "uid": _uid("ReplicaSet", "test-rs"),
            }
        ],
        "resourceVersion": str(10000 + j),
        "uid": _uid("Pod", name),
    }
    spec: dict[str, Any] = {
        "containers": [
            {
                "image": "registry.k8s.io/pause:3.10",
                "imagePullPolicy": "IfNotPresent",
                "name": "pause",
                "resources": {"claims": [{"name": "resource"}], "requests": {"cpu": "100m", "memory": "128Mi"}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [
                    {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": vol, "readOnly": True}
                ],
            }
        ],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": TEMPLATE}],
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {"effect": "NoExecute", "key": f"node.kubernetes.io/{k}", "operator": "Exists", "tolerationSeconds": 300}
            for k in ("not-ready", "unreachable")
        ],
        "volumes": [
            {
                "name": vol,
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                        "path": "namespace",
                                    }
                                ]
                            }
                        },
                    ],
                },
            }
        ],
    }
    if node_name is None:
        status = {
            "conditions": [
                {
                    "lastProbeTime": None,
                    "lastTransitionTime": t,
                    "message": "0/500 nodes are available: 500 cannot allocate all claims.",
                    "reason": "Unschedulable",
                    "status": "False",
                    "type": "PodScheduled",
                }
            ],
            "phase": "Pending",
            "qosClass": "Burstable",
        }
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
    spec["nodeName"] = node_name
    meta["managedFields"].append(
        _managed(
            "kubelet",
            t,
            [
                "f:status|f:conditions",
                "f:status|f:containerStatuses",
                "f:status|f:hostIP",
                "f:status|f:phase",
                "f:status|f:podIP",
                "f:status|f:startTime",
            ],
            subresource="status",
        )
    )
    host_ip = f"172.18.0.{j % 250 + 2}"
    pod_ip = f"10.{j // 65536}.{j // 256 % 256}.{j % 256}"
    status = {
        "conditions": [
            {"lastProbeTime": None, "lastTransitionTime": t, "status": "True", "type": c}
            for c in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
        "containerStatuses": [
            {
                "containerID": f"containerd://{hashlib.sha256(name.encode()).hexdigest()}",
                "image": "registry.k8s.io/pause:3.10",
                "imageID": _IMAGES[0][0],
                "lastState": {},
                "name": "pause",
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": t}},
                "volumeMounts": [
                    {
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        "name": vol,
                        "readOnly": True,
                        "recursiveReadOnly": "Disabled",
                    }
                ],
            }
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "phase": "Running",
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "qosClass": "Burstable",
        "resourceClaimStatuses": [{"name": "resource", "resourceClaimName": claim_name}],
        "startTime": t,
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def claim(j: int, node_name: str, device: int) -> dict[str, Any]:
    pod_name = _pod_name(j)
    name = f"{pod_name}-resource-{_suffix('claim', j)}"
    t = _ts(600 + j)
    return {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {
            "annotations": {"resource.kubernetes.io/pod-claim-name": "resource"},
            "creationTimestamp": t,
            "finalizers": ["resource.kubernetes.io/delete-protection"],
            "generateName": f"{pod_name}-resource-",
            "managedFields": [
                _managed(
                    "kube-controller-manager",
                    t,
                    [
                        "f:metadata|f:annotations",
                        "f:metadata|f:generateName",
                        "f:metadata|f:ownerReferences",
                        "f:spec|f:devices",
                    ],
                    api_version=V1,
                ),
                _managed(
                    "kube-scheduler",
                    t,
                    ["f:status|f:allocation", "f:status|f:reservedFor"],
                    subresource="status",
                    api_version=V1,
                ),
            ],
            "name": name,
            "namespace": NAMESPACE,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "Pod",
                    "name": pod_name,
                    "uid": _uid("Pod", pod_name),
                }
            ],
            "resourceVersion": str(20000 + j),
            "uid": _uid("ResourceClaim", name),
        },
        "spec": claim_spec(),
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"device": f"gpu-{device}", "driver": DRIVER, "pool": node_name, "request": "req-0"}]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                    ]
                },
            },
            "reservedFor": [{"name": pod_name, "resource": "pods", "uid": _uid("Pod", pod_name)}],
        },
    }


def pci_address(d: int) -> str:
    """A GPU's PCI address as drivers publish it (`0000:68:00.0`), on buses that read as strings
    in YAML 1.1 too (68, 79, 8a, ...: no base-60 number), written plain as go-yaml writes it."""
    return f"0000:{0x68 + 0x11 * (d % 8):02x}:{d // 8:02x}.0"


def cluster_dump(
    nodes: int = 500,
    pods: int = 5000,
    devices_per_node: int = 10,
    running_fraction: float = 0.6,
    pci_addresses: bool = False,
) -> list[dict[str, Any]]:
    """The dump's objects: nodes, their slices, the class and template, then pods (the first
    `running_fraction` bound round-robin to nodes with an allocated claim each) and claims.
    `pci_addresses`: every device also has a `pciBusID` attribute (see pci_address)."""
    objs: list[dict[str, Any]] = [device_class(), claim_template()]
    objs += [node(i, devices_per_node) for i in range(nodes)]
    slices = [resource_slice(i, devices_per_node) for i in range(nodes)]
    if pci_addresses:
        for sl in slices:
            for d, dev in enumerate(sl["spec"]["devices"]):
                dev["attributes"]["pciBusID"] = {"string": pci_address(d)}
    objs += slices
    running = min(int(pods * running_fraction), nodes * devices_per_node)
    claims = []
    for j in range(pods):
        if j < running:
            node_name = f"node-{j % nodes}"
            c = claim(j, node_name, j // nodes)
            claims.append(c)
            objs.append(pod(j, node_name, c["metadata"]["name"]))
        else:
            objs.append(pod(j, None, None))
    return objs + claims


def as_list(objs: list[dict[str, Any]]) -> dict[str, Any]:
    """What `kubectl get ... -o yaml` prints: a `List` with `metadata.resourceVersion`."""
    return {"apiVersion": "v1", "items": objs, "kind": "List", "metadata": {"resourceVersion": ""}}


def as_v1beta1(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same objects as a 1.32/1.33 cluster serves them (`resource.k8s.io/v1beta1`): a
    device's fields under `basic`, a request's exact fields on the request itself (the inverse
    of draopt.kube.convert)."""
    import copy

    out = []
    for o in objs:
        if not o["apiVersion"].startswith("resource.k8s.io/"):
            out.append(o)
            continue
        o = copy.deepcopy(o)
        o["apiVersion"] = "resource.k8s.io/v1beta1"
        for m in o["metadata"].get("managedFields", []):
            m["apiVersion"] = "resource.k8s.io/v1beta1"
        if o["kind"] == "ResourceSlice":
            o["spec"]["devices"] = [
                {"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}} for d in o["spec"]["devices"]
            ]
        spec = (
            o["spec"]
            if o["kind"] == "ResourceClaim"
            else o["spec"].get("spec")
            if o["kind"] == "ResourceClaimTemplate"
            else None
        )
        if spec is not None:
            spec["devices"]["requests"] = [
                {"name": r["name"], **r.get("exactly", {})} for r in spec["devices"]["requests"]
            ]
        out.append(o)
    return out
