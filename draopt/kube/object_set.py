"""ObjectSet: everything read from the inputs, per kind (draopt.kube.loader fills it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draopt.kube.models import (
    DeviceClass,
    DeviceTaintRule,
    Namespace,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from draopt.kube.models.base import TypedObject
from draopt.kube.models.workload import CompositePodGroup, Workload


@dataclass
class ObjectSet:
    """Everything read from the inputs, in input order per kind."""

    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    claim_templates: list[ResourceClaimTemplate] = field(default_factory=list)
    taint_rules: list[DeviceTaintRule] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    pod_groups: list[PodGroup] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    composite_pod_groups: list[CompositePodGroup] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    extra: dict[str, list[Any]] = field(default_factory=dict)
    # Workload controllers (documents, where from), expanded into `pods` by `finish`; kinds skipped
    # ((kind, API group) -> count); pods made by controllers: pod key -> (controller key, index) (queue order).
    controllers: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    skipped: dict[tuple[str, str], int] = field(default_factory=dict)
    creation_order: dict[str, tuple[str, int]] = field(default_factory=dict)
    # Kubeflow Trainer runtimes (TrainingRuntime, ClusterTrainingRuntime documents, where from): the
    # JobSet templates of the TrainJobs (draopt.kube.batch_controllers).
    runtimes: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    # The controllers whose selectors kube-scheduler's default spreading reads (ReplicaSet,
    # StatefulSet, ReplicationController documents), kept after `finish` for draopt.crosscheck.
    selector_owners: list[dict[str, Any]] = field(default_factory=list)
    # The controllers' pods on the settled clock, where they differ (draopt.kube.settle.SettledPods,
    # made by `finish`); the notes of the clock draopt.kube.settle.apply chose.
    settled: Any = None
    clock_notes: list[str] = field(default_factory=list)
    clock: str = ""  # "settled" or "now" once draopt.kube.settle.apply chose; "" as read
    # PodGroups draopt makes for batch operators' gangs (namespace/name): a simulation's stand-in,
    # not an object of the API, so no release's served versions apply to it.
    simulated_groups: set[str] = field(default_factory=set)
    # Objects draopt's studies made themselves (a cluster's residue and its pods to place, with
    # spec.priority as the model's weight): never sent to an API server, so its admission checks
    # do not apply to them.
    made_by_draopt: bool = False
    # Pods their controller deletes once it acts (pod key -> why, a phrase after the pod's name):
    # a suspended Job's active pods (draopt.kube.controllers.deleted_by_suspended_jobs).
    deleted_by_controllers: dict[str, str] = field(default_factory=dict)

    _BY_KIND = {
        "DeviceClass": "device_classes",
        "ResourceSlice": "resource_slices",
        "ResourceClaim": "resource_claims",
        "ResourceClaimTemplate": "claim_templates",
        "DeviceTaintRule": "taint_rules",
        "Node": "nodes",
        "Pod": "pods",
        "PodGroup": "pod_groups",
        "Namespace": "namespaces",
        "Workload": "workloads",
        "CompositePodGroup": "composite_pod_groups",
        "PriorityClass": "priority_classes",
    }

    def __copy__(self) -> "ObjectSet":
        """A shallow copy (the same lists, objects and values), as copy.copy makes one, made
        directly: allocate copies its input to explain a failure, and copy.copy's generic
        protocol cost more than the search of a one-device problem."""
        new = ObjectSet.__new__(ObjectSet)
        new.__dict__.update(self.__dict__)
        return new

    def add(self, obj: TypedObject) -> None:
        getattr(self, self._BY_KIND[obj.kind]).append(obj)

    def extend(self, other: "ObjectSet") -> None:
        for attr in self._BY_KIND.values():
            getattr(self, attr).extend(getattr(other, attr))
        self.controllers.extend(other.controllers)
        self.runtimes.extend(other.runtimes)
        for kind, n in other.skipped.items():
            self.skipped[kind] = self.skipped.get(kind, 0) + n
        self.creation_order.update(other.creation_order)
        for extra_kind, docs in other.extra.items():
            self.extra.setdefault(extra_kind, []).extend(docs)
