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
    _CACHE[model] = schema          # recursive models refer to the same (filled-in) object
    for name, info in model.model_fields.items():
        schema[info.alias or name] = _schema_of_type(info.annotation)
    for extra in getattr(model, "k8s_fields", ()):
        schema.setdefault(extra, None)
    for alias, typed in getattr(model, "k8s_field_models", {}).items():
        schema[alias] = model_schema(typed)      # a field read as a plain mapping, checked as this model
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
    out: list[str] = []
    _walk(data, schema, path, out)
    return out


def _walk(data: Any, schema: Any, path: str, out: list[str]) -> None:
    if schema is None:
        return
    if isinstance(schema, Obj):
        if not isinstance(data, dict):
            return
        for k, v in data.items():
            p = f"{path}.{_key(k)}" if path else _key(k)
            if k not in schema:
                out.append(p)
            else:
                _walk(v, schema[k], p, out)
    elif isinstance(schema, ListOf):
        if isinstance(data, list):
            for i, v in enumerate(data):
                _walk(v, schema.item, f"{path}[{i}]", out)
    elif isinstance(schema, MapOf):
        if isinstance(data, dict):
            for k, v in data.items():
                _walk(v, schema.value, f"{path}[{_key(k)}]", out)


def describe(paths: list[str], limit: int = 10) -> str:
    """`unknown field "a", unknown field "b"`, as strict decoding joins them."""
    shown = ", ".join(f'unknown field "{p}"' for p in paths[:limit])
    if len(paths) > limit:
        shown += f", and {len(paths) - limit} more"
    return shown


__all__ = ["ListOf", "MapOf", "Obj", "copy_schema", "describe", "model_schema", "unknown_fields"]
