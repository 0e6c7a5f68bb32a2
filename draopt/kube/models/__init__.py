"""Pydantic v2 models of the Kubernetes objects draopt reads and writes."""
from draopt.kube.models.base import K8sModel, ObjectMeta, TypedObject
from draopt.kube.models.core import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from draopt.kube.models.resource import (
    AllocationResult, CapacityRequestPolicy, CounterSet, Device, DeviceAllocationConfiguration,
    DeviceAllocationResult, DeviceAttribute, DeviceClaim, DeviceClass, DeviceConstraint,
    DeviceRequest, DeviceRequestAllocationResult, DeviceSubRequest, DeviceTaint, DeviceTaintRule,
    DeviceToleration, ExactDeviceRequest, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
)
from draopt.kube.models.workload import (
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
