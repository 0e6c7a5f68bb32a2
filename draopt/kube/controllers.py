"""Workload controllers: the Pods their controllers would create.

A Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, JobSet (``jobset.x-k8s.io``) or
LeaderWorkerSet (``leaderworkerset.x-k8s.io``) in the input becomes the Pods its controller would
create from its pod template, in the order the controller creates them, with their names, labels,
annotations and ``ownerReferences``. The pods then go through placement like any Pod: their
``spec.resourceClaims`` reference ResourceClaims or ResourceClaimTemplates as written in the
template.

What each controller makes (``N`` = the object's name):

* ReplicaSet: ``spec.replicas`` (default 1) pods ``<N>-<suffix>``, owner ReplicaSet N.
* Deployment: its ReplicaSet ``<N>-<pod-template-hash>`` (template labels plus
  ``pod-template-hash``), whose pods are ``<N>-<pod-template-hash>-<suffix>``.
* StatefulSet: pods ``<N>-0`` .. ``<N>-<replicas-1>`` (ordinal order), labels
  ``controller-revision-hash: <N>-<hash>``, ``statefulset.kubernetes.io/pod-name``,
  ``apps.kubernetes.io/pod-index``; ``spec.hostname`` and ``spec.subdomain`` (serviceName).
* DaemonSet: one pod ``<N>-<suffix>`` per eligible Node (by node name): the template's
  ``nodeSelector`` and required node affinity match, and every NoSchedule/NoExecute taint is
  tolerated by the template's tolerations plus those the DaemonSet controller adds
  (``node.kubernetes.io/{not-ready,unreachable}`` NoExecute, ``{disk,memory,pid}-pressure`` and
  ``unschedulable`` NoSchedule, ``network-unavailable`` with hostNetwork). Each pod gets the
  required node affinity ``metadata.name In [<node>]`` (merged into every term), as the controller
  sets it; labels ``controller-revision-hash``, ``pod-template-generation``.
* Job: ``min(parallelism (default 1), completions left)`` pods; NonIndexed ``<N>-<suffix>``,
  Indexed ``<N>-<index>-<suffix>`` for the lowest indexes not yet completed or running, with the
  ``batch.kubernetes.io/job-completion-index`` label and annotation and ``spec.hostname
  <N>-<index>``. Labels ``batch.kubernetes.io/controller-uid``, ``batch.kubernetes.io/job-name``,
  ``controller-uid``, ``job-name``. A suspended Job makes none.
* CronJob: one Job from ``spec.jobTemplate``, named ``<N>-<scheduled time in minutes>`` (the
  CronJob's creationTimestamp, else a stable number from its name), then that Job's pods. A
  suspended CronJob makes none.
* JobSet: for each ``replicatedJobs[i]``, ``replicas`` (default 1) Jobs ``<N>-<job>-<j>``
  (completion mode defaulted to Indexed, as JobSet's webhook does), labels and annotations
  ``jobset.sigs.k8s.io/{jobset-name,replicatedjob-name,replicatedjob-replicas,job-index,
  job-global-index,job-key,restart-attempt}``; then each Job's pods, with ``spec.subdomain``
  (``spec.network.subdomain``, default the JobSet's name) unless ``enableDNSHostnames`` is false.
* LeaderWorkerSet: for each group ``i`` (``spec.replicas``, default 1) the leader ``<N>-<i>``
  (leaderTemplate, else workerTemplate; owner StatefulSet N) and workers ``<N>-<i>-<j>`` for
  ``j`` in 1..size-1 (owner StatefulSet ``<N>-<i>``), labels
  ``leaderworkerset.sigs.k8s.io/{name,group-index,worker-index,group-key,template-revision-hash}``
  and the ``leaderworkerset.sigs.k8s.io/size`` annotation.

Deterministic names (Kubernetes uses random ones): ``<suffix>`` is 5 characters of Kubernetes'
name alphabet (``bcdfghjklmnpqrstvwxz2456789``) taken from SHA-256 of ``namespace/owner name/index``;
hashes (``pod-template-hash``, ``controller-revision-hash``) are FNV-32a of the template's
canonical JSON, encoded as Kubernetes encodes its hashes. Kubernetes hashes the Go struct, so the
values differ from a live cluster's but are stable across runs. An owner without
``metadata.uid`` gets a UUID derived from its kind, namespace and name (uuid5); the UIDs of the
intermediate ReplicaSets, StatefulSets and Jobs are derived the same way.

Pods already in the input that the controller owns (``ownerReferences``: kind and name), or
adopts (no controller reference, its selector matches: :mod:`draopt.kube.adoption`), count:
only the missing replicas, ordinals, indexes or nodes are created (a ReplicaSet or Job does not
count a pod being deleted, ``IsPodActive``: see :mod:`draopt.kube.settle`) (a Deployment's pods are those
owned by a ReplicaSet ``<N>-<their pod-template-hash label>``). A Deployment with one of its
ReplicaSets in the input, or a CronJob/JobSet with one of its Jobs in the input, leaves the pods
to those objects.

Queue order: the controller creates its pods in index order. :func:`expand` records each pod's
``(namespace/controller name, index)`` (``Created.order``, kept as ``ObjectSet.creation_order``),
which the placement queue uses after priority and creation time, before the pod's own name. The
pods carry the controller's ``creationTimestamp`` when it has one.

Limits: at most 100000 pods per controller; Indexed Jobs at most 100000 completions (batch/v1).
A pod template's errors name the controller's field (``spec.template.spec.containers``), and
its unknown-field warnings are given once per template.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from draopt.errors import InputError
from draopt.kube.exclusive_topology import (
    JOB_INDEX_KEY,
    JOBSET_EXCLUSIVE,
    LWS_EXCLUSIVE,
    exclusive_terms,
    exclusive_topology,
    jobset_exclusive,
)
from draopt.kube import adoption, settle
from draopt.kube.controller_docs import (
    NAME_ALPHABET,
    _active,
    _affinity_node_names,
    _check_template,
    _completion_index,
    _finished,
    _is_group_set,
    _label,
    _minutes,
    _name,
    _ns,
    _owned_by,
    _owner,
    _owner_names,
    _phase,
    _pin_to_node,
    _Reader,
    _refers_to,
    _terminating,
    _type,
    CONTROLLER_KINDS,
    Created,
    DAEMONSET_TOLERATIONS,
    generate_name,
    MAX_INDEXED_COMPLETIONS,
    MAX_PODS_PER_CONTROLLER,
    NETWORK_UNAVAILABLE,
    stable_uid,
    template_hash,
)


def _job_completions(r: _Reader, spec: dict, path: str, default_indexed: bool) -> tuple[int | None, str]:
    """A Job's spec.completions and spec.completionMode, as the API server validates them."""
    completions = r.get(spec, path, "completions", int, None)
    if completions is not None and completions < 0:
        raise r.error(f"{path}.completions", f"must be greater than or equal to 0, got {completions}")
    mode = r.get(spec, path, "completionMode", str, "Indexed" if default_indexed else "NonIndexed")
    if mode not in ("Indexed", "NonIndexed"):
        raise r.error(
            f"{path}.completionMode", f"unsupported value {mode!r}: supported values: \"Indexed\", \"NonIndexed\""
        )
    if mode == "Indexed" and completions is None:
        raise r.error(f"{path}.completions", "required when completionMode is Indexed")
    if mode == "Indexed" and completions is not None and completions > MAX_INDEXED_COMPLETIONS:
        raise r.error(
            f"{path}.completions",
            f"must be less than or equal to {MAX_INDEXED_COMPLETIONS} when completionMode is Indexed",
        )
    return completions, mode


class _Expander:
    def __init__(self, existing_pods: list[dict[str, Any]], nodes: list[Any], controllers: list[tuple[dict, str]]):
        self.existing = existing_pods
        self.nodes = nodes
        self.controllers = controllers
        self.out = Created()
        self.taken: set[str] = {f"{_ns(p)}/{_name(p)}" for p in existing_pods}
        self.checked: set[tuple[int, str]] = set()  # (reader, template path) validated
        self.made: dict[int, int] = {}  # reader -> pods made
        self.by_owner: dict[tuple[str, str, str], list[dict[str, Any]]] | None = None
        self.owner_kinds = CONTROLLER_KINDS  # the owners' kinds, with the apiVersions they are read in

    # ---------------------------------------------------------- pods
    def owned_pods(self, namespace: str, kind: str, name: str) -> list[dict[str, Any]]:
        """The input's pods in `namespace` with an ownerReference to kind/name, in input order
        (an index built once: a dump has thousands of pods and may have many controllers)."""
        if self.by_owner is None:
            self.by_owner = {}
            for p in self.existing:
                meta = p.get("metadata") if isinstance(p, dict) else None
                refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
                if not isinstance(refs, list):
                    continue
                owners = {
                    (_ns(p), r["kind"], r["name"])
                    for r in refs
                    if isinstance(r, dict)
                    and isinstance(r.get("kind"), str)
                    and isinstance(r.get("name"), str)
                    and _refers_to(r, r["kind"], self.owner_kinds)
                }
                for key in owners:
                    self.by_owner.setdefault(key, []).append(p)
        return self.by_owner.get((namespace, kind, name), [])

    def suspended(self, r: _Reader, field_path: str, makes: str = "creates no pods") -> None:
        """Suspended (Kueue creates Jobs and JobSets so, until it admits them): said, not silent."""
        self.out.notes.append(
            f"{r.what} is suspended ({field_path}: true): it {makes} until resumed (e.g. admitted by Kueue)"
        )

    def free_name(self, base: str, namespace: str, owner: str, index: int) -> str:
        """A generated pod name nobody holds: the API server refuses a generated name that
        exists (AlreadyExists) and the controller creates again with a new random suffix; here
        the next draw is deterministic (`<owner>#<attempt>` seeds it)."""
        name = generate_name(base, namespace, owner, index)
        attempt = 0
        while f"{namespace}/{name}" in self.taken:
            attempt += 1
            name = generate_name(base, namespace, f"{owner}#{attempt}", index)
        return name

    def pod(
        self,
        r: _Reader,
        template: dict[str, Any],
        name: str,
        owner: dict[str, Any],
        labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None,
        spec_update: dict[str, Any] | None = None,
        order: tuple[str, int] | None = None,
    ) -> None:
        tmeta = template.get("metadata") or {}
        meta: dict[str, Any] = {"name": name}
        if r.namespace_field is not None:
            meta["namespace"] = r.namespace_field
        # The API server gives every pod a uid, and a claim's reservedFor must name it
        # (validateResourceClaimUserReference): a stable one, from the pod's namespace and name.
        meta["uid"] = stable_uid("Pod", r.namespace, name)
        all_labels = dict(tmeta.get("labels") or {})
        all_labels.update(labels or {})
        if all_labels:
            meta["labels"] = all_labels
        all_annotations = dict(tmeta.get("annotations") or {})
        all_annotations.update(annotations or {})
        if all_annotations:
            meta["annotations"] = all_annotations
        if isinstance(r.creation, str):
            meta["creationTimestamp"] = r.creation
        meta["ownerReferences"] = [owner]
        spec = copy.deepcopy(template.get("spec") or {})
        spec.update(spec_update or {})
        self.made[id(r)] = self.made.get(id(r), 0) + 1
        if self.made[id(r)] > MAX_PODS_PER_CONTROLLER:
            raise InputError(
                f"{r.what}: it would create more than {MAX_PODS_PER_CONTROLLER} pods, more than draopt simulates"
            )
        key = f"{r.namespace}/{name}"
        if key in self.taken:
            raise InputError(f"{r.what}: the pod {key} it would create is already in the input and not owned by it")
        self.taken.add(key)
        doc = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        tpath = r.template_paths.get(id(template), "spec.template")
        if (id(r), tpath) in self.checked:
            self.out.repeats.add(len(self.out.pods))
        else:
            self.checked.add((id(r), tpath))
            _check_template(r, doc, tpath)
        self.out.pods.append((doc, f"{r.what}: {tpath} (as pod {name})"))
        self.out.order[key] = order or (f"{r.namespace}/{r.name}", len(self.out.order))

    # ---------------------------------------------------------- controllers
    def replica_set(
        self,
        r: _Reader,
        spec: dict,
        path: str,
        rs_name: str,
        rs_uid: str,
        template: dict,
        extra_labels: dict[str, str],
        order_key: str,
        have: int | None = None,
    ) -> None:
        replicas = r.count(spec, path, "replicas", 1)
        if have is None:
            have = len([p for p in self.owned_pods(r.namespace, "ReplicaSet", rs_name) if _active(p)])
        owner = _owner("apps/v1", "ReplicaSet", rs_name, rs_uid)
        for i in range(have, replicas):
            self.pod(
                r,
                template,
                self.free_name(rs_name + "-", r.namespace, rs_name, i),
                owner,
                labels=extra_labels,
                order=(order_key, i),
            )

    def do_ReplicaSet(self, r: _Reader) -> None:
        spec = r.get(r.doc, "", "spec", dict, {})
        template = r.template(spec, "spec")
        self.replica_set(r, spec, "spec", r.name, r.uid, template, {}, f"{r.namespace}/{r.name}")

    def do_Deployment(self, r: _Reader, replica_sets: list[dict]) -> None:
        spec = r.get(r.doc, "", "spec", dict, {})
        template = r.template(spec, "spec")
        if any(
            _ns(rs) == r.namespace
            and _owned_by(rs, "Deployment", r.name)
            or adoption.replica_set_adopted(r.doc, rs, r.source)
            for rs in replica_sets
        ):
            return  # its ReplicaSet is in the input (owned or adopted) and makes the pods
        h = template_hash(template, r.get(r.doc.get("status"), "status", "collisionCount", int, 0))
        rs_name = f"{r.name}-{h}"
        rs_uid = stable_uid("ReplicaSet", r.namespace, rs_name)
        # Its pods in the input (a dump without the ReplicaSets): owned by a ReplicaSet
        # `<name>-<pod-template-hash>` of this Deployment, whatever hash the cluster computed.
        have = len(
            [
                p
                for p in self.existing
                if _ns(p) == r.namespace
                and _active(p)
                and any(o == f"{r.name}-{_label(p, 'pod-template-hash')}" for o in _owner_names(p, "ReplicaSet"))
            ]
        )
        self.replica_set(
            r, spec, "spec", rs_name, rs_uid, template, {"pod-template-hash": h}, f"{r.namespace}/{r.name}", have=have
        )

    def do_StatefulSet(self, r: _Reader) -> None:
        spec = r.get(r.doc, "", "spec", dict, {})
        template = r.template(spec, "spec")
        replicas = r.count(spec, "spec", "replicas", 1)
        ordinals = r.get(spec, "spec", "ordinals", dict, {})
        start = r.count(ordinals, "spec.ordinals", "start", 0, maximum=2**31 - 1)
        service = r.get(spec, "spec", "serviceName", str, "")
        have = {_name(p) for p in self.owned_pods(r.namespace, "StatefulSet", r.name)}
        self.volume_claim_templates(r, spec)
        revision = f"{r.name}-{template_hash(template)}"
        owner = _owner("apps/v1", "StatefulSet", r.name, r.uid)
        for i in range(start, start + replicas):
            name = f"{r.name}-{i}"
            if name in have:
                continue
            update = {"hostname": name}
            if service:
                update["subdomain"] = service
            self.pod(
                r,
                template,
                name,
                owner,
                labels={
                    "controller-revision-hash": revision,
                    "statefulset.kubernetes.io/pod-name": name,
                    "apps.kubernetes.io/pod-index": str(i),
                },
                spec_update=update,
                order=(f"{r.namespace}/{r.name}", i),
            )

    def volume_claim_templates(self, r: _Reader, spec: dict) -> None:
        """Said, not dropped silently: each pod of the set would mount a PersistentVolumeClaim
        `<template>-<set>-<ordinal>` (pkg/controller/statefulset/stateful_set_utils.go
        getPersistentVolumeClaimName, updateStorage), which kube-scheduler's VolumeBinding filter
        needs bound or bindable on the node; draopt models neither the claims nor volume binding."""
        templates = r.get(spec, "spec", "volumeClaimTemplates", list, [])
        if not templates:
            return
        names = [
            str(t["metadata"].get("name"))
            for t in templates
            if isinstance(t, dict) and isinstance(t.get("metadata"), dict)
        ]
        self.out.notes.append(
            f"{r.what}: spec.volumeClaimTemplates ({', '.join(names) or len(templates)}) not modelled: draopt "
            f"creates no PersistentVolumeClaims for its pods and does not simulate volume binding "
            f"(kube-scheduler's VolumeBinding filter), so a pod is placed as if its volumes could bind on any node"
        )

    def do_DaemonSet(self, r: _Reader) -> None:
        from draopt.kube.models.workload import PodSpec
        from draopt.kube.nodeselect import node_selector_matches, tolerates
        from pydantic import ValidationError

        spec = r.get(r.doc, "", "spec", dict, {})
        template = r.template(spec, "spec")
        tspec = copy.deepcopy(template.get("spec") or {})
        tolerations = list(r.get(tspec, "spec.template.spec", "tolerations", list, []))
        known = {(repr(t.get("key")), repr(t.get("effect"))) for t in tolerations if isinstance(t, dict)}
        extra = DAEMONSET_TOLERATIONS + ([NETWORK_UNAVAILABLE] if tspec.get("hostNetwork") is True else [])
        for t in extra:
            if (repr(t["key"]), repr(t["effect"])) not in known:
                tolerations.append(dict(t))
        tspec["tolerations"] = tolerations
        try:
            typed = PodSpec.model_validate(tspec)
        except ValidationError as e:
            err = e.errors()[0]
            loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
            raise r.error(f"spec.template.spec{loc}", err["msg"]) from None
        required = (
            typed.affinity.node_affinity.required_during_scheduling_ignored_during_execution
            if typed.affinity is not None and typed.affinity.node_affinity is not None
            else None
        )
        covered = set()
        for p in self.owned_pods(r.namespace, "DaemonSet", r.name):
            node = (p.get("spec") or {}).get("nodeName") if isinstance(p.get("spec"), dict) else None
            if isinstance(node, str):
                covered.add(node)
            else:
                covered.update(_affinity_node_names(p))
        revision = template_hash(template)
        generation = r.get(r.meta, "metadata", "generation", int, 1)
        owner = _owner("apps/v1", "DaemonSet", r.name, r.uid)
        where = f"{r.what}: spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        for index, node in enumerate(sorted(self.nodes, key=lambda n: n.name)):
            if node.name in covered:
                continue
            labels = node.metadata.labels or {}
            if any(labels.get(k) != v for k, v in typed.node_selector.items()):
                continue
            if required is not None and not node_selector_matches(required, node, where):
                continue
            if any(
                t.effect in ("NoSchedule", "NoExecute") and not any(tolerates(x, t) for x in typed.tolerations)
                for t in node.spec.taints
            ):
                continue
            update = {"tolerations": tolerations, "affinity": _pin_to_node(tspec.get("affinity"), node.name)}
            pinned = {"metadata": template.get("metadata"), "spec": tspec}
            r.template_paths[id(pinned)] = "spec.template"
            self.pod(
                r,
                pinned,
                self.free_name(r.name + "-", r.namespace, r.name, index),
                owner,
                labels={"controller-revision-hash": revision, "pod-template-generation": str(generation)},
                spec_update=update,
                order=(f"{r.namespace}/{r.name}", index),
            )

    def job(
        self,
        r: _Reader,
        spec: dict,
        path: str,
        job_name: str,
        job_uid: str,
        job_labels: dict[str, str],
        job_annotations: dict[str, str],
        order: tuple[str, int],
        default_indexed: bool = False,
        spec_update: dict[str, Any] | None = None,
    ) -> int:
        """The pods of one Job (spec at `path`); returns how many were made."""
        template = r.template(spec, path)
        if r.get(spec, path, "suspend", bool, False):
            if path == "spec":  # a Job of its own (a JobSet's or CronJob's says so for itself)
                self.suspended(r, "spec.suspend")
            return 0
        parallelism = r.count(spec, path, "parallelism", 1)
        completions, mode = _job_completions(r, spec, path, default_indexed)
        owned = self.owned_pods(r.namespace, "Job", job_name)
        active = [p for p in owned if _active(p)]
        succeeded = [p for p in owned if _phase(p) == "Succeeded"]
        # Terminating pods are replaced at once, unless podReplacementPolicy is Failed (the default
        # with a podFailurePolicy): then they hold their places until gone (job_controller.go
        # onlyReplaceFailedPods; batch/v1 defaults.go).
        policy = r.get(spec, path, "podReplacementPolicy", str, "Failed" if spec.get("podFailurePolicy") else "")
        waiting = [p for p in owned if _terminating(p) and not _finished(p)] if policy == "Failed" else []
        labels = {
            "batch.kubernetes.io/controller-uid": job_uid,
            "batch.kubernetes.io/job-name": job_name,
            "controller-uid": job_uid,
            "job-name": job_name,
        }
        labels.update(job_labels)
        owner = _owner("batch/v1", "Job", job_name, job_uid)
        made = 0
        if mode == "NonIndexed":
            done = len(succeeded)
            if completions is None:
                want = 0 if done else parallelism - len(active) - len(waiting)
            else:
                want = min(parallelism, completions - done) - len(active) - len(waiting)
            for i in range(max(0, want)):
                self.pod(
                    r,
                    template,
                    self.free_name(job_name + "-", r.namespace, job_name, i),
                    owner,
                    labels=labels,
                    annotations=job_annotations,
                    spec_update=spec_update,
                    order=(order[0], order[1] + i),
                )
                made += 1
            return made
        busy = {_completion_index(p) for p in active + succeeded + waiting}
        want = max(0, parallelism - len(active) - len(waiting))
        free = [i for i in range(min(completions or 0, len(busy) + want)) if i not in busy][:want]
        for i in free:
            self.pod(
                r,
                template,
                self.free_name(f"{job_name}-{i}-", r.namespace, job_name, i),
                owner,
                labels=dict(labels, **{JOB_INDEX_KEY: str(i)}),
                annotations=dict(job_annotations, **{JOB_INDEX_KEY: str(i)}),
                spec_update=dict(spec_update or {}, hostname=f"{job_name}-{i}"),
                order=(order[0], order[1] + i),
            )
            made += 1
        return made

    def do_Job(self, r: _Reader) -> None:
        spec = r.get(r.doc, "", "spec", dict, {})
        self.job(r, spec, "spec", r.name, r.uid, {}, {}, (f"{r.namespace}/{r.name}", 0))

    def do_CronJob(self, r: _Reader, jobs: list[dict]) -> None:
        spec = r.get(r.doc, "", "spec", dict, {})
        jt = r.get(spec, "spec", "jobTemplate", dict)
        if jt is None:
            raise r.error("spec.jobTemplate", "missing")
        jspec = r.get(jt, "spec.jobTemplate", "spec", dict, {})
        r.template(jspec, "spec.jobTemplate.spec")
        if r.get(spec, "spec", "suspend", bool, False):
            self.suspended(r, "spec.suspend", "makes no Jobs")
            return
        if any(_ns(j) == r.namespace and _owned_by(j, "CronJob", r.name) for j in jobs):
            return  # its Job is in the input and makes the pods
        if any(
            _ns(p) == r.namespace
            and not _finished(p)
            and any(o.startswith(f"{r.name}-") and o[len(r.name) + 1 :].isdigit() for o in _owner_names(p, "Job"))
            for p in self.existing
        ):
            return  # a Job of this CronJob is running (its pods are in the input)
        minutes = _minutes(r.creation)
        if minutes is None:
            minutes = int(hashlib.sha256(f"{r.namespace}/{r.name}".encode()).hexdigest(), 16) % 30_000_000
        job_name = f"{r.name}-{minutes}"
        self.job(
            r,
            jspec,
            "spec.jobTemplate.spec",
            job_name,
            stable_uid("Job", r.namespace, job_name),
            {},
            {},
            (f"{r.namespace}/{r.name}", 0),
        )

    def do_JobSet(self, r: _Reader, jobs: list[dict]) -> None:
        spec = r.get(r.doc, "", "spec", dict, {})
        if r.get(spec, "spec", "suspend", bool, False):
            self.suspended(r, "spec.suspend")
            return
        rjobs = r.get(spec, "spec", "replicatedJobs", list, [])
        # spec.network.enableDNSHostnames (default true): pods get the subdomain (default: the name).
        network = r.get(spec, "spec", "network", dict, {})
        dns = r.get(network, "spec.network", "enableDNSHostnames", bool, True)
        subdomain = (r.get(network, "spec.network", "subdomain", str, "") or r.name) if dns else ""
        global_index = 0
        order = 0
        for i, rj in enumerate(rjobs):
            path = f"spec.replicatedJobs[{i}]"
            if not isinstance(rj, dict):
                raise r.error(path, f"expected a mapping, got {_type(rj)}")
            rname = r.get(rj, path, "name", str)
            if not rname:
                raise r.error(f"{path}.name", "missing")
            replicas = r.count(rj, path, "replicas", 1)
            jt = r.get(rj, path, "template", dict)
            if jt is None:
                raise r.error(f"{path}.template", "missing")
            jspec = r.get(jt, f"{path}.template", "spec", dict, {})
            for j in range(replicas):
                job_name = f"{r.name}-{rname}-{j}"
                if any(_ns(x) == r.namespace and _name(x) == job_name for x in jobs):
                    global_index += 1
                    continue
                marks = {
                    "jobset.sigs.k8s.io/jobset-name": r.name,
                    "jobset.sigs.k8s.io/replicatedjob-name": rname,
                    "jobset.sigs.k8s.io/replicatedjob-replicas": str(replicas),
                    "jobset.sigs.k8s.io/job-index": str(j),
                    "jobset.sigs.k8s.io/job-global-index": str(global_index),
                    "jobset.sigs.k8s.io/job-key": hashlib.sha1(f"{r.namespace}/{job_name}".encode()).hexdigest(),
                    "jobset.sigs.k8s.io/restart-attempt": "0",
                }
                global_index += 1
                start = len(self.out.pods)
                made = self.job(
                    r,
                    jspec,
                    f"{path}.template.spec",
                    job_name,
                    stable_uid("Job", r.namespace, job_name),
                    marks,
                    marks,
                    (f"{r.namespace}/{r.name}", order),
                    default_indexed=True,
                    spec_update={"subdomain": subdomain} if subdomain else None,
                )
                order += made
                topology = exclusive_topology(r, JOBSET_EXCLUSIVE, jt, jspec.get("template"))
                if topology:
                    for doc, _ in self.out.pods[start:]:
                        jobset_exclusive(doc, topology)

    def do_LeaderWorkerSet(self, r: _Reader) -> None:
        spec = r.get(r.doc, "", "spec", dict, {})
        groups = r.count(spec, "spec", "replicas", 1)
        lwt = r.get(spec, "spec", "leaderWorkerTemplate", dict)
        if lwt is None:
            raise r.error("spec.leaderWorkerTemplate", "missing")
        path = "spec.leaderWorkerTemplate"
        size = r.count(lwt, path, "size", 1)
        if size < 1:
            raise r.error(f"{path}.size", "must be at least 1")
        worker_t = r.template(lwt, path, "workerTemplate")
        leader_t = r.template(lwt, path, "leaderTemplate") if lwt.get("leaderTemplate") is not None else worker_t
        revision = template_hash({"leader": leader_t, "worker": worker_t, "size": size})
        have = {
            _name(p)
            for p in self.existing
            if _ns(p) == r.namespace and any(_is_group_set(o, r.name) for o in _owner_names(p, "StatefulSet"))
        }
        leader_owner = _owner("apps/v1", "StatefulSet", r.name, stable_uid("StatefulSet", r.namespace, r.name))
        topology = exclusive_topology(r, LWS_EXCLUSIVE, leader_t, worker_t)
        seq = 0
        for i in range(groups):
            start = len(self.out.pods)
            leader = f"{r.name}-{i}"
            group_key = hashlib.sha1(f"{r.namespace}/{leader}".encode()).hexdigest()
            base = {
                "leaderworkerset.sigs.k8s.io/name": r.name,
                "leaderworkerset.sigs.k8s.io/group-index": str(i),
                "leaderworkerset.sigs.k8s.io/group-key": group_key,
                "leaderworkerset.sigs.k8s.io/template-revision-hash": revision,
            }
            notes = {"leaderworkerset.sigs.k8s.io/size": str(size)}
            if leader not in have:
                self.pod(
                    r,
                    leader_t,
                    leader,
                    leader_owner,
                    labels=dict(base, **{"leaderworkerset.sigs.k8s.io/worker-index": "0"}),
                    annotations=notes,
                    spec_update={"hostname": leader, "subdomain": r.name},
                    order=(f"{r.namespace}/{r.name}", seq),
                )
            seq += 1
            worker_owner = _owner("apps/v1", "StatefulSet", leader, stable_uid("StatefulSet", r.namespace, leader))
            for j in range(1, size):
                name = f"{leader}-{j}"
                if name not in have:
                    self.pod(
                        r,
                        worker_t,
                        name,
                        worker_owner,
                        labels=dict(base, **{"leaderworkerset.sigs.k8s.io/worker-index": str(j)}),
                        annotations=dict(notes, **{"leaderworkerset.sigs.k8s.io/leader-name": leader}),
                        spec_update={"hostname": name, "subdomain": r.name},
                        order=(f"{r.namespace}/{r.name}", seq),
                    )
                seq += 1
            if topology:
                for doc, _ in self.out.pods[start:]:
                    exclusive_terms(doc, "leaderworkerset.sigs.k8s.io/group-key", group_key, topology)

    def run(self) -> Created:
        replica_sets = [d for d, _ in self.controllers if d.get("kind") == "ReplicaSet"]
        jobs = [d for d, _ in self.controllers if d.get("kind") == "Job"]
        for doc, source in self.controllers:
            r = _Reader(doc, source)
            kind = r.kind
            if kind == "Deployment":
                self.do_Deployment(r, replica_sets)
            elif kind in ("CronJob", "JobSet"):
                getattr(self, f"do_{kind}")(r, jobs)
            else:
                getattr(self, f"do_{kind}")(r)
        return self.out


def expand(
    controllers: list[tuple[dict[str, Any], str]], existing_pods: list[dict[str, Any]], nodes: list[Any]
) -> Created:
    """The pods the controllers (documents with where they came from) would create, given the
    pods already in the input (documents) and the Nodes (for DaemonSets)."""
    notes = adoption.adopt_orphans(controllers, existing_pods)
    out = _Expander(existing_pods, nodes, controllers).run()
    out.notes[:0] = notes
    return out


def check_api_version(doc: dict[str, Any], source: str) -> None:
    kind = doc.get("kind")
    versions = CONTROLLER_KINDS[str(kind)]  # (a kind of CONTROLLER_KINDS: the loader chose it by kind)
    api_version = doc.get("apiVersion")
    if api_version in versions:
        return
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    what = f"{source}: {kind} {name if isinstance(name, str) and name else '(no name)'}: field apiVersion"
    if api_version is None:
        raise InputError(f"{what}: missing (accepted: {', '.join(versions)})")
    raise InputError(f"{what}: {api_version!r} is not served for {kind} (accepted: {', '.join(versions)})")


__all__ = [
    "CONTROLLER_KINDS",
    "NAME_ALPHABET",
    "Created",
    "expand",
    "check_api_version",
    "template_hash",
    "generate_name",
    "stable_uid",
]


def deleted_by_suspended_jobs(controllers: list[tuple[dict[str, Any], str]], pods: list[Any]) -> dict[str, str]:
    """The active pods (not finished, not being deleted) of the input's suspended Jobs: the Job
    controller deletes every one of them (pkg/controller/job/job_controller.go, manageJob: a
    suspended Job's active pods are all removed, bound or not). Pod key -> why."""
    suspended = set()
    for doc, _ in controllers:
        spec = doc.get("spec")
        if doc.get("kind") == "Job" and isinstance(spec, dict) and spec.get("suspend") is True:
            meta = doc.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            suspended.add((meta.get("namespace") or "default", meta.get("name")))
    if not suspended:
        return {}
    out = {}
    for pod in pods:
        owners = (pod.metadata.model_extra or {}).get("ownerReferences") or []
        job = next(
            (o.get("name") for o in owners if isinstance(o, dict) and o.get("kind") == "Job" and o.get("controller")),
            None,
        )
        if job is None or (pod.namespace, job) not in suspended:
            continue
        if settle.terminal(pod) or settle.terminating(pod):
            continue
        out[f"{pod.namespace}/{pod.name}"] = (
            f"belongs to suspended Job {pod.namespace}/{job} (spec.suspend: true): the Job controller deletes it"
        )
    return out
