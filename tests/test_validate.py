"""Tests for draopt.validation (`draopt validate`): one bad object per rule; every message must
name the object and the field."""

import argparse
import copy
import json
from pathlib import Path

import pytest

from draopt import validation as validate
from draopt.kube.features import Features

ROOT = Path(__file__).parent.parent
ALL = Features.all_enabled()

SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "s1"},
    "spec": {
        "driver": "gpu.example.com",
        "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [
            {"name": "gpu-0", "attributes": {"model": {"string": "h100"}}, "capacity": {"memory": {"value": "80Gi"}}}
        ],
    },
}
CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "c1", "namespace": "ml"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
}
CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.example.com"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}
RULE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceTaintRule",
    "metadata": {"name": "r1"},
    "spec": {
        "deviceSelector": {"driver": "gpu.example.com"},
        "taint": {"key": "example.com/bad", "effect": "NoExecute"},
    },
}


def check(*docs, features=ALL):
    return validate.validate_documents([(d, "test") for d in docs], features)


def one(report, field, needle, obj=None):
    """Exactly the expected finding is present; its text names object and field."""
    hits = [f for f in report.findings if f.field == field and needle in f.error_string()]
    assert hits, f"no finding at {field} containing {needle!r}: {[str(f) for f in report.findings]}"
    text = str(hits[0])
    assert hits[0].object in text and field in text
    if obj:
        assert hits[0].object == obj
    return hits[0]


def slice_with(**spec):
    s = copy.deepcopy(SLICE)
    s["spec"].update(spec)
    return s


def claim_with(requests=None, constraints=None, config=None, ns="ml", kind="ResourceClaim"):
    c = copy.deepcopy(CLAIM)
    c["metadata"]["namespace"] = ns
    if requests is not None:
        c["spec"]["devices"]["requests"] = requests
    if constraints is not None:
        c["spec"]["devices"]["constraints"] = constraints
    if config is not None:
        c["spec"]["devices"]["config"] = config
    return c


def dev(name="gpu-0", **kw):
    d = {"name": name}
    d.update(kw)
    return d


# ------------------------------------------------------------------ clean inputs
def test_example_cluster_is_valid(capsys):
    p = argparse.ArgumentParser()
    validate.register(p.add_subparsers())
    args = p.parse_args(["validate", "-f", str(ROOT / "examples" / "cluster.yaml")])
    assert args.func(args) == 0
    assert "valid" in capsys.readouterr().out


def test_clean_objects_have_no_findings():
    assert check(SLICE, CLAIM, CLASS, RULE).findings == []


# ------------------------------------------------------------------ admin access
ADMIN_REQ = [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "adminAccess": True}}]


def ns(name, labels=None):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


def test_admin_access_needs_labelled_namespace():
    r = check(ns("ml"), claim_with(ADMIN_REQ))
    f = one(
        r,
        "spec.devices.requests[0].exactly.adminAccess",
        "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label",
        obj="ResourceClaim ml/c1",
    )
    assert f.type == "Forbidden"


def test_admin_access_in_template():
    t = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t1", "namespace": "ml"},
        "spec": {"spec": claim_with(ADMIN_REQ)["spec"]},
    }
    one(
        check(ns("ml"), t),
        "spec.spec.devices.requests[0].exactly.adminAccess",
        "admin access",
        obj="ResourceClaimTemplate ml/t1",
    )


def test_admin_access_allowed_in_admin_namespace():
    labelled = ns("ml", {"resource.kubernetes.io/admin-access": "true"})
    assert check(labelled, claim_with(ADMIN_REQ)).findings == []


def test_admin_access_namespace_missing_is_a_note():
    r = check(claim_with(ADMIN_REQ))
    assert r.findings == [] and any("not in the input" in n.message for n in r.notes)


def test_admin_access_gate_off_drops_field():
    r = check(ns("ml"), claim_with(ADMIN_REQ), features=Features.from_gates({"DRAAdminAccess": False}))
    assert r.findings == [] and any("DRAAdminAccess" in n.message for n in r.notes)


# ------------------------------------------------------------------ ResourceSlice
def test_attribute_name_must_be_c_identifier():
    r = check(slice_with(devices=[dev(attributes={"bad-name": {"int": 1}})]))
    one(r, "spec.devices[0].attributes", "a valid C identifier", obj="ResourceSlice s1")


def test_attribute_domain_and_id_length():
    long_id = "a" * 33
    r = check(slice_with(devices=[dev(attributes={f"Bad_Domain/{long_id}": {"int": 1}})]))
    one(r, "spec.devices[0].attributes", "lowercase RFC 1123 subdomain")
    one(r, "spec.devices[0].attributes", "may not be more than 32 bytes")


def test_attribute_too_many_slashes():
    one(
        check(slice_with(devices=[dev(attributes={"a.com/b/c": {"int": 1}})])),
        "spec.devices[0].attributes",
        "must not contain more than one slash",
    )


def test_capacity_name_format():
    one(
        check(slice_with(devices=[dev(capacity={"9mem": {"value": "1"}})])),
        "spec.devices[0].capacity",
        "a valid C identifier",
    )


def test_attribute_exactly_one_value():
    r = check(slice_with(devices=[dev(attributes={"a": {"int": 1, "string": "x"}, "b": {}})]))
    one(r, "spec.devices[0].attributes[a]", "exactly one value must be specified")
    one(r, "spec.devices[0].attributes[b]", "exactly one value must be specified")


def test_attribute_string_and_version_format():
    r = check(slice_with(devices=[dev(attributes={"s": {"string": "x" * 65}, "v": {"version": "1.2"}})]))
    one(r, "spec.devices[0].attributes[s].string", "may not be more than 64 bytes")
    one(r, "spec.devices[0].attributes[v].version", "semver.org spec 2.0.0")


def test_at_most_48_attribute_values_list_elements_count():
    attrs = {"roots": {"strings": [f"pci-{i}" for i in range(40)]}}
    attrs.update({f"a{i}": {"int": i} for i in range(9)})  # 40 + 9 = 49 values, 10 attributes
    r = check(slice_with(devices=[dev(attributes=attrs)]), features=ALL)
    one(r, "spec.devices[0]", "the total number of attribute values must not exceed 48")


def test_list_attributes_dropped_without_gate():
    gates = Features.from_gates({"DRAListTypeAttributes": False})
    r = check(slice_with(devices=[dev(attributes={"roots": {"strings": ["a", "b"]}})]), features=gates)
    one(r, "spec.devices[0].attributes[roots]", "exactly one value must be specified")
    assert any("DRAListTypeAttributes" in n.message for n in r.notes)


def test_at_most_32_attributes_and_capacities():
    r = check(slice_with(devices=[dev(attributes={f"a{i}": {"int": i} for i in range(33)})]))
    one(r, "spec.devices[0]", "the total number of attributes and capacities must not exceed 32")


def test_devices_per_slice_128():
    devices = [dev(f"d-{i}") for i in range(129)]
    one(check(slice_with(devices=devices)), "spec.devices", "must have at most 128 items")
    assert check(slice_with(devices=devices[:128])).findings == []


@pytest.mark.parametrize(
    "extra",
    [
        {"taints": [{"key": "example.com/t", "effect": "NoSchedule"}]},
        {"consumesCounters": [{"counterSet": "cs", "counters": {"mem": {"value": "1"}}}]},
        {"attributes": {"roots": {"strings": ["a"]}}},
    ],
)
def test_devices_per_slice_64_with_advanced_features(extra):
    devices = [dev(f"d-{i}") for i in range(65)]
    devices[0].update(extra)
    one(check(slice_with(devices=devices)), "spec.devices", "must have at most 64 items")


def test_node_selection_exactly_one():
    s = slice_with(allNodes=True)
    one(
        check(s),
        "spec",
        "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
        "is required, but multiple fields are set",
    )
    s = copy.deepcopy(SLICE)
    del s["spec"]["nodeName"]
    f = one(check(s), "spec", "exactly one of `nodeName`")
    assert f.type == "Required value"


def test_node_selector_one_term():
    s = copy.deepcopy(SLICE)
    del s["spec"]["nodeName"]
    s["spec"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": []}, {"matchExpressions": []}]}
    one(check(s), "spec.nodeSelector.nodeSelectorTerms", "must have exactly one node selector term")


def test_per_device_node_selection():
    s = copy.deepcopy(SLICE)
    del s["spec"]["nodeName"]
    s["spec"]["perDeviceNodeSelection"] = True
    one(check(s), "spec.devices[0]", "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required")
    s2 = slice_with(devices=[dev(nodeName="node-1")])
    one(check(s2), "spec.devices[0]", "can only be set if `perDeviceNodeSelection` is set to true")


def test_shared_counters_only_without_devices():
    s = slice_with(sharedCounters=[{"name": "cs", "counters": {"mem": {"value": "1"}}}])
    one(check(s), "spec", "only one of `sharedCounters` or `devices` is allowed")


def test_device_names_unique_and_dns_labels():
    r = check(slice_with(devices=[dev("gpu-0"), dev("gpu-0"), dev("GPU_1")]))
    one(r, "spec.devices[1]", 'Duplicate value: "gpu-0"')
    one(r, "spec.devices[2].name", "a lowercase RFC 1123 label")


def test_slice_driver_and_pool():
    s = slice_with(driver="Not A Driver", pool={"name": "", "generation": -1, "resourceSliceCount": 0})
    r = check(s)
    one(r, "spec.driver", "RFC 1123 subdomain")
    one(r, "spec.pool.name", "Required value")
    one(r, "spec.pool.generation", "must be greater than or equal to zero")
    one(r, "spec.pool.resourceSliceCount", "must be greater than zero")


def test_device_taint_effect():
    r = check(
        slice_with(
            devices=[
                dev(
                    taints=[
                        {"key": "example.com/t", "effect": "PreferNoSchedule"},
                        {"key": "bad key!", "effect": "None"},
                    ]
                )
            ]
        )
    )
    one(
        r,
        "spec.devices[0].taints[0].effect",
        'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"',
    )
    one(r, "spec.devices[0].taints[1].key", "name part must consist of alphanumeric characters")


def test_binding_conditions_need_failure_conditions():
    r = check(slice_with(devices=[dev(bindingConditions=["ready"])]))
    one(r, "spec.devices[0].bindingFailureConditions", "bindingFailureConditions are required")


def test_request_policy_needs_multiple_allocations():
    r = check(slice_with(devices=[dev(capacity={"mem": {"value": "8", "requestPolicy": {"default": "1"}}})]))
    one(r, "spec.devices[0].capacity[mem].requestPolicy", "allowMultipleAllocations must be true")


# ------------------------------------------------------------------ ResourceClaim
def req(name="gpu", **exact):
    e = {"deviceClassName": "gpu.example.com"}
    e.update(exact)
    return {"name": name, "exactly": e}


def test_first_available_at_most_8_and_exclusive_with_exactly():
    subs = [{"name": f"s{i}", "deviceClassName": "gpu.example.com"} for i in range(9)]
    r = check(claim_with([{"name": "gpu", "firstAvailable": subs}]))
    one(r, "spec.devices.requests[0].firstAvailable", "must have at most 8 items", obj="ResourceClaim ml/c1")
    both = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}, "firstAvailable": subs[:2]}
    one(
        check(claim_with([both])),
        "spec.devices.requests[0]",
        "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
    )
    one(
        check(claim_with([{"name": "gpu"}])),
        "spec.devices.requests[0]",
        "exactly one of `exactly` or `firstAvailable` is required",
    )


def test_count_must_be_positive():
    one(
        check(claim_with([req(count=-1)])),
        "spec.devices.requests[0].exactly.count",
        "Invalid value: -1: must be greater than zero",
    )
    assert check(claim_with([req(count=0)])).findings == []  # 0 is defaulted to 1


def test_count_with_all():
    one(
        check(claim_with([req(allocationMode="All", count=2)])),
        "spec.devices.requests[0].exactly.count",
        "must not be specified when allocationMode is 'All'",
    )


def test_allocation_mode_values():
    one(
        check(claim_with([req(allocationMode="Some")])),
        "spec.devices.requests[0].exactly.allocationMode",
        'Unsupported value: "Some": supported values: "All", "ExactCount"',
    )


def test_request_names():
    r = check(claim_with([req("GPU"), req("a"), req("a")]))
    one(r, "spec.devices.requests[0].name", "RFC 1123 label")
    one(r, "spec.devices.requests[2]", 'Duplicate value: "a"')


def test_device_class_name_required():
    one(
        check(claim_with([{"name": "gpu", "exactly": {}}])),
        "spec.devices.requests[0].exactly.deviceClassName",
        "Required value",
    )


def test_constraints_reference_existing_requests():
    r = check(
        claim_with(
            [req("gpu")],
            constraints=[
                {"requests": ["gpu", "nic"], "matchAttribute": "example.com/numa"},
                {"requests": ["gpu/sub"], "matchAttribute": "numa"},
            ],
        )
    )
    one(r, "spec.devices.constraints[0].requests[1]", "must be the name of a request in the claim")
    one(r, "spec.devices.constraints[1].requests[0]", "must be the name of a request in the claim")
    one(r, "spec.devices.constraints[1].matchAttribute", "a fully qualified name must be a domain and a name")


def test_constraint_needs_an_attribute():
    one(
        check(claim_with([req()], constraints=[{"requests": ["gpu"]}])),
        "spec.devices.constraints[0]",
        'exactly one of "matchAttribute" or "distinctAttribute" is required',
    )


def test_config_references_existing_requests():
    cfg = [
        {"requests": ["nic"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}},
        {"requests": ["gpu"]},
    ]
    r = check(claim_with([req()], config=cfg))
    one(r, "spec.devices.config[0].requests[0]", "must be the name of a request in the claim")
    one(r, "spec.devices.config[1].opaque", "Required value")


def test_cel_must_compile():
    r = check(
        claim_with([req(selectors=[{"cel": {"expression": "device.attributes["}}, {"cel": {"expression": "1 + 1"}}])])
    )
    one(r, "spec.devices.requests[0].exactly.selectors[0].cel.expression", "compilation failed")
    one(r, "spec.devices.requests[0].exactly.selectors[1].cel.expression", "must evaluate to bool")
    bad_class = copy.deepcopy(CLASS)
    bad_class["spec"]["selectors"][0]["cel"]["expression"] = "noSuchVar"
    one(check(bad_class), "spec.selectors[0].cel.expression", "undeclared reference", obj="DeviceClass gpu.example.com")


def test_tolerations_operator_and_effect():
    tols = [
        {"key": "example.com/t", "operator": "Gt", "value": "1"},
        {"key": "example.com/t", "operator": "Exists", "value": "x"},
        {"operator": "Exists", "effect": "Sometimes"},
    ]
    r = check(claim_with([req(tolerations=tols)]))
    base = "spec.devices.requests[0].exactly.tolerations"
    one(r, f"{base}[0].operator", 'Unsupported value: "Gt": supported values: "Equal", "Exists"')
    one(r, f"{base}[1].value", "must be empty for operator `Exists`")
    one(r, f"{base}[2].effect", 'Unsupported value: "Sometimes"')


# ------------------------------------------------------------------ derived attributes
def derived(name, expr='device.attributes["gpu.example.com"].numa'):
    return {"name": name, "expression": expr}


def test_derived_attributes_at_most_32():
    das = [derived(f"derived/a{i}") for i in range(33)]
    one(
        check(claim_with([req(derivedAttributes=das)])),
        "spec.devices.requests[0].exactly.derivedAttributes",
        "must have at most 32 items",
    )


def test_derived_attribute_name_format():
    r = check(
        claim_with(
            [req(derivedAttributes=[derived("numa"), derived("derived/9x")])],
            constraints=[{"matchAttribute": "derived/numa"}],
        )
    )
    base = "spec.devices.requests[0].exactly.derivedAttributes"
    one(r, f"{base}[0].name", "a fully qualified name must be a domain and a name separated by a slash")
    one(r, f"{base}[1].name", "a valid C identifier")


def test_derived_attribute_must_be_referenced_by_a_constraint_of_its_request():
    r = check(
        claim_with(
            [req("gpu", derivedAttributes=[derived("derived/numa")]), req("nic")],
            constraints=[{"requests": ["nic"], "matchAttribute": "derived/numa"}],
        )
    )
    one(
        r,
        "spec.devices.requests[0].exactly.derivedAttributes[0].name",
        "must be referenced by at least one matchAttribute or distinctAttribute constraint targeting this request",
    )
    # a constraint on the parent request covers its sub-requests; an empty requests list covers all
    sub = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu.example.com", "derivedAttributes": [derived("derived/numa")]}
        ],
    }
    assert (
        check(claim_with([sub], constraints=[{"requests": ["gpu"], "distinctAttribute": "derived/numa"}])).findings
        == []
    )
    assert check(claim_with([sub], constraints=[{"matchAttribute": "derived/numa"}])).findings == []


def test_derived_attribute_expression_compiles():
    r = check(
        claim_with(
            [req(derivedAttributes=[derived("derived/n", "device.attributes[")])],
            constraints=[{"matchAttribute": "derived/n"}],
        )
    )
    one(r, "spec.devices.requests[0].exactly.derivedAttributes[0].expression", "compilation failed")


def test_derived_attributes_dropped_when_gate_off():
    r = check(claim_with([req(derivedAttributes=[derived("bad")])]), features=Features.from_gates())
    assert r.findings == [] and any("DRADerivedAttributes" in n.message for n in r.notes)


# ------------------------------------------------------------------ DeviceTaintRule
def test_taint_rule_effect_and_selector_fields():
    rule = copy.deepcopy(RULE)
    rule["spec"]["taint"]["effect"] = "Evict"
    rule["spec"]["deviceSelector"] = {
        "driver": "Bad Driver",
        "pool": "a//b",
        "device": "Gpu_0",
    }
    r = check(rule)
    one(r, "spec.taint.effect", 'Unsupported value: "Evict"', obj="DeviceTaintRule r1")
    one(r, "spec.deviceSelector.driver", "RFC 1123 subdomain")
    one(r, "spec.deviceSelector.pool", "RFC 1123 subdomain")
    one(r, "spec.deviceSelector.device", "RFC 1123 label")


def test_taint_rule_requires_effect_and_key():
    rule = copy.deepcopy(RULE)
    rule["spec"]["taint"] = {"value": "x"}
    r = check(rule)
    one(r, "spec.taint.effect", "Required value")
    one(r, "spec.taint.key", "Required value")


# ------------------------------------------------------------------ CLI
def run(argv):
    p = argparse.ArgumentParser()
    validate.register(p.add_subparsers())
    args = p.parse_args(["validate"] + argv)
    return args.func(args)


def test_cli_exit_codes_and_json(tmp_path, capsys):
    import yaml

    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump_all([ns("ml"), claim_with(ADMIN_REQ)]))
    assert run(["-f", str(f), "-o", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is False
    assert out["errors"][0]["object"] == "ResourceClaim ml/c1"
    assert out["errors"][0]["field"] == "spec.devices.requests[0].exactly.adminAccess"
    assert run(["-f", str(f)]) == 1
    assert "ResourceClaim ml/c1: spec.devices.requests[0].exactly.adminAccess: Forbidden" in capsys.readouterr().out
    assert run(["-f", str(tmp_path / "missing.yaml")]) == 2
    g = tmp_path / "broken.yaml"
    g.write_text("a: [b\n")
    assert run(["-f", str(g)]) == 2
    assert run(["-f", str(f), "--feature-gates", "NoSuchGate=true"]) == 2
