"""Running pods taken off their nodes (preemption), and put back (its dry runs and reprieves).

What a running pod holds: its node resources (requests, as `build_cluster` counted them), and its
claims' devices. A claim's devices come free only when no pod still uses it: no other running pod
that is not evicted, no pod placed in this run, and no consumer outside the input (a PodGroup in
status.reservedFor, a pod draopt was not given) — the ResourceClaim controller deallocates a claim
when its status.reservedFor becomes empty (KEP-5729 "Deallocation"; KEP-4381).

Also the fields preemption reads from the objects that draopt's models keep raw: a pod's
preemptionPolicy and status.startTime, a PodGroup's disruptionMode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any


from draopt.cluster.state import pod_on
from draopt.kube.admission import PREEMPT_LOWER_PRIORITY, preemption_policy  # noqa: F401  (re-exported)

NEVER = "Never"

# pkg/scheduler/framework/preemption (executor.go): the condition the scheduler writes on a victim
# before deleting it.
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

_LATEST = datetime.max.replace(tzinfo=timezone.utc)


@dataclass
class Eviction:
    """One pod evicted by preemption: who evicted it, from where, and the condition Kubernetes writes."""

    pod: str  # namespace/name
    node: str
    priority: int  # the victim's priority as preemption compares it (its PodGroup's, if any)
    preemptor: str  # namespace/name of the pod, or of the PodGroup
    preemptor_kind: str  # "pod" | "podgroup"
    preemptor_priority: int
    scheduler_name: str = "default-scheduler"
    why: str = ""  # draopt's explanation: what the eviction makes room for

    @property
    def message(self) -> str:
        """The DisruptionTarget condition's message (preemption executor: '<schedulerName>: preempting
        to accommodate a higher priority <pod|podgroup>')."""
        return f"{self.scheduler_name}: preempting to accommodate a higher priority {self.preemptor_kind}"

    def condition(self) -> dict[str, str]:
        return {"type": DISRUPTION_TARGET, "status": "True", "reason": PREEMPTION_BY_SCHEDULER, "message": self.message}


def _extra(model: Any, name: str) -> Any:
    extra = getattr(model, "model_extra", None) or {}
    return extra.get(name)


def group_preemption_policy(group_obj: Any, members: list[Any], priority_classes: list[Any]) -> str:
    """A PodGroup's: its spec.preemptionPolicy (1.37, PodGroupPreemptionPolicy), else its pods' (which
    KEP-5710 requires to agree): Never if any member says Never."""
    given = _extra(group_obj.spec, "preemptionPolicy") if group_obj is not None else None
    if given:
        return str(given)
    if any(preemption_policy(m, priority_classes) == NEVER for m in members):
        return NEVER
    return PREEMPT_LOWER_PRIORITY


def start_time(pod: Any) -> datetime:
    """util.GetPodStartTime: status.startTime; a pod without one counts as started now (the latest)."""
    raw = _extra(pod.status, "startTime")
    if not raw:
        return _LATEST
    try:
        got = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        return _LATEST
    return got if got.tzinfo else got.replace(tzinfo=timezone.utc)


def disrupts_whole_group(group_obj: Any) -> bool:
    """PodGroup spec.disruptionMode: 1.37's union {all: {}} or 1.36's enum "PodGroup" means the group is
    evicted only whole; {single: {}}, "Pod" or unset (the default) means pod by pod (KEP-5710)."""
    if group_obj is None:
        return False
    mode = getattr(group_obj.spec, "disruption_mode", None)
    if mode is None:
        mode = _extra(group_obj.spec, "disruptionMode")
    if isinstance(mode, str):
        return mode in ("PodGroup", "All")
    if isinstance(mode, dict):
        return mode.get("all") is not None
    return getattr(mode, "all", None) is not None


class RunningPods:
    """The running pods of a first-fit run, which preemption may take off and put back.

    `placed_user(claim_key)`: whether a pod placed in this run uses the claim (then it stays).
    `changed(devices)`: called after every change (first-fit's caches; `devices`: the shared device
    state changed too)."""

    def __init__(
        self, cluster, workload, book, scheduler, placed_user: Callable[[str], bool], changed: Callable[[bool], None]
    ):
        self.cluster = cluster
        self.workload = workload
        self.book = book
        self.scheduler = scheduler
        self.placed_user = placed_user
        self.changed = changed
        self.live: dict[str, Any] = {p.key: p for p in workload.running if p.node_name in cluster.by_name}
        self.evicted: dict[str, Eviction] = {}
        self.devices_kept: set[str] = set()  # removed in a dry run that left their claims' devices taken
        self.users: dict[str, set[str]] = {}
        for p in self.live.values():
            for use in p.claims:
                self.users.setdefault(use.key, set()).add(p.key)
        known = {p.key for p in workload.pending} | {p.key for p in workload.running}
        self.external: set[str] = set()
        for key, claim in workload.claims.items():
            for ref in claim.status.reserved_for or []:
                if ref.resource != "pods" or f"{claim.namespace}/{ref.name}" not in known:
                    self.external.add(key)
        self._elsewhere: dict[str, bool] = {}
        self.on_node: dict[str, list[Any]] = {}
        for p in self.live.values():
            self.on_node.setdefault(p.node_name, []).append(p)

    def pods_on(self, node_name: str) -> list[Any]:
        return [p for p in self.on_node.get(node_name, ()) if p.key in self.live]

    def _results(self, key: str):
        alloc = self.workload.claims[key].status.allocation
        features = self.cluster.features
        for r in alloc.devices.results:
            consumed = {n: _q(v) for n, v in (r.consumed_capacity or {}).items()}
            share = bool(r.share_id) and features.consumable_capacity
            yield (r.driver, r.pool, r.device), bool(r.admin_access), share, consumed

    def remove(self, pod, *, notify: bool = True, free_devices: bool = True) -> bool:
        """Take a running pod off its node; its claims' devices come free if it was their last user.
        Returns whether devices other nodes reach came free; `notify`: tell first-fit now (else the
        caller does, once for many pods). `free_devices=False`: the pod's node resources come free but
        its claims keep their devices, as preemption's dry run sees a victim when DynamicResources has
        no PreFilterExtensions (kube-scheduler 1.36/1.37; KEP-5690 adds them)."""
        del self.live[pod.key]
        node = self.cluster.by_name[pod.node_name]
        resources = pod_on(node, pod).resources
        node.take(resources, -1)
        if self.scheduler is not None:
            self.scheduler.placed(pod, node, resources, -1)
        if free_devices:
            shared = self._release_claims(pod)
        else:
            self.devices_kept.add(pod.key)
            shared = False
        if notify:
            self.changed(shared)
        return shared

    def _release_claims(self, pod) -> bool:
        """The pod no longer uses its claims: the devices of those it was the last user of come free."""
        shared = False
        for use in pod.claims:
            users = self.users.get(use.key, set())
            users.discard(pod.key)
            if (
                users
                or use.key in self.external
                or use.key in self.book.freed
                or self.placed_user(use.key)
                or use.key in self.book.allocations
                or self.workload.claims[use.key].status.allocation is None
            ):
                continue
            for did, admin, share, consumed in self._results(use.key):
                self.cluster.allocated.remove_result(use.key, did, admin=admin, share=share, consumed=consumed)
            self.book.freed.add(use.key)
            shared = shared or self._reached_elsewhere(use.key, pod.node_name)
        return shared

    def restore(self, pod, *, notify: bool = True) -> bool:
        """Undo remove(): the pod back on its node, with its claims' devices."""
        self.live[pod.key] = pod
        node = self.cluster.by_name[pod.node_name]
        resources = pod_on(node, pod).resources
        node.take(resources)
        if self.scheduler is not None:
            self.scheduler.placed(pod, node, resources)
        shared = False
        if pod.key in self.devices_kept:  # removed without its devices: nothing to give back
            self.devices_kept.discard(pod.key)
            pod_claims: Sequence[Any] = ()
        else:
            pod_claims = pod.claims
        for use in pod_claims:
            self.users.setdefault(use.key, set()).add(pod.key)
            if use.key not in self.book.freed:
                continue
            for did, admin, share, consumed in self._results(use.key):
                if not admin and not share and did in self.cluster.allocated.devices:
                    raise RuntimeError(
                        f"internal: device {'/'.join(did)} of {use.key} was given away while "
                        f"{pod.key} was evicted in a dry run"
                    )
                self.cluster.allocated.add_result(use.key, did, admin=admin, share=share, consumed=consumed)
            self.book.freed.discard(use.key)
            shared = shared or self._reached_elsewhere(use.key, pod.node_name)
        if notify:
            self.changed(shared)
        return shared

    def remove_many(self, pods, *, free_devices: bool = True) -> None:
        shared = False
        for p in pods:
            shared = self.remove(p, notify=False, free_devices=free_devices) or shared
        self.changed(shared)

    def restore_many(self, pods) -> None:
        shared = False
        for p in pods:
            shared = self.restore(p, notify=False) or shared
        self.changed(shared)

    def _reached_elsewhere(self, key: str, node_name: str) -> bool:
        """Whether the claim's devices are reachable from other nodes (not all on the node's own slices)."""
        got = self._elsewhere.get(key)
        if got is None:
            alloc = self.workload.claims[key].status.allocation
            inv = self.cluster.inventory(self.cluster.by_name[node_name])
            got = self._elsewhere[key] = any(
                (e := inv.by_id.get((r.driver, r.pool, r.device))) is None or e.slice.spec.node_name != node_name
                for r in alloc.devices.results
            )
        return got

    def evict(self, pod, record: Eviction) -> None:
        """remove(), for good (the pod must be removed already or is removed now): its claims'
        devices come free when it was their last user, also after a dry run that kept them."""
        if pod.key in self.live:
            self.remove(pod)
        elif pod.key in self.devices_kept:
            self.devices_kept.discard(pod.key)
            self.changed(self._release_claims(pod))
        self.evicted[pod.key] = record

    def holds_devices(self, pod) -> bool:
        """Whether the pod holds devices another node can reach too (not node-local)."""
        return any(
            self.workload.claims[u.key].status.allocation is not None and self._reached_elsewhere(u.key, pod.node_name)
            for u in pod.claims
        )


def _q(v: str):
    from draopt.kube.quantity import Quantity

    return Quantity.parse(v).value
