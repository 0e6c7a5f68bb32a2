"""Workload controllers become the Pods their controllers would create (draopt.kube.controllers)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import yaml

from draopt import cli
from draopt.kube.controllers import NAME_ALPHABET, template_hash
from draopt.errors import InputError
from draopt.notes import DraoptWarning
from draopt.kube.loader import load_files, load_text
from draopt.placement import place

REALWORLD = Path(__file__).resolve().parents[2] / "shared" / "realworld"

CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: device.driver == 'gpu.example.com'}}]
"""


def node(name: str, gpus: int, taints: str = "[]", labels: str = "{}") -> str:
    devices = "\n".join(f"  - name: gpu-{i}" for i in range(gpus))
    return f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {labels}}}
spec: {{taints: {taints}}}
status: {{allocatable: {{cpu: '64', memory: 256Gi, pods: '110'}}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name}-gpu}}
spec:
  driver: gpu.example.com
  nodeName: {name}
  pool: {{name: {name}, generation: 1, resourceSliceCount: 1}}
  devices:
{devices}
"""


TEMPLATE = """
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {namespace: ml, name: one-gpu}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
"""

POD_SPEC = """
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
      containers:
      - name: ctr
        image: ubuntu:24.04
        resources: {claims: [{name: gpu}]}
"""


def docs(*parts: str) -> str:
    return "\n---\n".join(p.strip().lstrip("-").strip() for p in parts if p.strip()) + "\n"


def pod_names(objs) -> list[str]:
    return [p.name for p in objs.pods]


SUFFIX = f"[{NAME_ALPHABET}]{{5}}"


# ------------------------------------------------------------------ Deployment / ReplicaSet
DEPLOYMENT = (
    """
apiVersion: apps/v1
kind: Deployment
metadata: {namespace: ml, name: infer, labels: {app: infer}}
spec:
  replicas: 4
  selector: {matchLabels: {app: infer}}
  template:
    metadata: {labels: {app: infer}, annotations: {team: ml}}
    spec:
"""
    + POD_SPEC
)


def test_deployment_makes_its_replicasets_pods_with_names_labels_owners():
    objs = load_text(docs(CLASS, node("n1", 4), TEMPLATE, DEPLOYMENT), "t")
    assert len(objs.pods) == 4
    h = objs.pods[0].metadata.labels["pod-template-hash"]
    assert re.fullmatch(f"[{NAME_ALPHABET}]+", h)
    for p in objs.pods:
        assert re.fullmatch(f"infer-{h}-{SUFFIX}", p.name), p.name
        assert p.namespace == "ml"
        assert p.metadata.labels == {"app": "infer", "pod-template-hash": h}
        assert p.metadata.annotations == {"team": "ml"}
        (owner,) = p.to_k8s()["metadata"]["ownerReferences"]
        assert owner["kind"] == "ReplicaSet" and owner["name"] == f"infer-{h}" and owner["controller"] is True
        assert owner["uid"]
    assert len(set(pod_names(objs))) == 4
    # Deterministic: the same input gives the same names.
    assert pod_names(load_text(docs(CLASS, node("n1", 4), TEMPLATE, DEPLOYMENT), "t")) == pod_names(objs)
    out = place(objs, policy="first-fit")
    assert all(p.placed for p in out.result.pods)
    # Each replica got its own claim from the template, named <pod>-<claim>.
    assert sorted(out.result.claims) == sorted(f"ml/{n}-gpu" for n in pod_names(objs))
    assert sorted(a.devices.results[0].device for a, _ in out.result.claims.values()) == [
        "gpu-0",
        "gpu-1",
        "gpu-2",
        "gpu-3",
    ]


def test_pod_template_hash_follows_the_template():
    changed = DEPLOYMENT.replace("image: ubuntu:24.04", "image: ubuntu:22.04")
    a = load_text(docs(CLASS, TEMPLATE, DEPLOYMENT), "t").pods[0].metadata.labels["pod-template-hash"]
    b = load_text(docs(CLASS, TEMPLATE, changed), "t").pods[0].metadata.labels["pod-template-hash"]
    assert a != b
    assert template_hash({"x": 1}) == template_hash({"x": 1}) != template_hash({"x": 2})


def test_replicaset_counts_the_pods_it_already_owns_kind_list_with_managed_fields(capsys):
    """A `kubectl get all -o yaml` dump: a List with managedFields, a Deployment, its ReplicaSet
    (replicas 3), two of its pods running, a Service and a ConfigMap."""
    running = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"infer-7d4b9c-{s}",
                "namespace": "ml",
                "uid": f"uid-{s}",
                "labels": {"app": "infer", "pod-template-hash": "7d4b9c"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": "infer-7d4b9c",
                        "uid": "rs-uid",
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
                "managedFields": [
                    {
                        "apiVersion": "v1",
                        "fieldsType": "FieldsV1",
                        "manager": "kube-controller-manager",
                        "operation": "Update",
                        "fieldsV1": {"f:metadata": {"f:labels": {}}},
                    }
                ],
            },
            "spec": {"nodeName": "n1", "containers": [{"name": "ctr", "image": "ubuntu:24.04"}]},
            "status": {"phase": "Running"},
        }
        for s in ("x2b4k", "q9z7w")
    ]
    dep = yaml.safe_load(DEPLOYMENT)
    dep["metadata"].update(uid="dep-uid", managedFields=[{"manager": "kubectl", "operation": "Update"}])
    rs = yaml.safe_load(DEPLOYMENT)
    rs["kind"] = "ReplicaSet"
    rs["spec"]["replicas"] = 3
    rs["metadata"] = {
        "name": "infer-7d4b9c",
        "namespace": "ml",
        "uid": "rs-uid",
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "infer", "uid": "dep-uid", "controller": True}
        ],
        "managedFields": [{"manager": "kube-controller-manager", "operation": "Update"}],
    }
    rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] = "7d4b9c"
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "infer", "namespace": "ml"},
        "spec": {"ports": [{"port": 80}]},
    }
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kube-root-ca.crt", "namespace": "ml"},
        "data": {"ca.crt": "..."},
    }
    dump = yaml.safe_dump(
        {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": running + [svc, dep, rs, cm]}
    )
    notes = io.StringIO()
    objs = load_text(docs(CLASS, TEMPLATE) + "---\n" + dump, "dump", notes=notes)
    assert notes.getvalue().splitlines() == [
        "note: skipped 1 ConfigMap object(s): not used for placement",
        "note: skipped 1 Service object(s): not used for placement",
    ]
    made = [p for p in objs.pods if not p.spec.node_name]
    assert len(made) == 1  # replicas 3, two running; the Deployment leaves it to its ReplicaSet
    assert re.fullmatch(f"infer-7d4b9c-{SUFFIX}", made[0].name)
    assert made[0].to_k8s()["metadata"]["ownerReferences"][0]["uid"] == "rs-uid"
    with pytest.raises(InputError, match=r"skipped 1 ConfigMap object\(s\).*--strict"):
        load_text(docs(CLASS, TEMPLATE) + "---\n" + dump, "dump", strict=True)


@pytest.mark.skipif(
    not (REALWORLD / "10-nvidia-quickstart-static-mig.yaml").exists()
    or not (REALWORLD / "rough" / "r17-nvidia-gpu-test4-with-deployment.yaml").exists(),
    reason="shared/realworld inputs not available",
)
def test_nvidia_gpu_test4_deployment_of_four_mig_pods(tmp_path):
    """realworld/10 expanded NVIDIA's gpu-test4 Deployment (replicas 4) by hand; the verbatim
    Deployment (rough/r17) must give the same allocation: each replica 1g+1g+2g+3g of one GPU."""
    hand = list(yaml.safe_load_all((REALWORLD / "10-nvidia-quickstart-static-mig.yaml").read_text()))
    demo = list(yaml.safe_load_all((REALWORLD / "rough" / "r17-nvidia-gpu-test4-with-deployment.yaml").read_text()))
    deployment = next(d for d in demo if d and d.get("kind") == "Deployment")
    cluster = [d for d in hand if d and not (d.get("kind") == "Pod" and d["metadata"].get("namespace") == "gpu-test4")]
    f = tmp_path / "cluster.yaml"
    f.write_text(yaml.safe_dump_all(cluster + [deployment]))
    objs = load_files([str(f)])
    mine = [p for p in objs.pods if p.namespace == "gpu-test4"]
    assert len(mine) == 4 and all(re.fullmatch(f"pod-[{NAME_ALPHABET}]+-{SUFFIX}", p.name) for p in mine)
    by_hand = place(load_files([str(REALWORLD / "10-nvidia-quickstart-static-mig.yaml")]), policy="first-fit")
    by_controller = place(objs, policy="first-fit")

    def mig_sets(result):
        out = []
        for key, (alloc, _) in result.claims.items():
            if key.startswith("gpu-test4/"):
                out.append(sorted(r.device for r in alloc.devices.results))
        return sorted(out)

    assert all(p.placed for p in by_controller.result.pods)
    assert len(mig_sets(by_controller.result)) == 4
    assert mig_sets(by_controller.result) == mig_sets(by_hand.result)
    for devices in mig_sets(by_controller.result):
        assert len({d.split("-mig-")[0] for d in devices}) == 1, devices  # one parent GPU


# ------------------------------------------------------------------ Job / CronJob
JOB = (
    """
apiVersion: batch/v1
kind: Job
metadata: {namespace: ml, name: example-dra-job}
spec:
  completions: 10
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
"""
    + POD_SPEC
)


def test_job_parallelism_2_of_10_completions_makes_two_pods():
    objs = load_text(docs(CLASS, node("n1", 1), TEMPLATE, JOB), "t")
    assert len(objs.pods) == 2
    for p in objs.pods:
        assert re.fullmatch(f"example-dra-job-{SUFFIX}", p.name)
        labels = p.metadata.labels
        assert labels["batch.kubernetes.io/job-name"] == labels["job-name"] == "example-dra-job"
        assert labels["batch.kubernetes.io/controller-uid"] == labels["controller-uid"]
        assert p.to_k8s()["metadata"]["ownerReferences"][0]["kind"] == "Job"
    out = place(objs, policy="first-fit")
    assert [p.placed for p in out.result.pods] == [True, False]  # one GPU for two pods


def test_website_job_verbatim_flow_mapping():
    path = REALWORLD / "rough" / "r17b-website-dra-example-job.yaml"
    if not path.exists():
        pytest.skip("shared/realworld inputs not available")
    objs = load_files([str(path)])
    assert [p.namespace for p in objs.pods] == ["default", "default"]
    assert all(
        p.spec.resource_claims[0].resource_claim_template_name == "example-resource-claim-template" for p in objs.pods
    )


def test_indexed_job_lowest_free_indexes_and_creation_order():
    job = (
        JOB.replace("parallelism: 2", "parallelism: 12")
        .replace("completions: 10", "completions: 12")
        .replace("spec:\n  completions", "spec:\n  completionMode: Indexed\n  completions")
    )
    objs = load_text(docs(CLASS, node("n1", 3), TEMPLATE, job), "t")
    idx = [p.metadata.labels["batch.kubernetes.io/job-completion-index"] for p in objs.pods]
    assert idx == [str(i) for i in range(12)]
    for p, i in zip(objs.pods, range(12)):
        assert re.fullmatch(f"example-dra-job-{i}-{SUFFIX}", p.name)
        assert p.metadata.annotations["batch.kubernetes.io/job-completion-index"] == str(i)
        assert p.to_k8s()["spec"]["hostname"] == f"example-dra-job-{i}"
    out = place(objs, policy="first-fit")
    placed = sorted(int(p.pod.rsplit("-", 2)[1]) for p in out.result.pods if p.placed)
    assert placed == [0, 1, 2]  # creation (index) order, not name order (0, 1, 10)


def test_indexed_job_counts_existing_pods():
    job = yaml.safe_load(JOB)
    job["spec"].update(completionMode="Indexed", completions=4, parallelism=2)
    done = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "example-dra-job-0-abcde",
            "namespace": "ml",
            "annotations": {"batch.kubernetes.io/job-completion-index": "0"},
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "example-dra-job", "uid": "u", "controller": True}
            ],
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
        "status": {"phase": "Succeeded"},
    }
    busy = yaml.safe_load(yaml.safe_dump(done))
    busy["metadata"].update(
        name="example-dra-job-1-fghjk", annotations={"batch.kubernetes.io/job-completion-index": "1"}
    )
    busy["status"]["phase"] = "Running"
    objs = load_text(docs(CLASS, TEMPLATE, yaml.safe_dump(done), yaml.safe_dump(busy), yaml.safe_dump(job)), "t")
    made = [p for p in objs.pods if p.spec.node_name is None]
    assert [p.metadata.labels["batch.kubernetes.io/job-completion-index"] for p in made] == ["2"]


def test_suspended_job_and_bad_fields():
    assert load_text(docs(TEMPLATE, JOB.replace("parallelism: 2", "parallelism: 2\n  suspend: true")), "t").pods == []
    with pytest.raises(InputError, match=r"Job ml/example-dra-job: field spec.parallelism: expected an integer"):
        load_text(docs(TEMPLATE, JOB.replace("parallelism: 2", "parallelism: two")), "t")
    with pytest.raises(InputError, match=r"field spec.completionMode: unsupported value 'Sometimes'"):
        load_text(docs(TEMPLATE, JOB.replace("parallelism: 2", "parallelism: 2\n  completionMode: Sometimes")), "t")
    with pytest.raises(InputError, match=r"field apiVersion: 'batch/v1beta1' is not served for Job"):
        load_text(docs(TEMPLATE, JOB.replace("batch/v1", "batch/v1beta1")), "t")
    with pytest.raises(InputError, match=r"Job ml/example-dra-job: field spec.template: missing"):
        load_text("apiVersion: batch/v1\nkind: Job\nmetadata: {namespace: ml, name: example-dra-job}\nspec: {}\n", "t")


def test_cronjob_runs_its_job_template_once():
    cron = """
apiVersion: batch/v1
kind: CronJob
metadata: {namespace: ml, name: nightly, creationTimestamp: '2026-07-01T10:00:00Z'}
spec:
  schedule: '0 3 * * *'
  jobTemplate:
    metadata: {labels: {kind: nightly}}
    spec:
      parallelism: 3
      template:
        spec:
          restartPolicy: OnFailure
""" + POD_SPEC.replace("\n      ", "\n          ")
    objs = load_text(docs(TEMPLATE, cron), "t")
    minutes = 1782900000 // 60
    assert len(objs.pods) == 3
    assert all(re.fullmatch(f"nightly-{minutes}-{SUFFIX}", p.name) for p in objs.pods), pod_names(objs)
    assert objs.pods[0].metadata.labels["job-name"] == f"nightly-{minutes}"
    assert load_text(docs(TEMPLATE, cron.replace("schedule:", "suspend: true\n  schedule:")), "t").pods == []


# ------------------------------------------------------------------ StatefulSet / DaemonSet
def test_statefulset_ordinals_in_order():
    sts = DEPLOYMENT.replace("Deployment", "StatefulSet").replace("replicas: 4", "replicas: 3\n  serviceName: infer")
    objs = load_text(docs(TEMPLATE, sts), "t")
    assert pod_names(objs) == ["infer-0", "infer-1", "infer-2"]
    p = objs.pods[2]
    assert p.metadata.labels["statefulset.kubernetes.io/pod-name"] == "infer-2"
    assert p.metadata.labels["apps.kubernetes.io/pod-index"] == "2"
    assert p.metadata.labels["controller-revision-hash"].startswith("infer-")
    assert p.to_k8s()["spec"]["hostname"] == "infer-2" and p.to_k8s()["spec"]["subdomain"] == "infer"


def test_daemonset_one_pod_per_eligible_node():
    ds = (
        DEPLOYMENT.replace("Deployment", "DaemonSet")
        .replace("  replicas: 4\n", "")
        .replace("    spec:\n", "    spec:\n      nodeSelector: {gpu: 'true'}\n", 1)
    )
    gpu = "{gpu: 'true'}"
    objs = load_text(
        docs(
            CLASS,
            TEMPLATE,
            node("a", 1, labels=gpu),
            node("b", 1, labels=gpu),
            node("c", 1),  # no label
            node("d", 1, labels=gpu, taints="[{key: dedicated, value: x, effect: NoSchedule}]"),
            node("e", 1, labels=gpu, taints="[{key: node.kubernetes.io/not-ready, effect: NoExecute}]"),
            ds,
        ),
        "t",
    )
    pinned = [
        p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms[0]
        .match_fields[0]
        .values
        for p in objs.pods
    ]
    assert pinned == [["a"], ["b"], ["e"]]
    out = place(objs, policy="first-fit")
    assert sorted(p.node for p in out.result.pods) == ["a", "b", "e"]


# ------------------------------------------------------------------ JobSet / LeaderWorkerSet
def test_jobset_replicated_jobs_indexed_pods():
    js = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {namespace: ml, name: train}
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 2
        completions: 2
        template:
          spec:
            restartPolicy: Never
""" + POD_SPEC.replace("\n      ", "\n            ")
    objs = load_text(docs(CLASS, TEMPLATE, node("n1", 4), js), "t")
    names = pod_names(objs)
    assert len(names) == 4
    for name, (j, i) in zip(names, [(0, 0), (0, 1), (1, 0), (1, 1)]):
        assert re.fullmatch(f"train-workers-{j}-{i}-{SUFFIX}", name), names
    labels = objs.pods[3].metadata.labels
    assert labels["jobset.sigs.k8s.io/jobset-name"] == "train"
    assert labels["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"
    assert labels["jobset.sigs.k8s.io/job-index"] == "1"
    assert labels["jobset.sigs.k8s.io/job-global-index"] == "1"
    assert labels["batch.kubernetes.io/job-completion-index"] == "1"
    assert objs.pods[3].to_k8s()["metadata"]["ownerReferences"][0]["name"] == "train-workers-1"
    assert objs.pods[3].to_k8s()["spec"]["subdomain"] == "train"
    assert objs.pods[3].to_k8s()["spec"]["hostname"] == "train-workers-1-1"
    assert all(p.placed for p in place(objs, policy="first-fit").result.pods)


def test_leaderworkerset_leader_and_workers_per_group():
    lws = """
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {namespace: ml, name: vllm}
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 3
    workerTemplate:
      metadata: {labels: {role: worker}}
      spec:
""" + POD_SPEC.replace("\n      ", "\n        ")
    objs = load_text(docs(TEMPLATE, lws), "t")
    assert pod_names(objs) == ["vllm-0", "vllm-0-1", "vllm-0-2", "vllm-1", "vllm-1-1", "vllm-1-2"]
    lab = {p.name: p.metadata.labels for p in objs.pods}
    assert lab["vllm-1-2"]["leaderworkerset.sigs.k8s.io/group-index"] == "1"
    assert lab["vllm-1-2"]["leaderworkerset.sigs.k8s.io/worker-index"] == "2"
    assert lab["vllm-1"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    assert (
        lab["vllm-1"]["leaderworkerset.sigs.k8s.io/group-key"]
        == lab["vllm-1-1"]["leaderworkerset.sigs.k8s.io/group-key"]
    )
    owners = {p.name: p.to_k8s()["metadata"]["ownerReferences"][0]["name"] for p in objs.pods}
    assert owners == {
        "vllm-0": "vllm",
        "vllm-0-1": "vllm-0",
        "vllm-0-2": "vllm-0",
        "vllm-1": "vllm",
        "vllm-1-1": "vllm-1",
        "vllm-1-2": "vllm-1",
    }


# ------------------------------------------------------------------ CLI: directories, notes, --strict
def test_cli_directory_notes_and_strict(tmp_path, capsys):
    d = tmp_path / "manifests"
    (d / "sub").mkdir(parents=True)
    (d / "00-cluster.yaml").write_text(docs(CLASS, node("n1", 4), TEMPLATE))
    (d / "10-app.yml").write_text(docs(DEPLOYMENT, "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sa}\n"))
    (d / "README.md").write_text("# not a manifest\n")
    (d / "sub" / "job.json").write_text(__import__("json").dumps(yaml.safe_load(JOB)))
    assert cli.main(["place", "-f", str(d)]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == ["note: skipped 1 ServiceAccount object(s): not used for placement"]
    assert out.count("ml/infer-") == 4 and "example-dra-job" not in out
    # -R reads subdirectories too: 4 + 2 pods for 4 GPUs.
    assert cli.main(["place", "-f", str(d), "-R"]) == 1
    out, _ = capsys.readouterr()
    assert out.count("ml/example-dra-job-") == 2
    assert cli.main(["place", "-f", str(d), "--strict"]) == 2
    _, err = capsys.readouterr()
    assert "skipped 1 ServiceAccount object(s)" in err and "--strict" in err


def test_template_errors_name_the_controllers_field_and_warnings_come_once(capsys):
    bad = DEPLOYMENT.replace(
        "      containers:\n      - name: ctr\n", "      containers: ctr\n      x:\n      - name: ctr\n"
    )
    with pytest.raises(
        InputError,
        match=r"Deployment ml/infer: field spec.template.spec.containers: "
        r"Input should be a valid list",
    ):
        load_text(docs(TEMPLATE, bad), "t")
    typo = DEPLOYMENT.replace("      resourceClaims:", "      nodeSelectr: {gpu: 'true'}\n      resourceClaims:")
    with pytest.warns(DraoptWarning) as said:
        objs = load_text(docs(TEMPLATE, typo), "t")
    assert len(objs.pods) == 4
    err = "\n".join(str(w.message) for w in said if issubclass(w.category, DraoptWarning))
    # The misspelled field is reported once for the template, not once per replica.
    assert err.count('unknown field "spec.nodeSelectr"') == 1, err
    assert "Deployment ml/infer: spec.template" in err


def test_plan_gives_new_nodes_their_daemonset_pods():
    """A DaemonSet that takes one of each node's two GPUs: every added node keeps one GPU for the
    Deployment's 4 pods, so 3 more nodes are needed, not 2."""
    from draopt.studies.planning import nodes_needed, with_copies

    ds = (
        DEPLOYMENT.replace("Deployment", "DaemonSet")
        .replace("name: infer", "name: agent")
        .replace("app: infer", "app: agent")
        .replace("  replicas: 4\n", "")
    )
    objs = load_text(docs(CLASS, TEMPLATE, node("a", 2), ds, DEPLOYMENT), "t")
    copies = with_copies(objs, "a", 2)
    pinned = sorted(
        p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms[0]
        .match_fields[0]
        .values[0]
        for p in copies.pods
        if p.name.startswith("agent-")
    )
    assert pinned == ["a", "a-plan-0", "a-plan-1"]
    assert len(objs.pods) == 5  # the input's own set is left as it was
    plan = nodes_needed(objs, "a")
    assert plan.extra_nodes == 3
    assert plan.tried[3] == (8, 8)


def test_daemonset_pod_runs_on_a_cordoned_node():
    """The DaemonSet controller's toleration of node.kubernetes.io/unschedulable lets its pod past
    the scheduler's NodeUnschedulable filter; a plain pod stays out."""
    ds = DEPLOYMENT.replace("Deployment", "DaemonSet").replace("  replicas: 4\n", "")
    cordoned = node("a", 1).replace("spec: {taints: []}", "spec: {unschedulable: true, taints: []}")
    plain = """
apiVersion: v1
kind: Pod
metadata: {namespace: ml, name: plain}
spec: {containers: [{name: c}]}
"""
    out = place(load_text(docs(CLASS, TEMPLATE, cordoned, ds, plain), "t"), policy="first-fit")
    where = {p.pod: p.node for p in out.result.pods}
    assert where.pop("ml/plain") is None
    assert list(where.values()) == ["a"]


def test_huge_counts_are_refused_quickly():
    job = JOB.replace("completions: 10", "completionMode: Indexed\n  completions: 9223372036854775807")
    with pytest.raises(InputError, match=r"field spec.completions: must be less than or equal to 100000"):
        load_text(docs(TEMPLATE, job), "t")
    lws = """
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {namespace: ml, name: big}
spec:
  replicas: 100000
  leaderWorkerTemplate: {size: 100000, workerTemplate: {spec: {containers: [{name: c}]}}}
"""
    with pytest.raises(InputError, match=r"LeaderWorkerSet ml/big: it would create more than 100000 pods"):
        load_text(docs(lws), "t")
    with pytest.raises(InputError, match=r"Deployment ml/infer: field spec.replicas: 2147483648 is more than"):
        load_text(docs(TEMPLATE, DEPLOYMENT.replace("replicas: 4", "replicas: 2147483648")), "t")


def test_deployment_counts_its_pods_in_a_dump_without_replicasets():
    """`kubectl get deployments,pods -o yaml`: 3 of 4 replicas running under the cluster's own
    ReplicaSet hash; one more pod is made, not four."""
    running = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"infer-6d9f8c7b5-{s}",
                "namespace": "ml",
                "labels": {"app": "infer", "pod-template-hash": "6d9f8c7b5"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": "infer-6d9f8c7b5",
                        "uid": "u",
                        "controller": True,
                    }
                ],
            },
            "spec": {"nodeName": "n1", "containers": [{"name": "ctr"}]},
            "status": {"phase": "Running"},
        }
        for s in ("7xq2k", "b2lm9", "k4dzt")
    ]
    objs = load_text(docs(TEMPLATE, DEPLOYMENT, *[yaml.safe_dump(p) for p in running]), "t")
    assert len([p for p in objs.pods if not p.spec.node_name]) == 1


def test_generate_name_manifests_get_stable_names():
    """Manifests for `kubectl create` (metadata.generateName, no name): named as the API server
    would, with a stable suffix."""
    job = JOB.replace(
        "metadata: {namespace: ml, name: example-dra-job}", "metadata: {namespace: ml, generateName: pi-}"
    )
    text = docs(
        TEMPLATE,
        job,
        "apiVersion: v1\nkind: Pod\nmetadata: {namespace: ml, generateName: p-}\nspec: {containers: [{name: c}]}\n",
    )
    names = pod_names(load_text(text, "t"))
    assert names == pod_names(load_text(text, "t"))
    assert re.fullmatch(f"p-{SUFFIX}", names[0]), names
    assert all(re.fullmatch(f"pi-{SUFFIX}-{SUFFIX}", n) for n in names[1:]) and len(names) == 3, names


def test_statefulset_volume_claim_templates_are_said_not_modelled():
    """volumeClaimTemplates: each pod would mount the claim <template>-<set>-<ordinal>
    (pkg/controller/statefulset/stateful_set_utils.go getPersistentVolumeClaimName, updateStorage),
    which VolumeBinding needs bound or bindable; draopt models neither, so it says so, once per set."""
    sts = DEPLOYMENT.replace("Deployment", "StatefulSet").replace(
        "replicas: 4",
        "replicas: 2\n  volumeClaimTemplates:\n  - metadata: {name: data}\n"
        "    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}",
    )
    assert "volumeClaimTemplates" in sts
    notes = io.StringIO()
    objs = load_text(docs(TEMPLATE, sts), "t", notes=notes)
    assert pod_names(objs) == ["infer-0", "infer-1"]
    said = [n for n in notes.getvalue().splitlines() if "volumeClaimTemplates" in n]
    assert said == [
        "note: t document 2: StatefulSet ml/infer: spec.volumeClaimTemplates (data) not modelled: draopt "
        "creates no PersistentVolumeClaims for its pods and does not simulate volume binding (kube-scheduler's "
        "VolumeBinding filter), so a pod is placed as if its volumes could bind on any node"
    ]
