"""The Kubernetes releases draopt knows: each one's feature gates (default, stage, locked) for the
gates draopt models, and the API versions it serves for the kinds draopt reads.

Sources (facts only; see docs/versions.md for the table and what else changes by release):
k8s.io/kubernetes pkg/features/kube_features.go at v1.35.0, v1.36.3, v1.37.2 and v1.38.0-beta.0
(1.38 is not released: its column is planned and cross-checked with the KEPs' kep.yaml);
pkg/registry/{resource,scheduling}/rest/storage_*.go at the same tags for the served versions.
A gate a release does not list does not exist there.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from draopt.errors import InputError

Stage = Literal["alpha", "beta", "ga"]


@dataclass(frozen=True)
class GateDefault:
    """One gate in one release: its default, its stage, and whether it is locked to the default."""

    default: bool
    stage: Stage
    locked: bool = False


@dataclass(frozen=True)
class Release:
    """One Kubernetes minor release as draopt models it."""

    version: str
    gates: dict[str, GateDefault]
    # Where the facts come from; `released` False: a planned release (its values may still change).
    source: str
    released: bool = True
    # kind -> apiVersions the API server of that release serves (alpha/beta ones need runtime-config).
    served: dict[str, tuple[str, ...]] | None = None

    def defaults(self) -> dict[str, bool]:
        return {name: g.default for name, g in self.gates.items()}


def _alpha() -> GateDefault:
    return GateDefault(False, "alpha")


def _beta(default: bool = True) -> GateDefault:
    return GateDefault(default, "beta")


def _ga(locked: bool) -> GateDefault:
    return GateDefault(True, "ga", locked)


_RES = "resource.k8s.io/"
_SCHED = "scheduling.k8s.io/"
_DRA_CORE = (_RES + "v1", _RES + "v1beta2", _RES + "v1beta1")


def _served(
    taint_rules: tuple[str, ...], workload: tuple[str, ...], pod_group: tuple[str, ...], composite: tuple[str, ...] = ()
) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {
        k: _DRA_CORE for k in ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")
    }
    out["DeviceTaintRule"] = tuple(_RES + v for v in taint_rules)
    out["Workload"] = tuple(_SCHED + v for v in workload)
    out["PodGroup"] = tuple(_SCHED + v for v in pod_group)
    out["CompositePodGroup"] = tuple(_SCHED + v for v in composite)
    return out


RELEASES: dict[str, Release] = {
    "1.35": Release(
        "1.35",
        {
            "DRAPrioritizedList": _beta(),
            "DRAAdminAccess": _beta(),
            "DRAResourceClaimDeviceStatus": _beta(),
            "DRAPartitionableDevices": _alpha(),
            "DRADeviceTaints": _alpha(),
            "DRADeviceTaintRules": _alpha(),
            "DRAConsumableCapacity": _alpha(),
            "DRADeviceBindingConditions": _alpha(),
            "DRAExtendedResource": _alpha(),
        },
        "kube_features.go at v1.35.0",
        served=_served(("v1alpha3",), ("v1alpha1",), ()),
    ),
    "1.36": Release(
        "1.36",
        {
            "DRAPrioritizedList": _ga(locked=False),
            "DRAAdminAccess": _ga(locked=True),
            "DRAResourceClaimDeviceStatus": _beta(),
            "DRAPartitionableDevices": _beta(),
            "DRADeviceTaints": _beta(),
            # beta, off: "depends on an off-by-default beta API" (resource.k8s.io/v1beta2 DeviceTaintRule)
            "DRADeviceTaintRules": _beta(False),
            "DRAConsumableCapacity": _beta(),
            "DRADeviceBindingConditions": _beta(),
            "DRAExtendedResource": _beta(),
            "DRAListTypeAttributes": _alpha(),
            "DRANodeAllocatableResources": _alpha(),
            "DRAWorkloadResourceClaims": _alpha(),
            "TopologyAwareWorkloadScheduling": _alpha(),
        },
        "kube_features.go at v1.36.3",
        served=_served(("v1beta2", "v1alpha3"), ("v1alpha2",), ("v1alpha2",)),
    ),
    "1.37": Release(
        "1.37",
        {
            "DRAPrioritizedList": _ga(locked=True),
            "DRAAdminAccess": _ga(locked=True),
            "DRAResourceClaimDeviceStatus": _ga(locked=True),
            "DRAPartitionableDevices": _beta(),
            "DRADeviceTaints": _ga(locked=False),  # LockToDefault in 1.38
            "DRADeviceTaintRules": _ga(locked=False),  # LockToDefault in 1.38
            "DRAConsumableCapacity": _beta(),
            "DRADeviceBindingConditions": _beta(),
            "DRAExtendedResource": _ga(locked=True),
            "DRAListTypeAttributes": _alpha(),
            "DRADeviceCompatibilityGroups": _alpha(),
            "DRADerivedAttributes": _alpha(),
            "DRANodeAllocatableResources": _alpha(),
            "DRAWorkloadResourceClaims": _beta(False),
            "TopologyAwareWorkloadScheduling": _alpha(),
            "CompositePodGroup": _alpha(),
        },
        "kube_features.go at v1.37.2",
        served=_served(("v1", "v1beta2", "v1alpha3"), ("v1beta1", "v1alpha3"), ("v1beta1", "v1alpha3"), ("v1alpha3",)),
    ),
    "1.38": Release(
        "1.38",
        {
            "DRAPrioritizedList": _ga(locked=True),
            "DRAAdminAccess": _ga(locked=True),
            "DRAResourceClaimDeviceStatus": _ga(locked=True),
            "DRAPartitionableDevices": _ga(locked=True),
            "DRADeviceTaints": _ga(locked=True),
            "DRADeviceTaintRules": _ga(locked=True),
            "DRAConsumableCapacity": _ga(locked=False),
            "DRADeviceBindingConditions": _ga(locked=True),
            "DRAExtendedResource": _ga(locked=True),
            "DRAListTypeAttributes": _alpha(),
            "DRADeviceCompatibilityGroups": _alpha(),  # kep.yaml: beta in v1.38; alpha at v1.38.0-beta.0
            "DRADerivedAttributes": _alpha(),  # kep.yaml: beta in v1.38; alpha at v1.38.0-beta.0
            "DRANodeAllocatableResources": _alpha(),  # kep.yaml: beta in v1.38; alpha at v1.38.0-beta.0
            "DRAWorkloadResourceClaims": _beta(False),
            "TopologyAwareWorkloadScheduling": _beta(False),
            "CompositePodGroup": _beta(False),
            # KEP-5690 (DRA preemption): kep.yaml beta in v1.38, "disabled by default"; not in
            # v1.38.0-beta.0's kube_features.go.
            "DRAPreemption": _beta(False),
        },
        "kube_features.go at v1.38.0-beta.0; KEP kep.yaml milestones (planned)",
        released=False,
        served=_served(
            ("v1", "v1beta2", "v1alpha3"), ("v1beta1", "v1alpha3"), ("v1beta1", "v1alpha3"), ("v1beta1", "v1alpha3")
        ),
    ),
}


def not_served(kind: str, api_version: str, version: str) -> str | None:
    """Why the API server of Kubernetes `version` refuses `kind` in `api_version` (it serves no
    such version); None when it serves it, or when draopt has no list for the kind."""
    served = (RELEASES[version].served or {}).get(kind)
    if served is None or api_version in served:
        return None
    if not served:
        return f"Kubernetes {version} has no {kind} API"
    return f"Kubernetes {version} serves {kind} as {', '.join(served)}, not {api_version}"


# The newest released minor draopt pins.
DEFAULT_VERSION = "1.37"

# Every gate some release knows, in first-appearance order.
KNOWN_GATES: tuple[str, ...] = tuple(dict.fromkeys(g for r in RELEASES.values() for g in r.gates))


def supported_versions() -> str:
    return ", ".join(v + ("" if r.released else " (planned)") for v, r in RELEASES.items())


def parse_kubernetes_version(text: str | None) -> str:
    """ "1.37", "v1.37" or "1.37.2" (the patch is ignored) -> "1.37"; None or "" -> the default."""
    if text is None or not str(text).strip():
        return DEFAULT_VERSION
    raw = str(text).strip()
    parts = raw.removeprefix("v").split(".")
    if 2 <= len(parts) <= 3 and all(p.isdigit() for p in parts):
        minor = f"{int(parts[0])}.{int(parts[1])}"
        if minor in RELEASES:
            return minor
    raise InputError(f"--kubernetes-version: {raw!r} is not supported (supported: {supported_versions()})")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


@functools.lru_cache(maxsize=256)
def at_least(version: str, other: str) -> bool:
    """Whether release `version` ("1.37") is `other` or later. (Cached: the allocator asks for
    every node a pod is filtered on, and the answers are a handful.)"""
    return _key(version) >= _key(other)


# Allocator behaviour that changed between the releases draopt targets (facts from
# k8s.io/dynamic-resource-allocation structured/internal/{incubating,experimental} at v0.35.0,
# v0.36.3 and v0.37.2; docs/semantics.md "Kubernetes' defects", docs/differences.md "Fixed"):
#   counter-leak: 1.35.0 (and 1.36.0-1.36.2) keep a device's counters (and, for a capacity
#     failure, its constraint values and in-use mark) when a check after the counter
#     reservation refuses it, and never give back a shared device's counters; 1.36.3 and 1.37
#     roll every such change back.
#   distinct-last-only: up to 1.36 distinctAttribute keeps one value per request name; from
#     1.37 every device's value.
#   all-mode-static-capacity: from 1.37 allocationMode All selects matching devices by their
#     static capacity, so a shared device whose capacity is in use stays among "all" and the
#     request fails; up to 1.36 such a device is left out.
#   node-allocatable-1.37: DynamicResources' node-allocatable resources (DRANodeAllocatableResources;
#     k8s.io/kubernetes pkg/scheduler/framework/plugins/dynamicresources) up to 1.36 count only the
#     claims allocated in the pod's own cycle, device mappings only (no overhead), and reject a
#     node (unresolvable) when no container lists such a claim; from 1.37 every allocated claim of
#     the pod counts, with overhead, and a claim no container lists is allowed.
COUNTER_LEAK_FIXED = "1.36"
NODE_ALLOCATABLE_137 = "1.37"
DISTINCT_ALL_DEVICES = "1.37"
ALL_MODE_STATIC_CAPACITY = "1.37"


def first_release_with(gate: str) -> str | None:
    return next((v for v, r in RELEASES.items() if gate in r.gates), None)


def check_gates(gates: dict[str, bool], version: str) -> None:
    """Refuse what kube-scheduler / kube-apiserver of `version` refuse: a gate that does not exist
    in that release, and a gate locked to its default set to the other value."""
    release = RELEASES[version]
    for name, value in gates.items():
        spec = release.gates.get(name)
        if spec is None:
            since = first_release_with(name)
            when = f" (it arrives in {since})" if since and _key(since) > _key(version) else ""
            raise InputError(f"--feature-gates: unknown feature gate {name!r} in Kubernetes {version}{when}")
        if spec.locked and value != spec.default:
            raise InputError(
                f"--feature-gates: cannot set feature gate {name} to {str(value).lower()}, feature is "
                f"locked to {str(spec.default).lower()} in Kubernetes {version}"
            )


__all__ = [
    "DEFAULT_VERSION",
    "KNOWN_GATES",
    "RELEASES",
    "GateDefault",
    "Release",
    "at_least",
    "check_gates",
    "parse_kubernetes_version",
    "supported_versions",
]
