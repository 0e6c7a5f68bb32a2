"""The per-object collector every rule reports through, and its common field checks.

CEL-free (objects layer): expression fields are compiled by the ExpressionCheck given to the
collector (draopt.validation.expressions, which imports draopt.cel).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Protocol

from draopt.kube.features import Features
from draopt.validation.findings import Finding, Note, Report
from draopt.validation.limits import (
    CEL_MAX_LENGTH,
    DEVICE_MAX_ID_LENGTH,
    DRIVER_NAME_MAX,
    MAX_SELECTORS,
    OPAQUE_PARAMETERS_MAX,
    POOL_NAME_MAX,
)
from draopt.kube.names import is_c_identifier, is_dns1123_subdomain, is_label_value, is_qualified_label_name


class ExpressionCheck(Protocol):
    def check(self, ctx: "_Ctx", expr: str, path: str, selector: bool) -> None:
        """Report (through ctx) what the API server says of the CEL expression at path."""


class _Ctx:
    """Per-object collector."""

    def __init__(self, report: Report, obj: str, source: str, features: Features, expressions: ExpressionCheck):
        self.report, self.obj, self.source = report, obj, source
        self.features, self.expressions = features, expressions

    def err(self, path: str, type_: str, message: str = "", value: Any = None) -> None:
        self.report.findings.append(Finding(self.obj, path, type_, message, value, self.source))

    def invalid(self, path: str, value: Any, message: str) -> None:
        self.err(path, "Invalid value", message, value)

    def required(self, path: str, message: str = "") -> None:
        self.err(path, "Required value", message)

    def forbidden(self, path: str, message: str) -> None:
        self.err(path, "Forbidden", message)

    def too_many(self, path: str, n: int, limit: int) -> None:
        self.err(path, "Too many", f"must have at most {limit} items", n)

    def within(self, items: list, path: str, limit: int) -> bool:
        """True if the list is short enough to be checked item by item; else reports it."""
        if len(items) > limit:
            self.too_many(path, len(items), limit)
            return False
        return True

    def objects(self, items: list, path: str):
        """(path, item) of the list's entries that are objects; the others are reported."""
        for i, item in enumerate(items):
            p = f"{path}[{i}]"
            if not isinstance(item, dict):
                self.invalid(p, item, "must be of type object")
                continue
            yield p, item

    def too_long(self, path: str, limit: int) -> None:
        self.err(path, "Too long", f"may not be more than {limit} bytes")

    def duplicate(self, path: str, value: Any) -> None:
        self.err(path, "Duplicate value", "", value)

    def unsupported(self, path: str, value: Any, supported: Iterable[str]) -> None:
        self.err(path, "Unsupported value", "supported values: " + ", ".join(f'"{s}"' for s in supported), value)

    def note(self, path: str, message: str) -> None:
        self.report.notes.append(Note(self.obj, path, message))

    # --- type-tolerant accessors: a wrong JSON type is itself a finding
    def get(self, d: dict, key: str, path: str, kind: type | tuple, default: Any = None) -> Any:
        if not isinstance(d, dict) or key not in d or d[key] is None:
            return default
        v = d[key]
        ok = isinstance(v, kind) and not (kind in (int, (int,)) and isinstance(v, bool))
        if not ok:
            names = {dict: "object", list: "array", str: "string", int: "integer", bool: "boolean"}
            want = names.get(kind, getattr(kind, "__name__", str(kind))) if isinstance(kind, type) else "value"
            self.invalid(f"{path}.{key}" if path else key, v, f"must be of type {want}")
            return default
        return v

    # --- common validators
    def names(self, s: Any, path: str, check: Callable[[str], list[str]], required: bool = True) -> None:
        if s is None or s == "":
            if required:
                self.required(path)
            return
        if not isinstance(s, str):
            self.invalid(path, s, "must be a string")
            return
        for msg in check(s):
            self.invalid(path, s, msg)

    def _required_string(self, s: Any, path: str) -> bool:
        """A required string field: reports it missing or mistyped; True if it can be checked."""
        if not s:
            self.required(path)
            return False
        if not isinstance(s, str):
            self.invalid(path, s, "must be a string")
            return False
        return True

    def driver_name(self, s: Any, path: str) -> None:
        """ValidateCSIDriverName."""
        if not self._required_string(s, path):
            return
        if len(s) > DRIVER_NAME_MAX:
            self.too_long(path, DRIVER_NAME_MAX)
        for msg in is_dns1123_subdomain(s.lower()):
            self.invalid(path, s, msg)

    def pool_name(self, s: Any, path: str) -> None:
        if not self._required_string(s, path):
            return
        if len(s) > POOL_NAME_MAX:
            self.too_long(path, POOL_NAME_MAX)
        for part in s.split("/"):
            for msg in is_dns1123_subdomain(part):
                self.invalid(path, part, msg)

    def c_identifier(self, s: str, path: str) -> None:
        if len(s) > DEVICE_MAX_ID_LENGTH:
            self.too_long(path, DEVICE_MAX_ID_LENGTH)
        for msg in is_c_identifier(s):
            self.invalid(path, s, msg)

    def qualified_name(self, name: Any, path: str) -> None:
        """validateQualifiedName: C identifier, optionally `domain/` in front."""
        if not isinstance(name, str):
            self.invalid(path, name, "must be a string")
            return
        parts = name.split("/")
        if len(parts) == 1:
            self.c_identifier(parts[0], path)
        elif len(parts) == 2:
            if not parts[0]:
                self.invalid(path, "", "the domain must not be empty")
            else:
                self.driver_name(parts[0], path)
            if not parts[1]:
                self.invalid(path, "", "the name must not be empty")
            else:
                self.c_identifier(parts[1], path)
        else:
            self.invalid(path, name, "must not contain more than one slash")

    def fully_qualified_name(self, name: Any, path: str) -> None:
        self.qualified_name(name, path)
        if isinstance(name, str) and "/" not in name:
            self.invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash")

    def label_name(self, s: Any, path: str) -> None:
        self.names(s, path, is_qualified_label_name)

    def label_value(self, s: Any, path: str) -> None:
        if not isinstance(s, str):
            self.invalid(path, s, "must be a string")
            return
        for msg in is_label_value(s):
            self.invalid(path, s, msg)

    def cel_expression(self, expr: Any, path: str, selector: bool = True) -> None:
        if expr is None or expr == "":
            self.required(path)
            return
        if not isinstance(expr, str):
            self.invalid(path, expr, "must be a string")
            return
        if len(expr) > CEL_MAX_LENGTH:
            self.too_long(path, CEL_MAX_LENGTH)
            return
        self.expressions.check(self, expr, path, selector)

    def selectors(self, sels: Any, path: str) -> None:
        if sels is None:
            return
        if not isinstance(sels, list):
            self.invalid(path, sels, "must be of type array")
            return
        if len(sels) > MAX_SELECTORS:
            self.too_many(path, len(sels), MAX_SELECTORS)
            return
        for i, s in enumerate(sels):
            p = f"{path}[{i}]"
            cel = s.get("cel") if isinstance(s, dict) else None
            if not isinstance(cel, dict):
                self.required(f"{p}.cel")
                continue
            self.cel_expression(cel.get("expression"), f"{p}.cel.expression")

    def opaque(self, cfg: Any, path: str) -> None:
        op = cfg.get("opaque") if isinstance(cfg, dict) else None
        if not isinstance(op, dict):
            self.required(f"{path}.opaque")
            return
        self.driver_name(op.get("driver"), f"{path}.opaque.driver")
        params = op.get("parameters")
        pp = f"{path}.opaque.parameters"
        if params is None:
            self.required(pp)
        elif not isinstance(params, dict):
            self.invalid(pp, "<value omitted>", "must be a valid JSON object")
        elif len(json.dumps(params, separators=(",", ":"))) > OPAQUE_PARAMETERS_MAX:
            self.too_long(pp, OPAQUE_PARAMETERS_MAX)

    def unique_list(self, items: list, path: str, key: Callable[[Any], Any]) -> None:
        seen = set()
        for i, it in enumerate(items):
            k = key(it)
            if k is None:
                continue
            try:
                hash(k)
            except TypeError:
                continue
            if k in seen:
                self.duplicate(f"{path}[{i}]", k)
            seen.add(k)


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list:
    return v if isinstance(v, list) else []


# ------------------------------------------------------------------ feature gates: dropped fields
def _drop(ctx: _Ctx, d: dict, key: str, path: str, gate: str, enabled: bool) -> None:
    if not enabled and isinstance(d, dict) and d.get(key) not in (None, [], {}):
        ctx.note(
            f"{path}.{key}" if path else key,
            f"dropped by the API server: feature gate {gate} is disabled (not validated)",
        )
        d.pop(key)
