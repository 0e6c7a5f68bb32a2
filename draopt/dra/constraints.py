"""matchAttribute / distinctAttribute over attribute values, shared by every solver.

Values are normalised to (type, frozenset) so that scalars are one-element sets and list-type
attributes (`bools`, `ints`, `strings`, `versions`) are sets: match = common element,
distinct = disjoint. `None` means the attribute has no usable value.
"""

from __future__ import annotations

from typing import Any

from draopt.kube.models import DeviceAttribute
from draopt.dra.rules import lookup_attribute

SCALAR_OF = {"bools": "bool", "ints": "int", "strings": "string", "versions": "version"}
AttrValue = tuple[str, frozenset]


def normalise(attr: Any, list_types: bool) -> AttrValue | None:
    """A DeviceAttribute (or derived value) as (scalar type, set of values); None if unknown."""
    if attr is None:
        return None
    if isinstance(attr, DeviceAttribute):
        # (identical attribute values are one object, read once: draopt.kube.shared_attributes)
        key = (id(attr), list_types)
        got = _NORMALISED.get(key)
        if got is not None and got[0] is attr:
            return got[1]
        value = _normalise_typed(attr.typed(), list_types)
        if len(_NORMALISED) < 65536:
            _NORMALISED[key] = (attr, value)
        return value
    return _normalise_typed(_derived_typed(attr), list_types)


_NORMALISED: dict[tuple[int, bool], tuple[DeviceAttribute, AttrValue | None]] = {}


def _normalise_typed(typed: tuple[str, Any] | None, list_types: bool) -> AttrValue | None:
    if typed is None:
        return None
    kind, value = typed
    if kind in SCALAR_OF:
        if not list_types or not value:
            return None  # the incubating allocator knows no list types; an empty list matches nothing
        return SCALAR_OF[kind], frozenset(value)
    return kind, frozenset([value])


def _derived_typed(value: Any) -> tuple[str, Any] | None:
    import semver

    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, int):
        return "int", value
    if isinstance(value, str):
        return "string", value
    if isinstance(value, semver.Version):
        return "version", str(value)
    if isinstance(value, (list, tuple)) and value:
        first = _derived_typed(value[0])
        if first is None:
            return None
        plural = {v: k for k, v in SCALAR_OF.items()}[first[0]]
        return plural, [(_derived_typed(v) or (None, None))[1] for v in value]
    return None


def device_attribute(attributes: dict[str, Any], driver: str, name: str) -> Any:
    return lookup_attribute(attributes, driver, name)


def values_match(a: AttrValue, b: AttrValue) -> bool:
    return a[0] == b[0] and bool(a[1] & b[1])


def values_distinct(a: AttrValue, b: AttrValue) -> bool:
    """Kubernetes: values of different types never clash."""
    return a[0] != b[0] or not (a[1] & b[1])


def constraint_applies(request_names: list[str], request_name: str, sub_name: str) -> bool:
    if not request_names:
        return True
    return request_name in request_names or (bool(sub_name) and f"{request_name}/{sub_name}" in request_names)
