"""Dual-optimal inequalities of the covering column generation (draopt/model/colgen_substitution.py):
which kinds may take another's place, and the configurations a cover with such moves uses."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

from draopt.model.colgen_pricing import DevicePricing
from draopt.model.colgen_substitution import realize, substitutions


def _structure(kinds, demand, whole, share, ub=None, free=None):
    return DevicePricing(
        kinds,
        ub or [4] * len(kinds),
        [{r: Fraction(v) for r, v in d.items()} for d in demand],
        free or {"cpu": Fraction(64), "memory": Fraction(256)},
        whole,
        share,
        8,
        Fraction(1000),
    )


def test_a_smaller_pod_takes_the_place_of_a_larger_one():
    # Kinds 0-4 (openb-like shapes): 0 = 8 cpu + 1 GPU, 1 = 4 cpu + 1 GPU, 2 = 4 cpu + half a GPU,
    # 3 = 2 cpu, no GPU, 4 = 16 cpu, no GPU.
    f = _structure(
        [0, 1, 2, 3, 4],
        [{"cpu": 8}, {"cpu": 4}, {"cpu": 4}, {"cpu": 2}, {"cpu": 16}],
        [1, 1, 0, 0, 0],
        [0, 0, 500, 0, 0],
    )
    pairs = set(substitutions([SimpleNamespace(kinds=f.kinds)], [f]))
    assert (0, 1) in pairs  # fewer cpu, same GPU
    assert (1, 2) in pairs  # a share fits on a whole GPU's place
    assert (2, 3) in pairs  # no GPU at all
    assert (0, 2) not in pairs  # 0 -> 1 -> 2 stands for it (transitive reduction)
    assert (4, 3) in pairs
    assert (3, 0) not in pairs and (2, 1) not in pairs  # never a larger one in a smaller place
    assert (4, 0) not in pairs  # a GPU pod never takes a place without a GPU
    assert (0, 4) not in pairs  # 16 cpu do not fit where 8 came out


def test_dominance_must_hold_on_every_class_the_larger_kind_runs_on():
    big = _structure([0, 1], [{"cpu": 8}, {"cpu": 4}], [1, 1], [0, 0])
    # On the second class kind 1 cannot run (ub 0): kind 0's places there are not kind 1's.
    other = _structure([0, 1], [{"cpu": 8}, {"cpu": 4}], [1, 1], [0, 0], ub=[4, 0])
    classes = [SimpleNamespace(kinds=[0, 1]), SimpleNamespace(kinds=[0, 1])]
    assert substitutions(classes, [big, big]) == [(0, 1)]
    assert substitutions(classes, [big, other]) == []
    assert substitutions(classes, [big, None]) == []  # no compact structure: no pairs


def test_realize_moves_places_and_follows_chains():
    classes = [SimpleNamespace(kinds=[0, 1, 2])]
    columns = [SimpleNamespace(cls=0, counts=(2, 0, 0)), SimpleNamespace(cls=0, counts=(1, 1, 0))]
    # Three nodes: two of column 0 (free), one of column 1 (a copy). Five places of kind 0, one
    # of kind 1; three pods of kind 0 go, 2 of kind 1 and one of kind 2 through 0 -> 1 -> 2.
    used, complete = realize(classes, columns, [2, 0], [0, 1], {(0, 1): 2, (1, 2): 1})
    assert complete
    total = [0, 0, 0]
    nodes = 0
    for _, counts, _, n in used:
        nodes += n
        for k, c in enumerate(counts):
            total[k] += c * n
    assert nodes == 3
    assert total == [3, 2, 1]
    assert sorted(copy for _, _, copy, n in used for _ in range(n)) == [False, False, True]
    # Deterministic: the same cover, the same configurations.
    assert realize(classes, columns, [2, 0], [0, 1], {(0, 1): 2, (1, 2): 1}) == (used, complete)


def test_realize_says_when_places_run_out():
    classes = [SimpleNamespace(kinds=[0, 1])]
    columns = [SimpleNamespace(cls=0, counts=(1, 0))]
    used, complete = realize(classes, columns, [1], [0], {(0, 1): 2})
    assert not complete
    assert used == [(0, (0, 1), False, 1)]
