"""`--kubernetes-version` / `kubernetes_version=`: each release's default feature gates, its locked
GA gates and the gates it does not have yet (facts: kube_features.go at v1.35.0, v1.36.3, v1.37.2,
v1.38.0-beta.0; docs/versions.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import draopt
from draopt.errors import InputError
from draopt.kube.features import DEFAULT_GATES, Features, features_from_flags
from draopt.kube.releases import DEFAULT_VERSION, KNOWN_GATES, RELEASES, GateDefault, parse_kubernetes_version

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "examples" / "cluster.yaml")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "draopt.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("text", ["1.37", "v1.37", "1.37.2", " v1.37.0 "])
def test_version_forms(text):
    assert parse_kubernetes_version(text) == "1.37"


@pytest.mark.parametrize("text", ["1.99", "1.34", "1", "latest", "1.37.x", "v1.37.2.1"])
def test_unsupported_versions_list_the_supported_ones(text):
    with pytest.raises(InputError, match=r"--kubernetes-version: .* \(supported: 1\.35, 1\.36, 1\.37, 1\.38"):
        parse_kubernetes_version(text)


def test_default_is_137():
    assert DEFAULT_VERSION == "1.37"
    f = Features.from_gates()
    assert f.kubernetes_version == f.version == "1.37"
    assert DEFAULT_GATES == RELEASES["1.37"].defaults()
    assert Features() == f  # the dataclass defaults are 1.37's


def test_136_and_137_defaults_differ_where_kubernetes_changed_them():
    v136, v137 = Features.from_gates(version="1.36"), Features.from_gates(version="1.37")
    # DRADeviceTaintRules: beta and off in 1.36 (its API was an off-by-default beta), GA and on in 1.37.
    assert v136.gates["DRADeviceTaintRules"] is False and not v136.device_taint_rules
    assert v137.gates["DRADeviceTaintRules"] is True and v137.device_taint_rules
    # Gates that arrived in 1.37 are unknown in 1.36.
    for gate in ("DRADeviceCompatibilityGroups", "DRADerivedAttributes", "CompositePodGroup"):
        assert gate not in v136.gates and gate in v137.gates
    assert RELEASES["1.36"].gates["DRAWorkloadResourceClaims"].stage == "alpha"
    assert RELEASES["1.37"].gates["DRAWorkloadResourceClaims"].stage == "beta"
    assert not v137.workload_resource_claims  # beta, but off by default


def test_135_defaults():
    f = Features.from_gates(version="1.35")
    assert f.prioritized_list and f.admin_access
    assert not (f.partitionable_devices or f.device_taints or f.consumable_capacity or f.extended_resource)
    assert not f.device_binding_and_status


def test_138_is_planned_and_graduates_the_dra_gates():
    r = RELEASES["1.38"]
    assert not r.released
    for gate in ("DRAPartitionableDevices", "DRADeviceBindingConditions", "DRADeviceTaints", "DRADeviceTaintRules"):
        assert r.gates[gate].stage == "ga" and r.gates[gate].locked
    assert r.gates["DRAConsumableCapacity"].stage == "ga" and not r.gates["DRAConsumableCapacity"].locked
    assert r.gates["TopologyAwareWorkloadScheduling"].stage == "beta"
    assert not r.gates["TopologyAwareWorkloadScheduling"].default
    assert "DRAPreemption" in r.gates and not Features.from_gates(version="1.38").dra_preemption


def test_device_taints_ga_in_137_but_not_locked_until_138():
    assert RELEASES["1.37"].gates["DRADeviceTaints"] == GateDefault(True, "ga", locked=False)
    assert not Features.from_gates({"DRADeviceTaints": False}, "1.37").device_taints
    with pytest.raises(
        InputError, match="cannot set feature gate DRADeviceTaints to false.*locked to true in Kubernetes 1.38"
    ):
        Features.from_gates({"DRADeviceTaints": False}, "1.38")


@pytest.mark.parametrize(
    ("gate", "version"),
    [("DRAPrioritizedList", "1.37"), ("DRAAdminAccess", "1.36"), ("DRAExtendedResource", "1.37")],
)
def test_locked_gate_cannot_be_turned_off(gate, version):
    with pytest.raises(
        InputError,
        match=rf"--feature-gates: cannot set feature gate {gate} to false, feature is locked to true in Kubernetes {version}",
    ):
        Features.from_gates({gate: False}, version)
    assert Features.from_gates({gate: True}, version).gates[gate]  # its own value is fine


def test_locked_in_137_is_settable_where_not_locked():
    assert not Features.from_gates({"DRAPrioritizedList": False}, "1.36").prioritized_list  # GA, unlocked
    assert not Features.from_gates({"DRAAdminAccess": False}, "1.35").admin_access  # beta


@pytest.mark.parametrize(
    ("gate", "version", "arrives"),
    [
        ("DRAListTypeAttributes", "1.35", "1.36"),
        ("DRADerivedAttributes", "1.36", "1.37"),
        ("DRAPreemption", "1.37", "1.38"),
    ],
)
def test_gate_unknown_before_its_release(gate, version, arrives):
    with pytest.raises(
        InputError, match=rf"unknown feature gate '{gate}' in Kubernetes {version} \(it arrives in {arrives}\)"
    ):
        Features.from_gates({gate: True}, version)


def test_feature_gates_override_on_top_of_the_version():
    f = features_from_flags("DRAPartitionableDevices=false,DRAListTypeAttributes=true", "1.36")
    assert f.version == "1.36" and not f.partitionable_devices and f.list_type_attributes
    assert f.consumable_capacity  # the rest stay 1.36's defaults
    f = features_from_flags("DRAConsumableCapacity=true", "1.35")
    assert f.consumable_capacity and not f.partitionable_devices


def test_unpinned_gates_stay_free():
    """Without a version the allocator's feature set is free (the conformance scenarios switch
    DRAPrioritizedList and DRAAdminAccess off), on 1.37's defaults."""
    f = features_from_flags("DRAPrioritizedList=false,DRAAdminAccess=false,DRAPreemption=true", None)
    assert not f.prioritized_list and not f.admin_access and f.dra_preemption and f.version == "1.37"
    with pytest.raises(InputError, match="unknown feature gate 'NoSuchGate'"):
        features_from_flags("NoSuchGate=true", None)


def test_all_enabled_per_release():
    assert set(Features.all_enabled("1.36").gates) == set(RELEASES["1.36"].gates)
    assert all(Features.all_enabled().gates.values())
    assert set(KNOWN_GATES) >= set(DEFAULT_GATES)


def test_cli_unsupported_version_exits_2():
    r = cli("allocate", "-f", CLUSTER, "--kubernetes-version", "1.99")
    assert r.returncode == 2
    assert "--kubernetes-version: '1.99' is not supported (supported: 1.35, 1.36, 1.37, 1.38 (planned))" in r.stderr


def test_cli_locked_gate_exits_2():
    r = cli("allocate", "-f", CLUSTER, "--kubernetes-version", "1.37", "--feature-gates", "DRAPrioritizedList=false")
    assert r.returncode == 2
    assert (
        "cannot set feature gate DRAPrioritizedList to false, feature is locked to true in Kubernetes 1.37" in r.stderr
    )


@pytest.mark.parametrize("command", ["allocate", "place", "explain", "plan", "validate", "taint-impact", "compare"])
def test_every_command_with_feature_gates_takes_the_version(command):
    r = cli(command, "--help")
    assert "--feature-gates" in r.stdout and "--kubernetes-version" in r.stdout


def test_api_keyword():
    out = draopt.allocate(CLUSTER, kubernetes_version="v1.36.3", deterministic_share_ids=True)
    assert out.allocated
    with pytest.raises(InputError, match="locked to true in Kubernetes 1.37"):
        draopt.allocate(CLUSTER, features="DRAAdminAccess=false", kubernetes_version="1.37")
    with pytest.raises(InputError, match="unknown feature gate 'DRADerivedAttributes' in Kubernetes 1.35"):
        draopt.place(CLUSTER, features={"DRADerivedAttributes": True}, kubernetes_version="1.35")
    with pytest.raises(InputError, match="Features given are Kubernetes 1.37's"):
        draopt.allocate(CLUSTER, features=Features.from_gates(), kubernetes_version="1.36")


def test_validate_notes_api_versions_the_release_does_not_serve(tmp_path):
    doc = tmp_path / "pg.yaml"
    doc.write_text(
        "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g, namespace: default}\n"
        "spec:\n  podGroupTemplateRef: {workload: {workloadName: w, podGroupTemplateName: t}}\n"
        "  schedulingPolicy: {gang: {minCount: 2}}\n"
    )
    on_136 = draopt.validate(str(doc), kubernetes_version="1.36")
    on_137 = draopt.validate(str(doc), kubernetes_version="1.37")
    assert on_136.findings == on_137.findings == []
    assert not any("serves" in n.message for n in on_136.notes)
    assert any("Kubernetes 1.37 serves PodGroup as scheduling.k8s.io/v1beta1" in n.message for n in on_137.notes)
