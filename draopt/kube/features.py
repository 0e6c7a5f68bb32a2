"""Feature gates, by their Kubernetes names."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from draopt.errors import InputError

# What Kubernetes 1.36 enables by default (beta and GA gates on, alpha gates off).
DEFAULT_GATES: dict[str, bool] = {
    "DRAPrioritizedList": True,
    "DRAAdminAccess": True,
    "DRAResourceClaimDeviceStatus": True,
    "DRAPartitionableDevices": True,
    "DRADeviceTaints": True,
    "DRADeviceTaintRules": True,
    "DRAConsumableCapacity": True,
    "DRADeviceBindingConditions": True,
    "DRAExtendedResource": True,
    "DRAListTypeAttributes": False,
    "DRADeviceCompatibilityGroups": False,
    "DRADerivedAttributes": False,
    "DRANodeAllocatableResources": False,
    "DRAWorkloadResourceClaims": False,
    # KEP-5732 (alpha in 1.36): PodGroup spec.schedulingConstraints.topology.
    "TopologyAwareWorkloadScheduling": False,
    # KEP-6012 (alpha in 1.37): CompositePodGroup objects, PodGroup spec.parentCompositePodGroupName.
    "CompositePodGroup": False,
    # KEP-5690 (not in 1.36/1.37): DynamicResources gets PreFilterExtensions, so preemption's dry run
    # sees the devices of a victim pod (not of a PodGroup) freed.
    "DRAPreemption": False,
}


@dataclass(frozen=True)
class Features:
    """The allocator-relevant switches, derived from gates."""

    prioritized_list: bool = True
    admin_access: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    device_taint_rules: bool = True
    consumable_capacity: bool = True
    device_binding_and_status: bool = True
    extended_resource: bool = True
    list_type_attributes: bool = False
    compatibility_groups: bool = False
    derived_attributes: bool = False
    node_allocatable_resources: bool = False
    workload_resource_claims: bool = False
    topology_aware_workload_scheduling: bool = False
    composite_pod_group: bool = False
    dra_preemption: bool = False
    gates: dict[str, bool] = field(default_factory=lambda: dict(DEFAULT_GATES), compare=False, hash=False)

    @classmethod
    def from_gates(cls, gates: dict[str, bool] | None = None) -> "Features":
        g = dict(DEFAULT_GATES)
        g.update(gates or {})
        return cls(
            prioritized_list=g["DRAPrioritizedList"],
            admin_access=g["DRAAdminAccess"],
            partitionable_devices=g["DRAPartitionableDevices"],
            device_taints=g["DRADeviceTaints"],
            device_taint_rules=g["DRADeviceTaints"] and g["DRADeviceTaintRules"],
            consumable_capacity=g["DRAConsumableCapacity"],
            # The allocator's DeviceBindingAndStatus needs both gates.
            device_binding_and_status=g["DRADeviceBindingConditions"] and g["DRAResourceClaimDeviceStatus"],
            extended_resource=g["DRAExtendedResource"],
            list_type_attributes=g["DRAListTypeAttributes"],
            compatibility_groups=g["DRADeviceCompatibilityGroups"],
            derived_attributes=g["DRADerivedAttributes"],
            node_allocatable_resources=g["DRANodeAllocatableResources"],
            workload_resource_claims=g["DRAWorkloadResourceClaims"],
            topology_aware_workload_scheduling=g["TopologyAwareWorkloadScheduling"],
            composite_pod_group=g["CompositePodGroup"],
            dra_preemption=g["DRAPreemption"],
            gates=g,
        )

    @classmethod
    def all_enabled(cls) -> "Features":
        return cls.from_gates({g: True for g in DEFAULT_GATES})


def parse_gates(text: str) -> dict[str, bool]:
    """Parse `G=true,H=false` as kube-scheduler's --feature-gates does."""
    gates: dict[str, bool] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false"):
            raise InputError(f"--feature-gates: {part!r} is not NAME=true|false")
        if name not in DEFAULT_GATES:
            raise InputError(
                f"--feature-gates: unknown feature gate {name!r} (known: {', '.join(sorted(DEFAULT_GATES))})"
            )
        gates[name] = value == "true"
    return gates


__all__ = ["DEFAULT_GATES", "Features", "parse_gates", "fields"]
