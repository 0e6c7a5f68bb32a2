"""DeviceTaintRules apply only with DRADeviceTaintRules on (and DRADeviceTaints): with the rules'
gate off, kube-scheduler's ResourceSlice tracker hands the slices over unpatched. Found by the
allocator crosscheck (tests/test_crosscheck_allocator.py, generated scenario 1543 on 1.36)."""

from __future__ import annotations

from draopt.allocation.allocate import allocate
from draopt.kube.features import Features
from draopt.kube.loader import load_text

INPUT = """
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices: [{name: d0}, {name: d1}]
---
apiVersion: resource.k8s.io/v1beta2
kind: DeviceTaintRule
metadata: {name: rule}
spec:
  deviceSelector: {driver: gpu.example.com, pool: p, device: d0}
  taint: {key: bad, value: "true", effect: NoSchedule}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: default}
spec:
  devices:
    requests: [{name: r, exactly: {deviceClassName: gpu}}]
"""


def _device(rules_gate: bool) -> str:
    features = Features.from_gates({"DRADeviceTaints": True, "DRADeviceTaintRules": rules_gate})
    out = allocate(load_text(INPUT, "<test>"), node="node-1", features=features)
    assert out.results is not None
    return out.results[0].devices.results[0].device


def test_rule_taints_the_device_with_its_gate_on():
    assert _device(True) == "d1"


def test_rule_is_ignored_with_its_gate_off():
    assert _device(False) == "d0"
