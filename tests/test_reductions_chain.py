"""The placement problem's reductions, each as `invert(apply(p))` (issue 32): on small generated
problems, the placement the reduced model finds, mapped back, passes the checker and is worth as
much as the one solved without the reduction (when both are proven). Also the chain's own round
trip (`place_chain`, `SplitComponents` through `Chain`) and `OwnAcrossNodes.invert`."""

from __future__ import annotations

import random

import pytest

from test_reductions_scale import partitionable

from draopt.cluster.check import check_placement
from draopt.kube.features import Features
from draopt.kube.workload import expand
from draopt.model import prepare as prepare_mod
from draopt.model.reductions import CountIdenticalPods, GroupDevices, OwnAcrossNodes, SplitComponents
from draopt.model.reductions import group_devices
from draopt.model.reductions.chain import Chain, placement_reductions
from draopt.model.reductions.split_components import LinkedItems
from draopt.placement import PlaceOutcome, build_cluster, output_objects
from draopt.placement import optimal as opt_mod
from draopt.placement import optimal_part as part_mod
from draopt.placement.chain import place_chain
from draopt.testing.audit import objects_of
from draopt.testing.synth_cluster import features_for, random_cluster

SEEDS = range(3)
FAMILIES = ["gpu-nic", "mig-gang"]


def _solve(objs, features: Features, time_limit: float = 10.0) -> PlaceOutcome:
    w = expand(objs, features)
    c = build_cluster(objs, w, features)
    result = opt_mod.optimize(c, w, time_limit=time_limit)
    return PlaceOutcome(result, w, c, output_objects(result, w))


def _same_answer(with_it: PlaceOutcome, without: PlaceOutcome, where) -> None:
    assert check_placement(with_it) == [], where
    assert check_placement(without) == [], where
    if with_it.result.stats["proven"]["placed"] and without.result.stats["proven"]["placed"]:
        assert with_it.result.weighted_placed() == without.result.weighted_placed(), where


def _cases():
    for family in FAMILIES:
        for seed in SEEDS:
            yield family, seed, objects_of(random_cluster(random.Random(seed), family, nodes=(2, 4)))


# ---------------------------------------------------------------- the chain
def test_place_chain_splits_and_merges_through_chain():
    chain = place_chain()
    assert [type(r) for r in chain.reductions] == [SplitComponents]
    assert [r.__name__ for r in placement_reductions()][-1] == "SplitComponents"
    problem = LinkedItems(["a", "b", "c", "d", "e"], [("a", "c"), ("c", "e")])
    assert chain.accepts(problem)
    parts, data = chain.apply(problem)
    assert parts == [["a", "c", "e"], ["b"], ["d"]]
    # A solution per part (what each part owns), mapped back: one solution of the whole.
    solutions = [{x: i for x in part} for i, part in enumerate(parts)]
    assert chain.invert(solutions, data) == {"a": 0, "c": 0, "e": 0, "b": 1, "d": 2}


def test_chain_refuses_a_problem_its_reduction_does_not_accept():
    with pytest.raises(ValueError):
        Chain([SplitComponents()]).apply(["not", "linked", "items"])


# ---------------------------------------------------------------- CountIdenticalPods
def test_count_identical_pods_inverts_to_the_placement_without_counting(monkeypatch):
    real = prepare_mod.prepare_cluster
    for family, seed, objs in _cases():
        features = features_for(seed)
        counted = _solve(objs, features)
        assert counted.result.stats["pods_counted"] > 0 or not counted.result.pods
        # Without: every pod its own kind (its key in its scheduling key).
        monkeypatch.setattr(
            opt_mod, "prepare_cluster", lambda *a, **k: real(*a, **{**k, "extra_tag": lambda pod: pod.key})
        )
        alone = _solve(objs, features)
        monkeypatch.setattr(opt_mod, "prepare_cluster", real)
        assert alone.result.stats["kinds"] == len(alone.workload.pending)
        _same_answer(counted, alone, (family, seed))


def test_count_identical_pods_deals_every_slot_once():
    class Pod:
        def __init__(self, key):
            self.key = key

    pods = [Pod(f"p{i}") for i in range(5)]
    node_of = CountIdenticalPods.invert(pods, [("n0", 2), ("n1", 0), ("n2", 3)])
    assert [node_of[p.key] for p in pods] == ["n0", "n0", "n2", "n2", "n2"]
    with pytest.raises(RuntimeError):
        CountIdenticalPods.invert(pods, [("n0", 1)])


# ---------------------------------------------------------------- GroupDevices
def test_group_devices_inverts_to_the_placement_with_single_columns(monkeypatch):
    for family, seed, objs in _cases():
        features = features_for(seed)
        grouped = _solve(objs, features)
        with monkeypatch.context() as m:
            # Without: no device joins a group (every device its own column).
            m.setattr(group_devices, "groupable", lambda entry, node_name, features: False)
            m.setattr(prepare_mod, "groupable", lambda entry, node_name, features: False)
            single = _solve(objs, features)
        _same_answer(grouped, single, (family, seed))


# ---------------------------------------------------------------- OwnAcrossNodes
def test_own_across_nodes_inverts_to_the_placement_with_an_owner_per_node(monkeypatch):
    built = []
    real = part_mod.build

    def keep(*a, **k):
        b = real(*a, **k)
        built.append(b)
        return b

    objs = partitionable(4, 2, 6)
    features = Features.from_gates()
    monkeypatch.setattr(part_mod, "build", keep)
    across = _solve(objs, features)
    b = built[-1]
    spanning = [o for o in b.owners if o.spans]
    assert spanning, "the shared pools are owned across nodes"
    for o in spanning:
        owner_at = OwnAcrossNodes.invert(b.owners, o.kind)
        # Every node of the kind is dealt from the one owner.
        assert {name for name, got in owner_at.items() if got is o} == set(o.spans)
        assert {name for (ki, name) in b.k if ki == o.kind.index} <= set(owner_at)
    monkeypatch.setattr(part_mod, "build", lambda *a, **k: real(*a, **{**k, "across": False}))
    per_node = _solve(objs, features)
    _same_answer(across, per_node, "partitionable")


# ---------------------------------------------------------------- SplitComponents
class OnePart:
    """No split: the whole problem as one part."""

    @staticmethod
    def accepts(problem) -> bool:
        return isinstance(problem, LinkedItems)

    @staticmethod
    def apply(problem: LinkedItems):
        return [list(problem.items)], None

    @staticmethod
    def invert(solutions, data):
        return SplitComponents.invert(solutions, data)


def test_split_components_inverts_to_the_placement_of_the_whole(monkeypatch):
    for family, seed, objs in _cases():
        features = features_for(seed)
        split = _solve(objs, features)
        monkeypatch.setattr(opt_mod, "place_chain", lambda: Chain([OnePart()]))
        whole = _solve(objs, features)
        monkeypatch.setattr(opt_mod, "place_chain", place_chain)
        assert whole.result.stats["components"] <= 1
        _same_answer(split, whole, (family, seed))


def test_group_devices_invert_takes_the_first_free_devices():
    class Entry:
        def __init__(self, i):
            self.id = ("pool", f"d{i}")

    ref = group_devices.DeviceRef(("group", "n0", 0), [Entry(i) for i in range(4)], "n0")
    taken: dict = {}
    assert [e.id[1] for e in GroupDevices.invert(ref, 2, taken)] == ["d0", "d1"]
    assert [e.id[1] for e in GroupDevices.invert(ref, 2, taken)] == ["d2", "d3"]
