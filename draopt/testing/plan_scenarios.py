"""Small capacity-planning scenarios: a cluster of three node types and three workload mixes.

Used by tests/test_planning.py, benchmarks/bench_plan.py and notebooks/capacity_planning.ipynb.
The cluster has one node of each type, which is also the type's template for `draopt plan`:

* ``gpu-8``: 8 GPUs, 96 cpu, 768Gi (cost 32 by default);
* ``gpu-2``: 2 GPUs, 32 cpu, 128Gi (cost 9);
* ``cpu``: no GPU, 64 cpu, 256Gi (cost 3).

Mixes (`pods` scales them):

* ``training``: pods of 2 GPUs and 24 cpu, half of them in gangs of 2 (minCount 2);
* ``inference``: pods of 1 GPU and 12 cpu (cpu binds before GPUs on ``gpu-8``);
* ``mixed``: 1-GPU pods with 8 cpu and cpu-only pods of 16 cpu.

The numbers are made up for the example (nothing measured); costs are per node and hour, say.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

V1 = "resource.k8s.io/v1"
DRIVER = "gpu.example.com"
NODE_SHAPES = {  # name -> (gpus, cpu, memory)
    "gpu-8": (8, 96, "768Gi"),
    "gpu-2": (2, 32, "128Gi"),
    "cpu": (0, 64, "256Gi"),
}
DEFAULT_COSTS = {"gpu-8": Fraction(32), "gpu-2": Fraction(9), "cpu": Fraction(3)}
MIXES = ("training", "inference", "mixed")


def cluster_docs() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
        },
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "two-gpus", "namespace": "ml"},
            "spec": {
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}]}}
            },
        },
    ]
    for name, (gpus, cpu, memory) in NODE_SHAPES.items():
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"shape": name}},
                "status": {"allocatable": {"cpu": str(cpu), "memory": memory, "pods": "110"}},
            }
        )
        if gpus:
            docs.append(
                {
                    "apiVersion": V1,
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{name}-gpus"},
                    "spec": {
                        "driver": DRIVER,
                        "nodeName": name,
                        "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                        "devices": [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(gpus)],
                    },
                }
            )
    return docs


def _pod(name: str, cpu: int, memory: str, template: str | None, second: int, group: str | None = None):
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": f"uid-{name}",
            "creationTimestamp": f"2026-11-30T10:{second // 60:02d}:{second % 60:02d}Z",
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu), "memory": memory}}}]},
    }
    if template is not None:
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
        pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    if group is not None:
        pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    return pod


def workload_docs(mix: str, pods: int = 12) -> list[dict[str, Any]]:
    """The pending pods of one mix (about `pods` of them)."""
    if mix not in MIXES:
        raise ValueError(f"unknown mix {mix!r} (known: {', '.join(MIXES)})")
    docs: list[dict[str, Any]] = []
    if mix == "training":
        gangs = max(1, pods // 4)
        for g in range(gangs):
            docs.append(
                {
                    "apiVersion": "scheduling.k8s.io/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": f"train-{g}", "namespace": "ml"},
                    "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
                }
            )
        for i in range(pods):
            group = f"train-{i // 2}" if i // 2 < gangs else None
            docs.append(_pod(f"train-{i}", 24, "96Gi", "two-gpus", i, group))
    elif mix == "inference":
        for i in range(pods):
            docs.append(_pod(f"infer-{i}", 12, "32Gi", "one-gpu", i))
    else:
        for i in range(pods // 2):
            docs.append(_pod(f"infer-{i}", 8, "32Gi", "one-gpu", i))
        for i in range(pods - pods // 2):
            docs.append(_pod(f"batch-{i}", 16, "32Gi", None, 100 + i))
    return docs


def scenario(mix: str, pods: int = 12):
    """(ObjectSet of the cluster and the mix's pending pods, node types at the default costs)."""
    from draopt.studies.planning import NodeType
    from draopt.testing.audit import objects_of

    objs = objects_of(cluster_docs() + workload_docs(mix, pods))
    return objs, [NodeType(name, name, cost) for name, cost in DEFAULT_COSTS.items()]


def main(argv: list[str] | None = None) -> int:
    """`python -m draopt.testing.plan_scenarios MIX [PODS]`: the cluster and the mix's pods as YAML, for
    `draopt plan -f -`."""
    import argparse
    import sys

    import yaml

    ap = argparse.ArgumentParser(prog="python -m draopt.testing.plan_scenarios", description=main.__doc__)
    ap.add_argument("mix", choices=MIXES)
    ap.add_argument("pods", nargs="?", type=int, default=12, help="pending pods (at least 1)")
    args = ap.parse_args(argv)
    if args.pods < 1:
        ap.error(f"argument pods: {args.pods}: at least 1")
    yaml.safe_dump_all(cluster_docs() + workload_docs(args.mix, args.pods), sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
