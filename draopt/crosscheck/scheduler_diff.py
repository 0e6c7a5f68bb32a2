"""draopt's first-fit placement against kube-scheduler's own, on the same input.

The scheduler oracle (`draopt/crosscheck/oracles/scheduler/`, kube-scheduler linked from the
released k8s.io/kubernetes module) gets what the scheduler would see: the cluster's objects, with
the pods that draopt's workload expansion made (Deployments, Jobs, JobSets ...) and the claims it
generated from ResourceClaimTemplates (the ResourceClaim controller's work, which the oracle does
not run). Pending pods go in in draopt's queue order (their creation order in a real cluster).

draopt then places the same input with ties broken toward the node kube-scheduler chose, when that
node is among draopt's best-scored ones: one random draw should not make every later pod differ,
and a node the scheduler chose that draopt did not score best is still a difference.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from draopt.kube.workload import EXTENDED_CLAIM_USE

_SELECTOR_OWNERS = frozenset(("ReplicaSet", "StatefulSet", "ReplicationController"))


@dataclass(frozen=True)
class Difference:
    """One way draopt's answer differs from kube-scheduler's."""

    kind: str  # node | pending | nominated | reason | eviction | device | claim
    subject: str  # the pod's or claim's namespace/name
    draopt: str
    kubernetes: str

    def text(self) -> str:
        return f"{self.kind:<9} {self.subject}: draopt {self.draopt or '-'}; kubernetes {self.kubernetes or '-'}"


@dataclass(frozen=True)
class PodComparison:
    """One pod's answer from both sides (node '' = pending)."""

    pod: str
    draopt_node: str
    kubernetes_node: str
    draopt_nominated: str
    kubernetes_nominated: str
    draopt_message: str
    kubernetes_message: str
    evicted_by_draopt: bool
    evicted_by_kubernetes: bool

    @property
    def same(self) -> bool:
        return (
            self.draopt_node == self.kubernetes_node
            and self.evicted_by_draopt == self.evicted_by_kubernetes
            and (self.draopt_node != "" or self.draopt_message == self.kubernetes_message)
        )


@dataclass
class PlacementComparison:
    pods: list[PodComparison] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)


def pod_uid(namespace: str, name: str) -> str:
    """A stable UID for a pod the input gives none (manifests): generated claims name their owner by it."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"draopt:pod/{namespace}/{name}"))


def oracle_objects(objects, workload) -> list[dict[str, Any]]:
    """The objects kube-scheduler would see for this input, as the oracle reads them (JSON dicts)."""
    out: list[dict[str, Any]] = []
    for kind in (
        "namespaces",
        "priority_classes",
        "device_classes",
        "taint_rules",
        "resource_slices",
        "nodes",
        "workloads",
        "composite_pod_groups",
        "pod_groups",
    ):
        out += [o.to_k8s() for o in getattr(objects, kind, [])]
    # The owners default spreading reads their selectors from (helper.DefaultSelector); draopt
    # spreads by owner instead (docs/scheduler.md), which matches when each owner selects its pods.
    out += [doc for doc, _ in getattr(objects, "controllers", []) if doc.get("kind") in _SELECTOR_OWNERS]
    uids: dict[str, str] = {}
    pods = _pod_documents(objects, workload, uids)
    out += _claim_documents(objects, workload, uids)
    out += pods
    return out


def _pod_documents(objects, workload, uids: dict[str, str]) -> list[dict[str, Any]]:
    """Running pods first, then pending ones in draopt's queue order; generated claims recorded in
    status.resourceClaimStatuses as the ResourceClaim controller records them."""
    demands = {d.key: d for d in workload.running + workload.pending}
    order = {d.key: i for i, d in enumerate(workload.running + workload.pending)}
    pods = sorted(objects.pods, key=lambda p: order.get(f"{p.namespace}/{p.name}", -1))
    out = []
    for pod in pods:
        key = f"{pod.namespace}/{pod.name}"
        doc = pod.to_k8s()
        meta = doc.setdefault("metadata", {})
        meta.setdefault("namespace", pod.namespace)
        meta.setdefault("uid", pod_uid(pod.namespace, pod.name))
        uids[key] = meta["uid"]
        demand = demands.get(key)
        generated = [
            {"name": u.name, "resourceClaimName": u.key.split("/", 1)[1]}
            for u in (demand.claims if demand is not None else ())
            if u.generated and u.name != EXTENDED_CLAIM_USE and u.for_group is None
        ]
        if generated:
            status = doc.setdefault("status", {})
            known = {s.get("name") for s in status.get("resourceClaimStatuses") or []}
            status["resourceClaimStatuses"] = list(status.get("resourceClaimStatuses") or []) + [
                g for g in generated if g["name"] not in known
            ]
        out.append(doc)
    return out


def _claim_documents(objects, workload, uids: dict[str, str]) -> list[dict[str, Any]]:
    """The input's claims and those draopt generated from templates (owner UIDs filled in where the
    input's pod had none). Extended-resource claims are left out: the scheduler makes its own."""
    given = {f"{c.namespace}/{c.name}" for c in objects.resource_claims}
    extended = {u.key for d in workload.running + workload.pending for u in d.claims if u.name == EXTENDED_CLAIM_USE}
    out = [c.to_k8s() for c in objects.resource_claims]
    for key, claim in workload.claims.items():
        if key in given or key in extended:
            continue
        doc = claim.to_k8s()
        ns = doc.get("metadata", {}).get("namespace") or claim.namespace
        for ref in doc.get("metadata", {}).get("ownerReferences") or []:
            if ref.get("kind") == "Pod" and not ref.get("uid"):
                ref["uid"] = uids.get(f"{ns}/{ref.get('name')}", pod_uid(ns, ref.get("name", "")))
        out.append(doc)
    return out


def draopt_message(pl, n_nodes: int) -> str:
    """The PodScheduled message kube-scheduler would write for draopt's unplaced pod: the FitError's
    node reasons ending in '.', then the PostFilter's (preemption) message."""
    head = pl.reason_text(n_nodes)
    if head and not head.endswith("."):
        head += "."
    return head + (f" {pl.preemption}" if pl.preemption else "")


def compare_placement(outcome, oracle: dict[str, Any]) -> PlacementComparison:
    """Pod by pod (node, pending reason, nominated node, eviction), then claim by claim (devices)."""
    result = outcome.result
    n_nodes = len(outcome.cluster.nodes)
    theirs = {f"{p['namespace']}/{p['name']}": p for p in oracle.get("pods") or []}
    evicted_k8s = {e["pod"] for e in oracle.get("evictions") or []}
    evicted_ours = {e.pod for e in result.evictions}
    cmp = PlacementComparison()
    for pl in result.pods:
        k = theirs.get(pl.pod, {})
        ours_msg = "" if pl.placed else draopt_message(pl, n_nodes)
        theirs_msg = k.get("message", "") if not k.get("node") else ""
        row = PodComparison(
            pl.pod,
            pl.node or "",
            k.get("node", ""),
            pl.nominated_node or "",
            k.get("nominatedNode", ""),
            ours_msg,
            theirs_msg,
            pl.pod in evicted_ours,
            pl.pod in evicted_k8s,
        )
        cmp.pods.append(row)
        if not k:
            cmp.differences.append(Difference("pending", pl.pod, pl.node or "pending", "not reported"))
        elif row.draopt_node != row.kubernetes_node:
            kind = "node" if row.draopt_node and row.kubernetes_node else "pending"
            cmp.differences.append(
                Difference(kind, pl.pod, row.draopt_node or "pending", row.kubernetes_node or "pending")
            )
        elif not row.draopt_node and _reasons(ours_msg) != _reasons(theirs_msg):
            cmp.differences.append(Difference("reason", pl.pod, ours_msg, theirs_msg))
        if row.draopt_node == row.kubernetes_node and row.draopt_nominated != row.kubernetes_nominated:
            cmp.differences.append(Difference("nominated", pl.pod, row.draopt_nominated, row.kubernetes_nominated))
    for pod in sorted(evicted_ours ^ evicted_k8s):
        cmp.differences.append(
            Difference(
                "eviction",
                pod,
                "evicted" if pod in evicted_ours else "kept",
                "evicted" if pod in evicted_k8s else "kept",
            )
        )
    cmp.differences += _claim_differences(
        outcome, oracle, {r.pod for r in cmp.pods if r.draopt_node == r.kubernetes_node}
    )
    return cmp


def _reasons(message: str) -> str:
    """The scheduler's message without draopt's device-level explanation lines."""
    return message.split("\n", 1)[0].strip()


def _claim_differences(outcome, oracle: dict[str, Any], agreed_pods: set[str]) -> list[Difference]:
    """Devices of the pending pods' claims, where both sides placed all their pods alike (a pod on
    another node is one difference already; its devices follow from it). Claims allocated before the
    run are the input's, the same on both sides."""
    ours = {key: alloc for key, (alloc, _) in outcome.result.claims.items()}
    theirs = {
        f"{c['namespace']}/{c['name']}": c.get("allocation")
        for c in oracle.get("claims") or []
        if c.get("allocation") is not None
    }
    users: dict[str, set[str]] = {}
    for d in outcome.workload.pending:
        for u in d.claims:
            if u.name != EXTENDED_CLAIM_USE:
                users.setdefault(u.key, set()).add(d.key)
    out = []
    for key in sorted(users):
        if not users[key] <= agreed_pods or outcome.workload.claims[key].status.allocation is not None:
            continue
        mine = _devices(ours[key].to_k8s() if key in ours else None)
        other = _devices(theirs.get(key))
        if mine != other:
            out.append(Difference("device", key, ", ".join(mine), ", ".join(other)))
    return out


def _devices(allocation: dict[str, Any] | None) -> list[str]:
    if not allocation:
        return []
    results = (allocation.get("devices") or {}).get("results") or []
    return [f"{r.get('request')}={r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in results]
