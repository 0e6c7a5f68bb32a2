"""Feature gates, by their Kubernetes names."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cached_property

from draopt.errors import InputError
from draopt.kube.releases import (
    ALL_MODE_STATIC_CAPACITY,
    COUNTER_LEAK_FIXED,
    NODE_ALLOCATABLE_137,
    DEFAULT_VERSION,
    DISTINCT_ALL_DEVICES,
    KNOWN_GATES,
    RELEASES,
    check_gates,
    at_least,
    parse_kubernetes_version,
)

# What the default release (Kubernetes 1.37, draopt.kube.releases.DEFAULT_VERSION) enables by
# default: beta and GA gates on (except DRAWorkloadResourceClaims, beta and off), alpha gates off.
# KEP-5732 TopologyAwareWorkloadScheduling (alpha in 1.36 and 1.37): PodGroup
# spec.schedulingConstraints.topology; KEP-6012 CompositePodGroup (alpha in 1.37): CompositePodGroup
# objects, PodGroup spec.parentCompositePodGroupName. Per release: RELEASES.
DEFAULT_GATES: dict[str, bool] = RELEASES[DEFAULT_VERSION].defaults()


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
    dra_preemption: bool = False  # KEP-5690, gate DRAPreemption (planned for 1.38)
    # The Kubernetes release whose defaults (and, when asked for by name, locks) these came from.
    kubernetes_version: str = DEFAULT_VERSION
    gates: dict[str, bool] = field(default_factory=lambda: dict(DEFAULT_GATES), compare=False, hash=False)

    def __post_init__(self) -> None:
        # The release's flags below worked out with the switches (they depend on the release
        # alone): not in the first search that reads them (cached_property's first computation
        # takes a lock on Python 3.11). A release draopt does not know raises when one is read.
        try:
            for name in _RELEASE_FLAGS:
                getattr(self, name)
        except InputError:
            pass

    @property
    def version(self) -> str:
        return self.kubernetes_version

    # The allocator defects that depend on the release (draopt.kube.releases, where each
    # changed); first-fit reproduces the release's behaviour. (Cached: every search reads them.)
    @cached_property
    def counter_leak(self) -> bool:
        """DEFECT counter-leak: 1.35 (1.36.3 and 1.37 roll a refused device back)."""
        return not at_least(self.kubernetes_version, COUNTER_LEAK_FIXED)

    @cached_property
    def distinct_last_only(self) -> bool:
        """DEFECT distinct-last-only: up to 1.36 (1.37 compares every device's value)."""
        return not at_least(self.kubernetes_version, DISTINCT_ALL_DEVICES)

    @cached_property
    def all_mode_static_capacity(self) -> bool:
        """From 1.37 allocationMode All picks devices by static capacity (in-use shares stay in)."""
        return at_least(self.kubernetes_version, ALL_MODE_STATIC_CAPACITY)

    @cached_property
    def node_allocatable_136(self) -> bool:
        """Up to 1.36 node-allocatable resources count for the claims allocated in the pod's cycle
        only, mappings only, and a claim no container lists rejects the node (releases.py)."""
        return not at_least(self.kubernetes_version, NODE_ALLOCATABLE_137)

    @cached_property
    def has_derived_attributes(self) -> bool:
        """The release has derivedAttributes (KEP-6080, DRADerivedAttributes from 1.37); older API
        servers drop the field."""
        return "DRADerivedAttributes" in self._release_gates

    @cached_property
    def has_compatibility_groups(self) -> bool:
        """The release has compatibilityGroups (KEP-5963, DRADeviceCompatibilityGroups from 1.37);
        older API servers drop the field, so a device's groups there are none."""
        return "DRADeviceCompatibilityGroups" in self._release_gates

    @property
    def _release_gates(self):
        """The gates the release knows (a field it has is a gate there)."""
        return RELEASES[parse_kubernetes_version(self.kubernetes_version)].gates

    @classmethod
    def from_gates(cls, gates: dict[str, bool] | None = None, version: str | None = None) -> "Features":
        """The release's defaults with `gates` on top. With `version` given ("1.36", "v1.37.2"),
        a gate unknown in that release or locked there to the other value is an InputError, as
        kube-scheduler refuses it; without it, the default release's defaults and any known gate
        (the allocator library's feature set, e.g. DRAPrioritizedList=false for the conformance
        scenarios)."""
        release = RELEASES[parse_kubernetes_version(version)]
        if version is not None:
            check_gates(gates or {}, release.version)
        g = {name: False for name in KNOWN_GATES}
        g.update(release.defaults())
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
            kubernetes_version=release.version,
            gates={name: value for name, value in g.items() if name in release.gates or name in (gates or {})},
        )

    @classmethod
    def all_enabled(cls, version: str | None = None) -> "Features":
        """Every gate of the release on (the default release: every gate it knows)."""
        release = RELEASES[parse_kubernetes_version(version)]
        return cls.from_gates({g: True for g in release.gates}, version)


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
        if name not in KNOWN_GATES:
            raise InputError(
                f"--feature-gates: unknown feature gate {name!r} (known: {', '.join(sorted(KNOWN_GATES))})"
            )
        gates[name] = value == "true"
    return gates


def features_from_flags(gates_text: str | None, version_text: str | None) -> Features:
    """`--feature-gates` and `--kubernetes-version` as the commands read them (None: not given)."""
    version = parse_kubernetes_version(version_text) if version_text else None
    return Features.from_gates(parse_gates(gates_text or ""), version)


def add_version_flag(parser) -> None:
    """`--kubernetes-version`, next to a command's `--feature-gates`."""
    parser.add_argument(
        "--kubernetes-version",
        default=None,
        metavar="1.35|1.36|1.37|1.38",
        help=f"the release whose default feature gates apply (default {DEFAULT_VERSION}); named, "
        "--feature-gates may not set a gate that release locks or does not have",
    )


__all__ = [
    "DEFAULT_GATES",
    "DEFAULT_VERSION",
    "KNOWN_GATES",
    "Features",
    "add_version_flag",
    "features_from_flags",
    "parse_gates",
    "parse_kubernetes_version",
    "fields",
]


# Features' flags that depend on the release alone (worked out when a Features is made)
_RELEASE_FLAGS = (
    "counter_leak",
    "distinct_last_only",
    "all_mode_static_capacity",
    "node_allocatable_136",
    "has_derived_attributes",
    "has_compatibility_groups",
)
