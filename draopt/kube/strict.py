"""Unknown fields, as the API server's strict decoding finds them.

The API server decodes a request with `fieldValidation=Strict` (kubectl's default) and rejects
every field its Go type does not declare: ``strict decoding error: unknown field "spec.spec"``.
draopt's pydantic models keep unknown fields (``extra="allow"``) so that fields of newer
Kubernetes versions survive a round trip; this module finds them, so that misspelled or
misplaced fields are reported instead of silently ignored.

A schema is derived from each model: its declared fields (by their JSON names), plus the
fields listed in the model's ``k8s_fields`` class variable - fields Kubernetes declares but
draopt does not read (``metadata.managedFields``, ``spec.volumes`` of a Pod, ...), whose
content is not looked into; ``k8s_field_models`` names the model a field kept as a plain
mapping is checked against.

Schemas are plain data: ``None`` (anything), :class:`Obj` (an object with fixed fields),
:class:`ListOf` and :class:`MapOf` (free keys).
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass
from typing import Any, Union

from pydantic import BaseModel


class Obj(dict):
    """An object schema: JSON field name -> schema of its value."""

    # Remembered answers (class-level defaults; an instance sets its own): nested()'s, dropped
    # when the schema changes, and the compiled check with the _GENERATION it was built at.
    _nested: tuple[tuple[str, Any], ...] | None = None
    _compiled: tuple[int, Any] | None = None

    def nested(self) -> tuple[tuple[str, Any], ...]:
        """(field, schema) of the fields whose values are looked into (remembered until the
        schema changes)."""
        found = self._nested
        if found is None:
            found = self._nested = tuple((k, s) for k, s in self.items() if _looks_into(s))
        return found

    def compiled(self) -> Any:
        """The compiled check of this schema (see _compile), built again after any Obj changed."""
        found = self._compiled
        if found is None or found[0] != _GENERATION:
            found = self._compiled = (_GENERATION, _compile(self, {}))
        return found[1]

    def _changed(self) -> None:
        global _GENERATION
        _GENERATION += 1  # every compiled check (see compiled) is built again
        self._nested = None

    def __setitem__(self, key, value):
        self._changed()
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self._changed()
        super().__delitem__(key)

    def pop(self, *args):
        self._changed()
        return super().pop(*args)

    def setdefault(self, key, default=None):
        self._changed()
        return super().setdefault(key, default)

    def update(self, *args, **kwargs):
        self._changed()
        super().update(*args, **kwargs)

    def clear(self):
        self._changed()
        super().clear()

    def popitem(self):
        self._changed()
        return super().popitem()


_GENERATION = 0  # changes of any Obj so far


@dataclass(frozen=True)
class ListOf:
    item: Any


@dataclass(frozen=True)
class MapOf:
    value: Any


_CACHE: dict[type, Obj] = {}


def _schema_of_type(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _schema_of_type(typing.get_args(tp)[0])
    if origin in (Union, types.UnionType):
        alternatives = [a for a in typing.get_args(tp) if a is not type(None)]
        # Optional[X] is X; a union of several shapes is not looked into.
        return _schema_of_type(alternatives[0]) if len(alternatives) == 1 else None
    if origin in (list, tuple, set, frozenset):
        args = typing.get_args(tp)
        return ListOf(_schema_of_type(args[0])) if args else None
    if origin is dict:
        args = typing.get_args(tp)
        return MapOf(_schema_of_type(args[1])) if len(args) == 2 else None
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return model_schema(tp)
    return None


def model_schema(model: type[BaseModel]) -> Obj:
    """The object schema of a pydantic model (cached)."""
    cached = _CACHE.get(model)
    if cached is not None:
        return cached
    schema = Obj()
    _CACHE[model] = schema  # recursive models refer to the same (filled-in) object
    for name, info in model.model_fields.items():
        schema[info.alias or name] = _schema_of_type(info.annotation)
    for extra in getattr(model, "k8s_fields", ()):
        schema.setdefault(extra, None)
    for alias, typed in getattr(model, "k8s_field_models", {}).items():
        schema[alias] = model_schema(typed)  # a field read as a plain mapping, checked as this model
    return schema


def copy_schema(schema: Any) -> Any:
    """A deep copy that can be changed without touching the cached model schemas."""
    if isinstance(schema, Obj):
        return Obj({k: copy_schema(v) for k, v in schema.items()})
    if isinstance(schema, ListOf):
        return ListOf(copy_schema(schema.item))
    if isinstance(schema, MapOf):
        return MapOf(copy_schema(schema.value))
    return schema


def _key(k: Any) -> str:
    return k if isinstance(k, str) else json.dumps(k, default=str)


def unknown_fields(data: Any, schema: Any, path: str = "") -> list[str]:
    """Paths of the fields of `data` that `schema` does not declare, in document order, as
    the API server prints them (`spec.devices.requests[0].exactly.foo`). Values of a wrong
    JSON type are not looked into (the model or the validator reports them)."""
    if isinstance(schema, Obj) and schema.compiled()(data):
        return []  # the usual case: nothing unknown (one pass that builds no paths)
    out: list[str] = []
    _walk(data, schema, (path,) if path else None, out)
    return out


# ------------------------------------------------------------------ the compiled check
# A schema compiled into closures that only say whether `data` has no unknown field at all, with
# the same rule as _walk (values of a wrong JSON type are not looked into). When one says False
# (or cannot tell), _walk finds the fields, in order, with their paths. Containers of objects
# whose fields have no schema of their own (a device's attributes, a pod's tolerations) are
# checked by one `frozenset.issuperset` per item, mapped in C.
def _compile(schema: Any, memo: dict[int, Any]) -> Any:
    """A function data -> bool (True: nothing unknown), or None when nothing is looked into."""
    if not _looks_into(schema):
        return None
    if id(schema) in memo:  # a recursive schema: called through its cell once it is built
        cell = memo[id(schema)]
        return lambda data: cell[0](data)
    cell = memo[id(schema)] = [None]
    if isinstance(schema, Obj):
        fn = _compile_obj(schema, memo)
    elif isinstance(schema, ListOf):
        fn = _compile_items(schema.item, list, list.__iter__, memo)
    else:
        fn = _compile_items(schema.value, dict, dict.values, memo)
    cell[0] = fn
    return fn


def _leaf_keys(schema: Any) -> frozenset | None:
    """The fields of an object schema none of whose fields is looked into."""
    if isinstance(schema, Obj) and not any(_looks_into(s) for s in schema.values()):
        return frozenset(schema)
    return None


def _compile_obj(schema: Obj, memo: dict[int, Any]) -> Any:
    keys = frozenset(schema)
    nested = tuple((k, f) for k, s in schema.items() if (f := _compile(s, memo)) is not None)

    def check(data: Any) -> bool:
        if not isinstance(data, dict):
            return True
        if not keys.issuperset(data):
            return False
        for k, f in nested:
            if k in data and not f(data[k]):
                return False
        return True

    return check


def _compile_items(item: Any, container: type, values: Any, memo: dict[int, Any]) -> Any:
    keys = _leaf_keys(item)
    if keys is not None:
        superset = keys.issuperset

        def check_leaves(data: Any) -> bool:
            if not isinstance(data, container):
                return True
            try:  # (a string item iterates its characters: True or a recheck, both right)
                return all(map(superset, values(data)))
            except TypeError:  # an item that is not a mapping (a number, null, a list of mappings)
                return all(not isinstance(v, dict) or superset(v) for v in values(data))

        return check_leaves
    f = _compile(item, memo)

    def check(data: Any) -> bool:
        return not isinstance(data, container) or all(map(f, values(data)))

    return check


# A path is built only for an unknown field: while walking it is a chain of (parent, step)
# pairs, a step being ".key" or "[i]" text, or a key or index still to be formatted.
def _path_text(chain: Any) -> str:
    steps: list[str] = []
    while chain is not None:
        if len(chain) == 1:
            steps.append(chain[0])
            break
        chain, step = chain
        steps.append(step)
    text = ""
    for step in reversed(steps):
        if isinstance(step, _MapKey):
            text += f"[{_key(step.value)}]"
        elif isinstance(step, _Index):
            text += f"[{step.value}]"
        else:
            text += f".{_key(step)}" if text else _key(step)
    return text


class _Index:
    __slots__ = ("value",)

    def __init__(self, value: int):
        self.value = value


class _MapKey(_Index):
    __slots__ = ()


def _looks_into(schema: Any) -> bool:
    return not (
        schema is None
        or isinstance(schema, (ListOf, MapOf))
        and (schema.item if isinstance(schema, ListOf) else schema.value) is None
    )


def _walk(data: Any, schema: Any, chain: Any, out: list[str]) -> None:
    # Called for every field with a schema of its own: the time of reading a large dump is
    # spent here. Usually every field is declared (one set comparison says so) and only the
    # fields with a schema of their own are descended into; unknown fields are reported in
    # document order (several found below an object: it is walked again in that order).
    if isinstance(schema, Obj):
        if not isinstance(data, dict):
            return
        if data.keys() <= schema.keys():
            found = len(out)
            for k, sub in schema.nested():
                if k in data:
                    _walk(data[k], sub, (chain, k), out)
            if len(out) - found <= 1:
                return
            del out[found:]
        _walk_in_order(data, schema, chain, out)
    elif isinstance(schema, ListOf):
        item = schema.item
        if item is not None and isinstance(data, list):
            for i, v in enumerate(data):
                _walk(v, item, (chain, _Index(i)), out)
    elif isinstance(schema, MapOf):
        value = schema.value
        if value is not None and isinstance(data, dict):
            for k, v in data.items():
                _walk(v, value, (chain, _MapKey(k)), out)


def _walk_in_order(data: dict, schema: Obj, chain: Any, out: list[str]) -> None:
    for k, v in data.items():
        try:
            sub = schema[k]
        except (KeyError, TypeError):
            out.append(_path_text((chain, k)))
            continue
        if sub is not None:
            _walk(v, sub, (chain, k), out)


def describe(paths: list[str], limit: int = 10) -> str:
    """`unknown field "a", unknown field "b"`, as strict decoding joins them."""
    shown = ", ".join(f'unknown field "{p}"' for p in paths[:limit])
    if len(paths) > limit:
        shown += f", and {len(paths) - limit} more"
    return shown


__all__ = ["ListOf", "MapOf", "Obj", "copy_schema", "describe", "model_schema", "unknown_fields"]
