"""The placement checker's view of preemption (draopt/cluster/check.py, _check_preemptors): from the
input alone, not from the eviction records' own numbers. Each victim of lower priority than its
preemptor as kube-scheduler compares them (GetPodPriority: a PodGroup's priority when the group sets
one; pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go, SelectVictimsOnNode
takes only pods of lower priority); a pod preemptor on the node it preempted on (DefaultPreemption
evicts on the one nominated node), other victims only as members of a PodGroup evicted whole
(disruptionMode all, KEP-5710); a PodGroup preemptor with a pod where its victims were. Correct
outputs of both policies pass; each tampered output is caught with its own message."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_preemption import HIGH, LOW, MID, node, objects, pod, pod_group  # noqa: E402

from draopt.cluster.check import check_placement  # noqa: E402
from draopt.placement import place  # noqa: E402


def _run(docs, policy="first-fit"):
    out = place(objects(docs), policy=policy, time_limit=10)
    assert check_placement(out) == []
    return out


def _pod_preemption():
    """`preemptor` evicts `low` on n1 (`other`, on n2, has a higher priority); `bystander` placed on n3."""
    docs = [
        node("n1"),
        node("n2"),
        node("n3", 300),
        pod("low", 500, LOW, "n1", 1),
        pod("other", 500, MID, "n2", 2),
        pod("preemptor", 500, HIGH),
        pod("bystander", 300, LOW),
    ]
    return _run(docs)


def _placed(out, name):
    return next(pl for pl in out.result.pods if pl.pod == f"default/{name}")


def test_correct_preemption_passes_under_both_policies():
    out = _pod_preemption()
    assert [e.pod for e in out.result.evictions] and _placed(out, "preemptor").node == "n1"
    docs = [node(f"n{i}") for i in range(3)] + [pod_group("train", 2, priority=HIGH)]
    docs += [pod(f"low{i}", 300, LOW, f"n{i}", i) for i in range(3)]
    docs += [pod(f"t{i}", 400, HIGH, group="train") for i in range(2)]
    for policy in ("first-fit", "optimal"):
        got = _run(docs, policy)
        assert len(got.result.evictions) == 2


def test_preemptor_placed_away_from_its_victims_is_caught():
    out = _pod_preemption()
    _placed(out, "preemptor").node = "n3"  # the claimless pod moved: its node resources still fit
    _placed(out, "bystander").node = None
    errors = check_placement(out)
    assert "pod default/preemptor: preempted 1 pod(s) on n1 but is placed on n3" in errors


def test_victim_on_another_node_not_in_a_whole_group_is_caught():
    out = _pod_preemption()
    (e,) = out.result.evictions
    out.result.evictions.append(dataclasses.replace(e, pod="default/other", node="n2"))
    errors = check_placement(out)
    assert (
        "pod default/other: evicted from n2 for pod default/preemptor placed on n1, "
        "not as part of a PodGroup evicted whole from that node"
    ) in errors


def test_priorities_are_read_from_the_input_not_the_record():
    out = _pod_preemption()
    (e,) = out.result.evictions
    # A record that claims a lower victim priority than the input has: the input decides.
    out.result.evictions[0] = dataclasses.replace(e, pod="default/bystander")
    errors = check_placement(out)
    assert any("evicted but not running in the input" in x for x in errors)
    docs = [
        node("n1"),
        pod("same", 500, MID, "n1", 1),
        pod("preemptor", 500, MID),
    ]
    got = _run(docs)
    assert not got.result.evictions  # equal priority: never a victim
    fake = dataclasses.replace(
        e, pod="default/same", node="n1", priority=LOW, preemptor="default/preemptor", preemptor_priority=MID
    )
    got.result.evictions.append(fake)
    _placed(got, "preemptor").node = "n1"
    errors = check_placement(got)
    assert (
        "pod default/same: evicted (priority 100 in the input) for pod default/preemptor of priority 100, not higher"
    ) in errors
    assert "pod default/same: the eviction says priority 0 for 100, the input 100 for 100" in errors


def test_group_priority_counts_for_its_pods():
    """A pod of a PodGroup that sets a priority has the group's (GetPodPriority with PodGroups)."""
    docs = [
        node("n1"),
        pod_group("batch", 1, priority=HIGH),
        pod("member", 500, LOW, "n1", 1, group="batch"),
        pod("preemptor", 500, MID),
    ]
    got = _run(docs)
    assert not got.result.evictions  # the member has the group's priority 1000
    e = dataclasses.replace(
        _pod_preemption().result.evictions[0],
        pod="default/member",
        node="n1",
        priority=LOW,
        preemptor="default/preemptor",
        preemptor_priority=MID,
    )
    got.result.evictions.append(e)
    _placed(got, "preemptor").node = "n1"
    errors = check_placement(got)
    assert any("evicted (priority 1000 in the input)" in x for x in errors)


def test_whole_group_evicted_partly_is_caught():
    docs = [
        node("n1"),
        node("n2"),
        pod_group("batch", 2, all_mode=True),
        pod("b0", 500, LOW, "n1", 1, group="batch"),
        pod("b1", 500, LOW, "n2", 1, group="batch"),
        pod("preemptor", 500, HIGH),
    ]
    out = _run(docs)
    assert len(out.result.evictions) == 2
    out.result.evictions = [e for e in out.result.evictions if e.node == _placed(out, "preemptor").node]
    errors = check_placement(out)
    assert "PodGroup default/batch (disruptionMode all): 1 of its 2 running pods evicted, not all" in errors


def test_group_preemptor_with_no_pod_where_its_victims_were_is_caught():
    docs = [node(f"n{i}") for i in range(3)] + [pod_group("train", 2, priority=HIGH)]
    docs += [pod(f"low{i}", 300, LOW, f"n{i}", i) for i in range(3)]
    docs += [pod(f"t{i}", 400, HIGH, group="train") for i in range(2)]
    out = _run(docs)
    gone = {e.node for e in out.result.evictions}
    (free,) = {"n0", "n1", "n2"} - gone
    # The records name the pod on the one node no pod of the group landed on instead.
    e = out.result.evictions[0]
    out.result.evictions = [dataclasses.replace(e, pod=f"default/low{free[1]}", node=free)]
    errors = check_placement(out)
    assert (
        f"PodGroup default/train: preempted 1 pod(s) on {free}, none of its pods placed on any of those nodes" in errors
    )


def test_a_pod_disruption_budget_is_said_not_modelled():
    """PodDisruptionBudgets (policy/v1) change which victims DefaultPreemption picks; draopt does not
    read them: the note says so (never silence, never "not used")."""
    import io

    from draopt.kube.loader import load_text

    pdb = (
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: keep, namespace: default}\n"
        "spec: {minAvailable: 1, selector: {matchLabels: {app: batch}}}\n"
    )
    notes = io.StringIO()
    load_text(pdb + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", notes=notes)
    lines = notes.getvalue().splitlines()
    assert lines[0] == "note: skipped 1 ConfigMap object(s): not used for placement"
    assert lines[1].startswith("note: skipped 1 PodDisruptionBudget object(s): not modelled: preemption counts")
    assert "fewest violations" in lines[1]
