"""`allocate --policy optimal`: valid allocations that prefer alternatives and pack partitions."""

from __future__ import annotations

from draopt.allocation import allocate as api
from draopt.kube.features import Features
from draopt.kube.loader import load_text

import test_features as tf

ALL = Features.all_enabled()

MIG = tf.COMPAT.replace("      compatibilityGroups: [mig]\n", "").replace("      compatibilityGroups: [vgpu]\n", "")


def test_optimal_takes_the_smallest_fitting_partition():
    # Counter 8 units: first-fit gives a 4-unit slice to the first request; optimal too (all slices are 4);
    # with a 6-unit device first in order, optimal skips it for a 4-unit one.
    text = MIG.replace(
        "gpu-0-mig\n    attributes: {mode: {string: mig}}\n    consumesCounters:\n    - counterSet: gpu-0-memory\n"
        "      counters: {memory: {value: 4Gi}}",
        "gpu-0-mig\n    attributes: {mode: {string: mig}}\n    consumesCounters:\n    - counterSet: gpu-0-memory\n"
        "      counters: {memory: {value: 6Gi}}",
    )
    objs = load_text(tf.CLASS + text + tf.NODE + tf.claim("a", tf.ONE))
    ff = api.allocate(objs, features=ALL, policy="first-fit")
    opt = api.allocate(objs, features=ALL, policy="optimal")
    assert ff.results[0].devices.results[0].device == "gpu-0-mig"
    assert opt.results[0].devices.results[0].device == "gpu-0-vgpu"


def test_optimal_is_valid_and_prefers_first_alternative():
    objs = load_text(tf.CATS + tf.NODE + tf.claim("a", tf.PRIORITIZED))
    out = api.allocate(objs, features=ALL, policy="optimal")
    assert out.results[0].devices.results[0].request == "req-0/large-black"
