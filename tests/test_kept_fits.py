"""The scheduler's node choice takes the fit kept in its table for the node it chose, when that
node was not filtered in this cycle (draopt.scheduler.cycle.Scheduler.select, `refit`:
draopt.cluster.firstfit.reuse_fit), instead of asking try_node again. The placements, the
devices of every claim and the reasons of unplaced pods are the same as asking again
(`Scheduler.reuse_kept_fits = False`), with the default profile's random ties, on:

* Kubernetes' scheduler_perf DRA workloads (benchmarks/schedperf_workloads.py, generated from
  kubernetes/kubernetes test/integration/scheduler_perf/dra/) at small scale: node-local
  devices, extended resources backed by DRA, firstAvailable lists, shared partitionable pools;
* random clusters of every draopt.testing.synth_cluster family (GPU+NIC alignment, distinct
  attributes, admin access, shared claims, prioritized lists, MIG counters with gangs, `All`,
  mixed) on several nodes, with Kubernetes' default gates and with every gate on;

and the solver-independent checker finds the same in both (nothing, or the Kubernetes
allocator defects first-fit reproduces on purpose, such as distinct-last-only). The kept fit is taken many times
(counted), so the comparison is not vacuous.
"""

from __future__ import annotations

import os
import random
import sys
from unittest import mock

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import schedperf_workloads as sw  # noqa: E402

from draopt.cluster import firstfit  # noqa: E402
from draopt.cluster.check import check_placement  # noqa: E402
from draopt.errors import DraoptError  # noqa: E402
from draopt.kube.features import Features  # noqa: E402
from draopt.placement import place  # noqa: E402
from draopt.scheduler.cycle import Scheduler  # noqa: E402
from draopt.testing.audit import objects_of  # noqa: E402
from draopt.testing.synth_cluster import FAMILIES, features_for, random_cluster  # noqa: E402


def outcome(docs, features, seed: int = 0):
    try:
        out = place(objects_of(docs), policy="first-fit", features=features, seed=seed)
    except DraoptError as e:
        return {"error": f"{type(e).__name__}: {e}"}, []
    res = out.result
    return {
        "pods": [(p.pod, p.node, p.prioritized_score, dict(sorted(p.reasons.items()))) for p in res.pods],
        "claims": {k: [a.to_k8s(), n] for k, (a, n) in sorted(res.claims.items())},
    }, check_placement(out)


def both(docs, features, seed: int = 0):
    with mock.patch.object(Scheduler, "reuse_kept_fits", False):
        asked, asked_errors = outcome(docs, features, seed)
    # (the kept fits taken are counted: calls of firstfit.reuse_fit)
    with (
        mock.patch.object(Scheduler, "reuse_kept_fits", True),
        mock.patch.object(firstfit, "reuse_fit", wraps=firstfit.reuse_fit) as taken,
    ):
        kept, kept_errors = outcome(docs, features, seed)
    assert kept == asked
    # (the same findings: first-fit reproduces Kubernetes' allocator defects, which the
    # checker, on the documented semantics, reports; e.g. distinct-last-only)
    assert kept_errors == asked_errors
    return taken.call_count


@pytest.mark.parametrize(
    "name,scale",
    [("basic", 0.04), ("extended-resource-25", 0.04), ("prioritized-list", 0.04), ("partitionable", 0.05)],
)
def test_schedperf_workloads_same_with_kept_fits(name, scale):
    docs = sw.objects(name, scale=scale)
    taken = both(docs, Features.from_gates(), seed=3)
    # (partitionable: the shared pools answer every node in one step, no kept fit needed)
    assert taken >= {"basic": 20, "prioritized-list": 20, "extended-resource-25": 3}.get(name, 0)


def test_random_clusters_same_with_kept_fits():
    taken = 0
    for family in FAMILIES:
        for seed in range(6):
            rng = random.Random(f"kept-fits-{family}-{seed}")
            docs = random_cluster(rng, family, nodes=(3, 10), pods=(16, 40))
            taken += both(docs, features_for(seed), seed=seed)
    assert taken >= 10
