"""allocate is the one model (issue 16 item 2): its claims on one node are an instance of the
placement model (`draopt.model.placement.build`) with one pod and one candidate node, reduced by
a chain whose `invert` runs back through its reductions (as cvxpy's `reductions/chain.py`).
First-fit's answers equal the reference search (Kubernetes' allocator.go allocateOne order) on
random instances; tests/test_property.py checks many more."""

from __future__ import annotations

import importlib.util
import random

from draopt.errors import AllocationError
from draopt.kube.features import Features
from draopt.model.placement import Built, PlacementModel
from draopt.model.reductions.chain import Chain, allocation_chain, placement_reductions
from draopt.model.reductions.claims_on_one_node import ClaimsOnOneNode, OneNodeInstance
from draopt.model.single_node import build_one_node
from draopt.testing.synth import random_instance
from helpers import problem_from, run_cpsat, run_reference


def _problem(seed: int):
    """The seed's random instance prepared, None if preparing it is already an error."""
    try:
        return problem_from(random_instance(random.Random(seed)), Features.from_gates())
    except AllocationError:
        return None


def _problems(n: int):
    return [p for p in map(_problem, range(n)) if p is not None]


def test_there_is_no_second_model():
    assert importlib.util.find_spec("draopt.model.node") is None
    assert importlib.util.find_spec("draopt.model.encodings.assignment") is None
    import draopt.model.encodings.base as base

    assert not hasattr(base, "ModelData")


def test_allocate_builds_the_placement_model_with_one_pod_and_one_node():
    problem = _problems(5)[0]
    b, chain, inverse = build_one_node(problem, kubernetes_quirks=True)
    assert isinstance(b, Built) and isinstance(b.model, PlacementModel)
    assert len(b.kinds) == 1 and not b.kinds[0].counted and len(b.placed) == 1
    assert [o.claim_index for o in b.owners] == list(range(len(problem.claims)))
    assert [type(r) for r in chain.reductions] == [ClaimsOnOneNode]
    assert inverse == [problem]


def test_claims_on_one_node_has_one_column_per_device():
    problem = _problems(5)[0]
    one, _ = ClaimsOnOneNode.apply(problem)
    assert isinstance(one, OneNodeInstance)
    columns = one.prepared.refs[one.node_name]
    assert [r.size for r in columns] == [1] * len(problem.devices)
    assert [r.first for r in columns] == list(problem.devices)


def test_chain_inverts_in_reverse_order():
    calls = []

    class Step:
        def __init__(self, name):
            self.name = name

        def accepts(self, problem):
            return True

        def apply(self, problem):
            calls.append(("apply", self.name))
            return problem + [self.name], self.name

        def invert(self, solution, data):
            calls.append(("invert", data))
            return solution + [data]

    chain = Chain([Step("a"), Step("b")])
    reduced, inverse = chain.apply([])
    assert reduced == ["a", "b"] and inverse == ["a", "b"]
    assert chain.invert([], inverse) == ["b", "a"]
    assert calls == [("apply", "a"), ("apply", "b"), ("invert", "b"), ("invert", "a")]
    problem = _problems(5)[0]
    assert allocation_chain(problem).accepts(problem)
    assert [r.__name__ for r in placement_reductions()] == [
        "CountIdenticalPods",
        "GroupDevices",
        "OwnAcrossNodes",
        "SplitComponents",
    ]


def test_explain_guards_the_named_requirements():
    checked = 0
    for problem in _problems(40):
        try:
            b = build_one_node(problem, kubernetes_quirks=False, explain=True)[0]
        except AllocationError:
            continue  # a CEL runtime error: explain reports it instead
        counts = [n for n in b.model.guards if n.endswith("device(s)")]
        plain = [s for c in problem.claims for g in c.requests for s in g.alternatives if s.mode != "All"]
        assert len(counts) == len(plain)
        checked += 1
    assert checked > 10


def test_first_fit_equals_the_reference_search():
    for problem in _problems(60):
        ref = run_reference(problem, True)
        got = run_cpsat(problem, "first-fit")
        if ref[0] == "ok":
            assert got[:2] == ref[:2]
