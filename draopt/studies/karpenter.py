"""Karpenter's provisioning as a baseline for `draopt plan`: what it would launch for the pods the
kube-scheduler leaves pending, with the node types of the plan (a template Node and a cost).

Sources read (kubernetes-sigs/karpenter, pkg/controllers/provisioning/scheduling/):

* queue.go @ 08de6e34f5285296bad321cd79207f4b8398a843: the pods in decreasing cpu, then memory
  request, by a stable sort (equal pods keep their queue order; that version compares memory
  but returns the cpu comparison, so there memory does not reorder pods of equal cpu: here it
  does, as the comparator's name says);
* scheduler.go @ 5ed25f098dd11609bf2353e4b74341b3b957a063 (`Solve`, `add`): each pod tries the
  nodes already planned (sorted by fewest pods first), else opens a new node (NodeClaim) with the
  instance types that can hold it; a pod no type holds is an error for that pod;
* nodeclaim.go @ 4688cedbc07ed93dbac2068db92aacec8c01ecc1 (`Add`): a pod joins a planned node when
  some of the node's remaining instance types hold the node's pods and the daemons' overhead with
  it; the node then keeps only those types. At launch the cloud provider takes the cheapest.

"Can hold" is decided by draopt's kube-scheduler simulation (one copy of the type with those pods,
DRA allocator included), after a cheap check of cpu, memory and pod count. Departures: one
NodePool with every node type (no weights, limits or requirements of its own); the queue's retries
(for pods whose affinity needs pods of the same batch) are not made; pods of a PodGroup are
checked without their gang (Karpenter does not know gangs), and the final simulation (which does)
says which are placed.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from fractions import Fraction

from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.studies.autoscalers import (
    AutoscalerBaseline,
    ScaleUp,
    SchedulerView,
    baseline_of,
    check_free_names,
    kube_scheduler_view,
)
from draopt.studies.ffd_estimate import _cluster_for, _daemon_pod_of, _with_types, with_copies
from draopt.studies.node_types import NodeType, check_node_types

PREFILTERED = ("cpu", "memory")


@dataclass
class PlannedNode:
    """A node Karpenter plans (a NodeClaim): its pods and the types that can still hold them all."""

    pods: list[str]
    types: list[NodeType]

    def cheapest(self, node_types: list[NodeType]) -> NodeType:
        return min(self.types, key=lambda t: (t.cost, node_types.index(t)))


def karpenter(
    objects: ObjectSet, node_types: list[NodeType], *, features: Features | None = None
) -> AutoscalerBaseline:
    """Karpenter's provisioning: the pending pods by decreasing cpu then memory; each joins the first
    planned node (fewest pods first) some of whose types still hold its pods with it, else a new
    node with every type that holds it alone; at the end each node launches the cheapest type it
    kept. Then the kube-scheduler simulation of the cluster with those nodes says what is placed."""
    t0 = time.perf_counter()
    check_node_types(objects, node_types)
    check_free_names(objects, node_types, "-kp", "-kp", "Karpenter")
    features = features or Features.from_gates()
    view = kube_scheduler_view(objects, features)
    wanted = list(view.pending)
    left = [k for k in wanted if k not in view.on_cluster]
    hold = HoldCheck(objects, node_types, features, view)
    planned: list[PlannedNode] = []
    refused: dict[str, str] = {}
    for key in _queue(left, view.resources):
        if not _join(key, planned, hold):
            types = [t for t in node_types if hold.holds(t, [key])]
            if types:
                planned.append(PlannedNode([key], types))
            else:
                refused[key] = hold.why_not(key)
    current, bought = _launch(objects, node_types, planned)
    final = kube_scheduler_view(current, features)
    notes = []
    meant = len(wanted) - len(refused)
    placed = sum(1 for k in wanted if k in final.on_cluster)
    if placed != meant:
        notes.append(
            f"Karpenter planned {meant} of the {len(wanted)} pending pods on the cluster and its new nodes; "
            f"the kube-scheduler, in its own queue order, places {placed}"
        )
    not_placed = {
        k: refused.get(k)
        or f"planned on a new node, but the kube-scheduler did not place it: {final.reasons.get(k, '')}"
        for k in wanted
        if k not in final.on_cluster
    }
    return baseline_of(
        "karpenter",
        current,
        wanted,
        node_types,
        bought,
        final,
        not_placed=not_placed,
        rounds=1 if planned else 0,
        seconds=time.perf_counter() - t0,
        scale_ups=[ScaleUp(n.cheapest(node_types).name, 1, len(n.pods)) for n in planned],
        notes=notes,
    )


def _queue(keys: list[str], resources: dict[str, dict]) -> list[str]:
    return sorted(keys, key=lambda k: (-Fraction(resources[k].get("cpu", 0)), -Fraction(resources[k].get("memory", 0))))


def _join(key: str, planned: list[PlannedNode], hold: HoldCheck) -> bool:
    """The pod joins the first planned node, fewest pods first (a stable sort: ties keep the order
    the nodes were opened in), some of whose types hold its pods with it."""
    planned.sort(key=lambda n: len(n.pods))
    for node in planned:
        pods = node.pods + [key]
        kept = [t for t in node.types if hold.holds(t, pods)]
        if kept:
            node.pods.append(key)
            node.types = kept
            return True
    return False


def _launch(objects: ObjectSet, node_types: list[NodeType], planned: list[PlannedNode]):
    """The input with each planned node launched as its cheapest type, named `{type}-kp-plan-N`;
    (objects, new node name -> type name)."""
    count = {t.name: 0 for t in node_types}
    for node in planned:
        count[node.cheapest(node_types).name] += 1
    bought: dict[str, str] = {}
    for t in node_types:
        if count[t.name]:
            prefix = f"{t.name}-kp"
            objects = with_copies(
                objects, t.template, count[t.name], prefix=prefix, flag=f"node type {t.name}: template"
            )
            bought.update({f"{prefix}-plan-{i}": t.name for i in range(count[t.name])})
    return objects, bought


class HoldCheck:
    """Whether a new node of a type holds a set of pending pods (and the type's DaemonSet pods):
    the cpu, memory and pod count first, then draopt's simulation of one copy of the type alone."""

    def __init__(self, objects: ObjectSet, node_types: list[NodeType], features: Features, view: SchedulerView):
        from draopt.kube.quantity import Quantity

        self.objects = objects
        self.features = features
        self.resources = view.resources
        self.by_key = {f"{p.namespace}/{p.name}": p for p in objects.pods}
        self.cache: dict[tuple[str, tuple[str, ...]], bool] = {}
        self.alone: dict[str, dict[str, str]] = {}  # pod -> type -> why a new node of it does not hold the pod
        self.room: dict[str, dict[str, Fraction]] = {}
        for t in node_types:
            node = next(n for n in objects.nodes if n.name == t.template)
            allocatable = {r: Fraction(Quantity.parse(v).value) for r, v in (node.status.allocatable or {}).items()}
            daemons = [f"{p.namespace}/{p.name}" for p in objects.pods if _daemon_pod_of(p, t.template)]
            for r in (*PREFILTERED, "pods"):
                if r in allocatable:
                    used = len(daemons) if r == "pods" else sum(Fraction(self.resources[d].get(r, 0)) for d in daemons)
                    allocatable[r] -= used
            self.room[t.name] = allocatable

    def holds(self, t: NodeType, keys: list[str]) -> bool:
        short = self._short(t, keys)
        if short:
            if len(keys) == 1:
                self.alone.setdefault(keys[0], {})[t.name] = short
            return False
        memo = (t.name, tuple(keys))
        if memo not in self.cache:
            self.cache[memo] = self._simulate(t, keys)
        return self.cache[memo]

    def why_not(self, key: str) -> str:
        reasons = self.alone.get(key, {})
        return "no node type holds it: " + "; ".join(f"{t}: {why}" for t, why in reasons.items())

    def _short(self, t: NodeType, keys: list[str]) -> str:
        """Why the pods cannot fit by cpu, memory or pod count ("" when they may)."""
        room = self.room[t.name]
        if "pods" in room and len(keys) > room["pods"]:
            return f"{len(keys)} pods, room for {room['pods']}"
        for r in PREFILTERED:
            if r in room:
                need = sum(Fraction(self.resources[k].get(r, 0)) for k in keys)
                if need > room[r]:
                    return f"needs {r} {float(need):g}, the node has {float(room[r]):g} left for pods"
        return ""

    def _simulate(self, t: NodeType, keys: list[str]) -> bool:
        """One copy of the type, alone in the cluster, with its DaemonSet pods and then `keys` in order."""
        from draopt.cluster.firstfit import simulate

        objs, type_of, daemon_of = _with_types(
            self._alone_with(t, keys), [(NodeType(f"{t.name}-kp-probe", t.template, t.cost), 1)]
        )
        objs.nodes = [n for n in objs.nodes if n.name != t.template]
        objs.resource_slices = [s for s in objs.resource_slices if s.spec.node_name != t.template]
        objs.pods = [p for p in objs.pods if not _daemon_pod_of(p, t.template)]
        workload, cluster = _cluster_for(objs, self.features, type_of, [f"{t.name}-kp-probe"])
        pending = {d.key: d for d in workload.pending}
        workload.pending = [pending[d] for d in daemon_of] + [pending[k] for k in keys]
        result = simulate(cluster, workload, explain_failures=None)
        where = {p.pod: p for p in result.pods}
        ok = all(where[k].node in type_of for k in keys)
        if not ok and len(keys) == 1:
            self.alone.setdefault(keys[0], {})[t.name] = (
                where[keys[0]].reason_text(len(cluster.nodes)) or "does not fit"
            )
        return ok

    def _alone_with(self, t: NodeType, keys: list[str]) -> ObjectSet:
        """The input with only the template node (and the slices not pinned to another node), its
        pending DaemonSet pods and the pods `keys` (taken out of their PodGroups)."""
        out = copy.copy(self.objects)
        out.nodes = [n for n in self.objects.nodes if n.name == t.template]
        out.resource_slices = [s for s in self.objects.resource_slices if s.spec.node_name in (None, "", t.template)]
        pods = [p for p in self.objects.pods if _daemon_pod_of(p, t.template)]
        for k in keys:
            pod = self.by_key[k]
            if pod.spec.scheduling_group is not None:
                pod = pod.model_copy(deep=True)
                pod.spec.scheduling_group = None
            pods.append(pod)
        out.pods = pods
        out.creation_order = dict(self.objects.creation_order)
        return out
