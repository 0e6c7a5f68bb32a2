"""Extended resources backed by DRA (DRAExtendedResource): which resource names a DeviceClass
serves, and how kube-scheduler serves a pod's request for one on a given node.

The expansion (draopt.kube.workload) moves a pod's requests for such names out of its node
resources into one extended-resource claim (PodDemand.extended_resources). That is what a node
without the resource in ``status.allocatable`` does. A node whose allocatable lists the resource
(> 0) serves it through its device plugin instead: NodeResourcesFit counts the request against
the node's allocatable and the claim asks nothing for it there
(k8s.io/kubernetes pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go,
filterExtendedResources; pkg/scheduler/framework/plugins/noderesources/fit.go,
shouldDelegateResourceToDRA). :func:`on_node` is that choice, node by node, for every placement
policy and the checker.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from fractions import Fraction
from typing import TYPE_CHECKING, Mapping

from draopt.errors import InputError
from draopt.kube.models import DeviceClass

if TYPE_CHECKING:
    from draopt.kube.workload import PodDemand

DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
# kube-scheduler's in-memory name of the extended-resource claim; never a valid pod claim name.
EXTENDED_CLAIM_USE = "<extended-resources>"


def is_extended_name(name: str) -> bool:
    """IsExtendedResourceName or the deviceclass prefix: domain-qualified, not kubernetes.io."""
    if name.startswith(DEVICE_CLASS_PREFIX):
        return True
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def creation_time(obj) -> datetime | None:
    """metadata.creationTimestamp as an aware datetime (None when not set)."""
    raw = obj.metadata.creation_timestamp
    if not raw:
        return None
    try:
        d = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{obj.ref}: field metadata.creationTimestamp: {raw!r} is not an RFC 3339 time") from None
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def _prefer(a: DeviceClass, b: DeviceClass) -> bool:
    ta, tb = creation_time(a), creation_time(b)
    ta_n = ta.timestamp() if ta else 0.0
    tb_n = tb.timestamp() if tb else 0.0
    if ta_n == tb_n:
        return a.name < b.name
    return ta_n > tb_n


def device_class_mapping(classes: list[DeviceClass]) -> dict[str, str]:
    """Extended resource name -> DeviceClass name, as kube-scheduler's DeviceClassMapping:
    `deviceclass.resource.kubernetes.io/<class>` for every class; a class's extendedResourceName
    too, the newest class (creationTimestamp) winning, then the smallest name."""
    mapping: dict[str, str] = {}
    chosen: dict[str, DeviceClass] = {}
    for c in classes:
        mapping[DEVICE_CLASS_PREFIX + c.name] = c.name
    for c in classes:
        name = c.spec.extended_resource_name
        if not name:
            continue
        prev = chosen.get(name)
        if prev is None or _prefer(c, prev):
            chosen[name] = c
    for name, c in chosen.items():
        mapping[name] = c.name
    return mapping


def device_plugin_served(demand: PodDemand, allocatable: Mapping[str, Fraction]) -> tuple[str, ...]:
    """The pod's DRA-backed extended resources that a node with this allocatable serves through
    its device plugin (allocatable > 0), sorted."""
    return tuple(sorted(r for r in demand.extended_resources if allocatable.get(r, 0) > 0))


def on_node(demand: PodDemand, allocatable: Mapping[str, Fraction]) -> PodDemand:
    """The pod as a node with this allocatable sees it: `demand` itself where DRA serves all of
    its extended resources; else a copy (kept per set of served names, the same object each
    time) whose node resources include the requests the device plugin serves and whose claims
    leave out the extended-resource claim.

    A claim the input already has (from a prior cycle) is kept as it is: kube-scheduler does not
    re-plan it. A pod whose extended resources a node would serve partly by device plugin and
    partly by DRA (one claim with some of the requests) is not modelled: an error."""
    if not demand.extended_resources:
        return demand
    served = device_plugin_served(demand, allocatable)
    if not served:
        return demand
    views = demand.__dict__.setdefault("_node_views", {})
    got = views.get(served)
    if got is not None:
        return got
    use = next((u for u in demand.claims if u.name == EXTENDED_CLAIM_USE), None)
    if use is None or not use.generated:
        views[served] = demand
        return demand
    if len(served) < len(demand.extended_resources):
        dra = sorted(set(demand.extended_resources) - set(served))
        raise InputError(
            f"Pod {demand.key}: field spec.containers: extended resources {', '.join(served)} from a device "
            f"plugin and {', '.join(dra)} from DRA on one node: draopt does not model one pod served by both"
        )
    resources = dict(demand.resources)
    for name in served:
        resources[name] = resources.get(name, 0) + demand.extended_resources[name]
    got = views[served] = dataclasses.replace(
        demand,
        resources=resources,
        claims=[u for u in demand.claims if u is not use],
        extended_resources={},
    )
    return got
