"""kube-scheduler profiles in `draopt place --policy first-fit`: throughput and what each
node choice places, next to the optimal model.

1. Throughput: 500 nodes x 8 GPUs (128 cpu, 1024Gi), 4,000 one-GPU pods (8 cpu, 64Gi each: the
   cluster exactly full), first-fit with the default profile (Kubernetes 1.36: LeastAllocated,
   BalancedAllocation, ... percentageOfNodesToScore adaptive = 230 of 500 nodes, random ties)
   and with MostAllocated; target >= 2,500 pods/s. The same on the fragmentation-prone mix below.
2. Placement: the fragmentation-prone mix, 2,600 pods in random order asking 1, 2 or 8 GPUs
   (60 / 30 / 10 %; 8 cpu and 64Gi per GPU; GPU demand ~1.3x the 4,000 GPUs), placed by the
   default profile, MostAllocated, draopt's legacy name order, and the optimal policy
   (`draopt.placement.place(policy="optimal")`, warm-started from name-order first-fit; its
   status and gap are printed: it is optimal only when the status says so).

place_s / pods/s: the whole `place` call (workload expansion, cluster build, node choice);
node choice s / choice pods/s: first-fit's scheduling loop alone (result.stats solve_s), which
the 2,500 pods/s target is about. Prints one table. Usage: python benchmarks/bench_scheduler.py [--time-limit S] [--seed N] [--skip-optimal] [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from draopt.kube.loader import ObjectSet, parse_object
from draopt.placement import place

V1 = "resource.k8s.io/v1"


def cluster_docs(nodes: int, pod_gpus: list[int]) -> list[dict]:
    docs: list[dict] = [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        }
    ]
    for i in range(nodes):
        n = f"node-{i:03d}"
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
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
                    "pool": {"name": n, "generation": 1, "resourceSliceCount": 1},
                    "nodeName": n,
                    "devices": [{"name": f"gpu-{j}"} for j in range(8)],
                },
            }
        )
    for g in sorted(set(pod_gpus)):
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": f"gpu-{g}", "namespace": "default"},
                "spec": {
                    "spec": {
                        "devices": {
                            "requests": [
                                {
                                    "name": "gpu",
                                    "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": g},
                                }
                            ]
                        }
                    }
                },
            }
        )
    for k, g in enumerate(pod_gpus):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"p-{k:05d}",
                    "namespace": "default",
                    "creationTimestamp": f"2026-01-01T{k // 3600:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z",
                },
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "resources": {
                                "requests": {"cpu": str(8 * g), "memory": f"{64 * g}Gi"},
                                "claims": [{"name": "gpu"}],
                            },
                        }
                    ],
                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": f"gpu-{g}"}],
                },
            }
        )
    return docs


def objects(docs: list[dict]) -> ObjectSet:
    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    return objs


def row(name: str, objs: ObjectSet, pod_gpus: list[int], **kw) -> dict:
    t = time.perf_counter()
    out = place(objs, **kw)
    elapsed = time.perf_counter() - t
    res = out.result
    placed = [p for p in res.pods if p.placed]
    big = sum(1 for p in placed if out.workload.pod(p.pod).resources["cpu"] == 64)
    gpus = sum(int(out.workload.pod(p.pod).resources["cpu"]) // 8 for p in placed)
    solve = res.stats.get("solve_s")
    return {
        "run": name,
        "pods": len(res.pods),
        "placed": len(placed),
        "8-GPU placed": f"{big}/{pod_gpus.count(8)}",
        "GPUs used": gpus,
        "place_s": round(elapsed, 2),
        "pods/s": round(len(res.pods) / elapsed),
        "node choice s": solve if solve is not None else "",
        "choice pods/s": round(len(res.pods) / solve) if solve else "",
        "status": res.stats.get("status", "") + (f" gap {res.stats['gap']}" if res.stats.get("gap") else ""),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time-limit", type=float, default=60.0, help="optimal: solver time limit (s)")
    ap.add_argument("--seed", type=int, default=0, help="the mix's seed (and the tie-break seed)")
    ap.add_argument("--skip-optimal", action="store_true")
    ap.add_argument("--quick", action="store_true", help="100 nodes, a fifth of the pods, no optimal run")
    args = ap.parse_args()
    nodes, scale = (100, 5) if args.quick else (500, 1)
    rows = []
    full = [1] * (4000 // scale)
    objs = objects(cluster_docs(nodes, full))
    for name, cfg in (
        (f"{len(full)} x 1 GPU, default profile", None),
        (f"{len(full)} x 1 GPU, MostAllocated", "builtin:most-allocated"),
        (f"{len(full)} x 1 GPU, name order (legacy)", "builtin:name-order"),
    ):
        rows.append(row(name, objs, full, scheduler_config=cfg, seed=args.seed))
    rng = random.Random(args.seed)
    mix = [rng.choices([1, 2, 8], weights=[60, 30, 10])[0] for _ in range(2600 // scale)]
    objs = objects(cluster_docs(nodes, mix))
    for name, cfg in (
        ("mix, default profile", None),
        ("mix, MostAllocated", "builtin:most-allocated"),
        ("mix, name order (legacy)", "builtin:name-order"),
    ):
        rows.append(row(name, objs, mix, scheduler_config=cfg, seed=args.seed))
    if not (args.skip_optimal or args.quick):
        rows.append(row("mix, optimal", objs, mix, policy="optimal", time_limit=args.time_limit))
    cols = list(rows[0])
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in cols]
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores (timings scale with it)")
    print(
        f"{nodes} nodes x 8 GPUs; mix: {len(mix):,} pods of 1/2/8 GPUs (60/30/10 %, seed {args.seed}, "
        f"{sum(mix):,} GPUs asked for {nodes * 8:,}); target >= 2,500 pods/s (choice) for the "
        f"{len(full)} x 1 GPU runs"
    )
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("  ".join(str(r[c]).ljust(w) for c, w in zip(cols, widths)))


if __name__ == "__main__":
    main()
