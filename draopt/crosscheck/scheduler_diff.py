"""draopt's first-fit placement against kube-scheduler's own (the scheduler oracle, fed by
draopt.crosscheck.scheduler_oracle.oracle_objects), on the same input, pod by pod and claim by claim.

draopt places the same input with ties broken toward the node kube-scheduler chose, when that
node is among draopt's best-scored ones: one random draw should not make every later pod differ,
and a node the scheduler chose that draopt did not score best is still a difference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draopt.kube.workload import EXTENDED_CLAIM_USE


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
    group: str = ""  # the PodGroup the pod belongs to ("" for none)
    gated: bool = False  # spec.schedulingGates set

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


def draopt_message(pl, n_nodes: int) -> str:
    """The PodScheduled message kube-scheduler would write for draopt's unplaced pod: the FitError's
    node reasons ending in '.', then the PostFilter's (preemption) message. A pod outside the queue
    in the oracle's words: the reason SchedulingGated, or the PreEnqueue plugin that holds it."""
    if pl.hold is not None:
        if pl.hold.group:
            return ""  # (the pod group is gated, not the pod: no condition, no gating plugin of its own)
        if pl.hold.condition_reason:
            return pl.hold.condition_reason
        return f"waiting at PreEnqueue plugin {pl.hold.plugin}"
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
            "" if pl.placed else pl.nominated_node or "",  # (binding clears it, as output_objects writes)
            k.get("nominatedNode", ""),
            ours_msg,
            theirs_msg,
            pl.pod in evicted_ours,
            pl.pod in evicted_k8s,
            pl.group or "",
            bool((outcome.workload.pod(pl.pod).pod.spec.model_extra or {}).get("schedulingGates")),
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
        mine = device_list(ours[key].to_k8s() if key in ours else None)
        other = device_list(theirs.get(key))
        if mine != other:
            out.append(Difference("device", key, ", ".join(mine), ", ".join(other)))
    return out


def device_list(allocation: dict[str, Any] | None) -> list[str]:
    if not allocation:
        return []
    results = (allocation.get("devices") or {}).get("results") or []
    return [f"{r.get('request')}={r.get('driver')}/{r.get('pool')}/{r.get('device')}" for r in results]
