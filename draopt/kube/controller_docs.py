"""Reading the workload controllers' documents (draopt.kube.controllers): the kinds served, a
reader that names the field of each error, the names and UIDs the controllers give, and what a
pod document says of its owner, phase and index.
"""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from draopt.errors import InputError
from draopt.kube.groups import of_another_group
from draopt.kube.exclusive_topology import (
    JOB_INDEX_KEY,
)

# kind -> accepted apiVersions
CONTROLLER_KINDS: dict[str, tuple[str, ...]] = {
    "Deployment": ("apps/v1",),
    "ReplicaSet": ("apps/v1",),
    "StatefulSet": ("apps/v1",),
    "DaemonSet": ("apps/v1",),
    "Job": ("batch/v1",),
    "CronJob": ("batch/v1",),
    "JobSet": ("jobset.x-k8s.io/v1alpha2",),
    "LeaderWorkerSet": ("leaderworkerset.x-k8s.io/v1",),
}

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
MAX_GENERATED_NAME = 58  # 63 - 5 random characters (names.SimpleNameGenerator)
MAX_PODS_PER_CONTROLLER = 100_000  # beyond this the input is not a cluster
MAX_INDEXED_COMPLETIONS = 100_000  # batch/v1 validation, completionMode Indexed
DAEMONSET_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
NETWORK_UNAVAILABLE = {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}


# ------------------------------------------------------------------ names and hashes
def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """Kubernetes' rand.SafeEncodeString: each character mapped into the name alphabet."""
    return "".join(NAME_ALPHABET[ord(c) % len(NAME_ALPHABET)] for c in text)


def template_hash(template: Any, collision_count: int = 0) -> str:
    """A stable hash of a pod template (FNV-32a of canonical JSON), encoded as Kubernetes' ComputeHash."""
    data = json.dumps(template, sort_keys=True, separators=(",", ":"), default=str).encode()
    h = fnv32a(data + (str(collision_count).encode() if collision_count else b""))
    return safe_encode(str(h))


def name_suffix(namespace: str, owner: str, index: int) -> str:
    digest = hashlib.sha256(f"{namespace}/{owner}/{index}".encode()).digest()
    return "".join(NAME_ALPHABET[b % len(NAME_ALPHABET)] for b in digest[:5])


def generate_name(base: str, namespace: str, owner: str, index: int) -> str:
    """`generateName: <base>` with a stable suffix (names.SimpleNameGenerator truncates to 58)."""
    if len(base) > MAX_GENERATED_NAME:
        base = base[:MAX_GENERATED_NAME]
    return base + name_suffix(namespace, owner, index)


def stable_uid(kind: str, namespace: str, name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"draopt:{kind}/{namespace}/{name}"))


# ------------------------------------------------------------------ reading documents
class _Reader:
    """Typed access to one controller document; every error names the object and the field."""

    def __init__(self, doc: dict[str, Any], source: str):
        self.doc = doc
        self.source = source
        self.kind = doc.get("kind")
        meta = doc.get("metadata")
        if not isinstance(meta, dict):
            raise InputError(
                f"{source}: {self.kind} (no name): field metadata: "
                + ("missing" if meta is None else f"expected a mapping, got {_type(meta)}")
            )
        self.meta = meta
        name = meta.get("name")
        self.what = f"{source}: {self.kind} {name if isinstance(name, str) and name else '(no name)'}"
        if not isinstance(name, str) or not name:
            raise InputError(
                f"{self.what}: field metadata.name: "
                + ("missing" if not name else f"expected a string, got {_type(name)}")
            )
        self.name = name
        ns = meta.get("namespace")
        if ns is not None and not isinstance(ns, str):
            raise InputError(f"{self.what}: field metadata.namespace: expected a string, got {_type(ns)}")
        self.namespace_field = ns or None
        self.namespace = ns or "default"
        self.what = f"{source}: {self.kind} {self.namespace}/{name}"
        uid = meta.get("uid")
        self.uid = uid if isinstance(uid, str) and uid else stable_uid(str(self.kind), self.namespace, name)
        self.creation = meta.get("creationTimestamp")
        self.template_paths: dict[int, str] = {}  # id(pod template) -> its path, for errors

    def error(self, path: str, message: str) -> InputError:
        return InputError(f"{self.what}: field {path}: {message}")

    def get(self, obj: Any, path: str, key: str, kind: type | tuple, default: Any = None) -> Any:
        """obj[key] checked against `kind`; `path` is obj's path."""
        value = obj.get(key) if isinstance(obj, dict) else None
        full = f"{path}.{key}" if path else key
        if value is None:
            return default
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.error(full, f"expected an integer, got {_type(value)}")
        if not isinstance(value, kind):
            raise self.error(full, f"expected {_expected(kind)}, got {_type(value)}")
        return value

    def count(self, obj: Any, path: str, key: str, default: int, maximum: int = MAX_PODS_PER_CONTROLLER) -> int:
        value = self.get(obj, path, key, int, default)
        full = f"{path}.{key}" if path else key
        if value < 0:
            raise self.error(full, f"must be greater than or equal to 0, got {value}")
        if value > maximum:
            raise self.error(full, f"{value} is more than draopt simulates ({maximum})")
        return value

    def template(self, obj: Any, path: str, key: str = "template") -> dict[str, Any]:
        t = self.get(obj, path, key, dict)
        full = f"{path}.{key}" if path else key
        if t is None:
            raise self.error(full, "missing")
        self.template_paths[id(t)] = full
        for sub, want in (("metadata", dict), ("spec", dict)):
            v = t.get(sub)
            if v is not None and not isinstance(v, want):
                raise self.error(f"{full}.{sub}", f"expected a mapping, got {_type(v)}")
        meta = t.get("metadata") or {}
        for sub in ("labels", "annotations"):
            v = meta.get(sub)
            if v is None:
                continue
            if not isinstance(v, dict):
                raise self.error(f"{full}.metadata.{sub}", f"expected a mapping, got {_type(v)}")
            for k, x in v.items():
                if not isinstance(x, str):
                    raise self.error(f"{full}.metadata.{sub}[{k}]", f"expected a string, got {_type(x)}")
        return t


def _type(value: Any) -> str:
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _expected(kind: type | tuple) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_type(k()) if k is not type(None) else "null" for k in kinds)


# ------------------------------------------------------------------ result
@dataclass
class Created:
    """Pods made from controllers: documents (to be read as Pods), where each came from, order.
    `repeats`: indexes of pods whose template was already read for an earlier pod (its errors
    and warnings were given once, for the template)."""

    pods: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    order: dict[str, tuple[str, int]] = field(default_factory=dict)  # pod key -> (controller key, index)
    repeats: set[int] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)  # why a controller made no pods (suspended, ...)
    groups: list[tuple[dict[str, Any], str]] = field(default_factory=list)  # gang PodGroups made (batch jobs)


def _owner(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _refers_to(ref: Any, kind: str, served: dict[str, tuple[str, ...]] = CONTROLLER_KINDS) -> bool:
    """An ownerReference to `kind` in a group draopt reads it in (`served`): a Volcano Job
    (batch.volcano.sh) owns its pods, a batch/v1 Job of the same name does not."""
    return (
        isinstance(ref, dict)
        and ref.get("kind") == kind
        and of_another_group(ref.get("apiVersion"), served.get(kind, ())) is None
    )


def _owned_by(doc: dict[str, Any], kind: str, name: str) -> bool:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    if not isinstance(refs, list):
        return False
    return any(_refers_to(r, kind) and r.get("name") == name for r in refs)


def _ns(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return ns if isinstance(ns, str) and ns else "default"


def _name(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    n = meta.get("name") if isinstance(meta, dict) else None
    return n if isinstance(n, str) else ""


def _minutes(timestamp: Any) -> int | None:
    if not isinstance(timestamp, str):
        return None
    try:
        d = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    return int(d.timestamp()) // 60


def _check_template(r: _Reader, doc: dict[str, Any], tpath: str) -> None:
    """The pod template read as a Pod; errors name the template's fields in the controller."""
    from pydantic import ValidationError
    from draopt.kube.models.workload import Pod

    try:
        Pod.model_validate(doc)
    except ValidationError as e:
        errors = e.errors()
        lines = []
        for err in errors[:5]:
            loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
            lines.append(f"{r.what}: field {tpath}{loc}: {err['msg']}")
        if len(errors) > 5:
            lines.append(f"{r.what}: ... and {len(errors) - 5} more problems")
        raise InputError("\n".join(lines)) from None


def _label(doc: dict[str, Any], key: str) -> str | None:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    value = labels.get(key) if isinstance(labels, dict) else None
    return value if isinstance(value, str) else None


def _owner_names(doc: dict[str, Any], kind: str) -> list[str]:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
    return (
        [r["name"] for r in refs if _refers_to(r, kind) and isinstance(r.get("name"), str)]
        if isinstance(refs, list)
        else []
    )


def _is_group_set(owner: str, lws: str) -> bool:
    """The LeaderWorkerSet's leader StatefulSet (its name) or a group's worker one (`<name>-<i>`)."""
    return owner == lws or (owner.startswith(lws + "-") and owner[len(lws) + 1 :].isdigit())


def _phase(pod: dict[str, Any]) -> str | None:
    status = pod.get("status")
    return status.get("phase") if isinstance(status, dict) else None


def _finished(pod: dict[str, Any]) -> bool:
    return _phase(pod) in ("Succeeded", "Failed")


def _terminating(pod: dict[str, Any]) -> bool:
    meta = pod.get("metadata")
    return isinstance(meta, dict) and meta.get("deletionTimestamp") is not None


def _active(pod: dict[str, Any]) -> bool:
    """A pod its controller counts as a replica: not finished, not being deleted
    (controller_utils.go IsPodActive)."""
    return not _finished(pod) and not _terminating(pod)


def _completion_index(pod: dict[str, Any]) -> int | None:
    meta = pod.get("metadata") or {}
    for where in ("annotations", "labels"):
        values = meta.get(where) if isinstance(meta, dict) else None
        if isinstance(values, dict) and isinstance(values.get(JOB_INDEX_KEY), str):
            try:
                return int(values[JOB_INDEX_KEY])
            except ValueError:
                return None
    return None


def _affinity_node_names(pod: dict[str, Any]) -> set[str]:
    try:
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        return {
            v
            for t in terms
            for f in t.get("matchFields") or []
            if f.get("key") == "metadata.name"
            for v in f.get("values") or []
        }
    except (KeyError, TypeError, AttributeError):
        return set()


def _pin_to_node(affinity: Any, node: str) -> dict[str, Any]:
    """The DaemonSet controller's ReplaceDaemonSetPodNodeNameNodeAffinity: every required term gets
    matchFields `metadata.name In [node]` (replacing any metadata.name field); no terms: one term."""
    affinity = copy.deepcopy(affinity) if isinstance(affinity, dict) else {}
    na = affinity.setdefault("nodeAffinity", {})
    if not isinstance(na, dict):
        na = affinity["nodeAffinity"] = {}
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    field_req = {"key": "metadata.name", "operator": "In", "values": [node]}
    terms = req.get("nodeSelectorTerms") if isinstance(req, dict) else None
    if not isinstance(terms, list) or not terms:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [{"matchFields": [field_req]}]}
        return affinity
    new_terms = []
    for t in terms:
        t = dict(t) if isinstance(t, dict) else {}
        fields = [f for f in t.get("matchFields") or [] if isinstance(f, dict) and f.get("key") != "metadata.name"]
        t["matchFields"] = fields + [dict(field_req)]
        new_terms.append(t)
    req = dict(req)
    req["nodeSelectorTerms"] = new_terms
    na["requiredDuringSchedulingIgnoredDuringExecution"] = req
    return affinity
