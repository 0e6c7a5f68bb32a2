"""Random multi-node clusters for differential tests of draopt against the real kube-scheduler.

`random_scheduler_scenario(rng, nodes=(1, 50), pods=(1, 200))` returns a :class:`Scenario`: the
Kubernetes objects as plain dicts (as ``kubectl get -o yaml`` gives them, with the fields the API
server defaults: ``spec.priority`` and ``preemptionPolicy`` from the PriorityClass,
``schedulerName``), the feature-gate overrides the scenario needs (mostly none: the release's
defaults), an optional KubeSchedulerConfiguration text and the families the draw used.

Each draw picks a few of FAMILIES:

* ``dra``: the cluster of `draopt.testing.synth_cluster.random_cluster` for one of its families
  (reported as ``dra:<family>`` too), dressed as real nodes; without it a cpu/memory cluster;
* ``preemption``: PriorityClasses (one with ``preemptionPolicy: Never``, sometimes a
  ``globalDefault``), lower-priority pods already Running on the nodes (cpu/memory, sometimes
  holding allocated ResourceClaims on free devices of their node), pending pods of higher
  priority asking for more cpu than any node has free;
* ``scheduling-gates``: pending pods with ``spec.schedulingGates``;
* ``taints``: node taints of every effect, tolerations that match and that do not
  (``Equal``/``Exists``), cordoned nodes (``spec.unschedulable`` and its taint);
* ``spread-affinity``: ``topologySpreadConstraints`` over zone/hostname (DoNotSchedule with
  ``minDomains`` sometimes, ScheduleAnyway) and inter-pod (anti-)affinity, required and preferred;
* ``node-affinity``: ``nodeSelector`` and required/preferred node affinity over zone, instance-type
  and generation labels;
* ``gangs``: PodGroups (``scheduling.k8s.io/v1beta1``, gang ``minCount`` or basic);
  ``gang-topology``: some with ``schedulingConstraints.topology`` (gate
  TopologyAwareWorkloadScheduling on);
* ``extended-resources``: a DeviceClass with ``spec.extendedResourceName`` and pods requesting
  it (or ``deviceclass.resource.kubernetes.io/<class>``), some nodes with a device plugin for it;
* ``node-resources``: devices with ``nodeAllocatableResources`` (gate DRANodeAllocatableResources);
* ``cel-errors`` (with ``dra``): GPUs of which some lack an attribute that selectors of pending
  claims read (a filter error: the pod's attempt ends where its loop meets such a device);
* ``profiles``: a scheduler configuration (two profiles and pods choosing one by
  ``spec.schedulerName``, or one profile with MostAllocated / RequestedToCapacityRatio /
  ``percentageOfNodesToScore``).

Counts: ``nodes`` bounds the Nodes and ``pods`` the *pending* Pods; Running pods are added on top
(at most RUNNING_MAX of the preemption family, plus up to 2 that synth_cluster makes).
Gangs need no gate draopt knows of (the PodGroup API is on by default in 1.36/1.37).
Containers with only ``limits`` are written as submitted (the API server copies the limits to
the requests; draopt does the same). Everything is drawn from `rng`: a seed gives the same
scenario every time.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Any

import yaml

from draopt.testing import synth_cluster as sc
from draopt.testing.scheduler_builder import (
    Builder,
    CORDON,
    EXTENDED,
    GENERATION,
    GI,
    HOSTNAME,
    INSTANCE,
    KIND_ORDER,
    PACKER,
    RUNNING_MAX,
    SCHED,
    ZONE,
    cpu_text,
    mem_text,
    merge_affinity,
    name_suffix,
    pod_containers,
    random_uid,
)

FAMILIES: tuple[str, ...] = ("dra", "preemption", "scheduling-gates", "taints", "spread-affinity", "node-affinity")
FAMILIES += ("gangs", "gang-topology", "extended-resources", "node-resources", "profiles", "cel-errors")
# Families drawn from a generator of their own (seeded from the scenario's), so that adding them
# left every earlier family's draws as they were.
_DRAWN_APART = ("cel-errors",)
CEL_ERROR_ATTRIBUTE = "tier"
DRA_FAMILIES = tuple(f"dra:{f}" for f in sc.FAMILIES)


@dataclass
class Scenario:
    documents: list[dict[str, Any]]
    gates: dict[str, bool] = field(default_factory=dict)
    scheduler_config: str | None = None
    families: frozenset[str] = frozenset()

    def pending_pods(self) -> list[dict[str, Any]]:
        return [d for d in self.documents if d["kind"] == "Pod" and not d["spec"].get("nodeName")]

    def running_pods(self) -> list[dict[str, Any]]:
        return [d for d in self.documents if d["kind"] == "Pod" and d["spec"].get("nodeName")]

    def to_yaml(self) -> str:
        """The documents as one multi-document YAML text (`draopt place -f`, the oracle's input)."""
        return yaml.safe_dump_all(self.documents, sort_keys=False)


# ---------------------------------------------------------------------- families
def _taints(b: Builder) -> None:
    rng = b.rng
    choices = [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "example.com/spot", "value": "true", "effect": "PreferNoSchedule"},
        {"key": "example.com/maintenance", "effect": "NoExecute"},
        {"key": "example.com/team", "value": "infra", "effect": "NoSchedule"},
        {"key": "example.com/noisy", "effect": "PreferNoSchedule"},
    ]
    for node in b.nodes:
        taints = node.setdefault("spec", {}).setdefault("taints", [])
        have = {(t["key"], t["effect"]) for t in taints}
        for t in rng.sample(choices, rng.choice([0, 0, 1, 1, 2])):
            if (t["key"], t["effect"]) not in have:
                taints.append(dict(t))
        if rng.random() < 0.15 and len(b.nodes) > 1:
            node["spec"]["unschedulable"] = True
            taints.append({"key": CORDON, "effect": "NoSchedule", "timeAdded": "2026-11-30T08:00:00Z"})
        if not taints:
            del node["spec"]["taints"]
        if not node["spec"]:
            del node["spec"]
    for r in b.running:  # synth_cluster's
        _tolerate_no_execute(b, r["spec"])
    tolerations: list[dict[str, Any]] = [
        {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "cpu", "effect": "NoSchedule"},  # no match
        {"key": "example.com/spot", "operator": "Exists"},
        {"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "example.com/team", "operator": "Exists", "effect": "NoSchedule"},
        {"key": CORDON, "operator": "Exists", "effect": "NoSchedule"},
        {"operator": "Exists"},
    ]
    for unit in b.units(0.5):
        picked = rng.sample(tolerations, rng.randint(1, 2))
        if picked[0].get("operator") == "Exists" and "key" not in picked[0] and rng.random() < 0.7:
            picked = picked[1:] or [tolerations[0]]
        for p in unit:
            p["spec"].setdefault("tolerations", []).extend(copy.deepcopy(picked))


def _node_affinity(b: Builder) -> None:
    rng = b.rng
    types = sorted({n["metadata"]["labels"][INSTANCE] for n in b.nodes})
    for unit in b.units(0.4):
        r = rng.random()
        spec_add: dict[str, Any] = {}
        if r < 0.3:
            spec_add["nodeSelector"] = {ZONE: rng.choice(b.zones)}
        elif r < 0.45:
            spec_add["nodeSelector"] = {INSTANCE: rng.choice(types)}
        elif r < 0.75:
            exprs = [
                {"key": ZONE, "operator": "In", "values": sorted(rng.sample(b.zones, rng.randint(1, len(b.zones))))},
                {"key": INSTANCE, "operator": "NotIn", "values": [rng.choice(types)]},
                {"key": GENERATION, "operator": "Gt", "values": [str(rng.choice([2, 3, 4]))]},
                {"key": "kubernetes.io/arch", "operator": "Exists"},
                {"key": "example.com/missing", "operator": "DoesNotExist"},
            ]
            terms = [{"matchExpressions": rng.sample(exprs, rng.randint(1, 2))} for _ in range(rng.randint(1, 2))]
            spec_add["required"] = {"nodeSelectorTerms": terms}
        else:
            spec_add["preferred"] = [
                {
                    "weight": rng.randint(1, 100),
                    "preference": {"matchExpressions": [{"key": k, "operator": "In", "values": [v]}]},
                }
                for k, v in [(ZONE, rng.choice(b.zones)), (INSTANCE, rng.choice(types))][: rng.randint(1, 2)]
            ]
        for p in unit:
            spec = p["spec"]
            if "nodeSelector" in spec_add:
                spec.setdefault("nodeSelector", {}).update(spec_add["nodeSelector"])
            if "required" in spec_add:
                na = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
                na["requiredDuringSchedulingIgnoredDuringExecution"] = copy.deepcopy(spec_add["required"])
            if "preferred" in spec_add:
                merge_affinity(
                    spec, "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", spec_add["preferred"]
                )


def _spread_affinity(b: Builder) -> None:
    rng = b.rng
    apps = sorted({p["metadata"]["labels"]["app"] for p in b.all_pending()})
    for unit in b.units(0.45):
        app = unit[0]["metadata"]["labels"]["app"]
        extra: list[tuple[str, Any]] = []
        if rng.random() < 0.6:
            extra.append(("spread", _spread_constraints(b, app)))
        if rng.random() < 0.5:
            extra.append(("affinity", _pod_affinity(b, app, rng.choice(apps))))
        for p in unit:
            for what, value in extra:
                value = copy.deepcopy(value)
                if what == "spread":
                    p["spec"]["topologySpreadConstraints"] = value
                else:
                    for kind, parts in value.items():
                        for part, terms in parts.items():
                            merge_affinity(p["spec"], kind, part, terms)

    for r in b.running:  # running pods whose anti-affinity keeps some pending pods off their node
        if rng.random() < 0.2:
            term = {"labelSelector": {"matchLabels": {"app": rng.choice(apps)}}, "topologyKey": HOSTNAME}
            merge_affinity(r["spec"], "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", [term])


def _spread_constraints(b: Builder, app: str) -> list[dict[str, Any]]:
    rng = b.rng
    out = []
    for key in rng.sample([ZONE, HOSTNAME], rng.randint(1, 2)):
        c: dict[str, Any] = {
            "maxSkew": rng.choice([1, 1, 2, 3]),
            "topologyKey": key,
            "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": {"matchLabels": {"app": app}},
        }
        if c["whenUnsatisfiable"] == "DoNotSchedule" and rng.random() < 0.3:
            c["minDomains"] = rng.randint(2, 4)
        if rng.random() < 0.15:
            c["nodeTaintsPolicy"] = "Honor"
        if rng.random() < 0.1:
            c["nodeAffinityPolicy"] = "Ignore"
        out.append(c)
    return out


def _pod_affinity(b: Builder, app: str, other: str) -> dict[str, dict[str, list[Any]]]:
    rng = b.rng
    key = rng.choice([HOSTNAME, ZONE])
    r = rng.random()
    if r < 0.3:  # one per node (or zone)
        term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    if r < 0.45:
        term = {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": [other]}]}}
        term["topologyKey"] = ZONE
        if rng.random() < 0.3:
            term["namespaceSelector"] = {}
        return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    kind = rng.choice(["podAffinity", "podAntiAffinity"])
    target = app if kind == "podAntiAffinity" else other
    weighted = {
        "weight": rng.randint(1, 100),
        "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": target}}, "topologyKey": key},
    }
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}}


def _scheduling_gates(b: Builder) -> None:
    rng = b.rng
    gates = [[{"name": "example.com/quota"}], [{"name": "kueue.x-k8s.io/admission"}, {"name": "example.com/b"}]]
    candidates = [p for p in b.all_pending()]
    for p in rng.sample(candidates, max(1, len(candidates) // rng.randint(5, 12))):
        p["spec"]["schedulingGates"] = copy.deepcopy(rng.choice(gates))


PRIORITY_CLASSES = [
    ("preemptible-batch", 100, None),
    ("production-high", 100000, None),
    ("production-no-preempt", 100000, "Never"),
]


def _priority_class(b: Builder, name: str, value: int, **extra: Any) -> dict[str, Any]:
    doc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
    doc.update(extra)
    b.docs["PriorityClass"].append(doc)
    return doc


def _priority_classes(b: Builder) -> None:
    for name, value, policy in PRIORITY_CLASSES:
        _priority_class(b, name, value, **({"preemptionPolicy": policy} if policy else {}))
    if b.rng.random() < 0.3:
        _priority_class(b, "cluster-default", 500, globalDefault=True, description="pods without a class")


def _preemption(b: Builder) -> None:
    rng = b.rng
    _priority_classes(b)
    names = [n["metadata"]["name"] for n in b.nodes]
    for r in b.running:  # synth_cluster's running pods count on their nodes
        _use(b, r["spec"]["nodeName"], 1000, GI)
    devices = _free_devices(b)
    count = 0
    for name in rng.sample(names, max(1, round(len(names) * rng.uniform(0.4, 0.9)))):
        for _ in range(rng.randint(1, 3)):
            if count >= RUNNING_MAX:
                break
            count += _running_pod(b, name, devices)
    loose = [p for p in b.all_pending() if "schedulingGroup" not in p["spec"] and not _owned(p)]
    for p in rng.sample(loose, min(len(loose), rng.randint(1, 5))):
        node = b.info[rng.choice(names)]
        p["spec"]["priorityClassName"] = rng.choice(["production-high", "production-high", "production-no-preempt"])
        p["spec"].pop("priority", None)
        res = pod_containers(p)[0].setdefault("resources", {})
        res.setdefault("requests", {})["cpu"] = cpu_text(rng, max(100, node["cpu"] * rng.randint(5, 9) // 1000 * 100))
        if "limits" in res and "cpu" in res["limits"]:
            res["limits"]["cpu"] = res["requests"]["cpu"]


def _owned(pod: dict[str, Any]) -> bool:
    return "ownerReferences" in pod["metadata"]


def _use(b: Builder, node: str, cpu: int, mem: int) -> None:
    i = b.info[node]
    i["used_cpu"] += cpu
    i["used_mem"] += mem
    i["used_pods"] += 1


def _running_pod(b: Builder, node: str, devices: dict[str, list[tuple[dict, dict]]]) -> int:
    rng = b.rng
    i = b.info[node]
    cpu = rng.randint(1, 4) * max(100, i["cpu"] // 1000 * 100)
    mem = rng.randint(1, 4) * max(64, i["mem"] // 10 // 1024**2) * 1024**2
    if i["used_cpu"] + cpu > i["cpu"] or i["used_mem"] + mem > i["mem"] or i["used_pods"] >= i["pods"]:
        return 0
    _use(b, node, cpu, mem)
    k = len(b.running)
    ns = rng.choice(["team-a", "batch-jobs"])
    b.namespaces.setdefault(ns, {})
    requests = {"cpu": cpu_text(rng, cpu), "memory": mem_text(rng, mem)}
    spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": "main", "resources": {"requests": requests}}]}
    if rng.random() < 0.6:
        spec["priorityClassName"] = "preemptible-batch"
    else:
        spec["priority"] = 0
    _tolerate_no_execute(b, spec)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"batch-{k}-{name_suffix(rng)}", "namespace": ns, "labels": {"app": f"batch-{k % 3}"}},
        "spec": spec,
        "status": {"phase": "Running"},
    }
    if devices.get(node) and rng.random() < 0.4:
        _hold_device(b, pod, devices[node].pop(rng.randrange(len(devices[node]))))
    b.running.append(pod)
    return 1


def _tolerate_no_execute(b: Builder, spec: dict[str, Any]) -> None:
    """A running pod tolerates its node's NoExecute taints (else the taint manager evicts it)."""
    node = next(n for n in b.nodes if n["metadata"]["name"] == spec["nodeName"])
    for t in node.get("spec", {}).get("taints", []):
        if t["effect"] == "NoExecute":
            spec.setdefault("tolerations", []).append({"key": t["key"], "operator": "Exists", "effect": "NoExecute"})


def _free_devices(b: Builder) -> dict[str, list[tuple[dict, dict]]]:
    """Per node: (slice, device) a running pod may hold: untainted, no counters, not allocated."""
    taken = set()
    for c in b.docs["ResourceClaim"]:
        for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
            taken.add((r["driver"], r["pool"], r["device"]))
    ruled = {r["spec"]["deviceSelector"].get("pool") for r in b.docs["DeviceTaintRule"]}
    out: dict[str, list[tuple[dict, dict]]] = {}
    for sl in b.docs["ResourceSlice"]:
        spec = sl["spec"]
        node, pool = spec.get("nodeName"), spec["pool"]["name"]
        if not node or pool in ruled:
            continue
        for d in spec.get("devices", []):
            if (spec["driver"], pool, d["name"]) in taken or _class_for(spec["driver"], d) is None:
                continue
            if d.get("taints") or d.get("consumesCounters") or d.get("nodeAllocatableResources"):
                continue
            if d.get("allowMultipleAllocations"):
                continue
            out.setdefault(node, []).append((sl, d))
    return out


def _class_for(driver: str, device: dict[str, Any]) -> tuple[str, str] | None:
    if driver == sc.NIC:
        return "nic", f'device.driver == "{sc.NIC}"'
    if driver == sc.FPGA:
        return "fpga", f'device.driver == "{sc.FPGA}"'
    if driver == sc.GPU and device.get("attributes", {}).get("type", {}).get("string") == "gpu":
        return "gpu", f'device.driver == "{sc.GPU}" && {sc._attr(sc.GPU, "type")} == "gpu"'
    return None


def _device_class(b: Builder, name: str, expr: str, extended: str | None = None) -> str:
    if not any(c["metadata"]["name"] == name for c in b.docs["DeviceClass"]):
        spec: dict[str, Any] = {"selectors": [sc._sel(expr)]}
        if extended:
            spec["extendedResourceName"] = extended
        b.docs["DeviceClass"].append(
            {"apiVersion": sc.V1, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}
        )
    return name


def _hold_device(b: Builder, pod: dict[str, Any], where: tuple[dict, dict]) -> None:
    sl, dev = where
    cls, expr = _class_for(sl["spec"]["driver"], dev) or ("", "")
    _device_class(b, cls, expr)
    meta = pod["metadata"]
    name = f"{meta['name']}-dev"
    node = sl["spec"]["nodeName"]
    result = {"request": "dev", "driver": sl["spec"]["driver"], "pool": sl["spec"]["pool"]["name"]}
    result["device"] = dev["name"]
    on_node = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    allocation = {"devices": {"results": [result]}, "nodeSelector": {"nodeSelectorTerms": [on_node]}}
    reserved = [{"resource": "pods", "name": meta["name"], "uid": f"uid-{meta['name']}"}]
    request = {"name": "dev", "exactly": {"deviceClassName": cls, "allocationMode": "ExactCount", "count": 1}}
    b.docs["ResourceClaim"].append(
        {
            "apiVersion": sc.V1,
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": meta["namespace"], "uid": random_uid(b.rng)},
            "spec": {"devices": {"requests": [request]}},
            "status": {"allocation": allocation, "reservedFor": reserved},
        }
    )
    meta["uid"] = f"uid-{meta['name']}"
    pod["spec"]["resourceClaims"] = [{"name": "dev", "resourceClaimName": name}]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "dev"}]


def _gangs(b: Builder, topology: bool) -> None:
    rng = b.rng
    loose: dict[str, list[dict[str, Any]]] = {}
    for unit in b.pending:
        for p in unit:
            if "schedulingGroup" not in p["spec"] and not _owned(p):
                loose.setdefault(p["metadata"]["namespace"], []).append(p)
    made = 0
    for _ in range(rng.randint(1, 4)):
        options = [ns for ns, ps in loose.items() if len(ps) >= 2]
        if not options:
            break
        ns = rng.choice(sorted(options))
        members = rng.sample(loose[ns], rng.randint(2, min(6, len(loose[ns]))))
        for p in members:
            loose[ns].remove(p)
        _pod_group(b, ns, members, topology and rng.random() < 0.7)
        made += 1
    for g in b.docs["PodGroup"]:  # synth_cluster's gangs too
        if topology and "schedulingConstraints" not in g["spec"] and rng.random() < 0.3:
            g["spec"]["schedulingConstraints"] = {"topology": [{"key": rng.choice([ZONE, HOSTNAME])}]}
    if not made and not b.docs["PodGroup"]:
        b.families.discard("gangs")


def _pod_group(b: Builder, ns: str, members: list[dict[str, Any]], topology: bool) -> None:
    rng = b.rng
    name = f"job-{len(b.docs['PodGroup'])}-{name_suffix(rng)}"
    if rng.random() < 0.8:
        policy: dict[str, Any] = {"gang": {"minCount": rng.randint(max(1, len(members) // 2), len(members))}}
    else:
        policy = {"basic": {}}
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": rng.choice([ZONE, ZONE, HOSTNAME])}]}
    b.docs["PodGroup"].append({"apiVersion": SCHED, "kind": "PodGroup", "metadata": {"name": name, "namespace": ns}})
    b.docs["PodGroup"][-1]["spec"] = spec
    first = dict(members[0]["spec"])
    # Mostly a valid group (validatePodGroup, 1.37): the pods' PriorityClass is the group's; one
    # in ten keeps its pods' priority apart from the group's (1.37 refuses it).
    if first.get("priorityClassName") and rng.random() < 0.9:
        spec["priorityClassName"] = first["priorityClassName"]
    elif "priority" in first and rng.random() < 0.9:
        first.pop("priority")
    for p in members:
        p["spec"]["schedulingGroup"] = {"podGroupName": name}
        for key in ("priorityClassName", "priority", "schedulerName"):  # a job's pods share these
            p["spec"].pop(key, None)
            if key in first:
                p["spec"][key] = first[key]


def _extended_resources(b: Builder) -> None:
    rng = b.rng
    cls = _device_class(
        b, "gpu-extended", f'device.driver == "{sc.GPU}" && {sc._attr(sc.GPU, "type")} == "gpu"', EXTENDED
    )
    assert cls
    plugin = rng.random() < 0.5
    if plugin:  # a device plugin on some nodes: those nodes use it instead of DRA
        for node in rng.sample(b.nodes, max(1, len(b.nodes) // 3)):
            n = str(rng.choice([1, 2, 4, 8]))
            node["status"]["allocatable"][EXTENDED] = n
            node["status"]["capacity"][EXTENDED] = n
    implicit = any(c["metadata"]["name"] == "gpu" for c in b.docs["DeviceClass"])
    for unit in b.units(0.25) or b.pending[:1]:
        name = "deviceclass.resource.kubernetes.io/gpu" if implicit and rng.random() < 0.3 else EXTENDED
        n = str(rng.choice([1, 1, 2]))
        for p in unit:
            res = pod_containers(p)[0].setdefault("resources", {})
            res.setdefault("requests", {})[name] = n
            res.setdefault("limits", {})[name] = n


def _node_resources(b: Builder) -> None:
    rng = b.rng
    b.gates["DRANodeAllocatableResources"] = True
    shapes = [
        {"cpu": {"overhead": {"perPod": "1"}}},
        {"memory": {"overhead": {"perPod": "2Gi", "perContainer": "1Gi"}}},
        {"cpu": {"mapping": {"deviceMultiplier": "2"}}},
    ]
    taken = set()
    for c in b.docs["ResourceClaim"]:
        for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", []):
            taken.add((r["pool"], r["device"]))
    for sl in b.docs["ResourceSlice"]:
        if sl["spec"].get("nodeName") and sl["spec"]["driver"] == sc.GPU:
            for d in sl["spec"].get("devices", []):
                if (sl["spec"]["pool"]["name"], d["name"]) not in taken and rng.random() < 0.5:
                    d["nodeAllocatableResources"] = copy.deepcopy(rng.choice(shapes))


def _cel_errors(b: Builder, rng: random.Random) -> None:
    """A selector reading an attribute some GPUs lack: the DynamicResources Filter errs (a CEL
    runtime error, "no such key") on a node whose such device the allocator evaluates, which ends
    the pod's scheduling attempt (draopt.cluster.filter_error). Most GPUs get the attribute; about
    half of the pending claims' and templates' requests read it (devices of other drivers pass)."""
    for sl in b.docs["ResourceSlice"]:
        if sl["spec"].get("driver") == sc.GPU:
            for d in sl["spec"].get("devices", []):
                if rng.random() < 0.8:
                    d.setdefault("attributes", {})[CEL_ERROR_ATTRIBUTE] = {"string": "std"}
    expression = f'device.driver != "{sc.GPU}" || device.attributes["{sc.GPU}"].{CEL_ERROR_ATTRIBUTE} == "std"'
    specs = [c["spec"] for c in b.docs["ResourceClaim"] if not c.get("status", {}).get("allocation")]
    specs += [t["spec"]["spec"] for t in b.docs["ResourceClaimTemplate"]]
    for spec in specs:
        for request in spec.get("devices", {}).get("requests", []):
            if rng.random() < 0.5:
                for part in [request.get("exactly")] + list(request.get("firstAvailable") or []):
                    if part is not None:
                        part.setdefault("selectors", []).append({"cel": {"expression": expression}})


def _profiles(b: Builder) -> None:
    rng = b.rng
    fit_most = {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}
    choice = rng.randrange(5)
    cfg: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    if choice == 0:
        cfg["profiles"] = [
            {"schedulerName": "default-scheduler"},
            {"schedulerName": PACKER, "pluginConfig": [fit_most]},
        ]
        for unit in b.units(0.4):
            for p in unit:
                p["spec"]["schedulerName"] = PACKER
        for g in b.docs["PodGroup"]:  # a gang's pods under one profile
            name = g["metadata"]["name"]
            members = [p for p in b.all_pending() if p["spec"].get("schedulingGroup", {}).get("podGroupName") == name]
            for p in members:
                p["spec"]["schedulerName"] = members[0]["spec"].get("schedulerName", "default-scheduler")
    elif choice == 1:
        cfg["profiles"] = [{"schedulerName": "default-scheduler", "pluginConfig": [fit_most]}]
    elif choice == 2:
        shape = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        if rng.random() < 0.4:
            shape = [{"utilization": 0, "score": 10}, {"utilization": 50, "score": 7}, {"utilization": 100, "score": 0}]
        strategy = {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": rng.randint(1, 3)}, {"name": "memory", "weight": 1}],
            "requestedToCapacityRatio": {"shape": shape},
        }
        args = {"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}
        cfg["profiles"] = [{"schedulerName": "default-scheduler", "pluginConfig": [args]}]
    elif choice == 3:
        cfg["percentageOfNodesToScore"] = rng.choice([5, 10, 30, 50, 70])
        cfg["profiles"] = [{"schedulerName": "default-scheduler"}]
    else:  # other score weights (a re-enabled plugin keeps its place)
        weights = [{"name": n, "weight": rng.randint(1, 5)} for n in ("TaintToleration", "PodTopologySpread")]
        profile: dict[str, Any] = {
            "schedulerName": "default-scheduler",
            "plugins": {"multiPoint": {"enabled": weights}},
        }
        if rng.random() < 0.5:
            profile["plugins"]["score"] = {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}
        cfg["profiles"] = [profile]
    b.config = yaml.safe_dump(cfg, sort_keys=False)


# ---------------------------------------------------------------------- finishing
def _pick_families(rng: random.Random) -> set[str]:
    """Each family about a third of the time; those that need an alpha gate less often (most
    draws run with the release's defaults)."""
    share = {"dra": 0.0, "gang-topology": 0.0, "node-resources": 0.15}
    fams = {f for f in FAMILIES if f not in _DRAWN_APART and rng.random() < share.get(f, 0.35)}
    if rng.random() < 0.7:
        fams.add("dra")
    if not fams:
        fams.add(rng.choice([f for f in FAMILIES if f != "gang-topology" and f not in _DRAWN_APART]))
    if fams & {"extended-resources", "node-resources"}:
        fams.add("dra")  # devices needed
    if "gangs" in fams and rng.random() < 0.4:
        fams.add("gang-topology")
    return fams


def _fix_priorities(b: Builder, pods: list[dict[str, Any]]) -> None:
    """What the Priority admission plugin writes: a class for every non-zero priority, then
    spec.priority and preemptionPolicy from the class (or the global default, else 0)."""
    classes = {c["metadata"]["name"]: c for c in b.docs["PriorityClass"]}
    default = next((c for c in classes.values() if c.get("globalDefault")), None)
    for p in pods:
        spec = p["spec"]
        name = spec.get("priorityClassName")
        if name is None and spec.get("priority"):
            name = f"priority-{spec['priority']}"
            if name not in classes:
                classes[name] = _priority_class(b, name, spec["priority"])
        if name is None and default is not None:
            name = default["metadata"]["name"]
        if name is not None:
            spec["priorityClassName"] = name
            spec["priority"] = classes[name]["value"]
            spec["preemptionPolicy"] = classes[name].get("preemptionPolicy", "PreemptLowerPriority")
        else:
            spec["priority"] = 0
            spec["preemptionPolicy"] = "PreemptLowerPriority"


def _finish_pods(b: Builder) -> list[dict[str, Any]]:
    rng = b.rng
    rng.shuffle(b.pending)  # DRA pods and plain ones interleaved; a ReplicaSet's pods together
    running, pending = b.running, b.all_pending()
    _fix_priorities(b, running + pending)
    _replica_set_templates(b, pending)
    uids: dict[str, str] = {}
    second = 0
    for p in running + pending:
        meta, spec = p["metadata"], p["spec"]
        old = meta.get("uid")
        meta["uid"] = random_uid(rng)
        if old:
            uids[old] = meta["uid"]
        if "nodeName" in spec:
            minute = 30 + second // 60
            p["status"]["startTime"] = f"2026-11-30T08:{minute:02d}:{second % 60 + 0:02d}Z"
        meta["creationTimestamp"] = f"2026-11-30T{8 + second // 3600:02d}:{(second // 60) % 60:02d}:{second % 60:02d}Z"
        second += rng.randint(1, 3) if "nodeName" not in spec else 1
        meta.setdefault("labels", {}).setdefault("app", "batch")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("restartPolicy", "Always")
        for c in spec.get("initContainers", []) + spec["containers"]:
            c.setdefault("image", "registry.k8s.io/pause:3.10")
        if "nodeName" not in spec:
            p["status"] = {"phase": "Pending"}
        _default_tolerations(spec)
    for c in b.docs["ResourceClaim"]:
        for r in c.get("status", {}).get("reservedFor", []):
            r["uid"] = uids.get(r["uid"], r["uid"])
    return running + pending


def _default_tolerations(spec: dict[str, Any]) -> None:
    """What the DefaultTolerationSeconds admission plugin adds (unless a toleration covers it)."""
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(
            t.get("key", "") in (key, "") and t.get("effect", "") in ("NoExecute", "")
            for t in spec.get("tolerations", [])
        ):
            toleration = {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            spec.setdefault("tolerations", []).append(toleration)


def _replica_set_templates(b: Builder, pending: list[dict[str, Any]]) -> None:
    """A ReplicaSet's template: its first pod's spec as written (class name, not priority)."""
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for p in pending:
        for ref in p["metadata"].get("ownerReferences", []):
            first.setdefault((p["metadata"]["namespace"], ref["name"]), p)
    for rs in b.docs["ReplicaSet"]:
        pod = first[(rs["metadata"]["namespace"], rs["metadata"]["name"])]
        drop = ("priority", "preemptionPolicy", "schedulingGates")
        rs["spec"]["template"]["spec"] = {k: copy.deepcopy(v) for k, v in pod["spec"].items() if k not in drop}


def _detect(b: Builder) -> None:
    """Families synth_cluster's draw brought in by itself, and the gates they need; fields of
    alpha gates left off are dropped, as the API server drops them."""
    compat = b.rng.random() < 0.3
    for sl in b.docs["ResourceSlice"]:
        for d in sl["spec"].get("devices", []):
            for cc in d.get("consumesCounters", []):
                if "compatibilityGroups" in cc and compat:
                    b.gates["DRADeviceCompatibilityGroups"] = True
                elif "compatibilityGroups" in cc:
                    del cc["compatibilityGroups"]
        if any("nodeAllocatableResources" in d for d in sl["spec"].get("devices", [])):
            b.families.add("node-resources")
            b.gates["DRANodeAllocatableResources"] = True
    if any("schedulingConstraints" in g["spec"] for g in b.docs["PodGroup"]):
        b.families.add("gang-topology")
        b.gates["TopologyAwareWorkloadScheduling"] = True
    if b.docs["PodGroup"]:
        b.families.add("gangs")
    for p in b.all_pending():
        for c in pod_containers(p):
            if any("/" in k for k in c.get("resources", {}).get("requests", {})):
                b.families.add("extended-resources")


def _assemble(b: Builder) -> list[dict[str, Any]]:
    pods = _finish_pods(b)
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": dict({"name": ns}, **({"labels": lb} if lb else {}))}
        for ns, lb in sorted(b.namespaces.items())
    ]
    b.docs["Namespace"] = namespaces
    b.docs["Node"] = b.nodes
    docs = [d for kind in KIND_ORDER for d in b.docs[kind]] + pods
    if b.rng.random() < 0.3:
        docs = b.rename_nodes(docs)
    return docs


def random_scheduler_scenario(
    rng: random.Random, *, nodes: tuple[int, int] = (1, 50), pods: tuple[int, int] = (1, 200)
) -> Scenario:
    """A random cluster of `nodes` Nodes and `pods` pending Pods (inclusive ranges), plus running
    pods, for the families drawn (see the module's docstring)."""
    families = _pick_families(rng)
    n_nodes, n_pods = rng.randint(*nodes), rng.randint(*pods)
    b = Builder(rng, families, n_nodes, n_pods)
    if "dra" in families:
        dra = rng.choice(sc.FAMILIES)
        families.add(f"dra:{dra}")
        b.dra_base(dra, max(1, min(n_pods, round(n_pods * rng.uniform(0.4, 1.0)))))
    else:
        b.plain_nodes()
    b.dress_nodes()
    b.plain_pods(n_pods - len(b.all_pending()))
    if "taints" in families:
        _taints(b)
    if "extended-resources" in families:
        _extended_resources(b)
    if "node-resources" in families:
        _node_resources(b)
    if "preemption" in families:
        _preemption(b)
    if "node-affinity" in families:
        _node_affinity(b)
    if "spread-affinity" in families:
        _spread_affinity(b)
    if "gangs" in families:
        _gangs(b, "gang-topology" in families)
    if "scheduling-gates" in families:
        _scheduling_gates(b)
    if "profiles" in families:
        _profiles(b)
    apart = random.Random(repr(rng.getstate()[1]))  # (see _DRAWN_APART)
    if "dra" in families and apart.random() < 0.25:
        families.add("cel-errors")
        _cel_errors(b, apart)
    _detect(b)
    docs = _assemble(b)
    return Scenario(docs, dict(sorted(b.gates.items())), b.config, frozenset(families))


__all__ = ["DRA_FAMILIES", "FAMILIES", "RUNNING_MAX", "Scenario", "random_scheduler_scenario"]
