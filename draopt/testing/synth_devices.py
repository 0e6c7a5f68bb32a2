"""The nodes and devices of draopt.testing.synth_cluster's random clusters.

:class:`ClusterDraw` holds one cluster being drawn (documents per kind) and draws its Nodes, the
devices on them (whole and partitioned GPUs, NICs, FPGAs), the network-attached pools and the
devices already held by running pods; draopt.testing.synth_cluster adds the pending pods of each
family. Every value is drawn from the cluster's `random.Random`.
"""

from __future__ import annotations

import random
from typing import Any

V1 = "resource.k8s.io/v1"
GPU, NIC, FPGA, CXL = "gpu.example.com", "nic.example.com", "fpga.example.com", "cxl.example.com"
PCIE = "resource.kubernetes.io/pcieRoot"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"

# MIG-like profiles: name -> (memory slices, compute slices) of an 8/7 GPU.
PROFILES = {"1g": (1, 1), "2g": (2, 2), "3g": (4, 3), "4g": (4, 4), "7g": (8, 7)}


def _sel(expr: str) -> dict[str, Any]:
    return {"cel": {"expression": expr}}


def _attr(driver: str, name: str) -> str:
    return f'device.attributes["{driver}"].{name}'


class ClusterDraw:
    """One cluster being drawn; `docs` per kind, joined in a fixed order at the end."""

    def __init__(self, rng: random.Random, features: set[str], nodes: tuple[int, int], pods: tuple[int, int]):
        self.rng = rng
        self.features = features
        self.node_names = [f"node-{i}" for i in range(rng.randint(*nodes))]
        self.n_pods = rng.randint(*pods)
        # Devices per node scale with pods per node, so that supply and demand are close and
        # where first-fit puts things matters (neither "everything fits" nor "nothing does").
        self.per_node = max(1, round(1.3 * self.n_pods / len(self.node_names)))
        # Admin access on partitionable GPUs: first-fit's allocator lets admin-access allocations
        # consume counters (a known defect); the documented semantics do not.
        self.admin_mig = "admin" in features and rng.random() < 0.5
        self.namespaces: dict[str, dict[str, str]] = {"ml": {}}
        self.classes: dict[str, dict[str, Any]] = {}
        self.nodes: list[dict[str, Any]] = []
        self.slices: list[dict[str, Any]] = []
        self.templates: dict[tuple[str, str], dict[str, Any]] = {}
        self.claims: list[dict[str, Any]] = []
        self.groups: list[dict[str, Any]] = []
        self.pods: list[dict[str, Any]] = []
        self.running: list[dict[str, Any]] = []  # pods bound to nodes, holding allocated claims
        self.rules: list[dict[str, Any]] = []  # DeviceTaintRules
        self.priority_classes: list[dict[str, Any]] = []
        self.zones: dict[str, str] = {}
        self.tainted_nodes: set[str] = set()
        self.uuid = 0
        # A gang's pods share its priority (False: each keeps its own, as draws before validatePodGroup)
        self.valid_groups = True

    # ------------------------------------------------------------------ helpers
    def device_class(self, name: str, expr: str) -> str:
        if name not in self.classes:
            self.classes[name] = {
                "apiVersion": V1,
                "kind": "DeviceClass",
                "metadata": {"name": name},
                "spec": {"selectors": [_sel(expr)]},
            }
        return name

    def gpu_class(self) -> str:
        return self.device_class("gpu", f'device.driver == "{GPU}" && {_attr(GPU, "type")} == "gpu"')

    def nic_class(self) -> str:
        return self.device_class("nic", f'device.driver == "{NIC}"')

    def slice_doc(
        self,
        name: str,
        driver: str,
        pool: str,
        devices: list[dict[str, Any]],
        where: dict[str, Any],
        count: int = 1,
        counters: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {"driver": driver, "pool": {"name": pool, "generation": 1, "resourceSliceCount": count}}
        spec.update(where)
        if counters is not None:
            spec["sharedCounters"] = counters
        else:
            spec["devices"] = devices
        doc = {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}
        self.slices.append(doc)
        return doc

    def next_uuid(self) -> str:
        self.uuid += 1
        return f"GPU-{self.rng.randrange(16**6):06x}-{self.uuid:03d}"

    def template(
        self, name: str, requests: list[dict[str, Any]], constraints: list[dict[str, Any]] | None = None, ns: str = "ml"
    ) -> str:
        """A ResourceClaimTemplate, made once per instance (later calls return the name)."""
        if (ns, name) not in self.templates:
            devices: dict[str, Any] = {"requests": requests}
            if constraints:
                devices["constraints"] = constraints
            self.templates[(ns, name)] = {
                "apiVersion": V1,
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"spec": {"devices": devices}},
            }
        return name

    def pod(
        self, claims: list[tuple[str, str, str]], *, ns: str = "ml", group: str | None = None, small: bool = False
    ) -> dict[str, Any]:
        """A pending pod; claims: (pod claim name, "template"|"claim", object name)."""
        rng = self.rng
        i = len(self.pods)
        requests: dict[str, str] = {
            "cpu": rng.choice(["500m", "1", "2", "4"] if not small else ["100m", "250m"]),
            "memory": rng.choice(["1Gi", "2Gi", "8Gi"] if not small else ["128Mi"]),
        }
        container: dict[str, Any] = {"name": "main", "resources": {"requests": requests}}
        if claims and rng.random() < 0.5:
            container["resources"]["claims"] = [{"name": c[0]} for c in claims]
        spec: dict[str, Any] = {"containers": [container]}
        if self.priority_classes and rng.random() < 0.3:
            spec["priorityClassName"] = rng.choice(self.priority_classes)["metadata"]["name"]
        else:
            spec["priority"] = rng.choice([0, 0, 10, 100])
        if claims:
            spec["resourceClaims"] = [
                {"name": c[0], "resourceClaimTemplateName" if c[1] == "template" else "resourceClaimName": c[2]}
                for c in claims
            ]
        if group is not None:
            spec["schedulingGroup"] = {"podGroupName": group}
        doc = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pod-{i}",
                "namespace": ns,
                "uid": f"uid-pod-{i}",
                "creationTimestamp": f"2026-11-30T10:{i // 60:02d}:{i % 60:02d}Z",
            },
            "spec": spec,
        }
        self.pods.append(doc)
        return doc

    def pod_group(self, members: list[dict[str, Any]], min_count: int, ns: str = "ml") -> str:
        name = f"gang-{len(self.groups)}"
        self.groups.append(
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"schedulingPolicy": {"gang": {"minCount": max(1, min(min_count, len(members)))}}},
            }
        )
        # A valid group (validatePodGroup, 1.37): its pods share one priority, the group's as the
        # Priority admission plugin sets it: the first pod's PriorityClass, else the default (0).
        if not self.valid_groups:
            for p in members:
                p["spec"]["schedulingGroup"] = {"podGroupName": name}
            return name
        cls = members[0]["spec"].get("priorityClassName") if members else None
        if cls:
            self.groups[-1]["spec"]["priorityClassName"] = cls
        for p in members:
            p["spec"]["schedulingGroup"] = {"podGroupName": name}
            p["spec"].pop("priority", None)
            p["spec"].pop("priorityClassName", None)
            if cls:
                p["spec"]["priorityClassName"] = cls
        return name

    # ------------------------------------------------------------------ nodes and devices
    def count(self, low: int, share: float = 1.0) -> int:
        """How many devices of a kind a node gets: around `share` x pods per node, at most 8."""
        high = max(low, min(8, round(share * self.per_node) + 1))
        return self.rng.randint(max(low, high // 2), high)

    def build_nodes(self) -> None:
        rng = self.rng
        for name in self.node_names:
            zone = rng.choice("ab")
            self.zones[name] = zone
            alloc = {
                "cpu": str(rng.choice([4, 8, 16, 32])),
                "memory": rng.choice(["16Gi", "32Gi", "64Gi"]),
                "pods": str(rng.choice([3, 5, 110, 110])),
            }
            node: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"zone": zone, "kubernetes.io/hostname": name}},
                "status": {"allocatable": alloc},
            }
            if "taints" in self.features and rng.random() < 0.4:
                node["spec"] = {
                    "taints": [{"key": "dedicated", "value": rng.choice(["ml", "ops"]), "effect": "NoSchedule"}]
                }
                self.tainted_nodes.add(name)
            self.nodes.append(node)

    def gpus(self, node: str, count: int, roots: list[str], *, numa: int = 2) -> list[dict[str, Any]]:
        """Whole GPUs with every attribute the selectors and constraints read."""
        rng = self.rng
        out = []
        for g in range(count):
            d: dict[str, Any] = {
                "name": f"gpu-{g}",
                "attributes": {
                    "type": {"string": "gpu"},
                    "model": {"string": rng.choice(["a100", "a100", "h100", "t4"])},
                    "numa": {"int": rng.randrange(numa)},
                    "uuid": {"string": self.next_uuid()},
                    PCIE: {"string": rng.choice(roots)},
                },
                "capacity": {"memory": {"value": rng.choice(["16Gi", "40Gi", "80Gi"])}},
            }
            out.append(d)
        return out

    def node_devices(self, node: str) -> None:
        """A node's slices: GPUs (whole, and partitions of partitionable ones), NICs and FPGAs, as
        the families ask."""
        rng, f = self.rng, self.features
        roots = sorted({f"pci0000:{rng.randrange(256):02x}" for _ in range(rng.randint(1, 3))})
        gpu_roots = self.gpu_roots(roots) if "gpu-nic" in f else roots
        gpus = self.gpus(
            node,
            self.count(0 if "mig-gang" in f else 1) if "gpu-nic" not in f else len(gpu_roots),
            gpu_roots,
            numa=rng.randint(1, 3),
        )
        self.dress_gpus(gpus, gpu_roots)
        mig: list[dict[str, Any]] = []
        counters: list[dict[str, Any]] = []
        if "mig-gang" in f or self.admin_mig:
            mig, counters = self.partitions(len(gpus), roots)
        local = {"nodeName": node}
        if gpus or mig:
            devices = gpus + mig
            rng.shuffle(devices)
            n = 2 if counters else 1
            if counters:
                self.slice_doc(f"{node}-gpu-counters", GPU, f"{node}-gpu", [], local, count=n, counters=counters)
            self.slice_doc(f"{node}-gpu", GPU, f"{node}-gpu", devices, local, count=n)
        if f & {"gpu-nic", "lists"}:
            self.nic_slice(node, roots, local)
        if "all" in f:
            fpgas = [
                {"name": f"fpga-{k}", "attributes": {"model": {"string": rng.choice("xy")}, "type": {"string": "fpga"}}}
                for k in range(self.count(1, 0.6))
            ]
            self.slice_doc(f"{node}-fpga", FPGA, f"{node}-fpga", fpgas, local)

    def gpu_roots(self, roots: list[str]) -> list[str]:
        """The PCIe root of each GPU (gpu-nic): some roots hold GPUs only, some a NIC only, so GPUs
        on a root with a NIC are scarce."""
        gpu_roots = [r for r in roots for _ in range(self.rng.randint(1, 2))]
        n_gpus = self.count(1)
        return (gpu_roots * n_gpus)[:n_gpus] if gpu_roots else roots

    def dress_gpus(self, gpus: list[dict[str, Any]], gpu_roots: list[str]) -> None:
        """What the families add to whole GPUs: roots, skewed NUMA nodes, missing attributes, taints,
        node-allocatable resources."""
        rng, f = self.rng, self.features
        if "gpu-nic" in f:
            for d, r in zip(gpus, gpu_roots):
                d["attributes"][PCIE] = {"string": r}
        if "distinct" in f:
            skew = rng.choice([[0, 0, 0, 1, 1, 2], [0, 1], [0, 0, 1, 2, 3]])
            for d in gpus:  # scarce NUMA nodes and PCIe roots
                d["attributes"]["numa"] = {"int": rng.choice(skew)}
        if "awkward" in f:
            for d in gpus:  # attributes missing on some devices
                if rng.random() < 0.3:
                    d["attributes"].pop(rng.choice(["model", "numa"]))
        if "taints" in f:
            for d in gpus:
                if rng.random() < 0.2:
                    d["taints"] = [
                        {
                            "key": "maintenance",
                            "value": "true",
                            "effect": rng.choice(["NoSchedule", "NoExecute", "None"]),
                        }
                    ]
        if "node-resources" in f:
            for d in gpus:
                if rng.random() < 0.5:
                    d["nodeAllocatableResources"] = rng.choice(
                        [
                            {"cpu": {"overhead": {"perPod": "1"}}},
                            {"memory": {"overhead": {"perPod": "2Gi", "perContainer": "1Gi"}}},
                            {"cpu": {"mapping": {"deviceMultiplier": "2"}}},
                        ]
                    )

    def partitions(self, first: int, roots: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Partitionable GPUs numbered from `first`: their MIG-like devices and their counter sets."""
        rng = self.rng
        mig: list[dict[str, Any]] = []
        counters = []
        for g in range(rng.randint(1, max(1, min(3, self.per_node // 3)))):
            cs = f"gpu-{first + g}-counters"
            counters.append({"name": cs, "counters": {"memory": {"value": "8"}, "compute": {"value": "7"}}})
            names = ["7g", "4g", "3g", "2g", "2g", "1g", "1g", "1g"]
            groups = rng.random() < 0.3
            for k, prof in enumerate(n for n in names if rng.random() < 0.8):
                mem, comp = PROFILES[prof]
                mig.append(
                    {
                        "name": f"gpu-{first + g}-mig-{prof}-{k}",
                        "attributes": {
                            "type": {"string": "mig"},
                            "profile": {"string": prof},
                            "size": {"int": comp},
                            "numa": {"int": g},
                            "uuid": {"string": self.next_uuid()},
                            PCIE: {"string": rng.choice(roots)},
                        },
                        "consumesCounters": [
                            {
                                "counterSet": cs,
                                "counters": {"memory": {"value": str(mem)}, "compute": {"value": str(comp)}},
                            }
                        ],
                    }
                )
                if groups:  # read with DRADeviceCompatibilityGroups on
                    mig[-1]["consumesCounters"][0]["compatibilityGroups"] = rng.choice([["a"], ["b"], ["a", "b"]])
        return mig, counters

    def nic_slice(self, node: str, roots: list[str], local: dict[str, Any]) -> None:
        """The node's NICs: on roots with GPUs, and often one on a root no GPU has."""
        rng = self.rng
        nics = []
        nic_roots = list(roots) + ([f"pci0000:{rng.randrange(256, 512):03x}"] if rng.random() < 0.7 else [])
        for k in range(self.count(1, 0.7)):
            nics.append(
                {
                    "name": f"nic-{k}",
                    "attributes": {
                        PCIE: {"string": rng.choice(nic_roots) if k else nic_roots[-1]},
                        "speed": {"int": rng.choice([100, 200, 400])},
                    },
                }
            )
        rng.shuffle(nics)
        self.slice_doc(f"{node}-nic", NIC, f"{node}-nic", nics, local)

    def network_pools(self) -> None:
        """Pools several nodes reach: a CXL memory pool (allNodes) and shared NICs of a zone."""
        rng = self.rng
        mems = []
        multi = rng.random() < 0.5
        for k in range(rng.randint(1, 3)):
            d: dict[str, Any] = {
                "name": f"cxl-{k}",
                "attributes": {"tier": {"string": rng.choice(["fast", "slow"])}},
                "capacity": {"size": {"value": rng.choice(["64Gi", "128Gi"])}},
            }
            if multi:
                d["allowMultipleAllocations"] = True
                d["capacity"]["size"]["requestPolicy"] = {
                    "default": "16Gi",
                    "validRange": {"min": "16Gi", "step": "16Gi"},
                }
            mems.append(d)
        self.slice_doc("cxl-pool", CXL, "cxl", mems, {"allNodes": True})
        zone = rng.choice("ab")
        nics = [{"name": f"znic-{k}", "attributes": {"speed": {"int": 100}}} for k in range(rng.randint(1, 2))]
        self.slice_doc(
            f"zone-{zone}-nics",
            NIC,
            f"zone-{zone}",
            nics,
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": [zone]}]}]
                }
            },
        )
        self.device_class("cxl", f'device.driver == "{CXL}"')
        self.nic_class()

    # ------------------------------------------------------------------ devices in use
    def in_use(self) -> None:
        """One or two running pods, each holding an allocated claim on some devices of a node."""
        rng = self.rng
        local = [d for d in self.slices if d["spec"].get("nodeName") and d["spec"].get("devices")]
        taken: set[tuple[str, str]] = set()  # (slice, device): no device held twice
        drawn: dict[tuple[str, str], dict[str, int]] = {}  # (slice, counter set) -> counters drawn
        for k in range(rng.randint(1, 2)):
            if not local:
                return
            sl = rng.choice(local)
            driver, node = sl["spec"]["driver"], sl["spec"]["nodeName"]
            free = [d for d in sl["spec"]["devices"] if (sl["metadata"]["name"], d["name"]) not in taken]
            if not free:
                continue
            held = rng.sample(free, min(len(free), rng.randint(1, 2)))
            kind = held[0]["attributes"].get("type", {}).get("string")
            cls, held = self.held_class(driver, kind, held)
            if kind == "mig" and not _draw_counters(drawn, sl["metadata"]["name"], held[0]):
                continue
            taken.update((sl["metadata"]["name"], d["name"]) for d in held)
            name, pod = f"running-{k}-dev", f"running-{k}"
            self.claims.append(_allocated_claim(name, cls, driver, sl["spec"]["pool"]["name"], held, node, pod))
            self.running.append(_running_pod(pod, node, name))

    def held_class(self, driver: str, kind: str | None, held: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        """The class of devices held in use, and those it holds: one partition, or up to two whole GPUs."""
        if driver == NIC:
            cls = self.nic_class()
        elif driver == FPGA:
            cls = self.device_class("fpga", f'device.driver == "{FPGA}"')
        elif kind == "mig":
            cls = self.device_class("mig", f'device.driver == "{GPU}" && {_attr(GPU, "type")} == "mig"')
            held = held[:1]
        else:
            cls = self.gpu_class()
            held = [d for d in held if d["attributes"].get("type", {}).get("string") == "gpu"][:2] or held[:1]
        return cls, held


def _draw_counters(drawn: dict[tuple[str, str], dict[str, int]], slice_name: str, partition: dict[str, Any]) -> bool:
    """Whether an in-use partition stays within its counter set (then counted in `drawn`)."""
    cs = partition["consumesCounters"][0]
    key = (slice_name, cs["counterSet"])
    use = {n: int(v["value"]) for n, v in cs["counters"].items()}
    now = drawn.setdefault(key, {"memory": 0, "compute": 0})
    if now["memory"] + use["memory"] > 8 or now["compute"] + use["compute"] > 7:
        return False
    for n, v in use.items():
        now[n] += v
    return True


def _allocated_claim(
    name: str, cls: str, driver: str, pool: str, held: list[dict[str, Any]], node: str, pod: str
) -> dict[str, Any]:
    """A claim allocated on `held` devices of `node`, reserved for `pod`."""
    return {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ml", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": cls, "count": len(held)}}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": "dev", "driver": driver, "pool": pool, "device": d["name"]} for d in held]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                    ]
                },
            },
            "reservedFor": [{"resource": "pods", "name": pod, "uid": f"uid-{pod}"}],
        },
    }


def _running_pod(pod: str, node: str, claim: str) -> dict[str, Any]:
    """A pod bound to `node`, running, using `claim`."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod, "namespace": "ml", "uid": f"uid-{pod}"},
        "spec": {
            "nodeName": node,
            "priority": 0,
            "containers": [{"name": "main", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
            "resourceClaims": [{"name": "dev", "resourceClaimName": claim}],
        },
        "status": {"phase": "Running"},
    }
