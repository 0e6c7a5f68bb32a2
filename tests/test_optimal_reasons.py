"""The optimal policy's pending pods give the reasons of the optimum's own final state (issue 31 item
10), not those first-fit's run left. Expected answers: the scheduler oracle on the optimum's final
state (the nodes and `place --policy optimal -o yaml`'s pods, run through `python -m draopt
crosscheck`): p0 and p4 pending with "0/2 nodes are available: 2 Too many pods", identical on 1.37.2
and 1.36.3 (kube-scheduler pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest)."""

from __future__ import annotations

from pathlib import Path

from draopt.kube.loader import load_files
from draopt.placement import place

CASE = Path(__file__).parent / "data" / "placement" / "optimal-final-state-reasons.yaml"


def test_optimal_pending_reasons_describe_its_final_state():
    objects = load_files([str(CASE)])
    first_fit = place(objects, tie_break="name").result
    optimal = place(objects, policy="optimal", tie_break="name")
    ff = {p.pod: p for p in first_fit.pods}
    opt = {p.pod: p for p in optimal.result.pods}
    assert {k: p.node for k, p in opt.items() if p.placed} != {k: p.node for k, p in ff.items() if p.placed}
    # (one node short of cpu and of a pod slot: both counted, as kube-scheduler does)
    assert dict(ff["default/p4"].reasons) == {"Insufficient cpu": 1, "Too many pods": 2}
    for key in ("default/p0", "default/p4"):
        assert not opt[key].placed
        assert dict(opt[key].reasons) == {"Too many pods": 2}, key
    written = {o["metadata"]["name"]: o for o in optimal.objects if o["kind"] == "Pod"}
    (condition,) = written["p4"]["status"]["conditions"]
    assert condition["message"].startswith("0/2 nodes are available: 2 Too many pods")


def test_a_pod_first_fit_placed_but_the_optimum_did_not_names_its_final_state():
    """p0 first-fit placed, the optimum leaves pending: its reason is the final state's too."""
    objects = load_files([str(CASE)])
    optimal = place(objects, policy="optimal", tie_break="name").result
    (p0,) = [p for p in optimal.pods if p.pod == "default/p0"]
    assert "not placed by the optimum" not in " ".join(p0.reasons)
