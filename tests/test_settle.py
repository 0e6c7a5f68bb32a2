"""The clock a dump is read on (draopt.kube.settle): settled by default, `--no-settle` for the
scheduler's view at the moment of the dump.

Inputs in their real shape: `kubectl get -o yaml` Lists in tests/data/settle/ (generated claims with
status.allocation, reservedFor and the controller's finalizer; pods with status, deletionTimestamp,
ownerReferences). Kubernetes behind the answers:

* pkg/controller/resourceclaim/controller.go syncClaim, isPodDone: a Succeeded/Failed pod's (and a
  gone pod's) reservation is dropped; with no consumer left, a claim with the
  resource.kubernetes.io/delete-protection finalizer is deallocated.
* pkg/scheduler/scheduler.go (the pod informer's status.phase!=Succeeded,status.phase!=Failed
  field selector): terminal pods' cpu/memory are never counted; schedule_one.go skipPodSchedule:
  a pending pod being deleted is not scheduled.
* pkg/controller/tainteviction/taint_eviction.go processPodOnNode, getMinTolerationTime;
  pkg/apis/core/v1/helper GetMatchingTolerations (the first toleration matching each taint).
* pkg/controller/controller_utils.go IsPodActive (ReplicaSet); job/job_controller.go
  onlyReplaceFailedPods (Job); statefulset and daemon controllers recreate a pod only once the old
  one is gone (the name, the node's daemon pod).

The `now` answers are also the scheduler oracle's (kube-scheduler 1.37.2 and 1.36.3,
`draopt crosscheck -f tests/data/settle/<file>.yaml`): identical on every file here; the oracle
tests at the end run it again where Go is installed.
"""

from __future__ import annotations

import io
import textwrap
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import draopt
from draopt.cli import main
from draopt.errors import InputError
from draopt.kube import settle
from draopt.kube.loader import load_files, load_text
from draopt.kube.models import Node, Pod

DATA = Path(__file__).resolve().parent / "data" / "settle"


def _file(name: str) -> str:
    return str(DATA / name)


def _placed(outcome) -> dict[str, str | None]:
    return {p.pod: p.node for p in outcome.result.pods}


def _claim(objects, key: str):
    return next(c for c in objects.resource_claims if f"{c.metadata.namespace}/{c.metadata.name}" == key)


# ------------------------------------------------------------------ terminal pods
def test_terminal_pods_release_their_claims_when_settled():
    out = draopt.place(_file("terminal-claims.yaml"))
    # one GPU freed on each node (which pod gets which is kube-scheduler's random tie-break)
    assert sorted(_placed(out).values()) == ["gpu-1", "gpu-2"]
    assert (
        "settled: pod ml/train-done is Succeeded; the ResourceClaim controller deallocates claim "
        "ml/train-done-gpu-h5ltz and deletes it (generated for the pod)"
    ) in out.notes
    assert any(n.startswith("settled: pod ml/eval-failed is Failed;") for n in out.notes)


def test_terminal_pods_claims_hold_devices_now_but_not_cpu():
    # oracle (1.37.2, 1.36.3): both pending, "0/2 nodes are available: 2 cannot allocate all claims."
    out = draopt.place(_file("terminal-claims.yaml"), settle=False)
    assert _placed(out) == {"ml/train-next": None, "ml/eval-next": None}
    for p in out.result.pods:
        assert dict(p.reasons) == {"cannot allocate all claims": 2}
    # the Succeeded/Failed pods' 3 cpu are not counted (the scheduler never sees them)
    assert not out.cluster.by_name["gpu-1"].used.get("cpu")
    assert any("pod ml/train-done is Succeeded: the scheduler does not count it" in n for n in out.notes)


def _terminal_with(claim_meta: str, reserved: str) -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: done, namespace: ml, uid: u-done}}
        spec:
          nodeName: n1
          containers: [{{name: c, image: x}}]
        status: {{phase: Succeeded}}
        ---
        apiVersion: resource.k8s.io/v1
        kind: ResourceClaim
        metadata: {{name: shared, namespace: ml{claim_meta}}}
        spec:
          devices:
            requests:
            - name: gpu
              exactly: {{deviceClassName: gpu.example.com}}
        status:
          allocation:
            devices:
              results: [{{request: gpu, driver: gpu.example.com, pool: n1, device: gpu-0}}]
          reservedFor:
          - {{resource: pods, name: done, uid: u-done}}
        {reserved}
        """
    )


def test_claim_with_another_consumer_stays_allocated():
    text = _terminal_with(
        ", finalizers: [resource.kubernetes.io/delete-protection]", "  - {resource: pods, name: other, uid: u-other}"
    )
    objects = settle.apply(load_text(text, "dump.yaml"))
    claim = _claim(objects, "ml/shared")
    assert claim.status.allocation is not None
    assert [r.name for r in claim.status.reserved_for] == ["other"]
    assert objects.clock_notes == [
        "settled: pod ml/done is Succeeded; the ResourceClaim controller drops it from claim ml/shared's "
        "reservedFor (1 consumer(s) left)"
    ]


def test_claim_without_the_finalizer_keeps_its_allocation():
    objects = settle.apply(load_text(_terminal_with("", ""), "dump.yaml"))
    claim = _claim(objects, "ml/shared")
    assert claim.status.allocation is not None and claim.status.reserved_for == []
    assert "keeps its allocation (no resource.kubernetes.io/delete-protection finalizer" in objects.clock_notes[0]


def test_apply_leaves_the_input_unchanged_and_is_idempotent():
    raw = load_files([_file("terminal-claims.yaml")])
    once = settle.apply(raw)
    assert all(c.status.allocation is not None for c in raw.resource_claims)
    twice = settle.apply(once)
    assert twice.clock_notes == []
    assert [c.status.allocation for c in twice.resource_claims] == [None, None]
    with pytest.raises(InputError, match="already on the settled clock"):
        settle.apply(once, settle=False)


def test_allocate_cli_says_each_note_once():
    _, _, err = _run("allocate", "-f", _file("terminal-claims.yaml"), "--no-settle")
    assert err.count("now (--no-settle): pod ml/train-done is Succeeded") == 1


# ------------------------------------------------------------------ pods being deleted
def test_terminating_pod_holds_its_devices_now():
    # oracle: ml/train-new pending ("2 cannot allocate all claims"); ml/cancelled pending, no
    # PodScheduled message (skipPodSchedule)
    out = draopt.place(_file("terminating.yaml"), settle=False)
    assert _placed(out) == {"ml/train-new": None, "ml/cancelled": None}
    cancelled = next(p for p in out.result.pods if p.pod == "ml/cancelled")
    assert not cancelled.reasons and "being deleted" in cancelled.explanation
    (written,) = [d for d in out.objects if d["metadata"]["name"] == "cancelled"]
    assert "conditions" not in written["status"]  # no PodScheduled condition: it was never tried
    assert any(n.startswith("now (--no-settle): pod ml/train-old is being deleted") for n in out.notes)


def test_terminating_pod_is_gone_when_settled():
    out = draopt.place(_file("terminating.yaml"))
    assert _placed(out) == {"ml/train-new": "gpu-1"}
    assert (
        "settled: pod ml/train-old is being deleted (metadata.deletionTimestamp); the kubelet stops it on "
        "node gpu-1 and the pod object is removed"
    ) in out.notes
    assert (
        "settled: pod ml/cancelled is being deleted (metadata.deletionTimestamp); never scheduled, the pod "
        "object is removed"
    ) in out.notes
    assert any("deallocates claim ml/train-old-gpu-k8r2t" in n for n in out.notes)


def test_terminating_pod_cpu_is_counted_now(tmp_path):
    # oracle (both versions): ml/train-new pending, "0/2 nodes are available: 2 Insufficient cpu."
    text = Path(_file("terminating.yaml")).read_text().replace('requests: {cpu: "1"}', 'requests: {cpu: "3"}')
    path = tmp_path / "cpu.yaml"
    path.write_text(text)
    now = draopt.place(str(path), settle=False)
    (p,) = [p for p in now.result.pods if p.pod == "ml/train-new"]
    assert dict(p.reasons) == {"Insufficient cpu": 2}
    assert _placed(draopt.place(str(path)))["ml/train-new"] == "gpu-1"


# ------------------------------------------------------------------ NoExecute taints
def test_noexecute_departures():
    objects = load_files([_file("noexecute.yaml")])
    leaving = {d.pod: d.why for d in settle.departures(objects.pods, objects.nodes)}
    assert set(leaving) == {"ml/batch-a", "ml/cache"}  # ml/agent tolerates it for ever
    assert leaving["ml/batch-a"].startswith("does not tolerate node gpu-1's NoExecute taint example.com/maintenance")
    assert "for 300s (tolerationSeconds)" in leaving["ml/cache"]


def test_noexecute_evictions_and_replacement_when_settled():
    out = draopt.place(_file("noexecute.yaml"))
    placed = _placed(out)
    assert placed["ml/train-new"] == "gpu-1"
    (replacement,) = [k for k in placed if k.startswith("ml/batch-")]
    assert placed[replacement] is None  # it does not tolerate gpu-1's taint; gpu-2's GPU is held
    assert f"settled: the ReplicaSet controller creates pod {replacement} (ReplicaSet ml/batch)" in out.notes


def test_noexecute_now():
    # oracle: ml/train-new pending, "0/2 nodes are available: 1 Insufficient cpu, 1 cannot allocate all claims."
    out = draopt.place(_file("noexecute.yaml"), settle=False)
    assert _placed(out) == {"ml/train-new": None}
    assert dict(out.result.pods[0].reasons) == {"Insufficient cpu": 1, "cannot allocate all claims": 1}


def _node(taints: list) -> Node:
    return Node.model_validate({"metadata": {"name": "n1"}, "spec": {"taints": taints}})


def _pod(tolerations: list) -> Pod:
    return Pod.model_validate(
        {"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [], "tolerations": tolerations}}
    )


def test_eviction_follows_the_first_matching_toleration_and_the_smallest_seconds():
    node = _node([{"key": "a", "effect": "NoExecute"}, {"key": "b", "effect": "NoExecute"}])
    forever_a = {"key": "a", "operator": "Exists"}
    a_60 = {"key": "a", "operator": "Exists", "tolerationSeconds": 60}
    b_30 = {"key": "b", "operator": "Exists", "tolerationSeconds": 30}
    b_0 = {"key": "b", "operator": "Exists", "tolerationSeconds": 0}
    assert settle.eviction(_pod([forever_a, {"key": "b", "operator": "Exists"}]), node) is None
    # a's first match has no seconds (the later 60 s one is not used); b's 30 s decides
    assert "for 30s" in settle.eviction(_pod([forever_a, a_60, b_30]), node)
    assert "for 0s" in settle.eviction(_pod([a_60, b_0]), node)
    assert "does not tolerate node n1's NoExecute taint b:NoExecute" in settle.eviction(_pod([forever_a]), node)
    assert settle.eviction(_pod([]), _node([{"key": "a", "effect": "NoSchedule"}])) is None


# ------------------------------------------------------------------ controllers
def test_rollout_replaces_a_terminating_replica_on_both_clocks():
    # oracle: the replacement web-5d8b9c7f4-* pending, "0/2 nodes are available: 2 cannot allocate all claims."
    now = draopt.place(_file("rollout.yaml"), settle=False)
    (pending,) = now.result.pods
    assert pending.pod.startswith("ml/web-5d8b9c7f4-") and pending.node is None
    assert any("its ReplicaSet ml/web-5d8b9c7f4 does not count it" in n for n in now.notes)
    settled = draopt.place(_file("rollout.yaml"))
    assert _placed(settled) == {pending.pod: "gpu-1"}
    assert any(
        n.startswith("settled: pod ml/web-5d8b9c7f4-x2kqp is being deleted")
        and n.endswith("its ReplicaSet ml/web-5d8b9c7f4 does not count it and creates its replacement at once")
        for n in settled.notes
    )


JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: ml, uid: u-job}
spec:
  parallelism: 2
  completions: 2%s
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: x}]
---
apiVersion: v1
kind: Pod
metadata:
  name: train-abcde
  namespace: ml
  deletionTimestamp: "2026-07-01T12:00:00Z"
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: train, uid: u-job, controller: true}]
spec: {nodeName: n1, containers: [{name: c, image: x}]}
status: {phase: Running}
"""


@pytest.mark.parametrize("policy, now_made", [("", 2), ("\n  podReplacementPolicy: Failed", 1)])
def test_job_replaces_a_terminating_pod_unless_policy_failed(policy, now_made):
    objects = load_text(JOB % policy, "job.yaml")
    made = [p for p in objects.pods if p.metadata.name != "train-abcde"]
    assert len(made) == now_made
    settled = settle.apply(objects)
    assert len([p for p in settled.pods if p.metadata.name != "train-abcde"]) == 2


STATEFULSET = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: ml, uid: u-sts}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: ml
  labels: {app: db}
  deletionTimestamp: "2026-07-01T12:00:00Z"
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: u-sts, controller: true}]
spec: {nodeName: n1, containers: [{name: c, image: x}]}
status: {phase: Running}
"""


def test_statefulset_recreates_a_terminating_pod_only_when_settled():
    objects = load_text(STATEFULSET, "sts.yaml")
    assert [(p.metadata.name, p.spec.node_name) for p in objects.pods] == [("db-0", "n1")]
    settled = settle.apply(objects)
    assert [(p.metadata.name, p.spec.node_name) for p in settled.pods] == [("db-0", None)]
    assert "settled: the StatefulSet controller creates pod ml/db-0 (StatefulSet ml/db)" in settled.clock_notes


# ------------------------------------------------------------------ command line
def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_cli_no_settle_flag():
    code, out, err = _run("place", "-f", _file("terminating.yaml"))
    assert code == 0 and "ml/train-new                             gpu-1" in out  # ml/cancelled is gone
    assert "note: settled: pod ml/train-old is being deleted" in err
    code, out, err = _run("place", "-f", _file("terminating.yaml"), "--no-settle")
    assert code == 1 and "note: now (--no-settle): pod ml/train-old" in err
    assert "ml/train-new                             -" in out


def test_explain_gives_both_views():
    code, out, _ = _run("explain", "-f", _file("terminating.yaml"))
    assert code == 0
    assert (
        "pod ml/train-new: pending now (0/2 nodes are available: 2 cannot allocate all claims); on node gpu-1: "
        "gpu.example.com/gpu-1/gpu-0 held by terminating pod ml/train-old; fits once it is gone "
        "(settled: placed on gpu-1)"
    ) in out
    _, out, _ = _run("explain", "-f", _file("terminal-claims.yaml"), "--pod", "ml/eval-next", "--no-settle")
    assert "held by Failed pod ml/eval-failed" in out and "pod ml/train-next: pending now" not in out


# ------------------------------------------------------------------ the scheduler oracle
ORACLE_FILES = ("terminal-claims.yaml", "terminating.yaml", "noexecute.yaml", "rollout.yaml")


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
@pytest.mark.parametrize("name", ORACLE_FILES)
def test_now_clock_is_kube_schedulers_view(name, minor):
    from draopt.crosscheck import gobuild
    from draopt.crosscheck.run import crosscheck
    from draopt.kube.features import Features

    if gobuild.go_path() is None:
        pytest.skip("Go is not installed: no scheduler oracle")
    report = crosscheck(
        load_files([_file(name)]), kubernetes_version=minor, features=Features.from_gates({}, minor), timeout=120
    )
    assert report.identical, [d.text() for d in report.differences]
    assert all(p.kubernetes_node == "" for p in report.pods)  # every pending pod waits on the now clock


def test_allocate_uses_the_devices_a_terminal_pod_released(tmp_path):
    extra = tmp_path / "claim.yaml"
    extra.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: extra, namespace: ml}\n"
        "spec:\n  devices:\n    requests:\n    - name: gpu\n      exactly: {deviceClassName: gpu.example.com}\n"
    )
    paths = [_file("terminal-claims.yaml"), str(extra)]
    settled = draopt.allocate(paths, node="gpu-1", claims=["ml/extra"])
    assert settled.allocated and any("deallocates claim ml/train-done-gpu-h5ltz" in n for n in settled.notes)
    now = draopt.allocate(paths, node="gpu-1", claims=["ml/extra"], settle=False)
    assert not now.allocated


REPLICASET_WITH_A_TYPO = """\
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: ml, uid: u-rs}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}, bogusField: 1}]
---
apiVersion: v1
kind: Pod
metadata:
  name: web-old
  namespace: ml
  labels: {app: web}
  deletionTimestamp: "2026-07-01T12:00:00Z"
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: u-rs, controller: true}]
spec: {nodeName: n1, containers: [{name: c, image: x, resources: {requests: {cpu: "3"}}}]}
status: {phase: Running}
"""


def test_a_template_warning_is_said_once_though_the_controllers_expand_twice(tmp_path):
    path = tmp_path / "rs.yaml"
    path.write_text(REPLICASET_WITH_A_TYPO)
    code, out, err = _run("place", "-f", str(path))
    assert err.count('unknown field "spec.containers[0].bogusField"') == 1
    # settled: the 3-cpu pod being deleted is gone, both replicas fit (now: one of them waits)
    assert code == 0 and out.count(" n1 ") == 2
    code, out, _ = _run("place", "-f", str(path), "--no-settle")
    assert code == 1 and out.count(" n1 ") == 1


# ------------------------------------------------------------------ a suspended Job
def test_suspended_jobs_active_pods_are_deleted_when_settled():
    """The Job controller deletes every active pod of a suspended Job (job_controller.go manageJob),
    bound or not, and makes none while suspended: on the settled clock the running pod's cpu is free
    for the other pod and the pending one is gone."""
    out = draopt.place(_file("suspended-job.yaml"))
    placed = {p.pod: p.node for p in out.result.pods}
    assert placed == {"default/other": "node-1"}
    notes = "\n".join(out.workload.notes)
    assert (
        "pod ml/train-a belongs to suspended Job ml/train (spec.suspend: true): the Job controller deletes it" in notes
    )
    assert "pod ml/train-b belongs to suspended Job ml/train" in notes
    assert "replaces it" not in notes  # suspended: nothing replaces them


def test_suspended_jobs_pods_are_still_there_now():
    """At the dump's moment the Job controller has not acted yet: the running pod holds its cpu, the
    pending one may be placed (as kube-scheduler 1.36/1.37 do: tested against the oracle below)."""
    out = draopt.place(_file("suspended-job.yaml"), settle=False)
    placed = {p.pod: p.node for p in out.result.pods}
    assert placed == {"default/other": None, "ml/train-b": "node-1"}
    assert any("pod ml/train-b belongs to suspended Job" in n and "may be placed" in n for n in out.workload.notes)


@pytest.mark.parametrize("minor", ["1.36", "1.37"])
def test_suspended_jobs_pods_now_are_kube_schedulers_view(minor):
    from draopt.crosscheck import gobuild
    from draopt.crosscheck.run import crosscheck
    from draopt.kube.features import Features

    if gobuild.go_path() is None:
        pytest.skip("Go is not installed: no scheduler oracle")
    report = crosscheck(
        load_files([_file("suspended-job.yaml")]),
        kubernetes_version=minor,
        features=Features.from_gates({}, minor),
        timeout=120,
    )
    assert report.identical, [d.text() for d in report.differences]
