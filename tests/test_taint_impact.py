"""Tests for draopt.dra.taint_impact (`draopt taint-impact`)."""

import argparse
import json
from pathlib import Path

import pytest
import yaml

from draopt.dra import taint_impact
from draopt.errors import InputError

DATA = Path(__file__).parent / "data" / "taint_impact.yaml"


def run(argv):
    p = argparse.ArgumentParser()
    taint_impact.register(p.add_subparsers())
    args = p.parse_args(["taint-impact"] + argv)
    return args.func(args)


def impacts(rule=None):
    return {i.rule: i for i in taint_impact.analyze(taint_impact.load_inputs([str(DATA)]), rule_name=rule)}


def test_no_execute_over_allocated_devices_lists_claims_and_pods():
    imp = impacts()["broken-gpu-0"]
    assert imp.devices == ["gpu.example.com/node-1/gpu-0"]
    assert imp.allocated["gpu.example.com/node-1/gpu-0"] == ["ml/train", "admin/debug"]
    evicted = {c.claim: c for c in imp.evicted_claims}
    assert set(evicted) == {"ml/train", "admin/debug"}
    assert evicted["admin/debug"].admin_access  # admin access counts as allocated
    assert [p.key for p in evicted["ml/train"].pods] == ["ml/trainer"]  # status.reservedFor
    assert [p.key for p in evicted["admin/debug"].pods] == ["admin/debugger"]  # Pod resourceClaimName
    assert imp.message() == (
        "1 published device selected. 1 allocated device selected. 2 pods to be evicted in 2 namespaces."
    )


def test_none_effect_is_a_dry_run_and_tolerating_claim_is_kept():
    imp = impacts()["dry-run-node-1"]
    assert len(imp.devices) == 4 and len(imp.allocated) == 4
    evicted = {c.claim for c in imp.evicted_claims}
    assert evicted == {"ml/train", "admin/debug", "ml/web-gpu-abc12"}
    tolerated = [c.claim for c in imp.claims if c.tolerated]
    assert tolerated == ["ml/tolerant"]
    # generated claim found through the pod's status.resourceClaimStatuses
    web = next(c for c in imp.evicted_claims if c.claim == "ml/web-gpu-abc12")
    assert [p.key for p in web.pods] == ["ml/web"]
    assert imp.message().endswith("3 pods would be evicted in 2 namespaces if the effect was NoExecute.")
    d = imp.to_dict()
    assert d["dryRun"] is True and d["toleratedClaims"][0]["claim"] == "ml/tolerant"


def test_tolerated_claim_not_evicted_by_no_execute(tmp_path):
    text = (
        DATA.read_text()
        + """
---
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: gpu-2-broken}
spec:
  deviceSelector: {driver: gpu.example.com, pool: node-1, device: gpu-2}
  taint: {key: dra.example.com/unhealthy, value: Broken, effect: NoExecute}
"""
    )
    f = tmp_path / "in.yaml"
    f.write_text(text)
    imp = taint_impact.analyze(taint_impact.load_inputs([str(f)]), rule_name="gpu-2-broken")[0]
    assert imp.allocated == {"gpu.example.com/node-1/gpu-2": ["ml/tolerant"]}
    assert imp.evicted_claims == [] and imp.evicted_pods == []
    assert imp.claims[0].tolerated


def test_toleration_seconds_delays_eviction(tmp_path):
    doc = yaml.safe_load_all(DATA.read_text())
    docs = list(doc)
    for d in docs:
        if d["kind"] == "ResourceClaim" and d["metadata"]["name"] == "tolerant":
            d["spec"]["devices"]["requests"][0]["exactly"]["tolerations"][0]["tolerationSeconds"] = 300
    f = tmp_path / "in.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    imp = taint_impact.analyze(taint_impact.load_inputs([str(f)]), rule_name="dry-run-node-1")[0]
    c = next(c for c in imp.claims if c.claim == "ml/tolerant")
    assert c.evicted and c.evict_after_seconds == 300
    assert [p.key for p in c.pods] == ["ml/patient"]


def test_result_tolerations_take_precedence(tmp_path):
    docs = list(yaml.safe_load_all(DATA.read_text()))
    for d in docs:
        if d["kind"] == "ResourceClaim" and d["metadata"]["name"] == "train":
            for r in d["status"]["allocation"]["devices"]["results"]:
                r["tolerations"] = [{"operator": "Exists"}]
    f = tmp_path / "in.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    imp = taint_impact.analyze(taint_impact.load_inputs([str(f)]), rule_name="broken-gpu-0")[0]
    assert {c.claim for c in imp.evicted_claims} == {"admin/debug"}


def test_empty_selector_selects_every_device():
    # API reference (DeviceTaintSelector): "The empty selector matches all devices."
    imp = impacts()["nothing"]
    published = [
        f"{s['spec']['driver']}/{s['spec']['pool']['name']}/{d['name']}"
        for s in yaml.safe_load_all(DATA.read_text())
        if s and s["kind"] == "ResourceSlice"
        for d in s["spec"].get("devices", [])
    ]
    assert imp.selector_empty and sorted(imp.devices) == sorted(published) and len(published) == 5
    assert any("selects every device" in n for n in imp.notes)
    assert "ml/train" in {c.claim for c in imp.evicted_claims}


def test_selector_fields_of_no_served_version_narrow_nothing(tmp_path):
    """deviceClassName and CEL selectors were DeviceTaintSelector fields of 1.33-1.34's v1alpha3
    only: the API server of every served version drops them, so the rule below is the empty
    selector and taints every device (the allocator oracle's answer:
    tests/test_crosscheck_allocator.py::test_fixed_taint_rule_removed_selector_fields)."""
    rule = """
---
apiVersion: resource.k8s.io/v1beta2
kind: DeviceTaintRule
metadata: {name: old-style}
spec:
  deviceSelector:
    deviceClassName: gpu.example.com
    selectors:
    - cel: {expression: 'device.attributes["gpu.example.com"].model == "h100"'}
  taint: {key: k, effect: NoSchedule}
"""
    f = tmp_path / "in.yaml"
    f.write_text(DATA.read_text() + rule)
    (imp,) = taint_impact.analyze(taint_impact.load_inputs([str(f)]), rule_name="old-style")
    assert imp.selector_empty and len(imp.devices) == 5
    assert any(
        n.startswith("spec.deviceSelector.deviceClassName and selectors: not in any served version") for n in imp.notes
    )


def test_no_schedule_reports_devices_without_eviction():
    imp = impacts()["no-schedule-gpu-2"]
    assert imp.devices == ["gpu.example.com/node-1/gpu-2"]
    assert not imp.evaluates_eviction and imp.evicted_claims == []


def test_cli_rule_filter_and_formats(capsys):
    assert run(["-f", str(DATA), "--rule", "broken-gpu-0", "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["rule"] for r in out["rules"]] == ["broken-gpu-0"]
    assert out["rules"][0]["evictedPods"] == [
        {"namespace": "admin", "name": "debugger"},
        {"namespace": "ml", "name": "trainer"},
    ]
    assert run(["-f", str(DATA), "-o", "yaml"]) == 0
    assert len(yaml.safe_load(capsys.readouterr().out)["rules"]) == 4
    assert run(["-f", str(DATA)]) == 0
    assert "evicts claim ml/train" in capsys.readouterr().out


def test_unknown_rule_and_unreadable_input(capsys, tmp_path):
    assert run(["-f", str(DATA), "--rule", "missing"]) == 2
    assert "no DeviceTaintRule named 'missing'" in capsys.readouterr().err
    assert run(["-f", str(tmp_path / "nope.yaml")]) == 2
    with pytest.raises(InputError):
        taint_impact.analyze(taint_impact.load_inputs([str(DATA)]), rule_name="missing")
