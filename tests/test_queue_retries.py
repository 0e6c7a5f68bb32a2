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
