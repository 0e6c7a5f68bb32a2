"""`draopt plan --consolidate` on generated running clusters (the figures of docs/planning.md,
"Consolidation"): every third node an m5.2xlarge (8 cpu, 32Gi, 0.384), m5.xlarge (4 cpu, 0.192)
or m5.large (2 cpu, 0.096), each with a 100m DaemonSet pod and ReplicaSet pods of 0.25, 0.5 or
1 cpu (2Gi per cpu) filling 20-60 % of it, spread over 8 apps, each app under a
`maxUnavailable: 50%` PodDisruptionBudget (seeded: the same cluster every run).

Per size: the command in a process of its own (`python -m draopt plan --consolidate --stats -o
json`), its wall time and peak RSS, the cost before and after, the bound and gap, proven or not,
Karpenter's simulated consolidation's cost, and the phases' statuses.

  python benchmarks/bench_consolidate.py                      # 30, 60 and 150 nodes, --time-limit 60
  python benchmarks/bench_consolidate.py --sizes 30,60,150,300,600   # the table of docs/planning.md
  python benchmarks/bench_consolidate.py --sizes 150 --time-limit 30
  python benchmarks/bench_consolidate.py --mixed --sizes 150 [--node-type n000=0.3]   # mixed shapes
  python benchmarks/bench_consolidate.py --write 150 --out /tmp/c150.yaml   # the cluster only
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import yaml

TYPES = [("m5.2xlarge", 8, "0.384"), ("m5.xlarge", 4, "0.192"), ("m5.large", 2, "0.096")]
APPS = 8


def cluster(n_nodes: int, seed: int = 1, mixed: bool = False) -> list[dict]:
    """The generated cluster's objects (see the module docstring); `mixed`: the --mixed variant."""
    if mixed:
        return mixed_cluster(n_nodes)
    rng = random.Random(seed)
    docs: list[dict] = []
    pod_id = 0
    for i in range(n_nodes):
        name, cpu = _node(i, docs)
        used, target = 0.1, cpu * rng.uniform(0.2, 0.6)
        while used < target:
            size = rng.choice([0.25, 0.5, 1.0])
            if used + size > cpu:
                break
            app = f"app{rng.randrange(APPS)}"
            docs.append(
                _pod(f"p{pod_id}", "default", name, "ReplicaSet", app, str(size), f"{int(size * 2048)}Mi", {"app": app})
            )
            pod_id += 1
            used += size
    docs += _budgets("50%")
    return docs


def mixed_cluster(n_nodes: int, seed: int = 2) -> list[dict]:
    """--mixed: the same nodes, pods of 0.3, 0.7, 1.1 or 1.7 cpu and 0.5, 1, 3 or 6 Gi (no common
    divisor worth rounding to; memory binds on some nodes) filling 20-70 % of the cpu and at most
    the memory, budgets of `maxUnavailable: 30%`."""
    rng = random.Random(seed)
    docs: list[dict] = []
    pod_id = 0
    for i in range(n_nodes):
        name, cpu = _node(i, docs)
        used, memory, target = 0.1, 0.128, cpu * rng.uniform(0.2, 0.7)
        while used < target:
            size, gib = rng.choice([0.3, 0.7, 1.1, 1.7]), rng.choice([0.5, 1, 3, 6])
            if used + size > cpu or memory + gib > cpu * 4:
                break
            app = f"app{rng.randrange(APPS)}"
            docs.append(
                _pod(
                    f"p{pod_id}",
                    "default",
                    name,
                    "ReplicaSet",
                    app,
                    f"{int(size * 1000)}m",
                    f"{int(gib * 1024)}Mi",
                    {"app": app},
                )  # fmt: skip
            )
            pod_id += 1
            used += size
            memory += gib
    docs += _budgets("30%")
    return docs


def _node(i: int, docs: list[dict]) -> tuple[str, int]:
    """Node i (the types in turn) and its DaemonSet pod, appended to `docs`: its name and cpu."""
    kind, cpu, _ = TYPES[i % 3]
    name = f"n{i:03d}"
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"node.kubernetes.io/instance-type": kind}},
            "status": {"allocatable": {"cpu": str(cpu), "memory": f"{cpu * 4}Gi", "pods": "110"}},
        }
    )
    docs.append(_pod(f"log-{name}", "kube-system", name, "DaemonSet", "log", "100m", "128Mi", {}))
    return name, cpu


def _budgets(max_unavailable: str) -> list[dict]:
    """One PodDisruptionBudget per app."""
    return [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"app{a}", "namespace": "default"},
            "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": {"app": f"app{a}"}}},
        }
        for a in range(APPS)
    ]


def _pod(name, namespace, node, owner_kind, owner, cpu, memory, labels) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": owner_kind, "name": owner, "uid": owner, "controller": True}
            ],
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
        },
        "status": {"phase": "Running"},
    }


def run(n_nodes: int, time_limit: float, workdir: str, mixed: bool = False, node_types: tuple = ()) -> dict:
    path = os.path.join(workdir, f"consolidate{n_nodes}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump_all(cluster(n_nodes, mixed=mixed), f)
    costs = os.path.join(workdir, "costs.yaml")
    with open(costs, "w") as f:
        f.write("".join(f"{kind}: {price}\n" for kind, _, price in TYPES))
    args = ["plan", "--consolidate", "-f", path, "--node-costs", costs, "--time-limit", str(time_limit)]
    args += [a for t in node_types for a in ("--node-type", t)]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "draopt", *args, "--stats", "--quiet", "-o", "json"], capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{n_nodes} nodes: exit {done.returncode}\n{done.stderr}")
    out = json.loads(done.stdout)
    stats = json.loads(done.stderr.strip().splitlines()[-1])
    return {
        "nodes": n_nodes,
        "wall_s": round(wall, 1),
        "out": out,
        "stats": stats,
        "command": "draopt " + " ".join(args),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="30,60,150")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--write", type=int, metavar="N", help="only write the N-node cluster (to --out)")
    ap.add_argument("--out", default="consolidate.yaml")
    ap.add_argument("--mixed", action="store_true", help="pods of mixed cpu and memory, 30%% budgets")
    ap.add_argument("--node-type", action="append", default=[], help="passed on (NODE=COST: new nodes like NODE)")
    args = ap.parse_args()
    if args.write:
        with open(args.out, "w") as f:
            yaml.safe_dump_all(cluster(args.write, mixed=args.mixed), f)
        return
    print(f"load average {os.getloadavg()[0]:.2f}, --time-limit {args.time_limit:g}")
    print("nodes  pods  before  after  bound  gap     proven  karpenter  wall_s  rss_mib  phases")
    with tempfile.TemporaryDirectory() as workdir:
        for n in (int(s) for s in args.sizes.split(",")):
            r = run(n, args.time_limit, workdir, args.mixed, tuple(args.node_type))
            o, s = r["out"], r["stats"]
            phases = {k: v for k, v in s.items() if k.endswith("_status") or k.endswith("_s")}
            karpenter = o["karpenter"]["cost_after"] if o["karpenter"] else "-"
            print(
                f"{n:5d}  {s['movable']:4d}  {o['cost_before']:6}  {o['cost_after']:5}  {o['bound']:5}  "
                f"{o['gap']:.2%}  {str(o['proven_minimal']):6}  {karpenter:9}  {r['wall_s']:6}  "
                f"{s['peak_rss_mib']:7}  {json.dumps(phases, sort_keys=True)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
