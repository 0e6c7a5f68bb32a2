"""Gang placement with preemption (issue 17): 64 racks x 8 nodes x 8 GPUs (512 nodes, 4,096 GPUs),
500 pending PodGroups (gangs of 2-32 one-GPU pods, minCount = size, priorities 0 / 100 / 1000; a
third with a rack topology constraint when draopt reads schedulingConstraints) and a running
low-priority load (priority 0, one GPU each, a third of it in PodGroups of 4 with disruptionMode
all) that preemption displaces.

Prints, in one run, first-fit's and optimal's placed pods, priority-weighted pods, victims, time,
status and gap; targets: optimal within 60 s (`--time-limit`) with its gap printed, first-fit >=
1,000 pods/s (met / not met). Every placement is checked (draopt.cluster.check.check_placement).

  python benchmarks/bench_gangs.py             # full size
  python benchmarks/bench_gangs.py --quick     # 8 racks, 60 gangs
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from draopt.cluster.check import check_placement  # noqa: E402
from draopt.kube.features import DEFAULT_GATES, Features  # noqa: E402
from draopt.kube.loader import ObjectSet, parse_object  # noqa: E402
from draopt.placement import place  # noqa: E402

V1 = "resource.k8s.io/v1"
SCHED = "scheduling.k8s.io/v1beta1"
RACK = "topology.kubernetes.io/rack"
CLIQUE = "nvidia.com/gpu.clique"
PRIORITIES = {"batch-low": 0, "train-mid": 100, "train-high": 1000}
SIZES = [2, 4, 8, 16, 32]
SIZE_WEIGHTS = [30, 30, 20, 15, 5]


def topology_supported() -> bool:
    """Part A of issue 17 (schedulingConstraints) has landed: draopt reads the topology key."""
    from draopt.kube import workload

    return "topology_key" in getattr(workload.Gang, "__dataclass_fields__", {})


def generate(racks: int, gangs: int, running_fraction: float, seed: int, topology: bool) -> list[dict]:
    rng = random.Random(seed)
    docs: list[dict] = [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        },
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu-1", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
        },
    ]
    for name, value in PRIORITIES.items():
        docs.append(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        )
    nodes = []
    for r in range(racks):
        for i in range(8):
            n = f"rack{r:02d}-node{i}"
            nodes.append(n)
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": n,
                        "labels": {"kubernetes.io/hostname": n, RACK: f"rack{r:02d}", CLIQUE: f"rack{r:02d}-{i // 4}"},
                    },
                    "status": {"allocatable": {"cpu": "128", "memory": "1024Gi", "pods": "110"}},
                }
            )
            docs.append(
                {
                    "apiVersion": V1,
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{n}-gpus"},
                    "spec": {
                        "driver": "gpu.example.com",
                        "nodeName": n,
                        "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": f"gpu-{j}"} for j in range(8)],
                    },
                }
            )
    # The running low-priority load: one GPU per pod, on random free GPUs.
    free = [(n, j) for n in nodes for j in range(8)]
    rng.shuffle(free)
    n_running = int(len(free) * running_fraction)
    k = 0
    groups = 0
    while k < n_running:
        in_group = rng.random() < 1 / 3 and k + 4 <= n_running
        members = 4 if in_group else 1
        gname = f"batch-{groups}" if in_group else None
        if in_group:
            groups += 1
            docs.append(
                {
                    "apiVersion": SCHED,
                    "kind": "PodGroup",
                    "metadata": {"name": gname, "namespace": "default"},
                    "spec": {
                        "schedulingPolicy": {"gang": {"minCount": 4}},
                        "disruptionMode": {"all": {}},
                        "priorityClassName": "batch-low",
                        "priority": 0,
                    },
                }
            )
        for _ in range(members):
            n, j = free[k]
            name = f"load-{k:05d}"
            docs.append(
                {
                    "apiVersion": V1,
                    "kind": "ResourceClaim",
                    "metadata": {"name": f"{name}-gpu", "namespace": "default"},
                    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
                    "status": {
                        "allocation": {
                            "devices": {
                                "results": [
                                    {"request": "gpu", "driver": "gpu.example.com", "pool": n, "device": f"gpu-{j}"}
                                ]
                            },
                            "nodeSelector": {
                                "nodeSelectorTerms": [
                                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]}
                                ]
                            },
                        },
                        "reservedFor": [{"resource": "pods", "name": name, "uid": name}],
                    },
                }
            )
            spec = {
                "nodeName": n,
                "priorityClassName": "batch-low",
                "priority": 0,
                "containers": [
                    {
                        "name": "c",
                        "resources": {"requests": {"cpu": "8", "memory": "64Gi"}, "claims": [{"name": "gpu"}]},
                    }
                ],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}],
            }
            if gname:
                spec["schedulingGroup"] = {"podGroupName": gname}
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": "default", "uid": name},
                    "spec": spec,
                    "status": {
                        "phase": "Running",
                        "startTime": f"2026-01-01T{k // 3600 % 24:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z",
                    },
                }
            )
            k += 1
    # The pending gangs.
    for g in range(gangs):
        size = rng.choices(SIZES, SIZE_WEIGHTS)[0]
        pclass = rng.choice(list(PRIORITIES))
        gname = f"train-{g:03d}"
        spec: dict = {
            "schedulingPolicy": {"gang": {"minCount": size}},
            "priorityClassName": pclass,
            "priority": PRIORITIES[pclass],
        }
        if topology and g % 3 == 0 and size <= 32:
            spec["schedulingConstraints"] = {"topology": [{"key": RACK}]}
        docs.append(
            {"apiVersion": SCHED, "kind": "PodGroup", "metadata": {"name": gname, "namespace": "default"}, "spec": spec}
        )
        for i in range(size):
            name = f"{gname}-{i:02d}"
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": name,
                        "namespace": "default",
                        "uid": name,
                        "creationTimestamp": f"2026-02-01T00:{g // 60 % 60:02d}:{g % 60:02d}Z",
                    },
                    "spec": {
                        "priorityClassName": pclass,
                        "priority": PRIORITIES[pclass],
                        "schedulingGroup": {"podGroupName": gname},
                        "containers": [
                            {
                                "name": "c",
                                "resources": {"requests": {"cpu": "8", "memory": "64Gi"}, "claims": [{"name": "gpu"}]},
                            }
                        ],
                        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-1"}],
                    },
                }
            )
    return docs


def objects(docs: list[dict]) -> ObjectSet:
    out = ObjectSet()
    for i, d in enumerate(docs):
        out.add(parse_object(d, f"doc {i}"))
    return out


def report(name: str, out, elapsed: float, cpu: float) -> dict:
    """`elapsed`: wall seconds; `cpu`: this process's CPU seconds (pods/s is per CPU second: the
    machine is shared, wall time counts the other processes' load too)."""
    r = out.result
    errors = check_placement(out)
    victims = r.evictions
    row = {
        "policy": name,
        "pending": len(r.pods),
        "placed": len(r.placed_pods()),
        "weighted": r.weighted_placed(),
        "victims": len(victims),
        "victims_by_priority": dict(sorted(Counter(e.priority for e in victims).items())),
        "groups_evicted_whole": len({e.pod for e in victims if "disruptionMode all" in e.why}),
        "time_s": round(elapsed, 2),
        "cpu_s": round(cpu, 2),
        "pods_per_s": round(len(r.pods) / cpu, 1) if cpu else None,
        "pods_per_wall_s": round(len(r.pods) / elapsed, 1) if elapsed else None,
        "status": r.stats.get("status", "-"),
        "gap": r.stats.get("gap", "-"),
        "bound": r.stats.get("bound", "-"),
        "checker_errors": len(errors),
    }
    placed_prio = Counter(p.priority for p in r.pods if p.placed)
    row["placed_by_priority"] = dict(sorted(placed_prio.items()))
    print(f"{name:10s} " + "  ".join(f"{k}={v}" for k, v in row.items() if k != "policy"), flush=True)
    if errors:
        print("  checker: " + "; ".join(errors[:5]))
    return row


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--running", type=float, default=0.45, help="share of the GPUs the low-priority load holds")
    args = ap.parse_args()
    racks, gangs = (8, 60) if args.quick else (64, 500)
    topology = topology_supported()
    docs = generate(racks, gangs, args.running, args.seed, topology)
    gates = dict(DEFAULT_GATES)
    if topology:
        gates["TopologyAwareWorkloadScheduling"] = True
    features = Features.from_gates(gates)
    from draopt.allocation.allocate import warm_up

    warm_up()
    t = time.perf_counter()
    objs = objects(docs)
    print(
        f"{racks} racks x 8 nodes x 8 GPUs, {gangs} gangs, running load {args.running:.0%} of the GPUs, "
        f"topology constraints: {'yes (a third of the gangs, rack)' if topology else 'no (not read by draopt yet)'}; "
        f"read in {time.perf_counter() - t:.1f} s; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    t, c = time.perf_counter(), time.process_time()
    ff = place(objs, policy="first-fit", features=features)
    ff_s, ff_cpu = time.perf_counter() - t, time.process_time() - c
    ff_row = report("first-fit", ff, ff_s, ff_cpu)
    t, c = time.perf_counter(), time.process_time()
    opt = place(objs, policy="optimal", features=features, time_limit=args.time_limit)
    opt_s, opt_cpu = time.perf_counter() - t, time.process_time() - c
    opt_row = report("optimal", opt, opt_s, opt_cpu)
    if opt.result.stats.get("summary"):  # what was proven, led by the status (it says the preemption caveat too)
        print(f"  optimal: {opt.result.stats['summary']}")
    elif opt.result.stats.get("preemption"):
        print(f"  optimal: {opt.result.stats['preemption']}")
    if opt.result.stats.get("fallback"):
        print(f"  optimal: {opt.result.stats['fallback']}")
    ratio = opt_row["weighted"] / ff_row["weighted"] if ff_row["weighted"] else float("nan")
    print(f"optimal / first-fit weighted placed: {ratio:.3f}; victims {opt_row['victims']} vs {ff_row['victims']}")
    met_ff = ff_row["pods_per_s"] is not None and ff_row["pods_per_s"] >= 1000
    met_opt = opt_s <= args.time_limit * 1.05 and opt_row["gap"] not in (None, "-")
    print(
        f"target first-fit >= 1,000 pods/s (per CPU second): {'met' if met_ff else 'NOT met'} "
        f"({ff_row['pods_per_s']} pods/s CPU, {ff_row['pods_per_wall_s']} per wall second at load "
        f"{os.getloadavg()[0]:.1f})"
    )
    print(
        f"target optimal within {args.time_limit:.0f} s with gap printed: {'met' if met_opt else 'NOT met'} "
        f"({opt_s:.1f} s, gap {opt_row['gap']})"
    )
    ok = ff_row["checker_errors"] == 0 and opt_row["checker_errors"] == 0 and opt_row["weighted"] >= ff_row["weighted"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
