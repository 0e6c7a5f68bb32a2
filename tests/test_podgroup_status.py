"""The pod-group cycle's messages (draopt.cluster.podgroup_status), as kube-scheduler 1.37 writes
them (pkg/scheduler/schedule_one_podgroup.go; gangscheduling PlacementFeasible)."""

from __future__ import annotations

from draopt.cluster.podgroup_status import gang_trial, member_messages


def test_the_trial_stops_when_min_count_is_out_of_reach():
    # 3 pods, minCount 3: the first does not fit, so 0 + 2 < 3 after it: one pod tried
    trial = gang_trial([False, True, True], running=0, min_count=3)
    assert (trial.tried, trial.scheduled, trial.remaining) == (1, 0, 2)
    assert trial.status == "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"


def test_running_pods_count_and_too_few_pods_stop_before_the_first():
    assert gang_trial([True], running=1, min_count=2).feasible
    before = gang_trial([True], running=0, min_count=3)
    assert before.tried == 0 and before.status == "minCount (3) cannot be satisfied: 0 scheduled, 1 remaining"


def test_each_member_gets_its_message():
    fitted = [True, False, True]
    trial = gang_trial(fitted, running=0, min_count=3)  # stops after the second pod
    assert trial.tried == 2
    got = member_messages(
        trial, fitted, ["-", "0/2 nodes are available: 2 Insufficient cpu.", "-"], "pod group preemption: x"
    )
    assert got == [
        "pod group is unschedulable, minCount (3) cannot be satisfied: 1 scheduled, 1 remaining, pod group preemption: x",
        "0/2 nodes are available: 2 Insufficient cpu.",
        "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining",
    ]
