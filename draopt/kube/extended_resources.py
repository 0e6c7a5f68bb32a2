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
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from draopt.errors import InputError
from draopt.kube.models import DeviceClass, Node
from draopt.kube.quantity import Quantity

if TYPE_CHECKING:
    from draopt.kube.workload_types import PodDemand

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


def _request(ci: int, ridx: int, class_name: str, count: int) -> dict[str, Any]:
    return {
        "name": f"container-{ci}-request-{ridx}",
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count},
    }


def claim_requests(
    containers: list[tuple[dict[str, int], bool]], mapping: Mapping[str, str], names: list[str]
) -> list[dict[str, Any]]:
    """The extended-resource claim's device requests for the resources `names`, as
    kube-scheduler's createRequestsAndMappings makes them (extendeddynamicresources.go).
    `containers`: per container of `initContainers + containers`, its whole-number requests of
    such resources (among every request name it has: see `ridx`) and whether it runs for the pod's
    whole life (a regular container or a sidecar). A long-lived container gets a request of its
    own; an init container that is not a sidecar first reuses the requests of the long-lived
    containers from its own index on and asks for the rest only, and of those rests only the
    largest is kept (the init containers run one after the other). Requests are named
    ``container-<i>-request-<j>`` (``j``: the resource's index among the container's request
    names, sorted) and sorted by name."""
    out: list[dict[str, Any]] = []
    for name in sorted(names):
        class_name = mapping[name]
        long_lived: list[dict[str, Any] | None] = [None] * len(containers)
        for ci, (reqs, whole_life) in enumerate(containers):
            if whole_life and reqs.get(name):
                long_lived[ci] = _request(ci, sorted(reqs).index(name), class_name, reqs[name])
        largest: dict[str, Any] | None = None
        for ci, (reqs, whole_life) in enumerate(containers):
            if whole_life or not reqs.get(name):
                continue
            reused = sum(r["exactly"]["count"] for r in long_lived[ci:] if r is not None)
            if reused >= reqs[name]:
                continue
            own = _request(ci, sorted(reqs).index(name), class_name, reqs[name] - reused)
            if largest is None or largest["exactly"]["count"] < own["exactly"]["count"]:
                largest = own
        if largest is not None:
            out.append(largest)
        out.extend(r for r in long_lived if r is not None)
    out.sort(key=lambda r: r["name"])
    return out


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
    views = demand.node_views
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


def prebind_failure_notes(pending: list[PodDemand], nodes: list[Node]) -> list[str]:
    """prebind_failure_note for every pending pod that uses extended resources."""
    if not any(d.extended_resources for d in pending):
        return []
    allocatables = [(n.name, _allocatable(n)) for n in sorted(nodes, key=lambda n: n.name)]
    notes = (prebind_failure_note(d, allocatables) for d in pending if d.extended_resources)
    return [n for n in notes if n is not None]


def _allocatable(node: Node) -> dict[str, Fraction]:
    """status.allocatable, or status.capacity where allocatable is not given (the API server's
    default), as draopt.cluster.state reads a node."""
    given = "allocatable" in node.status.model_fields_set
    return {
        k: Quantity.parse(v).value
        for k, v in ((node.status.allocatable if given else node.status.capacity) or {}).items()
    }


def prebind_failure_note(demand: PodDemand, nodes: Sequence[tuple[str, Mapping[str, Fraction]]]) -> str | None:
    """What draopt does not model of a pending pod with claims of its own whose extended resources
    a node's device plugin serves entirely (`nodes`: name, allocatable): kube-scheduler 1.36/1.37
    passes the node in Filter, allocates an extended-resource claim without requests there and
    fails PreBind (patchPodExtendedResourceClaimStatus: no request mappings), so the pod is never
    bound there; draopt places it as the filters allow. None when that cannot happen."""
    if not demand.extended_resources or demand.node_name:
        return None
    use = next((u for u in demand.claims if u.name == EXTENDED_CLAIM_USE), None)
    if use is None or not use.generated or all(u is use for u in demand.claims):
        return None
    for name, allocatable in nodes:
        if len(device_plugin_served(demand, allocatable)) == len(demand.extended_resources):
            return (
                f"Pod {demand.key}: with ResourceClaims of its own, its extended resources served by node "
                f"{name}'s device plugin: kube-scheduler fails PreBind there (no request mappings for the "
                f"extended-resource claim) and never binds it; draopt places it as the filters allow"
            )
    return None
