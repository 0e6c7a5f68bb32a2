"""A Filter plugin's Error status: the one reason that ends a pod's scheduling attempt.

kube-scheduler's DynamicResources Filter (dynamicresources.go, v1.36.3 and v1.37.2) returns an
Error status, not Unschedulable, when the allocator fails with anything but "no allocation on
this node": a CEL runtime error in a selector, a constraint an All request breaks, a search past
its time limit. findNodesThatPassFilters (schedule_one.go) cancels the whole filter loop on an
Error from any node it processes: the pod stays pending with that error as its message, no
PostFilter (preemption) runs, and the start index moves by the nodes processed before it. A node
the loop never reaches (enough feasible nodes before it) cannot abort it.

One encoding: try_node's reason for such a node is the scheduler's message itself, which begins
with FILTER_ERROR; every filter loop stops at the first reason that is_filter_error, and the pod's
PodPlacement.error carries it. In a pod-group cycle the failing pod keeps its own error and the
group's other pods get GROUP_ERROR before it (schedule_one_podgroup.go, both releases).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeGuard

from draopt.errors import AllocationError, DeviceCelError
from draopt.kube.releases import at_least

FILTER_ERROR = 'running "DynamicResources" filter plugin: '
GROUP_ERROR = "failed to schedule other pod from a pod group: "
# k8s.io/dynamic-resource-allocation v0.37 cel.EnhanceRuntimeError: the hint after "no such key"
_NO_SUCH_KEY_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() "
    "for optional fields"
)


def is_filter_error(reason: str | None) -> TypeGuard[str]:
    """try_node's `reason` is a Filter Error status (the attempt stops), not a node's rejection."""
    return reason is not None and reason.startswith(FILTER_ERROR)


def first_filter_error(reasons: Iterable[str]) -> str | None:
    """The filter error among a loop's reasons (a loop that meets one reports it alone), or None."""
    return next((r for r in reasons if is_filter_error(r)), None)


def allocator_error(error: AllocationError, version: str) -> str:
    """The scheduler's message for an allocator error on a node, in the release's words: a
    selector's CEL runtime error names the device from 1.37 on, and 1.37 adds a hint to "no such
    key" (allocator_{stable,incubating}.go isSelectable); other errors as draopt words them."""
    if isinstance(error, DeviceCelError) and " selector #" in error.owner:
        owner, index = error.owner.rsplit(" selector #", 1)
        newer = at_least(version, "1.37")
        where = f" on device {error.device}" if newer else ""
        hint = _NO_SUCH_KEY_HINT if newer and "no such key:" in error.cause else ""
        return f"{FILTER_ERROR}{owner}: selector #{index}{where}: CEL runtime error: {error.cause}{hint}"
    return f"{FILTER_ERROR}{error}"


def timed_out(node_name: str) -> str:
    """The scheduler's message for an allocation past its time limit (draopt: its step limit)."""
    return f"{FILTER_ERROR}node {node_name}: timed out trying to allocate devices"


def group_member_error(error: str) -> str:
    """The message of a pod-group member other than the one whose filter failed."""
    return error if error.startswith(GROUP_ERROR) else GROUP_ERROR + error


# Errors prepare() raises that Kubernetes' allocator returns from Allocate (the others are the
# PreFilter's rejections or the API server's validation: per-node reasons, as before).
_ALLOCATE_ERRORS = ("asks for all devices, but resource pool", "exceeds the claim limit", "CEL compile error")


def raised_by_allocate(error: AllocationError) -> bool:
    """An error of prepare() that Kubernetes raises while allocating (a Filter error)."""
    text = str(error)
    return isinstance(error, DeviceCelError) or any(words in text for words in _ALLOCATE_ERRORS)


__all__ = [
    "FILTER_ERROR",
    "GROUP_ERROR",
    "allocator_error",
    "first_filter_error",
    "group_member_error",
    "is_filter_error",
    "raised_by_allocate",
    "timed_out",
]
