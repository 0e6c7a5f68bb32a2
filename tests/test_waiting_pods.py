"""Pods kube-scheduler keeps out of its queue (issue 31 items 2, 5, 7; draopt/kube/admission.py): a
gated pod, a pod whose claim or template does not exist, a pod whose claim the API server refuses for
admin access. No policy places them, `plan` buys nothing for them, the rest is placed.

Kubernetes behind the answers (v1.37.2 / v1.36.3):
* pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go, PreEnqueue: a pod with
  spec.schedulingGates does not enter the active queue; pkg/registry/core/pod/strategy.go,
  applySchedulingGatedCondition: PodScheduled=False, reason SchedulingGated, and its message;
* pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go, PreEnqueue and
  foreachPodResourceClaim: a claim that is not in the claim cache keeps the pod out (no condition);
  pkg/controller/resourceclaim/controller.go, handleClaim: a missing template is an error, retried;
* pkg/registry/resource/utils.go, AuthorizedForAdmin / AuthorizedForAdminStatus: admin access needs
  the namespace label resource.kubernetes.io/admin-access=true.
The oracle cases (tests/data/crosscheck/*.yaml) assert the scheduler oracle's own answers.
"""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from draopt.allocation.allocate import allocate
from draopt.crosscheck import gobuild
from draopt.crosscheck.run import crosscheck
from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import load_files, load_text
from draopt.kube.workload import expand
from draopt.placement import place
from draopt.studies.node_types import NodeType
from draopt.studies.planning import plan

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "crosscheck"
GATED_JOB = DATA / "gated-job-gpus.yaml"
DANGLING = DATA / "dangling-claims.yaml"
ADMIN = DATA / "admin-access-unlabelled.yaml"
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
needs_go = pytest.mark.skipif(gobuild.go_path() is None, reason="Go is not installed: no scheduler oracle")


def _answer(path: Path, policy: str) -> dict[str, tuple[str | None, str]]:
    out = place(load_files([str(path)]), policy=policy, time_limit=20)
    return {p.pod: (p.node, p.reason_text(len(out.cluster.nodes))) for p in out.result.pods}


def _oracle(path: Path, minor: str):
    return crosscheck(
        load_files([str(path)]), kubernetes_version=minor, features=Features.from_gates({}, minor), timeout=120
    )


# ---------------------------------------------------------------- item 2: scheduling gates
@pytest.mark.parametrize("policy", ["first-fit", "optimal"])
def test_a_gated_job_leaves_the_gpus_to_an_ungated_pod(policy):
    """The Kueue-gated Job came first; its pods never enter the queue, so the later ungated pod gets
    both GPUs (schedulinggates PreEnqueue)."""
    got = _answer(GATED_JOB, policy)
    assert got["default/inference"] == ("n1", "")
    train = {k: v for k, v in got.items() if k.startswith("default/train-")}
    assert len(train) == 2
    for node, why in train.values():
        assert node is None and GATED_MESSAGE in why and "SchedulingGates" in why


def test_a_gated_pod_is_written_with_the_api_servers_condition():
    """pkg/registry/core/pod/strategy.go applySchedulingGatedCondition: reason SchedulingGated."""
    out = place(load_files([str(GATED_JOB)]))
    pods = {d["metadata"]["name"]: d for d in out.objects if d.get("kind") == "Pod"}
    gated = [d for name, d in pods.items() if name.startswith("train-")]
    assert len(gated) == 2
    for d in gated:
        assert "nodeName" not in d["spec"]
        assert d["status"]["conditions"] == [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "message": GATED_MESSAGE}
        ]
    assert out.result.summary().waiting == 2
    claims = [d for d in out.objects if d.get("kind") == "ResourceClaim"]
    assert [c["metadata"]["name"] for c in claims] == ["inference-gpus"]  # nothing allocated for the gated pods


def test_plan_buys_no_node_for_gated_pods():
    """Without the gates the Job's pods would take the GPUs first and the plan would buy a node for the
    ungated pod; gated, every pending pod fits the cluster as it is."""
    objects = load_files([str(GATED_JOB)])
    got = plan(objects, [NodeType("n1", "n1", Fraction(1))], time_limit=10)
    assert got.mix == {"n1": 0} and got.pods == 1 and got.placed == 1
    ungated = load_text(GATED_JOB.read_text().replace("schedulingGates: [{name: kueue.x-k8s.io/admission}]", ""), "x")
    assert plan(ungated, [NodeType("n1", "n1", Fraction(1))], time_limit=10).mix == {"n1": 1}


@needs_go
@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_oracle_gated_job(minor):
    report = _oracle(GATED_JOB, minor)
    assert report.identical, [d.text() for d in report.differences]
    rows = {p.pod: p for p in report.pods}
    assert rows["default/inference"].kubernetes_node == "n1"
    train = [p for k, p in rows.items() if k.startswith("default/train-")]
    assert len(train) == 2
    assert all(p.kubernetes_node == "" and p.kubernetes_message == "SchedulingGated" for p in train)


# ---------------------------------------------------------------- item 5: a claim or template not there
@pytest.mark.parametrize("policy", ["first-fit", "optimal"])
def test_dangling_claim_and_template_wait_and_the_rest_is_placed(policy):
    got = _answer(DANGLING, policy)
    assert got["default/placeable"][0] == "n1" and got["default/plain"][0] == "n1"
    node, why = got["default/dangling-claim"]
    assert node is None and "DynamicResources PreEnqueue" in why and "ResourceClaim default/not-yet not found" in why
    node, why = got["default/dangling-template"]
    assert node is None and "ResourceClaimTemplate default/not-yet not found" in why


def test_dangling_references_are_no_input_error(tmp_path):
    """exit 1 (pods pending), not 2; the reason on stderr as a note."""
    run = subprocess.run(
        [sys.executable, "-m", "draopt", "place", "-f", str(DANGLING)], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    assert (
        "note: ResourceClaim default/not-yet not found: pod default/dangling-claim waits outside the "
        "scheduling queue (DynamicResources PreEnqueue), not placed" in run.stderr
    )


def test_a_waiting_pod_is_not_pending_for_the_policies():
    w = expand(load_files([str(DANGLING)]))
    assert [d.key for d in w.pending] == ["default/placeable", "default/plain"]
    assert [d.key for d in w.waiting] == ["default/dangling-claim", "default/dangling-template"]
    assert all(d.hold is not None and d.hold.plugin == "DynamicResources" and not d.claims for d in w.waiting)


def test_a_bound_pod_whose_claim_is_gone_is_a_note():
    """A bound pod is not scheduled again: it keeps its node resources, the missing claim holds nothing."""
    text = DANGLING.read_text().replace(
        "metadata: {name: dangling-claim, namespace: default, uid: 6b1c6c2e-0032-4000-8000-000000000001}\nspec:\n",
        "metadata: {name: dangling-claim, namespace: default, uid: 6b1c6c2e-0032-4000-8000-000000000001}\n"
        "spec:\n  nodeName: n1\n",
    )
    w = expand(load_text(text, "x"))
    assert [d.key for d in w.running] == ["default/dangling-claim"] and w.running[0].claims == []
    assert (
        "Pod default/dangling-claim is bound to node n1, but ResourceClaim default/not-yet not found: it holds no devices"
        in w.notes
    )


@needs_go
@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_oracle_dangling_claim_and_template(minor):
    report = _oracle(DANGLING, minor)
    assert report.identical, [d.text() for d in report.differences]
    rows = {p.pod: p for p in report.pods}
    assert rows["default/placeable"].kubernetes_node == "n1" and rows["default/plain"].kubernetes_node == "n1"
    for key in ("default/dangling-claim", "default/dangling-template"):
        assert rows[key].kubernetes_node == ""
        assert rows[key].kubernetes_message == "waiting at PreEnqueue plugin DynamicResources"


# ---------------------------------------------------------------- item 7: admin access, namespace unlabelled
@pytest.mark.parametrize("policy", ["first-fit", "optimal"])
def test_admin_access_in_an_unlabelled_namespace_is_not_granted(policy):
    got = _answer(ADMIN, policy)
    assert got["admins/monitor"] == ("n1", "")
    node, why = got["plain/monitor"]
    assert node is None
    assert "`resource.kubernetes.io/admin-access: true` label on namespace 'plain'" in why


def test_validate_still_forbids_it():
    run = subprocess.run(
        [sys.executable, "-m", "draopt", "validate", "-f", str(ADMIN)], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 1
    assert "ResourceClaim plain/monitor: spec.devices.requests[0].exactly.adminAccess: Forbidden" in run.stdout


def test_allocate_leaves_the_refused_claim_out():
    objects = load_files([str(ADMIN)])
    out = allocate(objects, node="n1")
    assert [f"{c.namespace}/{c.name}" for c in out.claims] == ["admins/monitor"]
    assert any("ResourceClaim plain/monitor asks for admin access" in n for n in out.notes)
    with pytest.raises(InputError, match="--claim plain/monitor: ResourceClaim plain/monitor asks for admin access"):
        allocate(objects, node="n1", claims=["plain/monitor"])


def test_a_namespace_not_in_the_input_is_not_checked():
    """As `validate` (a note): the claim is granted, and place says it did not check."""
    text = ADMIN.read_text().replace(
        "kind: Namespace\nmetadata: {name: plain}\n", "kind: Namespace\nmetadata: {name: other}\n"
    )
    w = expand(load_text(text, "x"))
    assert "plain/monitor" in {d.key for d in w.pending}
    assert any("namespace 'plain', which is not in the input" in n for n in w.notes)


@needs_go
@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_oracle_admin_access_unlabelled(minor):
    """The oracle is sent what the API server stores (not the refused claim): its pod waits at
    DynamicResources PreEnqueue, the labelled namespace's claim gets both GPUs."""
    report = _oracle(ADMIN, minor)
    assert report.identical, [d.text() for d in report.differences]
    rows = {p.pod: p for p in report.pods}
    assert rows["admins/monitor"].kubernetes_node == "n1"
    assert rows["plain/monitor"].kubernetes_message == "waiting at PreEnqueue plugin DynamicResources"


# ---------------------------------------------------------------- a PodGroup with a waiting pod
GATED_GROUP = DATA / "gated-pod-group.yaml"
GROUP_FEATURES = Features.from_gates({"GenericWorkload": True})


@pytest.mark.parametrize("policy", ["first-fit", "optimal"])
def test_a_pod_group_with_a_gated_pod_waits_whole(policy):
    """1.37 queues the group as one entity, gated while any pod of it is (scheduling_queue.go,
    runPreEnqueuePlugins): a and c are not placed although they would reach minCount 2."""
    out = place(load_files([str(GATED_GROUP)]), policy=policy, features=GROUP_FEATURES, time_limit=20)
    holds = {p.pod: p.hold for p in out.result.pods}
    assert all(p.node is None for p in out.result.pods) and len(holds) == 3
    assert holds["default/b"] is not None and holds["default/b"].condition_reason == "SchedulingGated"
    for key in ("default/a", "default/c"):
        hold = holds[key]
        assert hold is not None and hold.group == "default/g" and "its pod default/b waits" in hold.message


@needs_go
def test_oracle_gated_pod_group():
    """1.37 only (the 1.36 oracle serves PodGroup v1alpha2, this input is v1beta1): a and c pending
    with no message (no condition, no gating plugin of their own), b SchedulingGated."""
    report = _oracle(GATED_GROUP, "1.37")
    assert report.identical, [d.text() for d in report.differences]
    rows = {p.pod: p for p in report.pods}
    assert all(p.kubernetes_node == "" for p in rows.values())
    assert rows["default/b"].kubernetes_message == "SchedulingGated"
    assert rows["default/a"].kubernetes_message == "" and rows["default/c"].kubernetes_message == ""
