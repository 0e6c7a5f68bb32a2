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


__all__ = ["GangTrial", "POD_GROUP_UNSCHEDULABLE", "gang_trial", "member_messages", "min_count_status"]
