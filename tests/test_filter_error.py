"""A DynamicResources Filter error ends a pod's scheduling attempt (draopt.cluster.filter_error):
draopt's side of tests/test_crosscheck_filter_error.py, without Go. The expected answers are the
ones kube-scheduler 1.36.3 / 1.37.2 gave on the same inputs (tests/filter_error_inputs.py)."""

from __future__ import annotations

import json
from unittest import mock

import pytest

import filter_error_inputs as inputs
from draopt.cluster import firstfit
from draopt.cluster.filter_error import FILTER_ERROR, GROUP_ERROR, allocator_error, is_filter_error
from draopt.errors import AllocationError, DeviceCelError
from draopt.kube.features import Features
from draopt.kube.loader import load_text
from draopt.placement import place
from draopt.scheduler.config import parse_config
from draopt.scheduler.cycle import Scheduler


def _place(docs, minor="1.37", config=None, **kw):
    objects = load_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}), "test.json")
    cfg = parse_config(config, "config.yaml") if config is not None else None
    outcome = place(objects, policy="first-fit", features=Features.from_gates({}, minor), scheduler_config=cfg, **kw)
    n = len(outcome.cluster.nodes)
    return {p.pod.split("/", 1)[1]: p for p in outcome.result.pods}, n, outcome


def _message(claim: str, node: str, minor: str) -> str:
    if minor == "1.36":
        return f"{FILTER_ERROR}claim default/{claim}: selector #0: CEL runtime error: no such key: profile"
    return (
        f"{FILTER_ERROR}claim default/{claim}: selector #0 on device gpu.example.com/{node}/gpu-0: CEL runtime "
        "error: no such key: profile. consider using CEL optional chaining (.? followed by orValue()) or guarding "
        "the check with has() for optional fields"
    )


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_error_on_a_node_leaves_the_pod_pending(minor):
    pods, n, outcome = _place(inputs.one_pod(), minor)
    p1 = pods["p1"]
    assert not p1.placed and not p1.reasons and not p1.preemption  # (no PostFilter after an error)
    assert p1.condition_message(n) == p1.reason_text(n) == _message("c1", "node-a", minor)


def test_condition_reason_is_scheduler_error():
    from draopt.placement import output_objects

    _, _, outcome = _place(inputs.one_pod())
    (pod,) = [d for d in output_objects(outcome.result, outcome.workload) if d["kind"] == "Pod"]
    (cond,) = pod["status"]["conditions"]
    assert cond["reason"] == "SchedulerError" and cond["message"].startswith(FILTER_ERROR)


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_error_ends_the_pod_group_cycle(minor):
    pods, n, outcome = _place(inputs.gang(minor), minor)
    error = _message("g1", "node-a", minor)
    assert not pods["w1"].placed and pods["w1"].condition_message(n) == error
    assert not pods["w0"].placed and pods["w0"].condition_message(n) == GROUP_ERROR + error
    assert not outcome.result.claims  # w0's devices were given back


@pytest.mark.parametrize("array_scan", [True, False])
def test_start_index_moves_by_the_nodes_before_the_error(array_scan):
    """No scores: p-err processes node-0, stops at node-1; p-plain starts at node-1; p-err's retry
    from node-2 runs on past node-2 (feasible) to the next feasible node and meets node-1 again."""
    with mock.patch.object(Scheduler, "array_scan", array_scan):
        pods, n, _ = _place(inputs.start_index(), config=inputs.NO_SCORES)
    assert pods["p-plain"].node == "node-1"
    assert not pods["p-err"].placed and pods["p-err"].error == _message("c-err", "node-1", "1.37")


@pytest.mark.parametrize("array_scan", [True, False])
@pytest.mark.parametrize("frontiers", [True, False])
def test_a_node_past_the_search_does_not_stop_it(array_scan, frontiers):
    """120 nodes, 100 to find: a stops at node-100 (the 101st feasible) and is placed; b starts
    there and meets node-110's error."""
    with (
        mock.patch.object(Scheduler, "array_scan", array_scan),
        mock.patch.object(firstfit, "KIND_FRONTIERS", frontiers),
    ):
        pods, _, _ = _place(inputs.large(110), tie_break="name")
        assert pods["a"].node == "node-000"
        assert pods["b"].error == _message("cb", "node-110", "1.37")
        pods, _, _ = _place(inputs.large(50), tie_break="name")
    assert pods["a"].error == _message("ca", "node-050", "1.37")
    assert pods["b"].error == _message("cb", "node-050", "1.37")


def test_an_error_node_is_never_hidden_by_what_the_loop_remembers():
    """Pods of one kind, the error node behind nodes that reject them for cpu (the kind's frontier
    passes those): every pod still stops at the error node, and the start index never skips it."""
    docs = [inputs.device_class()]
    docs += inputs.node("node-0", cpu="1") + inputs.node("node-1", cpu="1") + inputs.node("node-2", profile=False)
    docs += inputs.node("node-3")
    for i in range(4):
        docs += [inputs.claim(f"c{i}"), inputs.pod(f"p{i}", f"c{i}", cpu="2", second=i)]
    pods, _, _ = _place(docs)
    assert all(pods[f"p{i}"].error == _message(f"c{i}", "node-2", "1.37") for i in range(4))


def test_other_allocator_errors_and_prefilter_rejections():
    version = "1.37"
    plain = AllocationError(
        "claim default/c, request r: cannot add device x because a claim constraint would not be satisfied"
    )
    assert allocator_error(plain, version) == FILTER_ERROR + str(plain)
    class_error = DeviceCelError(
        "class gpu: selector #1 on device d: CEL runtime error: boom (request r, expression 'x')",
        owner="class gpu selector #1",
        cause="boom",
        device="gpu.example.com/n/d",
    )
    assert allocator_error(class_error, "1.36") == f"{FILTER_ERROR}class gpu: selector #1: CEL runtime error: boom"
    assert allocator_error(class_error, version) == (
        f"{FILTER_ERROR}class gpu: selector #1 on device gpu.example.com/n/d: CEL runtime error: boom"
    )
    assert not is_filter_error("resource claim error: ... could not retrieve device class x: not found")
    assert not is_filter_error(None) and is_filter_error(FILTER_ERROR + "x")


def test_a_missing_device_class_stays_a_node_reason():
    """PreFilter's rejection in Kubernetes (every node, a FitError): not an error."""
    docs = [*inputs.node("node-a"), inputs.claim("c1"), inputs.pod("p1", "c1")]
    pods, n, _ = _place(docs)
    assert not pods["p1"].error and pods["p1"].condition_message(n).startswith(
        "0/1 nodes are available: 1 resource claim error"
    )


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_error_in_preemptions_dry_run(minor):
    pods, n, outcome = _place(inputs.preemption(("node-a", "node-b")), minor)
    high = pods["high"]
    assert not high.placed and not high.error and not outcome.result.evictions
    if minor == "1.37":
        both = ", ".join(_message("c1", node, minor) for node in ("node-a", "node-b"))
        assert high.preemption == f"preemption: [{both}]"
    else:
        assert high.preemption == "preemption: " + _message("c1", "", minor)
    assert high.condition_message(n) == f"0/2 nodes are available: 2 Insufficient cpu. {high.preemption}"
