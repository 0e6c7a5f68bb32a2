"""Pods kube-scheduler keeps out of its queue, and DRA objects the API server refuses.

A pending pod that a PreEnqueue plugin turns away never reaches a scheduling cycle: no policy may
place it, and no plan buys a node for it. Two plugins do this (pkg/scheduler/framework/plugins):

* ``SchedulingGates`` (schedulinggates/scheduling_gates.go, PreEnqueue): a pod with
  ``spec.schedulingGates`` (Kueue gates pods until it admits them). The API server gives such a
  pod the condition PodScheduled=False, reason SchedulingGated (pkg/registry/core/pod/strategy.go,
  applySchedulingGatedCondition);
* ``DynamicResources`` (dynamicresources/dynamicresources.go, PreEnqueue and
  foreachPodResourceClaim): a claim the pod uses does not exist (yet): a ``resourceClaimName`` that
  names no ResourceClaim, or a template's claim the resourceclaim controller could not make because
  the ResourceClaimTemplate is missing (pkg/controller/resourceclaim/controller.go, handleClaim,
  retries). The scheduler writes no condition for this.

The API server refuses a ResourceClaim or ResourceClaimTemplate with ``adminAccess`` in a namespace
without the ``resource.kubernetes.io/admin-access: "true"`` label (pkg/registry/resource/utils.go,
AuthorizedForAdmin), and an allocation with admin access there (AuthorizedForAdminStatus): such a
claim is never allocated, and its pods wait as for a missing one. A namespace that is not in the
input is not checked (as ``draopt validate`` says).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
SCHEDULING_GATES = "SchedulingGates"
DYNAMIC_RESOURCES = "DynamicResources"
SCHEDULING_GATED = "SchedulingGated"
# The PodScheduled message the API server writes on a gated pod (strategy.go).
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


@dataclass(frozen=True)
class Hold:
    """Why kube-scheduler keeps a pending pod out of its queue: the PreEnqueue plugin that said no."""

    plugin: str  # SCHEDULING_GATES | DYNAMIC_RESOURCES
    condition_reason: str  # the PodScheduled=False reason Kubernetes writes; "" when it writes none
    message: str  # what the pod waits for
    group: str = ""  # the PodGroup, when the pod waits for another member of it (group_hold)

    @property
    def text(self) -> str:
        """The reason as draopt reports it for a pod that is not placed."""
        if self.condition_reason == SCHEDULER_ERROR:
            return f"its PodGroup is refused before its cycle ({self.plugin}): {self.message}"
        return f"waiting outside the scheduling queue ({self.plugin} PreEnqueue): {self.message}"


def scheduling_gates(pod: Any) -> list[str]:
    """The names of the pod's spec.schedulingGates (kept as an unmodelled field of the spec)."""
    gates = (pod.spec.model_extra or {}).get("schedulingGates") or []
    return [g.get("name", "") if isinstance(g, dict) else str(g) for g in gates]


def gate_hold(pod: Any) -> Hold | None:
    if not scheduling_gates(pod):
        return None
    return Hold(SCHEDULING_GATES, SCHEDULING_GATED, GATED_MESSAGE)


def missing_claim_hold(what: str) -> Hold:
    """`what`: the object that does not exist, e.g. 'ResourceClaim ns/name not found'."""
    return Hold(DYNAMIC_RESOURCES, "", what)


def group_hold(group: str, member: str, hold: Hold) -> Hold:
    """A pending member of PodGroup `group` whose member `member` waits with `hold`: the group is one
    queue entity, gated while any of its pods is (pkg/scheduler/backend/queue/scheduling_queue.go,
    runPreEnqueuePlugins, 1.37). Kubernetes writes nothing on the pod itself."""
    return Hold(hold.plugin, "", f"PodGroup {group}: its pod {member} waits ({hold.message})", group)


PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"


def _spec_extra(spec: Any, name: str) -> Any:
    return (getattr(spec, "model_extra", None) or {}).get(name)


def preemption_policy(pod: Any, priority_classes: list[Any]) -> str:
    """spec.preemptionPolicy; unset: the one the Priority admission plugin copies from the pod's
    PriorityClass (the globalDefault class when the pod names none); else PreemptLowerPriority."""
    spec = pod.spec
    given = getattr(spec, "preemption_policy", None) or _spec_extra(spec, "preemptionPolicy")
    if given:
        return str(given)
    name = spec.priority_class_name
    for pc in priority_classes:
        if (pc.name == name) if name else bool(pc.global_default):
            if pc.preemption_policy:
                return str(pc.preemption_policy)
    return PREEMPT_LOWER_PRIORITY


BUILTIN_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"


@dataclass(frozen=True)
class AdmittedPriority:
    """What the Priority admission plugin writes into a new pod's spec: its priority and preemption
    policy, from the pod's PriorityClass (or the lowest global default class, else 0)."""

    value: int
    policy: str
    source: str  # "PriorityClass NAME", or how the default was found


def admitted_priorities(
    classes: list[tuple[str, int, bool, str | None]],
) -> tuple[dict[str, AdmittedPriority], AdmittedPriority]:
    """From (name, value, globalDefault, preemptionPolicy) per PriorityClass: the admitted priority per
    class name (the built-in system classes included), and the one a pod naming no class gets."""
    table = {
        n: AdmittedPriority(v, PREEMPT_LOWER_PRIORITY, f"PriorityClass {n}")
        for n, v in BUILTIN_PRIORITY_CLASSES.items()
    }
    default = AdmittedPriority(0, PREEMPT_LOWER_PRIORITY, "no globalDefault PriorityClass")
    for name, value, global_default, policy in classes:
        table[name] = AdmittedPriority(value, policy or PREEMPT_LOWER_PRIORITY, f"PriorityClass {name}")
        if global_default and (default.source.startswith("no ") or value < default.value):
            default = AdmittedPriority(value, table[name].policy, f"the globalDefault PriorityClass {name}")
    return table, default


def priority_refusal(
    given_priority: int | None,
    given_policy: str | None,
    class_name: str | None,
    table: dict[str, AdmittedPriority],
    default: AdmittedPriority,
) -> tuple[str, str] | None:
    """(field, why) when the Priority admission plugin (plugin/pkg/admission/priority) refuses to
    create a pod whose spec already gives a priority or preemption policy other than the ones it
    computes; None when it admits it. A class that does not exist is reported where it is read."""
    admitted = table.get(class_name) if class_name else default
    if admitted is None:
        return None
    if given_priority is not None and given_priority != admitted.value:
        return "spec.priority", (
            f"{given_priority} is not {admitted.value}, the priority of {admitted.source}: the API server "
            "refuses to create a pod that sets another value (leave it out)"
        )
    if given_policy and given_policy != admitted.policy:
        return "spec.preemptionPolicy", (
            f"{given_policy} is not {admitted.policy}, the preemption policy of {admitted.source}: the API "
            "server refuses to create a pod that sets another one (leave it out, or use a PriorityClass "
            f"with preemptionPolicy: {given_policy})"
        )
    return None


def invalid_pod_group(admitted_priority: int, pods: list, priority_classes: list[Any]) -> str:
    """kube-scheduler 1.37 refuses a PodGroup before its cycle (validatePodGroup): its pods (pending
    in queue order, then scheduled) must share the first one's schedulerName and preemption policy
    (PodGroupPreemptionPolicy off), and have the group's admitted priority. "" when valid."""
    first_name = first_policy = None
    for d in pods:
        name = _spec_extra(d.pod.spec, "schedulerName") or "default-scheduler"
        first_name = first_name or name
        if name != first_name:
            return (
                "all pods in a single pod group should have the same .spec.schedulerName set, "
                f'got: "{name}" and "{first_name}"'
            )
        if d.priority != admitted_priority:
            return (
                "all pods in a single pod group should have the same priority as the pod group's priority, "
                f"got {d.priority} and {admitted_priority}"
            )
        policy = preemption_policy(d.pod, priority_classes)
        first_policy = first_policy or policy
        if policy != first_policy:
            return f"all pods in a single pod group should have the same preemption policy, got {policy} and {first_policy}"
    return ""


GANG_SCHEDULING = "GangScheduling"
SCHEDULER_ERROR = "SchedulerError"
REFUSED_GROUP_PLUGIN = "validatePodGroup"  # (a step of the group's cycle, not a plugin)


def gang_count_hold(group: str, pods: int, min_count: int) -> Hold:
    """A gang with fewer pods than minCount: GangScheduling's PreEnqueue keeps each of them out of
    the queue (gangscheduling.go, PreEnqueue); Kubernetes writes nothing on the pods."""
    return Hold(GANG_SCHEDULING, "", f"PodGroup {group} has {pods} pod(s), fewer than its minCount {min_count}")


def refused_group_hold(error: str) -> Hold:
    """A PodGroup kube-scheduler 1.37 refuses before its cycle (schedule_one_podgroup.go,
    validatePodGroup): every cycle fails with `error`, written on the pods (SchedulerError)."""
    return Hold(REFUSED_GROUP_PLUGIN, SCHEDULER_ERROR, error)


def hold_groups_never_tried(groups: dict, pending: list, waiting: list, running: list, validate: bool, classes: list):
    """(pending, waiting) once the PodGroups kube-scheduler never tries are held: a gang with fewer
    pods than minCount (GangScheduling's PreEnqueue), and with `validate` (1.37) one that
    validatePodGroup refuses. Their pending pods move to `waiting`, out of their Gang's pods."""
    by_key = {d.key: d for d in pending + running}
    held: set[str] = set()
    for key, gang in groups.items():
        members = [by_key[k] for k in gang.pods if k in by_key]
        hold = None
        # GangScheduling's PreEnqueue counts every pod of the group (AllPodsCount): 1.36's queue
        # holds a gated member alone, so it counts; 1.37 holds the whole group then (group_hold)
        count = len(gang.pods) + (0 if validate else sum(1 for d in waiting if d.group == key))
        if gang.policy == "gang" and count < gang.min_count:
            hold = gang_count_hold(key, count, gang.min_count)
        elif validate:
            queued = [d for d in members if d.node_name is None]
            error = invalid_pod_group(
                gang.admitted_priority, queued + [d for d in members if d.node_name is not None], classes
            )
            hold = refused_group_hold(error) if error else None
        if hold is None:
            continue
        for d in members:
            if d.node_name is None:
                d.hold = hold
                held.add(d.key)
        gang.pods = [k for k in gang.pods if k not in held]
    if not held:
        return pending, waiting
    moved = [d for d in pending if d.key in held]
    return [d for d in pending if d.key not in held], sorted(waiting + moved, key=lambda d: d.queue_key)


def _requests_admin_access(spec: Any) -> bool:
    return any(r.exactly is not None and r.exactly.admin_access for r in spec.devices.requests)


def admin_access_refusal(
    kind: str, obj: Any, claim_spec: Any, namespace_labels: dict[str, dict[str, str]]
) -> str | None:
    """Why the API server refuses `obj` (a ResourceClaim or ResourceClaimTemplate, `kind`, whose claim
    spec is `claim_spec`) for admin access, or None. `namespace_labels`: the input's namespaces."""
    if not _requests_admin_access(claim_spec):
        return None
    labels = namespace_labels.get(obj.namespace)
    if labels is None or labels.get(ADMIN_ACCESS_LABEL) == "true":
        return None  # (a namespace not in the input is not checked)
    return (
        f"{kind} {obj.namespace}/{obj.name} asks for admin access, which needs the "
        f"`{ADMIN_ACCESS_LABEL}: true` label on namespace {obj.namespace!r}: the API server refuses it"
    )


def unchecked_admin_namespaces(objects: Any) -> list[str]:
    """The namespaces that claims or templates with admin access use but the input does not define:
    not checked (a note, as `draopt validate` gives)."""
    known = {n.name for n in objects.namespaces}
    out: dict[str, str] = {}
    for c in objects.resource_claims:
        if c.namespace not in known and c.status.allocation is None and _requests_admin_access(c.spec):
            out.setdefault(c.namespace, f"ResourceClaim {c.namespace}/{c.name}")
    for t in objects.claim_templates:
        if t.namespace not in known and _requests_admin_access(t.spec.spec):
            out.setdefault(t.namespace, f"ResourceClaimTemplate {t.namespace}/{t.name}")
    return [
        f"{ref} asks for admin access in namespace {ns!r}, which is not in the input: taken as labelled "
        f"`{ADMIN_ACCESS_LABEL}: true` (not checked)"
        for ns, ref in sorted(out.items())
    ]


def refused_objects(objects: Any, admin_access: bool) -> dict[int, str]:
    """id() of each unallocated ResourceClaim and each ResourceClaimTemplate the API server refuses
    for admin access -> why (`admin_access`: the DRAAdminAccess gate; off, the field is dropped)."""
    if not admin_access:
        return {}
    labels = {n.name: dict(n.metadata.labels) for n in objects.namespaces}
    out: dict[int, str] = {}
    for c in objects.resource_claims:
        if c.status.allocation is None:  # (an allocation made before is kept: AuthorizedForAdminStatus)
            why = admin_access_refusal("ResourceClaim", c, c.spec, labels)
            if why is not None:
                out[id(c)] = why
    for t in objects.claim_templates:
        why = admin_access_refusal("ResourceClaimTemplate", t, t.spec.spec, labels)
        if why is not None:
            out[id(t)] = why
    return out


__all__ = [
    "ADMIN_ACCESS_LABEL",
    "GATED_MESSAGE",
    "Hold",
    "admin_access_refusal",
    "gate_hold",
    "group_hold",
    "missing_claim_hold",
    "refused_objects",
    "scheduling_gates",
    "unchecked_admin_namespaces",
]


# The kinds whose served API versions differ between releases (draopt.kube.releases).
_VERSIONED = ("taint_rules", "pod_groups", "workloads", "composite_pod_groups")


def served_notes(objects: Any, version: str) -> list[str]:
    """A note per object in an apiVersion the API server of Kubernetes `version` does not serve
    (e.g. a scheduling.k8s.io/v1alpha2 PodGroup, as the DRA example driver's 1.36 demo writes it,
    read as 1.37): that server would refuse to create it. draopt reads it with its own version's
    fields, and says so."""
    from draopt.kube.releases import not_served

    notes = []
    for attr in _VERSIONED:
        for obj in getattr(objects, attr):
            if attr == "pod_groups" and f"{obj.namespace}/{obj.name}" in objects.simulated_groups:
                continue
            why = not_served(obj.kind, obj.api_version, version)
            if why is not None:
                notes.append(
                    f"{obj.ref}: {why}, and its API server refuses the object; read with the fields of "
                    f"{obj.api_version} (--kubernetes-version of a release that serves it gives that release's answer)"
                )
    return notes
