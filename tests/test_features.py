"""One test per DRA feature, reproducing the examples of the DRA concept docs (shared/seeds)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from draopt.allocation import allocate as api
from draopt.errors import AllocationError
from draopt.kube.features import Features
from draopt.kube.loader import load_text
from draopt.kube.quantity import Quantity

ALL = Features.all_enabled()
V1 = "apiVersion: resource.k8s.io/v1"


def allocate(text: str, features: Features = ALL, **kw):
    return api.allocate(load_text(text), features=features, deterministic_share_ids=True, **kw)


def devices(outcome, i=0):
    return [(r.request, r.device) for r in outcome.claims[i].status.allocation.devices.results]


NODE = "---\napiVersion: v1\nkind: Node\nmetadata: {name: worker-1}\n"
CLASS = f"""---
{V1}
kind: DeviceClass
metadata: {{name: resource.example.com}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "dra.example.com"'}}
"""


def claim(name: str, requests: str, extra: str = "") -> str:
    return f"""---
{V1}
kind: ResourceClaim
metadata: {{name: {name}, namespace: default, uid: uid-{name}}}
spec:
  devices:
    requests:
{requests}{extra}
"""


COUNTERS = f"""---
{V1}
kind: ResourceSlice
metadata: {{name: resourceslice-with-countersets}}
spec:
  nodeName: worker-1
  pool: {{name: pool, generation: 1, resourceSliceCount: 2}}
  driver: dra.example.com
  sharedCounters:
  - name: gpu-1-counters
    counters:
      memory: {{value: 8Gi}}
---
{V1}
kind: ResourceSlice
metadata: {{name: resourceslice-with-devices}}
spec:
  nodeName: worker-1
  pool: {{name: pool, generation: 1, resourceSliceCount: 2}}
  driver: dra.example.com
  devices:
  - name: device-1
    consumesCounters:
    - counterSet: gpu-1-counters
      counters:
        memory: {{value: 6Gi}}
  - name: device-2
    consumesCounters:
    - counterSet: gpu-1-counters
      counters:
        memory: {{value: 6Gi}}
"""

ONE = "    - name: req-0\n      exactly: {deviceClassName: resource.example.com}\n"


def test_partitionable_two_6gi_devices_on_8gi_counter_set():
    out = allocate(CLASS + COUNTERS + NODE + claim("a", ONE) + claim("b", ONE))
    assert not out.allocated  # together they would need 12Gi of 8Gi
    out = allocate(CLASS + COUNTERS + NODE + claim("a", ONE))
    assert devices(out) == [("req-0", "device-1")]
    # With device-1 allocated, device-2 no longer fits.
    held = (
        claim("held", ONE).rstrip()
        + """
status:
  allocation:
    devices:
      results:
      - {request: req-0, driver: dra.example.com, pool: pool, device: device-1}
"""
    )
    assert not allocate(CLASS + COUNTERS + NODE + held + claim("b", ONE)).allocated


def test_partitionable_gate_off_ignores_counter_devices():
    off = Features.from_gates({"DRAPartitionableDevices": False})
    assert not allocate(CLASS + COUNTERS + NODE + claim("a", ONE), features=off).allocated


COMPAT = f"""---
{V1}
kind: ResourceSlice
metadata: {{name: gpu-0-counters}}
spec:
  nodeName: worker-1
  pool: {{name: gpu-0, generation: 1, resourceSliceCount: 2}}
  driver: dra.example.com
  sharedCounters:
  - name: gpu-0-memory
    counters: {{memory: {{value: 8Gi}}}}
---
{V1}
kind: ResourceSlice
metadata: {{name: gpu-0-devices}}
spec:
  nodeName: worker-1
  pool: {{name: gpu-0, generation: 1, resourceSliceCount: 2}}
  driver: dra.example.com
  devices:
  - name: gpu-0-mig
    attributes: {{mode: {{string: mig}}}}
    consumesCounters:
    - counterSet: gpu-0-memory
      counters: {{memory: {{value: 4Gi}}}}
      compatibilityGroups: [mig]
  - name: gpu-0-vgpu
    attributes: {{mode: {{string: vgpu}}}}
    consumesCounters:
    - counterSet: gpu-0-memory
      counters: {{memory: {{value: 4Gi}}}}
      compatibilityGroups: [vgpu]
  - name: gpu-0-mig-2
    attributes: {{mode: {{string: mig}}}}
    consumesCounters:
    - counterSet: gpu-0-memory
      counters: {{memory: {{value: 4Gi}}}}
      compatibilityGroups: [mig]
"""


@pytest.mark.parametrize("engine", ["cp-sat", "reference"])
def test_compatibility_groups_mig_vgpu_pair_rejected(engine):
    two = "    - name: req-0\n      exactly: {deviceClassName: resource.example.com, count: 2}\n"
    out = allocate(CLASS + COMPAT + NODE + claim("a", two), engine=engine)
    # mig + vgpu share no group: the second device is the other MIG slice.
    assert devices(out) == [("req-0", "gpu-0-mig"), ("req-0", "gpu-0-mig-2")]
    pair = (
        '    - name: mig\n      exactly: {deviceClassName: resource.example.com, selectors: '
        '[{cel: {expression: \'device.attributes["dra.example.com"].mode == "mig"\'}}]}\n'
        '    - name: vgpu\n      exactly: {deviceClassName: resource.example.com, selectors: '
        '[{cel: {expression: \'device.attributes["dra.example.com"].mode == "vgpu"\'}}]}\n'
    )
    assert not allocate(CLASS + COMPAT + NODE + claim("a", pair), engine=engine).allocated
    # Across claims too.
    mig = pair.split("    - name: vgpu")[0]
    vgpu = "    - name: vgpu" + pair.split("    - name: vgpu")[1]
    assert not allocate(CLASS + COMPAT + NODE + claim("a", mig) + claim("b", vgpu), engine=engine).allocated


def test_compatibility_groups_gate_off_skips_grouped_pools():
    off = Features.from_gates({**ALL.gates, "DRADeviceCompatibilityGroups": False})
    assert not allocate(CLASS + COMPAT + NODE + claim("a", ONE), features=off).allocated


NIC = f"""---
{V1}
kind: ResourceSlice
metadata: {{name: resourceslice}}
spec:
  nodeName: worker-1
  pool: {{name: pool, generation: 1, resourceSliceCount: 1}}
  driver: dra.example.com
  devices:
  - name: eth1
    allowMultipleAllocations: true
    attributes:
      name: {{string: "eth1"}}
    capacity:
      bandwidth:
        requestPolicy:
          default: "1M"
          validRange: {{min: "1M", step: "8"}}
        value: "10G"
"""


def bw(amount):
    return (
        "    - name: req-0\n      exactly:\n        deviceClassName: resource.example.com\n"
        f"        capacity: {{requests: {{bandwidth: {amount}}}}}\n"
    )


def test_consumable_capacity_bandwidth_shared_with_step_rounding():
    out = allocate(CLASS + NIC + NODE + claim("a", bw("1G")) + claim("b", bw("1000001")))
    a = out.claims[0].status.allocation.devices.results[0]
    b = out.claims[1].status.allocation.devices.results[0]
    assert (a.device, b.device) == ("eth1", "eth1")
    assert Quantity.parse(a.consumed_capacity["bandwidth"]).value == Fraction(10**9)
    # 1000001 rounds up to min + 8*n: 1000008.
    assert Quantity.parse(b.consumed_capacity["bandwidth"]).value == 1000008
    assert a.share_id and b.share_id and a.share_id != b.share_id
    # Ten 1G shares fit in 10G, an eleventh does not.
    ten = "".join(claim(f"c{i}", bw("1G")) for i in range(10))
    assert allocate(CLASS + NIC + NODE + ten).allocated
    assert not allocate(CLASS + NIC + NODE + ten + claim("c10", bw("1G"))).allocated
    # Without a request the policy default (1M) is consumed.
    out = allocate(CLASS + NIC + NODE + claim("a", ONE))
    assert out.claims[0].status.allocation.devices.results[0].consumed_capacity == {"bandwidth": "1M"}


def test_consumable_capacity_gate_off_rejects_capacity_requests():
    off = Features.from_gates({"DRAConsumableCapacity": False})
    with pytest.raises(AllocationError, match="DRAConsumableCapacity feature is disabled"):
        allocate(CLASS + NIC + NODE + claim("a", bw("1G")), features=off)


CATS = f"""---
{V1}
kind: DeviceClass
metadata: {{name: resource.example.com}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "resource-driver.example.com"'}}
---
{V1}
kind: ResourceSlice
metadata: {{name: cat-slice}}
spec:
  driver: "resource-driver.example.com"
  pool: {{generation: 1, name: "black-cat-pool", resourceSliceCount: 1}}
  allNodes: true
  devices:
  - name: "large-black-cat"
    attributes:
      color: {{string: "black"}}
      size: {{string: "large"}}
  - name: "small-white-cat-1"
    attributes:
      color: {{string: "white"}}
      size: {{string: "small"}}
  - name: "small-white-cat-2"
    attributes:
      color: {{string: "white"}}
      size: {{string: "small"}}
"""
PRIORITIZED = """    - name: req-0
      firstAvailable:
      - name: large-black
        deviceClassName: resource.example.com
        selectors:
        - cel:
            expression: |-
              device.attributes["resource-driver.example.com"].color == "black" &&
              device.attributes["resource-driver.example.com"].size == "large"
      - name: small-white
        deviceClassName: resource.example.com
        selectors:
        - cel:
            expression: |-
              device.attributes["resource-driver.example.com"].color == "white" &&
              device.attributes["resource-driver.example.com"].size == "small"
        count: 2
"""


@pytest.mark.parametrize("engine", ["cp-sat", "reference"])
def test_prioritized_list_black_large_then_white_small(engine):
    out = allocate(CATS + NODE + claim("a", PRIORITIZED) + claim("b", PRIORITIZED), engine=engine)
    assert devices(out, 0) == [("req-0/large-black", "large-black-cat")]
    assert devices(out, 1) == [("req-0/small-white", "small-white-cat-1"), ("req-0/small-white", "small-white-cat-2")]
    # allNodes devices need no node pinning.
    assert out.claims[0].status.allocation.node_selector is None
    assert not allocate(CATS + NODE + "".join(claim(c, PRIORITIZED) for c in "abc"), engine=engine).allocated


def test_prioritized_list_gate_off_is_an_error():
    off = Features.from_gates({"DRAPrioritizedList": False})
    with pytest.raises(AllocationError, match="DRAPrioritizedList feature is disabled"):
        allocate(CATS + NODE + claim("a", PRIORITIZED), features=off)


NUMA = f"""---
{V1}
kind: DeviceClass
metadata: {{name: gpu.example.com}}
spec: {{selectors: [{{cel: {{expression: 'device.driver == "gpu.example.com"'}}}}]}}
---
{V1}
kind: DeviceClass
metadata: {{name: nic.example.com}}
spec: {{selectors: [{{cel: {{expression: 'device.driver == "nic.example.com"'}}}}]}}
---
{V1}
kind: ResourceSlice
metadata: {{name: gpus}}
spec:
  driver: gpu.example.com
  nodeName: worker-1
  pool: {{name: gpus, generation: 1, resourceSliceCount: 1}}
  devices:
  - {{name: gpu-0, attributes: {{numa: {{int: 0}}}}}}
  - {{name: gpu-1, attributes: {{numa: {{int: 1}}}}}}
---
{V1}
kind: ResourceSlice
metadata: {{name: nics}}
spec:
  driver: nic.example.com
  nodeName: worker-1
  pool: {{name: nics, generation: 1, resourceSliceCount: 1}}
  devices:
  - {{name: nic-0, attributes: {{numaNode: {{int: 1}}}}}}
"""
DERIVED = """    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        count: 1
        derivedAttributes:
        - name: derived/numa
          expression: device.attributes["gpu.example.com"].numa
    - name: nic
      exactly:
        deviceClassName: nic.example.com
        count: 1
        derivedAttributes:
        - name: derived/numa
          expression: device.attributes["nic.example.com"].numaNode
"""
DERIVED_CONSTRAINT = """    constraints:
    - requests: ["gpu", "nic"]
      matchAttribute: derived/numa
"""


@pytest.mark.parametrize("engine", ["cp-sat", "reference"])
def test_derived_attributes_align_gpu_and_nic_numa(engine):
    out = allocate(NUMA + NODE + claim("a", DERIVED, DERIVED_CONSTRAINT), engine=engine)
    assert devices(out) == [("gpu", "gpu-1"), ("nic", "nic-0")]


def test_derived_attributes_validation_and_runtime_errors():
    with pytest.raises(AllocationError, match="not used by any"):
        allocate(NUMA + NODE + claim("a", DERIVED))
    bad_name = DERIVED.replace(
        "name: derived/numa\n          expression: device.attributes[\"gpu",
        "name: Derived_numa\n          expression: device.attributes[\"gpu",
    )
    with pytest.raises(AllocationError, match="not a DNS subdomain"):
        allocate(NUMA + NODE + claim("a", bad_name, DERIVED_CONSTRAINT))
    missing = DERIVED.replace('["nic.example.com"].numaNode', '["nic.example.com"].numa')
    with pytest.raises(AllocationError, match="CEL runtime error"):
        allocate(NUMA + NODE + claim("a", missing, DERIVED_CONSTRAINT))
    # Gate off in the scheduler, the field stored (the API server had it on): every allocator
    # variant of 1.37 refuses the request (the allocator oracle's answer:
    # test_crosscheck_allocator.py::test_fixed_derived_attributes_gate_off).
    off = Features.from_gates({**ALL.gates, "DRADerivedAttributes": False})
    with pytest.raises(AllocationError, match="cannot handle request with derived attributes, the feature is disabled"):
        allocate(NUMA + NODE + claim("a", DERIVED, DERIVED_CONSTRAINT), features=off)


TAINTED = f"""---
{V1}
kind: ResourceSlice
metadata: {{name: tainted}}
spec:
  nodeName: worker-1
  pool: {{name: pool, generation: 1, resourceSliceCount: 1}}
  driver: dra.example.com
  devices:
  - name: dev-0
    taints: [{{key: example.com/unhealthy, value: "true", effect: NoSchedule}}]
  - name: dev-1
  - name: dev-2
    taints: [{{key: example.com/drain, effect: None}}]
"""
RULE = """---
apiVersion: resource.k8s.io/v1beta2
kind: DeviceTaintRule
metadata: {name: maintenance}
spec:
  deviceSelector: {driver: dra.example.com, pool: pool, device: dev-1}
  taint: {key: example.com/maintenance, value: upgrade, effect: NoExecute}
"""


@pytest.mark.parametrize("engine", ["cp-sat", "reference"])
def test_taints_and_tolerations(engine):
    out = allocate(CLASS + TAINTED + NODE + claim("a", ONE), engine=engine)
    assert devices(out) == [("req-0", "dev-1")]
    out = allocate(CLASS + TAINTED + RULE + NODE + claim("a", ONE), engine=engine)
    assert devices(out) == [("req-0", "dev-2")]  # None never blocks
    tolerate = (
        "    - name: req-0\n      exactly:\n        deviceClassName: resource.example.com\n"
        "        tolerations: [{key: example.com/unhealthy, operator: Exists, effect: NoSchedule}]\n"
    )
    out = allocate(CLASS + TAINTED + RULE + NODE + claim("a", tolerate), engine=engine)
    assert devices(out) == [("req-0", "dev-0")]
    assert out.claims[0].status.allocation.devices.results[0].tolerations[0].key == "example.com/unhealthy"
    wrong_value = tolerate.replace("operator: Exists", "operator: Equal, value: 'false'")
    assert devices(allocate(CLASS + TAINTED + NODE + claim("a", wrong_value), engine=engine)) == [("req-0", "dev-1")]
    off = Features.from_gates({**ALL.gates, "DRADeviceTaints": False})
    assert devices(allocate(CLASS + TAINTED + RULE + NODE + claim("a", ONE), features=off)) == [("req-0", "dev-0")]


def test_admin_access_uses_in_use_devices_and_does_not_mark_them():
    held = (
        claim("held", ONE).rstrip()
        + """
status:
  allocation:
    devices:
      results:
      - {request: req-0, driver: dra.example.com, pool: pool, device: dev-1}
"""
    )
    admin = "    - name: req-0\n      exactly: {deviceClassName: resource.example.com, adminAccess: true, count: 1}\n"
    slice_ = TAINTED.replace("taints: [{key: example.com/unhealthy, value: \"true\", effect: NoSchedule}]", "")
    out = allocate(CLASS + slice_ + NODE + held + claim("a", admin))
    assert devices(out) == [("req-0", "dev-0")]
    assert out.claims[0].status.allocation.devices.results[0].admin_access is True
    # An allocated admin claim does not make the device in use for others.
    admin_held = held.replace("device: dev-1}", "device: dev-0, adminAccess: true}")
    assert devices(allocate(CLASS + slice_ + NODE + admin_held + claim("b", ONE))) == [("req-0", "dev-0")]
    off = Features.from_gates({"DRAAdminAccess": False})
    with pytest.raises(AllocationError, match="admin access is requested, but the feature is disabled"):
        allocate(CLASS + slice_ + NODE + claim("a", admin), features=off)


BINDING = f"""---
{V1}
kind: ResourceSlice
metadata: {{name: a-fabric}}
spec:
  allNodes: true
  pool: {{name: a-fabric, generation: 1, resourceSliceCount: 1}}
  driver: dra.example.com
  devices:
  - name: attach-0
    bindsToNode: true
    bindingConditions: [dra.example.com/is-attached]
    bindingFailureConditions: [dra.example.com/attach-failed]
---
{V1}
kind: ResourceSlice
metadata: {{name: z-local}}
spec:
  nodeName: worker-1
  pool: {{name: z-local, generation: 1, resourceSliceCount: 1}}
  driver: dra.example.com
  devices:
  - name: local-0
"""


def test_binding_conditions_pools_last_and_copied():
    out = allocate(CLASS + BINDING + NODE + claim("a", ONE))
    assert devices(out) == [("req-0", "local-0")]  # the pool with binding conditions comes last
    out = allocate(CLASS + BINDING + NODE + claim("a", ONE) + claim("b", ONE))
    r = out.claims[1].status.allocation
    assert r.devices.results[0].device == "attach-0"
    assert r.devices.results[0].binding_conditions == ["dra.example.com/is-attached"]
    assert r.devices.results[0].binding_failure_conditions == ["dra.example.com/attach-failed"]
    assert r.node_selector.node_selector_terms[0].match_fields[0].values == ["worker-1"]  # bindsToNode
    off = Features.from_gates({"DRADeviceBindingConditions": False})
    assert not allocate(CLASS + BINDING + NODE + claim("a", ONE) + claim("b", ONE), features=off).allocated


def test_all_mode_with_incomplete_pool_is_an_error():
    incomplete = COUNTERS.replace("resourceSliceCount: 2", "resourceSliceCount: 3")
    all_ = "    - name: req-0\n      exactly: {deviceClassName: resource.example.com, allocationMode: All}\n"
    with pytest.raises(AllocationError, match="currently being updated"):
        allocate(CLASS + incomplete + NODE + claim("a", all_))
    out = allocate(CLASS + TAINTED.replace("effect: NoSchedule", "effect: None") + NODE + claim("a", all_))
    assert [d for _, d in devices(out)] == ["dev-0", "dev-1", "dev-2"]


def test_fields_the_release_lacks_are_noted():
    """1.36's API has neither derivedAttributes nor compatibilityGroups: its API server drops them,
    draopt reads the objects without them (Features.has_*), and says so; 1.37 has both fields (its
    gates decide, and the gate-off answers are the allocator's: test_crosscheck_allocator.py)."""
    from pathlib import Path

    from draopt.kube.field_notes import gated_field_notes
    from draopt.kube.loader import load_files

    realworld = Path(__file__).resolve().parents[2] / "shared" / "realworld" / "17-website-compatibility-groups.yaml"
    objs = load_text(NUMA + NODE + claim("a", DERIVED, DERIVED_CONSTRAINT))
    on_136 = Features.from_gates({}, "1.36")
    assert gated_field_notes(objs, on_136) == [
        "field ResourceClaim spec.devices.requests[].derivedAttributes dropped: Kubernetes 1.36 has no such "
        "field (ResourceClaim default/a)"
    ]
    assert not any("derivedAttributes" in n for n in gated_field_notes(objs, Features.from_gates({}, "1.37")))
    if realworld.exists():  # (../shared/realworld, the Kubernetes website's example)
        grouped = load_files([str(realworld)])
        assert any(
            n.startswith("field ResourceSlice spec.devices[].consumesCounters[].compatibilityGroups dropped: ")
            for n in gated_field_notes(grouped, on_136)
        )
