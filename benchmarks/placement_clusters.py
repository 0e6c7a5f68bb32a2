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
PRIORITIES = {"low": 0, "mid": 100, "high": 1000}
_T0 = datetime(2026, 11, 30, 10, 0, 0, tzinfo=timezone.utc)


def _ts(i: int) -> str:
    return (_T0 + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _priority_classes() -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
            for n, v in PRIORITIES.items()]


def _node(name: str, cpu: int, mem_gi: int, pods: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": str(cpu), "memory": f"{mem_gi}Gi", "pods": str(pods)}}}


def _template(name: str, ns: str, cls: str, count: int, selector: str | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selector:
        e["selectors"] = [{"cel": {"expression": selector}}]
    return {"apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": ns},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": e}]}}}}


def _pod(name: str, ns: str, prio: str, t: int, template: str, cpu: int, mem_gi: int,
         group: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "priorityClassName": prio,
        "containers": [{"name": "main", "image": "worker:latest",
                        "resources": {"requests": {"cpu": str(cpu), "memory": f"{mem_gi}Gi"},
                                      "claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "creationTimestamp": _ts(t)},
            "spec": spec}


def _pod_group(name: str, ns: str, min_count: int, prio: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"priorityClassName": prio, "schedulingPolicy": {"gang": {"minCount": min_count}}}}


def _jobs_to_pods(jobs: list[dict[str, Any]], ns: str, rng: random.Random, docs: list[dict[str, Any]],
                  meta: dict[str, Any]) -> None:
    """Shuffle jobs (a single pod or a gang), give them consecutive creation times, emit the
    PodGroups and Pods, and record each pod's demand in meta."""
    rng.shuffle(jobs)
    t = 0
    for j, job in enumerate(jobs):
        if job["size"] == 1 and not job.get("gang"):
            name = f"pod-{j:05d}"
            docs.append(_pod(name, ns, job["prio"], t, job["template"], job["cpu"], job["mem"], None))
            meta["pods"][f"{ns}/{name}"] = dict(job, group=None)
            t += 1
            continue
        g = f"gang-{j:05d}"
        docs.append(_pod_group(g, ns, job["min"], job["prio"]))
        meta["gangs"][f"{ns}/{g}"] = {"min": job["min"], "size": job["size"]}
        for k in range(job["size"]):
            name = f"{g}-{k}"
            docs.append(_pod(name, ns, job["prio"], t, job["template"], job["cpu"], job["mem"], g))
            meta["pods"][f"{ns}/{name}"] = dict(job, group=f"{ns}/{g}")
            t += 1


# ----------------------------------------------------------------------------- (a) GPU fleet
def gpu_fleet(*, nodes: int = 500, gpus: int = 8, pods: int = 4000, gang_pod_share: float = 0.15,
              seed: int = 7) -> dict[str, Any]:
    """`nodes` nodes (cpu 96, memory 768Gi, pods 110), each with a per-node pool of `gpus`
    whole GPUs (driver gpu.example.com, class `gpu`). About `pods` pending pods: single-GPU
    pods, and gangs (PodGroups of 2-8 pods, minCount = size, every pod of a gang asking for the
    same 1-4 GPUs) making up ~gang_pod_share of the pods. Templates: gpu-1 .. gpu-4 (one per
    GPU count). Priorities (PriorityClass low/mid/high = 0/100/1000): singles 50/35/15 %,
    gangs 40/40/20 %. Pods ask 12 cpu and 48Gi per GPU (cpu binds with the GPUs)."""
    rng = random.Random(seed)
    ns = "ml"
    docs: list[dict[str, Any]] = [
        {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]}}]
    docs += _priority_classes()
    meta: dict[str, Any] = {"pods": {}, "gangs": {}, "devices": {}, "counters": {}, "node_alloc": {},
                            "unit": "GPUs"}
    for i in range(nodes):
        name = f"gpu-node-{i:03d}"
        docs.append(_node(name, 96, 768, 110))
        meta["node_alloc"][name] = {"cpu": 96, "memory": 768, "pods": 110}
        devs = []
        for j in range(gpus):
            devs.append({"name": f"gpu-{j}", "attributes": {"model": {"string": "h100"}, "index": {"int": j}},
                         "capacity": {"memory": {"value": "80Gi"}}})
            meta["devices"][(GPU_DRIVER, name, f"gpu-{j}")] = {"node": name, "units": 1, "profile": None,
                                                                "counter": None}
        docs.append({"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpus"},
                     "spec": {"driver": GPU_DRIVER, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                              "nodeName": name, "devices": devs}})
    for c in range(1, 5):
        docs.append(_template(f"gpu-{c}", ns, "gpu", c))
    jobs: list[dict[str, Any]] = []
    gang_pods = int(pods * gang_pod_share)
    n = 0
    while n < gang_pods:
        size = rng.randint(2, 8)
        g = rng.choice([1, 2, 2, 4, 4, 4, 3])
        prio = rng.choices(list(PRIORITIES), weights=[40, 40, 20])[0]
        jobs.append({"size": size, "min": size, "gang": True, "gpus": g, "template": f"gpu-{g}", "prio": prio,
                     "cpu": _gpu_cpu(g), "mem": 48 * g, "profile": None})
        n += size
    for _ in range(pods - n):
        prio = rng.choices(list(PRIORITIES), weights=[50, 35, 15])[0]
        jobs.append({"size": 1, "gpus": 1, "template": "gpu-1", "prio": prio, "cpu": _gpu_cpu(1), "mem": 48,
                     "profile": None})
    _jobs_to_pods(jobs, ns, rng, docs, meta)
    demand = sum(p["gpus"] for p in meta["pods"].values())
    meta["describe"] = (f"{nodes} nodes x {gpus} GPUs (per-node pool, class gpu), node cpu 96 / memory 768Gi / "
                        f"pods 110; {len(meta['pods'])} pending pods: {sum(1 for p in meta['pods'].values() if not p['group'])} "
                        f"single-GPU + {sum(1 for p in meta['pods'].values() if p['group'])} pods in "
                        f"{len(meta['gangs'])} gangs (2-8 pods, minCount = size, 1-4 GPUs per pod); "
                        f"templates gpu-1..gpu-4; priorities 0/100/1000; GPU demand {demand} vs supply "
                        f"{nodes * gpus} ({demand / (nodes * gpus):.2f}x); seed {seed}")
    meta["supply"] = nodes * gpus
    meta["demand"] = demand
    return {"docs": docs, "meta": meta}


def _gpu_cpu(g: int) -> int:
    # 12 cpu per GPU: cpu binds no earlier than the GPUs (8 x 12 = 96)
    return 12 * g


# ----------------------------------------------------------------------------- (b) MIG fleet
MIG_PROFILES = [("7g", 7, 1), ("4g", 4, 1), ("3g", 3, 1), ("2g", 2, 2), ("1g", 1, 7)]   # name, units, devices


def mig_fleet(*, nodes: int = 32, gpus: int = 8, units: int = 7, demand_ratio: float = 1.1,
              any_share: float = 0.08, gang_share: float = 0.25, seed: int = 11,
              uniform_priority: bool = False) -> dict[str, Any]:
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
        {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "mig"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]}}]
    docs += _priority_classes()
    meta: dict[str, Any] = {"pods": {}, "gangs": {}, "devices": {}, "counters": {}, "node_alloc": {},
                            "unit": "MIG units"}
    for i in range(nodes):
        name = f"mig-node-{i:02d}"
        docs.append(_node(name, 128, 1024, 110))
        meta["node_alloc"][name] = {"cpu": 128, "memory": 1024, "pods": 110}
        pool = {"name": name, "generation": 1, "resourceSliceCount": 1 + gpus}
        docs.append({"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": f"{name}-counters"},
                     "spec": {"driver": GPU_DRIVER, "pool": pool, "nodeName": name,
                              "sharedCounters": [{"name": f"gpu-{j}", "counters": {"memory": {"value": str(units)}}}
                                                 for j in range(gpus)]}})
        for j in range(gpus):
            meta["counters"][(name, f"gpu-{j}")] = units
            devs = []
            for prof, u, copies in MIG_PROFILES:
                for c in range(copies):
                    dname = f"gpu-{j}-{prof}" + (f"-{c}" if copies > 1 else "")
                    devs.append({"name": dname,
                                 "attributes": {"profile": {"string": prof}, "gpu": {"int": j}},
                                 "consumesCounters": [{"counterSet": f"gpu-{j}",
                                                       "counters": {"memory": {"value": str(u)}}}]})
                    meta["devices"][(GPU_DRIVER, name, dname)] = {"node": name, "units": u, "profile": prof,
                                                                   "counter": (name, f"gpu-{j}")}
            docs.append({"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpu-{j}"},
                         "spec": {"driver": GPU_DRIVER, "pool": pool, "nodeName": name, "devices": devs}})
    sel = 'device.attributes["gpu.example.com"].profile == "{}"'
    for prof, _, _ in MIG_PROFILES:
        docs.append(_template(f"mig-{prof}", ns, "mig", 1, sel.format(prof)))
    docs.append(_template("mig-any", ns, "mig", 1))
    units_of = {p: u for p, u, _ in MIG_PROFILES}
    supply = nodes * gpus * units
    target = demand_ratio * supply
    jobs: list[dict[str, Any]] = []
    asked = 0.0

    def job(size: int, prof: str | None, prio: str, gang: bool) -> dict[str, Any]:
        u = units_of[prof] if prof else 1
        return {"size": size, "min": size, "gang": gang, "gpus": 1, "profile": prof,
                "template": f"mig-{prof or 'any'}", "prio": prio, "cpu": 2 + 2 * u, "mem": 16 * u, "units": u}
    while asked < target:
        if rng.random() < gang_share / 4:    # gangs of ~4 pods on average: ~gang_share of the pods
            prof = rng.choice(["1g", "2g", "3g", "4g"])
            size = rng.randint(2, 6)
            jobs.append(job(size, prof, rng.choices(list(PRIORITIES), weights=[40, 40, 20])[0], True))
        else:
            prof = None if rng.random() < any_share else \
                rng.choices(["1g", "2g", "3g", "4g", "7g"], weights=[40, 25, 15, 12, 8])[0]
            jobs.append(job(1, prof, rng.choices(list(PRIORITIES), weights=[50, 35, 15])[0], False))
        asked += jobs[-1]["size"] * jobs[-1]["units"]
    if uniform_priority:   # one batch of equally important inference jobs
        for j in jobs:
            j["prio"] = "low"
    _jobs_to_pods(jobs, ns, rng, docs, meta)
    by_prof: dict[str, int] = {}
    for p in meta["pods"].values():
        by_prof[p["profile"] or "any"] = by_prof.get(p["profile"] or "any", 0) + 1
    n_gang = sum(1 for p in meta["pods"].values() if p["group"])
    meta["describe"] = (f"{nodes} nodes x {gpus} MIG GPUs ({units} memory units each, one counter set per GPU in "
                        f"the node's pool; partitions listed big-first 7g,4g,3g,2gx2,1gx7 = 12 devices/GPU, "
                        f"{nodes * gpus * 12} devices); {len(meta['pods'])} pending pods "
                        f"({', '.join(f'{k}: {v}' for k, v in sorted(by_prof.items()))}; "
                        f"{n_gang} of them in {len(meta['gangs'])} gangs of 2-6, minCount = size); "
                        f"asked units {int(asked)} vs supply {supply} ({asked / supply:.2f}x, 'any' counted "
                        f"as 1); priorities {'all 0' if uniform_priority else '0/100/1000'}; seed {seed}")
    meta["supply"] = supply
    meta["demand"] = int(asked)
    return {"docs": docs, "meta": meta}
