"""The placement problem's reductions, each as `invert(apply(p))` (issue 32): on small generated
problems, the placement the reduced model finds, mapped back, passes the checker and is worth as
much as the one solved without the reduction (when both are proven); each reduction's own round
trip on what it applies to (pods, a node's devices, a kind's nodes, linked items). Also where
the chain is assembled: `model_reductions` and `place_chain`, whose instances the preparation,
the builder and the decoding use."""

from __future__ import annotations

import random

import pytest

from test_reductions_scale import partitionable

from draopt.cluster.check import check_placement
from draopt.kube.features import Features
from draopt.kube.workload import expand
from draopt.model import prepare as prepare_mod
from draopt.cluster.firstfit import ClaimBook, _scheduling_constraints
from draopt.model.reductions import (
    CountIdenticalPods,
    GroupDevices,
    ModelReductions,
    OwnAcrossNodes,
    SplitComponents,
)
from draopt.model.reductions import group_devices
from draopt.model.reductions.chain import Chain, placement_reductions
from draopt.model.reductions.split_components import LinkedItems
from draopt.placement import PlaceOutcome, build_cluster, output_objects
from draopt.placement import optimal as opt_mod
from draopt.placement import optimal_part as part_mod
from draopt.placement.chain import model_reductions, place_chain
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


# ---------------------------------------------------------------- assembled in one place
def test_place_assembles_the_reductions_in_their_order():
    model_side = [type(r) for r in vars(model_reductions()).values()]
    assert model_side + [type(r) for r in place_chain().reductions] == placement_reductions()


class _Recorded:
    """Counts the calls of the reductions `optimize` hands to the model."""

    def __init__(self):
        self.calls: dict[str, int] = {}

    def note(self, what: str) -> None:
        self.calls[what] = self.calls.get(what, 0) + 1

    def reductions(self) -> ModelReductions:
        seen = self

        class Count(CountIdenticalPods):
            def apply(self, *a, **k):
                seen.note("count.apply")
                return super().apply(*a, **k)

            def invert(self, *a, **k):  # type: ignore[override]
                seen.note("count.invert")
                return CountIdenticalPods.invert(*a, **k)

        class Group(GroupDevices):
            def apply(self, *a, **k):
                seen.note("group.apply")
                return super().apply(*a, **k)

            def invert(self, *a, **k):  # type: ignore[override]
                seen.note("group.invert")
                return GroupDevices.invert(*a, **k)

        class Own(OwnAcrossNodes):
            def apply(self, *a, **k):  # type: ignore[override]
                seen.note("own.apply")
                return OwnAcrossNodes.apply(*a, **k)

            def invert(self, *a, **k):  # type: ignore[override]
                seen.note("own.invert")
                return OwnAcrossNodes.invert(*a, **k)

        return ModelReductions(Count(), Group(), Own())


def test_the_model_applies_and_inverts_the_instances_place_assembles(monkeypatch):
    objs = partitionable(4, 2, 6)
    features = Features.from_gates()
    plain = _solve(objs, features)
    recorded = _Recorded()
    monkeypatch.setattr(opt_mod, "model_reductions", recorded.reductions)
    through = _solve(objs, features)
    assert set(recorded.calls) == {
        "count.apply",
        "count.invert",
        "group.apply",
        "group.invert",
        "own.apply",
        "own.invert",
    }, recorded.calls
    assert [(p.pod, p.node, p.new_claims) for p in through.result.pods] == [
        (p.pod, p.node, p.new_claims) for p in plain.result.pods
    ]


# ---------------------------------------------------------------- each reduction's round trip
def _setup(objs, features):
    w = expand(objs, features)
    c = build_cluster(objs, w, features)
    return w, c, ClaimBook(c, w.claims)


def test_count_identical_pods_round_trip_gives_every_pending_pod_one_node():
    for family, seed, objs in _cases():
        w, c, book = _setup(objs, features_for(seed))
        kinds = CountIdenticalPods().apply(list(w.pending), book, _scheduling_constraints, lambda pod: None)
        assert sorted(p.key for k in kinds for p in k.pods) == sorted(p.key for p in w.pending), (family, seed)
        names = [n.name for n in c.nodes]
        node_of: dict[str, str] = {}
        for kind in kinds:
            # The kind's pods spread over the nodes, in node order: one slot each, back to pods.
            slots = [
                (name, sum(1 for i in range(len(kind.pods)) if i % len(names) == j)) for j, name in enumerate(names)
            ]
            got = CountIdenticalPods.invert(kind.pods, slots)
            assert sorted(got) == sorted(p.key for p in kind.pods)
            node_of.update(got)
        assert sorted(node_of) == sorted(p.key for p in w.pending)


def test_group_devices_round_trip_gives_back_each_nodes_devices():
    grouped = 0
    for family, seed, objs in _cases():
        features = features_for(seed)
        w, c, book = _setup(objs, features)
        prep = prepare_mod.prepare_cluster(c, w, book)
        for node in c.nodes:
            ps = [p for (ki, name), p in prep.problems.items() if name == node.name]
            if not ps:
                continue
            patterns = prepare_mod._device_patterns(node.name, c.inventory(node), ps, prep.candidacy, c.features)
            refs = GroupDevices().apply(node.name, patterns, c.features)
            grouped += sum(1 for r in refs if r.size > 1)
            taken: dict = {}
            back = [e for r in refs for e in GroupDevices.invert(r, r.size, taken)]
            order = {id(e): i for i, (e, _) in enumerate(patterns)}
            assert sorted(back, key=lambda e: order[id(e)]) == [e for e, _ in patterns], (family, seed, node.name)
    assert grouped, "some devices are grouped"
