"""The clock a cluster dump is read on: what the controllers do to the state before placement.

A dump is one moment. Some of its objects are on their way out, and Kubernetes' controllers act on
them without the scheduler:

* A Succeeded or Failed pod: the scheduler does not see it (its pod informer lists no terminal
  pod: ``pkg/scheduler/scheduler.go``, the ``status.phase!=Succeeded,status.phase!=Failed`` field
  selector), so its cpu/memory are free on either clock. Its claims keep their devices until the
  ResourceClaim controller drops the pod from ``status.reservedFor`` (``pkg/controller/
  resourceclaim/controller.go`` ``syncClaim``, ``isPodDone``) and, with no consumer left, clears
  ``status.allocation`` of a claim carrying the ``resource.kubernetes.io/delete-protection``
  finalizer (every claim the scheduler allocated has it; one without it keeps its allocation).
* A bound pod with ``metadata.deletionTimestamp``: its cpu/memory and devices are held until the
  kubelet has stopped it and the pod object is gone; then the ResourceClaim controller drops its
  reservations as above.
* A bound pod that does not tolerate one of its node's NoExecute taints: the taint-eviction
  controller deletes it at once, or after the smallest ``tolerationSeconds`` of the tolerations
  that matched the taints (``pkg/controller/tainteviction/taint_eviction.go`` ``processPodOnNode``,
  ``getMinTolerationTime``). A pod whose matching tolerations have no ``tolerationSeconds`` stays.
* Its controller replaces a departing pod: a ReplicaSet (or Job, by default) does not count a pod
  being deleted at all (``pkg/controller/controller_utils.go`` ``IsPodActive``), so the replacement
  exists on either clock, pending while the old pod holds what it needs; a StatefulSet or
  DaemonSet creates the pod again only once the old one is gone.

Two clocks (one for every command and the API):

* ``settled`` (the default): deletions under way finish, terminal pods release their claims,
  NoExecute evictions happen (after their ``tolerationSeconds``), and the controllers create the
  replacements. Each action is one note, ``settled: ...``.
* ``now`` (``--no-settle``, ``settle=False``): the scheduler's view at the moment of the dump.
  Terminating pods hold their resources; terminal pods are not counted for cpu/memory but their
  claims' devices are held. Notes ``now: ...`` say what holds resources only until it is gone.

:func:`departures` lists the pods that leave on the settled clock; :func:`apply` makes the
ObjectSet of a clock. The settled controllers' pods are made by ``draopt.kube.loader.finish`` (a
second expansion without the departing pods) and kept in ``ObjectSet.settled``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from draopt.errors import InputError
from draopt.kube.models import Node, Pod, ResourceClaim
from draopt.kube.models.core import Taint, Toleration
from draopt.kube.nodeselect import tolerates

if TYPE_CHECKING:
    from draopt.kube.object_set import ObjectSet

DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer
TERMINAL_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Departure:
    """A pod that is gone on the settled clock, and why (a phrase after its name)."""

    pod: str  # namespace/name
    node: str  # "" for a pod not bound
    why: str
    owner: str = ""  # "<Kind> namespace/name" of its controller, "" without one
    replaced: bool = True  # its controller makes a new pod for it (not when it deleted the pod itself)


@dataclass
class SettledPods:
    """The workload controllers' pods on the settled clock (loader.finish): made without the
    departing pods, in place of the pods they made on the `now` clock."""

    created: list[Pod] = field(default_factory=list)
    order: dict[str, tuple[str, int]] = field(default_factory=dict)
    replaced: set[str] = field(default_factory=set)  # keys of the pods made on the `now` clock


def _key(obj: Any) -> str:
    return f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"


def _extra(obj: Any, name: str) -> Any:
    return (obj.metadata.model_extra or {}).get(name)


def terminating(pod: Pod) -> bool:
    return _extra(pod, "deletionTimestamp") is not None


def terminal(pod: Pod) -> bool:
    return pod.status.phase in TERMINAL_PHASES


def _controller(pod: Pod) -> str:
    for ref in _extra(pod, "ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return f"{ref.get('kind')} {pod.metadata.namespace or 'default'}/{ref.get('name')}"
    return ""


def _taint_text(taint: Taint) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def eviction(pod: Pod, node: Node) -> str | None:
    """Why the taint-eviction controller deletes `pod` from `node` (None: it stays): the first
    NoExecute taint no toleration matches, else the smallest tolerationSeconds of the first
    toleration matching each taint (GetMatchingTolerations, getMinTolerationTime)."""
    taints = [t for t in node.spec.taints if t.effect == "NoExecute"]
    if not taints:
        return None
    used: list[Toleration] = []
    for taint in taints:
        match = next((t for t in pod.spec.tolerations if tolerates(t, taint)), None)
        if match is None:
            return f"does not tolerate node {node.name}'s NoExecute taint {_taint_text(taint)}"
        used.append(match)
    seconds = [t.toleration_seconds for t in used if t.toleration_seconds is not None]
    if not seconds:
        return None
    wait = max(0, min(seconds))
    said = ", ".join(_taint_text(t) for t in taints)
    return f"tolerates node {node.name}'s NoExecute taint(s) {said} for {wait}s (tolerationSeconds)"


def departures_of(objects) -> list[Departure]:
    """`departures` of an ObjectSet's pods, nodes and the pods their controllers delete."""
    return departures(objects.pods, objects.nodes, objects.deleted_by_controllers)


def departures(pods: list[Pod], nodes: list[Node], deleted: Mapping[str, str] | None = None) -> list[Departure]:
    """The pods, not terminal, that are gone on the settled clock, in input order: those being
    deleted (bound or not: a pending one is never scheduled), those their controller deletes
    (`deleted`: pod key -> why, ObjectSet.deleted_by_controllers) and those NoExecute taints evict."""
    by_name = {n.name: n for n in nodes}
    deleted = deleted or {}
    out = []
    for pod in pods:
        node_name = pod.spec.node_name or ""
        if terminal(pod):
            continue
        if terminating(pod):
            why = "is being deleted (metadata.deletionTimestamp)"
        elif _key(pod) in deleted:
            out.append(Departure(_key(pod), node_name, deleted[_key(pod)], _controller(pod), replaced=False))
            continue
        elif not node_name:
            continue
        else:
            node = by_name.get(node_name)
            reason = eviction(pod, node) if node is not None else None
            if reason is None:
                continue
            why = f"{reason}: the taint-eviction controller deletes it"
        out.append(Departure(_key(pod), node_name, why, _controller(pod)))
    return out


# ------------------------------------------------------------------ claims
def _reserved_by(ref: Any, pod: Pod) -> bool:
    if (ref.api_group or "") != "" or ref.resource != "pods" or ref.name != pod.metadata.name:
        return False
    return not ref.uid or not pod.metadata.uid or ref.uid == pod.metadata.uid


def _generated_for(claim: ResourceClaim, pod: Pod) -> bool:
    return any(
        isinstance(ref, dict) and ref.get("kind") == "Pod" and ref.get("name") == pod.metadata.name
        for ref in _extra(claim, "ownerReferences") or []
    )


def release_claims(
    claims: list[ResourceClaim], gone: dict[str, tuple[Pod, str]]
) -> tuple[list[ResourceClaim], list[str]]:
    """The claims after the ResourceClaim controller dropped the reservations of the pods in `gone`
    (key -> (pod, what happened to it)); one note per claim it changed."""
    out, notes = [], []
    for claim in claims:
        namespace = claim.metadata.namespace or "default"
        leaving = [gone[f"{namespace}/{r.name}"] for r in claim.status.reserved_for if f"{namespace}/{r.name}" in gone]
        leaving = [
            (pod, happened) for pod, happened in leaving if any(_reserved_by(r, pod) for r in claim.status.reserved_for)
        ]
        if not leaving:
            out.append(claim)
            continue
        released, note = _release(claim, leaving)
        out.append(released)
        notes.append(note)
    return out, notes


def _release(claim: ResourceClaim, leaving: list[tuple[Pod, str]]) -> tuple[ResourceClaim, str]:
    """syncClaim on one claim: the leaving pods' entries dropped; with no consumer left, the
    allocation cleared if the claim has the controller's finalizer."""
    remaining = [r for r in claim.status.reserved_for if not any(_reserved_by(r, pod) for pod, _ in leaving)]
    allocated = claim.status.allocation is not None
    protected = DELETE_PROTECTION in (_extra(claim, "finalizers") or [])
    deallocate = not remaining and allocated and protected
    status = claim.status.model_copy(
        update={"reserved_for": remaining, "allocation": None if deallocate else claim.status.allocation}
    )
    who = "; ".join(f"pod {_key(pod)} {happened}" for pod, happened in leaving)
    subject = f"settled: {who}; the ResourceClaim controller "
    dropped = f"drops {'it' if len(leaving) == 1 else 'them'} from claim {_key(claim)}'s reservedFor"
    if remaining:
        note = subject + f"{dropped} ({len(remaining)} consumer(s) left)"
    elif deallocate:
        generated = all(_generated_for(claim, pod) for pod, _ in leaving)
        note = (
            subject
            + f"deallocates claim {_key(claim)}"
            + (" and deletes it (generated for the pod)" if generated else "")
        )
    elif allocated:
        note = (
            subject + f"{dropped}; the claim keeps its allocation "
            f"(no {DELETE_PROTECTION} finalizer, which syncClaim requires to deallocate)"
        )
    else:
        note = subject + dropped
    return claim.model_copy(update={"status": status}), note


# ------------------------------------------------------------------ the two clocks
def allocated_by_pod(claims: list[ResourceClaim]) -> dict[str, list[ResourceClaim]]:
    """Allocated claims by the pods in their reservedFor ("namespace/name"), indexed once: a dump
    may have thousands of terminal pods and claims."""
    out: dict[str, list[ResourceClaim]] = {}
    for claim in claims:
        if claim.status.allocation is None:
            continue
        namespace = claim.metadata.namespace or "default"
        for ref in claim.status.reserved_for:
            if (ref.api_group or "") == "" and ref.resource == "pods":
                out.setdefault(f"{namespace}/{ref.name}", []).append(claim)
    return out


def claims_of(pod: Pod, index: dict[str, list[ResourceClaim]]) -> list[ResourceClaim]:
    """The allocated claims reserved for `pod` (by name, and UID where both are known)."""
    return [c for c in index.get(_key(pod), []) if any(_reserved_by(r, pod) for r in c.status.reserved_for)]


def _not_counted(owner: str) -> str:
    """What a terminating pod's controller does on either clock (IsPodActive; a Job unless its
    podReplacementPolicy is Failed)."""
    if owner.startswith("ReplicaSet "):
        return f"; its {owner} does not count it and creates its replacement at once"
    if owner.startswith("Job "):
        return f"; its {owner} replaces it at once unless its podReplacementPolicy is Failed"
    return ""


def _now_notes(objects: ObjectSet, leaving: list[Departure]) -> list[str]:
    pods = {_key(p): p for p in objects.pods}
    index = allocated_by_pod(objects.resource_claims)
    notes = []
    for d in leaving:
        if not d.node and terminating(pods[d.pod]):
            continue  # pending: the scheduler skips it on either clock (draopt.placement)
        if not d.node:
            notes.append(f"now (--no-settle): pod {d.pod} {d.why}; until then it is pending and may be placed")
            continue
        held = [_key(c) for c in claims_of(pods[d.pod], index)]
        devices = f" and the devices of claim(s) {', '.join(held)}" if held else ""
        notes.append(
            f"now (--no-settle): pod {d.pod} {d.why.split(': the taint-eviction')[0]}; it holds its cpu/memory"
            f"{devices} on node {d.node} until it is gone" + (_not_counted(d.owner) if terminating(pods[d.pod]) else "")
        )
    for pod in objects.pods:
        if terminal(pod):
            held = [_key(c) for c in claims_of(pod, index)]
            if held:
                notes.append(
                    f"now (--no-settle): pod {_key(pod)} is {pod.status.phase}: the scheduler does not count it, "
                    f"but claim(s) {', '.join(held)} keep their devices until the ResourceClaim controller "
                    f"deallocates them"
                )
    return notes


def _deletion_end(d: Departure) -> str:
    """Who finishes a deletion under way (an eviction's note names its controller already)."""
    if "taint-eviction" in d.why:
        return ""
    replaced = _not_counted(d.owner) if d.replaced else ""
    if d.node:
        return f"; the kubelet stops it on node {d.node} and the pod object is removed{replaced}"
    return f"; never scheduled, the pod object is removed{replaced}"


def apply(objects: ObjectSet, *, settle: bool = True) -> ObjectSet:
    """`objects` on the settled clock (a copy; the input is not changed), or as given with
    `settle=False`; the clock's notes in `clock_notes` of the result (none when `objects` is
    already on that clock: they were said when it was chosen)."""
    clock = "settled" if settle else "now"
    if objects.clock == clock:
        return dataclasses.replace(objects, clock_notes=[])
    if objects.clock:
        raise InputError(f"settle={settle}: these objects are already on the {objects.clock} clock; give them as read")
    leaving = departures_of(objects)
    if not leaving and objects.settled is None and not any(terminal(p) for p in objects.pods):
        return dataclasses.replace(objects, clock_notes=[], clock=clock)  # the clocks agree
    if not settle:
        return dataclasses.replace(objects, clock_notes=_now_notes(objects, leaving), clock=clock)
    gone_keys = {d.pod: d for d in leaving}
    notes = [f"settled: pod {d.pod} {d.why}{_deletion_end(d)}" for d in leaving]
    gone: dict[str, tuple[Pod, str]] = {}
    for pod in objects.pods:
        key = _key(pod)
        if key in gone_keys:
            gone[key] = (pod, "is gone")
        elif terminal(pod):
            gone[key] = (pod, f"is {pod.status.phase}")
    claims, claim_notes = release_claims(objects.resource_claims, gone)
    pods, order, made = _settled_pods(objects, set(gone_keys))
    return dataclasses.replace(
        objects,
        pods=pods,
        resource_claims=claims,
        creation_order=order,
        clock_notes=notes + made + claim_notes,
        settled=None,
        clock=clock,
    )


def _settled_pods(objects: ObjectSet, gone: set[str]) -> tuple[list[Pod], dict[str, tuple[str, int]], list[str]]:
    """The pods on the settled clock: the input's without the departed ones, and the workload
    controllers' settled expansion in place of their `now` one; a note per pod only it has."""
    settled: SettledPods | None = objects.settled
    if settled is None:
        return [p for p in objects.pods if _key(p) not in gone], objects.creation_order, []
    pods = [p for p in objects.pods if _key(p) not in gone and _key(p) not in settled.replaced]
    notes = []
    for pod in settled.created:
        if _key(pod) not in settled.replaced:
            owner = _controller(pod) or "its controller"
            notes.append(f"settled: the {owner.split(' ')[0]} controller creates pod {_key(pod)} ({owner})")
    return pods + settled.created, {**objects.creation_order, **settled.order}, notes
