"""Inputs users already have (driver demos, kubectl dumps, KEP and website examples) from
`../shared/realworld/` (see its README): `validate` says what the API server would say, and
allocate / place / taint-impact use them as Kubernetes does. Skipped when the directory is
missing; the in-repository tests of the same shapes are in test_versions.py and test_strict.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from draopt.dra import taint_impact
from draopt.errors import InputError
from draopt.notes import DraoptWarning
from draopt.kube.loader import load_files, load_text
from draopt.placement import place
from draopt.validation import validate_documents, validate_files

ROOT = Path(__file__).resolve().parents[1]
REALWORLD = ROOT.parent / "shared" / "realworld"
QUANTITY_RE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def rw(rel: str) -> str:
    path = REALWORLD / rel
    if not path.exists():
        pytest.skip(f"{path} not available")
    return str(path)


def scenario_files() -> list[str]:
    return sorted(p.name for p in REALWORLD.glob("[0-9][0-9]-*.yaml")) if REALWORLD.is_dir() else []


def errors(rel: str) -> list[str]:
    return [str(f) for f in validate_files([rw(rel)]).findings]


@pytest.mark.skipif(not REALWORLD.is_dir(), reason="../shared/realworld not available")
@pytest.mark.parametrize("name", scenario_files() or ["(none)"])
def test_scenarios_are_valid_and_have_no_unknown_fields(name, capsys):
    """The demos and dumps are what clusters accept: no finding, and loading them warns about
    nothing (managedFields, status, ownerReferences, probes... are known fields)."""
    report = validate_files([rw(name)])
    assert report.findings == [], [str(f) for f in report.findings]
    load_files([rw(name)])
    assert "warning:" not in capsys.readouterr().err


def test_claim_with_spec_spec_kep4815():
    assert errors("rough/r09-kep4815-claim-spec-spec.yaml") == [
        'ResourceClaim default/mig-devices: unknown field "spec.spec"'
    ]
    assert errors("minimal/m03-claim-spec-spec.yaml") == [
        'ResourceClaim default/mig-devices: unknown field "spec.spec"'
    ]


def test_pod_with_misspelled_fields(capsys):
    assert errors("minimal/m04-pod-misspelled-fields.yaml") == [
        'Pod default/p: unknown field "spec.resourceclaims"',
        'Pod default/p: spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in '
        'pod.spec.resourceClaims which is empty',
    ]
    with pytest.warns(DraoptWarning) as said:
        objs = load_files([rw("minimal/m04-pod-misspelled-fields.yaml")])
    texts = [str(w.message) for w in said if issubclass(w.category, DraoptWarning)]
    assert len(texts) == 1 and 'Pod default/p: unknown field "spec.resourceclaims"' in texts[0]
    assert objs.pods[0].spec.resource_claims == []


def test_website_claim_with_broken_indentation():
    assert errors("rough/r10-website-resourceclaim-indent.yaml") == [
        'ResourceClaim default/example-resource-claim: unknown field '
        '"spec.devices.requests[0].exactly.selectors[0].expression"',
        'ResourceClaim default/example-resource-claim: spec.devices.requests[0].exactly.selectors[0].cel: '
        'Required value',
    ]


def test_invalid_quantities():
    got = errors("minimal/m06-invalid-quantities.yaml")
    assert got == [
        f'ResourceSlice s1: spec.sharedCounters[0].counters[memory].value: Invalid value: "80 Gi": {QUANTITY_RE}',
        f'ResourceSlice s2: spec.devices[0].capacity[memory].value: Invalid value: "80GB": {QUANTITY_RE}',
        f'ResourceSlice s2: spec.devices[0].capacity[memory].requestPolicy.default: Invalid value: "1GB": '
        f'{QUANTITY_RE}',
        f'ResourceSlice s2: spec.devices[0].capacity[memory].requestPolicy.validRange.min: Invalid value: "1GB": '
        f'{QUANTITY_RE}',
        f'ResourceSlice s2: spec.devices[0].capacity[memory].requestPolicy.validRange.step: Invalid value: "1GB": '
        f'{QUANTITY_RE}',
        f'ResourceSlice s2: spec.devices[0].consumesCounters[0].counters[memory].value: Invalid value: "1.5.0": '
        f'{QUANTITY_RE}',
        f'ResourceClaim default/c: spec.devices.requests[0].exactly.capacity.requests[memory]: Invalid value: '
        f'"16 GiB": {QUANTITY_RE}',
    ]
    with pytest.raises(InputError, match="80 Gi"):
        load_files([rw("minimal/m06-invalid-quantities.yaml")])


def test_kep_tpu_slices_operator_and_duplicate_name():
    got = errors("rough/r11-kep4815-tpu-multihost.yaml")
    assert 'ResourceSlice device-slice: metadata.name: Duplicate value: "device-slice"' in got
    assert (
        'ResourceSlice device-slice: spec.devices[0].nodeSelector.nodeSelectorTerms[0].matchExpressions[0]'
        '.operator: Invalid value: "IN": not a valid selector operator'
    ) in got
    assert sum("not a valid selector operator" in e for e in got) == 3


@pytest.mark.parametrize(
    "rel, slices",
    [
        ("minimal/m05-combined-slice.yaml", ["n1-gpu"]),
        (
            "rough/r12-nvidia-combined-slices-k8s134.yaml",
            ["gpu-node-a100-gpu.nvidia.com-x7k2p", "gpu-node-a100-gpu.nvidia.com-b9qzt"],
        ),
    ],
)
def test_combined_counter_and_device_slices(rel, slices):
    """NVIDIA's 1.34 DynamicMIG layout: rejected by the API server of 1.35+, never silently dropped."""
    assert errors(rel) == [
        f'ResourceSlice {s}: spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed'
        for s in slices
    ]
    with pytest.raises(
        InputError,
        match=f"ResourceSlice {slices[0]}: spec: Invalid value.*only one of `sharedCounters` or `devices`.*1.34",
    ):
        load_files([rw(rel)])
    p = subprocess.run(
        [sys.executable, "-m", "draopt", "place", "-f", rw(rel)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert p.returncode == 2 and slices[0] in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize(
    "rel, rule, evicted",
    [
        ("minimal/m02-taintrule-empty-selector.yaml", "drain-everything", ["default/p-running"]),
        ("rough/r19-taintrule-empty-selector.yaml", "example", None),
    ],
)
def test_empty_device_taint_rule_selector_selects_every_device(rel, rule, evicted):
    published = sorted(
        f"{s.spec.driver}/{s.spec.pool.name}/{d.name}"
        for s in load_files([rw(rel)]).resource_slices
        for d in s.spec.devices
    )
    impact = taint_impact.analyze(taint_impact.load_inputs([rw(rel)]), rule_name=rule)[0]
    assert sorted(impact.devices) == published and published
    if evicted is not None:
        assert [p.key for p in impact.evicted_pods] == evicted
    report = validate_files([rw(rel)])
    assert report.findings == [] and any("selects every device" in n.message for n in report.notes)


def test_empty_selector_keeps_new_pods_off_the_tainted_devices():
    out = place(load_files([rw("minimal/m02-taintrule-empty-selector.yaml")]), policy="first-fit")
    new = next(p for p in out.result.pods if p.pod == "default/p-new")
    assert not new.placed


def test_rocm_v1beta1_dump_is_valid_and_allocatable():
    assert errors("rough/r01-rocm-v1beta1-slice.yaml") == []
    objs = load_files([rw("rough/r01-rocm-v1beta1-slice.yaml")])
    assert objs.resource_slices[0].api_version == "resource.k8s.io/v1"
    assert all("basic" not in d.to_k8s() for d in objs.resource_slices[0].spec.devices)
    assert objs.resource_slices[0].spec.devices[0].attributes


def test_node_with_capacity_only_has_allocatable_capacity():
    """SetDefaults_NodeStatus: a Node without status.allocatable gets its capacity, not unlimited room
    (kind-worker from the example driver's demo cluster, with the allocatable stanza left out)."""
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "kind-worker", "labels": {"kubernetes.io/hostname": "kind-worker"}},
        "status": {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
    }
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p{i}", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "6"}}}]},
        }
        for i in range(3)
    ]
    out = place(load_text(yaml.safe_dump_all([node, *pods])), policy="first-fit")
    assert [p.placed for p in out.result.pods] == [True, True, False]  # cpu: 3 x 6 > 16
    node["status"]["allocatable"] = {"cpu": "32", "memory": "64Gi", "pods": "110"}  # given: it counts
    out = place(load_text(yaml.safe_dump_all([node, *pods])), policy="first-fit")
    assert [p.placed for p in out.result.pods] == [True, True, True]


def test_rule_without_selector_selects_every_device():
    """Kubernetes' ResourceSlice tracker applies a DeviceTaintRule without deviceSelector to every
    device (applyPatches: a nil selector filters nothing)."""
    docs = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
        },
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "n1-gpu"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "n1",
                "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c"}], "resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}]},
        },
    ]
    rule = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "all"},
        "spec": {"taint": {"key": "example.com/drain", "effect": "NoSchedule"}},
    }
    assert place(load_text(yaml.safe_dump_all(docs)), policy="first-fit").result.pods[0].placed
    out = place(load_text(yaml.safe_dump_all([*docs, rule])), policy="first-fit")
    assert not out.result.pods[0].placed
    rule["spec"]["deviceSelector"] = {"device": "gpu-0"}
    out = place(load_text(yaml.safe_dump_all([*docs, rule])), policy="first-fit")
    claim = next(o for o in out.objects if o["kind"] == "ResourceClaim")
    assert [r["device"] for r in claim["status"]["allocation"]["devices"]["results"]] == ["gpu-1"]


def test_intel_lower_case_pod_once_its_api_version_is_added():
    docs = [d for d in yaml.safe_load_all(Path(rw("rough/r08-intel-lowercase-pod.yaml")).read_text()) if d]
    for d in docs:
        d.setdefault("apiVersion", "v1")
    got = [str(f) for f in validate_documents([(d, "r08") for d in docs]).findings]
    assert got == [
        'Pod default/test-inline-claim: unknown field "apiversion"',
        'Pod default/test-inline-claim: unknown field "spec.restartpolicy"',
        'Pod default/test-inline-claim: unknown field "spec.resourceclaims"',
        'Pod default/test-inline-claim: spec.containers[0].resources.claims[0]: Not found: "resource": '
        'must be one of the names in pod.spec.resourceClaims which is empty',
    ]
