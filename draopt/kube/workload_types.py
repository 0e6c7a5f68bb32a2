"""What the expansion (draopt.kube.workload.expand) gives: each pod's demand, the gangs, and the
workload that holds them with the claims.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draopt.kube.admission import Hold
from draopt.kube.models import ResourceClaim
from draopt.kube.models.workload import Pod


@dataclass
class ClaimUse:
    """One entry of a pod's spec.resourceClaims (or its extended-resource claim)."""

    name: str  # the pod's claim name (EXTENDED_CLAIM_USE for extended resources)
    key: str  # "namespace/name" of the ResourceClaim used
    generated: bool  # made here (from a template, or for extended resources)
    for_group: str | None  # PodGroup key when the claim is reserved for the PodGroup, else None


@dataclass
class PodDemand:
    pod: Pod
    key: str
    priority: int
    queue_key: tuple
    node_name: str | None
    node_selector: dict[str, str]
    resources: dict[str, Fraction]
    claims: list[ClaimUse]
    group: str | None
    # Extended resources moved from `resources` to the extended-resource claim (pod totals).
    # kube-scheduler serves them from a device plugin instead on a node whose allocatable has the
    # resource (> 0): draopt.kube.extended_resources.on_node gives the pod as such a node sees it.
    extended_resources: dict[str, Fraction] = field(default_factory=dict)
    # Set on a pending pod kube-scheduler keeps out of its queue (draopt.kube.admission): no policy
    # places it; it is in Workload.waiting, not in Workload.pending.
    hold: Hold | None = None
    # on_node's answers, by the tuple of extended resources a node's device plugin serves (not an
    # init field: a dataclasses.replace copy starts with its own, empty)
    node_views: dict[tuple[str, ...], PodDemand] = field(default_factory=dict, init=False, repr=False, compare=False)


@dataclass
class Gang:
    key: str
    min_count: int
    pods: list[str]
    priority: int
    policy: str  # "gang" | "basic"
    # KEP-5732: the node label whose values are the domains all the group's pods share (None:
    # no constraint, or TopologyAwareWorkloadScheduling off and the field dropped).
    topology_key: str | None = None
    # KEP-6012: the CompositePodGroup (key) this group belongs to (None: a root).
    parent: str | None = None
    disruption_mode: str = "Single"  # KEP-5710: "Single" | "All"
    preemption_policy: str | None = None
    # spec.priority as the Priority admission plugin writes it (the class's value, else the
    # global default's, else 0): what kube-scheduler 1.37 holds the members' priorities to
    admitted_priority: int = 0


@dataclass
class CompositeGang:
    """A CompositePodGroup (KEP-6012): child groups scheduled together in one pod-group cycle;
    a gang policy needs `min_group_count` children scheduled, else none is."""

    key: str
    min_group_count: int
    policy: str  # "gang" | "basic"
    children: list[tuple[str, str]]  # (kind, key): child PodGroups and CompositePodGroups, by name
    topology_key: str | None = None
    parent: str | None = None
    priority: int = 0
    disruption_mode: str = "Single"


@dataclass
class Workload:
    pending: list[PodDemand]
    running: list[PodDemand]
    claims: dict[str, ResourceClaim]
    groups: dict[str, Gang]
    reserved_for: dict[str, list[str]]
    node_allocatable: dict[str, dict[str, Fraction]]
    composites: dict[str, CompositeGang] = field(default_factory=dict)
    # Generated claims' spec texts (json.dumps(spec.to_k8s(), sort_keys=True)), computed once per
    # ResourceClaimTemplate: first-fit's claim signatures start from them.
    spec_texts: dict[str, str] = field(default_factory=dict)
    # What the input has that the placement does not honour (gated_field_notes): part of every
    # answer made from this workload, whatever was printed before.
    notes: list[str] = field(default_factory=list)
    claim_copies: Any = None  # the ClaimCopier of the generated claims (output dumps its copies)
    # Pending pods kube-scheduler keeps out of its queue (PodDemand.hold says why), in queue order.
    waiting: list[PodDemand] = field(default_factory=list)
    # Pending pods being deleted, taken out of the queue (never scheduled); Workload.pod still finds them.
    deleting: list[PodDemand] = field(default_factory=list)
    # Workload.pod's index by key, built on first use; dropped with the workload.
    _pods_by_key: dict[str, PodDemand] | None = field(default=None, repr=False, compare=False)

    def set_aside(self, deleting: list[PodDemand]) -> None:
        """Take pods being deleted out of the queue; Workload.pod still finds them."""
        keys = {d.key for d in deleting}
        self.pending = [d for d in self.pending if d.key not in keys]
        self.deleting = deleting
        self._pods_by_key = None

    def pod(self, key: str) -> PodDemand:
        index = self._pods_by_key
        if index is None:
            everyone = self.pending + self.running + self.waiting + self.deleting
            index = self._pods_by_key = {p.key: p for p in everyone}
        try:
            return index[key]
        except KeyError:
            raise KeyError(key) from None
