"""Controllers adopt orphans; a repeated object from a later `-f` is applied over the earlier one.

Shapes: a `kubectl get -o yaml` dump (pods with status, nodeName, labels, no ownerReferences: what
a dump stripped of owners or pods recreated by hand look like) next to the manifests they came
from (NVIDIA's quickstart demo/specs/quickstart/v1/gpu-test4.yaml, a Deployment of 4 replicas).
Kubernetes: pkg/controller/controller_ref_manager.go (ClaimPods / ClaimObject), replicaset/
replica_set.go, deployment/sync.go (getNewReplicaSet: selector plus pod-template-hash),
statefulset/stateful_set.go (isMemberOf), daemon/daemon_controller.go, job/job_controller.go;
kubectl apply: k8s.io/kubectl/pkg/cmd/apply (three-way patch), pkg/apis/core/validation
ValidatePodUpdate.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

from draopt.kube.loader import load_files

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-b, labels: {kubernetes.io/hostname: node-b}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
"""

GPU_TEST4_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  namespace: gpu-test4
  name: pod
  labels:
    app: gpu-test4-pod
spec:
  replicas: 4
  selector:
    matchLabels:
      app: pod
  template:
    metadata:
      labels:
        app: pod
    spec:
      containers:
      - name: ctr0
        image: ubuntu:22.04
        command: ["bash", "-c"]
        args: ["nvidia-smi -L; trap 'exit 0' TERM; sleep 9999 & wait"]
"""


def dump_pod(
    name: str,
    namespace: str = "default",
    labels: dict | None = None,
    node: str | None = "node-a",
    phase: str = "Running",
    extra_meta: str = "",
) -> str:
    """A pod as `kubectl get pod -o yaml` prints it (defaults filled in, status), without owners."""
    label_text = "".join(f"\n    {k}: {v}" for k, v in (labels or {}).items()) or " {}"
    node_text = f"\n  nodeName: {node}" if node else ""
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
        f"  resourceVersion: \"81234\"\n  creationTimestamp: \"2026-07-01T10:01:00Z\"\n"
        f"  labels:{label_text}{extra_meta}\n"
        f"spec:\n  containers:\n  - name: ctr0\n    image: ubuntu:22.04\n    imagePullPolicy: IfNotPresent\n"
        f"    terminationMessagePath: /dev/termination-log\n    resources: {{requests: {{cpu: \"1\"}}}}\n"
        f"  restartPolicy: Always\n  schedulerName: default-scheduler{node_text}\n"
        f"status:\n  phase: {phase}\n"
    )


def load(tmp_path: Path, *files: str) -> tuple[object, str]:
    paths = []
    for i, text in enumerate(files):
        p = tmp_path / f"f{i}.yaml"
        p.write_text(text)
        paths.append(str(p))
    notes = io.StringIO()
    return load_files(paths, notes=notes), notes.getvalue()


def names(objects) -> list[str]:
    return sorted(f"{p.namespace}/{p.name}" for p in objects.pods)


# ---------------------------------------------------------------- adoption
def test_gpu_test4_deployment_adopts_its_dumped_pods(tmp_path):
    """gpu-test4: a dump of the 4 running replicas (labels as kubectl prints them: app and
    pod-template-hash; ownerReferences stripped) and the Deployment's manifest: the ReplicaSet
    `pod-<hash>` selects app=pod,pod-template-hash=<hash> and adopts the 4 (ClaimPods): 4 pods, not 8."""
    hashed = {"app": "pod", "pod-template-hash": "6d9f8c7b5"}
    dump = "---\n".join(
        dump_pod(f"pod-6d9f8c7b5-{s}", "gpu-test4", hashed) for s in ("7xq2k", "b2lm9", "k4dzt", "wp8sn")
    )
    objects, notes = load(tmp_path, NODE + "---\n" + dump, GPU_TEST4_DEPLOYMENT)
    assert len(objects.pods) == 4
    assert "Deployment gpu-test4/pod adopts 4 pod(s) without a controller reference" in notes


def test_bare_pods_without_the_template_hash_are_not_adopted_by_a_deployment(tmp_path):
    """Bare pods with the Deployment's labels but no pod-template-hash do not match its
    ReplicaSet's selector (deployment/sync.go getNewReplicaSet adds the label to the selector):
    the ReplicaSet creates 4 more; a note says why."""
    dump = "---\n".join(dump_pod(f"pod-{i}", "gpu-test4", {"app": "pod"}) for i in range(4))
    objects, notes = load(tmp_path, NODE + "---\n" + dump, GPU_TEST4_DEPLOYMENT)
    assert len(objects.pods) == 8
    assert "4 pod(s) match its selector but have no pod-template-hash label" in notes


REPLICA_SET = """\
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector:
    matchExpressions:
    - {key: app, operator: In, values: [web]}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]
"""


def test_replica_set_adopts_active_orphans_of_its_namespace_only(tmp_path):
    """Adopted: active, no controller reference, same namespace, selector matches, not
    terminating. Not: a Succeeded pod (FilterActivePods runs before claimPods), a pod being
    deleted, one in another namespace, one with another controller."""
    other_owner = (
        "\n  ownerReferences:\n  - {apiVersion: apps/v1, kind: ReplicaSet, name: other, uid: 1, controller: true}"
    )
    dump = "---\n".join(
        [
            dump_pod("web-orphan1", labels={"app": "web"}),
            dump_pod("web-done", labels={"app": "web"}, phase="Succeeded"),
            dump_pod("web-deleting", labels={"app": "web"}, extra_meta='\n  deletionTimestamp: "2026-07-01T11:00:00Z"'),
            dump_pod("web-elsewhere", namespace="other", labels={"app": "web"}),
            dump_pod("web-owned-elsewhere", labels={"app": "web"}, extra_meta=other_owner),
        ]
    )
    objects, notes = load(tmp_path, NODE + "---\n" + dump, REPLICA_SET)
    created = [
        p
        for p in objects.pods
        if p.name.startswith("web-")
        and p.name[4:] not in ("orphan1", "done", "deleting", "elsewhere", "owned-elsewhere")
    ]
    assert len(created) == 2  # 3 replicas, 1 adopted
    assert "ReplicaSet default/web adopts 1 pod(s)" in notes and "web-orphan1" in notes


def test_first_controller_in_input_order_adopts(tmp_path):
    """Two ReplicaSets select the same orphan: the first adopts it (a cluster: whichever syncs
    first); the second creates all its replicas."""
    second = REPLICA_SET.replace("name: web,", "name: web2,").replace("replicas: 3", "replicas: 1")
    objects, notes = load(
        tmp_path, NODE + "---\n" + dump_pod("web-orphan1", labels={"app": "web"}), REPLICA_SET + "---\n" + second
    )
    assert len([p for p in objects.pods if p.name.startswith("web2-")]) == 1
    assert len([p for p in objects.pods if p.name.startswith("web-")]) == 3


def test_stateful_set_adopts_members_by_name_and_selector(tmp_path):
    """getPodsForStatefulSet claims pods matching the selector that are members (`<set>-<ordinal>`):
    db-0 is adopted, db-x is not a member; db-1 and db-2 are created."""
    sts = textwrap.dedent("""\
    apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: db, namespace: default}
    spec:
      replicas: 3
      serviceName: db
      selector: {matchLabels: {app: db}}
      template:
        metadata: {labels: {app: db}}
        spec:
          containers: [{name: c, image: postgres}]
    """)
    dump = dump_pod("db-0", labels={"app": "db"}) + "---\n" + dump_pod("db-x", labels={"app": "db"})
    objects, notes = load(tmp_path, NODE + "---\n" + dump, sts)
    assert names(objects) == ["default/db-0", "default/db-1", "default/db-2", "default/db-x"]
    assert "StatefulSet default/db adopts 1 pod(s)" in notes


def test_daemon_set_adopts_the_orphan_on_a_node(tmp_path):
    """A matching orphan on node-a is the DaemonSet's pod there: only node-b gets a new one."""
    ds = textwrap.dedent("""\
    apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: agent, namespace: default}
    spec:
      selector: {matchLabels: {app: agent}}
      template:
        metadata: {labels: {app: agent}}
        spec:
          containers: [{name: c, image: agent}]
    """)
    objects, _ = load(tmp_path, NODE + "---\n" + dump_pod("agent-abcde", labels={"app": "agent"}), ds)
    made = [p for p in objects.pods if p.name != "agent-abcde"]
    assert len(made) == 1
    assert "node-b" in str(made[0].spec.affinity.to_k8s())


def test_job_adopts_pods_with_its_controller_uid_and_not_a_new_jobs(tmp_path):
    """A dumped Job keeps its generated selector (batch.kubernetes.io/controller-uid: its uid):
    its orphan pods are adopted (completions 2, parallelism 2: one more pod). The same Job as a
    manifest (no uid: the API server generates a selector with a new uid) adopts nothing."""
    uid = "7f0c1d2e-0000-4000-8000-000000000001"
    job = textwrap.dedent(f"""\
    apiVersion: batch/v1
    kind: Job
    metadata: {{name: train, namespace: default, uid: {uid}}}
    spec:
      parallelism: 2
      completions: 2
      selector: {{matchLabels: {{batch.kubernetes.io/controller-uid: {uid}}}}}
      template:
        metadata: {{labels: {{batch.kubernetes.io/controller-uid: {uid}, job-name: train}}}}
        spec:
          restartPolicy: Never
          containers: [{{name: c, image: trainer}}]
    """)
    orphan = dump_pod("train-abcde", labels={"batch.kubernetes.io/controller-uid": uid, "job-name": "train"})
    objects, notes = load(tmp_path, NODE + "---\n" + orphan, job)
    assert len(objects.pods) == 2 and "Job default/train adopts 1 pod(s)" in notes
    manifest = "\n".join(line for line in job.splitlines() if "selector" not in line).replace(f", uid: {uid}", "")
    objects, notes = load(tmp_path, NODE + "---\n" + orphan, manifest)
    assert len(objects.pods) == 3 and "adopts" not in notes


def test_jobset_adopts_nothing(tmp_path):
    """JobSet finds its Jobs by controller reference only (its owner field index)."""
    jobset = textwrap.dedent("""\
    apiVersion: jobset.x-k8s.io/v1alpha2
    kind: JobSet
    metadata: {name: js, namespace: default}
    spec:
      replicatedJobs:
      - name: w
        template:
          spec:
            parallelism: 1
            completions: 1
            template:
              spec:
                restartPolicy: Never
                containers: [{name: c, image: x}]
    """)
    orphan = dump_pod("js-w-0-0-abcde", labels={"jobset.sigs.k8s.io/jobset-name": "js"})
    objects, notes = load(tmp_path, NODE + "---\n" + orphan, jobset)
    assert len(objects.pods) == 2 and "adopts" not in notes


# ---------------------------------------------------------------- repeated objects (kubectl apply)
def test_a_manifest_over_the_dumped_running_pod_leaves_it_running(tmp_path):
    """kubectl apply -f dump.yaml -f pod.yaml: the manifest does not set nodeName or status, so
    the three-way patch keeps them: the pod stays on node-a, nothing to place. The note names
    the file that won."""
    dump = NODE + "---\n" + dump_pod("solo", labels={"app": "solo"})
    manifest = textwrap.dedent("""\
    apiVersion: v1
    kind: Pod
    metadata: {name: solo, labels: {app: solo, tier: demo}}
    spec:
      containers:
      - name: ctr0
        image: ubuntu:22.04
        resources: {requests: {cpu: "1"}}
    """)
    objects, notes = load(tmp_path, dump, manifest)
    (pod,) = objects.pods
    assert pod.spec.node_name == "node-a" and pod.status.phase == "Running"
    assert pod.metadata.labels == {"app": "solo", "tier": "demo"}
    assert (
        f"Pod default/solo: given in {tmp_path}/f0.yaml and again in {tmp_path}/f1.yaml: "
        f"{tmp_path}/f1.yaml's is applied over it" in notes
    )


def test_a_pod_manifest_changing_the_spec_is_refused_and_the_earlier_kept(tmp_path):
    """ValidatePodUpdate: a running Pod's resources cannot change; kubectl reports the error and
    goes on: the dumped pod is kept, a note says so."""
    dump = NODE + "---\n" + dump_pod("solo")
    manifest = textwrap.dedent("""\
    apiVersion: v1
    kind: Pod
    metadata: {name: solo}
    spec:
      containers:
      - name: ctr0
        image: ubuntu:22.04
        resources: {requests: {cpu: "4"}}
    """)
    objects, notes = load(tmp_path, dump, manifest)
    (pod,) = objects.pods
    assert pod.to_k8s()["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"
    assert "the API server refuses the second" in notes and "f0.yaml's is kept" in notes


def test_a_later_deployment_applies_over_the_earlier_and_last_applied_fields_go(tmp_path):
    """The second Deployment (replicas 2) is applied over the first (replicas 4, its
    last-applied-configuration listing a label the second leaves out: deleted, as the
    three-way patch deletes it)."""
    import json

    first = GPU_TEST4_DEPLOYMENT.replace(
        "  labels:\n    app: gpu-test4-pod\n",
        "  labels:\n    app: gpu-test4-pod\n    stale: yes-it-is\n  annotations:\n"
        "    kubectl.kubernetes.io/last-applied-configuration: '"
        + json.dumps({"metadata": {"labels": {"app": "gpu-test4-pod", "stale": "yes-it-is"}}})
        + "'\n",
    )
    second = GPU_TEST4_DEPLOYMENT.replace("replicas: 4", "replicas: 2")
    objects, notes = load(tmp_path, NODE + "---\n" + first, second)
    assert len(objects.pods) == 2
    assert "Deployment gpu-test4/pod: given in" in notes and "f1.yaml's is applied over it" in notes


def test_the_same_object_twice_in_one_file_is_still_refused(tmp_path):
    """Within one file the repeat is an input error as before (one of the two would vanish)."""
    import pytest
    from draopt.errors import InputError
    from draopt.kube.workload import expand

    text = (
        NODE
        + "---\n"
        + dump_pod("solo", node=None, phase="Pending")
        + "---\n"
        + dump_pod("solo", node=None, phase="Pending")
    )
    objects, _ = load(tmp_path, text)
    with pytest.raises(InputError, match="given twice"):
        expand(objects)


def test_an_identical_repeat_is_said_unchanged(tmp_path):
    objects, notes = load(tmp_path, NODE, NODE)
    assert len(objects.nodes) == 2 and "unchanged" in notes
