"""The scheduler's array filter loop (draopt.scheduler.scan: per-kind tables of node answers,
stale nodes in search order, the stop once enough feasible nodes lie before the next stale one,
device groups answered in one step, alike kinds sharing a table, the fit kept for the node
chosen) gives the placements, devices and reasons of filtering node by node in search order
(Scheduler._scan_slow, what kube-scheduler's findNodesThatPassFilters does; switched on with
`Scheduler.array_scan = False`).

Clusters of more than 100 nodes, so that percentageOfNodesToScore stops the search early and
the start rotates (kube-scheduler's nextStartNodeIndex): Kubernetes' scheduler_perf DRA
workloads (benchmarks/schedperf_workloads.py, from kubernetes/kubernetes
test/integration/scheduler_perf/dra/) overfilled so that pods fail and the frontier of nodes
that reject a kind moves, and random clusters of every draopt.testing.synth_cluster family.
"""

from __future__ import annotations

import os
import random
import sys
from unittest import mock

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import schedperf_workloads as sw  # noqa: E402

from draopt.errors import DraoptError  # noqa: E402
from draopt.kube.features import Features  # noqa: E402
from draopt.placement import place  # noqa: E402
from draopt.scheduler.cycle import Scheduler  # noqa: E402
from draopt.testing.audit import objects_of  # noqa: E402
from draopt.testing.synth_cluster import FAMILIES, features_for, random_cluster  # noqa: E402


def outcome(docs, features, seed: int):
    try:
        res = place(objects_of(docs), policy="first-fit", features=features, seed=seed).result
    except DraoptError as e:
        return {"error": f"{type(e).__name__}: {e}"}
    # Reasons of unplaced pods: how many nodes were counted (which reason a node gives can be an
    # older one on both paths: nodes below a kind's frontier are not filtered again, see the
    # closing note of issue 19), and the reasons themselves for the scheduler_perf workloads.
    return {
        "pods": [(p.pod, p.node, p.prioritized_score, sum(p.reasons.values())) for p in res.pods],
        "reasons": [sorted(p.reasons.items()) for p in res.pods],
        "claims": {k: [a.to_k8s(), n] for k, (a, n) in sorted(res.claims.items())},
    }


def same_both_ways(docs, features, seed: int, reasons: bool = True):
    with mock.patch.object(Scheduler, "array_scan", False):
        node_by_node = outcome(docs, features, seed)
    with mock.patch.object(Scheduler, "array_scan", True):
        arrays = outcome(docs, features, seed)
    if not reasons:
        node_by_node.pop("reasons", None)
        arrays.pop("reasons", None)
    assert arrays == node_by_node
    return arrays


def _overfilled(name: str, scale: float, extra: int, nodes: int = 0) -> list[dict]:
    """The workload with `extra` more pods than it has room for (copies of its last pod), and
    `nodes` more copies of its first Node."""
    docs = sw.objects(name, scale=scale)
    first = next(d for d in docs if d["kind"] == "Node")
    for i in range(nodes):
        docs.insert(0, {**first, "metadata": {**first["metadata"], "name": f"extra-node-{i:03d}"}})
    pods = [d for d in docs if d["kind"] == "Pod"]
    last = pods[-1]
    for i in range(extra):
        more = {**last, "metadata": {**last["metadata"], "name": f"{last['metadata']['name']}-more-{i}"}}
        docs.append(more)
    return docs


@pytest.mark.parametrize(
    "name,scale,nodes",
    [
        ("basic", 0.22, 0),
        ("extended-resource-25", 0.22, 0),
        ("prioritized-list", 0.22, 0),
        # (pools every node reaches: few of them, on more nodes than the workload has)
        ("partitionable", 0.01, 104),
    ],
)
def test_schedperf_workloads_same_as_node_by_node(name, scale, nodes):
    docs = _overfilled(name, scale, extra=30 if nodes == 0 else 6, nodes=nodes)
    got = same_both_ways(docs, Features.from_gates(), seed=1)
    assert "error" not in got
    placed = sum(1 for p in got["pods"] if p[1] is not None)
    assert 0 < placed < len(got["pods"])  # some fail: the frontier and the reasons are compared too


def test_random_clusters_same_as_node_by_node():
    for family in FAMILIES:
        for seed in (0, 2):  # (Kubernetes' default gates, then every gate on)
            rng = random.Random(f"scan-vs-nodes-{family}-{seed}")
            docs = random_cluster(rng, family, nodes=(105, 120), pods=(30, 70))
            same_both_ways(docs, features_for(seed + 1), seed=seed, reasons=False)
