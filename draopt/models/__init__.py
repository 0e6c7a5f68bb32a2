"""Pydantic v2 models of the Kubernetes objects draopt reads and writes."""
from .base import K8sModel, ObjectMeta, TypedObject
from .core import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from .resource import (
    AllocationResult, CapacityRequestPolicy, CounterSet, Device, DeviceAllocationConfiguration,
    DeviceAllocationResult, DeviceAttribute, DeviceClaim, DeviceClass, DeviceConstraint,
    DeviceRequest, DeviceRequestAllocationResult, DeviceSubRequest, DeviceTaint, DeviceTaintRule,
    DeviceToleration, ExactDeviceRequest, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
)
from .workload import (
    Container, GangSchedulingPolicy, Namespace, NodeAllocatableMapping, NodeAllocatableOverhead,
    NodeAllocatableResource, NodeAllocatableResources, Pod, PodGroup, PodResourceClaim, PriorityClass,
)

__all__ = [
    "AllocationResult",
    "CapacityRequestPolicy",
    "Container",
    "CounterSet",
    "Device",
    "DeviceAllocationConfiguration",
    "DeviceAllocationResult",
    "DeviceAttribute",
    "DeviceClaim",
    "DeviceClass",
    "DeviceConstraint",
    "DeviceRequest",
    "DeviceRequestAllocationResult",
    "DeviceSubRequest",
    "DeviceTaint",
    "DeviceTaintRule",
    "DeviceToleration",
    "ExactDeviceRequest",
    "GangSchedulingPolicy",
    "K8sModel",
    "Namespace",
    "Node",
    "NodeAllocatableMapping",
    "NodeAllocatableOverhead",
    "NodeAllocatableResource",
    "NodeAllocatableResources",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectMeta",
    "Pod",
    "PodGroup",
    "PodResourceClaim",
    "PriorityClass",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "TypedObject",
]
