"""resource.k8s.io/v1 objects (also read from v1beta2, and v1alpha3 for DeviceTaintRule)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from draopt.kube.models.base import K8sModel, ObjectMeta, QuantityStr, TypedObject
from draopt.kube.models.core import NodeSelector


# ---------------------------------------------------------------- selectors / config
class CELDeviceSelector(K8sModel):
    expression: str


class DeviceSelector(K8sModel):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(K8sModel):
    driver: str
    parameters: Any = None


class DeviceClassConfiguration(K8sModel):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(K8sModel):
    selectors: list[DeviceSelector] = Field(default_factory=list)
    config: list[DeviceClassConfiguration] = Field(default_factory=list)
    extended_resource_name: str | None = None


class DeviceClass(TypedObject):
    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)


# ---------------------------------------------------------------- ResourceSlice
class DeviceAttribute(K8sModel):
    """Exactly one field is set; list forms need DRAListTypeAttributes."""

    bool_: bool | None = None
    int_: int | None = None
    string: str | None = None
    version: str | None = None
    bools: list[bool] | None = None
    ints: list[int] | None = None
    strings: list[str] | None = None
    versions: list[str] | None = None

    model_config = {"alias_generator": lambda f: {"bool_": "bool", "int_": "int"}.get(f, f)}

    def typed(self) -> tuple[str, Any] | None:
        """(type, value) of the one field set, or None for an unknown/empty value."""
        for kind in ("bool_", "int_", "string", "version", "bools", "ints", "strings", "versions"):
            v = getattr(self, kind)
            if v is not None:
                return kind.rstrip("_"), v
        return None


class CapacityRequestPolicyRange(K8sModel):
    min: QuantityStr | None = None
    max: QuantityStr | None = None
    step: QuantityStr | None = None


class CapacityRequestPolicy(K8sModel):
    default: QuantityStr | None = None
    valid_values: list[QuantityStr] | None = None
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(K8sModel):
    value: QuantityStr
    request_policy: CapacityRequestPolicy | None = None


class Counter(K8sModel):
    value: QuantityStr


class CounterSet(K8sModel):
    name: str
    counters: dict[str, Counter] = Field(default_factory=dict)


class DeviceCounterConsumption(K8sModel):
    counter_set: str
    counters: dict[str, Counter] = Field(default_factory=dict)
    compatibility_groups: list[str] | None = None


class DeviceTaint(K8sModel):
    key: str
    value: str | None = None
    effect: str
    time_added: str | None = None


class Device(K8sModel):
    name: str
    attributes: dict[str, DeviceAttribute] = Field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = Field(default_factory=dict)
    consumes_counters: list[DeviceCounterConsumption] = Field(default_factory=list)
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = Field(default_factory=list)
    binds_to_node: bool | None = None
    binding_conditions: list[str] = Field(default_factory=list)
    binding_failure_conditions: list[str] = Field(default_factory=list)
    allow_multiple_allocations: bool | None = None
    node_allocatable_resources: dict[str, Any] | None = None


class ResourcePool(K8sModel):
    name: str
    generation: int = 0
    resource_slice_count: int = 1


class ResourceSliceSpec(K8sModel):
    driver: str
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = Field(default_factory=list)
    shared_counters: list[CounterSet] = Field(default_factory=list)
    partition_type_attribute: str | None = None
    skip_node_operations: list[str] | None = None


class ResourceSlice(TypedObject):
    spec: ResourceSliceSpec


# ---------------------------------------------------------------- ResourceClaim
class DeviceToleration(K8sModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class CapacityRequirements(K8sModel):
    requests: dict[str, QuantityStr] = Field(default_factory=dict)


class DerivedAttribute(K8sModel):
    name: str
    expression: str


class _RequestFields(K8sModel):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = Field(default_factory=list)
    allocation_mode: str | None = None
    count: int | None = None
    tolerations: list[DeviceToleration] = Field(default_factory=list)
    capacity: CapacityRequirements | None = None
    derived_attributes: list[DerivedAttribute] = Field(default_factory=list)


class ExactDeviceRequest(_RequestFields):
    admin_access: bool | None = None


class DeviceSubRequest(_RequestFields):
    name: str


class DeviceRequest(K8sModel):
    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = Field(default_factory=list)


class DeviceConstraint(K8sModel):
    requests: list[str] = Field(default_factory=list)
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(K8sModel):
    requests: list[str] = Field(default_factory=list)
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(K8sModel):
    requests: list[DeviceRequest] = Field(default_factory=list)
    constraints: list[DeviceConstraint] = Field(default_factory=list)
    config: list[DeviceClaimConfiguration] = Field(default_factory=list)


class ResourceClaimSpec(K8sModel):
    devices: DeviceClaim = Field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(K8sModel):
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] | None = None
    binding_conditions: list[str] | None = None
    binding_failure_conditions: list[str] | None = None
    share_id: str | None = None
    consumed_capacity: dict[str, QuantityStr] | None = None
    skip_node_operations: list[str] | None = None

    model_config = {
        "alias_generator": lambda f: (
            "shareID" if f == "share_id" else __import__("pydantic.alias_generators", fromlist=["to_camel"]).to_camel(f)
        )
    }


class DeviceAllocationConfiguration(K8sModel):
    source: str
    requests: list[str] | None = None
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(K8sModel):
    results: list[DeviceRequestAllocationResult] = Field(default_factory=list)
    config: list[DeviceAllocationConfiguration] = Field(default_factory=list)


class AllocationResult(K8sModel):
    devices: DeviceAllocationResult = Field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(K8sModel):
    api_group: str | None = None
    resource: str = ""
    name: str = ""
    uid: str = ""


class ResourceClaimStatus(K8sModel):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = Field(default_factory=list)

    k8s_fields: ClassVar[tuple[str, ...]] = ("devices",)  # AllocatedDeviceStatus, written by drivers


class ResourceClaim(TypedObject):
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = Field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(K8sModel):
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)

    k8s_field_models: ClassVar[dict[str, type]] = {"metadata": ObjectMeta}


class ResourceClaimTemplate(TypedObject):
    spec: ResourceClaimTemplateSpec = Field(default_factory=ResourceClaimTemplateSpec)


# ---------------------------------------------------------------- DeviceTaintRule
class DeviceTaintSelector(K8sModel):
    # (deviceClassName and selectors, of 1.33-1.34's v1alpha3, are in no served version: unknown
    # fields, kept as extras and applied by nothing)
    driver: str | None = None
    pool: str | None = None
    device: str | None = None


class DeviceTaintRuleSpec(K8sModel):
    device_selector: DeviceTaintSelector | None = None
    taint: DeviceTaint


class DeviceTaintRule(TypedObject):
    spec: DeviceTaintRuleSpec

    k8s_fields: ClassVar[tuple[str, ...]] = ("status",)
