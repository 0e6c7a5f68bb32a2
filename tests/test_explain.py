"""Explanations: device rejection reasons and the minimal set of requirements in conflict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from draopt.allocation.explain import explain_claims
from draopt.kube.features import Features
from draopt.kube.loader import load_text

import test_features as tf

ROOT = Path(__file__).resolve().parents[1]
ALL = Features.all_enabled()


def test_counter_conflict_names_both_requests_and_the_counter():
    objs = load_text(tf.CLASS + tf.COUNTERS + tf.NODE + tf.claim("a", tf.ONE) + tf.claim("b", tf.ONE))
    (ex,) = explain_claims(objs, None, ALL)
    assert not ex.fits
    assert ex.conflict == [
        "claim default/a request req-0: 1 device(s)",
        "claim default/b request req-0: 1 device(s)",
        "pool dra.example.com/pool: counter gpu-1-counters/memory (8Gi left)",
    ]


def test_match_attribute_conflict_is_minimal():
    # gpu-0 is on numa 0, the only NIC on numa 1: the constraint and both requests clash,
    # the unrelated third request is not part of the explanation.
    text = (
        tf.NUMA.replace("numa: {int: 1}}}", "numa: {int: 0}}}")
        + tf.NODE
        + tf.claim(
            "a",
            tf.DERIVED + "    - name: extra\n      exactly: {deviceClassName: gpu.example.com, count: 1}\n",
            tf.DERIVED_CONSTRAINT,
        )
    )
    (ex,) = explain_claims(load_text(text), None, ALL)
    assert not ex.fits
    assert ex.conflict == [
        "claim default/a constraints[0]: matchAttribute derived/numa over gpu, nic",
        "claim default/a request gpu: 1 device(s)",
        "claim default/a request nic: 1 device(s)",
    ]


def test_rejection_reasons_per_request():
    objs = load_text(
        tf.CLASS
        + tf.TAINTED
        + tf.NODE
        + tf.claim("a", tf.ONE.replace("resource.example.com}", "resource.example.com, count: 3}"))
    )
    (ex,) = explain_claims(objs, None, ALL)
    reasons = ex.rejections["default/a req-0"]
    assert reasons["usable"] == 2
    assert reasons["taint example.com/unhealthy=true:NoSchedule not tolerated"] == 1
    assert ex.conflict == ["claim default/a request req-0: 3 device(s)"]


def test_fitting_claims_have_no_conflict():
    (ex,) = explain_claims(load_text(tf.CLASS + tf.TAINTED + tf.NODE + tf.claim("a", tf.ONE)), None, ALL)
    assert ex.fits and ex.conflict == []


def test_cli_explains_unplaced_gang_pods():
    p = subprocess.run(
        [sys.executable, "-m", "draopt", "explain", "-f", str(ROOT / "examples" / "gang-stranding.yaml"), "-o", "json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    sections = json.loads(p.stdout)["sections"]
    # `subject` names the pod; the answer is in `section` / `message`, the per-node reasons in `nodes`.
    assert {s["subject"] for s in sections} == {"pod ml/trainer-0", "pod ml/trainer-1"}
    by_title = {(s["subject"], s["section"]): s for s in sections}
    headline = by_title["pod ml/trainer-1", "first-fit could not place it"]
    assert headline["message"] == "0/1 nodes are available: 1 cannot allocate all claims"
    assert headline["reasons"] == {"cannot allocate all claims": 1}
    failed = by_title["pod ml/trainer-1", "when it failed"]
    (block,) = failed["nodes"]
    assert block["node"] == "node-1"
    assert "cannot be met together: claim ml/trainer-1-gpu request gpu: 1 device(s)" in block["lines"]
    after = by_title["pod ml/trainer-1", "in the state after first-fit"]
    # (its gang released, the pod alone fits the state first-fit left)
    assert [(n["node"], n["fits"]) for n in after["nodes"]] == [("node-1", True)]


def test_node_blocks_of_a_rendered_explanation():
    """Nodes with the same explanation share one block in the text; JSON names them all."""
    from draopt.allocation.explain import NodeExplanation, node_blocks, render

    exps = [NodeExplanation(f"n{i}", reason="taint x not tolerated") for i in range(9)]
    exps.append(NodeExplanation("m", error="boom"))
    blocks = node_blocks("(as for default/a)\n" + render(exps))
    assert blocks == [
        {
            "node": "n0",
            "also": ["n1", "n2", "n3", "n4", "n5"],
            "unnamed": 3,
            "lines": ["taint x not tolerated"],
        },
        {"node": "m", "lines": ["error: boom"]},
    ]


CAPACITY_SLICE = """---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: dra.example.com
  nodeName: worker-1
  pool: {name: pool, generation: 1, resourceSliceCount: 1}
  devices:
  - name: dev
    capacity:
      memory:
        value: 4Gi
        requestPolicy: {default: 1Gi, validRange: {min: 1Gi, max: 2Gi}}
      bandwidth: {value: 10G}
"""


def capacity_request(capacity: str) -> str:
    return (
        "    - name: req-0\n      exactly:\n        deviceClassName: resource.example.com\n"
        f"        capacity: {{requests: {{{capacity}}}}}\n"
    )


def test_capacity_rejections_name_the_capacity():
    """The three ways a device's capacities refuse a request (k8s.io/dynamic-resource-allocation
    structured/internal/experimental/consumable_capacity.go GetConsumedCapacityFromRequest,
    violatesPolicy, CmpRequestOverCapacity), each naming the capacity. The scheduler oracle (crosscheck
    with a pod per claim, DRAConsumableCapacity on, 1.37.2) leaves all three pending, and places a
    fourth pod whose claim requests memory: 2Gi."""
    cases = {
        "bandwidth: 20G": "capacity too small (bandwidth)",
        "memory: 3Gi": "request outside the requestPolicy of capacity memory",
        "example.com/lanes: 1": "lacks capacity example.com/lanes",
    }
    for i, (capacity, reason) in enumerate(cases.items()):
        objs = load_text(tf.CLASS + CAPACITY_SLICE + tf.NODE + tf.claim(f"c{i}", capacity_request(capacity)))
        (ex,) = explain_claims(objs, None, ALL)
        assert not ex.fits
        assert dict(ex.rejections[f"default/c{i} req-0"]) == {reason: 1}, capacity
