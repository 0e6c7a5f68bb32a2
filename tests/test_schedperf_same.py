"""First-fit placements of the scheduler_perf DRA workloads (benchmarks/schedperf_workloads.py,
scaled down) stay bit for bit what they were before issue 19's speed-ups: pod -> node and every
claim's AllocationResult (resource.k8s.io/v1 AllocationResult as to_k8s() writes it), hashed.

The expected digests were computed with the code at commit bcf1b98 (before the speed-ups); a
change here means the placement changed, which the speed-ups must not do. Kubernetes source of
the workloads: test/integration/scheduler_perf/dra/ (see benchmarks/schedperf_workloads.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import schedperf_workloads as sw  # noqa: E402

from draopt.kube.features import Features  # noqa: E402
from draopt.kube.loader import load_text  # noqa: E402
from draopt.placement import place  # noqa: E402

# (workload, scale, tie-break seed) -> sha256 of the placement; computed at bcf1b98.
EXPECTED: dict[tuple[str, float, int], str] = {
    ("basic", 0.1, 0): "fcfdf33f0e388339b2ee3f7f19e11f449297d69def637c18cef75f1e074bf83c",
    ("basic", 0.04, 7): "a743a397b4300409156dc6dafcb8f46cff3fb12e24b965ad62d6a26f0cf3c731",
    ("extended-resource-25", 0.06, 0): "0019fa9b9fc1f26b68b66464aa800951baec6493309c21d14703e707112555cd",
    ("extended-resource-50", 0.06, 0): "0019fa9b9fc1f26b68b66464aa800951baec6493309c21d14703e707112555cd",
    ("prioritized-list", 0.06, 0): "dfddf47525f50acc59b9a79da9b327040a5607750a55182e2cd11afecccc76fa",
    ("partitionable", 0.1, 0): "9cfb0edb86e417f543274e4998589dac9779bfc635133d4a01c1a50c3ac0e68a",
}


def placement_digest(name: str, scale: float, seed: int = 0) -> str:
    doc = {"apiVersion": "v1", "kind": "List", "items": sw.objects(name, scale=scale)}
    objects = load_text(json.dumps(doc), f"{name}.json")
    res = place(objects, policy="first-fit", features=Features.from_gates(), seed=seed).result
    lines = [f"pod {p.pod} -> {p.node}" for p in res.pods]
    for key in sorted(res.claims):
        allocation, node = res.claims[key]
        lines.append(f"claim {key} @{node} " + json.dumps(allocation.to_k8s(), sort_keys=True))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@pytest.mark.parametrize("case", sorted(EXPECTED), ids=lambda c: f"{c[0]}-{c[1]}-seed{c[2]}")
def test_same_placement_as_before_the_speedups(case):
    name, scale, seed = case
    assert placement_digest(name, scale, seed) == EXPECTED[case]
