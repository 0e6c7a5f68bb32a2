"""`draopt validate`'s entry point: what a Kubernetes API server would reject, before you apply it.

Mirrors `pkg/apis/resource/validation/validation.go` (kubernetes/kubernetes), the declarative
limits of `resource.k8s.io/v1` and the admin-access namespace check of the ResourceClaim /
ResourceClaimTemplate registry strategy (`AuthorizedForAdmin`). Validation works on the raw
documents, so objects the pydantic models would refuse are still reported field by field, and
kinds the allocator does not read (Namespace, Pod) are accepted.

Fields of disabled feature gates are dropped, as the API server drops them on create: they are
not validated and a note says so.

Messages follow Kubernetes' `field.Error` format: `<path>: <type>: <value>: <detail>`.

Each document goes through strict decoding and conversion to v1, then the rules of its kind
(draopt.validation.device_class, resource_slice, resource_claim, device_taint_rule, pod,
workload_groups for PodGroup / CompositePodGroup / Workload); CEL
expressions are compiled by draopt.validation.expressions.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from draopt.kube.admission import MIRROR_POD_ANNOTATION, AdmittedPriority, admitted_priorities, priority_refusal
from draopt.kube.convert import ConversionError, schema_for, to_v1
from draopt.kube.features import Features
from draopt.errors import InputError
from draopt.kube.loader import KINDS, custom_resource_group, node_allocatable_136, raw_documents
from draopt.kube.releases import RELEASES, not_served
from draopt.kube.strict import unknown_fields
from draopt.validation.context import _Ctx
from draopt.validation.device_class import _validate_device_class
from draopt.validation.device_taint_rule import _validate_taint_rule
from draopt.validation.expressions import Expressions
from draopt.validation.findings import Report
from draopt.kube.names import is_dns1123_label, is_dns1123_subdomain
from draopt.validation.pod import _validate_pod
from draopt.validation.quantities import _quantities
from draopt.validation.resource_claim import _validate_claim_spec
from draopt.validation.resource_slice import _validate_resource_slice
from draopt.validation.workload_groups import VALIDATORS as WORKLOAD_VALIDATORS


RESOURCE_API_VERSIONS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1")
EXTRA_KINDS = {"Namespace": ("v1",), "Pod": ("v1",)}


def read_documents(paths: Iterable[str]) -> list[tuple[dict, str]]:
    """Every document (lists flattened) of the files, with its source; `-` reads stdin.
    Unreadable input raises InputError."""
    return raw_documents(paths)


def object_ref(doc: Any) -> str:
    if not isinstance(doc, dict):
        return "(not an object)"
    kind = doc.get("kind") or "(no kind)"
    if not isinstance(kind, str):
        kind = "(invalid kind)"
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    name = meta.get("name") or "(no name)"
    if kind in NAMESPACED or meta.get("namespace"):
        return f"{kind} {meta.get('namespace') or 'default'}/{name}"
    return f"{kind} {name}"


NAMESPACED = ("ResourceClaim", "ResourceClaimTemplate", "Pod", "PodGroup", "CompositePodGroup", "Workload")


_VALIDATORS = {
    "DeviceClass": _validate_device_class,
    "ResourceSlice": _validate_resource_slice,
    "DeviceTaintRule": _validate_taint_rule,
    "Pod": _validate_pod,
    **WORKLOAD_VALIDATORS,
}


def _not_served(kind: str, api_version: str, version: str) -> str | None:
    """A note when the API server of Kubernetes `version` does not serve `kind` in `api_version`
    (draopt still reads it as that version's shape)."""
    why = not_served(kind, api_version, version)
    if why is None:
        return None
    some_version = bool((RELEASES[version].served or {}).get(kind))
    return why + ("; validated as written" if some_version else f"; validated as {api_version}")


def validate_documents(docs: list[tuple[Any, str]], features: Features | None = None) -> Report:
    features = features or Features.from_gates()
    expressions = Expressions(features)
    report = Report()
    namespaces = {}
    for doc, _ in docs:
        if isinstance(doc, dict) and doc.get("kind") == "Namespace" and isinstance(doc.get("metadata"), dict):
            namespaces[doc["metadata"].get("name")] = doc
    admitted = _admitted_priorities(docs)
    seen: dict[tuple[str, str, str], str] = {}  # (kind, namespace, name) -> where first given
    for doc, source in docs:
        report.objects += 1
        ctx = _Ctx(report, object_ref(doc), source, features, expressions)
        if not isinstance(doc, dict):
            ctx.invalid("(object)", None, "expected a Kubernetes object (a mapping)")
            continue
        doc = json.loads(json.dumps(doc, default=str))  # private copy: dropping fields must not leak
        kind = _served_kind(ctx, doc, features)
        if kind is None:
            continue
        v1 = _strict_v1(ctx, doc, kind)
        if v1 is None:
            continue
        meta = _check_metadata(ctx, v1, kind, source, seen)
        _validate_kind(ctx, v1, kind, meta, namespaces)
        if kind == "Pod":
            _pod_priority(ctx, v1, meta, admitted)
    return report


def _admitted_priorities(docs: list[tuple[Any, str]]) -> tuple[dict[str, AdmittedPriority], AdmittedPriority]:
    """The priority and preemption policy the Priority admission plugin gives a pod, per class name,
    from the input's PriorityClasses."""
    classes = []
    for doc, _ in docs:
        if isinstance(doc, dict) and doc.get("kind") == "PriorityClass" and isinstance(doc.get("metadata"), dict):
            value, policy = doc.get("value"), doc.get("preemptionPolicy")
            if isinstance(value, int) and not isinstance(value, bool):
                name = doc["metadata"].get("name")
                classes.append(
                    (str(name), value, doc.get("globalDefault") is True, policy if isinstance(policy, str) else None)
                )
    return admitted_priorities(classes)


def _pod_priority(
    ctx: _Ctx, doc: dict, meta: dict, admitted: tuple[dict[str, AdmittedPriority], AdmittedPriority]
) -> None:
    """A new pod whose spec sets a priority or preemption policy other than its class's is refused
    (Priority admission). A pod with a uid was created already, and a mirror pod is not checked."""
    annotations = meta.get("annotations")
    if meta.get("uid") or not isinstance(annotations, dict):
        annotations = {}
    if meta.get("uid") or MIRROR_POD_ANNOTATION in annotations:
        return
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return
    priority, policy, name = spec.get("priority"), spec.get("preemptionPolicy"), spec.get("priorityClassName")
    refusal = priority_refusal(
        priority if isinstance(priority, int) and not isinstance(priority, bool) else None,
        policy if isinstance(policy, str) else None,
        name if isinstance(name, str) else None,
        *admitted,
    )
    if refusal is not None:
        ctx.forbidden(refusal[0], refusal[1])


def _served_kind(ctx: _Ctx, doc: dict, features: Features) -> str | None:
    """The document's kind, when draopt validates it as the API server of `features` serves it;
    None (with the finding or note that says why) when not."""
    kind = doc.get("kind")
    if not kind:
        ctx.required("kind")
        return None
    if not isinstance(kind, str):
        ctx.invalid("kind", kind, "must be of type string")
        return None
    group = custom_resource_group(doc)
    if group is not None:
        ctx.note(
            "kind",
            f"a {kind} of API group {group} (a custom resource, not Kubernetes' {kind}) is not validated by draopt",
        )
        return None
    versions = KINDS[kind][1] if kind in KINDS else EXTRA_KINDS.get(kind)
    if versions is None:
        ctx.note("kind", f"{kind} objects are not validated by draopt")
        return None
    if doc.get("apiVersion") not in versions:
        ctx.invalid("apiVersion", doc.get("apiVersion"), f"{kind} is served as: " + ", ".join(versions))
        return None
    not_served = _not_served(kind, doc["apiVersion"], features.kubernetes_version)
    if not_served:
        ctx.note("apiVersion", not_served)
    if kind == "CompositePodGroup" and not features.composite_pod_group:
        ctx.note(
            "kind",
            "CompositePodGroup is not served: feature gate CompositePodGroup must be enabled (not validated)",
        )
        return None
    if kind == "DeviceTaintRule" and not features.device_taint_rules:
        ctx.note(
            "kind",
            "DeviceTaintRule is not served: feature gates DRADeviceTaints and "
            "DRADeviceTaintRules must be enabled (not validated)",
        )
        return None
    return kind


def _strict_v1(ctx: _Ctx, doc: dict, kind: str) -> dict | None:
    """The document in its v1 form, its unknown fields reported; None when it does not convert."""
    # Strict decoding (kubectl's default field validation): unknown fields of the version
    # as written; then the object in its v1 (internal) form, as the API server validates it.
    if kind == "ResourceSlice":  # 1.36's nodeAllocatableResourceMappings, read in its 1.37 shape
        try:
            doc = node_allocatable_136(doc, kind)
        except InputError as e:
            ctx.invalid("spec.devices", None, str(e))
            return None
    if kind in KINDS:
        for path in unknown_fields(doc, schema_for(KINDS[kind][0], doc.get("apiVersion"))):
            ctx.err(path, "Unknown field")
    try:
        doc = to_v1(doc)
    except ConversionError as e:
        ctx.invalid(e.path, None, e.message)
        return None
    return doc


def _check_metadata(ctx: _Ctx, doc: dict, kind: str, source: str, seen: dict[tuple[str, str, str], str]) -> dict:
    """The object's name and namespace, and whether an earlier document gave the same object;
    its metadata (empty when not a mapping)."""
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    name = meta.get("name")
    namespaced = kind in NAMESPACED
    name_check = is_dns1123_label if kind == "Namespace" else is_dns1123_subdomain
    if not name and not meta.get("generateName"):
        ctx.required("metadata.name", "name or generateName is required")
    elif name:
        ctx.names(name, "metadata.name", name_check)
        key = (kind, (meta.get("namespace") or "default") if namespaced else "", name)
        if not all(isinstance(k, str) for k in key):
            pass  # a wrong type is reported by the name checks
        elif key in seen:
            ctx.duplicate("metadata.name", name)
            ctx.note(
                "metadata.name",
                f"the same {kind} is also given in {seen[key]}: kubectl apply would "
                "apply the later one over the earlier (kubectl create: AlreadyExists)",
            )
        else:
            seen[key] = source
    if namespaced and meta.get("namespace"):
        ctx.names(meta["namespace"], "metadata.namespace", is_dns1123_label)
    return meta


def _validate_kind(ctx: _Ctx, doc: dict, kind: str, meta: dict, namespaces: dict) -> None:
    """The rules of the object's kind, then its quantities."""
    if kind == "ResourceClaim":
        _validate_claim_spec(ctx, doc.get("spec"), "spec", meta.get("namespace") or "default", namespaces)
    elif kind == "ResourceClaimTemplate":
        spec = ctx.get(doc, "spec", "", dict, {})
        _validate_claim_spec(ctx, spec.get("spec"), "spec.spec", meta.get("namespace") or "default", namespaces)
    elif kind in _VALIDATORS:
        _VALIDATORS[kind](ctx, doc)
    _quantities(ctx, doc, kind)


def validate_files(paths: Iterable[str], features: Features | None = None) -> Report:
    return validate_documents(read_documents(paths), features)
