"""What the scheduler plugins read from a Pod, parsed once: schedulerName, labels, the
controller owner, inter-pod (anti-)affinity terms, topology spread constraints, preferred node
affinity and tolerations.

Rules (kubernetes/kubernetes):
* label selectors: apimachinery/pkg/apis/meta/v1 LabelSelectorAsSelector (a null selector
  matches nothing, an empty one everything; In, NotIn, Exists, DoesNotExist);
* pod affinity terms: pkg/scheduler/framework/types.go newAffinityTerm (no namespaces and no
  namespaceSelector: the pod's own namespace; an empty namespaceSelector: every namespace;
  matchLabelKeys / mismatchLabelKeys add `key in/notin (the pod's value)` to the selector);
* topology spread constraints: podtopologyspread/common.go filterTopologySpreadConstraints
  (matchLabelKeys merged into the selector; nodeAffinityPolicy default Honor, nodeTaintsPolicy
  default Ignore; minDomains default 1).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from pydantic import BaseModel, ValidationError

from draopt.errors import InputError
from draopt.kube.models.core import NodeSelector, NodeSelectorTerm, Toleration


class Matcher(Protocol):
    """A label selector as a predicate on a pod's labels. Every matcher carries `key`: equal keys
    select the same pods (selectors written alike by different pods share the scheduler's per-node
    counts)."""

    key: tuple

    def __call__(self, labels: dict[str, str], /) -> bool: ...


def _keyed(fn: Callable[[dict[str, str]], bool], key: tuple) -> Matcher:
    """`fn` as a Matcher: the key is an attribute of the function itself (a plain function call
    when matching)."""
    setattr(fn, "key", key)
    return cast(Matcher, fn)


SPREAD_OWNERS = ("ReplicaSet", "StatefulSet", "ReplicationController")


def _no_pod(labels: dict[str, str]) -> bool:
    return False


def _every_pod(labels: dict[str, str]) -> bool:
    return True


_nothing = _keyed(_no_pod, ("nothing",))
_everything = _keyed(_every_pod, ("everything",))


def label_selector(sel: Any, where: str, extra: Sequence[tuple[str, str, list[str]]] = ()) -> Matcher:
    """A matcher for a metav1.LabelSelector dict (None: nothing), plus extra requirements."""
    if sel is None:
        return _nothing
    if not isinstance(sel, dict):
        raise InputError(f"{where}: must be a label selector (a mapping)")
    reqs: list[tuple[str, str, frozenset[str]]] = []
    for k, v in (sel.get("matchLabels") or {}).items():
        reqs.append((str(k), "In", frozenset([str(v)])))
    for i, e in enumerate(sel.get("matchExpressions") or []):
        if not isinstance(e, dict) or not e.get("key"):
            raise InputError(f"{where}.matchExpressions[{i}].key: required")
        op = e.get("operator")
        values = frozenset(str(v) for v in (e.get("values") or []))
        if op in ("In", "NotIn"):
            if not values:
                raise InputError(f"{where}.matchExpressions[{i}].values: required for operator {op}")
        elif op in ("Exists", "DoesNotExist"):
            if values:
                raise InputError(f"{where}.matchExpressions[{i}].values: must be empty for operator {op}")
        else:
            raise InputError(
                f"{where}.matchExpressions[{i}].operator: {op!r}: must be In, NotIn, Exists or DoesNotExist"
            )
        reqs.append((str(e["key"]), op, values))
    reqs += [(k, op, frozenset(v)) for k, op, v in extra]
    if not reqs:
        return _everything

    def match(labels: dict[str, str]) -> bool:
        for key, op, values in reqs:
            v = labels.get(key)
            if op == "In":
                if v is None or v not in values:
                    return False
            elif op == "NotIn":
                if v is not None and v in values:
                    return False
            elif op == "Exists":
                if v is None:
                    return False
            elif v is not None:  # DoesNotExist
                return False
        return True

    return _keyed(match, tuple(sorted((k, op, tuple(sorted(v))) for k, op, v in reqs)))


@dataclass
class AffinityTerm:
    topology_key: str
    selector: Matcher
    namespaces: frozenset[str] | None  # None: every namespace
    namespace_selector: Matcher | None  # namespaces whose labels match (with `namespaces`)

    def matches_namespace(self, ns: str, ns_labels: dict[str, dict[str, str]]) -> bool:
        if self.namespaces is None:
            return True
        if ns in self.namespaces:
            return True
        return self.namespace_selector is not None and self.namespace_selector(ns_labels.get(ns, {}))

    def matches(self, other: PodInfo, ns_labels: dict[str, dict[str, str]]) -> bool:
        return self.matches_namespace(other.namespace, ns_labels) and self.selector(other.labels)

    @property
    def pods_key(self) -> tuple:
        """Equal for terms that select the same pods (whatever their topology key)."""
        return (
            "term",
            self.selector.key,
            None if self.namespaces is None else tuple(sorted(self.namespaces)),
            None if self.namespace_selector is None else self.namespace_selector.key,
        )

    @property
    def key(self) -> tuple:
        return (self.topology_key,) + self.pods_key


@dataclass
class SpreadRule:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: Matcher
    min_domains: int = 1
    honor_node_affinity: bool = True
    honor_taints: bool = False


@dataclass
class PodInfo:
    key: str
    namespace: str
    labels: dict[str, str]
    scheduler_name: str
    owner: tuple[str, str] | None = None  # (kind, name) of a spreading controller
    required_affinity: list[AffinityTerm] = field(default_factory=list)
    required_anti: list[AffinityTerm] = field(default_factory=list)
    preferred_affinity: list[tuple[int, AffinityTerm]] = field(default_factory=list)
    preferred_anti: list[tuple[int, AffinityTerm]] = field(default_factory=list)
    spread: list[SpreadRule] = field(default_factory=list)
    preferred_node_terms: list[tuple[int, NodeSelector]] = field(default_factory=list)
    prefer_tolerations: list[Toleration] = field(default_factory=list)  # effect PreferNoSchedule or empty

    @property
    def has_pod_affinity(self) -> bool:
        return bool(self.required_affinity or self.required_anti or self.preferred_affinity or self.preferred_anti)


def _plain(v: Any) -> Any:
    if hasattr(v, "to_k8s"):
        return v.to_k8s()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _extra(model: Any, name: str) -> Any:
    """A Kubernetes field of a draopt model as plain JSON, whether the model types it or keeps it
    as an extra (unknown-to-draopt) field."""
    if model is None:
        return None
    extra = model.__pydantic_extra__  # (model_extra, without the property's cost: once per pod field)
    v = extra.get(name) if extra else None
    if v is None:
        typed = _typed_field(model.__class__, name)
        if typed is not None:
            v = _plain(getattr(model, typed))
    return v


@functools.cache
def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


@functools.cache
def _typed_field(cls: type[BaseModel], name: str) -> str | None:
    """The attribute of `cls` that types the Kubernetes field `name`, or None (an extra)."""
    snake = _snake(name)
    return snake if snake in cls.__pydantic_fields__ else None


def _term(raw: Any, pod, where: str) -> AffinityTerm:
    if not isinstance(raw, dict):
        raise InputError(f"{pod.ref}: field {where}: must be a pod affinity term (a mapping)")
    key = raw.get("topologyKey")
    if not key or not isinstance(key, str):
        raise InputError(f"{pod.ref}: field {where}.topologyKey: required")
    labels = pod.metadata.labels or {}
    extra = [(k, "In", [labels[k]]) for k in raw.get("matchLabelKeys") or [] if k in labels]
    extra += [(k, "NotIn", [labels[k]]) for k in raw.get("mismatchLabelKeys") or [] if k in labels]
    sel = raw.get("labelSelector")
    selector = (
        label_selector(sel, f"{pod.ref}: field {where}.labelSelector", extra) if sel is not None or extra else _nothing
    )
    names = raw.get("namespaces") or []
    ns_sel = raw.get("namespaceSelector")
    if not names and ns_sel is None:
        namespaces: frozenset[str] | None = frozenset([pod.namespace])
        ns_match = None
    elif ns_sel is not None and not (ns_sel.get("matchLabels") or ns_sel.get("matchExpressions")):
        namespaces, ns_match = None, None  # empty namespaceSelector: all namespaces
    else:
        namespaces = frozenset(str(n) for n in names)
        ns_match = label_selector(ns_sel, f"{pod.ref}: field {where}.namespaceSelector") if ns_sel is not None else None
    return AffinityTerm(key, selector, namespaces, ns_match)


def _weighted(raw: Any, pod, where: str) -> tuple[int, AffinityTerm]:
    if not isinstance(raw, dict):
        raise InputError(f"{pod.ref}: field {where}: must be a weighted pod affinity term")
    w = raw.get("weight")
    if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 100:
        raise InputError(f"{pod.ref}: field {where}.weight: {w!r}: must be a whole number from 1 to 100")
    return w, _term(raw.get("podAffinityTerm"), pod, f"{where}.podAffinityTerm")


def _spread(raw: Any, pod, where: str) -> SpreadRule:
    if not isinstance(raw, dict):
        raise InputError(f"{pod.ref}: field {where}: must be a topology spread constraint (a mapping)")
    skew = raw.get("maxSkew")
    if isinstance(skew, bool) or not isinstance(skew, int) or skew < 1:
        raise InputError(f"{pod.ref}: field {where}.maxSkew: {skew!r}: must be a whole number, at least 1")
    key = raw.get("topologyKey")
    if not key or not isinstance(key, str):
        raise InputError(f"{pod.ref}: field {where}.topologyKey: required")
    when = raw.get("whenUnsatisfiable")
    if when not in ("DoNotSchedule", "ScheduleAnyway"):
        raise InputError(
            f"{pod.ref}: field {where}.whenUnsatisfiable: {when!r}: must be DoNotSchedule or ScheduleAnyway"
        )
    md = raw.get("minDomains", 1)
    if md is None:
        md = 1
    if isinstance(md, bool) or not isinstance(md, int) or md < 1:
        raise InputError(f"{pod.ref}: field {where}.minDomains: {md!r}: must be a whole number, at least 1")
    if md != 1 and when != "DoNotSchedule":
        raise InputError(f"{pod.ref}: field {where}.minDomains: only with whenUnsatisfiable DoNotSchedule")
    labels = pod.metadata.labels or {}
    extra = [(k, "In", [labels[k]]) for k in raw.get("matchLabelKeys") or [] if k in labels]
    selector = (
        label_selector(raw.get("labelSelector"), f"{pod.ref}: field {where}.labelSelector", extra)
        if raw.get("labelSelector") is not None
        else _nothing
    )
    na = raw.get("nodeAffinityPolicy") or "Honor"
    nt = raw.get("nodeTaintsPolicy") or "Ignore"
    for name, v in (("nodeAffinityPolicy", na), ("nodeTaintsPolicy", nt)):
        if v not in ("Honor", "Ignore"):
            raise InputError(f"{pod.ref}: field {where}.{name}: {v!r}: must be Honor or Ignore")
    return SpreadRule(skew, key, when, selector, md, na == "Honor", nt == "Honor")


def pod_info(pod) -> PodInfo:
    """`pod` is a draopt.kube.models.Pod."""
    spec = pod.spec
    name = _extra(spec, "schedulerName") or "default-scheduler"
    owner = None
    for ref in _extra(pod.metadata, "ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("kind") in SPREAD_OWNERS and ref.get("name"):
            owner = (ref["kind"], ref["name"])
            break
    info = PodInfo(pod_key(pod), pod.namespace, dict(pod.metadata.labels or {}), str(name), owner)
    aff = spec.affinity
    for part, req_list, pref_list in (
        ("podAffinity", info.required_affinity, info.preferred_affinity),
        ("podAntiAffinity", info.required_anti, info.preferred_anti),
    ):
        raw = _extra(aff, part)
        if raw is None:
            continue
        if not isinstance(raw, dict):
            raise InputError(f"{pod.ref}: field spec.affinity.{part}: must be a mapping")
        base = f"spec.affinity.{part}"
        for i, t in enumerate(raw.get("requiredDuringSchedulingIgnoredDuringExecution") or []):
            req_list.append(_term(t, pod, f"{base}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"))
        for i, t in enumerate(raw.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            pref_list.append(_weighted(t, pod, f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"))
    for i, c in enumerate(_extra(spec, "topologySpreadConstraints") or []):
        info.spread.append(_spread(c, pod, f"spec.topologySpreadConstraints[{i}]"))
    na = aff.node_affinity if aff is not None else None
    for i, t in enumerate(_extra(na, "preferredDuringSchedulingIgnoredDuringExecution") or []):
        where = f"spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        if not isinstance(t, dict):
            raise InputError(f"{pod.ref}: field {where}: must be a mapping")
        w = t.get("weight")
        if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 100:
            raise InputError(f"{pod.ref}: field {where}.weight: {w!r}: must be a whole number from 1 to 100")
        try:
            term = NodeSelectorTerm.model_validate(t.get("preference") or {})
        except ValidationError as e:
            raise InputError(f"{pod.ref}: field {where}.preference: {e}") from None
        info.preferred_node_terms.append((w, NodeSelector(node_selector_terms=[term])))
    info.prefer_tolerations = [t for t in spec.tolerations if not t.effect or t.effect == "PreferNoSchedule"]
    return info


def pod_key(pod) -> str:
    return f"{pod.namespace}/{pod.name}"
