"""Reductions for the optimal model at cluster scale (draopt/model/reductions.py):
`OwnAcrossNodes` (devices every node of a kind reaches alike are taken through one owner, not
one copy per node) is exact and its inverse valid; the time limit bounds preparing and building
the model, and running out of it is said, never hidden."""

from __future__ import annotations

import random
import time

import pytest

from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet, parse_object
from draopt.placement import PlaceOutcome, build_cluster, output_objects
from draopt.placement import optimal as opt_mod
from draopt.placement import optimal_part as part_mod
from draopt.cluster.check import check_placement
from draopt.cluster.firstfit import simulate
from draopt.testing.synth_cluster import features_for, random_cluster
from draopt.testing.audit import objects_of
from draopt.kube.workload import expand

V1 = "resource.k8s.io/v1"
DRIVER = "test-driver.cdi.k8s.io"
SELECT_ALL = {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "node-with-dra", "operator": "In", "values": ["true"]}]}]
}


def partitionable(nodes: int, pools: int, pods: int, *, preallocated: bool = True) -> ObjectSet:
    """Kubernetes' scheduler_perf partitionable workload, small: pools with one counter set of
    four counters and six devices, reached by every node through a node selector; each pod asks
    for two devices of one pool (matchAttribute on the pool's index); the pool's 2-counter device
    already allocated. Shapes from test/integration/scheduler_perf/dra/templates/
    resourceslice-partitionable-{countersets,devices}.yaml, resourceclaimtemplate-for-two-devices.yaml
    (kubernetes/kubernetes at 16913111deb1a4c4ff76f4ba7ffd9ebef397a303)."""
    docs = [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "test-class"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    ]
    for n in range(nodes):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{n}", "labels": {"node-with-dra": "true"}},
                "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "3"}},
            }
        )

    def device(name, i, counters):
        return {
            "name": name,
            "attributes": {"dra.example.com/slice": {"int": i}},
            "consumesCounters": [{"counterSet": "set", "counters": {c: {"value": "1"} for c in counters}}],
        }

    for i in range(pools):
        pool = {"name": f"pool-{i}", "generation": 1, "resourceSliceCount": 2}
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": f"counters-{i}"},
                "spec": {
                    "driver": DRIVER,
                    "pool": pool,
                    "nodeSelector": SELECT_ALL,
                    "sharedCounters": [{"name": "set", "counters": {f"c{k}": {"value": "1"} for k in range(1, 5)}}],
                },
            }
        )
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": f"devices-{i}"},
                "spec": {
                    "driver": DRIVER,
                    "pool": pool,
                    "nodeSelector": SELECT_ALL,
                    "devices": [
                        device("two-1", i, ["c1", "c2"]),
                        device("two-2", i, ["c3", "c4"]),
                        *(device(f"one-{k}", i, [f"c{k}"]) for k in range(1, 5)),
                    ],
                },
            }
        )
        if preallocated:
            docs.append(
                {
                    "apiVersion": V1,
                    "kind": "ResourceClaim",
                    "metadata": {"name": f"init-{i}", "namespace": "init"},
                    "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "test-class"}}]}},
                    "status": {
                        "allocation": {
                            "devices": {
                                "results": [{"request": "r", "driver": DRIVER, "pool": f"pool-{i}", "device": "two-1"}]
                            },
                            "nodeSelector": SELECT_ALL,
                        }
                    },
                }
            )
    docs.append(
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "two", "namespace": "test"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [{"name": "r", "exactly": {"deviceClassName": "test-class", "count": 2}}],
                        "constraints": [{"requests": ["r"], "matchAttribute": "dra.example.com/slice"}],
                    }
                }
            },
        }
    )
    for p in range(pods):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{p}", "namespace": "test"},
                "spec": {
                    "containers": [{"name": "c", "resources": {"claims": [{"name": "d"}]}}],
                    "resourceClaims": [{"name": "d", "resourceClaimTemplateName": "two"}],
                },
            }
        )
    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    return objs


def run(objs, features=None, *, across=True, time_limit=20.0, started=None):
    features = features or Features.from_gates()
    w = expand(objs, features)
    c = build_cluster(objs, w, features)
    original = part_mod.build
    try:
        part_mod.build = lambda *a, **k: original(*a, **{**k, "across": across})
        result = opt_mod.optimize(c, w, time_limit=time_limit, started=started)
    finally:
        part_mod.build = original
    return PlaceOutcome(result, w, c, output_objects(result, w))


@pytest.mark.parametrize("preallocated", [True, False])
def test_devices_every_node_reaches_are_owned_once_and_exactly(preallocated):
    objs = partitionable(4, 5, 12, preallocated=preallocated)
    with_it, without = run(objs), run(objs, across=False)
    st, st0 = with_it.result.stats, without.result.stats
    assert st["owned_across_nodes"] == 1 and st0["owned_across_nodes"] == 0
    # One copy of the device terms instead of one per node.
    assert st["variables"] * 2 < st0["variables"]
    assert check_placement(with_it) == [] and check_placement(without) == []
    assert st["proven"]["placed"] and st0["proven"]["placed"]
    assert with_it.result.weighted_placed() == without.result.weighted_placed()
    # Preallocated: a pool serves one pod (its two free 1-counter devices); else two.
    assert with_it.result.weighted_placed() == (5 if preallocated else 10)
    # Pods spread over nodes (3 pods per node at most) yet devices come from one owner.
    assert len({p.node for p in with_it.result.pods if p.placed}) >= 2


# Seeds of the first 60 whose clusters have a kind the reduction applies to, and three that have none
# (27's kinds are all counted since allocationMode All requests are counted: same optimum, 203; its
# reduced kind comes after one the reduction refuses).
@pytest.mark.parametrize("seed", [3, 19, 27, 32, 39, 0, 1, 2])
def test_owning_across_nodes_is_exact_on_random_mixed_clusters(seed):
    """Clusters with allNodes and node-selector pools next to node-local devices: the optimum
    with the reduction equals the optimum without it, and both placements are valid."""
    objs = objects_of(random_cluster(random.Random(seed), "mixed", nodes=(2, 4)))
    feats = features_for(seed)
    with_it, without = run(objs, feats), run(objs, feats, across=False)
    # (27: a kind the reduction applies to after one it does not: each kind decides its own)
    assert (with_it.result.stats["owned_across_nodes"] > 0) == (seed in (3, 19, 27, 32, 39))
    assert check_placement(with_it) == [] and check_placement(without) == []
    if with_it.result.stats["proven"]["placed"] and without.result.stats["proven"]["placed"]:
        assert with_it.result.weighted_placed() == without.result.weighted_placed(), seed


def test_time_limit_bounds_preparing_the_model_and_says_so():
    objs = partitionable(3, 3, 4)
    features = Features.from_gates()
    ff = simulate(build_cluster(objs, expand(objs, features), features), expand(objs, features))
    # The caller's clock started long ago: nothing of the model can be built in time.
    out = run(objs, time_limit=1.0, started=time.perf_counter() - 10)
    st = out.result.stats
    assert st["status"] == "UNKNOWN" and st["pinned_pods"] == 4
    assert "time limit ran out" in st["fallback"] and "time limit ran out" in st["summary"]
    # The only bound left: every pod placed (4), first-fit places 3 (one pod per pool).
    assert st["bound"] == 4 and st["objective"] == 3 and st["gap"] == 0.25
    assert "nothing proven but a bound (every pod placed: 4, gap 25.00%)" in st["summary"]
    assert not st["proven"]["placed"]
    assert [(p.pod, p.node) for p in out.result.pods] == [(p.pod, p.node) for p in ff.pods]
    assert check_placement(out) == []


def test_time_limit_bounds_building_a_part(monkeypatch):
    from draopt.model import placement as model

    real_check, real_build = model._check_time, part_mod.build
    building = []

    def late(deadline):  # once the build has started, the deadline has passed
        real_check(time.perf_counter() - 1 if building else deadline)

    def build(*a, **k):
        building.append(1)
        return real_build(*a, **k)

    monkeypatch.setattr(model, "_check_time", late)
    monkeypatch.setattr(part_mod, "build", build)
    out = run(partitionable(3, 3, 4))
    st = out.result.stats
    assert building and st["status"] == "UNKNOWN" and "while building the model" in st["fallback"]
    assert st["objective"] == out.result.weighted_placed() and check_placement(out) == []
    # Still a bound: the pods that have a feasible node (3 pools: 3 of the 4 pods can be placed,
    # but each has a node), and the gap to first-fit's placement.
    assert st["bound"] == 4 and st["objective"] == 3 and st["gap"] == 0.25 and "gap 25.00%" in st["summary"]


def test_out_of_time_with_every_pod_placed_proves_the_placed_pods():
    """First-fit places every pod: the bound is reached, so the placed pods are proven optimal
    even though the model was never built (and nothing else is)."""
    out = run(partitionable(3, 4, 4), time_limit=1.0, started=time.perf_counter() - 10)
    st = out.result.stats
    assert st["status"] == "UNKNOWN" and st["objective"] == st["bound"] == 4 and st["gap"] == 0.0
    assert st["proven"] == {"placed": True, "preferences": False, "packing": False}
    assert (
        "placed pods proven optimal: it reaches the bound (every pod placed: 4); nothing else proven" in st["summary"]
    )


def gpu_nodes(nodes: int, *, allocated: str | None = None) -> ObjectSet:
    """Identical nodes with gpu-0 (40Gi of memory capacity) and gpu-1 (none); 1-GPU pods whose
    selector reads the memory capacity (a CEL runtime error on gpu-1); `allocated`: the node
    whose gpu-0 an allocated claim holds."""
    docs = [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        },
        {
            "apiVersion": V1,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "big", "namespace": "ml"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "gpu",
                                "exactly": {
                                    "deviceClassName": "gpu",
                                    "selectors": [
                                        {
                                            "cel": {
                                                "expression": 'device.capacity["gpu.example.com"].memory.compareTo(quantity("1Gi")) >= 0'
                                            }
                                        }
                                    ],
                                },
                            }
                        ]
                    }
                }
            },
        },
    ]
    for n in range(nodes):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{n}"},
                "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "10"}},
            }
        )
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceSlice",
                "metadata": {"name": f"n{n}"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": f"n{n}",
                    "pool": {"name": f"n{n}", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0", "capacity": {"memory": {"value": "40Gi"}}}, {"name": "gpu-1"}],
                },
            }
        )
    if allocated:
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceClaim",
                "metadata": {"name": "held", "namespace": "ml"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
                "status": {
                    "allocation": {
                        "devices": {
                            "results": [
                                {"request": "gpu", "driver": "gpu.example.com", "pool": allocated, "device": "gpu-0"}
                            ]
                        }
                    }
                },
            }
        )
    for p in range(nodes + 1):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{p}", "namespace": "ml"},
                "spec": {
                    "containers": [{"name": "c", "resources": {"claims": [{"name": "g"}]}}],
                    "resourceClaims": [{"name": "g", "resourceClaimTemplateName": "big"}],
                },
            }
        )
    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    return objs


def test_candidacy_of_devices_alike_is_decided_once_and_per_device_where_it_differs():
    """Devices alike on identical nodes share one candidacy decision, yet a CEL runtime error
    is counted per device, and a device held by an allocated claim is no candidate on its node
    only."""
    out = run(gpu_nodes(3))
    st = out.result.stats
    assert st["cel_error_candidates_skipped"] == 3  # gpu-1 of each node
    assert out.result.weighted_placed() == 3 and check_placement(out) == []
    assert {p.node for p in out.result.pods if p.placed} == {"n0", "n1", "n2"}
    held = run(gpu_nodes(3, allocated="n1"))
    # n1 has no candidate left (gpu-0 held, gpu-1 an error): not in the model, its error not counted.
    assert held.result.stats["cel_error_candidates_skipped"] == 2
    assert held.result.weighted_placed() == 2 and check_placement(held) == []
    assert {p.node for p in held.result.pods if p.placed} == {"n0", "n2"}


def test_a_kind_refused_leaves_the_later_kinds_their_owner_across_nodes():
    """OwnAcrossNodes is decided kind by kind: a kind it does not apply to (here one that fits
    one node only) comes first, and the partitionable kind after it still has its devices owned
    once for all its nodes (the builder used to keep the first refusal for every later kind)."""
    objs = partitionable(4, 5, 12, preallocated=False)
    pinned = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "a-pinned", "namespace": "test"},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": "node-0"},
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}, "claims": [{"name": "d"}]}}],
            "resourceClaims": [{"name": "d", "resourceClaimName": "one"}],
        },
    }
    one = {
        "apiVersion": V1,
        "kind": "ResourceClaim",
        "metadata": {"name": "one", "namespace": "test"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "test-class"}}]}},
    }
    objs.pods.insert(0, parse_object(pinned, "pinned"))
    objs.add(parse_object(one, "one"))
    objs.nodes[0].metadata.labels["kubernetes.io/hostname"] = "node-0"
    with_it, without = run(objs), run(objs, across=False)
    assert with_it.result.stats["owned_across_nodes"] == 1 and without.result.stats["owned_across_nodes"] == 0
    assert with_it.result.stats["variables"] < without.result.stats["variables"]
    assert check_placement(with_it) == [] and check_placement(without) == []
    assert with_it.result.weighted_placed() == without.result.weighted_placed()
