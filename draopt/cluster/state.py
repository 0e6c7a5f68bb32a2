"""Cluster-wide state for placing many pods: nodes, per-node device inventories built once,
one shared allocated-device state, and node resources in use.

Devices of pools that several nodes can reach (allNodes, node selectors) appear in each of
those nodes' inventories under the same DeviceID, so one allocation is seen everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from draopt.kube.extended_resources import on_node
from draopt.kube.features import Features
from draopt.dra.inventory import (
    AllocatedState,
    Inventory,
    allocated_state,
    build_inventory,
    shared_slices_key,
    slices_by_node,
)
from draopt.kube.loader import ObjectSet
from draopt.kube.models import Node, ResourceClaim
from draopt.kube.models.core import Taint
from draopt.kube.nodeselect import node_selector_matches
from draopt.kube.quantity import Quantity
from draopt.dra.rules import tolerates


def _allocatable(node: Node) -> dict[str, Fraction]:
    out = {}
    # The API server defaults a missing status.allocatable to status.capacity (SetDefaults_NodeStatus).
    given = "allocatable" in node.status.model_fields_set
    for name, value in ((node.status.allocatable if given else node.status.capacity) or {}).items():
        out[name] = Quantity.parse(value).value
    return out


_BASIC = frozenset(("cpu", "memory", "pods", "ephemeral-storage"))


# The zone labels kube-scheduler's node tree reads, the deprecated beta ones first
# (k8s.io/component-helpers node/topology GetZoneKey, v0.36 and v0.37).
_ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")
_REGION_LABELS = ("failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region")


def _zone_key(node: Node) -> tuple[str, str]:
    labels = node.metadata.labels or {}
    zone = next((labels[k] for k in _ZONE_LABELS if k in labels), "")
    region = next((labels[k] for k in _REGION_LABELS if k in labels), "")
    return region, zone


def node_tree_order(nodes: list[Node]) -> list[Node]:
    """The nodes in kube-scheduler's order (its node tree: one node of each zone in turn, the
    zones in the order their first node came, each zone's nodes in the order they came), the
    nodes coming in name order (as the scheduler oracle adds them). The filter loop's rotating
    start and the first of equal scores follow this order."""
    zones: dict[tuple[str, str], list[Node]] = {}
    for node in sorted(nodes, key=lambda n: n.name):
        zones.setdefault(_zone_key(node), []).append(node)
    columns = list(zones.values())
    return [column[i] for i in range(max(map(len, columns), default=0)) for column in columns if i < len(column)]


@dataclass
class NodeState:
    node: Node
    index: int
    allocatable: dict[str, Fraction]
    used: dict[str, Fraction] = field(default_factory=dict)
    version: int = 0  # bumped whenever something on the node changes
    # allocatable - used, per published resource, for the `used` dict and take() count it was
    # computed from (a copy of the node with its own `used` recomputes it).
    _free: tuple | None = field(default=None, repr=False, compare=False)
    _takes: int = field(default=0, repr=False, compare=False)
    # The cluster's array of node versions (Cluster.versions), kept equal to `version` at `index`
    # (the scheduler reads every node's version each cycle); a copy of the node is not in it.
    _versions: Any = field(default=None, repr=False, compare=False)
    _takes_kept: Any = field(default=None, repr=False, compare=False)  # Cluster.takes, the same way
    name: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self.name = self.node.name  # read on every filter: a plain attribute

    def __copy__(self) -> "NodeState":
        new = NodeState.__new__(NodeState)
        new.__dict__.update(self.__dict__)
        new._versions = None
        new._takes_kept = None
        return new

    def exceeds_allocatable(self, demand: dict[str, Fraction]) -> bool:
        """Whether the demand is more than the node holds even empty (NodeResourcesFit's Unresolvable:
        preemption cannot help there). Pods are counted per node, not here."""
        for r, v in demand.items():
            if not v or r == "pods":
                continue
            cap = self.allocatable.get(r)
            if cap is None:
                if r in _BASIC or r.startswith("hugepages-"):
                    continue
                return True
            if v > cap:
                return True
        return False

    def fits(self, demand: dict[str, Fraction]) -> str | None:
        """None if the demand fits next to what is used, else the first resource that does not.
        A resource the node does not publish is unlimited, except extended resources."""
        cached = self._free
        if cached is None or cached[0] is not self.used or cached[1] != self._takes:
            used = self.used
            free = {}
            for r, cap in self.allocatable.items():
                # allocatable - used as (numerator, positive denominator), not reduced: integers
                # compare much faster than Fractions, and subtract without a gcd
                u = used.get(r)
                if u:
                    cd, ud = cap.denominator, u.denominator
                    free[r] = (cap.numerator * ud - u.numerator * cd, cd * ud)
                else:
                    free[r] = (cap.numerator, cap.denominator)
            self._free = cached = (used, self._takes, free)
        free = cached[2]
        for r, v in demand.items():
            if not v:
                continue
            f = free.get(r)
            if f is None:
                if r in _BASIC or r.startswith("hugepages-"):
                    continue  # nodes without status.allocatable are not limited (simulation input)
                return r
            if v.numerator * f[1] > f[0] * v.denominator:  # v > free (denominators are positive)
                return r
        return None

    def shortfalls(self, demand: dict[str, Fraction]) -> list[str]:
        """Every resource of the demand that does not fit next to what is used (fits() names the
        first only; NodeResourcesFit names them all), the pod count first."""
        self.fits(demand)  # (the free amounts, cached)
        assert self._free is not None
        free = self._free[2]
        out = []
        for r, v in demand.items():
            if not v:
                continue
            f = free.get(r)
            if f is None:
                if not (r in _BASIC or r.startswith("hugepages-")):
                    out.append(r)
            elif v.numerator * f[1] > f[0] * v.denominator:
                out.append(r)
        if "pods" in out[1:]:
            out.remove("pods")
            out.insert(0, "pods")
        return out

    def take(self, demand: dict[str, Fraction], sign: int = 1) -> None:
        used = self.used
        for r, v in demand.items():
            if not v and r in used:
                continue  # adds nothing (pods that request no cpu or memory: most of them)
            cur = used.get(r)
            add = v if sign == 1 else sign * v
            used[r] = add if cur is None else cur + add  # (0 + add is add: Fractions are immutable)
        self.version += 1
        self._takes += 1
        if self._versions is not None:
            self._versions[self.index] = self.version
        if self._takes_kept is not None:
            self._takes_kept[self.index] = self._takes


def pod_on(node: NodeState, pod):
    """The pod as this node serves it: its DRA-backed extended resources from the node's device
    plugin where the node's allocatable lists them (draopt.kube.extended_resources.on_node)."""
    return on_node(pod, node.allocatable) if getattr(pod, "extended_resources", None) else pod


# The taint the NodeUnschedulable filter checks a pod's tolerations against (DaemonSet pods have it).
_UNANSWERED: Any = object()  # (node_rejects' plain answers: not asked yet; None is an answer)
_UNSCHEDULABLE = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")

DEFAULT_SCHEDULER_NAME = "default-scheduler"


def scheduler_name(pod) -> str:
    """A pending pod's spec.schedulerName (default-scheduler when unset)."""
    extra = pod.pod.spec.__pydantic_extra__
    return (extra.get("schedulerName") if extra else None) or DEFAULT_SCHEDULER_NAME


def other_scheduler_reason(name: str, served) -> str:
    """Why a pod naming a scheduler that no profile serves is left pending."""
    return f"no scheduler profile {name!r} (spec.schedulerName; served: {', '.join(sorted(served))})"


class Cluster:
    # First-fit's fast paths (cached successful node answers, allocator skips): same answers,
    # less work; False gives the plain search (tests compare both).
    incremental: bool = True

    def __init__(self, objects: ObjectSet, features: Features, cel_env: Any, allocated_claims: list[ResourceClaim]):
        self.objects = objects
        self.features = features
        self.cel_env = cel_env
        self.classes = {c.name: c for c in objects.device_classes}
        self.index = slices_by_node(objects.resource_slices)
        names = [n.name for n in objects.nodes]
        twice = sorted({n for n in names if names.count(n) > 1}) if len(set(names)) != len(names) else []
        if twice:
            from draopt.errors import InputError

            raise InputError(f"Node {twice[0]}: given twice (field metadata.name): one object per name")
        self.nodes = [NodeState(n, i, _allocatable(n)) for i, n in enumerate(node_tree_order(objects.nodes))]
        self.by_name = {n.name: n for n in self.nodes}
        self.attach_versions()
        self.allocated: AllocatedState = allocated_state(allocated_claims, features)
        self.expr_cache: dict = {}
        self._inventories: dict[str, Inventory] = {}
        # Nodes that reach the same slices (pools every node reaches, none of their own) share one
        # set of pools and devices (incremental only): built once, and one allocation is one
        # object everywhere. Keyed by the allocated state too (copies of a cluster get their own).
        self._shared: dict[tuple, Inventory] = {}
        self._share_keys: dict[tuple, tuple | None] = {}
        # Whether a slice every node reaches selects nodes by name (_share_key; found on first use)
        self._selects_by_name: bool | None = None
        # node index -> node_rejects' answer for a pod with no selector, affinity or toleration
        # (made on first use: a copy of the cluster made before then gets its own)
        self._plain_rejects: dict[int, str | None] | None = None

    def inventory(self, node: NodeState) -> Inventory:
        inv = self._inventories.get(node.name)
        if inv is None:
            key = self._share_key(node) if self.incremental else None
            base = self._shared.get((id(self.allocated), key)) if key is not None else None
            if base is None:
                inv = build_inventory(
                    self.objects.resource_slices,
                    node.node,
                    [],
                    self.features,
                    self.objects.taint_rules,
                    index=self.index,
                    allocated=self.allocated,
                    # (the share key lists the slices that reach the node: not matched twice)
                    relevant=frozenset(key) if key is not None else None,
                )
                if key is not None:
                    self._shared[(id(self.allocated), key)] = inv
            else:
                inv = Inventory(
                    node=node.node,
                    pools=base.pools,
                    devices=base.devices,
                    by_id=base.by_id,
                    allocated=base.allocated,
                    memo=base.memo,
                )
            self._inventories[node.name] = inv
        return inv

    def _share_key(self, node: NodeState) -> tuple | None:
        """shared_slices_key, once per set of node labels (and name, if a slice selects by it)."""
        if self.index.get(node.name):
            return None
        by_name = self._selects_by_name
        if by_name is None:
            by_name = self._selects_by_name = any(
                s.spec.node_selector is not None
                and any(t.match_fields for t in s.spec.node_selector.node_selector_terms)
                for s in self.index.get("", [])
            )
        labels = (tuple(sorted((node.node.metadata.labels or {}).items())), node.name if by_name else None)
        if labels not in self._share_keys:
            self._share_keys[labels] = shared_slices_key(self.index, node.node, self.features)
        return self._share_keys[labels]

    # The schedulerNames kube-scheduler serves (its profiles): a pod naming another scheduler is
    # that scheduler's to place, and no node takes it here (draopt.placement sets the profiles).
    served_schedulers: frozenset[str] = frozenset({DEFAULT_SCHEDULER_NAME})

    def node_rejects(self, node: NodeState, pod) -> str | None:
        """The kube-scheduler's node filters other than resources and devices: unschedulable,
        nodeSelector, required node affinity, taints (NoSchedule/NoExecute not tolerated); and
        no node at all for a pod that names a scheduler no profile serves."""
        spec = pod.pod.spec
        if spec.__pydantic_extra__ and spec.__pydantic_extra__.get("schedulerName"):
            name = scheduler_name(pod)
            if name not in self.served_schedulers:
                return other_scheduler_reason(name, self.served_schedulers)
        if self.incremental and not pod.node_selector and spec.affinity is None and not spec.tolerations:
            # A pod with no selector, affinity or toleration: the answer is the node's alone.
            plain = self._plain_rejects
            if plain is None:
                plain = self._plain_rejects = {}
            got = plain.get(node.index, _UNANSWERED)
            if got is _UNANSWERED:
                got = plain[node.index] = self._node_rejects(node, pod)
            return got
        return self._node_rejects(node, pod)

    def _node_rejects(self, node: NodeState, pod) -> str | None:
        spec = pod.pod.spec
        if node.node.spec.unschedulable and not any(tolerates(t, _UNSCHEDULABLE) for t in spec.tolerations):
            return "node(s) were unschedulable"  # NodeUnschedulable: unless the pod tolerates the taint
        # TaintToleration runs before NodeAffinity in the default filter order (default_plugins.go)
        for taint in node.node.spec.taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in spec.tolerations):
                return "node(s) had untolerated taint(s)"  # TaintToleration (1.36, 1.37): the taint unnamed
        required = (
            spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
            if spec.affinity is not None and spec.affinity.node_affinity is not None
            else None
        )
        if not self.node_matches(node, pod.node_selector, required):
            return "node(s) didn't match Pod's node affinity/selector"
        return None

    def node_matches(self, node: NodeState, selector: dict[str, str], node_selector=None) -> bool:
        labels = node.node.metadata.labels or {}
        if any(labels.get(k) != v for k, v in selector.items()):
            return False
        if node_selector is not None and not node_selector_matches(node_selector, node.node):
            return False
        return True

    def attach_versions(self) -> None:
        """Cluster.versions and Cluster.takes: every node's version and take count in one array
        each, kept up to date by the nodes."""
        self.versions = np.array([n.version for n in self.nodes], dtype=np.int64)
        self.takes = np.array([n._takes for n in self.nodes], dtype=np.int64)
        for n in self.nodes:
            n._versions = self.versions
            n._takes_kept = self.takes

    def bump_all(self) -> None:
        """Shared devices changed: every node's cached answers are stale."""
        for n in self.nodes:
            n.version += 1
        self.versions += 1  # (the nodes' array: equal to their versions before, so after too)
