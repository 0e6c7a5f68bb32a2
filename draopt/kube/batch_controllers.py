"""Batch frameworks' controllers: the Pods (and Jobs, JobSets) that Kubeflow's operators create.

Users run DRA gangs with these; their pod templates are plain and their controllers' pod shapes
are documented in their sources, so draopt makes the same pods (see :mod:`draopt.kube.controllers`
for the core controllers it reuses, and its deterministic names and UIDs). ``N`` = the name.

* **MPIJob** ``kubeflow.org/v2beta1`` (kubeflow/mpi-operator ``pkg/controller/mpi_job_controller.go``,
  defaults ``pkg/apis/kubeflow/v2beta1/default.go``): Worker pods ``N-worker-<i>`` for ``i`` in
  ``0..replicas-1`` (default 0), owned by the MPIJob (``newWorker``), labels
  ``training.kubeflow.org/{operator-name: mpi-operator, job-name: N, job-role: worker,
  replica-index: i}`` (``i+1`` with ``runLauncherAsWorker``), ``hostname N-worker-<i>``,
  ``subdomain N``, ``restartPolicy`` of the replica spec (default ``Never``). The launcher is a
  Job ``N-launcher`` (``newLauncherJob``, label ``app: N``) whose pod template is the Launcher
  template with ``job-role: launcher`` (and ``replica-index: 0`` with ``runLauncherAsWorker``),
  ``hostname N-launcher``, ``subdomain N``, ``restartPolicy`` default ``OnFailure``; its pod is
  then made as any Job's. Workers are found by name (``getOrCreateWorker``): one that exists
  without the MPIJob as its controller stops the controller (``ErrResourceExists``: a note, no
  more pods); workers beyond the replicas, which it deletes, are kept with a note.
  ``launcherCreationPolicy: WaitForWorkersReady`` creates it only once
  every worker is ready: made when the input shows every worker running, else said in a note.
* **PyTorchJob** ``kubeflow.org/v1`` (kubeflow/training-operator release-1.9
  ``pkg/controller.v1/common/pod.go`` ``createNewPod``, ``pytorch/pytorchjob_controller.go``):
  for each replica type (Master, then Worker; replicas default 1) pods ``N-<type>-<i>`` (type in
  lower case, ``GenGeneralName``), owned by the PyTorchJob, labels
  ``training.kubeflow.org/{operator-name: pytorchjob-controller, job-name: N, replica-type,
  replica-index}`` and ``job-role: master`` on the master (the Master replica, else worker 0:
  ``IsMasterRole``); ``restartPolicy`` of the replica spec (default ``OnFailure``; ``ExitCode``
  becomes ``Never``: ``SetRestartPolicy``).
* **TrainJob** ``trainer.kubeflow.org/v1alpha1`` (kubeflow/trainer
  ``pkg/runtime/core/trainingruntime.go``, ``pkg/runtime/framework/plugins/jobset/builder.go``):
  a JobSet ``N`` from its runtime (``spec.runtimeRef``: a TrainingRuntime of its namespace or a
  ClusterTrainingRuntime, which must be in the input): the runtime's ``spec.template``, where the
  replicated Job labelled ``trainer.kubeflow.org/trainjob-ancestor-step: trainer`` gets
  ``replicas: 1``, ``parallelism`` = ``completions`` = ``spec.trainer.numNodes`` (else the
  runtime's ``mlPolicy.numNodes``, default 1), and on its container ``node`` the trainer's
  ``image``, ``command``, ``args``, ``env`` and ``resourcesPerNode`` (merged per resource over
  the container's). ``spec.suspend`` suspends the JobSet. The JobSet is then expanded as any
  (:mod:`draopt.kube.controllers`). Without its runtime in the input: a note, no pods.
  ``runtimePatches`` are not applied (said in a note).

Suspended (``runPolicy.suspend`` / ``spec.suspend``): no pods, a note. Gangs: an MPIJob or
PyTorchJob with ``runPolicy.schedulingPolicy``, or a TrainJob whose runtime has a
``podGroupPolicy``, is gang-scheduled in a cluster through the operator's PodGroup (Volcano or
scheduler-plugins coscheduling: ``minMember`` = ``schedulingPolicy.minAvailable``, default every
replica; ``pkg/controller.v1/common/job.go``, mpi-operator ``podgroup.go``
``calculateMinAvailable``). draopt makes a gang PodGroup ``N`` (``scheduling.k8s.io``, gang
``minCount`` = minMember) that the pods name in ``spec.schedulingGroup``, unless the input has a
PodGroup of that name, and says so in a note. Pods already in the input that the job owns
(``ownerReferences``) are not made again.
"""

from __future__ import annotations

import copy
from typing import Any

from draopt.errors import InputError
from draopt.kube import adoption, controllers
from draopt.kube.controllers import Created, _Expander, _Reader, _owner, _type, stable_uid

BATCH_KINDS: dict[str, tuple[str, ...]] = {
    "MPIJob": ("kubeflow.org/v2beta1",),
    "PyTorchJob": ("kubeflow.org/v1",),
    "TrainJob": ("trainer.kubeflow.org/v1alpha1",),
}
RUNTIME_KINDS: dict[str, tuple[str, ...]] = {
    "TrainingRuntime": ("trainer.kubeflow.org/v1alpha1",),
    "ClusterTrainingRuntime": ("trainer.kubeflow.org/v1alpha1",),
}
KF = "training.kubeflow.org/"
TRAINER_ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
GANG_API = "scheduling.k8s.io/v1alpha2"


class _BatchExpander(_Expander):
    def __init__(
        self,
        existing_pods: list[dict[str, Any]],
        nodes: list[Any],
        batch: list[tuple[dict, str]],
        runtimes: list[tuple[dict, str]],
        pod_groups: set[str],
        input_jobs: list[dict],
    ):
        super().__init__(existing_pods, nodes, batch)
        self.owner_kinds = {**controllers.CONTROLLER_KINDS, **BATCH_KINDS}
        self.input_jobs = input_jobs  # the input's Jobs (a TrainJob's JobSet may have its Jobs there)
        self.runtimes = runtimes
        self.pod_groups = pod_groups  # namespace/name of the input's PodGroups

    # ---------------------------------------------------------- shared
    def owned_names(self, r: _Reader) -> set[str]:
        return {controllers._name(p) for p in self.owned_pods(r.namespace, str(r.kind), r.name)}

    def gang(self, r: _Reader, min_member: int, why: str) -> dict[str, Any] | None:
        """The gang PodGroup `N` for the job's pods (spec.schedulingGroup to set on each)."""
        key = f"{r.namespace}/{r.name}"
        if key not in self.pod_groups:
            meta: dict[str, Any] = {"name": r.name, "uid": stable_uid("PodGroup", r.namespace, r.name)}
            if r.namespace_field is not None:
                meta["namespace"] = r.namespace_field
            self.out.groups.append(
                (
                    {
                        "apiVersion": GANG_API,
                        "kind": "PodGroup",
                        "metadata": meta,
                        "spec": {"schedulingPolicy": {"gang": {"minCount": max(1, min_member)}}},
                    },
                    f"{r.what}: {why} (as PodGroup {r.name})",
                )
            )
            self.pod_groups.add(key)
            self.out.notes.append(
                f"{r.what}: {why}: gang-scheduled through the operator's PodGroup (Volcano or "
                f"scheduler-plugins) with minMember {min_member}; simulated as the gang "
                f"PodGroup {key}"
            )
        return {"podGroupName": r.name}

    def replica_template(self, r: _Reader, specs: dict, path: str, rtype: str) -> tuple[dict, dict, str] | None:
        rs = specs.get(rtype)
        if rs is None:
            return None
        at = f"{path}.{rtype}"
        if not isinstance(rs, dict):
            raise r.error(at, f"expected a mapping, got {_type(rs)}")
        return rs, r.template(rs, at), at

    def run_policy(self, r: _Reader, spec: dict) -> dict:
        return r.get(spec, "spec", "runPolicy", dict, {})

    # ---------------------------------------------------------- MPIJob
    def do_MPIJob(self, r: _Reader) -> None:
        spec = r.get(r.doc, "", "spec", dict, {})
        policy = self.run_policy(r, spec)
        specs = r.get(spec, "spec", "mpiReplicaSpecs", dict)
        if specs is None:
            raise r.error("spec.mpiReplicaSpecs", "missing")
        unknown = sorted(set(specs) - {"Launcher", "Worker"})
        if unknown:
            raise r.error(
                f"spec.mpiReplicaSpecs.{unknown[0]}", "unsupported replica type (supported: Launcher, Worker)"
            )
        launcher = self.replica_template(r, specs, "spec.mpiReplicaSpecs", "Launcher")
        if launcher is None:
            raise r.error("spec.mpiReplicaSpecs.Launcher", "missing")
        worker = self.replica_template(r, specs, "spec.mpiReplicaSpecs", "Worker")
        if r.get(policy, "spec.runPolicy", "suspend", bool, False):
            self.suspended(r, "spec.runPolicy.suspend")
            return
        workers = r.count(worker[0], worker[2], "replicas", 0) if worker else 0
        as_worker = r.get(spec, "spec", "runLauncherAsWorker", bool, False)
        creation = r.get(spec, "spec", "launcherCreationPolicy", str, "AtStartup")
        if creation not in ("AtStartup", "WaitForWorkersReady"):
            raise r.error(
                "spec.launcherCreationPolicy",
                f"unsupported value {creation!r}: supported values: \"AtStartup\", \"WaitForWorkersReady\"",
            )
        group = None
        scheduling = r.get(policy, "spec.runPolicy", "schedulingPolicy", dict)
        if scheduling is not None:
            min_member = r.get(scheduling, "spec.runPolicy.schedulingPolicy", "minAvailable", int, workers + 1)
            group = self.gang(r, min_member, "spec.runPolicy.schedulingPolicy")
        self.note_extra_mpi_workers(r, workers)
        if not self.mpi_workers(r, worker, workers, group, as_worker):
            return
        job_name = f"{r.name}-launcher"
        if self.owned_pods(r.namespace, "Job", job_name):
            return  # the launcher Job's pod is in the input
        if creation == "WaitForWorkersReady" and workers and not self.workers_running(r, workers):
            self.out.notes.append(
                f"{r.what}: spec.launcherCreationPolicy: WaitForWorkersReady: the launcher Job "
                f"{job_name} is created once the {workers} workers are ready (not made here)"
            )
            return
        self.mpi_launcher(r, launcher, job_name, group, as_worker)

    def note_extra_mpi_workers(self, r: _Reader, workers: int) -> None:
        """A note for the MPIJob's worker pods past its replicas (the controller would delete them)."""
        selector = {
            "matchLabels": {KF + "operator-name": "mpi-operator", KF + "job-name": r.name, KF + "job-role": "worker"}
        }  # workerSelector
        extra = sorted(
            controllers._name(p)
            for p in self.existing
            if controllers._ns(p) == r.namespace
            and adoption.selector_matches(selector, _labels(p))
            and (_labels(p).get(KF + "replica-index") or "").isdigit()
            and int(_labels(p)[KF + "replica-index"]) >= workers
        )
        if extra:
            self.out.notes.append(
                f"{r.what}: {len(extra)} worker pod(s) beyond its {workers} replicas "
                f"({', '.join(extra[:3])}) would be deleted by the controller (scale-down): "
                f"kept here"
            )

    def mpi_workers(
        self,
        r: _Reader,
        worker: tuple[dict, dict, str] | None,
        workers: int,
        group: dict[str, Any] | None,
        as_worker: bool,
    ) -> bool:
        """The MPIJob's missing worker pods; False where the controller stops (a pod of a worker's
        name that it does not control)."""
        have = self.owned_names(r)
        owner = _owner("kubeflow.org/v2beta1", "MPIJob", r.name, r.uid)
        key = f"{r.namespace}/{r.name}"
        for i in range(workers):
            name = f"{r.name}-worker-{i}"
            if name in have:
                continue
            if f"{r.namespace}/{name}" in self.taken:  # getOrCreateWorker gets workers by name
                self.out.notes.append(
                    f"{r.what}: pod {r.namespace}/{name} exists and is not controlled by it: "
                    f"the controller stops there (ErrResourceExists) and creates no more pods"
                )
                return False
            assert worker is not None
            update: dict[str, Any] = {
                "hostname": name,
                "subdomain": r.name,
                "restartPolicy": _restart(r, worker[0], worker[2], "Never"),
            }
            if group:
                update["schedulingGroup"] = group
            self.pod(
                r,
                worker[1],
                name,
                owner,
                labels={
                    KF + "operator-name": "mpi-operator",
                    KF + "job-name": r.name,
                    KF + "job-role": "worker",
                    KF + "replica-index": str(i + 1 if as_worker else i),
                },
                spec_update=update,
                order=(key, i + 1),
            )
        return True

    def mpi_launcher(
        self,
        r: _Reader,
        launcher: tuple[dict, dict, str],
        job_name: str,
        group: dict[str, Any] | None,
        as_worker: bool,
    ) -> None:
        """The MPIJob's launcher Job (its pod made as the Job controller makes it)."""
        key = f"{r.namespace}/{r.name}"
        lspec, ltemplate, lpath = launcher
        labels = dict((ltemplate.get("metadata") or {}).get("labels") or {})
        labels.update({KF + "operator-name": "mpi-operator", KF + "job-name": r.name, KF + "job-role": "launcher"})
        if as_worker:
            labels[KF + "replica-index"] = "0"
        pod_spec = dict(
            ltemplate.get("spec") or {},
            hostname=job_name,
            subdomain=r.name,
            restartPolicy=_restart(r, lspec, lpath, "OnFailure"),
        )
        if group:
            pod_spec["schedulingGroup"] = group
        template = {"metadata": dict(ltemplate.get("metadata") or {}, labels=labels), "spec": pod_spec}
        job_spec = {"template": template}
        self.job(r, job_spec, lpath, job_name, stable_uid("Job", r.namespace, job_name), {}, {}, (key, 0))

    def workers_running(self, r: _Reader, workers: int) -> bool:
        running = {
            controllers._name(p)
            for p in self.owned_pods(r.namespace, "MPIJob", r.name)
            if controllers._phase(p) == "Running"
        }
        return all(f"{r.name}-worker-{i}" in running for i in range(workers))

    # ---------------------------------------------------------- PyTorchJob
    def do_PyTorchJob(self, r: _Reader) -> None:
        spec = r.get(r.doc, "", "spec", dict, {})
        policy = self.run_policy(r, spec)
        specs = r.get(spec, "spec", "pytorchReplicaSpecs", dict)
        if specs is None:
            raise r.error("spec.pytorchReplicaSpecs", "missing")
        unknown = sorted(set(specs) - {"Master", "Worker"})
        if unknown:
            raise r.error(
                f"spec.pytorchReplicaSpecs.{unknown[0]}", "unsupported replica type (supported: Master, Worker)"
            )
        types = [(t, self.replica_template(r, specs, "spec.pytorchReplicaSpecs", t)) for t in ("Master", "Worker")]
        present = [(t, x) for t, x in types if x is not None]
        if r.get(policy, "spec.runPolicy", "suspend", bool, False):
            self.suspended(r, "spec.runPolicy.suspend")
            return
        counts = {t: r.count(x[0], x[2], "replicas", 1) for t, x in present}
        if spec.get("elasticPolicy") is not None:
            self.out.notes.append(
                f"{r.what}: spec.elasticPolicy: the workers are made at their replicas "
                f"({counts.get('Worker', 0)}); elastic scaling is not simulated"
            )
        group = None
        scheduling = r.get(policy, "spec.runPolicy", "schedulingPolicy", dict)
        if scheduling is not None:
            min_member = r.get(scheduling, "spec.runPolicy.schedulingPolicy", "minAvailable", int, sum(counts.values()))
            group = self.gang(r, min_member, "spec.runPolicy.schedulingPolicy")
        have = self.owned_names(r)
        owner = _owner("kubeflow.org/v1", "PyTorchJob", r.name, r.uid)
        has_master = "Master" in counts
        seq = 0
        for rtype, x in present:
            assert x is not None
            rspec, template, path = x
            rt = rtype.lower()
            for i in range(counts[rtype]):
                name = f"{r.name}-{rt}-{i}"
                seq += 1
                if name in have:
                    continue
                labels = {
                    KF + "operator-name": "pytorchjob-controller",
                    KF + "job-name": r.name,
                    KF + "replica-type": rt,
                    KF + "replica-index": str(i),
                }
                if rtype == "Master" or not has_master and i == 0:
                    labels[KF + "job-role"] = "master"
                update: dict[str, Any] = {"restartPolicy": _restart(r, rspec, path, "OnFailure")}
                if group:
                    update["schedulingGroup"] = group
                self.pod(
                    r, template, name, owner, labels=labels, spec_update=update, order=(f"{r.namespace}/{r.name}", seq)
                )

    # ---------------------------------------------------------- TrainJob
    def do_TrainJob(self, r: _Reader, jobs: list[dict]) -> None:
        spec = r.get(r.doc, "", "spec", dict, {})
        ref = r.get(spec, "spec", "runtimeRef", dict)
        if ref is None:
            raise r.error("spec.runtimeRef", "missing")
        runtime_name = r.get(ref, "spec.runtimeRef", "name", str)
        if not runtime_name:
            raise r.error("spec.runtimeRef.name", "missing")
        kind = r.get(ref, "spec.runtimeRef", "kind", str, "ClusterTrainingRuntime")
        if kind not in RUNTIME_KINDS:
            raise r.error(
                "spec.runtimeRef.kind",
                f"unsupported value {kind!r}: supported values: \"ClusterTrainingRuntime\", \"TrainingRuntime\"",
            )
        runtime = next(
            (
                doc
                for doc, _ in self.runtimes
                if doc.get("kind") == kind
                and controllers._name(doc) == runtime_name
                and (kind == "ClusterTrainingRuntime" or controllers._ns(doc) == r.namespace)
            ),
            None,
        )
        if runtime is None:
            where = runtime_name if kind == "ClusterTrainingRuntime" else f"{r.namespace}/{runtime_name}"
            self.out.notes.append(
                f"{r.what}: its runtime {kind} {where} is not in the input: the pods of its "
                f"JobSet are not made (give the runtime with -f)"
            )
            return
        if spec.get("runtimePatches"):
            self.out.notes.append(f"{r.what}: spec.runtimePatches are not applied by draopt")
        jobset = _trainjob_jobset(r, spec, runtime, kind)
        rspec: dict[str, Any] = runtime["spec"] if isinstance(runtime.get("spec"), dict) else {}
        pod_group = rspec.get("podGroupPolicy")
        js = _Reader(jobset, f"{r.source} (TrainJob {r.name}: its JobSet, from {kind} {runtime_name})")
        start = len(self.out.pods)
        self.do_JobSet(js, jobs)
        if pod_group and len(self.out.pods) > start:
            group = self.gang(r, len(self.out.pods) - start, f"{kind} {runtime_name} spec.podGroupPolicy")
            for doc, _ in self.out.pods[start:]:
                doc["spec"] = dict(doc["spec"], schedulingGroup=group)

    def run(self) -> Created:
        for doc, source in self.controllers:
            r = _Reader(doc, source)
            if r.kind == "TrainJob":
                self.do_TrainJob(r, self.input_jobs)
            else:
                getattr(self, f"do_{r.kind}")(r)
        return self.out


def _labels(doc: dict[str, Any]) -> dict[str, Any]:
    labels = (doc.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _restart(r: _Reader, replica: dict, path: str, default: str) -> str:
    """The replica spec's restartPolicy onto the pod (ExitCode: Never; training-operator
    SetRestartPolicy, mpi-operator setRestartPolicy)."""
    value = r.get(replica, path, "restartPolicy", str, default)
    if value not in ("Always", "OnFailure", "Never", "ExitCode"):
        raise r.error(
            f"{path}.restartPolicy",
            f"unsupported value {value!r}: supported values: \"Always\", \"OnFailure\", \"Never\", \"ExitCode\"",
        )
    return "Never" if value == "ExitCode" else value


def _merge_resources(base: Any, over: dict[str, Any]) -> dict[str, Any]:
    """trainingruntimeutil.MergeResourceRequirements: the TrainJob's requests/limits/claims
    replace the container's, resource by resource."""
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for part in ("requests", "limits"):
        if isinstance(over.get(part), dict):
            out[part] = dict(out.get(part) or {}, **over[part])
    if over.get("claims") is not None:
        out["claims"] = copy.deepcopy(over["claims"])
    return out


def _trainjob_jobset(r: _Reader, spec: dict, runtime: dict, kind: str) -> dict[str, Any]:
    rmeta: dict[str, Any] = runtime["metadata"] if isinstance(runtime.get("metadata"), dict) else {}
    rname = f"{kind} {rmeta.get('name')}"
    rspec = runtime.get("spec")
    if not isinstance(rspec, dict):
        raise InputError(f"{rname}: field spec: missing")
    template = rspec.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        raise InputError(f"{rname}: field spec.template.spec: missing (the JobSet template)")
    js_spec = copy.deepcopy(template["spec"])
    trainer = r.get(spec, "spec", "trainer", dict, {})
    ml: dict[str, Any] = rspec["mlPolicy"] if isinstance(rspec.get("mlPolicy"), dict) else {}
    default_nodes = ml.get("numNodes", 1)
    num_nodes = r.count(trainer, "spec.trainer", "numNodes", default_nodes if isinstance(default_nodes, int) else 1)
    rjobs = js_spec.get("replicatedJobs")
    if not isinstance(rjobs, list):
        raise InputError(f"{rname}: field spec.template.spec.replicatedJobs: expected a list")
    for i, rj in enumerate(rjobs):
        if not isinstance(rj, dict):
            raise InputError(f"{rname}: field spec.template.spec.replicatedJobs[{i}]: expected a mapping")
        jt: dict[str, Any] = rj["template"] if isinstance(rj.get("template"), dict) else {}
        labels = (jt.get("metadata") or {}).get("labels") or {}
        if labels.get(TRAINER_ANCESTOR) != "trainer":
            continue
        rj["replicas"] = 1
        jspec = jt.setdefault("spec", {})
        jspec["parallelism"] = jspec["completions"] = num_nodes
        pod = jspec.get("template") if isinstance(jspec.get("template"), dict) else {}
        for c in (pod.get("spec") or {}).get("containers") or []:
            if not isinstance(c, dict) or c.get("name") != "node":
                continue
            for field_name in ("image", "command", "args"):
                if trainer.get(field_name) is not None:
                    c[field_name] = copy.deepcopy(trainer[field_name])
            if trainer.get("env"):
                env = {e.get("name"): e for e in c.get("env") or [] if isinstance(e, dict)}
                env.update({e.get("name"): e for e in trainer["env"] if isinstance(e, dict)})
                c["env"] = list(env.values())
            if isinstance(trainer.get("resourcesPerNode"), dict):
                c["resources"] = _merge_resources(c.get("resources"), trainer["resourcesPerNode"])
    if r.get(spec, "spec", "suspend", bool, False):
        js_spec["suspend"] = True
    meta: dict[str, Any] = {"name": r.name, "uid": stable_uid("JobSet", r.namespace, r.name)}
    if r.namespace_field is not None:
        meta["namespace"] = r.namespace_field
    tmeta: dict[str, Any] = template["metadata"] if isinstance(template.get("metadata"), dict) else {}
    for part in ("labels", "annotations"):
        merged = dict(tmeta.get(part) or {}, **(r.meta.get(part) or {}))
        if merged:
            meta[part] = merged
    if isinstance(r.creation, str):
        meta["creationTimestamp"] = r.creation
    meta["ownerReferences"] = [_owner("trainer.kubeflow.org/v1alpha1", "TrainJob", r.name, r.uid)]
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta, "spec": js_spec}


def check_api_version(doc: dict[str, Any], source: str) -> None:
    kind = str(doc.get("kind"))
    versions = BATCH_KINDS.get(kind) or RUNTIME_KINDS[kind]
    if doc.get("apiVersion") in versions:
        return
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    what = f"{source}: {kind} {name if isinstance(name, str) and name else '(no name)'}: field apiVersion"
    if doc.get("apiVersion") is None:
        raise InputError(f"{what}: missing (accepted: {', '.join(versions)})")
    raise InputError(
        f"{what}: {doc.get('apiVersion')!r} is not served by draopt for {kind} (accepted: {', '.join(versions)})"
    )


def expand(
    workload_controllers: list[tuple[dict[str, Any], str]],
    existing_pods: list[dict[str, Any]],
    nodes: list[Any],
    runtimes: list[tuple[dict[str, Any], str]] | None = None,
    pod_groups: set[str] | None = None,
) -> Created:
    """The pods of the core controllers (draopt.kube.controllers.expand) and then of the batch
    frameworks' jobs in `workload_controllers`; `runtimes`: the input's TrainingRuntimes and
    ClusterTrainingRuntimes; `pod_groups`: namespace/name of the input's PodGroups. The gang
    PodGroups made are in ``Created.groups``."""
    core = [(d, s) for d, s in workload_controllers if d.get("kind") not in BATCH_KINDS]
    batch = [(d, s) for d, s in workload_controllers if d.get("kind") in BATCH_KINDS]
    out = controllers.expand(core, existing_pods, nodes) if core else Created()
    if not batch:
        return out
    expander = _BatchExpander(
        existing_pods,
        nodes,
        batch,
        list(runtimes or []),
        set(pod_groups or ()),
        [d for d, _ in core if d.get("kind") == "Job"],
    )
    expander.taken |= {f"{controllers._ns(d)}/{controllers._name(d)}" for d, _ in out.pods}
    made = expander.run()
    base = len(out.pods)
    out.pods.extend(made.pods)
    out.repeats |= {base + i for i in made.repeats}
    out.order.update(made.order)
    out.notes.extend(made.notes)
    out.groups.extend(made.groups)
    return out


__all__ = ["BATCH_KINDS", "RUNTIME_KINDS", "check_api_version", "expand"]
