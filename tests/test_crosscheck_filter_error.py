"""A DynamicResources Filter error (a CEL runtime error on a device the selector reads an attribute
it lacks) ends the pod's scheduling attempt (docs/differences.md, "Fixed"; draopt.cluster.filter_error),
answered by kube-scheduler itself (1.36 and 1.37) on the inputs of tests/filter_error_inputs.py.
Needs Go; skipped without it. tests/test_filter_error.py checks draopt's side without Go."""

from __future__ import annotations

import pytest
import yaml

import filter_error_inputs as inputs
from draopt.crosscheck import gobuild
from draopt.crosscheck.run import crosscheck
from draopt.kube.features import Features
from draopt.kube.loader import load_files

pytestmark = pytest.mark.skipif(gobuild.go_path() is None, reason="Go is not installed: no scheduler oracle")

# What kube-scheduler writes on the pod (1.36: no device named, no hint; 1.37: both).
MESSAGE = {
    "1.36": 'running "DynamicResources" filter plugin: claim default/{claim}: selector #0: CEL runtime error: '
    "no such key: profile",
    "1.37": 'running "DynamicResources" filter plugin: claim default/{claim}: selector #0 on device '
    "gpu.example.com/{node}/gpu-0: CEL runtime error: no such key: profile. consider using CEL optional "
    "chaining (.? followed by orValue()) or guarding the check with has() for optional fields",
}


def _report(tmp_path, docs, minor, config=None):
    path = inputs.write(tmp_path / "input.yaml", docs)
    config_path = None
    if config is not None:
        config_path = tmp_path / "config.yaml"
        config_path.write_text(yaml.safe_dump(config))
    report = crosscheck(
        load_files([path]),
        kubernetes_version=minor,
        features=Features.from_gates({}, minor),
        scheduler_config_path=str(config_path) if config_path else None,
        timeout=120,
    )
    assert report.identical, [d.text() for d in report.differences]
    return {p.pod.split("/", 1)[1]: p for p in report.pods}


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_filter_error_stops_the_pod(tmp_path, minor):
    """node-a errors before node-b is chosen: kube-scheduler leaves p1 pending (draopt placed it on node-b)."""
    pods = _report(tmp_path, inputs.one_pod(), minor)
    assert pods["p1"].kubernetes_node == ""
    assert pods["p1"].kubernetes_message == MESSAGE[minor].format(claim="c1", node="node-a")


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_filter_error_ends_the_pod_group_cycle(tmp_path, minor):
    """w1 errors first; w0, which fits, gets the group's error (schedule_one_podgroup.go)."""
    pods = _report(tmp_path, inputs.gang(minor), minor)
    error = MESSAGE[minor].format(claim="g1", node="node-a")
    assert (pods["w1"].kubernetes_node, pods["w1"].kubernetes_message) == ("", error)
    assert (pods["w0"].kubernetes_node, pods["w0"].kubernetes_message) == (
        "",
        "failed to schedule other pod from a pod group: " + error,
    )


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_start_index_after_a_filter_error(tmp_path, minor):
    """Without scores (numFeasibleNodesToFind 1): p-err processes node-0 and stops at node-1, so the
    start index moves by one and p-plain takes node-1; p-err's retry from node-2 finds node-2
    feasible but runs on to the next feasible node and meets node-1's error again."""
    pods = _report(tmp_path, inputs.start_index(), minor, inputs.NO_SCORES)
    assert pods["p-plain"].kubernetes_node == "node-1"
    assert pods["p-err"].kubernetes_message == MESSAGE[minor].format(claim="c-err", node="node-1")


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
@pytest.mark.parametrize("error_at", [110, 50])
def test_fixed_nodes_beyond_the_search(tmp_path, minor, error_at):
    """120 nodes, numFeasibleNodesToFind 100: a node past the search does not stop a (node-110:
    a placed, b starts at node-100 and meets it); one inside it stops both (node-050)."""
    pods = _report(tmp_path, inputs.large(error_at), minor)
    node = f"node-{error_at:03d}"
    if error_at >= 100:
        assert pods["a"].kubernetes_node == "node-000"
    else:
        assert pods["a"].kubernetes_message == MESSAGE[minor].format(claim="ca", node=node)
    assert pods["b"].kubernetes_message == MESSAGE[minor].format(claim="cb", node=node)


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_fixed_filter_error_in_preemptions_dry_run(tmp_path, minor):
    """Preemption's dry run (the victim removed) meets the error: no candidate, so its message is
    the error; 1.36's DynamicResources PostFilter words do not come before an Error. (One node:
    kube-scheduler starts the dry run at a random node, so with several the errors' order varies.)"""
    pods = _report(tmp_path, inputs.preemption(), minor)
    assert pods["high"].kubernetes_message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: " + MESSAGE[minor].format(claim="c1", node="node-a")
    )
