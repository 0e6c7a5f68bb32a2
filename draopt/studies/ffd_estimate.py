"""Clusters with bought nodes (copies of a template Node with its slices and DaemonSet pods), and
what a first-fit-decreasing estimator would buy, one node type at a time, as the
cluster-autoscaler's binpacking estimator does (`draopt plan`'s side-by-side estimate)."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from fractions import Fraction
from collections.abc import Sequence
from typing import Any

from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.studies.node_types import NodeType


def with_copies(
    objects: ObjectSet,
    template: str,
    count: int,
    *,
    prefix: str | None = None,
    flag: str = "--node-template",
    daemon_pods: list | None = None,
) -> ObjectSet:
    """The objects plus `count` copies of node `template` and of the slices pinned to it.
    Copies are named `{prefix}-plan-{i}` (prefix: the template's name unless given); their
    slices and pools get the same suffix. `daemon_pods`: the pods that may be a DaemonSet's for
    the template (`daemonset_pods`, found once for many templates; None: every pod is looked at)."""
    node = next((n for n in objects.nodes if n.name == template), None)
    if node is None:
        raise InputError(f"{flag} {template}: no Node {template} in the input")
    tag = "" if prefix is None else f"-{prefix}"
    prefix = template if prefix is None else prefix
    out = copy.copy(objects)
    out.nodes = list(objects.nodes)
    out.resource_slices = list(objects.resource_slices)
    own = [s for s in objects.resource_slices if s.spec.node_name == template]
    daemons = [p for p in (objects.pods if daemon_pods is None else daemon_pods) if _daemon_pod_of(p, template)]
    if daemons:
        out.pods = list(objects.pods)
        out.creation_order = dict(objects.creation_order)
    for i in range(count):
        name = f"{prefix}-plan-{i}"
        n = node.model_copy(deep=True)
        n.metadata.name = name
        if "kubernetes.io/hostname" in n.metadata.labels:
            n.metadata.labels["kubernetes.io/hostname"] = name
        out.nodes.append(n)
        for s in own:
            c = s.model_copy(deep=True)
            c.metadata.name = f"{s.name}{tag}-plan-{i}"
            c.spec.node_name = name
            # Pools are per driver and name: a copied node's pool must not merge with the original.
            c.spec.pool.name = f"{s.spec.pool.name}{tag}-plan-{i}"
            out.resource_slices.append(c)
        for p in daemons:  # the DaemonSet controller makes its pod on the new node too
            out.pods.append(_daemon_pod_copy(p, template, name, out))
    return out


def _daemonset_owned(pod) -> bool:
    owners = (pod.metadata.model_extra or {}).get("ownerReferences") or []
    return any(isinstance(o, dict) and o.get("kind") == "DaemonSet" for o in owners)


def daemonset_pods(objects: ObjectSet) -> list:
    """The pods a DaemonSet owns: those `_daemon_pod_of` may accept (looked at once, not once per
    node type: the input may have 80,000 pods)."""
    return [p for p in objects.pods if _daemonset_owned(p)]


def _daemon_pod_of(pod, node: str) -> bool:
    """A pending pod a DaemonSet made for `node` (pinned to it by required node affinity)."""
    owners = (pod.metadata.model_extra or {}).get("ownerReferences") or []
    if pod.spec.node_name or not any(isinstance(o, dict) and o.get("kind") == "DaemonSet" for o in owners):
        return False
    na = pod.spec.affinity.node_affinity if pod.spec.affinity is not None else None
    req = na.required_during_scheduling_ignored_during_execution if na is not None else None
    return req is not None and any(
        f.key == "metadata.name" and f.values == [node] for t in req.node_selector_terms for f in t.match_fields
    )


def _daemon_pod_copy(pod, template: str, node: str, out: ObjectSet):
    from draopt.kube.controllers import generate_name

    owner = next(o for o in pod.metadata.model_extra["ownerReferences"] if o.get("kind") == "DaemonSet")
    c = pod.model_copy(deep=True)
    c.metadata.name = generate_name(f"{owner.get('name')}-", pod.namespace, str(owner.get("name")), hash_node(node))
    for t in c.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms:
        for f in t.match_fields:
            if f.key == "metadata.name" and f.values == [template]:
                f.values = [node]
    order = out.creation_order.get(f"{pod.namespace}/{pod.name}")
    if order is not None:
        out.creation_order[f"{c.namespace}/{c.name}"] = (order[0], order[1] + hash_node(node))
    return c


def hash_node(name: str) -> int:
    """A stable index for a node made by planning (DaemonSet pod names and order)."""
    import hashlib

    return 1_000_000 + int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)


def _with_types(objects: ObjectSet, counts: list[tuple[NodeType, int]]):
    """The objects plus `count` copies of each type; (objects, node -> type name,
    DaemonSet pod made for a copy -> its node)."""
    out, type_of, daemon_of = objects, {}, {}
    # A copy's DaemonSet pods come from the input's (those of earlier copies are pinned to them).
    daemons = daemonset_pods(objects)
    for t, count in counts:
        before = {f"{p.namespace}/{p.name}" for p in out.pods} if daemons else set()
        out = with_copies(
            out, t.template, count, prefix=t.name, flag=f"node type {t.name}: template", daemon_pods=daemons
        )
        for i in range(count):
            type_of[f"{t.name}-plan-{i}"] = t.name
        for p in out.pods if daemons else ():
            key = f"{p.namespace}/{p.name}"
            if key not in before:
                daemon_of[key] = next(
                    f.values[0]
                    # a copy's DaemonSet pod: _with_types gave it the required node affinity to its copy
                    for term in p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms  # type: ignore[union-attr]
                    for f in term.match_fields
                    if f.key == "metadata.name"
                )
    return out, type_of, daemon_of


def _cluster_for(
    objs: ObjectSet, features: Features, type_of: dict[str, str], order: list[str], after: Sequence[str] = ()
):
    """Workload and cluster, the input's nodes first (name order; those in `after` last, in that
    order), then the copies by type (in `order`) and index: first-fit opens copies in that order."""
    from draopt.placement import build_cluster
    from draopt.kube.workload import expand

    workload = expand(objs, features)
    cluster = build_cluster(objs, workload, features)
    rank = {name: i for i, name in enumerate(order)}
    late = {name: i for i, name in enumerate(after)}

    def key(n):
        if n.name in late:
            return (0, 1, late[n.name], "")
        if n.name not in type_of:
            return (0, 0, 0, n.name)
        t = type_of[n.name]
        return (1, rank[t], int(n.name[len(t) + len("-plan-") :]), "")

    cluster.nodes = sorted(cluster.nodes, key=key)
    for i, n in enumerate(cluster.nodes):
        n.index = i
    return workload, cluster


def _ffd_score(resources: dict, allocatable: dict) -> float:
    """The cluster-autoscaler's DecreasingPodOrderer score: cpu request / node cpu + memory
    request / node memory (kubernetes/autoscaler cluster-autoscaler/estimator/
    decreasing_pod_orderer.go @ 2fc0cb0ab57c0928896d8327a3e8e63613c2f32c)."""
    score = 0.0
    for r in ("cpu", "memory"):
        cap = allocatable.get(r)
        if cap:
            score += float(resources.get(r, 0) / cap)
    return score


@dataclass
class FfdEstimate:
    """What a first-fit-decreasing estimator buys with nodes of one type."""

    node_type: NodeType
    nodes: int  # new nodes with pods
    placed: int  # pending pods placed (input's pods)
    pods: int
    capped: bool = False  # stopped at max_nodes copies
    skipped: bool = False  # not estimated (plan: its time share ran out, or the baselines compare)
    placement: dict[str, Any] = field(default_factory=dict)  # pod -> PodPlacement
    used: set[str] = field(default_factory=set)  # copies with pods
    seconds: float = 0.0

    @property
    def cost(self) -> Fraction:
        return self.node_type.cost * self.nodes


def _scheduled_first(objects: ObjectSet, features: Features):
    """What the kube-scheduler does on the cluster as it is: (pending pods, those it places,
    the resources of those it leaves pending)."""
    from draopt.placement import build_cluster
    from draopt.cluster.firstfit import simulate
    from draopt.kube.workload import expand

    workload = expand(objects, features)
    base = simulate(build_cluster(objects, workload, features), workload, explain_failures=None)
    on_cluster = {p.pod for p in base.pods if p.placed}
    return [p.pod for p in base.pods], on_cluster, [d.resources for d in workload.pending if d.key not in on_cluster]


def ffd_estimate(
    objects: ObjectSet,
    node_type: NodeType,
    *,
    features: Features | None = None,
    max_nodes: int = 256,
    scheduled_first=None,
    after: Sequence[str] = (),
    deadline: float | None = None,
) -> FfdEstimate:
    """The cluster-autoscaler's binpacking estimate for one node type (kubernetes/autoscaler
    cluster-autoscaler/estimator/binpacking_estimator.go @ 006685c4641726f573c75e865d015404b8f408ea):
    the pods the kube-scheduler leaves pending on the cluster, sorted by decreasing score, each
    put on the first new node that takes it, a new node opened when none does. Every step is
    draopt's kube-scheduler simulation (first-fit, DRA allocator included). `scheduled_first`:
    what `_scheduled_first` gives (the same for every type); `after`: input nodes the simulation
    that gave it put after the others, in that order (draopt.studies.autoscalers: the nodes bought
    so far), so that the pods it placed go where it put them. `deadline` (perf_counter): past it,
    no simulation with more copies starts, and the estimate is returned `skipped` (not a partial
    figure)."""
    import time

    from draopt.cluster.firstfit import simulate
    from draopt.kube.quantity import Quantity

    t0 = time.perf_counter()
    features = features or Features.from_gates()
    real, on_cluster, left_resources = scheduled_first or _scheduled_first(objects, features)
    left = len(left_resources)
    template = next(n for n in objects.nodes if n.name == node_type.template)
    allocatable = {r: Quantity.parse(v).value for r, v in (template.status.allocatable or {}).items()}
    # Start from a bound on the nodes the left pods need (their cpu, memory and pod count against
    # the template's), plus one: usually one simulation suffices, else the copies double.
    need = 0
    for r in ("cpu", "memory", "pods"):
        cap = allocatable.get(r)
        if cap:
            need = max(need, math.ceil(sum(res.get(r, 0) for res in left_resources) / cap))
    k = min(left, max(8, need + 1 + need // 8), max_nodes)
    while True:
        objs, type_of, daemon_of = _with_types(objects, [(node_type, k)])
        wl, cluster = _cluster_for(objs, features, type_of, [node_type.name], after)
        by_key = {d.key: d for d in wl.pending}
        index = {n.name: n.index for n in cluster.nodes}
        daemons = sorted((by_key[p] for p in daemon_of), key=lambda d: index[daemon_of[d.key]])
        placed_first = [d for d in wl.pending if d.key in on_cluster]
        rest = [d for d in wl.pending if d.key not in on_cluster and d.key not in daemon_of]
        # Stable: equal scores keep the scheduler's queue order (Go's sort.Slice does not promise that).
        rest.sort(key=lambda d: -_ffd_score(d.resources, allocatable))
        wl.pending = daemons + placed_first + rest
        res = simulate(cluster, wl, explain_failures=None)
        placement = {p.pod: p for p in res.pods}
        used = {p.node for p in res.pods if p.placed and p.pod not in daemon_of and p.node in type_of and p.node}
        last_used = k > 0 and f"{node_type.name}-plan-{k - 1}" in used
        if not last_used or k >= left or k >= max_nodes:
            break
        if deadline is not None and time.perf_counter() > deadline:
            return FfdEstimate(node_type, 0, 0, len(real), skipped=True, seconds=time.perf_counter() - t0)
        k = min(2 * k, left, max_nodes)
    placed = sum(1 for key in real if placement[key].placed)
    return FfdEstimate(
        node_type,
        len(used),
        placed,
        len(real),
        capped=last_used and k >= max_nodes and k < left,
        placement={key: placement[key] for key in real} | {key: placement[key] for key in daemon_of},
        used=used,
        seconds=time.perf_counter() - t0,
    )
