"""The optimal policy's floor is the first-fit it is compared against: the scheduler profile the
same flags give `place --policy first-fit`, and the name-order first-fit when that places more."""

import random

import pytest

from draopt.placement import place
from draopt.testing.synth_cluster import random_cluster
from draopt.testing.audit import objects_of


@pytest.mark.parametrize("family,seed", [("gpu-nic", 8), ("mixed", 5)])
def test_optimal_never_below_either_first_fit(family, seed):
    docs = random_cluster(random.Random(seed), family)
    profile = place(objects_of(docs), policy="first-fit").result
    by_name = place(objects_of(docs), policy="first-fit", scheduler_config="builtin:name-order").result
    best = place(objects_of(docs), policy="optimal", time_limit=20).result
    assert best.weighted_placed() >= max(profile.weighted_placed(), by_name.weighted_placed())
    assert best.stats["first_fit_objective"] == max(profile.weighted_placed(), by_name.weighted_placed())
    assert best.stats["first_fit_scheduler"] in ("builtin:name-order", profile.stats["scheduler"])


def test_profiles_differ_on_this_cluster():
    # gpu-nic seed 8: the default profile (spreading) places more than name order here, so the
    # test above checks the profile's run is the floor, not only the name-order one.
    docs = random_cluster(random.Random(8), "gpu-nic")
    profile = place(objects_of(docs), policy="first-fit").result
    by_name = place(objects_of(docs), policy="first-fit", scheduler_config="builtin:name-order").result
    assert profile.weighted_placed() != by_name.weighted_placed()
