"""Fit checks on new nodes of one type, shared by the autoscalers' baselines (Karpenter's
provisioning, cluster-autoscaler's loop): what makes them fast on a whole trace.

* `TypeRun`: copies of one node type alone in a cluster and the first-fit simulation that fills
  them (draopt's kube-scheduler filter of one node, DRA allocator included); a pod is tried on one
  copy at a time (`Simulation.place(only=...)`) and taken back exactly (`retract`), so one run
  serves many estimates instead of a new simulation of the whole input per estimate.
* `NodeFills`: cluster-autoscaler's first-fit on new nodes of one type, a node being the sequence
  of shapes placed on it: whether it takes one more pod is tried once per (sequence, shape).
* `Shapes`: the pods to place grouped by shape (pods alike, as first-fit's kinds: the same claims
  up to their names, resources, node filters; a pod whose fit depends on other pods, or that
  shares a claim, is a shape of its own), and per (shape, node type) whether a new node of the
  type holds a pod of the shape at all, tried once per shape on one copy of each type. Nodes only
  fill up while the autoscalers plan, so a node that refused a pod of a shape refuses every later
  pod of that shape, and a type whose empty node refuses it never holds it.
"""

from __future__ import annotations

import copy
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.studies.ffd_estimate import _cluster_for, _daemon_pod_of, _with_types
from draopt.studies.node_types import NodeType


def alone_objects(objects: ObjectSet, templates: list[str], keys: set[str], ungang: bool) -> ObjectSet:
    """The input with only the template nodes (and the slices not pinned to another node), their
    pending DaemonSet pods and the pods `keys` (taken out of their PodGroups when `ungang`:
    Karpenter does not know gangs)."""
    out = copy.copy(objects)
    out.nodes = [n for n in objects.nodes if n.name in templates]
    out.resource_slices = [s for s in objects.resource_slices if s.spec.node_name in (None, "", *templates)]
    pods = [p for p in objects.pods if any(_daemon_pod_of(p, t) for t in templates)]
    daemons = {f"{p.namespace}/{p.name}" for p in pods}
    for pod in objects.pods:
        key = f"{pod.namespace}/{pod.name}"
        if key in keys and key not in daemons:
            if ungang and pod.spec.scheduling_group is not None:
                pod = pod.model_copy(deep=True)
                pod.spec.scheduling_group = None
            pods.append(pod)
    out.pods = pods
    out.creation_order = dict(objects.creation_order)
    return out


@dataclass
class TypeRun:
    """Copies of one node type alone in a cluster, and the first-fit run that fills them (`members`:
    copy -> the pods placed on it, in order; `slot`: Karpenter's planned node -> its copy, for the
    planned nodes that kept the type when they opened)."""

    run: Any  # draopt.cluster.firstfit.Simulation
    copies: list  # NodeState of copy j
    members: dict[int, list[str]] = field(default_factory=dict)
    slot: dict[int, int] = field(default_factory=dict)

    @classmethod
    def build(cls, alone: ObjectSet, t: NodeType, size: int, features: Features, tag: str = "kp") -> TypeRun:
        from draopt.cluster.firstfit import Simulation
        from draopt.dra.decode import decode, deterministic_share_id

        probe = NodeType(f"{t.name}-{tag}-probe", t.template, t.cost)
        objs, type_of, daemon_of = _with_types(alone, [(probe, size)])
        objs.nodes = [n for n in objs.nodes if n.name != t.template]
        objs.resource_slices = [s for s in objs.resource_slices if s.spec.node_name != t.template]
        objs.pods = [p for p in objs.pods if not _daemon_pod_of(p, t.template)]
        workload, cluster = _cluster_for(objs, features, type_of, [probe.name])
        run = Simulation.begin(cluster, workload, deterministic_share_id, decode, None, None)
        for pod, node in daemon_of.items():  # the DaemonSet controller's pods first, as on a new node
            run.place(run.demand_of[pod], only=cluster.by_name[node])
        copies = [cluster.by_name[f"{probe.name}-plan-{j}"] for j in range(size)]
        return cls(run, copies, {j: [] for j in range(size)})


@dataclass
class NodeFills:
    """cluster-autoscaler's first-fit on new nodes of one type: a node is also the sequence of the
    shapes placed on it (a state of a trie: `child`), and whether a node in a state takes a pod of
    a shape is kept (`answers`): pods of one shape are alike and the allocator is deterministic, so
    the answer depends on the sequence only. A node gets a copy of the type (`run.copies`) only when
    it is asked something not known yet: its pods are then placed there (the copy catches up) and
    the pod tried. Many nodes of an estimate fill alike; the answers serve every later estimate."""

    run: TypeRun
    shapes: Shapes
    child: dict[tuple[int, Hashable], int] = field(default_factory=dict)
    answers: dict[tuple[int, Hashable], bool] = field(default_factory=dict)

    def first_fit(self, keys: list[str], limit: int) -> tuple[dict[str, int], int] | None:
        """`keys` in that order, each on the first of the nodes opened so far that takes it, else on a
        new node while fewer than `limit` are open (every pod here fits an empty node). Returns (pod ->
        node, nodes opened), or None when the copies ran out (build a larger run). A node that
        refused a shape is not asked again for it (it only fills). The copies are empty after."""
        run, copies = self.run.run, self.run.copies
        states: list[int] = []  # node -> its state
        members: list[list[str]] = []  # node -> its pods, in order
        copy_of: dict[int, int] = {}  # node -> its copy, once it has one
        on_copy: dict[int, int] = {}  # node -> how many of its pods its copy holds
        placed: dict[str, int] = {}
        frontier: dict[Hashable, int] = {}
        taken: list = []
        try:
            for key in keys:
                shape = self.shapes.of(key)
                i = frontier.get(shape, 0)
                while i < len(states):
                    hit = self.answers.get((states[i], shape))
                    if hit is None:
                        c = copy_of.setdefault(i, len(copy_of))
                        if c >= len(copies):
                            return None
                        for k in members[i][on_copy.get(i, 0) :]:
                            if not _placed(run.place(run.demand_of[k], only=copies[c]), taken):
                                raise AssertionError(f"{k} no longer fits the copy of its node")
                        on_copy[i] = len(members[i])
                        hit = self.answers[(states[i], shape)] = _placed(
                            run.place(run.demand_of[key], only=copies[c]), taken
                        )
                        if hit:
                            on_copy[i] += 1
                    if hit:
                        break
                    i += 1
                frontier[shape] = i
                if i == len(states):
                    if len(states) >= limit:
                        continue
                    states.append(0)
                    members.append([])
                states[i] = self.child.setdefault((states[i], shape), len(self.child) + 1)
                members[i].append(key)
                placed[key] = i
        finally:
            for pl in reversed(taken):
                run.retract(pl)
        return placed, len(states)


def _placed(pl, taken: list) -> bool:
    if pl.placed:
        taken.append(pl)
    return bool(pl.placed)


@dataclass
class Shapes:
    """Pod -> shape, and (shape, node type name) -> why an empty node of the type refuses a pod of
    the shape (absent: it may hold it)."""

    shape: dict[str, Hashable] = field(default_factory=dict)
    never: dict[tuple[Hashable, str], str] = field(default_factory=dict)

    def of(self, key: str) -> Hashable:
        return self.shape.get(key, ("pod", key))

    def holds(self, key: str, type_name: str) -> bool:
        """False when an empty node of the type refuses the pod (so every node of it does)."""
        return (self.of(key), type_name) not in self.never

    @classmethod
    def probe(
        cls, objects: ObjectSet, node_types: list[NodeType], features: Features, keys: list[str], ungang: bool
    ) -> Shapes:
        """The shapes of the pods `keys`, and which types hold each shape alone: one pod of each
        shape tried on one copy of each type (and taken back). Where a device is not pinned to one
        node (what a pod takes may change what another node offers), no type is ruled out."""
        from draopt.cluster.firstfit import Simulation
        from draopt.dra.decode import decode, deterministic_share_id

        out = cls()
        if not keys:
            return out
        templates = [t.template for t in node_types]
        alone = alone_objects(objects, templates, set(keys), ungang)
        probes = [(NodeType(f"{t.name}-shape-probe", t.template, t.cost), 1) for t in node_types]
        objs, type_of, daemon_of = _with_types(alone, probes)
        objs.nodes = [n for n in objs.nodes if n.name not in templates]
        objs.resource_slices = [s for s in objs.resource_slices if s.spec.node_name not in templates]
        objs.pods = [p for p in objs.pods if not any(_daemon_pod_of(p, t) for t in templates)]
        workload, cluster = _cluster_for(objs, features, type_of, [p.name for p, _ in probes])
        run = Simulation.begin(cluster, workload, deterministic_share_id, decode, None, None)
        for pod, node in daemon_of.items():
            run.place(run.demand_of[pod], only=cluster.by_name[node])
        users: dict[str, int] = {}
        for d in workload.pending:
            for u in d.claims:
                users[u.key] = users.get(u.key, 0) + 1
        wanted = set(keys)
        first: dict[Hashable, Any] = {}
        for d in workload.pending:
            if d.key not in wanted:
                continue
            kind = run.kind(d)
            alone_ = kind is None or _reads_other_pods(d.pod) or any(users[u.key] > 1 for u in d.claims)
            out.shape[d.key] = ("pod", d.key) if alone_ else kind
            first.setdefault(out.shape[d.key], d)
        if not all(s.spec.node_name for s in objs.resource_slices):
            return out
        for shape, d in first.items():
            for t, (p, _) in zip(node_types, probes):
                pl = run.place(d, only=cluster.by_name[f"{p.name}-plan-0"])
                if pl.placed:
                    run.retract(pl)
                else:
                    out.never[(shape, t.name)] = pl.reason_text(1) or "does not fit"
        return out


def _reads_other_pods(pod) -> bool:
    """Whether where the pod fits depends on other pods: inter-pod affinity, topology spreading, a gang."""
    affinity = (pod.spec.affinity.model_extra or {}) if pod.spec.affinity is not None else {}
    extra = pod.spec.model_extra or {}
    return bool(
        affinity.get("podAffinity")
        or affinity.get("podAntiAffinity")
        or extra.get("topologySpreadConstraints")
        or pod.spec.scheduling_group is not None
    )
