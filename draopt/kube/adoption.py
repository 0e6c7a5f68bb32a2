"""Orphans adopted by the workload controllers of the input, as Kubernetes' controllers adopt them.

A controller claims the objects of its namespace that match its selector and have no controller
reference (no ``ownerReferences`` entry with ``controller: true``), unless the object is being
deleted (``metadata.deletionTimestamp``): ``PodControllerRefManager.ClaimPods`` and
``ClaimObject`` in ``pkg/controller/controller_ref_manager.go``. It then counts them as its own
and creates only what is missing. A dump whose pods lost their ``ownerReferences`` next to the
manifest of their Deployment (NVIDIA's quickstart ``gpu-test4``) thus keeps its 4 pods instead
of getting 4 more. Per kind (``pkg/controller/...``):

* ReplicaSet (``replicaset/replica_set.go`` ``syncReplicaSet``): active pods (not Succeeded or
  Failed: ``FilterActivePods`` runs before ``claimPods``) matching ``spec.selector``.
* Deployment (``deployment/deployment_controller.go`` ``getReplicaSetsForDeployment``): orphan
  ReplicaSets matching its selector (they then make the pods). Its pods belong to its
  ReplicaSet ``<name>-<pod-template-hash>``, whose selector is the Deployment's plus the
  ``pod-template-hash`` label (``deployment/sync.go`` ``getNewReplicaSet``): an orphan pod is
  adopted through it when it matches the selector and carries a ``pod-template-hash`` label.
  Kubernetes' hash is of the Go struct, which draopt does not compute: the pod's label is
  taken as the hash of the current template (as for pods owned by ``<name>-<hash>``). A bare
  pod with the Deployment's labels but no ``pod-template-hash`` is not adopted (said in a note).
* StatefulSet (``statefulset/stateful_set.go`` ``getPodsForStatefulSet``): pods matching the
  selector whose name is ``<set>-<ordinal>`` (``isMemberOf``).
* DaemonSet (``daemon/daemon_controller.go`` ``getDaemonPods``): pods matching the selector.
* Job (``job/job_controller.go`` ``getPodsForJob``; finished pods too: they count as
  completions): ``spec.selector`` as written (a dump's generated one, or ``manualSelector``);
  without one, the API server generates ``batch.kubernetes.io/controller-uid: <uid>``
  (``pkg/registry/batch/job/strategy.go``), which only a pod carrying the Job's own
  ``metadata.uid`` can match.
* JobSet, LeaderWorkerSet, CronJob and the batch frameworks find their children by controller
  reference only (field indexes on the owner): they adopt nothing.

A pod matching several controllers goes to the first in input order (in a cluster, to whichever
syncs first). Adoption is recorded by adding the controller reference to the pod's view (what
:mod:`draopt.kube.controllers` reads), and said in one note per controller.
"""

from __future__ import annotations

from typing import Any

from draopt.errors import InputError

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")  # metav1.LabelSelectorOperator
ADOPTING_KINDS = ("ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "Job")


def _meta(doc: Any) -> dict[str, Any]:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    return meta if isinstance(meta, dict) else {}


def _namespace(doc: Any) -> str:
    ns = _meta(doc).get("namespace")
    return ns if isinstance(ns, str) and ns else "default"


def _labels(doc: Any) -> dict[str, Any]:
    labels = _meta(doc).get("labels")
    return labels if isinstance(labels, dict) else {}


def has_controller(doc: Any) -> bool:
    refs = _meta(doc).get("ownerReferences")
    return isinstance(refs, list) and any(isinstance(r, dict) and r.get("controller") is True for r in refs)


def _terminating(doc: Any) -> bool:
    return _meta(doc).get("deletionTimestamp") is not None


def selector_matches(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    """metav1.LabelSelectorAsSelector: every matchLabels pair and every expression holds. (An
    empty selector matches everything; callers decide what a missing one means.)"""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def _checked_selector(doc: dict[str, Any], where: str, path: str) -> dict[str, Any] | None:
    """The label selector at `path` (spec.selector), its shape checked; None when absent."""
    spec: dict[str, Any] = doc["spec"] if isinstance(doc.get("spec"), dict) else {}
    selector = spec.get("selector")
    if selector is None:
        return None
    if not isinstance(selector, dict):
        raise InputError(f"{where}: field {path}: expected a mapping, got {type(selector).__name__}")
    match = selector.get("matchLabels")
    if match is not None and (not isinstance(match, dict) or not all(isinstance(v, str) for v in match.values())):
        raise InputError(f"{where}: field {path}.matchLabels: expected a mapping of strings")
    exprs = selector.get("matchExpressions")
    if exprs is not None and not isinstance(exprs, list):
        raise InputError(f"{where}: field {path}.matchExpressions: expected a list")
    for i, e in enumerate(exprs or []):
        at = f"{path}.matchExpressions[{i}]"
        if not isinstance(e, dict) or not isinstance(e.get("key"), str):
            raise InputError(f"{where}: field {at}.key: expected a string")
        if e.get("operator") not in SELECTOR_OPERATORS:
            raise InputError(
                f"{where}: field {at}.operator: {e.get('operator')!r} is not a valid selector "
                f"operator (supported: {', '.join(SELECTOR_OPERATORS)})"
            )
        values = e.get("values")
        if values is not None and (not isinstance(values, list) or not all(isinstance(v, str) for v in values)):
            raise InputError(f"{where}: field {at}.values: expected a list of strings")
    return selector


def _what(doc: dict[str, Any], source: str) -> str:
    name = _meta(doc).get("name")
    return f"{source}: {doc.get('kind')} {_namespace(doc)}/{name}"


def _job_selector(doc: dict[str, Any], where: str) -> dict[str, Any] | None:
    selector = _checked_selector(doc, where, "spec.selector")
    if selector is not None:
        return selector
    uid = _meta(doc).get("uid")
    if isinstance(uid, str) and uid:
        return {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    return None  # a new Job: the API server's generated selector names a uid no pod has


def _reference(api_version: str, kind: str, name: str, uid: Any) -> dict[str, Any]:
    ref = {"apiVersion": api_version, "kind": kind, "name": name, "controller": True, "blockOwnerDeletion": True}
    if isinstance(uid, str) and uid:
        ref["uid"] = uid
    return ref


def _adopt(pod: dict[str, Any], ref: dict[str, Any]) -> None:
    meta = pod.setdefault("metadata", {})
    meta["ownerReferences"] = list(meta.get("ownerReferences") or []) + [ref]


def adopt_orphans(controllers: list[tuple[dict[str, Any], str]], pods: list[dict[str, Any]]) -> list[str]:
    """Give each orphan pod view in `pods` the controller reference of the first controller in
    `controllers` that adopts it (see the module's doc); returns the notes."""
    orphans = [p for p in pods if not has_controller(p) and not _terminating(p)]
    notes: list[str] = []
    if not orphans:
        return notes
    for doc, source in controllers:
        kind = doc.get("kind")
        if kind not in ADOPTING_KINDS or _terminating(doc):
            continue
        where = _what(doc, source)
        name = _meta(doc).get("name")
        ns = _namespace(doc)
        if kind == "Job":
            selector = _job_selector(doc, where)
        else:
            selector = _checked_selector(doc, where, "spec.selector")
        if selector is None or not isinstance(name, str):
            continue
        adopted: list[str] = []
        unhashed: list[str] = []
        for pod in orphans:
            if _namespace(pod) != ns or has_controller(pod) or not selector_matches(selector, _labels(pod)):
                continue
            pod_name = str(_meta(pod).get("name"))
            phase = (pod.get("status") or {}).get("phase") if isinstance(pod.get("status"), dict) else None
            if kind == "ReplicaSet":
                if phase in ("Succeeded", "Failed"):
                    continue
                ref = _reference("apps/v1", "ReplicaSet", name, _meta(doc).get("uid"))
            elif kind == "Deployment":
                template_hash = _labels(pod).get("pod-template-hash")
                if not isinstance(template_hash, str) or not template_hash:
                    unhashed.append(pod_name)
                    continue
                ref = _reference("apps/v1", "ReplicaSet", f"{name}-{template_hash}", None)
            elif kind == "StatefulSet":
                ordinal = pod_name[len(name) + 1 :] if pod_name.startswith(name + "-") else ""
                if not ordinal.isdigit():
                    continue
                ref = _reference("apps/v1", "StatefulSet", name, _meta(doc).get("uid"))
            elif kind == "DaemonSet":
                ref = _reference("apps/v1", "DaemonSet", name, _meta(doc).get("uid"))
            else:
                ref = _reference("batch/v1", "Job", name, _meta(doc).get("uid"))
            _adopt(pod, ref)
            adopted.append(pod_name)
        if adopted:
            shown = ", ".join(adopted[:3]) + (f" and {len(adopted) - 3} more" if len(adopted) > 3 else "")
            notes.append(
                f"{where} adopts {len(adopted)} pod(s) without a controller reference that match its "
                f"selector ({shown}): it counts them and creates only the missing ones"
            )
        if unhashed:
            shown = ", ".join(unhashed[:3]) + (f" and {len(unhashed) - 3} more" if len(unhashed) > 3 else "")
            notes.append(
                f"{where}: {len(unhashed)} pod(s) match its selector but have no pod-template-hash "
                f"label ({shown}): its ReplicaSet's selector needs one, so they are not adopted"
            )
    return notes


def replica_set_adopted(deployment: dict[str, Any], replica_set: dict[str, Any], source: str) -> bool:
    """The Deployment claims this orphan ReplicaSet (same namespace, labels match its selector)."""
    if (
        has_controller(replica_set)
        or _terminating(replica_set)
        or _terminating(deployment)
        or _namespace(replica_set) != _namespace(deployment)
    ):
        return False
    selector = _checked_selector(deployment, _what(deployment, source), "spec.selector")
    return selector is not None and selector_matches(selector, _labels(replica_set))


__all__ = ["ADOPTING_KINDS", "adopt_orphans", "has_controller", "replica_set_adopted", "selector_matches"]
