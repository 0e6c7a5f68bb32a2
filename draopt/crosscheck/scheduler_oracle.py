"""The scheduler oracle: the real kube-scheduler (Go, in-process on a fake clientset) placing pods.

`run_scheduler_oracle` sends every object (as Kubernetes JSON dicts, the way `ObjectSet`
keeps them) to `draopt/crosscheck/oracles/scheduler` built for one minor version, and reads
back where each pod went, each scheduling attempt in order, the preemption victims, the
claims' allocations and the scheduler's node order.

The oracle runs no ResourceClaim controller: a pod that uses a ResourceClaimTemplate must come
with its generated claim and `status.resourceClaimStatuses`, or it stays pending at the DRA
plugin's PreEnqueue check (reason "PreEnqueue").
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from draopt.crosscheck.gobuild import oracle_binary
from draopt.errors import InputError
from draopt.kube.releases import at_least

if TYPE_CHECKING:
    from draopt.kube.features import Features
    from draopt.kube.loader import ObjectSet


@dataclass(frozen=True)
class OraclePod:
    namespace: str
    name: str
    node: str  # "" while pending
    nominated_node: str
    message: str  # the PodScheduled condition's message, "SchedulingGated", or a PreEnqueue note
    # Unschedulable, SchedulerError, SchedulingGated, PreEnqueue, Permit, BindingConditions (on the
    # node chosen, PreBind waiting for the devices' binding conditions), Deleted, NotCreated,
    # Succeeded or Failed (terminal pods, never shown to the scheduler), or ""
    reason: str
    deleted: bool = False  # a preemption victim

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class OracleAttempt:
    pod: str  # "ns/name"
    node: str  # the node bound to, "" for a failed attempt
    message: str
    # For a bind: the nodes sharing the best total score, in the order the scheduler scored them
    # (it takes the first: without extenders its tie-breaker is 0 for every node), and that score.
    # Empty when the pod was not scored (one feasible node, or an opportunistic-batching hint).
    best_nodes: tuple[str, ...] = ()
    score: int | None = None
    nominated_node: str = ""  # for a failure: the node nominated by preemption


@dataclass(frozen=True)
class OracleEviction:
    pod: str
    preemptor: str  # "ns/name" of the preempting pod or PodGroup; "" when not known
    preemptor_kind: str = ""  # "Pod" or "PodGroup"


@dataclass(frozen=True)
class OracleClaim:
    namespace: str
    name: str
    allocation: dict[str, Any] | None  # status.allocation (without allocationTimestamp)
    reserved_for: list[dict[str, Any]]


@dataclass(frozen=True)
class SchedulerOracleResult:
    version: str
    pods: list[OraclePod]
    attempts: list[OracleAttempt]
    evictions: list[OracleEviction]
    claims: list[OracleClaim]
    node_order: list[str]
    cycles: int = 0
    error: str = ""
    livelock: str = ""  # set when the run stopped because pods were retried without progress
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def pod(self, key: str) -> OraclePod:
        for p in self.pods:
            if p.key == key:
                return p
        raise KeyError(key)

    def placements(self) -> dict[str, str]:
        """ns/name -> node ("" pending) of the pods still there."""
        return {p.key: p.node for p in self.pods if not p.deleted}


class OracleError(RuntimeError):
    """The oracle ran but failed (timeout, crash); `result` holds what it reported, if anything."""

    def __init__(self, message: str, result: SchedulerOracleResult | None = None):
        super().__init__(message)
        self.result = result


def _parse(doc: dict[str, Any]) -> SchedulerOracleResult:
    return SchedulerOracleResult(
        version=doc.get("version", ""),
        pods=[
            OraclePod(
                namespace=p["namespace"],
                name=p["name"],
                node=p.get("node", ""),
                nominated_node=p.get("nominatedNode", ""),
                message=p.get("message", ""),
                reason=p.get("reason", ""),
                deleted=bool(p.get("deleted", False)),
            )
            for p in doc.get("pods") or []
        ],
        attempts=[
            OracleAttempt(
                a["pod"],
                a.get("node", ""),
                a.get("message", ""),
                tuple(a.get("bestNodes") or ()),
                a.get("score"),
                a.get("nominatedNode", ""),
            )
            for a in doc.get("attempts") or []
        ],
        evictions=[
            OracleEviction(e["pod"], e.get("preemptor", ""), e.get("preemptorKind", ""))
            for e in doc.get("evictions") or []
        ],
        claims=[
            OracleClaim(c["namespace"], c["name"], c.get("allocation"), list(c.get("reservedFor") or []))
            for c in doc.get("claims") or []
        ],
        node_order=list(doc.get("nodeOrder") or []),
        cycles=int(doc.get("cycles", 0)),
        error=doc.get("error", ""),
        livelock=doc.get("livelock", ""),
        raw=doc,
    )


def run_scheduler_oracle(
    objects: list[dict[str, Any]],
    *,
    minor: str,
    scheduler_config_text: str | None,
    gates: dict[str, bool],
    timeout: float,
) -> SchedulerOracleResult:
    """Run kube-scheduler `minor` ("1.36", "1.37") on `objects` until no pod can make progress.

    Raises OracleUnavailable (no Go, unsupported minor), InputError (the oracle refused the
    input, e.g. an object the API would reject), OracleError (a timeout or crash).
    """
    binary = oracle_binary("scheduler", minor)
    request = {
        "objects": objects,
        "schedulerConfig": scheduler_config_text,
        "gates": dict(gates),
        "timeoutSeconds": timeout,
    }
    try:
        proc = subprocess.run(
            [str(binary)],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=timeout + 30,
        )
    except subprocess.TimeoutExpired as e:
        raise OracleError(f"the scheduler oracle did not finish within {timeout + 30:.0f}s") from e
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise OracleError(
            f"the scheduler oracle exited {proc.returncode} without a JSON answer: {proc.stderr[-2000:]}"
        ) from e
    if proc.returncode == 2:
        raise InputError(f"scheduler oracle refused the input: {doc.get('error', '')}")
    result = _parse(doc)
    if proc.returncode != 0 or result.error:
        raise OracleError(f"scheduler oracle: {result.error or proc.stderr[-2000:]}", result)
    return result


def oracle_objects(objects: ObjectSet, features: Features | None = None) -> list[dict[str, Any]]:
    """draopt's view of an input as the oracle's `objects`: every object as Kubernetes JSON, plus what
    the ResourceClaim controller would have made, which the oracle does not run: the claims from
    ResourceClaimTemplates (named as draopt names them, see draopt.kube.workload) and the pods'
    (PodGroups') ``status.resourceClaimStatuses`` naming them. Extended-resource claims are left to
    the scheduler, which makes them itself. Pending pods come in draopt's queue order (creation time,
    then input order); the oracle adds them to the scheduler's queue in this order.
    """
    from draopt.kube import features as gates
    from draopt.kube.admission import refused_objects
    from draopt.kube.loader import node_allocatable_as_136
    from draopt.kube.workload import EXTENDED_CLAIM_USE, expand

    features = features or gates.Features.from_gates()
    workload = expand(objects, features)
    refused = refused_objects(objects, features.admin_access)  # the API server never stored them
    statuses: dict[str, dict[str, str]] = {}  # pod or podgroup key -> pod claim name -> claim name
    generated: dict[str, dict[str, Any]] = {}
    for demand in workload.running + workload.pending + workload.waiting:
        for use in demand.claims:
            if use.name == EXTENDED_CLAIM_USE or not use.generated:
                continue
            owner = use.for_group or demand.key
            statuses.setdefault(owner, {})[use.name] = use.key.split("/", 1)[1]
            if use.key not in generated:
                claim = workload.claims[use.key].to_k8s()
                claim["apiVersion"], claim["kind"] = "resource.k8s.io/v1", "ResourceClaim"
                generated[use.key] = claim

    def with_statuses(obj: Any) -> dict[str, Any]:
        doc = obj.to_k8s()
        names = statuses.get(f"{obj.namespace}/{obj.name}")
        if names:
            status = doc.setdefault("status", {})
            have = {s.get("name") for s in status.get("resourceClaimStatuses", [])}
            status.setdefault("resourceClaimStatuses", []).extend(
                {"name": n, "resourceClaimName": c} for n, c in names.items() if n not in have
            )
        return doc

    # 1.36 reads a device's node-allocatable resources in its own field (nodeAllocatableResourceMappings,
    # which draopt reads in 1.37's shape) and drops 1.37's as unknown
    since_137 = at_least(features.version, "1.37")
    out: list[dict[str, Any]] = []
    for group in (objects.namespaces, objects.priority_classes, objects.device_classes):
        out.extend(o.to_k8s() for o in group)
    out.extend(o.to_k8s() if since_137 else node_allocatable_as_136(o.to_k8s()) for o in objects.resource_slices)
    for later in (objects.nodes, objects.workloads, objects.composite_pod_groups):
        out.extend(o.to_k8s() for o in later)
    # DeviceTaintRule: resource.k8s.io/v1 from 1.37 on; 1.36 serves the same fields as v1beta2
    rule_version = "resource.k8s.io/v1" if since_137 else "resource.k8s.io/v1beta2"
    out.extend({**o.to_k8s(), "apiVersion": rule_version} for o in objects.taint_rules)
    out.extend(with_statuses(g) for g in objects.pod_groups)
    out.extend(o.to_k8s() for o in objects.resource_claims if id(o) not in refused)
    out.extend(o.to_k8s() for o in objects.claim_templates if id(o) not in refused)
    out.extend(generated.values())
    # The owners whose selectors default spreading reads (helper.DefaultSelector); draopt spreads
    # by owner instead (docs/scheduler.md), the same where each owner selects exactly its pods.
    out.extend(objects.selector_owners)
    order = {d.key: d.queue_key[1:] for d in workload.pending}
    pods = sorted(objects.pods, key=lambda p: order.get(f"{p.namespace}/{p.name}", ()))
    out.extend(with_statuses(p) for p in pods)
    return out
