"""Node-allocatable resources of DRA devices (KEP-5517, DRANodeAllocatableResources): what an
allocated device adds to its pod's cpu / memory / hugepages demand, and a pod's footprint when it
states pod-level resources."""

from __future__ import annotations

from fractions import Fraction

from draopt.errors import InputError
from draopt.kube.models import Device
from draopt.kube.models.workload import NodeAllocatableResources
from draopt.kube.pod_requests import _POD_LEVEL, effective_container_requests, pod_requests, q
from draopt.kube.workload_types import PodDemand


def node_allocatable_demand(
    device: Device,
    pod: PodDemand | None,
    n_containers: int,
    consumed_capacity: dict[str, Fraction] | None = None,
    *,
    mapping: bool = True,
    overhead: bool = True,
) -> dict[str, Fraction]:
    """Node-allocatable resources (cpu, memory, hugepages-*) one allocated `device` adds to a
    pod's demand (DRANodeAllocatableResources):

    * ``mapping`` (the device *is* the resource): ``consumedCapacity[capacityKey] x
      capacityMultiplier`` (multiplier default 1; without `consumed_capacity` the device's whole
      capacity, as an exclusive allocation consumes), or ``deviceMultiplier`` for the one
      device (neither set: 1 per device). Kubernetes counts it once per claim; mapped claims
      cannot be shared between pods.
    * ``overhead`` (auxiliary host resources): ``perPod + perContainer x n_containers``, for
      every pod that references the claim; `n_containers` = containers of the pod referencing
      the claim (see :func:`containers_referencing`).

    `mapping=False` / `overhead=False` leave a part out (e.g. a mapped claim already counted).
    """
    raw = device.node_allocatable_resources
    if not raw:
        return {}
    where = f"device {device.name}" + (f" (for Pod {pod.key})" if pod is not None else "")
    try:
        nar = NodeAllocatableResources.model_validate(raw)
    except ValueError as e:
        raise InputError(f"{where}: field nodeAllocatableResources: {e}") from None
    out: dict[str, Fraction] = {}
    for resource, spec in nar.resources.items():
        amount = Fraction(0)
        if mapping and spec.mapping is not None:
            m = spec.mapping
            if m.capacity_key:
                if consumed_capacity is not None and m.capacity_key in consumed_capacity:
                    base = Fraction(consumed_capacity[m.capacity_key])
                elif m.capacity_key in device.capacity:
                    base = q(device.capacity[m.capacity_key].value)
                else:
                    raise InputError(
                        f"{where}: field nodeAllocatableResources.{resource}.mapping.capacityKey: "
                        f"the device has no capacity {m.capacity_key!r}"
                    )
                amount += base * (q(m.capacity_multiplier) if m.capacity_multiplier is not None else 1)
            else:
                amount += q(m.device_multiplier) if m.device_multiplier is not None else Fraction(1)
        if overhead and spec.overhead is not None:
            o = spec.overhead
            if o.per_pod is not None:
                amount += q(o.per_pod)
            if o.per_container is not None:
                amount += q(o.per_container) * n_containers
        if amount:
            out[resource] = out.get(resource, Fraction(0)) + amount
    return out


def pod_level_footprint(pod: PodDemand, devices: dict[str, Fraction]) -> tuple[dict[str, Fraction], str | None]:
    """What the node-allocatable resources of a pod's devices (`devices`) add to its pod-level
    requests (kube-scheduler's DynamicResources, getPodNodeAllocatableResourceFootprint and
    validatePodLevelResourcesCoverDRA, 1.36): pod-level requests are the pod's whole footprint,
    so a resource they set gets nothing on top; but they must cover the containers' requests
    plus the devices' amounts, else the pod is unschedulable (and unresolvable) wherever those
    devices are. Returns (the amounts to add, None) or ({}, the scheduler's reason)."""
    level = effective_container_requests(pod.pod.spec.resources)
    covered = [r for r in _POD_LEVEL if r in level]
    if not covered or not devices:
        return devices, None
    containers = pod_requests(pod.pod, pod_level=False)
    for r in covered:
        if r in devices and containers.get(r, Fraction(0)) + devices[r] > q(level[r]):
            return {}, (
                f"pod level request for {r} is insufficient to cover the aggregated container "
                f"and node-allocatable DRA requests"
            )
    return {k: v for k, v in devices.items() if k not in covered}, None


def has_mapping(device: Device) -> bool:
    """The device itself is a node resource (a ``mapping`` in its nodeAllocatableResources): a
    claim allocating it cannot be shared by several pods (validateNodeAllocatableDRAClaimSharing);
    overhead alone can."""
    raw = device.node_allocatable_resources
    if not raw:
        return False
    try:
        nar = NodeAllocatableResources.model_validate(raw)
    except ValueError as e:
        raise InputError(f"device {device.name}: field nodeAllocatableResources: {e}") from None
    return any(spec.mapping is not None for spec in nar.resources.values())
