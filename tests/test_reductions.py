"""The placement model's reductions (draopt/model/reductions.py, patterns.py): each
`invert(apply(p))` of a solution is a valid solution of `p`, and each is exact (the optimum
with the reduction equals the optimum without it). Also: `place --policy optimal` on one pod
and one node gives the devices `allocate --policy optimal` gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import test_features as tf
from draopt.allocation import allocate as api
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet, load_files, load_text, parse_object
from draopt.placement import build_cluster, place
from draopt.cluster.check import check_placement
from draopt.cluster.firstfit import ClaimBook, _scheduling_constraints
from draopt.model.placement import one_node_model
from draopt.model.prepare import prepare_cluster
from draopt.placement.optimal import optimize
from draopt.model.patterns import enumerate_configurations, node_classes
from draopt.model.reductions import CountIdenticalPods, GroupDevices, SplitComponents
from draopt.model.reductions.split_components import LinkedItems
from draopt.testing.synth_cluster import FAMILIES, features_for, random_cluster
from draopt.testing.audit import objects_of
from draopt.kube.workload import expand

ALL = Features.all_enabled()
V1 = "resource.k8s.io/v1"


def objects(docs) -> ObjectSet:
    objs = ObjectSet()
    for i, d in enumerate(docs):
        objs.add(parse_object(d, f"doc {i}"))
    return objs


def fleet(nodes: int, pods: int, *, shared: int = 0) -> ObjectSet:
    """`nodes` identical nodes with 4 GPUs; 1- and 2-GPU pods; `shared` claims used by 2 pods."""
    docs = [
        {
            "apiVersion": V1,
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        }
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
                    "devices": [{"name": f"gpu-{i}"} for i in range(4)],
                },
            }
        )
    for c in (1, 2):
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": f"g{c}", "namespace": "ml"},
                "spec": {
                    "spec": {
                        "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": c}}]}
                    }
                },
            }
        )
    for s in range(shared):
        docs.append(
            {
                "apiVersion": V1,
                "kind": "ResourceClaim",
                "metadata": {"name": f"shared-{s}", "namespace": "ml"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
            }
        )
    rng = random.Random(nodes * 100 + pods)
    for p in range(pods):
        claim = (
            {"name": "gpu", "resourceClaimName": f"shared-{p % shared}"}
            if shared and p < 2 * shared
            else {"name": "gpu", "resourceClaimTemplateName": rng.choice(["g1", "g2", "g2"])}
        )
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"p{p}",
                    "namespace": "ml",
                    "creationTimestamp": f"2026-11-30T10:{p // 60:02d}:{p % 60:02d}Z",
                },
                "spec": {
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}],
                    "resourceClaims": [claim],
                },
            }
        )
    return objects(docs)


def setup(objs, features=None):
    features = features or Features.from_gates()
    w = expand(objs, features)
    c = build_cluster(objs, w, features)
    return w, c, ClaimBook(c, w.claims)


# ---------------------------------------------------------------- CountIdenticalPods
def test_identical_pods_become_counted_kinds_and_shared_claims_units():
    w, c, book = setup(fleet(3, 8, shared=1))
    kinds = CountIdenticalPods().apply(list(w.pending), book, _scheduling_constraints, lambda pod: None)
    pods = [p.key for k in kinds for p in k.pods]
    assert sorted(pods) == sorted(p.key for p in w.pending)  # a partition of the pods
    unit = [k for k in kinds if not k.counted]
    assert [sorted(p.key for p in k.pods) for k in unit] == [["ml/p0", "ml/p1"]]  # they share ml/shared-0
    assert unit[0].users == {"ml/shared-0": ["ml/p0", "ml/p1"]}
    counted = [k for k in kinds if k.counted]
    assert len(counted) == 2 and sum(len(k.pods) for k in counted) == 6
    # invert: the pods of a counted kind take the nodes in queue order.
    k0 = max(counted, key=lambda k: len(k.pods))
    n = len(k0.pods)
    assert n >= 2
    got = CountIdenticalPods.invert(k0.pods, [("n0", 1), ("n2", n - 1)])
    assert [got[p.key] for p in k0.pods] == ["n0"] + ["n2"] * (n - 1)


def test_not_countable_kinds_say_why():
    objs = objects_of(random_cluster(random.Random(3), "distinct"))
    out = place(objs, policy="optimal", features=features_for(3), time_limit=10)
    why = out.result.stats["not_counted_because"]
    assert all(isinstance(v, int) and v > 0 for v in why.values())
    assert out.result.stats["pinned_pods"] == 0 and check_placement(out) == []


# ---------------------------------------------------------------- GroupDevices
def test_device_groups_hand_out_distinct_free_devices():
    w, c, book = setup(fleet(1, 2))
    prep = prepare_cluster(c, w, book)
    refs = prep.refs["n0"]
    assert [r.size for r in refs] == [4]  # four identical GPUs: one column
    taken: dict = {}
    first = GroupDevices.invert(refs[0], 3, taken)
    assert [e.device.name for e in first] == ["gpu-0", "gpu-1", "gpu-2"]
    assert [e.device.name for e in GroupDevices.invert(refs[0], 1, taken)] == ["gpu-3"]
    with pytest.raises(RuntimeError):
        GroupDevices.invert(refs[0], 1, taken)  # the model never asks for more than the group holds
    # Admin access may reuse taken devices, but never one already in the same claim.
    again = GroupDevices.invert(refs[0], 2, taken, reusable=True, exclude={first[0].id})
    assert [e.device.name for e in again] == ["gpu-1", "gpu-2"]


# ---------------------------------------------------------------- SplitComponents
def test_components_split_and_merge():
    parts, data = SplitComponents().apply(LinkedItems(["a", "b", "c", "d"], [("a", "c")]))
    assert parts == [["a", "c"], ["b"], ["d"]]
    assert SplitComponents.invert([{"a": 1}, {"b": 2}], data) == {"a": 1, "b": 2}


# ---------------------------------------------------------------- interchangeable nodes
def test_identical_nodes_form_one_class_with_downward_closed_configurations():
    w, c, book = setup(fleet(4, 12))
    prep = prepare_cluster(c, w, book)
    kinds = [k for k in prep.kinds]
    classes = node_classes(prep, kinds, {n.name for n in c.nodes}, c)
    assert len(classes) == 1 and [n.name for n in classes[0].nodes] == ["n0", "n1", "n2", "n3"]
    nc = classes[0]
    assert enumerate_configurations(
        nc, prep, c, w, book, [8] * len(nc.kinds), 30.0, one_node_model(nc, prep, c, w, book)
    )
    counts = {conf.counts for conf in nc.configurations}
    for conf in counts:
        for i in range(len(conf)):  # one pod fewer of any kind: still a configuration
            if conf[i] > 0:
                smaller = conf[:i] + (conf[i] - 1,) + conf[i + 1 :]
                assert smaller in counts or not any(smaller)


@pytest.mark.parametrize("family", ["gpu-nic", "mig-gang", "distinct", "lists"])
def test_reductions_are_exact_on_random_clusters(family):
    """The optimum with every reduction equals the optimum with none (per-node form, no
    counting of identical nodes), and the inverted placement is valid."""
    for seed in range(6):
        objs = objects_of(random_cluster(random.Random(seed), family, nodes=(2, 4)))
        feats = features_for(seed)
        w, c, book = setup(objs, feats)
        with_patterns = optimize(c, w, time_limit=20)
        from draopt.placement import optimal_part as part_mod

        original = part_mod.build
        try:
            part_mod.build = lambda *a, **k: original(*a, **{**k, "patterns": False})
            w2, c2, _ = setup(objs, feats)
            without = optimize(c2, w2, time_limit=20)
        finally:
            part_mod.build = original
        if with_patterns.stats["proven"]["placed"] and without.stats["proven"]["placed"]:
            assert with_patterns.weighted_placed() == without.weighted_placed(), (family, seed)


# ---------------------------------------------------------------- place == allocate
SHAPES = {
    "prioritized list": tf.CATS + tf.NODE + tf.claim("a", tf.PRIORITIZED),
    "compatibility groups": tf.CLASS + tf.COMPAT + tf.NODE + tf.claim("a", tf.ONE),
    "consumable capacity": tf.CLASS + tf.NIC + tf.NODE + tf.claim("a", tf.bw("1G")),
    "counters": tf.CLASS + tf.COUNTERS + tf.NODE + tf.claim("a", tf.ONE),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_place_on_one_pod_and_node_gives_allocates_devices(shape):
    text = SHAPES[shape]
    alloc = api.allocate(load_text(text), features=ALL, policy="optimal", deterministic_share_ids=True)
    pod = (
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n"
        "spec:\n  containers: [{name: c}]\n  resourceClaims: [{name: x, resourceClaimName: a}]\n"
    )
    out = place(load_text(text + pod), policy="optimal", features=ALL, time_limit=10)
    assert out.result.pods[0].node == "worker-1"
    got = [(r.request, r.device) for r in out.result.claims["default/a"][0].devices.results]
    want = [(r.request, r.device) for r in alloc.results[0].devices.results]
    assert got == want
    assert check_placement(out) == []


def test_every_family_is_reachable_by_the_model():
    # Each generator family yields pods the model places without pinning any (smoke, fixed seeds).
    for family in FAMILIES:
        objs = objects_of(random_cluster(random.Random(11), family))
        out = place(objs, policy="optimal", features=features_for(11), time_limit=10)
        assert out.result.stats["pinned_pods"] == 0
        assert check_placement(out) == []


def test_no_better_placement_in_time_keeps_first_fit_and_says_so(monkeypatch):
    from draopt.placement import optimal_part as part_mod

    original = part_mod._solver

    def no_time(seconds, hard_stop):  # every search stops before finding anything
        solver = original(seconds, hard_stop)
        solver.parameters.max_deterministic_time = 0.0
        solver.parameters.max_time_in_seconds = 0.0
        return solver

    monkeypatch.setattr(part_mod, "_solver", no_time)
    out = place(fleet(8, 60, shared=4), policy="optimal", time_limit=10)
    st = out.result.stats
    # First-fit's placement is a solution of the model: kept as the incumbent, not "pinned".
    assert st["status"] == "FEASIBLE" and st["pinned_pods"] == 0 and st["first_fit_in_model"]
    assert "no placement better than first-fit's found" in st["summary"]
    assert st["objective"] == out.result.weighted_placed() and st["gap"] is not None
    assert check_placement(out) == []


# ---------------------------------------------------------------- regressions (found by fuzz_place.py)
DATA = Path(__file__).resolve().parent / "data" / "placement"


@pytest.mark.parametrize(
    "name",
    [
        "shared-claim-with-unplaceable-user.yaml",
        "shared-network-claim-on-two-nodes.yaml",
        "shared-claim-failed-gang.yaml",
    ],
)
def test_units_of_pods_sharing_claims(name):
    """A pod of a unit is judged by the claims it uses: another pod's claim that fits nowhere,
    or a shared network-attached claim whose pods sit on different nodes, must not keep it off
    its nodes; a gang that fails gives back only claims no placed pod still uses."""
    objs = load_files([str(DATA / name)])
    ff = place(objs, policy="first-fit")
    opt = place(objs, policy="optimal", time_limit=10)
    assert check_placement(ff) == [] and check_placement(opt) == []
    assert opt.result.weighted_placed() >= ff.result.weighted_placed() > 0
    assert opt.result.stats["pinned_pods"] == 0 and "floor_dropped" not in opt.result.stats


def test_units_alike_are_counted_and_decoded_whole():
    """Pods sharing a claim on node-local devices are counted as units (k[j] units with j pods
    on a node); the decoded placement holds exactly what the model counted."""
    objs = fleet(4, 24, shared=6)
    out = place(objs, policy="optimal", time_limit=20)
    st = out.result.stats
    assert st["pods_single"] == 0 and st["counted_kinds"] == st["kinds"]
    assert out.result.weighted_placed() == st["objective"]
    for s in range(6):
        users = [p for p in out.result.pods if p.pod in (f"ml/p{s}", f"ml/p{s + 6}")]
        assert len({p.node for p in users if p.placed}) <= 1  # a unit lives on one node
    assert check_placement(out) == []
