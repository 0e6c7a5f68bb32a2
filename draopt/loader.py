"""Read Kubernetes objects from YAML/JSON files, `kind: List`s and stdin."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import ValidationError

from .errors import InputError
from .models import (DeviceClass, DeviceTaintRule, Namespace, Node, Pod, PodGroup, PriorityClass,
                     ResourceClaim, ResourceClaimTemplate, ResourceSlice)
from .models.base import TypedObject

RESOURCE_GROUP = "resource.k8s.io"

# kind -> (model, accepted apiVersions)
KINDS: dict[str, tuple[type[TypedObject], tuple[str, ...]]] = {
    "DeviceClass": (DeviceClass, ("resource.k8s.io/v1", "resource.k8s.io/v1beta2")),
    "ResourceSlice": (ResourceSlice, ("resource.k8s.io/v1", "resource.k8s.io/v1beta2")),
    "ResourceClaim": (ResourceClaim, ("resource.k8s.io/v1", "resource.k8s.io/v1beta2")),
    "ResourceClaimTemplate": (ResourceClaimTemplate, ("resource.k8s.io/v1", "resource.k8s.io/v1beta2")),
    "DeviceTaintRule": (DeviceTaintRule, ("resource.k8s.io/v1", "resource.k8s.io/v1beta2",
                                          "resource.k8s.io/v1alpha3")),
    "Node": (Node, ("v1",)),
    "Pod": (Pod, ("v1",)),
    "PodGroup": (PodGroup, ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha2")),
    "Namespace": (Namespace, ("v1",)),
    "PriorityClass": (PriorityClass, ("scheduling.k8s.io/v1",)),
}


@dataclass
class ObjectSet:
    """Everything read from the inputs, in input order per kind."""
    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    claim_templates: list[ResourceClaimTemplate] = field(default_factory=list)
    taint_rules: list[DeviceTaintRule] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    pod_groups: list[PodGroup] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    extra: dict[str, list[Any]] = field(default_factory=dict)

    _BY_KIND = {"DeviceClass": "device_classes", "ResourceSlice": "resource_slices",
                "ResourceClaim": "resource_claims", "ResourceClaimTemplate": "claim_templates",
                "DeviceTaintRule": "taint_rules", "Node": "nodes",
                "Pod": "pods", "PodGroup": "pod_groups", "Namespace": "namespaces",
                "PriorityClass": "priority_classes"}

    def add(self, obj: TypedObject) -> None:
        getattr(self, self._BY_KIND[obj.kind]).append(obj)

    def extend(self, other: "ObjectSet") -> None:
        for attr in self._BY_KIND.values():
            getattr(self, attr).extend(getattr(other, attr))


def _location(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def describe_validation_error(what: str, err: ValidationError) -> str:
    lines = []
    for e in err.errors()[:5]:
        lines.append(f"{what}: field {_location(e['loc']) or '(object)'}: {e['msg']}")
    more = len(err.errors()) - 5
    if more > 0:
        lines.append(f"{what}: ... and {more} more problems")
    return "\n".join(lines)


def parse_object(doc: Any, source: str) -> TypedObject:
    """Validate one document into its model; `source` names it in errors."""
    if not isinstance(doc, dict):
        raise InputError(f"{source}: expected a Kubernetes object (a mapping), got {type(doc).__name__}")
    kind = doc.get("kind")
    name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    what = f"{source}: {kind or '(no kind)'} {name or '(no name)'}"
    if not kind:
        raise InputError(f"{what}: field kind: missing")
    if kind not in KINDS:
        raise InputError(f"{what}: field kind: unsupported kind {kind!r} (supported: {', '.join(KINDS)})")
    model, versions = KINDS[kind]
    api_version = doc.get("apiVersion")
    if api_version not in versions:
        raise InputError(f"{what}: field apiVersion: {api_version!r} is not served for {kind} "
                         f"(accepted: {', '.join(versions)})")
    if not name:
        raise InputError(f"{what}: field metadata.name: missing")
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        raise InputError(describe_validation_error(what, e)) from None


def _documents(text: str, source: str) -> Iterable[Any]:
    stripped = text.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{source}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
        yield from (data if isinstance(data, list) else [data])
        return
    try:
        for doc in yaml.safe_load_all(text):
            if doc is not None:
                yield doc
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise InputError(f"{source}: invalid YAML{where}: {problem}") from None


def _flatten(doc: Any, source: str) -> Iterable[tuple[Any, str]]:
    if isinstance(doc, dict) and doc.get("kind") == "List" or \
            isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError(f"{source}: {doc.get('kind')}: field items: expected a list")
        for i, item in enumerate(items):
            yield from _flatten(item, f"{source} items[{i}]")
    else:
        yield doc, source


def load_text(text: str, source: str = "<input>") -> ObjectSet:
    objects = ObjectSet()
    for index, doc in enumerate(_documents(text, source)):
        for item, where in _flatten(doc, f"{source} document {index + 1}"):
            objects.add(parse_object(item, where))
    return objects


def read_source(path: str) -> tuple[str, str]:
    """(text, source name) of a file; `-` reads stdin. Errors name the file."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(encoding="utf-8"), path
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a YAML or JSON file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None


def raw_documents(paths: Iterable[str]) -> list[tuple[Any, str]]:
    """Every document of the files, Lists flattened, unvalidated, each with where it came from."""
    out: list[tuple[Any, str]] = []
    for path in paths:
        text, source = read_source(path)
        for index, doc in enumerate(_documents(text, source)):
            out.extend(_flatten(doc, f"{source} document {index + 1}"))
    return out


def load_files(paths: Iterable[str]) -> ObjectSet:
    """Load files in order; `-` reads stdin."""
    objects = ObjectSet()
    for path in paths:
        text, source = read_source(path)
        objects.extend(load_text(text, source))
    return objects


def dump_objects(objs: list[dict[str, Any]], fmt: str) -> str:
    doc = {"apiVersion": "v1", "kind": "List", "items": objs}
    if fmt == "json":
        return json.dumps(doc, indent=2) + "\n"
    return yaml.safe_dump(doc, sort_keys=False)
