"""Karpenter's provisioning as a baseline for `draopt plan`: what it would launch for the pods the
kube-scheduler leaves pending, with the node types of the plan (a template Node and a cost).

Sources read (kubernetes-sigs/karpenter, pkg/controllers/provisioning/scheduling/):

* queue.go @ 08de6e34f5285296bad321cd79207f4b8398a843: the pods sorted, stably, by decreasing cpu
  and then memory request (`byCPUAndMemoryDescending`); equal pods keep the kube-scheduler's
  queue order here, where that version orders them by creation time and UID;
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

import math
import time
from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction

from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.placement import _no_gc_pauses
from draopt.studies.autoscalers import (
    AutoscalerBaseline,
    ScaleUp,
    SchedulerView,
    baseline_of,
    check_free_names,
    kube_scheduler_view,
)
from draopt.studies.ffd_estimate import _daemon_pod_of, with_copies
from draopt.studies.node_types import NodeType, check_node_types
from draopt.studies.type_runs import Shapes, TypeRun, alone_objects

PREFILTERED = ("cpu", "memory")


@dataclass
class PlannedNode:
    """A node Karpenter plans (a NodeClaim): its pods and the types that can still hold them all."""

    pods: list[str]
    types: list[NodeType]
    opened: int  # the how-manieth node planned

    def cheapest(self, node_types: list[NodeType]) -> NodeType:
        return min(self.types, key=lambda t: (t.cost, node_types.index(t)))


# (millions of long-lived objects: the cyclic collector would scan them again and again)
@_no_gc_pauses()
def karpenter(
    objects: ObjectSet,
    node_types: list[NodeType],
    *,
    features: Features | None = None,
    view: SchedulerView | None = None,
) -> AutoscalerBaseline:
    """Karpenter's provisioning: the pending pods by decreasing cpu then memory; each joins the first
    planned node (fewest pods first) some of whose types still hold its pods with it, else a new
    node with every type that holds it alone; at the end each node launches the cheapest type it
    kept. Then the kube-scheduler simulation of the cluster with those nodes says what is placed.
    `view`: the kube-scheduler's view of the input (`kube_scheduler_view`), when already made."""
    t0 = time.perf_counter()
    check_node_types(objects, node_types)
    check_free_names(objects, node_types, "-kp", "-kp", "Karpenter")
    features = features or Features.from_gates()
    view = view or kube_scheduler_view(objects, features)
    wanted = list(view.pending)
    left = [k for k in wanted if k not in view.on_cluster]
    hold = HoldCheck(objects, node_types, features, view, left)
    planned: list[PlannedNode] = []
    refused: dict[str, str] = {}
    for key in _queue(left, view.resources):
        if not _join(key, planned, hold):
            types = hold.accepts(len(planned), key, node_types)
            if types:
                planned.append(PlannedNode([key], types, len(planned)))
            else:
                refused[key] = hold.why_not(key)
    planned.sort(key=lambda n: n.opened)
    current, bought = _launch(objects, node_types, planned)
    final = kube_scheduler_view(current, features, list(bought))
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
    # (a planned node only fills up and keeps fewer types: once it refused a pod of a shape, it
    # refuses every later pod of that shape, which is not tried there again)
    refused = hold.refused.setdefault(hold.shapes.of(key), set())
    for node in planned:
        if node.opened in refused:
            continue
        kept = hold.accepts(node.opened, key, node.types)
        if kept:
            node.pods.append(key)
            node.types = kept
            return True
        refused.add(node.opened)
    return False


def _launch(objects: ObjectSet, node_types: list[NodeType], planned: list[PlannedNode]):
    """The input with each planned node launched as its cheapest type, named `{type}-kp-plan-N`;
    (objects, new node name -> type name, in the order the nodes were planned)."""
    count = {t.name: 0 for t in node_types}
    bought: dict[str, str] = {}
    for node in planned:
        t = node.cheapest(node_types)
        bought[f"{t.name}-kp-plan-{count[t.name]}"] = t.name
        count[t.name] += 1
    for t in node_types:
        if count[t.name]:
            objects = with_copies(
                objects, t.template, count[t.name], prefix=f"{t.name}-kp", flag=f"node type {t.name}: template"
            )
    return objects, bought


class HoldCheck:
    """Whether a planned node of a type takes one more pod: per node type, draopt's first-fit run on
    copies of the type alone (copy j stands for the j-th planned node and holds the pods that node
    took while the type was kept), which tries the pod on that one copy and keeps it there when it
    fits. The cpu, memory and pod count are checked first."""

    def __init__(self, objects: ObjectSet, node_types: list[NodeType], features: Features, view: SchedulerView, left):
        from draopt.kube.quantity import Quantity

        self.objects, self.features, self.resources, self.left = objects, features, view.resources, list(left)
        self.runs: dict[str, TypeRun] = {}
        self.shapes = Shapes.probe(objects, node_types, features, self.left, ungang=True)
        self.refused: dict[Hashable, set[int]] = {}  # shape -> planned nodes that refused a pod of it
        self.alone: dict[str, dict[str, str]] = {}  # pod -> type -> why a new node of it does not hold the pod
        self.room: dict[str, dict[str, Fraction]] = {}
        self.load: dict[tuple[str, int], dict[str, Fraction]] = {}  # (type, copy) -> pods' cpu, memory, count
        for t in node_types:
            node = next(n for n in objects.nodes if n.name == t.template)
            allocatable = {r: Fraction(Quantity.parse(v).value) for r, v in (node.status.allocatable or {}).items()}
            daemons = [f"{p.namespace}/{p.name}" for p in objects.pods if _daemon_pod_of(p, t.template)]
            for r in (*PREFILTERED, "pods"):
                if r in allocatable:
                    used = len(daemons) if r == "pods" else sum(Fraction(self.resources[d].get(r, 0)) for d in daemons)
                    allocatable[r] -= used
            self.room[t.name] = {r: v for r, v in allocatable.items() if r in (*PREFILTERED, "pods")}

    def accepts(self, j: int, key: str, types: list[NodeType]) -> list[NodeType]:
        """The types whose copy j takes pod `key` too (it stays there: the caller keeps only these
        types for node j, or, when none, the pod goes elsewhere)."""
        out = []
        for t in types:
            if not self.shapes.holds(key, t.name):
                self._refused(j, key, t, self.shapes.never[(self.shapes.of(key), t.name)])
                continue
            load = self.load.get((t.name, j), {})
            short = self._short(t, load, key)
            if short:
                self._refused(j, key, t, short)
                continue
            run = self._run(t, j)
            copy_ = run.slot.get(j, len(run.slot))  # a new node: the first copy not in use
            pl = run.run.place(run.run.demand_of[key], only=run.copies[copy_])
            if not pl.placed:
                self._refused(j, key, t, pl.reason_text(1) or "does not fit")
                continue
            run.slot[j] = copy_
            run.members[copy_].append(key)
            self.load[(t.name, j)] = {r: load.get(r, Fraction(0)) + self._amount(key, r) for r in self.room[t.name]}
            out.append(t)
        return out

    def why_not(self, key: str) -> str:
        reasons = self.alone.get(key, {})
        return "no node type holds it: " + "; ".join(f"{t}: {why}" for t, why in reasons.items())

    def _refused(self, j: int, key: str, t: NodeType, why: str) -> None:
        if not self.load.get((t.name, j)):  # a new node: why the type does not hold the pod alone
            self.alone.setdefault(key, {})[t.name] = why

    def _amount(self, key: str, r: str) -> Fraction:
        return Fraction(1) if r == "pods" else Fraction(self.resources[key].get(r, 0))

    def _short(self, t: NodeType, load: dict[str, Fraction], key: str) -> str:
        """Why the pod does not fit by cpu, memory or pod count ("" when it may)."""
        for r, room in self.room[t.name].items():
            need = load.get(r, Fraction(0)) + self._amount(key, r)
            if need > room:
                what = "pods" if r == "pods" else r
                return f"needs {what} {float(need):g} with the node's pods, the node has {float(room):g} for pods"
        return ""

    def _run(self, t: NodeType, j: int) -> TypeRun:
        """The type's run with a copy for planned node j (built again, twice as large, when every
        copy is in use; the copies' pods placed again in order)."""
        run = self.runs.get(t.name)
        if run is None or (j not in run.slot and len(run.slot) >= len(run.copies)):
            alone, need = self._alone_with(t)
            # First as many copies as the pods would fill by cpu, memory or count (rebuilding costs
            # the pods' expansion again), then twice as many.
            size = max(16, need + 1, 2 * len(run.copies) if run else 0)
            old = run
            run = self.runs[t.name] = TypeRun.build(alone, t, size, self.features)
            if old is not None:
                run.slot = dict(old.slot)
                for i, keys in sorted(old.members.items()):
                    for key in keys:
                        if not run.run.place(run.run.demand_of[key], only=run.copies[i]).placed:
                            raise AssertionError(f"karpenter: {key} no longer fits copy {i} of {t.name}")
                    run.members[i] = list(keys)
        return run

    def _alone_with(self, t: NodeType) -> tuple[ObjectSet, int]:
        """The input with only the template node (and the slices not pinned to another node), its
        pending DaemonSet pods and the pods to place that fit it alone (taken out of their
        PodGroups: Karpenter does not know gangs); and how many nodes those pods fill by cpu,
        memory or count."""
        # (pods too large for the type alone, or of a shape its empty node refuses, are never tried on it)
        wanted = {k for k in self.left if not self._short(t, {}, k) and self.shapes.holds(k, t.name)}
        need = 0
        for r, room in self.room[t.name].items():
            if room > 0:
                need = max(need, math.ceil(sum(self._amount(k, r) for k in wanted) / room))
        return alone_objects(self.objects, [t.template], wanted, ungang=True), need
