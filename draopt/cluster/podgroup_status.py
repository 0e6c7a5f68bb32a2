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

With the TopologyAwareWorkloadScheduling gate on, every PodGroup goes through the placement algorithm
(podGroupSchedulingPlacementAlgorithm), a group without a topology constraint in one placement (the
parent's, every node): when it fails, the group's status is the placement algorithm's
(`placements_status`), which wraps the status of its one placement's trial.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"

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
    return f"{fit_error} {dynamic_resources_post_filter_136(has_claims)}{GROUP_POD_NOT_PREEMPTING_136}"


def dynamic_resources_post_filter_136(has_claims: bool) -> str:
    """1.36's DynamicResources PostFilter words, before DefaultPreemption's: it has no claim of the
    pod it could deallocate (dynamicresources.go, v1.36.3); 1.37 has no such PostFilter."""
    return "still not schedulable, " if has_claims else "no new claims to deallocate, "


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


# Kubernetes 1.37 (v1.37.2 dynamicresources.go PodGroupPostFilter, runtime RunPodGroupPostFilterPlugins):
# DynamicResources' PodGroupPostFilter runs before DefaultPreemption's and, for a PodGroup without
# scheduling constraints, says these words; they are kept only when DefaultPreemption's status is
# Unschedulable too (an UnschedulableAndUnresolvable one, "No preemption victims found for incoming
# preemptor", is returned alone).
DRA_POD_GROUP_POST_FILTER_137 = "deallocation and deletion of ResourceClaims completed"


def with_dra_pod_group_post_filter(words: str) -> str:
    """DefaultPreemption's Unschedulable pod-group status after DynamicResources' (1.37)."""
    return f"{DRA_POD_GROUP_POST_FILTER_137}, {words}"


def placements_status(first_status: str, placements: int = 1) -> str:
    """The group's status when none of its `placements` was feasible (podGroupSchedulingPlacementAlgorithm,
    1.37.2): the pod-group error, then the count and the first placement's status as an error
    (`first_status`: its PlacementFeasible reason, or the pod-group error itself where the trial
    stopped before its first pod)."""
    return f"{POD_GROUP_UNSCHEDULABLE}, 0/{placements} placements are available, first placement status: {first_status}"


# 1.36's DefaultPreemption PostFilter for a pod of a PodGroup with scheduling constraints
# (TopologyAwareWorkloadScheduling on), before its workload-aware preemption check
PLACEMENT_GROUP_NOT_PREEMPTING_136 = "preemption: not eligible due to placement-based pod group scheduling limitation"


def placement_failure(first, pods: list, release_137: bool) -> dict[str, tuple[str, bool]]:
    """The PodScheduled message of each pending pod of a root PodGroup none of whose placements
    was feasible, and whether it fitted (1.37 adds the PodGroupPostFilter's words to those): kube-
    scheduler reports the first placement's trial (`first`: podgroup_placement.FirstPlacement).

    1.37 (podGroupSchedulingPlacementAlgorithm, submitPodGroupAlgorithmResult): the group's status
    is `placements_status` over its first placement's; a pod that fitted gets "pod group is
    unschedulable, " and that status; one tried that did not, its FitError over the placement's
    nodes; one never tried (after PlacementFeasible stopped), the status itself.
    1.36 (no PlacementFeasible: every pod tried): a pod that fitted gets Permit's words; one that did
    not, its FitError and the PostFilters' (DefaultPreemption declines a placement-based group)."""
    from draopt.cluster.result import fit_error_message

    status = placements_status(first.status or POD_GROUP_UNSCHEDULABLE, first.placements)
    out = {}
    for pod in pods:
        failed = first.failed.get(pod.key)
        if pod.key in first.fitted:
            text = f"{POD_GROUP_UNSCHEDULABLE}, {status if release_137 else PERMIT_WAITING_136}"
            out[pod.key] = (text, True)
        elif failed is not None:
            text = fit_error_message(failed.reason_text(first.nodes))
            if not release_137:
                text += f" {dynamic_resources_post_filter_136(bool(pod.claims))}{PLACEMENT_GROUP_NOT_PREEMPTING_136}"
            out[pod.key] = (text, False)
        elif release_137:
            out[pod.key] = (status, False)
    return out


def never_popped(gang, outside: list[str]) -> str:
    """Why a gang is never popped: its pods of this scheduler (all but `outside`, another
    scheduler's) are fewer than minCount, so they stay pending with no message; "" otherwise."""
    if not outside or gang.policy != "gang" or len(gang.pods) - len(outside) >= gang.min_count:
        return ""
    return (
        f"never tried: its PodGroup {gang.key} needs minCount {gang.min_count} pods in the scheduling queue; "
        f"{len(outside)} of its {len(gang.pods)} pods are another scheduler's ({', '.join(outside)})"
    )


def word_group_members(workload, by_pod: dict, released: set[str], failed: set[str], tried, post_filter, cluster):
    """The messages of the pending pods of PodGroups after first-fit's run, in the release's words:
    1.37, those of the gangs in `failed`; 1.36 (with a PostFilter, `post_filter` not None), every
    unplaced member `tried(pod)` says had a cycle. `released`: the pods that fitted in their gang's
    trial; `post_filter`: PodGroup -> PodGroupPostFilter's message."""
    from draopt.cluster.result import fit_error_message
    from draopt.kube.releases import at_least

    n_nodes = len(cluster.nodes)
    if at_least(cluster.features.version, "1.37"):
        placed_by_placements = cluster.features.topology_aware_workload_scheduling
        for key in sorted(failed):
            post = (post_filter or {}).get(key, "")
            word_failed_gang(workload, key, by_pod, released, post, n_nodes, placed_by_placements)
        return
    if post_filter is None:
        return
    for pod in workload.pending:
        pl = by_pod[pod.key]
        # (a message already set: the PodGroupPostFilter's Error, draopt.scheduler.preemption)
        if pod.group is not None and not pl.placed and tried(pod) and pl.message is None:
            fit_error = fit_error_message(pl.reason_text(n_nodes))
            pl.message = member_message_136(pod.key in released, fit_error, bool(pod.claims))


def word_failed_gang(
    workload, key: str, by_pod: dict, released: set[str], post_filter: str, n_nodes: int, placements: bool = False
) -> None:
    """The messages kube-scheduler 1.37's pod-group cycle writes on a gang that did not reach
    minCount; `released`: the pods that fitted in its trial; `placements`: the gang was tried by
    the placement algorithm (TopologyAwareWorkloadScheduling on), in its one placement."""
    from draopt.cluster.result import fit_error_message

    gang = workload.groups[key]
    members = [p for p in workload.pending if p.group == key]
    if len(gang.pods) - len(members) + sum(1 for p in members if by_pod[p.key].placed) >= gang.min_count:
        return  # (scheduled since it failed, by a later cycle: its pods left keep their own FitErrors)
    fitted = [p.key in released for p in members]
    trial = gang_trial(fitted, len(gang.pods) - len(members), gang.min_count)
    if trial.feasible:
        return
    if placements:
        trial = replace(trial, status=placements_status(trial.status if trial.tried else POD_GROUP_UNSCHEDULABLE))
    errors = [fit_error_message(by_pod[p.key].reason_text(n_nodes)) for p in members]
    for p, text in zip(members, member_messages(trial, fitted, errors, post_filter)):
        if by_pod[p.key].message is None:  # ("": a pod kube-scheduler never sees keeps none)
            by_pod[p.key].message = text


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
    "GangTrial",
    "word_failed_gang",
    "word_group_members",
    "never_popped",
    "POD_GROUP_UNSCHEDULABLE",
    "gang_trial",
    "member_message_136",
    "dynamic_resources_post_filter_136",
    "member_messages",
    "min_count_status",
    "placements_status",
    "placement_failure",
    "with_dra_pod_group_post_filter",
]
