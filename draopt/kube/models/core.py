"""core/v1 objects: Node and node selectors."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from draopt.kube.models.base import K8sModel, QuantityStr, TypedObject


class NodeSelectorRequirement(K8sModel):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


class NodeSelectorTerm(K8sModel):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)


class NodeSelector(K8sModel):
    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


class Taint(K8sModel):
    key: str
    value: str | None = None
    effect: str
    time_added: str | None = None


class Toleration(K8sModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class NodeSpec(K8sModel):
    unschedulable: bool | None = None
    taints: list[Taint] = Field(default_factory=list)

    k8s_fields: ClassVar[tuple[str, ...]] = (
        "podCIDR",
        "podCIDRs",
        "providerID",
        "configSource",
        "externalID",
        "podPreemptionPolicy",
    )


class NodeStatus(K8sModel):
    allocatable: dict[str, QuantityStr] = Field(default_factory=dict)
    capacity: dict[str, QuantityStr] = Field(default_factory=dict)

    k8s_fields: ClassVar[tuple[str, ...]] = (
        "phase",
        "conditions",
        "addresses",
        "daemonEndpoints",
        "nodeInfo",
        "images",
        "volumesInUse",
        "volumesAttached",
        "config",
        "runtimeHandlers",
        "features",
        "declaredFeatures",
    )


class Node(TypedObject):
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)
