"""The rules of tests/crosscheck_record.py that name the cause of a difference with kube-scheduler,
on reports written by hand (no Go needed): each rule takes its own case and leaves the others."""

from __future__ import annotations

from crosscheck_record import explained_by

from draopt.crosscheck.run import CrosscheckReport
from draopt.crosscheck.scheduler_diff import Difference


def _report(attempts, differences, claim_users=None) -> CrosscheckReport:
    return CrosscheckReport(
        "place",
        "1.37",
        "v1.37.2",
        differences=differences,
        kubernetes_attempts=attempts,
        claim_users=claim_users or {},
    )


NOMINATED = {"pod": "ns/pre", "nominatedNode": "n1", "message": "0/2 nodes are available: ..."}


def test_a_preemptor_tried_again_after_other_pods():
    attempts = [NOMINATED, {"pod": "ns/low", "node": "n1"}, {"pod": "ns/pre", "node": "n2"}]
    for d in (Difference("node", "ns/pre", "n1", "n2"), Difference("node", "ns/low", "n2", "n1")):
        report = _report(attempts, [d])
        assert explained_by(d, report) == "preemptor-retried-after-the-queue"


def test_a_preemptor_tried_again_at_once_is_no_such_case():
    attempts = [NOMINATED, {"pod": "ns/pre", "node": "n1"}, {"pod": "ns/low", "node": "n1"}]
    d = Difference("node", "ns/low", "n2", "n1")
    assert explained_by(d, _report(attempts, [d])) != "preemptor-retried-after-the-queue"


def test_a_pod_placed_at_its_second_attempt():
    fail = {"pod": "ns/a", "message": "0/1 nodes are available: 1 node(s) didn't match pod affinity rules."}
    attempts = [fail, {"pod": "ns/db", "node": "n1"}, {"pod": "ns/a", "node": "n1"}]
    d = Difference("pending", "ns/a", "pending", "n1")
    assert explained_by(d, _report(attempts, [d])) == "retried-after-cluster-events"
    once = _report([{"pod": "ns/a", "node": "n1"}], [d])
    assert explained_by(d, once) != "retried-after-cluster-events"


def test_a_message_of_the_first_attempt():
    first = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    last = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu."
    attempts = [{"pod": "ns/a", "message": first}, {"pod": "ns/b", "node": "n1"}, {"pod": "ns/a", "message": last}]
    d = Difference("reason", "ns/a", first, last)
    assert explained_by(d, _report(attempts, [d])) == "retried-after-cluster-events"
    other = Difference("reason", "ns/a", "0/1 nodes are available: 1 Too many pods.", last)
    assert explained_by(other, _report(attempts, [other])) != "retried-after-cluster-events"


def test_devices_of_a_preemptor_whose_victims_claims_the_oracle_keeps():
    attempts = [NOMINATED, {"pod": "ns/pre", "node": "n1"}]
    d = Difference("device", "ns/two", "gpu=d/n1/gpu-0", "gpu=d/n1/gpu-1")
    assert explained_by(d, _report(attempts, [d], {"ns/two": ["ns/pre"]})) == "victim-claims-kept-by-the-oracle"
    other = _report(attempts, [d], {"ns/two": ["ns/someone"]})
    assert explained_by(d, other) != "victim-claims-kept-by-the-oracle"


def test_a_preemptor_kube_scheduler_placed_on_the_victims_devices():
    from draopt.crosscheck.scheduler_diff import PodComparison

    attempts = [NOMINATED, {"pod": "ns/pre", "node": "n1"}]
    d = Difference("pending", "ns/pre", "pending", "n1")
    message = "0/1 nodes are available: 1 Insufficient cpu (node-allocatable resources of devices)."
    report = _report(attempts, [d])
    report.pods = [PodComparison("ns/pre", "", "n1", "", "", message, "", False, False)]
    assert explained_by(d, report) == "victim-claims-kept-by-the-oracle"
    report.pods = [
        PodComparison("ns/pre", "", "n1", "", "", "0/1 nodes are available: 1 Too many pods.", "", False, False)
    ]
    assert explained_by(d, report) != "victim-claims-kept-by-the-oracle"


def _row(pod, ours, theirs, group=""):
    from draopt.crosscheck.scheduler_diff import PodComparison

    return PodComparison(pod, ours, theirs, "", "", "", "", False, False, group)


def _placements(attempts, rows):
    differences = [
        Difference(
            "node" if r.draopt_node and r.kubernetes_node else "pending", r.pod, r.draopt_node, r.kubernetes_node
        )
        for r in rows
        if r.draopt_node != r.kubernetes_node
    ]
    report = _report(attempts, differences)
    report.pods = rows
    return report


def test_a_first_placement_difference_without_a_cause_is_unexplained():
    """The first pod kube-scheduler placed otherwise has no cause; the pod tried after it may
    differ because of it; a pod tried before it may not."""
    attempts = [{"pod": "ns/a", "node": "n1"}, {"pod": "ns/b", "node": "n2"}, {"pod": "ns/c", "node": "n1"}]
    rows = [_row("ns/a", "n2", "n1"), _row("ns/b", "n2", "n2"), _row("ns/c", "n2", "n1")]
    report = _placements(attempts, rows)
    first, later = report.differences
    assert explained_by(first, report) is None
    assert explained_by(later, report) == "after-a-placement-difference"
    # the same difference of ns/c, but now before the other one in kube-scheduler's order
    report = _placements([attempts[2], attempts[1], attempts[0]], rows)
    first, later = report.differences
    assert explained_by(later, report) is None
    assert explained_by(first, report) == "after-a-placement-difference"


def test_a_difference_before_the_first_divergence_is_unexplained():
    """A pod both leave pending with other reasons, tried before any placement differs (and not
    again): no earlier difference explains it."""
    attempts = [{"pod": "ns/a", "message": "0/1 nodes are available: 1 Too many pods."}, {"pod": "ns/b", "node": "n1"}]
    reason = Difference("reason", "ns/a", "0/1 nodes are available: 1 Insufficient cpu.", attempts[0]["message"])
    placed = Difference("pending", "ns/b", "pending", "n1")
    report = _report(attempts, [reason, placed])
    report.pods = [_row("ns/a", "", ""), _row("ns/b", "", "n1")]
    assert explained_by(reason, report) is None
    # tried again after the divergence: its last message may follow from it
    report.kubernetes_attempts = [*attempts, attempts[0]]
    assert explained_by(reason, report) == "after-a-placement-difference"


def test_an_eviction_is_timed_by_its_preemptor():
    """A victim (a running pod, never tried) evicted by one side only: at its preemptor's attempt."""
    attempts = [{"pod": "ns/a", "node": "n1"}, {"pod": "ns/pre", "node": "n1"}]
    placed = Difference("node", "ns/a", "n2", "n1")
    evicted = Difference("eviction", "ns/victim", "kept", "evicted")
    report = _report(attempts, [placed, evicted])
    report.pods = [_row("ns/a", "n2", "n1"), _row("ns/pre", "", "")]
    report.evicted_by = {"ns/victim": ["ns/pre"]}
    assert explained_by(evicted, report) == "after-a-placement-difference"
    assert explained_by(placed, report) is None
    report.kubernetes_attempts = [attempts[1], attempts[0]]
    assert explained_by(evicted, report) is None
    assert explained_by(placed, report) == "after-a-placement-difference"


def test_draopt_order_where_the_oracle_gives_no_attempts():
    rows = [_row("ns/a", "n2", "n1"), _row("ns/b", "n2", "n1")]
    report = _placements([], rows)
    first, later = report.differences
    assert explained_by(first, report) is None
    assert explained_by(later, report) == "after-a-placement-difference"


def test_untraced_first_divergences_are_counted_not_failed(monkeypatch):
    import crosscheck_record

    attempts = [{"pod": "ns/a", "node": "n1"}]
    report = _placements(attempts, [_row("ns/a", "n2", "n1")])
    record = crosscheck_record.Record()
    assert len(record.add("scheduler", "1.37", "seed 7", report)) == 1
    monkeypatch.setattr(crosscheck_record, "UNTRACED", frozenset({("1.37", "seed 7", "ns/a")}))
    assert record.add("scheduler", "1.37", "seed 7", report) == []
    assert record.add("scheduler", "1.36", "seed 7", report) != []
    assert "first divergences: 2; untraced: 1" in "\n".join(record.lines())


def test_unexplained_in_counts_nothing_and_reruns_are_reported(monkeypatch):
    """The oracle's re-runs (tests/test_crosscheck_scheduler._run) ask unexplained_in, which counts
    nothing; the summary says how many scenarios ran again and how many were explained then."""
    import crosscheck_record

    report = _placements([{"pod": "ns/a", "node": "n1"}], [_row("ns/a", "n2", "n1")])
    record = crosscheck_record.Record()
    assert len(record.unexplained_in("1.37", "seed 7", report)) == 1 and not record.differences
    monkeypatch.setattr(crosscheck_record, "UNTRACED", frozenset({("1.37", "seed 7", "ns/a")}))
    assert record.unexplained_in("1.37", "seed 7", report) == []
    record.rerun("scheduler", "1.37", explained=False)  # (once per scenario run again)
    record.rerun("scheduler", "1.37", explained=True)
    record.add("scheduler", "1.37", "seed 7", report)
    assert "oracle run again on 2 scenarios, 1 of them explained then" in "\n".join(record.lines())


def test_an_unsteady_oracle_counts_its_scenario_apart():
    """A scenario the oracle placed differently in two runs (tests/test_crosscheck_scheduler._run):
    its unexplained differences are counted under oracle-unsteady and the scenario is named."""
    import crosscheck_record

    report = _placements([{"pod": "ns/a", "node": "n1"}], [_row("ns/a", "n2", "n1")])
    record = crosscheck_record.Record()
    assert record.add("scheduler", "1.36", "seed 9", report, unsteady=True) == []
    assert record.explained[("scheduler", "1.36", "oracle-unsteady")] == 1
    assert "oracle-unsteady: 1.36 seed 9" in record.lines()
    assert crosscheck_record.kubernetes_placements(report) == {"ns/a": "n1"}
    assert record.add("scheduler", "1.36", "seed 9", report) != []  # a steady oracle: unexplained


def test_a_pod_the_oracle_never_tried_in_a_livelock():
    note = (
        "kube-scheduler kept retrying pods without progress and the oracle stopped it (stopped after 140 "
        "scheduling cycles without a bind or eviction; pods still retried: ns/hot, ns/low); placements made "
        "while those pods cycled can vary between runs of kube-scheduler itself"
    )
    d = Difference("pending", "ns/low", "n1", "pending")
    report = _report([{"pod": "ns/hot", "message": "running PreBind plugin ..."}], [d])
    report.pods = [_row("ns/hot", "", ""), _row("ns/low", "n1", "")]
    assert explained_by(d, report) is None
    report.notes = [note]
    assert explained_by(d, report) == "starved-in-an-oracle-livelock"
    tried = _report([{"pod": "ns/low", "message": "0/1 nodes are available: 1 Too many pods."}], [d])
    tried.pods, tried.notes = report.pods, [note]
    assert explained_by(d, tried) != "starved-in-an-oracle-livelock"


def test_a_pod_that_erred_once_then_starved_in_a_livelock():
    note = (
        "kube-scheduler kept retrying pods without progress and the oracle stopped it (stopped after 120 "
        "scheduling cycles without a bind or eviction; pods still retried: ns/gang-a, ns/err); placements made "
        "while those pods cycled can vary between runs of kube-scheduler itself"
    )
    error = (
        'running "DynamicResources" filter plugin: claim ns/err-gpu: selector #0: CEL runtime error: no such key: model'
    )
    unschedulable = "0/2 nodes are available: 2 cannot allocate all claims."
    reason = Difference("reason", "ns/err", unschedulable, error)
    placed = Difference("pending", "ns/err", "n1", "pending")
    cause = "errored-then-starved-in-an-oracle-livelock"
    for d in (reason, placed):
        report = _report([{"pod": "ns/err", "message": error}, {"pod": "ns/gang-a", "message": "..."}], [d])
        assert explained_by(d, report) != cause  # no livelock: kube-scheduler's answer stands
        report.notes = [note]
        assert explained_by(d, report) == cause
        twice = _report([{"pod": "ns/err", "message": error}, {"pod": "ns/err", "message": error}], [d])
        twice.notes = [note]
        assert explained_by(d, twice) != cause  # tried again: not starved
        plain = _report([{"pod": "ns/err", "message": unschedulable.replace("2 cannot", "2 Insufficient")}], [d])
        plain.notes = [note]
        assert explained_by(d, plain) != cause  # not an error: the pod waits for an event, no back-off
    other = _report([{"pod": "ns/err", "message": error}], [reason])
    other.notes = [note.replace("ns/err", "ns/y")]
    assert explained_by(reason, other) != cause  # not named in the note


def test_devices_of_a_pod_group_claim():
    d = Difference("device", "ml/shared-0", "gpu=d/n1/gpu-0", "gpu=d/n1/gpu-1")
    report = _report([{"pod": "ml/a", "node": "n1"}], [d], {"ml/shared-0": ["ml/a", "ml/b"]})
    report.pods = [_row("ml/a", "n1", "n1", "ml/gang"), _row("ml/b", "n1", "n1", "ml/gang")]
    assert explained_by(d, report) == "pod-group-cycle"
    report.pods[1] = _row("ml/b", "n1", "n1")
    assert explained_by(d, report) is None


def _members(*rows) -> list:
    from draopt.crosscheck.scheduler_diff import PodComparison

    return [PodComparison(pod, d, k, "", "", dm, km, False, False, group="ns/g") for pod, d, k, dm, km in rows]


FIT = "0/2 nodes are available: 2 Insufficient cpu."
WAIT = "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, ..."


def test_a_group_in_none_of_several_placements_reports_a_drawn_one():
    import crosscheck_record

    many = "pod group is unschedulable, 0/3 placements are available, first placement status: ..."
    report = _report([], [])
    report.pods = _members(("ns/a", "", "", FIT, many), ("ns/b", "", "", many, FIT))
    d = Difference("reason", "ns/a", FIT, many)
    assert crosscheck_record._pod_group(d, report) == "pod-group-first-placement-drawn"
    one = many.replace("0/3", "0/1")
    report.pods = _members(("ns/a", "", "", FIT, one), ("ns/b", "", "", one, FIT))
    assert crosscheck_record._pod_group(Difference("reason", "ns/a", FIT, one), report) is None


def test_a_basic_group_in_none_of_several_placements_keeps_fit_errors_of_a_drawn_one():
    import crosscheck_record

    ours, theirs = "0/3 nodes are available: 3 Insufficient cpu.", "0/2 nodes are available: 2 Insufficient cpu."
    report = _report([], [])
    report.pods = _members(("ns/a", "", "", ours, theirs))
    d = Difference("reason", "ns/a", ours, theirs)
    assert crosscheck_record._pod_group(d, report) == "pod-group-first-placement-drawn"
    same = "0/3 nodes are available: 1 Too many pods, 2 Insufficient cpu."  # (the same nodes: no draw)
    report.pods = _members(("ns/a", "", "", ours, same))
    assert crosscheck_record._pod_group(Difference("reason", "ns/a", ours, same), report) is None


def test_release_136_gives_a_groups_outcomes_to_other_pods():
    import crosscheck_record

    report = _report([], [])
    report.kubernetes_version = "1.36"
    report.pods = _members(("ns/a", "", "", WAIT, FIT), ("ns/b", "", "", FIT, WAIT), ("ns/c", "n1", "n1", "", ""))
    d = Difference("reason", "ns/a", WAIT, FIT)
    assert crosscheck_record._pod_group(d, report) == "release-1.36-pod-group-order"
    report.kubernetes_version = "1.37"
    assert crosscheck_record._pod_group(d, report) is None
    report.kubernetes_version = "1.36"
    report.pods = _members(("ns/a", "", "", WAIT, FIT), ("ns/b", "", "", FIT, FIT))
    assert crosscheck_record._pod_group(d, report) is None


def test_a_topology_group_that_could_preempt():
    import crosscheck_record

    said = "pod group is unschedulable, ..., pod group preemption: not modelled for a group with topology constraints"
    report = _report([], [])
    report.pods = _members(("ns/a", "", "n1", said, ""))
    assert crosscheck_record._pod_group(Difference("pending", "ns/a", "pending", "n1"), report) == (
        "topology-group-preemption"
    )


def test_a_group_preemptor_left_pending_for_its_victims_kept_claims():
    import crosscheck_record

    short = "0/3 nodes are available: 1 cannot allocate all claims, 2 Insufficient cpu."
    report = _report([{"pod": "ns/b", "nominatedNode": "n1", "message": FIT}, {"pod": "ns/b", "message": short}], [])
    report.pods = _members(("ns/a", "n2", "n2", "", ""), ("ns/b", "n1", "", "", short))
    report.evicted_by = {"ns/low": ["ns/g"]}
    d = Difference("pending", "ns/b", "n1", "pending")
    assert crosscheck_record._pod_group(d, report) == "victim-claims-kept-by-the-oracle"
    report.evicted_by = {}  # (nothing evicted for it: no kept claim)
    assert crosscheck_record._pod_group(d, report) is None
    report.evicted_by = {"ns/low": ["ns/b"]}
    report.pods[1] = _members(("ns/b", "n1", "", "", FIT))[0]  # (short of cpu: not the claims)
    assert crosscheck_record._pod_group(d, report) is None


def test_which_members_the_oracle_says_gang_scheduling_holds_is_drawn():
    import crosscheck_record

    held = "waiting at PreEnqueue plugin GangScheduling"
    report = _report([], [])
    report.pods = _members(("ns/a", "", "", "", held), ("ns/b", "", "", "SchedulingGated", "SchedulingGated"))
    got = crosscheck_record._pod_group(Difference("reason", "ns/a", "", held), report)
    assert got == "pod-group-preenqueue-drawn"
    assert crosscheck_record._pod_group(Difference("reason", "ns/a", held, ""), report) == got
    assert crosscheck_record._pod_group(Difference("reason", "ns/a", FIT, held), report) is None
    assert crosscheck_record._pod_group(Difference("pending", "ns/a", "pending", "n1"), report) is None


def test_untraced_group_differences_are_listed_one_by_one(monkeypatch):
    import crosscheck_record

    report = _report([], [])
    report.pods = _members(("ns/a", "", "", FIT, "0/2 nodes are available: 2 Too many pods."))
    d = Difference("reason", "ns/a", FIT, "0/2 nodes are available: 2 Too many pods.")
    monkeypatch.setattr(crosscheck_record, "_UNTRACED", set())
    assert crosscheck_record._pod_group(d, report) is None
    monkeypatch.setattr(crosscheck_record, "_UNTRACED", {crosscheck_record.untraced_key("ns/g", report)})
    assert crosscheck_record._pod_group(d, report) == "pod-group-untraced"
    other = Difference("pending", "ns/a", "pending", "n1")
    assert crosscheck_record._pod_group(other, report) == "pod-group-untraced"  # (the key: the group in its scenario)
    apart = _report([], [])
    apart.pods = _members(("ns/a", "", "", FIT, ""), ("ns/z", "", "", "", ""))  # (another scenario)
    assert crosscheck_record._pod_group(d, apart) is None


def test_a_pod_of_no_group_is_no_pod_group_cause():
    import crosscheck_record
    from draopt.crosscheck.scheduler_diff import PodComparison

    report = _report([], [])
    report.pods = [PodComparison("ns/a", "", "", "", "", FIT, WAIT, False, False)]
    assert crosscheck_record._pod_group(Difference("reason", "ns/a", FIT, WAIT), report) is None
