"""Workload objects around the allocator: Pod (v1), PodGroup (scheduling.k8s.io/v1beta1,
v1alpha3, v1alpha2), Workload (same versions), CompositePodGroup (scheduling.k8s.io/v1alpha3,
alpha in 1.37), Namespace (v1), PriorityClass (scheduling.k8s.io/v1); and a typed view of a
device's ``nodeAllocatableResources`` (DRANodeAllocatableResources, alpha).

The PodGroup fields of KEP-5732 (topology-aware workload scheduling), KEP-5710 (workload-aware
preemption) and KEP-6012 (CompositePodGroup) are read in both shapes the API has had:
1.36's v1alpha2 (``podGroupTemplateRef``, ``disruptionMode: Pod|PodGroup``) and 1.37's v1beta1 /
v1alpha3 (``workloadRef``, ``disruptionMode: {single: {}} | {all: {}}``).

Only the fields draopt reads are typed; everything else is kept (``extra="allow"``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, model_validator

from draopt.kube.models.base import K8sModel, QuantityStr, TypedObject
from draopt.kube.models.core import NodeSelector, Toleration


# ---------------------------------------------------------------- Pod
class ResourceRequirementClaim(K8sModel):
    """containers[].resources.claims[]: which pod claim (and request) the container uses."""

    name: str
    request: str | None = None


class ResourceRequirements(K8sModel):
    requests: dict[str, QuantityStr] = Field(default_factory=dict)
    limits: dict[str, QuantityStr] = Field(default_factory=dict)
    claims: list[ResourceRequirementClaim] = Field(default_factory=list)


class Container(K8sModel):
    name: str = ""
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    restart_policy: str | None = None  # "Always" on an init container = sidecar

    k8s_fields: ClassVar[tuple[str, ...]] = (
        "image",
        "command",
        "args",
        "workingDir",
        "ports",
        "envFrom",
        "env",
        "resizePolicy",
        "restartPolicyRules",
        "volumeMounts",
        "volumeDevices",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
        "terminationMessagePath",
        "terminationMessagePolicy",
        "imagePullPolicy",
        "securityContext",
        "stdin",
        "stdinOnce",
        "tty",
    )


class PodResourceClaim(K8sModel):
    """spec.resourceClaims[] of a Pod (and of a PodGroup: same structure)."""

    name: str
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


class PodSchedulingGroup(K8sModel):
    pod_group_name: str | None = None


class NodeAffinity(K8sModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None

    k8s_fields: ClassVar[tuple[str, ...]] = ("preferredDuringSchedulingIgnoredDuringExecution",)


class Affinity(K8sModel):
    node_affinity: NodeAffinity | None = None

    k8s_fields: ClassVar[tuple[str, ...]] = ("podAffinity", "podAntiAffinity")


class PodSpec(K8sModel):
    node_name: str | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    priority: int | None = None
    priority_class_name: str | None = None
    scheduling_group: PodSchedulingGroup | None = None
    resource_claims: list[PodResourceClaim] = Field(default_factory=list)
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list)
    overhead: dict[str, QuantityStr] = Field(default_factory=dict)
    resources: ResourceRequirements | None = None  # pod-level resources (PodLevelResources)
    tolerations: list[Toleration] = Field(default_factory=list)
    affinity: Affinity | None = None

    k8s_fields: ClassVar[tuple[str, ...]] = (
        "volumes",
        "ephemeralContainers",
        "restartPolicy",
        "terminationGracePeriodSeconds",
        "activeDeadlineSeconds",
        "dnsPolicy",
        "serviceAccountName",
        "serviceAccount",
        "automountServiceAccountToken",
        "hostNetwork",
        "hostPID",
        "hostIPC",
        "shareProcessNamespace",
        "securityContext",
        "imagePullSecrets",
        "hostname",
        "subdomain",
        "schedulerName",
        "hostAliases",
        "dnsConfig",
        "readinessGates",
        "runtimeClassName",
        "enableServiceLinks",
        "preemptionPolicy",
        "topologySpreadConstraints",
        "setHostnameAsFQDN",
        "os",
        "hostUsers",
        "schedulingGates",
        "hostnameOverride",
        "evictionResponders",
    )


class PodResourceClaimStatus(K8sModel):
    name: str
    resource_claim_name: str | None = None


class PodExtendedResourceClaimStatus(K8sModel):
    resource_claim_name: str = ""
    request_mappings: list[dict[str, Any]] = Field(default_factory=list)


class PodStatus(K8sModel):
    phase: str | None = None
    resource_claim_statuses: list[PodResourceClaimStatus] = Field(default_factory=list)
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None

    k8s_fields: ClassVar[tuple[str, ...]] = (
        "observedGeneration",
        "conditions",
        "message",
        "reason",
        "nominatedNodeName",
        "hostIP",
        "hostIPs",
        "podIP",
        "podIPs",
        "startTime",
        "initContainerStatuses",
        "containerStatuses",
        "qosClass",
        "ephemeralContainerStatuses",
        "resize",
        "allocatedResources",
        "resources",
        "nodeAllocatableResourceClaimStatuses",
        "volumeHealth",
    )


class Pod(TypedObject):
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)


# ---------------------------------------------------------------- PodGroup
class GangSchedulingPolicy(K8sModel):
    min_count: int = 1


class PodGroupSchedulingPolicy(K8sModel):
    basic: dict[str, Any] | None = None
    gang: GangSchedulingPolicy | None = None


class TopologyConstraint(K8sModel):
    """schedulingConstraints.topology[]: the node label whose value is one domain (KEP-5732)."""

    key: str = ""


class SchedulingConstraints(K8sModel):
    topology: list[TopologyConstraint] = Field(default_factory=list)


class PodGroupSpec(K8sModel):
    scheduling_policy: PodGroupSchedulingPolicy | None = None
    resource_claims: list[PodResourceClaim] = Field(default_factory=list)
    priority: int | None = None
    priority_class_name: str | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    # 1.36 (v1alpha2): "Pod" | "PodGroup"; 1.37: {"single": {}} | {"all": {}}
    disruption_mode: str | dict[str, Any] | None = None
    preemption_policy: str | None = None
    parent_composite_pod_group_name: str | None = None
    workload_ref: dict[str, Any] | None = None  # 1.37: {workloadName, templateName}
    pod_group_template_ref: dict[str, Any] | None = None  # 1.36: {workload: {workloadName, podGroupTemplateName}}


class PodGroupStatus(K8sModel):
    resource_claim_statuses: list[PodResourceClaimStatus] = Field(default_factory=list)

    k8s_fields: ClassVar[tuple[str, ...]] = ("conditions",)


class PodGroup(TypedObject):
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)


# ---------------------------------------------------------------- CompositePodGroup, Workload
class CompositeGangPolicy(K8sModel):
    """gang.minGroupCount: how many child groups must be scheduled (KEP-6012)."""

    min_group_count: int = 1


class CompositeSchedulingPolicy(K8sModel):
    basic: dict[str, Any] | None = None
    gang: CompositeGangPolicy | None = None


class CompositePodGroupSpec(K8sModel):
    scheduling_policy: CompositeSchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: str | dict[str, Any] | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    preemption_policy: str | None = None
    parent_composite_pod_group_name: str | None = None
    workload_ref: dict[str, Any] | None = None


class CompositePodGroup(TypedObject):
    spec: CompositePodGroupSpec = Field(default_factory=CompositePodGroupSpec)

    @property
    def ref(self) -> str:  # namespaced
        return f"{self.kind or 'CompositePodGroup'} {self.namespace}/{self.name}"

    k8s_fields: ClassVar[tuple[str, ...]] = ("status",)


class PodGroupTemplate(K8sModel):
    name: str = ""
    scheduling_policy: PodGroupSchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: str | dict[str, Any] | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    preemption_policy: str | None = None
    resource_claims: list[PodResourceClaim] = Field(default_factory=list)


class CompositePodGroupTemplate(K8sModel):
    name: str = ""
    scheduling_policy: CompositeSchedulingPolicy | None = None
    scheduling_constraints: SchedulingConstraints | None = None
    disruption_mode: str | dict[str, Any] | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    preemption_policy: str | None = None
    pod_group_templates: list[PodGroupTemplate] = Field(default_factory=list)
    composite_pod_group_templates: list["CompositePodGroupTemplate"] = Field(default_factory=list)


class WorkloadSpec(K8sModel):
    pod_group_templates: list[PodGroupTemplate] = Field(default_factory=list)
    composite_pod_group_templates: list[CompositePodGroupTemplate] = Field(default_factory=list)

    k8s_fields: ClassVar[tuple[str, ...]] = ("controllerRef",)


class Workload(TypedObject):
    """scheduling.k8s.io Workload: templates the PodGroups copy their policy from (the scheduler
    reads the PodGroups' own copies)."""

    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)

    @property
    def ref(self) -> str:  # namespaced
        return f"{self.kind or 'Workload'} {self.namespace}/{self.name}"

    k8s_fields: ClassVar[tuple[str, ...]] = ("status",)


def topology_key(constraints: SchedulingConstraints | None) -> str | None:
    """The one topology key a (Composite)PodGroup's constraints name, or None."""
    if constraints is None or not constraints.topology:
        return None
    return constraints.topology[0].key


def disruption_mode(value: str | dict[str, Any] | None) -> str:
    """ "Single" or "All" from either API shape (default Single, KEP-5710): 1.36's "Pod" is
    Single, "PodGroup" is All."""
    if isinstance(value, dict):
        return "All" if value.get("all") is not None else "Single"
    return "All" if value in ("PodGroup", "All") else "Single"


# ---------------------------------------------------------------- Namespace, PriorityClass
class Namespace(TypedObject):
    k8s_fields: ClassVar[tuple[str, ...]] = ("spec", "status")


class PriorityClass(TypedObject):
    value: int = 0
    global_default: bool | None = None
    preemption_policy: str | None = None

    k8s_fields: ClassVar[tuple[str, ...]] = ("description",)


# ---------------------------------------------------------------- node-allocatable resources
class NodeAllocatableMapping(K8sModel):
    """The device itself provides the resource: ``capacityKey`` x ``capacityMultiplier``
    (consumed capacity), or ``deviceMultiplier`` per allocated device."""

    capacity_key: str | None = None
    capacity_multiplier: QuantityStr | None = None
    device_multiplier: QuantityStr | None = None


class NodeAllocatableOverhead(K8sModel):
    """Auxiliary host resources a device needs: ``perPod`` + ``perContainer`` x references."""

    per_pod: QuantityStr | None = None
    per_container: QuantityStr | None = None


class NodeAllocatableResource(K8sModel):
    mapping: NodeAllocatableMapping | None = None
    overhead: NodeAllocatableOverhead | None = None


class NodeAllocatableResources(K8sModel):
    """A device's ``nodeAllocatableResources``, normalised to ``resource name -> {mapping,
    overhead}``.

    Two shapes are read:

    * the seed document's (``/work/shared/seeds/dra-concepts.zh.txt``)::

        nodeAllocatableResources:
          mapping:  {cpu: {capacityKey: ..., capacityMultiplier: ...}}
          overhead: {memory: {perPod: 8Gi}}

    * the upstream API's (``resource.k8s.io/v1`` in 1.37: ``map[ResourceName]NodeAllocatableResource``)::

        nodeAllocatableResources:
          cpu:    {mapping: {capacityKey: ...}}
          memory: {overhead: {perPod: 8Gi}}

    The first shape is recognised by its top-level keys being only ``mapping``/``overhead``.
    """

    resources: dict[str, NodeAllocatableResource] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if not isinstance(data, dict) or set(data) == {"resources"}:
            return data
        if (
            data
            and set(data) <= {"mapping", "overhead"}
            and all(isinstance(v, dict) and all(isinstance(x, dict) for x in v.values()) for v in data.values())
        ):
            out: dict[str, dict[str, Any]] = {}
            for part in ("mapping", "overhead"):
                for resource, spec in (data.get(part) or {}).items():
                    out.setdefault(resource, {})[part] = spec
            return {"resources": out}
        return {"resources": data}
