"""A device as CEL input: the variables declared for it and their values (make_cel_device)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import semver as _semver

from draopt.kube.quantity import Quantity, QuantityError
from draopt.cel.internal import _EMPTY_ATTRS, _EMPTY_CAP
from draopt.cel.values import _QT, _T, _q_msg, _s_msg


def _base_variables() -> Dict[str, Any]:
    """The environment's variables: the device's fields, declared as qualified names (so that
    ``device.foo`` is a compile error, as on Kubernetes' object type), and the empty maps an
    unknown domain reads (draopt.cel.rewrite)."""
    T = _T
    return {
        "device.driver": T.STRING,
        "device.allowMultipleAllocations": T.BOOL,
        "device.attributes": T.Map(T.STRING, T.Map(T.STRING, T.DYN)),
        "device.capacity": T.Map(T.STRING, T.Map(T.STRING, _QT)),
        _EMPTY_ATTRS: T.Map(T.STRING, T.DYN),
        _EMPTY_CAP: T.Map(T.STRING, _QT),
    }


class CelDevice:
    """A prepared activation for one device (build once, evaluate many times)."""

    __slots__ = ("driver", "name", "data", "error", "_activations", "matched", "__weakref__")

    def __init__(self, driver: str, name: str, data: Dict[str, Any], error: Optional[str]):
        self.driver = driver
        self.name = name
        self.data = data
        self.error = error
        self._activations: Dict[Any, Any] = {}
        # Selector answers on this device, by compiled expression (one per environment and
        # text): a device's CEL input never changes, so an answer holds for as long as it lives.
        self.matched: Dict[Any, bool] = {}

    def _activation(self, env):
        # env: the CelEnvironment (draopt.cel.core) this activation is for
        act = self._activations.get(env)
        if act is None:
            act = env._env.Activation(self.data)
            self._activations[env] = act
        return act

    def __repr__(self):
        return f"CelDevice(driver={self.driver!r}, name={self.name!r})"


def _split_qualified(name: str, driver: str) -> Tuple[str, str]:
    sep = name.find("/")
    if sep == -1:
        return driver, name
    return name[:sep], name[sep + 1 :]


def _attribute_value(attr: Dict[str, Any], list_types: bool):
    """getAttributeValue: list types first (only when enabled), then scalars."""
    if not isinstance(attr, dict):
        raise ValueError("unsupported attribute value")
    if list_types:
        if attr.get("ints") is not None:
            return [int(x) for x in attr["ints"]]
        if attr.get("bools") is not None:
            return [bool(x) for x in attr["bools"]]
        if attr.get("strings") is not None:
            return [str(x) for x in attr["strings"]]
        if attr.get("versions") is not None:
            try:
                return [_s_msg(_semver.Version.parse(v)) for v in attr["versions"]]
            except (ValueError, TypeError) as e:
                raise ValueError(f"parse semantic version: {e}") from None
    if attr.get("int") is not None:
        v = attr["int"]
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"invalid int value {v!r}")
        return v
    if attr.get("bool") is not None:
        return bool(attr["bool"])
    if attr.get("string") is not None:
        return str(attr["string"])
    if attr.get("version") is not None:
        return _s_msg(_parsed_version(attr["version"]))
    raise ValueError("unsupported attribute value")


# version text -> semver.Version: devices of one driver carry a few versions, each parsed once (a
# parse was most of converting a device with a version attribute); a Version is not changed in place
_PARSED_VERSIONS: Dict[Any, _semver.Version] = {}


def _parsed_version(text: Any) -> _semver.Version:
    got = _PARSED_VERSIONS.get(text) if type(text) is str else None
    if got is None:
        try:
            got = _semver.Version.parse(text)
        except (ValueError, TypeError) as e:
            raise ValueError(f"parse semantic version: {e}") from None
        if type(text) is str and len(_PARSED_VERSIONS) < 4096:
            _PARSED_VERSIONS[text] = got
    return got


def _list_only(attr: Any) -> bool:
    """An attribute whose only value is a list one (bools, ints, strings, versions)."""
    return (
        isinstance(attr, dict)
        and any(attr.get(k) is not None for k in ("bools", "ints", "strings", "versions"))
        and not any(attr.get(k) is not None for k in ("bool", "int", "string", "version"))
    )


_LIST_KEYS = frozenset(("bools", "ints", "strings", "versions"))


def _single_value(key: str, v: Any, list_type_attributes: bool):
    """The CEL value of an attribute with exactly one field set (the usual shape), as
    _attribute_value would give it; _SKIP for a list value while list types are off."""
    if key == "string":
        return str(v)
    if key == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"invalid int value {v!r}")
        return v
    if key == "bool":
        return bool(v)
    if key in _LIST_KEYS and not list_type_attributes:
        return _SKIP
    return _attribute_value({key: v}, True)


_SKIP = object()


def make_cel_device(driver: str, device: dict, *, list_type_attributes: bool = False) -> CelDevice:
    """Prepare the CEL input for one ResourceSlice device (plain Kubernetes JSON).

    Problems Kubernetes reports when *evaluating* (an attribute without a
    supported value, an unparsable version or quantity) are stored and raised
    as :class:`CelRuntimeError` by every evaluation on this device.
    """
    error = None
    attributes: Dict[str, Dict[str, Any]] = {}
    for name, attr in (device.get("attributes") or {}).items():
        try:
            if type(attr) is dict and len(attr) == 1:
                for key, v in attr.items():
                    value = (
                        _single_value(key, v, list_type_attributes) if v is not None else _attribute_value(attr, True)
                    )
                if value is _SKIP:
                    continue
            else:
                if not list_type_attributes and _list_only(attr):
                    # With DRAListTypeAttributes off the API server drops list values on write: the
                    # attribute is not there (as for matchAttribute; draopt.kube.workload notes it once).
                    continue
                value = _attribute_value(attr, True)
        except ValueError as e:
            error = error or f"attribute {name}: {e}"
            continue
        sep = name.find("/")
        if sep == -1:
            domain, ident = driver, name
        else:
            domain, ident = name[:sep], name[sep + 1 :]
        got = attributes.get(domain)
        if got is None:
            got = attributes[domain] = {}
        got[ident] = value
    capacity: Dict[str, Dict[str, Any]] = {}
    for name, cap in (device.get("capacity") or {}).items():
        try:
            raw = cap.get("value") if isinstance(cap, dict) else cap
            q = Quantity.parse(raw)
        except (QuantityError, AttributeError) as e:
            error = error or f"capacity {name}: {e}"
            continue
        domain, ident = _split_qualified(name, driver)
        capacity.setdefault(domain, {})[ident] = _q_msg(q)
    data = {
        "device.driver": driver,
        "device.allowMultipleAllocations": bool(device.get("allowMultipleAllocations") or False),
        "device.attributes": attributes,
        "device.capacity": capacity,
        _EMPTY_ATTRS: {},
        _EMPTY_CAP: {},
    }
    return CelDevice(driver, device.get("name", ""), data, error)


_GOOD_QUANTITIES: set = set()
# per list-types setting: id(attribute) -> (the attribute, whether it converts)
_CLEAN_ATTRIBUTES: tuple[dict, dict] = ({}, {})


def _attribute_converts(a, list_type_attributes: bool) -> bool:
    """One attribute's part of converts_cleanly."""
    given = a.__pydantic_fields_set__
    if len(given) == 1:
        # One field given (the others are at their default, None): no scan of every field.
        (f,) = given
        v = a.__dict__.get(f)
        if v is None:
            return False
    else:
        set_fields = [(f, v) for f, v in a.__dict__.items() if v is not None]
        if len(set_fields) != 1:
            return False
        f, v = set_fields[0]
    if f == "string" or f == "bool_":
        return True
    if f == "int_":
        return type(v) is int
    if f == "version":
        return _version_parses(v)
    if f in _LIST_KEYS:
        # left out of the input while list types are off, as make_cel_device leaves it
        return not list_type_attributes or _list_converts(f, v)
    return False


def _list_converts(f: str, values: Any) -> bool:
    """A list attribute converts (list types on): bool() and str() of any value do, int() of an
    int, and each version must parse."""
    if type(values) is not list:
        return False
    if f == "ints":
        return all(type(x) is int for x in values)
    if f == "versions":
        return all(type(x) is str and _version_parses(x) for x in values)
    return True


# The semver library's own syntax (what Version.parse matches before it builds a Version, and
# all it checks of a string); None if a release of the library has it elsewhere: then it parses
_SEMVER_SYNTAX = getattr(_semver.Version, "_REGEX", None)


def _version_parses(text: str) -> bool:
    """semver.Version.parse(text) succeeds (a device's versions are checked for every device
    gathered, and building a Version took most of that)."""
    if type(text) is str and text in _GOOD_VERSIONS:
        return True
    if _SEMVER_SYNTAX is not None and type(text) is str:
        ok = _SEMVER_SYNTAX.match(text) is not None
    else:
        try:
            _parsed_version(text)
            ok = True
        except ValueError:
            ok = False
    if ok and type(text) is str and len(_GOOD_VERSIONS) < 4096:
        _GOOD_VERSIONS.add(text)
    return ok


_GOOD_VERSIONS: set = set()  # versions that parse


def converts_cleanly(device, list_type_attributes: bool) -> bool:
    """True when make_cel_device(driver, cel_input(device)) would store no error (a typed
    ResourceSlice device): every attribute has one value of a scalar type that converts (a
    version that parses), or a list value that is left out; every capacity parses. False when
    unsure (the caller then builds the input, which finds the error if there is one)."""
    clean = _CLEAN_ATTRIBUTES[bool(list_type_attributes)]
    for a in device.attributes.values():
        # (identical attribute values are one object, read once: draopt.kube.shared_attributes)
        got = clean.get(id(a))
        if got is None or got[0] is not a:
            ok = _attribute_converts(a, list_type_attributes)
            if len(clean) < 65536:
                clean[id(a)] = (a, ok)
        else:
            ok = got[1]
        if not ok:
            return False
    for c in device.capacity.values():
        raw = c.value
        if raw not in _GOOD_QUANTITIES:
            if not isinstance(raw, str):
                return False
            try:
                Quantity.parse(raw)
            except (QuantityError, AttributeError, ValueError):
                return False
            if len(_GOOD_QUANTITIES) < 4096:
                _GOOD_QUANTITIES.add(raw)
    return True
