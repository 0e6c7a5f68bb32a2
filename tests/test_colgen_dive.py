"""The covering LP's rounding (draopt/model/colgen_dive.py) and the plan's last-resort cover
(draopt/model/colgen_plan.py): moves along the substitutions' chains, and a cover when the
counts found in time lost it."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

from draopt.model.colgen_dive import dive, move_caps
from draopt.model.colgen_plan import PlanColumn, _covers, _CoverCounts, _last_resort


def test_moves_through_a_kind_are_capped_at_it_and_the_kinds_after_it():
    # a -> b -> c (transitively reduced: c's pods reach a's places through b), d -> c.
    subs = [(0, 1), (1, 2), (3, 2)]
    demand = {0: 5, 1: 3, 2: 7, 3: 1}
    assert move_caps(subs, demand) == {1: 3 + 7, 2: 7}


def _one_class():
    # One class holding kinds 0 (large) and 1 (small), copies at cost 1: a column of 2 large pods,
    # one of 4 small ones.
    classes = [SimpleNamespace(kinds=[0, 1])]
    columns = [PlanColumn(0, (2, 0)), PlanColumn(0, (0, 4))]
    return classes, columns


def test_the_chain_caps_let_the_rounding_move_pods_along_the_chain():
    # Kinds 0 -> 1 -> 2 (kind 1 has no pods): a node of 2 kind-0 places holds the kind-0 pod and,
    # through kind 1, the kind-2 one; capped at kind 1's own pods, kind 2 needs a node of its own.
    classes = [SimpleNamespace(kinds=[0, 1, 2])]
    columns = [PlanColumn(0, (2, 0, 0)), PlanColumn(0, (0, 0, 1))]
    args = (classes, [0], [Fraction(1)], {0: 1, 1: 0, 2: 1}, columns, set(), [(0, 1), (1, 2)], 1e18)
    chained, own = dive(*args, chains=True), dive(*args)
    assert chained is not None and chained.copy == [1, 0] and chained.moves == {(0, 1): 1, (1, 2): 1}
    assert own is not None and own.copy == [1, 1]


def test_the_last_resort_is_the_plain_rounding_without_moves():
    classes, columns = _one_class()
    part = SimpleNamespace(
        classes=classes, free_nodes=[0], class_cost=[Fraction(1)], demand={0: 3, 1: 5}, columns=columns, stats={}
    )
    counts = _CoverCounts([0, 0], [0, 0], Fraction(1))
    _last_resort(part, counts, set())  # type: ignore[arg-type]
    assert counts.status == "DIVE_LAST" and counts.copy_counts == [2, 2]
    assert _covers(classes, part.demand, columns, counts.free_counts, counts.copy_counts)
