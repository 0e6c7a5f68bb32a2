"""What kube-scheduler 1.37's pod-group cycle writes on the pods of a PodGroup it could not schedule.

Source (k8s.io/kubernetes v1.37.2): pkg/scheduler/schedule_one_podgroup.go
(podGroupSchedulingDefaultAlgorithm, completePodGroupAlgorithmResult, applyPodGroupPostFilterResult,
submitPodGroupAlgorithmResult), framework/plugins/gangscheduling (PlacementFeasible) and the
framework Status (Message joins the error and the reasons with ", ").

The cycle tries the group's pending pods in queue order and stops as soon as minCount is out of
reach (PlacementFeasible). Then each pod gets one of three messages:

* a pod that was tried and did not fit: its own FitError ("0/N nodes are available: ..."), without
  preemption's words (the group's PostFilter runs once, for the group);
* a pod that was not tried (after the stop): the group's status when it stopped;
* a pod that fitted in the trial (taken back with the group): "pod group is unschedulable, " then
  the group's status, then the PodGroupPostFilter's (preemption's) message.
"""

from __future__ import annotations

from dataclasses import dataclass

POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
# A gang with fewer pods than minCount: GangScheduling's PreEnqueue keeps them all out of the
# queue and the scheduler writes no condition; the crosscheck's oracle names the plugin so.
GANG_PRE_ENQUEUE = "waiting at PreEnqueue plugin GangScheduling"

# Kubernetes 1.36 (v1.36.3 schedule_one_podgroup.go, gangscheduling Permit, default_preemption.go):
# its cycle tries every pod, each with its own PostFilter, where DefaultPreemption declines a pod
# of a PodGroup (workload-aware preemption acts for the whole group); a gang's pods that fitted
# wait at Permit, and when the group fails they get Permit's message.
# (GangScheduling's Wait, then the framework's own reason for any Wait: RunPermitPlugins)
PERMIT_WAITING_136 = "waiting for minCount pods from a gang to be scheduled, one or more plugins asked to wait and no plugin rejected pod"
GROUP_POD_NOT_PREEMPTING_136 = "preemption: not eligible due to workload aware preemption enabled"


def member_message_136(fitted: bool, fit_error: str, has_claims: bool) -> str:
    """The PodScheduled message 1.36 writes on an unplaced pod of a PodGroup: one that fitted (its
    gang short of minCount) gets Permit's; one that did not fit its FitError, DynamicResources'
    PostFilter words and DefaultPreemption's."""
    if fitted:
        return f"{POD_GROUP_UNSCHEDULABLE}, {PERMIT_WAITING_136}"
    dra = "still not schedulable, " if has_claims else "no new claims to deallocate, "
    return f"{fit_error} {dra}{GROUP_POD_NOT_PREEMPTING_136}"


@dataclass(frozen=True)
class GangTrial:
    """Where PlacementFeasible stopped a gang's trial: the pods tried, and its status then."""

    tried: int
    scheduled: int
    remaining: int
    status: str  # "" when minCount was reached

    @property
    def feasible(self) -> bool:
        return not self.status


def gang_held_back(gang, pending: list, outside: list[str]) -> tuple[str, str] | None:
    """(message, explanation) when a gang never gets a cycle: fewer pods than minCount exist
    (GangScheduling's PreEnqueue keeps them all out of the queue), or fewer than minCount could
    enter it (`outside`: the pending pods gated, or of another scheduler): the group is never
    popped, and kube-scheduler writes nothing."""
    if gang.policy != "gang":
        return None
    if len(gang.pods) < gang.min_count:
        return GANG_PRE_ENQUEUE, (
            f"its PodGroup {gang.key} has {len(gang.pods)} pod(s), fewer than minCount {gang.min_count}: "
            "none enters the scheduling queue"
        )
    if outside and len(gang.pods) - len(outside) < gang.min_count:
        return "", (
            f"never tried: its PodGroup {gang.key} needs minCount {gang.min_count} pods in the scheduling queue; "
            f"{len(outside)} of its {len(gang.pods)} pods cannot enter it (gated, or of another scheduler: "
            f"{', '.join(outside)})"
        )
    return None


def word_failed_gang(workload, key: str, by_pod: dict, released: set[str], post_filter: str, n_nodes: int) -> None:
    """The messages kube-scheduler 1.37's pod-group cycle writes on a gang that did not reach
    minCount; `released`: the pods that fitted in its trial."""
    from draopt.cluster.result import fit_error_message

    gang = workload.groups[key]
    members = [p for p in workload.pending if p.group == key]
    fitted = [p.key in released for p in members]
    trial = gang_trial(fitted, len(gang.pods) - len(members), gang.min_count)
    if trial.feasible:
        return
    errors = [fit_error_message(by_pod[p.key].reason_text(n_nodes)) for p in members]
    for p, text in zip(members, member_messages(trial, fitted, errors, post_filter)):
        if by_pod[p.key].message is None:  # ("": a pod kube-scheduler never sees keeps none)
            by_pod[p.key].message = text


def invalid_pod_group(gang, pods: list, priority_classes: list) -> str:
    """kube-scheduler 1.37 refuses a PodGroup before trying it (validatePodGroup; the pods get the
    error, SchedulerError): its pods (pending in queue order, then scheduled) must share the first
    one's schedulerName and preemption policy (PodGroupPreemptionPolicy off), and have the group's
    admitted priority. "" when valid."""
    from draopt.cluster.evictions import _extra, preemption_policy

    first_name = first_policy = None
    for d in pods:
        name = _extra(d.pod.spec, "schedulerName") or "default-scheduler"
        first_name = first_name or name
        if name != first_name:
            return (
                "all pods in a single pod group should have the same .spec.schedulerName set, "
                f'got: "{name}" and "{first_name}"'
            )
        if d.priority != gang.admitted_priority:
            return (
                "all pods in a single pod group should have the same priority as the pod group's priority, "
                f"got {d.priority} and {gang.admitted_priority}"
            )
        policy = preemption_policy(d.pod, priority_classes)
        first_policy = first_policy or policy
        if policy != first_policy:
            return f"all pods in a single pod group should have the same preemption policy, got {policy} and {first_policy}"
    return ""


def min_count_status(min_count: int, scheduled: int, remaining: int) -> str:
    return f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"


def gang_trial(fitted: list[bool], running: int, min_count: int) -> GangTrial:
    """The trial of a gang's pending pods (`fitted`: whether each, in queue order, fitted), with
    `running` of its pods already scheduled, as PlacementFeasible checks it before the first pod and
    after each."""
    scheduled, remaining = running, len(fitted)
    if scheduled + remaining < min_count:
        return GangTrial(0, scheduled, remaining, min_count_status(min_count, scheduled, remaining))
    for i, ok in enumerate(fitted):
        remaining -= 1
        scheduled += ok
        if scheduled + remaining < min_count:
            return GangTrial(i + 1, scheduled, remaining, min_count_status(min_count, scheduled, remaining))
    return GangTrial(len(fitted), scheduled, remaining, "")


def member_messages(trial: GangTrial, fitted: list[bool], fit_errors: list[str], post_filter: str) -> list[str]:
    """The PodScheduled message of each pending pod of a gang whose cycle failed (queue order):
    `fit_errors` are the pods' own FitError messages (used for pods tried that did not fit),
    `post_filter` the PodGroupPostFilter's message ("" when none ran)."""
    out = []
    for i, ok in enumerate(fitted):
        if i >= trial.tried:
            out.append(trial.status)
        elif not ok:
            out.append(fit_errors[i])
        else:
            parts = [POD_GROUP_UNSCHEDULABLE, trial.status] + ([post_filter] if post_filter else [])
            out.append(", ".join(parts))
    return out


__all__ = [
    "GANG_PRE_ENQUEUE",
    "GangTrial",
    "gang_held_back",
    "word_failed_gang",
    "POD_GROUP_UNSCHEDULABLE",
    "gang_trial",
    "invalid_pod_group",
    "member_message_136",
    "member_messages",
    "min_count_status",
]
