"""The drawing state of draopt.testing.scheduler_scenarios: names, quantities and the builder.

:class:`Builder` holds one scenario being drawn (documents per kind, gates, the scheduler
configuration) and draws its plain nodes and pods; the families in scheduler_scenarios dress it.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from draopt.testing import synth_cluster as sc

RUNNING_MAX = 40
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
INSTANCE = "node.kubernetes.io/instance-type"
GENERATION = "example.com/cpu-generation"
SCHED = "scheduling.k8s.io/v1beta1"
EXTENDED = "example.com/gpu"
PACKER = "bin-packing-scheduler"
CORDON = "node.kubernetes.io/unschedulable"
REGIONS = {"us-east-1": "abc", "us-west-2": "abcd"}
SIZES = {2: "large", 4: "xlarge", 8: "2xlarge", 16: "4xlarge", 32: "8xlarge", 64: "16xlarge"}
KIND_ORDER: tuple[str, ...] = ("Namespace", "PriorityClass", "DeviceClass", "Node", "ResourceSlice", "DeviceTaintRule")
KIND_ORDER += ("ResourceClaimTemplate", "ResourceClaim", "ReplicaSet", "PodGroup")
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
GI = 1024**3


# ---------------------------------------------------------------------- small helpers
def name_suffix(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice(NAME_CHARS) for _ in range(n))


def random_uid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def _cpu_milli(v: str) -> int:
    return int(v[:-1]) if v.endswith("m") else int(float(v) * 1000)


def _mem_bytes(v: str) -> int:
    units = {"Ki": 1024, "Mi": 1024**2, "Gi": GI, "Ti": 1024**4}
    for u, m in units.items():
        if v.endswith(u):
            return int(float(v[:-2]) * m)
    return int(v)


def cpu_text(rng: random.Random, milli: int) -> str:
    if milli % 1000 == 0 and rng.random() < 0.7:
        return str(milli // 1000)
    return f"{milli}m"


def mem_text(rng: random.Random, nbytes: int) -> str:
    if nbytes % GI == 0 and rng.random() < 0.6:
        return f"{nbytes // GI}Gi"
    if nbytes % (1024**2) == 0 and rng.random() < 0.7:
        return f"{nbytes // 1024**2}Mi"
    return f"{nbytes // 1024}Ki" if nbytes % 1024 == 0 else str(nbytes)


def _walk_replace(obj: Any, mapping: dict[str, str]) -> Any:
    """`obj` with every string equal to a key of `mapping` replaced (node renames)."""
    if isinstance(obj, dict):
        return {k: _walk_replace(v, mapping) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_walk_replace(v, mapping) for v in obj]
    if isinstance(obj, str):
        return mapping.get(obj, obj)
    return obj


def pod_containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return pod["spec"]["containers"]


def merge_affinity(spec: dict[str, Any], kind: str, part: str, terms: list[Any]) -> None:
    spec.setdefault("affinity", {}).setdefault(kind, {}).setdefault(part, []).extend(terms)


# ---------------------------------------------------------------------- the builder
class Builder:
    def __init__(self, rng: random.Random, families: set[str], n_nodes: int, n_pods: int):
        self.rng = rng
        self.families = families
        self.n_nodes = n_nodes
        self.n_pods = n_pods
        self.gates: dict[str, bool] = {}
        self.config: str | None = None
        self.docs: dict[str, list[dict[str, Any]]] = {k: [] for k in KIND_ORDER}
        self.nodes: list[dict[str, Any]] = []
        self.info: dict[str, dict[str, Any]] = {}  # node name -> cpu/mem/pods allocatable, zone
        self.pending: list[list[dict[str, Any]]] = []  # units of pods created together
        self.running: list[dict[str, Any]] = []
        self.namespaces: dict[str, dict[str, str]] = {}
        region = rng.choice(sorted(REGIONS))
        self.zones = [f"{region}{z}" for z in REGIONS[region][: rng.randint(1, 3)]]
        self.apps = 0
        self.made = 0

    # ------------------------------------------------------------ base clusters
    def dra_base(self, family: str, n_dra: int) -> None:
        docs = sc.random_cluster(self.rng, family, nodes=(self.n_nodes, self.n_nodes), pods=(n_dra, n_dra))
        for d in docs:
            kind = d["kind"]
            if kind == "Namespace":
                self.namespaces[d["metadata"]["name"]] = d["metadata"].get("labels", {})
            elif kind == "Node":
                self.nodes.append(d)
            elif kind == "Pod" and d["spec"].get("nodeName"):
                self.running.append(d)
            elif kind == "Pod":
                self.pending.append([d])
            else:
                self.docs[kind].append(d)
        k = self.rng.randint(1, 4)
        for i, unit in enumerate(self.pending):
            unit[0]["metadata"]["labels"] = {"app": f"trainer-{i % k}"}
        if len(self.pending) > self.n_pods:  # gangs and shared claims add pods past the bound
            self.pending = self.pending[: self.n_pods]

    def plain_nodes(self) -> None:
        rng = self.rng
        for i in range(self.n_nodes):
            name = f"node-{i}"
            cpu = rng.choice([2, 4, 8, 8, 16, 32])
            mem = cpu * rng.choice([2, 4, 4, 8])
            alloc = {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": str(rng.choice([110, 110, 58, 8]))}
            self.nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": {HOSTNAME: name}},
                    "status": {"allocatable": alloc},
                }
            )

    # ------------------------------------------------------------ nodes as real clusters have them
    def dress_nodes(self) -> None:
        for i, node in enumerate(self.nodes):
            self.dress_node(node, i)

    def dress_node(self, node: dict[str, Any], i: int) -> None:
        rng = self.rng
        name = node["metadata"]["name"]
        alloc = node["status"]["allocatable"]
        cpu, mem = _cpu_milli(alloc["cpu"]) // 1000, _mem_bytes(alloc["memory"])
        ratio = max(1, mem // GI // max(1, cpu))
        kind = {1: "c6i", 2: "c5", 4: "m5", 8: "r5"}.get(ratio, "x2iedn")
        zone = self.zones[i % len(self.zones)] if rng.random() < 0.7 else rng.choice(self.zones)
        labels = node["metadata"].setdefault("labels", {})
        labels.update(
            {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                ZONE: zone,
                "topology.kubernetes.io/region": zone[:-1],
                INSTANCE: f"{kind}.{SIZES.get(cpu, 'metal')}",
                GENERATION: str(rng.choice([3, 4, 5])),
            }
        )
        labels[HOSTNAME] = name
        cap_mem = mem + rng.choice([0, 512 * 1024**2, GI + 268 * 1024**2])
        if rng.random() < 0.4:  # kubelet's reservations: millicores and Ki
            alloc_cpu, cap_cpu = cpu * 1000 - rng.choice([0, 70, 90, 140]), str(cpu)
            alloc["cpu"] = f"{alloc_cpu}m" if alloc_cpu % 1000 else str(alloc_cpu // 1000)
            alloc["memory"] = f"{mem // 1024 - rng.randrange(0, 200000)}Ki"
            capacity = {"cpu": cap_cpu, "memory": f"{cap_mem // 1024}Ki"}
        else:
            capacity = {"cpu": str(cpu), "memory": mem_text(rng, cap_mem)}
        capacity["pods"] = alloc["pods"]
        capacity["ephemeral-storage"] = "209690584Ki"
        alloc["ephemeral-storage"] = rng.choice(["96625420948", "100Gi", "50Gi"])
        if rng.random() < 0.3:
            for h in ("hugepages-1Gi", "hugepages-2Mi"):
                alloc[h] = capacity[h] = "0"
        node["status"]["capacity"] = capacity
        node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
        self.info[name] = dict(cpu=_cpu_milli(alloc["cpu"]), mem=_mem_bytes(alloc["memory"]), pods=int(alloc["pods"]))
        self.info[name].update(used_cpu=0, used_mem=0, used_pods=0)

    def rename_nodes(self, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Long cloud-style node names (every string equal to an old name is replaced)."""
        rng = self.rng
        style = rng.randrange(3)
        mapping = {}
        for i, node in enumerate(self.nodes):
            old = node["metadata"]["name"]
            if style == 0:
                mapping[old] = f"ip-10-{rng.randrange(256)}-{i // 256}-{i % 256}.{self.zones[0][:-1]}.compute.internal"
            elif style == 1:
                mapping[old] = f"gke-prod-cluster-default-pool-{rng.getrandbits(32):08x}-{name_suffix(rng, 4)}{i}"
            else:
                mapping[old] = f"aks-nodepool1-{rng.randrange(10**8):08d}-vmss{i:06x}"
        return [_walk_replace(d, mapping) for d in docs]

    # ------------------------------------------------------------ pending pods
    def pod(self, ns: str, labels: dict[str, str], spec: dict[str, Any], name: str | None = None) -> dict[str, Any]:
        self.namespaces.setdefault(ns, {})
        self.made += 1
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name or f"pod-{self.made}-{name_suffix(self.rng)}", "namespace": ns, "labels": labels},
            "spec": spec,
        }

    def container_resources(self) -> dict[str, Any]:
        rng = self.rng
        r = rng.random()
        if r < 0.08:
            return {}  # no requests at all
        if r < 0.16:
            return {"limits": {"cpu": rng.choice(["500m", "1", "2"]), "memory": rng.choice(["512Mi", "1Gi"])}}
        req = {
            "cpu": rng.choice(["0", "10m", "100m", "250m", "500m", "1", "1500m", "2", "4"]),
            "memory": rng.choice(["0", "64Mi", "256Mi", "1Gi", "1536Mi", "2Gi", "4Gi", "1048576Ki", "8Gi"]),
        }
        if rng.random() < 0.1:
            req["ephemeral-storage"] = rng.choice(["1Gi", "10Gi"])
        out: dict[str, Any] = {"requests": req}
        if rng.random() < 0.3:
            out["limits"] = {"memory": "16Gi"}
        return out

    def plain_spec(self) -> dict[str, Any]:
        rng = self.rng
        spec: dict[str, Any] = {
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10", **self.resources_field()}]
        }
        if rng.random() < 0.2:
            spec["containers"].append(
                {"name": "log-shipper", "image": "fluent/fluent-bit:3.1", **self.resources_field()}
            )
        if rng.random() < 0.15:
            init: dict[str, Any] = {"name": "init", "image": "busybox:1.36"}
            init.update({"resources": {"requests": {"cpu": rng.choice(["2", "3"]), "memory": "512Mi"}}})
            if rng.random() < 0.3:
                init["restartPolicy"] = "Always"  # a sidecar
            spec["initContainers"] = [init]
        if self.rng.random() < 0.3:
            spec["priority"] = rng.choice([10, 100])
        return spec

    def resources_field(self) -> dict[str, Any]:
        res = self.container_resources()
        return {"resources": res} if res else {}

    def plain_pods(self, count: int) -> None:
        rng = self.rng
        while count > 0:
            self.apps += 1
            size = min(count, rng.randint(1, 6))
            ns = rng.choice(["team-a", "team-b", "batch-jobs"])
            app = rng.choice(["web", "api", "worker", "cache", "ingest"]) + f"-{self.apps}"
            spec = self.plain_spec()
            if size >= 2 and rng.random() < 0.7:
                self.replica_set(ns, app, spec, size)
            else:
                for _ in range(size):
                    self.pending.append([self.pod(ns, {"app": app}, copy.deepcopy(spec))])
            count -= size

    def replica_set(self, ns: str, app: str, spec: dict[str, Any], size: int) -> None:
        rng = self.rng
        h = "".join(rng.choice(NAME_CHARS) for _ in range(rng.choice([9, 10])))
        name, uid = f"{app}-{h}", random_uid(rng)
        labels = {"app": app, "pod-template-hash": h}
        self.docs["ReplicaSet"].append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": ns, "uid": uid, "labels": dict(labels)},
                "spec": {
                    "replicas": size,
                    "selector": {"matchLabels": dict(labels)},
                    "template": {"metadata": {"labels": dict(labels)}, "spec": copy.deepcopy(spec)},
                },
            }
        )
        owner: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": uid}
        owner.update({"controller": True, "blockOwnerDeletion": True})
        unit = []
        for _ in range(size):
            p = self.pod(ns, dict(labels), copy.deepcopy(spec), name=f"{name}-{name_suffix(rng)}")
            p["metadata"]["ownerReferences"] = [dict(owner)]
            unit.append(p)
        self.pending.append(unit)

    def all_pending(self) -> list[dict[str, Any]]:
        return [p for unit in self.pending for p in unit]

    def units(self, share: float) -> list[list[dict[str, Any]]]:
        """About `share` of the units of pending pods (a ReplicaSet's pods are decorated alike)."""
        out = [u for u in self.pending if self.rng.random() < share]
        return out or self.pending[:1]
