"""kube-scheduler tries an unschedulable pod again when a later bind may help it (InterPodAffinity's
queueing hint for an added pod, interpodaffinity/plugin.go isSchedulableAfterAssignedPodChange):
draopt's first-fit does so for required pod affinity (docs/differences.md,
retried-after-cluster-events). The same input pinned against kube-scheduler 1.36/1.37:
tests/test_crosscheck_pinned.py::test_fixed_retried_after_cluster_events."""

from __future__ import annotations

from pathlib import Path

import yaml

from draopt.kube.loader import load_files, load_text
from draopt.placement import place

DATA = Path(__file__).resolve().parent / "data" / "crosscheck" / "retried-after-events.yaml"


def _result(edit=None):
    docs = [d for d in yaml.safe_load_all(DATA.read_text()) if d]
    for d in docs:
        if edit is not None and d["kind"] == "Pod" and d["metadata"]["name"] == "db":
            edit(d)
    return place(load_text(yaml.safe_dump_all(docs))).result


def _placed(result) -> dict[str, str | None]:
    return {pl.pod: pl.node for pl in result.pods}


def test_a_pod_whose_affinity_a_later_pod_matches_is_tried_again():
    assert _placed(place(load_files([str(DATA)])).result) == {"default/follows-db": "n1", "default/db": "n1"}


def test_a_later_pod_that_does_not_match_wakes_nothing():
    def relabel(d):
        d["metadata"]["labels"] = {"app": "cache"}

    (pl,) = [p for p in _result(relabel).pods if p.pod == "default/follows-db"]
    assert pl.node is None and dict(pl.reasons) == {"node(s) didn't match pod affinity rules": 1}


def test_the_retry_keeps_the_pods_last_message():
    """Woken, tried again and still short (the node full by then): the message is the last attempt's."""

    def crowd(d):
        d["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"

    (pl,) = [p for p in _result(crowd).pods if p.pod == "default/follows-db"]
    assert pl.node is None and dict(pl.reasons) == {"Insufficient cpu": 1}


PREEMPTOR = Path(__file__).resolve().parent / "data" / "crosscheck" / "preemptor-retried-later.yaml"


def test_a_preemptor_waits_its_back_off_while_the_queue_goes_on():
    """kube-scheduler tries a preemptor again only once the active queue is empty: the follower tried
    meanwhile lands in zone a, so the preemptor's zone spread fails on za-1 at its next attempt and it
    preempts again on zb-1 (kube-scheduler 1.36/1.37's answer: test_crosscheck_pinned)."""
    from draopt.cluster.check import check_placement

    out = place(load_files([str(PREEMPTOR)]))
    assert _placed(out.result) == {"default/preemptor": "zb-1", "default/follower": "za-1"}
    assert sorted(e.pod for e in out.result.evictions) == ["default/low-a", "default/low-b"]
    (pre,) = [p for p in out.result.pods if p.pod == "default/preemptor"]
    assert pre.nominated_node == "zb-1" and pre.nominated_before == ("za-1",)
    assert check_placement(out) == []


def test_the_nominated_node_holds_the_preemptors_requests():
    """While the preemptor waits, a pod of lower priority finds its requests held on the nominated
    node (the filters count nominated pods there): it does not take that room."""
    docs = [d for d in yaml.safe_load_all(PREEMPTOR.read_text()) if d]
    docs = [d for d in docs if d["metadata"].get("name") not in ("zb-1", "low-b")]
    for d in docs:
        if d["metadata"].get("name") == "follower":
            d["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    result = place(load_text(yaml.safe_dump_all(docs))).result
    assert _placed(result) == {"default/preemptor": "za-1", "default/follower": None}
    (follower,) = [p for p in result.pods if p.pod == "default/follower"]
    assert dict(follower.reasons) == {"Insufficient cpu": 1}
