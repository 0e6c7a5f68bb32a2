"""Deterministic (seeded) placement scenarios for bench_place.py: Nodes, ResourceSlices,
DeviceClasses, PriorityClasses, ResourceClaimTemplates, PodGroups and pending Pods, as plain
Kubernetes dicts. Each generator also returns a `meta` dict with what the independent validity
check and the stranding measure need (devices, counters, pod demands, gangs), computed here
from the generator's own numbers rather than read back from draopt.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any

V1 = "resource.k8s.io/v1"
GPU_DRIVER = "gpu.example.com"
NIC_DRIVER = "nic.example.com"
PCIE = "resource.kubernetes.io/pcieRoot"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"
PRIORITIES = {"low": 0, "mid": 100, "high": 1000}
_T0 = datetime(2026, 11, 30, 10, 0, 0, tzinfo=timezone.utc)


def _ts(i: int) -> str:
    return (_T0 + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _priority_classes() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
        for n, v in PRIORITIES.items()
    ]


def _node(name: str, cpu: int, mem_gi: int, pods: int, extra_mi: int = 0) -> dict[str, Any]:
    mem = f"{mem_gi * 1024 + extra_mi}Mi" if extra_mi else f"{mem_gi}Gi"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": str(cpu), "memory": mem, "pods": str(pods)}},
    }


def _add_node(docs: list[dict[str, Any]], meta: dict[str, Any], name: str, i: int, distinct: bool) -> None:
    """A GPU node: cpu 96, memory 768Gi, pods 110. distinct: memory 768Gi + (i + 1)Mi, so that no
    two nodes are alike (as kubelet reservations make them in real clusters); pods ask at most
    half the memory, so this changes no fit, only which nodes are interchangeable."""
    extra = i + 1 if distinct else 0
    docs.append(_node(name, 96, 768, 110, extra))
    meta["node_alloc"][name] = {"cpu": 96, "memory": 768 + extra / 1024, "pods": 110}


def _claim_spec(requests: list[dict[str, Any]], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A claim's `spec` from requests {name, cls, count, admin?, selector?}, and what the
    independent check needs to know about it (meta)."""
    reqs = []
    for r in requests:
        e: dict[str, Any] = {"deviceClassName": r["cls"], "allocationMode": "ExactCount", "count": r["count"]}
        if r.get("selector"):
            e["selectors"] = [{"cel": {"expression": r["selector"]}}]
        if r.get("admin"):
            e["adminAccess"] = True
        reqs.append({"name": r["name"], "exactly": e})
    spec: dict[str, Any] = {"devices": {"requests": reqs}}
    if constraints:
        spec["devices"]["constraints"] = constraints
    return spec


def _claim_meta(requests: list[dict[str, Any]], constraints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    match = [c["matchAttribute"] for c in constraints or [] if "matchAttribute" in c]
    distinct = [c["distinctAttribute"] for c in constraints or [] if "distinctAttribute" in c]
    return {
        "requests": {
            r["name"]: {
                "driver": r["driver"],
                "count": r["count"],
                "admin": bool(r.get("admin")),
                "profile": r.get("profile"),
            }
            for r in requests
        },
        "match": match,
        "distinct": distinct,
    }


def _add_template(
    docs: list[dict[str, Any]],
    meta: dict[str, Any],
    name: str,
    ns: str,
    requests: list[dict[str, Any]],
    constraints: list[dict[str, Any]] | None = None,
) -> None:
    docs.append(
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"spec": _claim_spec(requests, constraints)},
        }
    )
    meta["templates"][(ns, name)] = _claim_meta(requests, constraints)


def _pod(
    name: str,
    ns: str,
    prio: str,
    t: int,
    template: str | None,
    cpu: int,
    mem_gi: int,
    group: str | None,
    *,
    claim_name: str = "gpu",
    claim: str | None = None,
) -> dict[str, Any]:
    """A pending pod with one pod claim `claim_name`: from `template`, or the existing
    ResourceClaim `claim` (shared with other pods)."""
    ref = (
        {"name": claim_name, "resourceClaimName": claim}
        if claim
        else {"name": claim_name, "resourceClaimTemplateName": template}
    )
    spec: dict[str, Any] = {
        "priorityClassName": prio,
        "containers": [
            {
                "name": "main",
                "image": "worker:latest",
                "resources": {"requests": {"cpu": str(cpu), "memory": f"{mem_gi}Gi"}, "claims": [{"name": claim_name}]},
            }
        ],
        "resourceClaims": [ref],
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "creationTimestamp": _ts(t)},
        "spec": spec,
    }


def _pod_group(name: str, ns: str, min_count: int, prio: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"priorityClassName": prio, "schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def _jobs_to_pods(
    jobs: list[dict[str, Any]], ns: str, rng: random.Random, docs: list[dict[str, Any]], meta: dict[str, Any]
) -> None:
    """Shuffle jobs (a single pod, a gang, or pods sharing one ResourceClaim), give them
    consecutive creation times, emit the PodGroups, ResourceClaims and Pods, and record each
    pod's demand and claims in meta. A job may set its own namespace `ns`, pod claim name
    `claim_name` (default gpu) and `template` (looked up in meta['templates'])."""
    rng.shuffle(jobs)
    t = 0
    for j, job in enumerate(jobs):
        jns = job.get("ns", ns)
        cname = job.get("claim_name", "gpu")
        tspec = job.get("claim_meta") or meta["templates"].get((jns, job["template"]))

        def emit(
            name: str,
            group: str | None,
            claim: str | None = None,
            job: dict[str, Any] = job,
            jns: str = jns,
            cname: str = cname,
            tspec: dict[str, Any] | None = tspec,
        ) -> None:
            nonlocal t
            docs.append(
                _pod(
                    name,
                    jns,
                    job["prio"],
                    t,
                    job["template"],
                    job["cpu"],
                    job["mem"],
                    group,
                    claim_name=cname,
                    claim=claim,
                )
            )
            key = f"{jns}/{name}"
            ckey = f"{jns}/{claim}" if claim else f"{key}-{cname}"
            meta["pods"][key] = dict(job, group=f"{jns}/{group}" if group else None, claims=[ckey])
            if tspec is not None:
                meta["claims"].setdefault(ckey, dict(tspec, users=[]))["users"].append(key)
            t += 1

        if job.get("shared"):
            claim = f"shared-{j:05d}"
            docs.append(
                {
                    "apiVersion": V1,
                    "kind": "ResourceClaim",
                    "metadata": {"name": claim, "namespace": jns, "uid": f"uid-{jns}-{claim}"},
                    "spec": job["claim_spec"],
                }
            )
            for k in range(job["size"]):
                emit(f"{claim}-user-{k}", None, claim)
            continue
        if job["size"] == 1 and not job.get("gang"):
            emit(f"pod-{j:05d}", None)
            continue
        g = f"gang-{j:05d}"
        docs.append(_pod_group(g, jns, job["min"], job["prio"]))
        meta["gangs"][f"{jns}/{g}"] = {"min": job["min"], "size": job["size"]}
        for k in range(job["size"]):
            emit(f"{g}-{k}", g)


def _new_meta(unit: str) -> dict[str, Any]:
    return {
        "pods": {},
        "gangs": {},
        "devices": {},
        "counters": {},
        "node_alloc": {},
        "claims": {},
        "templates": {},
        "unit": unit,
    }


def _gpu_class(driver: str = GPU_DRIVER, name: str = "gpu") -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def _gpu_request(count: int, name: str = "gpu", **extra: Any) -> dict[str, Any]:
    return dict({"name": name, "cls": "gpu", "driver": GPU_DRIVER, "count": count}, **extra)


# ----------------------------------------------------------------------------- (a) GPU fleet
def gpu_fleet(
    *,
    nodes: int = 500,
    gpus: int = 8,
    pods: int = 4000,
    gang_pod_share: float = 0.15,
    seed: int = 7,
    feature_share: float = 0.0,
    distinct_nodes: bool = False,
) -> dict[str, Any]:
    """`nodes` nodes (cpu 96, memory 768Gi, pods 110), each with a per-node pool of `gpus`
    whole GPUs (driver gpu.example.com, class `gpu`). About `pods` pending pods: single-GPU
    pods, and gangs (PodGroups of 2-8 pods, minCount = size, every pod of a gang asking for the
    same 1-4 GPUs) making up ~gang_pod_share of the pods. Templates: gpu-1 .. gpu-4 (one per
    GPU count). Priorities (PriorityClass low/mid/high = 0/100/1000): singles 50/35/15 %,
    gangs 40/40/20 %. Pods ask 12 cpu and 48Gi per GPU (cpu binds with the GPUs).

    feature_share > 0 (scenario (d)): GPUs also carry `numa` (0 for the first half of a node's
    GPUs, 1 for the rest), and single-GPU pods making up ~feature_share of all pods become, in
    turn (a third each):
    * distinct: template gpu-2-distinct-numa, 2 GPUs with `distinctAttribute: gpu.example.com/numa`
      (24 cpu, 96Gi);
    * admin: a monitoring pod in namespace `monitoring` (labelled
      resource.kubernetes.io/admin-access: "true"), template gpu-admin: 1 GPU with
      `adminAccess: true` (any GPU, in use or not; 1 cpu, 4Gi);
    * shared: a ResourceClaim shared-<n> (1 GPU) in namespace ml used by 2 pods through
      `resourceClaimName` (6 cpu, 24Gi each): both pods on the GPU's node, the GPU counted once.
    The conversion draws from its own random stream (seed + 1).

    distinct_nodes: every node's allocatable memory differs by a few MiB (no fit changes; no two
    nodes interchangeable)."""
    rng = random.Random(seed)
    ns = "ml"
    docs: list[dict[str, Any]] = [_gpu_class()]
    docs += _priority_classes()
    meta = _new_meta("GPUs")
    numa = feature_share > 0
    for i in range(nodes):
        name = f"gpu-node-{i:03d}"
        _add_node(docs, meta, name, i, distinct_nodes)
        devs = []
        for j in range(gpus):
            attrs: dict[str, Any] = {"model": {"string": "h100"}, "index": {"int": j}}
            if numa:
                attrs["numa"] = {"int": j * 2 // gpus}
            devs.append({"name": f"gpu-{j}", "attributes": attrs, "capacity": {"memory": {"value": "80Gi"}}})
            meta["devices"][(GPU_DRIVER, name, f"gpu-{j}")] = {
                "node": name,
                "driver": GPU_DRIVER,
                "units": 1,
                "profile": None,
                "counter": None,
                "attrs": {f"{GPU_DRIVER}/numa": j * 2 // gpus} if numa else {},
            }
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpus"},
                "spec": {
                    "driver": GPU_DRIVER,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "nodeName": name,
                    "devices": devs,
                },
            }
        )
    for c in range(1, 5):
        _add_template(docs, meta, f"gpu-{c}", ns, [_gpu_request(c)])
    jobs: list[dict[str, Any]] = []
    gang_pods = int(pods * gang_pod_share)
    n = 0
    while n < gang_pods:
        size = rng.randint(2, 8)
        g = rng.choice([1, 2, 2, 4, 4, 4, 3])
        prio = rng.choices(list(PRIORITIES), weights=[40, 40, 20])[0]
        jobs.append(
            {
                "size": size,
                "min": size,
                "gang": True,
                "gpus": g,
                "template": f"gpu-{g}",
                "prio": prio,
                "cpu": _gpu_cpu(g),
                "mem": 48 * g,
                "profile": None,
            }
        )
        n += size
    for _ in range(pods - n):
        prio = rng.choices(list(PRIORITIES), weights=[50, 35, 15])[0]
        jobs.append(
            {"size": 1, "gpus": 1, "template": "gpu-1", "prio": prio, "cpu": _gpu_cpu(1), "mem": 48, "profile": None}
        )
    features = _mix_features(jobs, docs, meta, ns, int(pods * feature_share), random.Random(seed + 1)) if numa else {}
    _jobs_to_pods(jobs, ns, rng, docs, meta)
    demand = sum(p["gpus"] for p in meta["pods"].values()) - features.get("shared", 0) // 2
    meta["describe"] = (
        f"{nodes} nodes x {gpus} GPUs (per-node pool, class gpu), node cpu 96 / memory 768Gi"
        f"{' + (1..nodes)Mi, no two nodes alike' if distinct_nodes else ''} / "
        f"pods 110; {len(meta['pods'])} pending pods: {sum(1 for p in meta['pods'].values() if not p['group'])} "
        f"not in a gang + {sum(1 for p in meta['pods'].values() if p['group'])} pods in "
        f"{len(meta['gangs'])} gangs (2-8 pods, minCount = size, 1-4 GPUs per pod); "
        f"templates gpu-1..gpu-4; priorities 0/100/1000; GPU demand {demand} vs supply "
        f"{nodes * gpus} ({demand / (nodes * gpus):.2f}x); seed {seed}"
    )
    if features:
        meta["describe"] += (
            f"; feature pods ({sum(features.values())}, {feature_share:.0%} of {pods}): "
            f"{features['distinct']} distinct (2 GPUs, distinctAttribute numa), "
            f"{features['admin']} admin (1 GPU adminAccess, namespace monitoring), "
            f"{features['shared']} sharing {features['shared'] // 2} ResourceClaims in pairs"
        )
    meta["supply"] = nodes * gpus
    meta["demand"] = demand
    meta["features"] = features
    return {"docs": docs, "meta": meta}


def _mix_features(
    jobs: list[dict[str, Any]],
    docs: list[dict[str, Any]],
    meta: dict[str, Any],
    ns: str,
    n_pods: int,
    rng: random.Random,
) -> dict[str, int]:
    """Turn single-GPU jobs into distinct / admin / shared jobs, n_pods pods in all (see gpu_fleet)."""
    docs.append(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "monitoring", "labels": {ADMIN_LABEL: "true"}}}
    )
    _add_template(
        docs, meta, "gpu-2-distinct-numa", ns, [_gpu_request(2)], [{"distinctAttribute": f"{GPU_DRIVER}/numa"}]
    )
    _add_template(docs, meta, "gpu-admin", "monitoring", [_gpu_request(1, admin=True)])
    shared_spec = _claim_spec([_gpu_request(1)])
    singles = [i for i, j in enumerate(jobs) if j["size"] == 1 and not j.get("gang")]
    rng.shuffle(singles)
    made = {"distinct": 0, "admin": 0, "shared": 0}
    turn = 0
    drop: set[int] = set()
    while sum(made.values()) < n_pods and singles:
        i = singles.pop()
        kind = ("distinct", "admin", "shared")[turn % 3]
        turn += 1
        prio = jobs[i]["prio"]
        if kind == "distinct":
            jobs[i] = {
                "size": 1,
                "gpus": 2,
                "template": "gpu-2-distinct-numa",
                "prio": prio,
                "cpu": _gpu_cpu(2),
                "mem": 96,
                "profile": None,
                "feature": "distinct",
            }
            made["distinct"] += 1
        elif kind == "admin":
            jobs[i] = {
                "size": 1,
                "gpus": 0,
                "admin_gpus": 1,
                "template": "gpu-admin",
                "ns": "monitoring",
                "claim_name": "monitor",
                "prio": prio,
                "cpu": 1,
                "mem": 4,
                "profile": None,
                "feature": "admin",
            }
            made["admin"] += 1
        else:
            if not singles:
                break
            drop.add(singles.pop())  # two single pods become two pods sharing one claim
            tspec = _claim_meta([_gpu_request(1)])
            jobs[i] = {
                "size": 2,
                "shared": True,
                "gpus": 1,
                "template": "",
                "claim_spec": shared_spec,
                "claim_meta": tspec,
                "prio": prio,
                "cpu": 6,
                "mem": 24,
                "profile": None,
                "feature": "shared",
            }
            made["shared"] += 2
    jobs[:] = [j for i, j in enumerate(jobs) if i not in drop]
    return made


# ----------------------------------------------------------------------------- (c) GPU + NIC fleet
def gpu_nic_fleet(
    *,
    nodes: int = 5000,
    gpus: int = 8,
    roots: int = 4,
    pods: int = 40000,
    nic_share: float = 0.3,
    gang_pod_share: float = 0.25,
    gang_size: int = 8,
    seed: int = 13,
    distinct_nodes: bool = False,
) -> dict[str, Any]:
    """`nodes` nodes (cpu 96, memory 768Gi, pods 110), each with `gpus` GPUs (driver
    gpu.example.com, class gpu) and `roots` NICs (driver nic.example.com, class nic), one
    per-node pool per driver. The node has `roots` PCIe roots; each root holds gpus/roots GPUs
    and one NIC; GPUs and NICs carry `resource.kubernetes.io/pcieRoot` (pci0000:00, ...).

    `pods` pending pods, 1 GPU each (12 cpu, 48Gi; GPU demand = supply when pods = 8 x nodes):
    * gangs of `gang_size` pods (PodGroup minCount = size), ~gang_pod_share of the pods, half of
      the gangs GPU-only, half GPU+NIC;
    * single pods, `nic_share` of them GPU+NIC, the rest one GPU.
    GPU+NIC pods use template gpu-nic: one claim with requests gpu (1 GPU) and nic (1 NIC) and
    `matchAttribute: resource.kubernetes.io/pcieRoot` (the NIC on the GPU's root). GPU-only pods
    use gpu-1. Priorities 0/100/1000 (singles 50/35/15 %, gangs 40/40/20 %).
    distinct_nodes: as in gpu_fleet."""
    rng = random.Random(seed)
    ns = "train"
    docs: list[dict[str, Any]] = [_gpu_class(), _gpu_class(NIC_DRIVER, "nic")]
    docs += _priority_classes()
    meta = _new_meta("GPUs")
    per_root = gpus // roots
    for i in range(nodes):
        name = f"node-{i:04d}"
        _add_node(docs, meta, name, i, distinct_nodes)
        gdevs, ndevs = [], []
        for j in range(gpus):
            root = f"pci{j // per_root:04x}:00"
            gdevs.append(
                {
                    "name": f"gpu-{j}",
                    "attributes": {"model": {"string": "h100"}, "index": {"int": j}, PCIE: {"string": root}},
                }
            )
            meta["devices"][(GPU_DRIVER, name, f"gpu-{j}")] = {
                "node": name,
                "driver": GPU_DRIVER,
                "units": 1,
                "profile": None,
                "counter": None,
                "attrs": {PCIE: root},
            }
        for r in range(roots):
            root = f"pci{r:04x}:00"
            ndevs.append({"name": f"nic-{r}", "attributes": {"model": {"string": "cx7"}, PCIE: {"string": root}}})
            meta["devices"][(NIC_DRIVER, name, f"nic-{r}")] = {
                "node": name,
                "driver": NIC_DRIVER,
                "units": 1,
                "profile": None,
                "counter": None,
                "attrs": {PCIE: root},
            }
        for driver, devs, what in ((GPU_DRIVER, gdevs, "gpus"), (NIC_DRIVER, ndevs, "nics")):
            docs.append(
                {
                    "apiVersion": V1,
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{name}-{what}"},
                    "spec": {
                        "driver": driver,
                        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                        "nodeName": name,
                        "devices": devs,
                    },
                }
            )
    _add_template(docs, meta, "gpu-1", ns, [_gpu_request(1)])
    _add_template(
        docs,
        meta,
        "gpu-nic",
        ns,
        [_gpu_request(1), {"name": "nic", "cls": "nic", "driver": NIC_DRIVER, "count": 1}],
        [{"matchAttribute": PCIE, "requests": ["gpu", "nic"]}],
    )
    jobs: list[dict[str, Any]] = []
    n = 0
    gang_pods = int(pods * gang_pod_share)
    while n + gang_size <= gang_pods:
        nic = rng.random() < 0.5
        prio = rng.choices(list(PRIORITIES), weights=[40, 40, 20])[0]
        jobs.append(
            {
                "size": gang_size,
                "min": gang_size,
                "gang": True,
                "gpus": 1,
                "nic": nic,
                "template": "gpu-nic" if nic else "gpu-1",
                "prio": prio,
                "cpu": 12,
                "mem": 48,
                "profile": None,
            }
        )
        n += gang_size
    for _ in range(pods - n):
        nic = rng.random() < nic_share
        prio = rng.choices(list(PRIORITIES), weights=[50, 35, 15])[0]
        jobs.append(
            {
                "size": 1,
                "gpus": 1,
                "nic": nic,
                "template": "gpu-nic" if nic else "gpu-1",
                "prio": prio,
                "cpu": 12,
                "mem": 48,
                "profile": None,
            }
        )
    _jobs_to_pods(jobs, ns, rng, docs, meta)
    pp = meta["pods"].values()
    n_nic = sum(1 for p in pp if p["nic"])
    demand = sum(p["gpus"] for p in pp)
    meta["describe"] = (
        f"{nodes} nodes x ({gpus} GPUs + {roots} NICs on {roots} PCIe roots, {per_root} GPUs + 1 NIC "
        f"per root, attribute {PCIE}), node cpu 96 / memory 768Gi"
        f"{' + (1..nodes)Mi, no two nodes alike' if distinct_nodes else ''} / pods 110; {len(meta['pods'])} "
        f"pending pods, 1 GPU each: {sum(1 for p in pp if not p['group'])} single + "
        f"{sum(1 for p in pp if p['group'])} in {len(meta['gangs'])} gangs of {gang_size} "
        f"(minCount {gang_size}); {n_nic} of them GPU+NIC (one claim, matchAttribute pcieRoot); "
        f"priorities 0/100/1000; GPU demand {demand} vs supply {nodes * gpus} "
        f"({demand / (nodes * gpus):.2f}x), NIC demand {n_nic} vs {nodes * roots}; seed {seed}"
    )
    meta["supply"] = nodes * gpus
    meta["demand"] = demand
    return {"docs": docs, "meta": meta}


def _gpu_cpu(g: int) -> int:
    # 12 cpu per GPU: cpu binds no earlier than the GPUs (8 x 12 = 96)
    return 12 * g


# ----------------------------------------------------------------------------- (b) MIG fleet
MIG_PROFILES = [("7g", 7, 1), ("4g", 4, 1), ("3g", 3, 1), ("2g", 2, 2), ("1g", 1, 7)]  # name, units, devices


def mig_fleet(
    *,
    nodes: int = 32,
    gpus: int = 8,
    units: int = 7,
    demand_ratio: float = 1.1,
    any_share: float = 0.08,
    gang_share: float = 0.25,
    seed: int = 11,
    uniform_priority: bool = False,
) -> dict[str, Any]:
    """`nodes` nodes (cpu 128, memory 1024Gi, pods 110) x `gpus` MIG-partitionable GPUs. Each
    node has one pool (= node name): a counter slice with one counter set per GPU
    (gpu-<j>: memory = `units`), and per GPU a device slice with its possible partitions, big
    first: 7g, 4g, 3g, 2g x2, 1g x7 (consuming 7/4/3/2/1 units of the GPU's counter set;
    attribute `profile`). Class `mig` = any slice of the driver.

    Pending pods (total asked units ~ demand_ratio x supply): a profile request (template
    mig-<p>, selector profile == "<p>"), or, for a share `any_share` of the single pods, any
    slice (template mig-any: whatever first-fit finds first, counted as 1 unit of demand).
    Profile mix by pod count: 1g 40 %, 2g 25 %, 3g 15 %, 4g 12 %, 7g 8 %. Gangs (~gang_share
    of the pods): 2-6 pods, minCount = size, one profile per gang (1g-4g). Priorities 0/100/1000
    (50/35/15 % singles, 40/40/20 % gangs). Pods ask 2 cpu + 2 per unit, 16Gi per unit."""
    rng = random.Random(seed)
    ns = "inference"
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "mig"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]},
        }
    ]
    docs += _priority_classes()
    meta = _new_meta("MIG units")
    for i in range(nodes):
        name = f"mig-node-{i:02d}"
        docs.append(_node(name, 128, 1024, 110))
        meta["node_alloc"][name] = {"cpu": 128, "memory": 1024, "pods": 110}
        pool = {"name": name, "generation": 1, "resourceSliceCount": 1 + gpus}
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-counters"},
                "spec": {
                    "driver": GPU_DRIVER,
                    "pool": pool,
                    "nodeName": name,
                    "sharedCounters": [
                        {"name": f"gpu-{j}", "counters": {"memory": {"value": str(units)}}} for j in range(gpus)
                    ],
                },
            }
        )
        for j in range(gpus):
            meta["counters"][(name, f"gpu-{j}")] = units
            devs = []
            for prof, u, copies in MIG_PROFILES:
                for c in range(copies):
                    dname = f"gpu-{j}-{prof}" + (f"-{c}" if copies > 1 else "")
                    devs.append(
                        {
                            "name": dname,
                            "attributes": {"profile": {"string": prof}, "gpu": {"int": j}},
                            "consumesCounters": [{"counterSet": f"gpu-{j}", "counters": {"memory": {"value": str(u)}}}],
                        }
                    )
                    meta["devices"][(GPU_DRIVER, name, dname)] = {
                        "node": name,
                        "driver": GPU_DRIVER,
                        "units": u,
                        "profile": prof,
                        "counter": (name, f"gpu-{j}"),
                        "attrs": {},
                    }
            docs.append(
                {
                    "apiVersion": V1,
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{name}-gpu-{j}"},
                    "spec": {"driver": GPU_DRIVER, "pool": pool, "nodeName": name, "devices": devs},
                }
            )
    sel = 'device.attributes["gpu.example.com"].profile == "{}"'
    for prof, _, _ in MIG_PROFILES:
        _add_template(
            docs,
            meta,
            f"mig-{prof}",
            ns,
            [
                {
                    "name": "gpu",
                    "cls": "mig",
                    "driver": GPU_DRIVER,
                    "count": 1,
                    "selector": sel.format(prof),
                    "profile": prof,
                }
            ],
        )
    _add_template(docs, meta, "mig-any", ns, [{"name": "gpu", "cls": "mig", "driver": GPU_DRIVER, "count": 1}])
    units_of = {p: u for p, u, _ in MIG_PROFILES}
    supply = nodes * gpus * units
    target = demand_ratio * supply
    jobs: list[dict[str, Any]] = []
    asked = 0.0

    def job(size: int, prof: str | None, prio: str, gang: bool) -> dict[str, Any]:
        u = units_of[prof] if prof else 1
        return {
            "size": size,
            "min": size,
            "gang": gang,
            "gpus": 1,
            "profile": prof,
            "template": f"mig-{prof or 'any'}",
            "prio": prio,
            "cpu": 2 + 2 * u,
            "mem": 16 * u,
            "units": u,
        }

    while asked < target:
        if rng.random() < gang_share / 4:  # gangs of ~4 pods on average: ~gang_share of the pods
            prof = rng.choice(["1g", "2g", "3g", "4g"])
            size = rng.randint(2, 6)
            jobs.append(job(size, prof, rng.choices(list(PRIORITIES), weights=[40, 40, 20])[0], True))
        else:
            prof = (
                None
                if rng.random() < any_share
                else rng.choices(["1g", "2g", "3g", "4g", "7g"], weights=[40, 25, 15, 12, 8])[0]
            )
            jobs.append(job(1, prof, rng.choices(list(PRIORITIES), weights=[50, 35, 15])[0], False))
        asked += jobs[-1]["size"] * jobs[-1]["units"]
    if uniform_priority:  # one batch of equally important inference jobs
        for j in jobs:
            j["prio"] = "low"
    _jobs_to_pods(jobs, ns, rng, docs, meta)
    by_prof: dict[str, int] = {}
    for p in meta["pods"].values():
        by_prof[p["profile"] or "any"] = by_prof.get(p["profile"] or "any", 0) + 1
    n_gang = sum(1 for p in meta["pods"].values() if p["group"])
    meta["describe"] = (
        f"{nodes} nodes x {gpus} MIG GPUs ({units} memory units each, one counter set per GPU in "
        f"the node's pool; partitions listed big-first 7g,4g,3g,2gx2,1gx7 = 12 devices/GPU, "
        f"{nodes * gpus * 12} devices); {len(meta['pods'])} pending pods "
        f"({', '.join(f'{k}: {v}' for k, v in sorted(by_prof.items()))}; "
        f"{n_gang} of them in {len(meta['gangs'])} gangs of 2-6, minCount = size); "
        f"asked units {int(asked)} vs supply {supply} ({asked / supply:.2f}x, 'any' counted "
        f"as 1); priorities {'all 0' if uniform_priority else '0/100/1000'}; seed {seed}"
    )
    meta["supply"] = supply
    meta["demand"] = int(asked)
    return {"docs": docs, "meta": meta}
