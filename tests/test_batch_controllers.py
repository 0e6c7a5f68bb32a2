"""Kubeflow batch jobs expanded into the pods their controllers create (draopt.kube.batch_controllers).

Shapes: kubeflow/mpi-operator examples/v2beta1/pi/pi.yaml, kubeflow/training-operator (release-1.9)
examples/pytorch/simple.yaml, kubeflow/trainer examples/yaml/01-multi-node.yaml with its runtime
manifests/base/runtimes/torch_distributed.yaml, and ../shared/realworld/round2/d-* (dranet's OKE GB200
mpi-job.yaml). Controller sources: mpi-operator pkg/controller/mpi_job_controller.go (newWorker,
newLauncherJob, newLauncherPodTemplate, getOrCreateWorker), training-operator
pkg/controller.v1/common/pod.go (createNewPod, GenGeneralName) and pytorch/pytorchjob_controller.go
(IsMasterRole), trainer pkg/runtime/core/trainingruntime.go and plugins/jobset/builder.go.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from draopt.errors import InputError
from draopt.kube.loader import load_files, load_text

ROUND2 = Path(__file__).resolve().parents[2] / "shared" / "realworld" / "round2"

NODE = """\
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}
status: {allocatable: {cpu: "64", memory: 256Gi, pods: "110"}}
---
"""

PI = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: pi
spec:
  slotsPerWorker: 1
  runPolicy:
    cleanPodPolicy: Running
    ttlSecondsAfterFinished: 60
  sshAuthMountPath: /home/mpiuser/.ssh
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - image: mpioperator/mpi-pi:openmpi
            name: mpi-launcher
            command: [mpirun]
            args: ["-n", "2", /home/mpiuser/pi]
            resources:
              limits: {cpu: 1, memory: 1Gi}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - image: mpioperator/mpi-pi:openmpi
            name: mpi-worker
            command: [/usr/sbin/sshd]
            args: [-De, -f, /home/mpiuser/.sshd_config]
            resources:
              limits: {cpu: 1, memory: 1Gi}
"""

PYTORCH_SIMPLE = """\
apiVersion: "kubeflow.org/v1"
kind: PyTorchJob
metadata:
  name: pytorch-simple
  namespace: kubeflow
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command: ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command: ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]
"""

TORCH_RUNTIME = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: torch-distributed
  labels:
    trainer.kubeflow.org/framework: torch
spec:
  mlPolicy:
    numNodes: 1
    torch: {}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime
"""

MULTI_NODE = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: multi-node-example
spec:
  runtimeRef:
    apiGroup: trainer.kubeflow.org
    kind: ClusterTrainingRuntime
    name: torch-distributed
  trainer:
    numNodes: 3
    command: [torchrun, --no-python, python3, -c, "print(1)"]
    resourcesPerNode:
      requests: {cpu: "2"}
"""


def load(text: str):
    notes = io.StringIO()
    objects = load_text(text, "input.yaml", notes=notes)
    return objects, notes.getvalue()


def pods(objects) -> dict:
    return {p.name: p for p in objects.pods}


def label(pod, key: str) -> str | None:
    return pod.metadata.labels.get(key)


# ---------------------------------------------------------------- MPIJob
def test_mpijob_pi_workers_and_launcher_job():
    """newWorker: `pi-worker-<i>` owned by the MPIJob, default labels plus replica-index, hostname and
    subdomain (the job's Service); the launcher is the Job `pi-launcher`, whose pod carries
    job-role launcher, hostname pi-launcher, restartPolicy OnFailure (launcher default)."""
    objects, _ = load(NODE + PI)
    got = pods(objects)
    w0, w1 = got["pi-worker-0"], got["pi-worker-1"]
    assert label(w1, "training.kubeflow.org/replica-index") == "1"
    assert label(w0, "training.kubeflow.org/job-role") == "worker"
    assert label(w0, "training.kubeflow.org/operator-name") == "mpi-operator"
    assert w0.to_k8s()["spec"]["hostname"] == "pi-worker-0" and w0.to_k8s()["spec"]["subdomain"] == "pi"
    assert w0.to_k8s()["spec"]["restartPolicy"] == "Never"
    assert w0.to_k8s()["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"
    (launcher,) = [p for n, p in got.items() if n.startswith("pi-launcher-")]
    assert label(launcher, "training.kubeflow.org/job-role") == "launcher"
    assert label(launcher, "job-name") == "pi-launcher"  # the Job controller's labels
    spec = launcher.to_k8s()["spec"]
    assert spec["hostname"] == "pi-launcher" and spec["restartPolicy"] == "OnFailure"
    assert len(got) == 3


def test_mpijob_launcher_as_worker_shifts_worker_indexes():
    """workerReplicaIndexLabel: with runLauncherAsWorker the launcher is replica-index 0, workers 1..n."""
    objects, _ = load(NODE + PI.replace("  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  runLauncherAsWorker: true\n"))
    got = pods(objects)
    assert label(got["pi-worker-0"], "training.kubeflow.org/replica-index") == "1"
    (launcher,) = [p for n, p in got.items() if n.startswith("pi-launcher-")]
    assert label(launcher, "training.kubeflow.org/replica-index") == "0"


def test_mpijob_wait_for_workers_ready_makes_no_launcher_yet():
    objects, notes = load(
        NODE
        + PI.replace("  slotsPerWorker: 1\n", "  slotsPerWorker: 1\n  launcherCreationPolicy: WaitForWorkersReady\n")
    )
    assert sorted(pods(objects)) == ["pi-worker-0", "pi-worker-1"]
    assert "created once the 2 workers are ready" in notes


def test_mpijob_scheduling_policy_makes_a_gang():
    """runPolicy.schedulingPolicy: the operator's PodGroup (minMember = minAvailable, default
    workers + launcher): simulated as a gang PodGroup named after the job."""
    objects, notes = load(
        NODE + PI.replace("    cleanPodPolicy: Running\n", "    cleanPodPolicy: Running\n    schedulingPolicy: {}\n")
    )
    (group,) = objects.pod_groups
    assert group.name == "pi" and group.spec.scheduling_policy.gang.min_count == 3
    assert all(p.spec.scheduling_group.pod_group_name == "pi" for p in objects.pods)
    assert "simulated as the gang PodGroup default/pi" in notes


def test_mpijob_suspended_makes_nothing_and_says_so():
    objects, notes = load(
        NODE + PI.replace("    cleanPodPolicy: Running\n", "    cleanPodPolicy: Running\n    suspend: true\n")
    )
    assert objects.pods == [] and "is suspended (spec.runPolicy.suspend: true)" in notes


def test_mpijob_without_launcher_is_an_input_error():
    text = PI[: PI.index("    Launcher:")] + PI[PI.index("    Worker:") :]
    with pytest.raises(InputError, match=r"MPIJob default/pi: field spec.mpiReplicaSpecs.Launcher: missing"):
        load(NODE + text)


def test_dranet_gb200_mpijob_with_its_workers_in_the_dump():
    """d-rct-and-mpijob.yaml + d-workers-1nic-aligned.yaml: the 3 worker pods are in the input (owned by
    the MPIJob; their operator-name label is v0.7's, so the scale-down selector does not see worker-2):
    no worker is made again; the launcher Job's pod is made; 2 of the 3 workers fit (anti-affinity)."""
    paths = [ROUND2 / n for n in ("d-oke-gb200-cluster.yaml", "d-rct-and-mpijob.yaml", "d-workers-1nic-aligned.yaml")]
    if not all(p.exists() for p in paths):
        pytest.skip("round-2 inputs not available")
    from draopt.placement import place

    objects = load_files([str(p) for p in paths], notes=io.StringIO())
    names = sorted(p.name for p in objects.pods)
    assert names[:1][0].startswith("nccl-test-dra-launcher-")
    assert names[1:] == ["nccl-test-dra-worker-0", "nccl-test-dra-worker-1", "nccl-test-dra-worker-2"]
    result = place(objects).result
    workers = [p for p in result.pods if "-worker-" in p.pod]
    assert sum(p.placed for p in workers) == 2


# ---------------------------------------------------------------- PyTorchJob
def test_pytorchjob_simple_master_and_worker():
    """createNewPod: `<name>-<type lower>-<index>`, GenLabels plus replica-type/index, job-role master on
    the Master; restartPolicy from the replica spec."""
    objects, _ = load(NODE + PYTORCH_SIMPLE)
    got = pods(objects)
    assert sorted(got) == ["pytorch-simple-master-0", "pytorch-simple-worker-0"]
    master, worker = got["pytorch-simple-master-0"], got["pytorch-simple-worker-0"]
    assert master.namespace == "kubeflow"
    assert label(master, "training.kubeflow.org/job-role") == "master"
    assert label(worker, "training.kubeflow.org/job-role") is None
    assert label(worker, "training.kubeflow.org/replica-type") == "worker"
    assert label(worker, "training.kubeflow.org/operator-name") == "pytorchjob-controller"
    assert worker.to_k8s()["spec"]["restartPolicy"] == "OnFailure"


def test_pytorchjob_without_master_worker_0_is_master():
    """IsMasterRole: without a Master replica, worker 0 has the master role."""
    text = PYTORCH_SIMPLE[: PYTORCH_SIMPLE.index("    Master:")] + PYTORCH_SIMPLE[PYTORCH_SIMPLE.index("    Worker:") :]
    got = pods(load(NODE + text.replace("      replicas: 1\n", "      replicas: 3\n"))[0])
    assert sorted(got) == [f"pytorch-simple-worker-{i}" for i in range(3)]
    assert label(got["pytorch-simple-worker-0"], "training.kubeflow.org/job-role") == "master"
    assert label(got["pytorch-simple-worker-1"], "training.kubeflow.org/job-role") is None


def test_other_kubeflow_kinds_still_say_they_are_not_modelled():
    _, notes = load(NODE + PYTORCH_SIMPLE.replace("kind: PyTorchJob", "kind: TFJob"))
    assert "skipped 1 TFJob object(s): creates pods that draopt does not model" in notes


# ---------------------------------------------------------------- TrainJob
def test_trainjob_multi_node_becomes_its_runtime_jobset():
    """01-multi-node.yaml on torch-distributed: JobSet `multi-node-example` from the runtime's template;
    the trainer Job gets parallelism = completions = numNodes 3 (Indexed: JobSet's default), the
    trainer's command on container `node`, resourcesPerNode merged in."""
    objects, _ = load(NODE + TORCH_RUNTIME + "---\n" + MULTI_NODE)
    got = sorted(objects.pods, key=lambda p: p.name)
    assert len(got) == 3
    for i, pod in enumerate(got):
        assert pod.name.startswith(f"multi-node-example-node-0-{i}-")
        assert label(pod, "jobset.sigs.k8s.io/jobset-name") == "multi-node-example"
        container = pod.to_k8s()["spec"]["containers"][0]
        assert container["command"][0] == "torchrun"
        assert container["resources"]["requests"] == {"cpu": "2"}
        assert container["image"] == "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"


def test_trainjob_num_nodes_defaults_to_the_runtime_ml_policy():
    text = MULTI_NODE.replace("    numNodes: 3\n", "")
    objects, _ = load(NODE + TORCH_RUNTIME.replace("numNodes: 1", "numNodes: 2") + "---\n" + text)
    assert len(objects.pods) == 2


def test_trainjob_without_its_runtime_is_a_note():
    objects, notes = load(NODE + MULTI_NODE)
    assert objects.pods == []
    assert "its runtime ClusterTrainingRuntime torch-distributed is not in the input" in notes


def test_trainjob_pod_group_policy_makes_a_gang():
    runtime = TORCH_RUNTIME.replace(
        "  mlPolicy:\n", "  podGroupPolicy:\n    coscheduling: {scheduleTimeoutSeconds: 100}\n  mlPolicy:\n"
    )
    objects, notes = load(NODE + runtime + "---\n" + MULTI_NODE)
    (group,) = objects.pod_groups
    assert group.spec.scheduling_policy.gang.min_count == 3
    assert all(p.spec.scheduling_group.pod_group_name == "multi-node-example" for p in objects.pods)


def test_suspended_trainjob_makes_nothing():
    objects, notes = load(NODE + TORCH_RUNTIME + "---\n" + MULTI_NODE.replace("spec:\n", "spec:\n  suspend: true\n", 1))
    assert objects.pods == [] and "is suspended" in notes
