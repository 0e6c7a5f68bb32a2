"""Copies of validated claims, without validating again.

Expansion makes one ResourceClaim per pod from a template (or per pod with the same extended
resources): documents that differ only in the claim's name and owner. :class:`ClaimCopier`
validates the first, and for the second compares a copy of the first with what validation makes
(once per kind of claim): the rest are copies, made only where that comparison held. A copy
copies the containers of the models it makes and shares the rest (strings, numbers, None; the
claim's spec, which nothing changes once read: a copy is made where one is changed).
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Hashable
from typing import Any

from pydantic import BaseModel

from draopt.kube.models.resource import ResourceClaim

_new = object.__new__
_set = object.__setattr__
_SCALARS = (str, int, float, bool, type(None))
_STATE = ("__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")


def _scalar_or_flat(v: Any) -> bool:
    """A scalar, or a list or dict of scalars."""
    kind = type(v)
    if kind is list:
        return all(type(x) in _SCALARS for x in v)
    if kind is dict:
        return all(type(x) in _SCALARS for x in v.values())
    return kind in _SCALARS


class _Flat:
    """How to copy one validated model (`m`) whose values are scalars, or lists and dicts of
    scalars, but for those in `replaced` (every copy gives them): lists and dicts copied, the rest
    shared."""

    __slots__ = ("cls", "values", "containers", "fields_set", "extra", "extra_containers")

    def __init__(self, m: BaseModel, replaced: tuple[str, ...]) -> None:
        self.cls = type(m)
        self.values = {k: (None if k in replaced else v) for k, v in m.__dict__.items()}
        self.extra = {k: (None if k in replaced else v) for k, v in (m.__pydantic_extra__ or {}).items()}
        self.containers = tuple(k for k, v in self.values.items() if type(v) in (list, dict))
        self.extra_containers = tuple(k for k, v in self.extra.items() if type(v) in (list, dict))
        self.fields_set = frozenset(m.__pydantic_fields_set__)

    @staticmethod
    def of(m: BaseModel, replaced: tuple[str, ...] = ()) -> _Flat | None:
        extra = m.__pydantic_extra__
        if m.__pydantic_private__ is not None or type(extra) is not dict:
            return None
        for values in (m.__dict__, extra):
            if not all(k in replaced or _scalar_or_flat(v) for k, v in values.items()):
                return None
        return _Flat(m, replaced)

    def copy(self, values: dict[str, Any], extra: dict[str, Any]) -> Any:
        """A copy, with `values` and `extra` replacing field values and extras."""
        own = {**self.values, **values}
        for k in self.containers:
            own[k] = own[k].copy()
        more = {**self.extra, **extra}
        for k in self.extra_containers:
            more[k] = more[k].copy()
        c = _new(self.cls)
        # c is a fresh object built here, as model_construct builds one: not a write into a foreign object
        _set(c, "__dict__", own)
        _set(c, "__pydantic_fields_set__", set(self.fields_set))
        _set(c, "__pydantic_extra__", more)
        _set(c, "__pydantic_private__", None)
        return c


def same_state(a: Any, b: Any) -> bool:
    """Whether `a` and `b` hold the same values of the same types, recursively (models: field
    values in order, fields set, extras and private state)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, BaseModel):
        if list(a.__dict__) != list(b.__dict__):
            return False
        if not all(same_state(v, b.__dict__[k]) for k, v in a.__dict__.items()):
            return False
        return all(same_state(getattr(a, s), getattr(b, s)) for s in _STATE)
    if type(a) is list:
        return len(a) == len(b) and all(same_state(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return list(a) == list(b) and all(same_state(v, b[k]) for k, v in a.items())
    return bool(a == b)


_Copier = tuple[_Flat, _Flat, _Flat, Any]  # (claim, metadata, status, the shared spec)


class ClaimCopier:
    """ResourceClaims of one kind (`kind`: the caller's key for everything of the claim but its
    name and its owner reference) as validation makes them from their documents."""

    def __init__(self) -> None:
        # kind -> (the first claim, how to copy it: None until the second claim of the kind
        # compared a copy with validation, False when the copy differed or cannot be made)
        self._first: dict[Hashable, tuple[ResourceClaim, _Copier | None | bool]] = {}
        self._copies: dict[
            int, tuple[ResourceClaim, Hashable, str, dict[str, Any]]
        ] = {}  # id -> (copy, kind, name, owner)
        self._dumps: dict[Hashable, bytes] = {}  # kind -> marshal of the first claim's to_k8s()

    def claim(
        self, kind: Hashable | None, name: str, owner: dict[str, Any], metadata: Callable[[], dict], spec: Any
    ) -> ResourceClaim:
        """The claim validated from metadata() (its name `name`, its ownerReferences [`owner`])
        and `spec` (a document, or the validated spec of the first claim of the kind); None: a
        kind of its own."""
        known = self._first.get(kind) if kind is not None else None
        if known is not None and known[1]:
            copy = _copy(known[1], name, owner)  # type: ignore[arg-type]
            if all(type(v) in _SCALARS for v in owner.values()):  # (its dump: a copy of it)
                self._copies[id(copy)] = (copy, kind, name, owner)
            return copy
        doc = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": metadata(), "spec": spec}
        claim = ResourceClaim.model_validate(doc)
        if kind is None:
            pass
        elif known is None:
            self._first[kind] = (claim, None)
        elif known[1] is None:
            how = _copier(known[0])
            same = how is not None and same_state(claim, _copy(how, name, owner))
            self._first[kind] = (known[0], how if same else False)
        return claim

    def dump(self, claim: ResourceClaim) -> dict[str, Any] | None:
        """claim.to_k8s() for a copy made here, from the first claim's dump (its name and owner
        replaced: the fields all copies differ in); None for any other claim. Nothing changes an
        expanded claim's metadata or spec, nor sets its status (a copy of the claim is changed)."""
        got = self._copies.get(id(claim))
        if got is None or got[0] is not claim:
            return None
        _, kind, name, owner = got
        first = self._first[kind][0]
        if claim.__pydantic_fields_set__ != first.__pydantic_fields_set__ or claim.spec is not first.spec:
            return None
        text = self._dumps.get(kind)
        if text is None:
            text = self._dumps[kind] = marshal.dumps(first.to_k8s())
        out = marshal.loads(text)
        out["metadata"]["name"] = name
        out["metadata"]["ownerReferences"] = [dict(owner)]
        return out


def _copier(first: ResourceClaim) -> _Copier | None:
    if type(first) is not ResourceClaim:
        return None
    outer = _Flat.of(first, ("metadata", "spec", "status"))
    meta = _Flat.of(first.metadata, ("name", "ownerReferences"))
    status = _Flat.of(first.status)
    if outer is None or meta is None or status is None:
        return None
    return outer, meta, status, first.spec


def _copy(how: _Copier, name: str, owner: dict[str, Any]) -> ResourceClaim:
    outer, meta, status, spec = how
    metadata = meta.copy({"name": name}, {"ownerReferences": [owner]})
    return outer.copy({"metadata": metadata, "spec": spec, "status": status.copy({}, {})}, {})
