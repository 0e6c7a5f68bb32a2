"""`draopt validate`: what a Kubernetes API server would reject, before you apply it.

Mirrors `pkg/apis/resource/validation/validation.go` (kubernetes/kubernetes), the declarative
limits of `resource.k8s.io/v1` and the admin-access namespace check of the ResourceClaim /
ResourceClaimTemplate registry strategy (`AuthorizedForAdmin`). Validation works on the raw
documents, so objects the pydantic models would refuse are still reported field by field, and
kinds the allocator does not read (Namespace, Pod) are accepted.

Fields of disabled feature gates are dropped, as the API server drops them on create: they are
not validated and a note says so.

Messages follow Kubernetes' `field.Error` format: `<path>: <type>: <value>: <detail>`.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from ..cel import CelCompileError, CelEnvironment
from ..convert import ConversionError, schema_for, to_v1
from ..errors import DraoptError
from ..features import DEFAULT_GATES, Features, parse_gates
from ..loader import KINDS, raw_documents
from ..quantity import Quantity, QuantityError
from ..strict import unknown_fields

# ------------------------------------------------------------------ limits (resource.k8s.io/v1)
DRIVER_NAME_MAX = 63
POOL_NAME_MAX = 253
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
ATTRIBUTE_MAX_VALUE_LENGTH = 64
MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
MAX_ATTRIBUTE_VALUES_PER_DEVICE = 48
MAX_DEVICES = 128
MAX_DEVICES_ADVANCED = 64
MAX_COUNTER_SETS = 8
MAX_COUNTERS_PER_SET = 32
MAX_CONSUMPTIONS_PER_DEVICE = 2
MAX_COUNTERS_PER_CONSUMPTION = 32
MAX_TAINTS = 16
MAX_BINDING_CONDITIONS = 4
MAX_REQUESTS = 32
MAX_CONSTRAINTS = 32
MAX_CONFIG = 32
MAX_SELECTORS = 32
MAX_FIRST_AVAILABLE = 8
MAX_TOLERATIONS = 16
MAX_DERIVED_ATTRIBUTES = 32
MAX_COMPATIBILITY_GROUPS = 2
CEL_MAX_LENGTH = 10 * 1024
OPAQUE_PARAMETERS_MAX = 10 * 1024
ADMIN_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")  # sets.List order in messages: sorted
TOLERATION_OPERATORS = ("Equal", "Exists")
ALLOCATION_MODES = ("All", "ExactCount")

# ------------------------------------------------------------------ name formats (apimachinery)
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_C_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$")

_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
              "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
              f"validation is '{_DNS1123_LABEL}')")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                  "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                  f"for validation is '{_DNS1123_SUBDOMAIN}')")
_C_ID_MSG = ("a valid C identifier must start with alphabetic character or '_', followed by a string of "
             "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
             f"validation is '{_C_IDENTIFIER}')")
_QNAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
              "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
              f"validation is '{_QUALIFIED_NAME}')")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
                    f"'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE}')")


def _full(pattern: str, s: str) -> bool:
    return re.fullmatch(pattern, s) is not None


def _length_and_pattern(s: str, limit: int, pattern: str, message: str, what: str = "") -> list[str]:
    """Kubernetes' usual pair of checks: a maximum length, then a pattern."""
    out = []
    if len(s) > limit:
        out.append(f"{what}must be no more than {limit} characters")
    if not _full(pattern, s):
        out.append(message)
    return out


def is_dns1123_label(s: str) -> list[str]:
    return _length_and_pattern(s, 63, _DNS1123_LABEL, _LABEL_MSG)


def is_dns1123_subdomain(s: str) -> list[str]:
    return _length_and_pattern(s, 253, _DNS1123_SUBDOMAIN, _SUBDOMAIN_MSG)


def is_c_identifier(s: str) -> list[str]:
    return [] if _full(_C_IDENTIFIER, s) else [_C_ID_MSG]


def is_qualified_label_name(s: str) -> list[str]:
    """IsQualifiedName (label keys, taint keys)."""
    parts = s.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        errs = is_dns1123_subdomain(prefix)
        if errs:
            return ["prefix part " + e for e in errs]
    else:
        return ["a qualified name " + _QNAME_MSG.replace("name part ", "", 1) +
                " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        return ["name part must be non-empty"]
    return _length_and_pattern(name, 63, _QUALIFIED_NAME, _QNAME_MSG, "name part ")


def is_label_value(s: str) -> list[str]:
    return _length_and_pattern(s, 63, _LABEL_VALUE, _LABEL_VALUE_MSG)


# ------------------------------------------------------------------ findings
@dataclass
class Finding:
    """One reason the API server would reject an object."""
    object: str            # "Kind namespace/name" or "Kind name"
    field: str             # field path, e.g. spec.devices.requests[0].exactly.count
    type: str              # Invalid, Required, Forbidden, Too many, Duplicate value, Unsupported value, Too long
    message: str           # detail
    value: Any = None
    source: str = ""       # file and document

    def __str__(self) -> str:
        return f"{self.object}: {self.error_string()}"

    def error_string(self) -> str:
        """Kubernetes' field.Error.Error()."""
        t = self.type
        if t == "Unknown field":
            return f'unknown field "{self.field}"'
        if t in ("Required value", "Forbidden", "Too long", "Internal error"):
            return f"{self.field}: {t}" + (f": {self.message}" if self.message else "")
        if t == "Too many":
            return f"{self.field}: Too many: {self.value}: {self.message}"
        if t == "Duplicate value":
            return f"{self.field}: Duplicate value: {_show(self.value)}"
        return f"{self.field}: {t}: {_show(self.value)}" + (f": {self.message}" if self.message else "")


def _show(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(v, sort_keys=True, default=str)


@dataclass
class Note:
    object: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.object}: {self.field}: {self.message}"


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    objects: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"valid": not self.findings, "objects": self.objects,
                "errors": [dict(asdict(f), error=f.error_string()) for f in self.findings],
                "notes": [asdict(n) for n in self.notes]}


class _Ctx:
    """Per-object collector."""

    def __init__(self, report: Report, obj: str, source: str, features: Features, cel: CelEnvironment):
        self.report, self.obj, self.source = report, obj, source
        self.features, self.cel = features, cel

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
        try:
            compiled = self.cel.compile(expr, selector=selector)
        except CelCompileError as e:
            self.invalid(path, expr, str(e))
            return
        if compiled.exceeds_estimated_cost_limit():  # the API server's worst-case estimate (see draopt.cel)
            self.forbidden(path, "too complex, exceeds cost limit")
        if not selector:
            t = compiled.output_type.upper()
            if t.startswith("MAP") or t in ("NULL_TYPE", "DOUBLE", "BYTES", "UINT", "DURATION", "TIMESTAMP"):
                allowed = "string, int, bool or semver" + \
                          (", or a list of these" if self.features.list_type_attributes else "")
                self.invalid(path, expr, f"must evaluate to {allowed}, not {compiled.output_type.lower()}")
            elif t.startswith("LIST") and not self.features.list_type_attributes:
                self.invalid(path, expr, "must evaluate to a scalar (string, int, bool or semver); lists "
                                         "need the DRAListTypeAttributes feature gate")

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
        ctx.note(f"{path}.{key}" if path else key,
                 f"dropped by the API server: feature gate {gate} is disabled (not validated)")
        d.pop(key)


# ------------------------------------------------------------------ node selectors (core/v1 validation)
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
NODE_FIELD_SELECTOR_KEYS = ("metadata.name",)


def _node_selector(ctx: _Ctx, sel: Any, path: str, one_term: bool = False) -> None:
    """ValidateNodeSelector (pkg/apis/core/validation), and the DRA rule of exactly one term."""
    if not isinstance(sel, dict):
        ctx.invalid(path, sel, "must be of type object")
        return
    terms = sel.get("nodeSelectorTerms")
    tp = f"{path}.nodeSelectorTerms"
    if terms is not None and not isinstance(terms, list):
        ctx.invalid(tp, terms, "must be of type array")
        return
    if not terms:
        ctx.required(tp, "must have at least one node selector term")
    for i, term in enumerate(terms or []):
        p = f"{tp}[{i}]"
        if not isinstance(term, dict):
            ctx.invalid(p, term, "must be of type object")
            continue
        for key, check in (("matchExpressions", _node_selector_requirement),
                           ("matchFields", _node_field_selector_requirement)):
            reqs = ctx.get(term, key, p, list, [])
            for rp, req in ctx.objects(reqs, f"{p}.{key}"):
                check(ctx, req, rp)
    if one_term and (not isinstance(terms, list) or len(terms) != 1):
        ctx.invalid(tp, terms, "must have exactly one node selector term")


def _node_selector_requirement(ctx: _Ctx, req: dict, p: str) -> None:
    op, values = req.get("operator"), req.get("values") or []
    if op in ("In", "NotIn"):
        if not values:
            ctx.required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'")
    elif op in ("Exists", "DoesNotExist"):
        if values:
            ctx.forbidden(f"{p}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            ctx.required(f"{p}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'")
    else:
        ctx.invalid(f"{p}.operator", op, "not a valid selector operator")
    ctx.label_name(req.get("key"), f"{p}.key")
    if isinstance(values, list):
        for i, v in enumerate(values):
            ctx.label_value(v, f"{p}.values[{i}]")


def _node_field_selector_requirement(ctx: _Ctx, req: dict, p: str) -> None:
    op, values = req.get("operator"), req.get("values") or []
    if op in ("In", "NotIn"):
        if len(values) != 1:
            ctx.required(f"{p}.values", "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                                        "selector")
    else:
        ctx.invalid(f"{p}.operator", op, "not a valid selector operator")
    if req.get("key") not in NODE_FIELD_SELECTOR_KEYS:
        ctx.invalid(f"{p}.key", req.get("key"), "not a valid field selector key")
    elif isinstance(values, list):
        for i, v in enumerate(values):
            ctx.names(v, f"{p}.values[{i}]", is_dns1123_subdomain)


# ------------------------------------------------------------------ quantities (resource.Quantity decoding)
_QUANTITY_PATHS: dict[str, tuple[str, ...]] = {
    "ResourceSlice": (
        "spec.sharedCounters[*].counters{*}.value",
        "spec.devices[*].capacity{*}.value",
        "spec.devices[*].capacity{*}.requestPolicy.default",
        "spec.devices[*].capacity{*}.requestPolicy.validValues[*]",
        "spec.devices[*].capacity{*}.requestPolicy.validRange.min",
        "spec.devices[*].capacity{*}.requestPolicy.validRange.max",
        "spec.devices[*].capacity{*}.requestPolicy.validRange.step",
        "spec.devices[*].consumesCounters[*].counters{*}.value",
    ),
    "ResourceClaim": (
        "spec.devices.requests[*].exactly.capacity.requests{*}",
        "spec.devices.requests[*].firstAvailable[*].capacity.requests{*}",
        "status.allocation.devices.results[*].consumedCapacity{*}",
    ),
    "ResourceClaimTemplate": (
        "spec.spec.devices.requests[*].exactly.capacity.requests{*}",
        "spec.spec.devices.requests[*].firstAvailable[*].capacity.requests{*}",
    ),
    "Node": ("status.capacity{*}", "status.allocatable{*}"),
    "Pod": (
        "spec.containers[*].resources.requests{*}", "spec.containers[*].resources.limits{*}",
        "spec.initContainers[*].resources.requests{*}", "spec.initContainers[*].resources.limits{*}",
        "spec.overhead{*}", "spec.resources.requests{*}", "spec.resources.limits{*}",
    ),
}
_QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def _at(data: Any, pattern: str, path: str = ""):
    """(path, value) of every value at `pattern`: `a.b` fields, `[*]` list items, `{*}` map values."""
    if not pattern:
        yield path, data
        return
    if pattern.startswith("[*]"):
        if isinstance(data, list):
            for i, v in enumerate(data):
                yield from _at(v, pattern[3:].lstrip("."), f"{path}[{i}]")
        return
    if pattern.startswith("{*}"):
        if isinstance(data, dict):
            for k, v in data.items():
                yield from _at(v, pattern[3:].lstrip("."), f"{path}[{k}]")
        return
    head = re.match(r"[A-Za-z]+", pattern).group(0)
    if isinstance(data, dict) and data.get(head) is not None:
        yield from _at(data[head], pattern[len(head):].lstrip("."), f"{path}.{head}" if path else head)


def _quantities(ctx: _Ctx, doc: dict, kind: str) -> None:
    """Every quantity decodes (the API server rejects the whole request otherwise)."""
    for pattern in _QUANTITY_PATHS.get(kind, ()):
        for path, v in _at(doc, pattern):
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                ctx.invalid(path, v, _QUANTITY_MSG)
                continue
            try:
                Quantity.parse(v if isinstance(v, str) else repr(v) if isinstance(v, float) else str(v))
            except QuantityError:
                ctx.invalid(path, v, _QUANTITY_MSG)


# ------------------------------------------------------------------ DeviceClass
def _validate_device_class(ctx: _Ctx, doc: dict) -> None:
    spec = ctx.get(doc, "spec", "", dict, {})
    _drop(ctx, spec, "extendedResourceName", "spec", "DRAExtendedResource", ctx.features.extended_resource)
    ctx.selectors(spec.get("selectors"), "spec.selectors")
    config = ctx.get(spec, "config", "spec", list, [])
    if len(config) > MAX_CONFIG:
        ctx.too_many("spec.config", len(config), MAX_CONFIG)
    else:
        for i, c in enumerate(config):
            ctx.opaque(c, f"spec.config[{i}]")
    ern = spec.get("extendedResourceName")
    if ern is not None and not _is_extended_resource_name(ern):
        ctx.invalid("spec.extendedResourceName", ern, "must be a valid extended resource name")


def _is_extended_resource_name(name: Any) -> bool:
    """v1helper.IsExtendedResourceName: a qualified name outside kubernetes.io/, not requests.*."""
    if not isinstance(name, str) or "/" not in name:
        return False
    if name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return False
    return not is_qualified_label_name("requests." + name)


# ------------------------------------------------------------------ ResourceSlice
_LIST_ATTR_KEYS = ("bools", "ints", "strings", "versions")
_SCALAR_ATTR_KEYS = ("bool", "int", "string", "version")


def _validate_resource_slice(ctx: _Ctx, doc: dict) -> None:
    f = ctx.features
    spec = ctx.get(doc, "spec", "", dict, None)
    if spec is None:
        ctx.required("spec")
        return
    # Fields of disabled gates are dropped first.
    for key in ("sharedCounters", "perDeviceNodeSelection"):
        _drop(ctx, spec, key, "spec", "DRAPartitionableDevices", f.partitionable_devices)
    devices = ctx.get(spec, "devices", "spec", list, None)
    for i, d in enumerate(devices or []):
        if not isinstance(d, dict):
            continue
        p = f"spec.devices[{i}]"
        _drop(ctx, d, "taints", p, "DRADeviceTaints", f.device_taints)
        for key in ("consumesCounters", "nodeName", "nodeSelector", "allNodes"):
            _drop(ctx, d, key, p, "DRAPartitionableDevices", f.partitionable_devices)
        for key in ("bindsToNode", "bindingConditions", "bindingFailureConditions"):
            _drop(ctx, d, key, p, "DRADeviceBindingConditions", f.device_binding_and_status)
        _drop(ctx, d, "allowMultipleAllocations", p, "DRAConsumableCapacity", f.consumable_capacity)
        _drop(ctx, d, "nodeAllocatableResources", p, "DRANodeAllocatableResources", f.node_allocatable_resources)
        if not f.consumable_capacity:
            for name, cap in (d.get("capacity") or {}).items() if isinstance(d.get("capacity"), dict) else []:
                _drop(ctx, cap, "requestPolicy", f"{p}.capacity[{name}]", "DRAConsumableCapacity", False)
        if not f.compatibility_groups:
            for j, cc in enumerate(_list(d.get("consumesCounters"))):
                _drop(ctx, cc, "compatibilityGroups", f"{p}.consumesCounters[{j}]",
                      "DRADeviceCompatibilityGroups", False)
        if not f.list_type_attributes and isinstance(d.get("attributes"), dict):
            for name, attr in d["attributes"].items():
                for key in _LIST_ATTR_KEYS:
                    _drop(ctx, attr, key, f"{p}.attributes[{name}]", "DRAListTypeAttributes", False)

    ctx.driver_name(spec.get("driver"), "spec.driver")
    pool = ctx.get(spec, "pool", "spec", dict, None)
    if pool is None:
        ctx.required("spec.pool")
    else:
        ctx.pool_name(pool.get("name"), "spec.pool.name")
        rsc = pool.get("resourceSliceCount", 0)
        if not isinstance(rsc, int) or isinstance(rsc, bool) or rsc <= 0:
            ctx.invalid("spec.pool.resourceSliceCount", rsc, "must be greater than zero")
        gen = pool.get("generation", 0)
        if not isinstance(gen, int) or isinstance(gen, bool) or gen < 0:
            ctx.invalid("spec.pool.generation", gen, "must be greater than or equal to zero")

    set_fields = []
    if "nodeName" in spec and spec["nodeName"] is not None:
        if spec["nodeName"] != "":
            set_fields.append("`nodeName`")
            ctx.names(spec["nodeName"], "spec.nodeName", is_dns1123_subdomain)
        else:
            ctx.invalid("spec.nodeName", "", "must be either unset or set to a non-empty string")
    if spec.get("nodeSelector") is not None:
        set_fields.append("`nodeSelector`")
        _node_selector(ctx, spec["nodeSelector"], "spec.nodeSelector", one_term=True)
    for key in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(key) is not None:
            if spec[key] is True:
                set_fields.append(f"`{key}`")
            else:
                ctx.invalid(f"spec.{key}", spec[key], "must be either unset or set to true")
    if not set_fields:
        ctx.required("spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
                             "is required")
    elif len(set_fields) > 1:
        ctx.invalid("spec", "{" + ", ".join(set_fields) + "}",
                    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
                    "required, but multiple fields are set")

    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        ctx.invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed")

    devices = devices or []
    advanced = any(isinstance(d, dict) and (d.get("taints") or d.get("consumesCounters") or
                                            any(isinstance(a, dict) and any(a.get(k) is not None
                                                                            for k in _LIST_ATTR_KEYS)
                                                for a in _dict(d.get("attributes")).values()))
                   for d in devices)
    limit = MAX_DEVICES_ADVANCED if advanced else MAX_DEVICES
    if len(devices) > limit:
        ctx.too_many("spec.devices", len(devices), limit)
        if advanced and len(devices) <= MAX_DEVICES:
            ctx.note("spec.devices", f"the limit is {MAX_DEVICES_ADVANCED} (not {MAX_DEVICES}) because a device "
                                     "uses taints, consumesCounters or list-type attributes")
    else:
        per_device = spec.get("perDeviceNodeSelection") is True
        for i, d in enumerate(devices):
            _validate_device(ctx, d, f"spec.devices[{i}]", per_device)
        ctx.unique_list(devices, "spec.devices", lambda d: d.get("name") if isinstance(d, dict) else None)

    counters = ctx.get(spec, "sharedCounters", "spec", list, [])
    if ctx.within(counters, "spec.sharedCounters", MAX_COUNTER_SETS):
        for p, cs in ctx.objects(counters, "spec.sharedCounters"):
            ctx.names(cs.get("name"), f"{p}.name", is_dns1123_label)
            _counters(ctx, cs.get("counters"), f"{p}.counters", MAX_COUNTERS_PER_SET)
        ctx.unique_list(counters, "spec.sharedCounters", lambda c: c.get("name") if isinstance(c, dict) else None)


def _counters(ctx: _Ctx, counters: Any, path: str, limit: int) -> None:
    if not counters:
        ctx.required(path)
        return
    if not isinstance(counters, dict):
        ctx.invalid(path, counters, "must be of type object")
        return
    if len(counters) > limit:
        ctx.too_many(path, len(counters), limit)
        return
    for name, c in counters.items():
        ctx.names(name, path, is_dns1123_label)
        if not isinstance(c, dict) or c.get("value") is None:
            ctx.required(f"{path}[{name}].value")


def _attribute_values(d: dict) -> int:
    n = 0
    for attr in _dict(d.get("attributes")).values():
        if not isinstance(attr, dict):
            n += 1
            continue
        lists = sum(len(attr.get(k) or []) for k in _LIST_ATTR_KEYS if isinstance(attr.get(k), list))
        n += lists if lists else 1
    return n


def _validate_device(ctx: _Ctx, d: Any, p: str, per_device: bool) -> None:
    if not isinstance(d, dict):
        ctx.invalid(p, d, "must be of type object")
        return
    ctx.names(d.get("name"), f"{p}.name", is_dns1123_label)
    attrs = ctx.get(d, "attributes", p, dict, {})
    caps = ctx.get(d, "capacity", p, dict, {})
    if len(attrs) + len(caps) > MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
        ctx.invalid(p, len(attrs) + len(caps), "the total number of attributes and capacities must not exceed "
                                              f"{MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}")
    nvalues = _attribute_values(d)
    if nvalues > MAX_ATTRIBUTE_VALUES_PER_DEVICE:
        ctx.invalid(p, nvalues, f"the total number of attribute values must not exceed "
                                f"{MAX_ATTRIBUTE_VALUES_PER_DEVICE}")
    for name, attr in attrs.items():
        ctx.qualified_name(name, f"{p}.attributes")
        _validate_attribute(ctx, attr, f"{p}.attributes[{name}]")
    multi = d.get("allowMultipleAllocations") is True
    for name, cap in caps.items():
        ctx.qualified_name(name, f"{p}.capacity")
        cp = f"{p}.capacity[{name}]"
        if not isinstance(cap, dict):
            ctx.invalid(cp, cap, "must be of type object (`{value: ...}`)")
            continue
        if cap.get("value") is None:
            ctx.required(f"{cp}.value")
            continue
        if cap.get("requestPolicy") is not None and not multi:
            ctx.forbidden(f"{cp}.requestPolicy", "allowMultipleAllocations must be true")
        elif isinstance(cap.get("requestPolicy"), dict):
            rp = cap["requestPolicy"]
            if rp.get("validValues") and rp.get("validRange") is not None:
                ctx.forbidden(f"{cp}.requestPolicy", 'exactly one policy can be specified, cannot specify '
                                                     '"validValues" and "validRange" at the same time')
            elif (rp.get("validValues") or rp.get("validRange") is not None) and rp.get("default") is None:
                which = "validValues" if rp.get("validValues") else "validRange"
                ctx.required(f"{cp}.requestPolicy.default", f"required when {which} is defined")
            elif isinstance(rp.get("validRange"), dict) and rp["validRange"].get("min") is None:
                ctx.required(f"{cp}.requestPolicy.validRange.min", "required when validRange is defined")

    taints = ctx.get(d, "taints", p, list, [])
    if len(taints) > MAX_TAINTS:
        ctx.too_many(f"{p}.taints", len(taints), MAX_TAINTS)
    else:
        for i, t in enumerate(taints):
            _validate_taint(ctx, t, f"{p}.taints[{i}]")

    cc = ctx.get(d, "consumesCounters", p, list, [])
    if ctx.within(cc, f"{p}.consumesCounters", MAX_CONSUMPTIONS_PER_DEVICE):
        for cp, c in ctx.objects(cc, f"{p}.consumesCounters"):
            ctx.names(c.get("counterSet"), f"{cp}.counterSet", is_dns1123_label)
            _counters(ctx, c.get("counters"), f"{cp}.counters", MAX_COUNTERS_PER_CONSUMPTION)
            groups = c.get("compatibilityGroups")
            if isinstance(groups, list) and len(groups) > MAX_COMPATIBILITY_GROUPS:
                ctx.too_many(f"{cp}.compatibilityGroups", len(groups), MAX_COMPATIBILITY_GROUPS)
        ctx.unique_list(cc, f"{p}.consumesCounters", lambda c: c.get("counterSet") if isinstance(c, dict) else None)

    node_keys = [k for k in ("nodeName", "nodeSelector", "allNodes") if d.get(k) is not None]
    if per_device:
        set_fields = []
        if d.get("nodeName") is not None:
            if d["nodeName"]:
                set_fields.append("`nodeName`")
                ctx.names(d["nodeName"], f"{p}.nodeName", is_dns1123_subdomain)
            else:
                ctx.invalid(f"{p}.nodeName", "", "must not be empty")
        if d.get("nodeSelector") is not None:
            set_fields.append("`nodeSelector`")
            _node_selector(ctx, d["nodeSelector"], f"{p}.nodeSelector", one_term=True)
        if d.get("allNodes") is not None:
            if d["allNodes"] is True:
                set_fields.append("`allNodes`")
            else:
                ctx.invalid(f"{p}.allNodes", d["allNodes"], "must be either unset or set to true")
        msg = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
               "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")
        if not set_fields:
            ctx.required(p, msg)
        elif len(set_fields) > 1:
            ctx.invalid(p, "{" + ", ".join(set_fields) + "}", msg)
    elif node_keys:
        ctx.invalid(p, None, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                             "`perDeviceNodeSelection` is set to true in the ResourceSlice spec")

    _binding_conditions(ctx, d, p)


def _binding_conditions(ctx: _Ctx, d: dict, p: str) -> None:
    bc = ctx.get(d, "bindingConditions", p, list, [])
    bfc = ctx.get(d, "bindingFailureConditions", p, list, [])
    for key, items in (("bindingConditions", bc), ("bindingFailureConditions", bfc)):
        if len(items) > MAX_BINDING_CONDITIONS:
            ctx.too_many(f"{p}.{key}", len(items), MAX_BINDING_CONDITIONS)
        else:
            for i, c in enumerate(items):
                ctx.label_name(c, f"{p}.{key}[{i}]")
        ctx.unique_list(items, f"{p}.{key}", lambda c: c)
    for i, c in enumerate(bfc):
        if c in bc:
            ctx.invalid(f"{p}.bindingFailureConditions[{i}]", c,
                        "bindingFailureConditions must not overlap with bindingConditions")
    if not bc and bfc:
        ctx.invalid(f"{p}.bindingConditions", bc, "bindingConditions are required to use bindingFailureConditions")
    if not bfc and bc:
        ctx.invalid(f"{p}.bindingFailureConditions", bfc,
                    "bindingFailureConditions are required to use bindingConditions")


def _validate_attribute(ctx: _Ctx, attr: Any, p: str) -> None:
    if not isinstance(attr, dict):
        ctx.invalid(p, attr, "must be of type object")
        return
    n = 0
    for key in _SCALAR_ATTR_KEYS + _LIST_ATTR_KEYS:
        v = attr.get(key)
        if v is None:
            continue
        n += 1
        if key in ("string", "version"):
            if not isinstance(v, str):
                ctx.invalid(f"{p}.{key}", v, "must be of type string")
                continue
            if key == "version" and not _SEMVER.match(v):
                ctx.invalid(f"{p}.version", v, "must be a string compatible with semver.org spec 2.0.0")
            if len(v) > ATTRIBUTE_MAX_VALUE_LENGTH:
                ctx.too_long(f"{p}.{key}", ATTRIBUTE_MAX_VALUE_LENGTH)
        elif key == "int" and (not isinstance(v, int) or isinstance(v, bool)):
            ctx.invalid(f"{p}.int", v, "must be of type integer")
        elif key == "bool" and not isinstance(v, bool):
            ctx.invalid(f"{p}.bool", v, "must be of type boolean")
        elif key in _LIST_ATTR_KEYS:
            if not isinstance(v, list):
                ctx.invalid(f"{p}.{key}", v, "must be of type array")
                continue
            if not v:
                ctx.invalid(f"{p}.{key}", v, "must not be empty if specified")
            for i, item in enumerate(v):
                ip = f"{p}.{key}[{i}]"
                if key in ("strings", "versions"):
                    if not isinstance(item, str):
                        ctx.invalid(ip, item, "must be of type string")
                        continue
                    if key == "versions" and not _SEMVER.match(item):
                        ctx.invalid(ip, item, "must be a string compatible with semver.org spec 2.0.0")
                    if len(item) > ATTRIBUTE_MAX_VALUE_LENGTH:
                        ctx.too_long(ip, ATTRIBUTE_MAX_VALUE_LENGTH)
    if n == 0:
        ctx.invalid(p, "", "exactly one value must be specified")
    elif n > 1:
        ctx.invalid(p, attr, "exactly one value must be specified")


def _validate_taint(ctx: _Ctx, t: Any, p: str) -> None:
    if not isinstance(t, dict):
        ctx.invalid(p, t, "must be of type object")
        return
    ctx.label_name(t.get("key"), f"{p}.key")
    if t.get("value"):
        ctx.label_value(t["value"], f"{p}.value")
    effect = t.get("effect")
    if not effect:
        ctx.required(f"{p}.effect")
    elif effect not in TAINT_EFFECTS:
        ctx.unsupported(f"{p}.effect", effect, sorted(TAINT_EFFECTS))


# ------------------------------------------------------------------ ResourceClaim(Template)
def _constraint_attributes(constraints: list) -> dict[str, set[str]]:
    attrs: dict[str, set[str]] = {}
    for c in constraints:
        if not isinstance(c, dict):
            continue
        name = c.get("matchAttribute") or c.get("distinctAttribute")
        if not isinstance(name, str):
            continue
        reqs = _list(c.get("requests"))
        for r in (reqs if reqs else [""]):
            if isinstance(r, str):
                attrs.setdefault(r, set()).add(name)
    return attrs


def _attr_used(name: str, req: str, attrs: dict[str, set[str]]) -> bool:
    if name in attrs.get("", set()) or name in attrs.get(req, set()):
        return True
    parent, sep, _ = req.partition("/")
    return bool(sep) and name in attrs.get(parent, set())


def _validate_claim_spec(ctx: _Ctx, spec: Any, base: str, namespace: str, namespaces: dict[str, dict]) -> None:
    f = ctx.features
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        ctx.invalid(base, spec, "must be of type object")
        return
    devices = ctx.get(spec, "devices", base, dict, {})
    dp = f"{base}.devices"
    requests = ctx.get(devices, "requests", dp, list, [])
    constraints = ctx.get(devices, "constraints", dp, list, [])
    config = ctx.get(devices, "config", dp, list, [])

    # Drop disabled fields (on create).
    for i, r in enumerate(requests):
        if not isinstance(r, dict):
            continue
        rp = f"{dp}.requests[{i}]"
        _drop(ctx, r, "firstAvailable", rp, "DRAPrioritizedList", f.prioritized_list)
        subs = [(r.get("exactly"), f"{rp}.exactly")] if isinstance(r.get("exactly"), dict) else []
        subs += [(s, f"{rp}.firstAvailable[{j}]") for j, s in enumerate(_list(r.get("firstAvailable")))
                 if isinstance(s, dict)]
        if isinstance(r.get("exactly"), dict):
            _drop(ctx, r["exactly"], "adminAccess", f"{rp}.exactly", "DRAAdminAccess", f.admin_access)
        for s, sp in subs:
            _drop(ctx, s, "tolerations", sp, "DRADeviceTaints", f.device_taints)
            _drop(ctx, s, "capacity", sp, "DRAConsumableCapacity", f.consumable_capacity)
            _drop(ctx, s, "derivedAttributes", sp, "DRADerivedAttributes", f.derived_attributes)
    if not f.consumable_capacity:
        for i, c in enumerate(constraints):
            _drop(ctx, c, "distinctAttribute", f"{dp}.constraints[{i}]", "DRAConsumableCapacity", False)

    # Request names (and sub-request names) that constraints and config may reference.
    names: dict[str, set[str] | None] = {}
    for r in requests:
        if isinstance(r, dict) and isinstance(r.get("name"), str):
            fa = r.get("firstAvailable")
            names[r["name"]] = ({s["name"] for s in fa if isinstance(s, dict) and isinstance(s.get("name"), str)}
                                if isinstance(fa, list) and fa else None)
    constraint_attrs = _constraint_attributes(constraints)

    if len(requests) > MAX_REQUESTS:
        ctx.too_many(f"{dp}.requests", len(requests), MAX_REQUESTS)
    else:
        for i, r in enumerate(requests):
            _validate_request(ctx, r, f"{dp}.requests[{i}]", constraint_attrs)
        ctx.unique_list(requests, f"{dp}.requests", lambda r: r.get("name") if isinstance(r, dict) else None)

    if ctx.within(constraints, f"{dp}.constraints", MAX_CONSTRAINTS):
        for cp, c in ctx.objects(constraints, f"{dp}.constraints"):
            _request_refs(ctx, c.get("requests"), f"{cp}.requests", names)
            match, distinct = c.get("matchAttribute"), c.get("distinctAttribute")
            if match is not None and distinct is not None:
                ctx.invalid(cp, None, 'exactly one of "matchAttribute" or "distinctAttribute" is required, '
                                      'but multiple fields are set')
            if match is not None:
                ctx.fully_qualified_name(match, f"{cp}.matchAttribute")
            elif distinct is not None:
                ctx.fully_qualified_name(distinct, f"{cp}.distinctAttribute")
            elif f.consumable_capacity:
                ctx.required(cp, 'exactly one of "matchAttribute" or "distinctAttribute" is required')
            else:
                ctx.required(f"{cp}.matchAttribute")

    if ctx.within(config, f"{dp}.config", MAX_CONFIG):
        for cp, c in ctx.objects(config, f"{dp}.config"):
            _request_refs(ctx, c.get("requests"), f"{cp}.requests", names)
            ctx.opaque(c, cp)

    # Admin access (registry strategy AuthorizedForAdmin: the first request with adminAccess).
    for i, r in enumerate(requests):
        ex = r.get("exactly") if isinstance(r, dict) else None
        if isinstance(ex, dict) and ex.get("adminAccess") is True:
            path = f"{dp}.requests[{i}].exactly.adminAccess"
            ns = namespaces.get(namespace)
            if ns is None:
                ctx.note(path, f"adminAccess needs the `{ADMIN_NAMESPACE_LABEL}: true` label on namespace "
                               f"{namespace!r}, which is not in the input: not checked")
            elif _dict(_dict(ns.get("metadata")).get("labels")).get(ADMIN_NAMESPACE_LABEL) != "true":
                ctx.forbidden(path, f"admin access to devices requires the `{ADMIN_NAMESPACE_LABEL}: true` "
                                    "label on the containing namespace")
            break


def _request_refs(ctx: _Ctx, refs: Any, path: str, names: dict[str, set[str] | None]) -> None:
    if refs is None:
        return
    if not isinstance(refs, list):
        ctx.invalid(path, refs, "must be of type array")
        return
    if len(refs) > MAX_REQUESTS:
        ctx.too_many(path, len(refs), MAX_REQUESTS)
        return
    msg = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
    for i, ref in enumerate(refs):
        p = f"{path}[{i}]"
        if not isinstance(ref, str):
            ctx.invalid(p, ref, msg)
            continue
        segs = ref.split("/")
        if len(segs) > 2:
            ctx.invalid(p, ref, msg)
            continue
        for s in segs:
            ctx.names(s, p, is_dns1123_label)
        ok = segs[0] in names and (len(segs) == 1 or segs[1] in (names[segs[0]] or set()))
        if not ok:
            ctx.invalid(p, ref, msg)
    ctx.unique_list(refs, path, lambda r: r)


def _validate_request(ctx: _Ctx, r: Any, rp: str, constraint_attrs: dict[str, set[str]]) -> None:
    if not isinstance(r, dict):
        ctx.invalid(rp, r, "must be of type object")
        return
    name = r.get("name")
    ctx.names(name, f"{rp}.name", is_dns1123_label)
    exactly = r.get("exactly")
    fa = r.get("firstAvailable")
    has_fa = isinstance(fa, list) and len(fa) > 0
    has_exactly = exactly is not None
    if not has_fa and not has_exactly:
        ctx.required(rp, "exactly one of `exactly` or `firstAvailable` is required")
    elif has_fa and has_exactly:
        ctx.invalid(rp, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields "
                              "are set")
    elif has_fa:
        if not ctx.within(fa, f"{rp}.firstAvailable", MAX_FIRST_AVAILABLE):
            return
        for sp, s in ctx.objects(fa, f"{rp}.firstAvailable"):
            ctx.names(s.get("name"), f"{sp}.name", is_dns1123_label)
            if "adminAccess" in s:
                ctx.note(f"{sp}.adminAccess", "not a field of a sub-request (unknown field, dropped)")
            _validate_exact(ctx, s, sp, f"{name}/{s.get('name')}", constraint_attrs)
        ctx.unique_list(fa, f"{rp}.firstAvailable", lambda s: s.get("name") if isinstance(s, dict) else None)
    else:
        if not isinstance(exactly, dict):
            ctx.invalid(f"{rp}.exactly", exactly, "must be of type object")
            return
        _validate_exact(ctx, exactly, f"{rp}.exactly", str(name), constraint_attrs)


def _validate_exact(ctx: _Ctx, e: dict, p: str, req_name: str, constraint_attrs: dict[str, set[str]]) -> None:
    cls = e.get("deviceClassName")
    if not cls:
        ctx.required(f"{p}.deviceClassName")
    else:
        ctx.names(cls, f"{p}.deviceClassName", is_dns1123_subdomain)
    ctx.selectors(e.get("selectors"), f"{p}.selectors")

    derived = ctx.get(e, "derivedAttributes", p, list, [])
    if ctx.within(derived, f"{p}.derivedAttributes", MAX_DERIVED_ATTRIBUTES):
        for dp, da in ctx.objects(derived, f"{p}.derivedAttributes"):
            dname = da.get("name")
            if not dname:
                ctx.required(f"{dp}.name")
            else:
                ctx.fully_qualified_name(dname, f"{dp}.name")
                if isinstance(dname, str) and not _attr_used(dname, req_name, constraint_attrs):
                    ctx.invalid(f"{dp}.name", dname, "must be referenced by at least one matchAttribute or "
                                                     "distinctAttribute constraint targeting this request")
            if not da.get("expression"):
                ctx.required(f"{dp}.expression")
            else:
                ctx.cel_expression(da["expression"], f"{dp}.expression", selector=False)
        ctx.unique_list(derived, f"{p}.derivedAttributes",
                        lambda a: a.get("name") if isinstance(a, dict) else None)

    mode = e.get("allocationMode") or "ExactCount"   # defaulted
    count = e.get("count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
        ctx.invalid(f"{p}.count", count, "must be of type integer")
        count = None
    if mode == "All":
        if count not in (None, 0):
            ctx.invalid(f"{p}.count", count, "must not be specified when allocationMode is 'All'")
    elif mode == "ExactCount":
        if count is not None and count < 0:   # 0 / unset are defaulted to 1
            ctx.invalid(f"{p}.count", count, "must be greater than zero")
    else:
        ctx.unsupported(f"{p}.allocationMode", mode, ALLOCATION_MODES)

    tolerations = ctx.get(e, "tolerations", p, list, [])
    if len(tolerations) > MAX_TOLERATIONS:
        ctx.too_many(f"{p}.tolerations", len(tolerations), MAX_TOLERATIONS)
    else:
        for k, t in enumerate(tolerations):
            _validate_toleration(ctx, t, f"{p}.tolerations[{k}]")

    cap = e.get("capacity")
    if isinstance(cap, dict) and isinstance(cap.get("requests"), dict):
        for cname in cap["requests"]:
            ctx.qualified_name(cname, f"{p}.capacity.requests")


def _validate_toleration(ctx: _Ctx, t: Any, p: str) -> None:
    if not isinstance(t, dict):
        ctx.invalid(p, t, "must be of type object")
        return
    if t.get("key"):
        ctx.label_name(t["key"], f"{p}.key")
    op = t.get("operator") or "Equal"   # defaulted
    value = t.get("value") or ""
    if op == "Exists":
        if value:
            ctx.invalid(f"{p}.value", value, "must be empty for operator `Exists`")
    elif op == "Equal":
        ctx.label_value(value, f"{p}.value")
    else:
        ctx.unsupported(f"{p}.operator", op, TOLERATION_OPERATORS)
    effect = t.get("effect")
    if effect and effect not in TAINT_EFFECTS:
        ctx.unsupported(f"{p}.effect", effect, sorted(TAINT_EFFECTS))
    secs = t.get("tolerationSeconds")
    if secs is not None and (not isinstance(secs, int) or isinstance(secs, bool)):
        ctx.invalid(f"{p}.tolerationSeconds", secs, "must be of type integer")


# ------------------------------------------------------------------ DeviceTaintRule
def _validate_taint_rule(ctx: _Ctx, doc: dict) -> None:
    spec = ctx.get(doc, "spec", "", dict, None)
    if spec is None:
        ctx.required("spec")
        return
    sel = spec.get("deviceSelector")
    if sel is not None:
        if not isinstance(sel, dict):
            ctx.invalid("spec.deviceSelector", sel, "must be of type object")
        else:
            sp = "spec.deviceSelector"
            if sel.get("deviceClassName") is not None:
                ctx.names(sel["deviceClassName"], f"{sp}.deviceClassName", is_dns1123_subdomain)
            if sel.get("driver") is not None:
                ctx.driver_name(sel["driver"], f"{sp}.driver")
            if sel.get("pool") is not None:
                ctx.pool_name(sel["pool"], f"{sp}.pool")
            if sel.get("device") is not None:
                ctx.names(sel["device"], f"{sp}.device", is_dns1123_label)
            ctx.selectors(sel.get("selectors"), f"{sp}.selectors")
            if not any(sel.get(k) for k in ("deviceClassName", "driver", "pool", "device", "selectors")):
                ctx.note(sp, "empty selector: the rule selects every device (the empty selector matches all "
                             "devices)")
    else:
        ctx.note("spec.deviceSelector", "no selector: the rule selects every device (Kubernetes applies a rule "
                                        "without selector to all devices)")
    taint = spec.get("taint")
    if taint is None:
        ctx.required("spec.taint")
    else:
        _validate_taint(ctx, taint, "spec.taint")


# ------------------------------------------------------------------ documents
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
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    name = meta.get("name") or "(no name)"
    if kind in NAMESPACED or meta.get("namespace"):
        return f"{kind} {meta.get('namespace') or 'default'}/{name}"
    return f"{kind} {name}"


NAMESPACED = ("ResourceClaim", "ResourceClaimTemplate", "Pod", "PodGroup")


def _validate_pod(ctx: _Ctx, doc: dict) -> None:
    """The parts of core/v1 Pod validation that decide which devices a pod gets: its claims, the
    containers' references to them, and the required node affinity."""
    spec = ctx.get(doc, "spec", "", dict, {})
    claims = ctx.get(spec, "resourceClaims", "spec", list, [])
    names: list[str] = []
    for p, c in ctx.objects(claims, "spec.resourceClaims"):
        ctx.names(c.get("name"), f"{p}.name", is_dns1123_label)
        if isinstance(c.get("name"), str):
            names.append(c["name"])
        given = [k for k in ("resourceClaimName", "resourceClaimTemplateName") if c.get(k)]
        if not given:
            ctx.invalid(p, c, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
        elif len(given) > 1:
            ctx.invalid(p, c, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified")
        for k in given:
            ctx.names(c[k], f"{p}.{k}", is_dns1123_subdomain)
    ctx.unique_list(claims, "spec.resourceClaims", lambda c: c.get("name") if isinstance(c, dict) else None)
    known = sorted(set(names))
    for key in ("containers", "initContainers"):
        for cp, container in ctx.objects(ctx.get(spec, key, "spec", list, []), f"spec.{key}"):
            res = container.get("resources") if isinstance(container.get("resources"), dict) else {}
            refs = ctx.get(res, "claims", f"{cp}.resources", list, [])
            for rp, ref in ctx.objects(refs, f"{cp}.resources.claims"):
                name = ref.get("name")
                if not name:
                    ctx.required(rp, "")
                elif name not in known:
                    ctx.err(rp, "Not found", "must be one of the names in pod.spec.resourceClaims" +
                            (": " + ", ".join(known) if known else " which is empty"), name)
    affinity = spec.get("affinity") if isinstance(spec.get("affinity"), dict) else {}
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity.get("nodeAffinity"), dict) else {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        _node_selector(ctx, required, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution")


_VALIDATORS = {
    "DeviceClass": _validate_device_class,
    "ResourceSlice": _validate_resource_slice,
    "DeviceTaintRule": _validate_taint_rule,
    "Pod": _validate_pod,
}


def validate_documents(docs: list[tuple[Any, str]], features: Features | None = None) -> Report:
    features = features or Features.from_gates()
    cel = CelEnvironment(list_type_attributes=features.list_type_attributes, new_expressions=True)
    report = Report()
    namespaces = {}
    for doc, _ in docs:
        if isinstance(doc, dict) and doc.get("kind") == "Namespace" and isinstance(doc.get("metadata"), dict):
            namespaces[doc["metadata"].get("name")] = doc
    seen: dict[tuple[str, str, str], str] = {}     # (kind, namespace, name) -> where first given
    for doc, source in docs:
        report.objects += 1
        ctx = _Ctx(report, object_ref(doc), source, features, cel)
        if not isinstance(doc, dict):
            ctx.invalid("(object)", None, "expected a Kubernetes object (a mapping)")
            continue
        doc = json.loads(json.dumps(doc, default=str))  # private copy: dropping fields must not leak
        kind = doc.get("kind")
        if not kind:
            ctx.required("kind")
            continue
        if not isinstance(kind, str):
            ctx.invalid("kind", kind, "must be of type string")
            continue
        versions = KINDS[kind][1] if kind in KINDS else EXTRA_KINDS.get(kind)
        if versions is None:
            ctx.note("kind", f"{kind} objects are not validated by draopt")
            continue
        if doc.get("apiVersion") not in versions:
            ctx.invalid("apiVersion", doc.get("apiVersion"), f"{kind} is served as: " + ", ".join(versions))
            continue
        if kind == "DeviceTaintRule" and not features.device_taint_rules:
            ctx.note("kind", "DeviceTaintRule is not served: feature gates DRADeviceTaints and "
                             "DRADeviceTaintRules must be enabled (not validated)")
            continue
        # Strict decoding (kubectl's default field validation): unknown fields of the version
        # as written; then the object in its v1 (internal) form, as the API server validates it.
        if kind in KINDS:
            for path in unknown_fields(doc, schema_for(KINDS[kind][0], doc.get("apiVersion"))):
                ctx.err(path, "Unknown field")
        try:
            doc = to_v1(doc)
        except ConversionError as e:
            ctx.invalid(e.path, None, e.message)
            continue
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        name = meta.get("name")
        namespaced = kind in NAMESPACED
        name_check = is_dns1123_label if kind == "Namespace" else is_dns1123_subdomain
        if not name and not meta.get("generateName"):
            ctx.required("metadata.name", "name or generateName is required")
        elif name:
            ctx.names(name, "metadata.name", name_check)
            key = (kind, (meta.get("namespace") or "default") if namespaced else "", name)
            if not all(isinstance(k, str) for k in key):
                pass      # a wrong type is reported by the name checks
            elif key in seen:
                ctx.duplicate("metadata.name", name)
                ctx.note("metadata.name", f"the same {kind} is also given in {seen[key]}: kubectl apply would "
                                          "apply the later one over the earlier (kubectl create: AlreadyExists)")
            else:
                seen[key] = source
        if namespaced and meta.get("namespace"):
            ctx.names(meta["namespace"], "metadata.namespace", is_dns1123_label)
        if kind == "ResourceClaim":
            _validate_claim_spec(ctx, doc.get("spec"), "spec", meta.get("namespace") or "default", namespaces)
        elif kind == "ResourceClaimTemplate":
            spec = ctx.get(doc, "spec", "", dict, {})
            _validate_claim_spec(ctx, spec.get("spec"), "spec.spec", meta.get("namespace") or "default",
                                 namespaces)
        elif kind in _VALIDATORS:
            _VALIDATORS[kind](ctx, doc)
        _quantities(ctx, doc, kind)
    return report


def validate_files(paths: Iterable[str], features: Features | None = None) -> Report:
    return validate_documents(read_documents(paths), features)


# ------------------------------------------------------------------ CLI
def format_text(report: Report) -> str:
    lines = [str(f) for f in report.findings]
    lines += [f"note: {n}" for n in report.notes]
    if report.findings:
        lines.append(f"{len(report.findings)} error(s) in {report.objects} object(s)")
    else:
        lines.append(f"{report.objects} object(s) valid")
    return "\n".join(lines) + "\n"


def cmd_validate(args) -> int:
    try:
        features = Features.from_gates(parse_gates(getattr(args, "feature_gates", "") or ""))
        report = validate_files(args.filename, features)
    except DraoptError as e:
        print(f"draopt: error: {e}", file=sys.stderr)
        return 2
    if args.output == "json":
        sys.stdout.write(json.dumps(report.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(format_text(report))
    return 1 if report.findings else 0


def register(subparsers) -> None:
    """Add `draopt validate` to the CLI's sub-parsers."""
    p = subparsers.add_parser("validate", help="report objects a Kubernetes API server would reject")
    p.add_argument("-f", "--filename", action="append", required=True, metavar="FILE",
                   help="YAML/JSON documents or a List; '-' reads stdin (repeatable)")
    p.add_argument("--feature-gates", default="", metavar="G=true|false,...",
                   help="API server feature gates (default: Kubernetes 1.36's; known: "
                        + ", ".join(sorted(DEFAULT_GATES)) + ")")
    p.add_argument("-o", "--output", default="text", choices=("text", "json"))
    p.set_defaults(func=cmd_validate)


__all__ = ["Finding", "Note", "Report", "read_documents", "validate_documents", "validate_files", "register",
           "cmd_validate", "object_ref"]
