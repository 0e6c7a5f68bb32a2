"""draopt.scheduler.node_scores: the plain-Python score of one node is the plugins' numpy score
(LeastAllocated, the two-resource balance), edge cases included; and a run with the per-node
scores kept between cycles chooses the nodes the plugins' own code chooses."""

from __future__ import annotations

import json
import os
import random
import sys

import numpy as np
import pytest

from draopt.scheduler.node_scores import balanced_one_node, least_allocated_one
from draopt.scheduler.plugins.balanced_allocation import balanced_allocation
from draopt.scheduler.plugins.node_resources_fit import least_requested, weighted_resource_score

EDGES = [0, 1, 2, 3, 7, 99, 100, 101, 1000, 4000, 10**9, 2**53 - 1, 2**53 + 1, 2**55, 2**56 - 3]


def _cases(seed: int, n: int):
    rnd = random.Random(seed)
    for _ in range(n):
        k = rnd.choice([1, 2, 2, 2])
        cols = []
        for _ in range(k):
            cap = rnd.choice(EDGES + [rnd.randrange(0, 2**56)])
            without = rnd.choice([0, cap, cap // 2, rnd.randrange(0, 2 * cap + 2)])
            pod = rnd.choice([0, 1, 100, 200 * 1024 * 1024, rnd.randrange(0, cap + 2)])
            cols.append((without + pod, without, cap, pod, rnd.choice([1, 1, 2, 5])))
        yield cols


@pytest.mark.parametrize("seed", range(4))
def test_least_allocated_one_is_the_numpy_score(seed):
    for cols in _cases(seed, 500):
        req = [np.array([c[0]], dtype=np.int64) for c in cols]
        cap = [np.array([c[2]], dtype=np.int64) for c in cols]
        want = weighted_resource_score([least_requested(a, b) for a, b in zip(req, cap)], cap, [c[4] for c in cols])
        assert least_allocated_one(cols) == int(want[0]), cols


@pytest.mark.parametrize("seed", range(4))
def test_balanced_one_node_is_the_numpy_score(seed):
    for cols in _cases(100 + seed, 500):
        want = balanced_allocation(
            [np.array([c[0]], dtype=np.int64) for c in cols],
            [np.array([c[1]], dtype=np.int64) for c in cols],
            [np.array([c[2]], dtype=np.int64) for c in cols],
        )
        assert balanced_one_node(cols) == int(want[0]), cols


def test_kept_scores_choose_as_the_plugins_do():
    """A small cluster with pods that request cpu and memory (the scores differ between nodes)
    placed with the scores kept and with every node scored every cycle."""
    import draopt.scheduler.cycle as cycle
    from draopt.kube.features import Features
    from draopt.kube.loader import load_text
    from draopt.placement import place

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    import schedperf_workloads as sw

    items = sw.objects("basic", scale=0.03)
    rnd = random.Random(3)
    for o in items:
        if o["kind"] == "Node":
            o["status"]["allocatable"]["cpu"] = str(rnd.choice([2, 4, 8]))
            o["status"]["allocatable"]["memory"] = f"{rnd.choice([8, 16, 32])}Gi"
        if o["kind"] == "Pod":
            c = o["spec"]["containers"][0]
            c["resources"]["requests"] = {
                "cpu": f"{rnd.choice([50, 100, 250])}m",
                "memory": f"{rnd.choice([64, 512])}Mi",
            }
    objects = load_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "x.json")

    def run():
        res = place(objects, policy="first-fit", features=Features.from_gates()).result
        return [(p.pod, p.node) for p in res.pods]

    kept = run()
    saved = cycle.PER_NODE
    cycle.PER_NODE = ()
    try:
        plain = run()
    finally:
        cycle.PER_NODE = saved
    assert kept == plain
    assert len({n for _, n in kept}) > 1
