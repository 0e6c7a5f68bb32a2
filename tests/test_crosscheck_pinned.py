"""The scheduler differences of docs/differences.md ("kube-scheduler"), each on its minimal input
(tests/data/crosscheck/), answered by kube-scheduler itself (the scheduler oracle, 1.36 and 1.37):
a fixed one must stay identical, an open one must stay exactly the difference documented (when it
goes, the docs and this test change with it). Needs Go; skipped without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from draopt.crosscheck import gobuild
from draopt.crosscheck.run import crosscheck
from draopt.kube.features import Features
from draopt.kube.loader import load_files

DATA = Path(__file__).resolve().parent / "data" / "crosscheck"

pytestmark = pytest.mark.skipif(gobuild.go_path() is None, reason="Go is not installed: no scheduler oracle")


def _report(name: str, minor: str):
    return crosscheck(
        load_files([str(DATA / name)]),
        kubernetes_version=minor,
        features=Features.from_gates({}, minor),
        timeout=120,
    )


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_preemption_does_not_free_a_victims_devices(minor):
    report = _report("gpu-preemption.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    (pre,) = [p for p in report.pods if p.pod == "default/preemptor"]
    assert pre.kubernetes_node == "" and "Preemption is not helpful for scheduling" in pre.kubernetes_message


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_scheduling_gates(minor):
    """A gated pod stays out of the queue on both sides (issue 31 item 2; tests/test_waiting_pods.py)."""
    report = _report("gated.yaml", minor)
    assert report.identical, [d.text() for d in report.differences]
    (row,) = report.pods
    assert row.kubernetes_node == "" and row.kubernetes_message == "SchedulingGated"


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_open_all_insufficient_resources(minor):
    (d,) = _report("insufficient.yaml", minor).differences
    assert d.kind == "reason" and "1 Insufficient cpu, 1 Insufficient memory." in d.kubernetes
    assert "Insufficient memory" not in d.draopt


EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_fixed_every_example_is_identical_on_the_default_release(example):
    """Issue 30's bar: `draopt crosscheck -f examples/...` says identical (1.37, the default). The
    gang examples hold the three messages of a failed pod-group cycle (schedule_one_podgroup.go):
    a member tried that did not fit (its FitError), one not tried ("minCount (2) cannot be
    satisfied: ..."), one that fitted and was taken back ("pod group is unschedulable, ...")."""
    report = crosscheck(
        load_files([str(example)]), kubernetes_version="1.37", features=Features.from_gates({}, "1.37"), timeout=300
    )
    assert report.identical, [d.text() for d in report.differences]


def test_fixed_pod_group_cycle_messages():
    report = crosscheck(
        load_files([str(EXAMPLES[0].parent / "mig-gangs.yaml")]),
        kubernetes_version="1.37",
        features=Features.from_gates({}, "1.37"),
        timeout=300,
    )
    by_pod = {p.pod: p for p in report.pods}
    worker, chief = by_pod["ml/trainer-1-worker"], by_pod["ml/trainer-1-chief"]
    # the worker comes first in the group's queue order (created first) and fits; the chief does not
    assert worker.kubernetes_message.startswith("pod group is unschedulable, minCount (2) cannot be satisfied: 1")
    assert chief.kubernetes_message == "0/4 nodes are available: 4 cannot allocate all claims."
    assert (worker.draopt_message, chief.draopt_message) == (worker.kubernetes_message, chief.kubernetes_message)
    stranded = crosscheck(
        load_files([str(EXAMPLES[0].parent / "gang-preemption.yaml")]),
        kubernetes_version="1.37",
        features=Features.from_gates({}, "1.37"),
        timeout=300,
    )
    not_tried = [p for p in stranded.pods if p.kubernetes_message.startswith("minCount (")]
    assert not_tried and all(p.draopt_message == p.kubernetes_message for p in not_tried)
