"""ResourceSlice: the slice, its devices, their attributes, capacities, counters and taints."""

from __future__ import annotations

import re
from typing import Any

from draopt.validation.context import _Ctx, _dict, _drop, _list
from draopt.validation.limits import (
    ATTRIBUTE_MAX_VALUE_LENGTH,
    MAX_ATTRIBUTE_VALUES_PER_DEVICE,
    MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
    MAX_BINDING_CONDITIONS,
    MAX_COMPATIBILITY_GROUPS,
    MAX_CONSUMPTIONS_PER_DEVICE,
    MAX_COUNTER_SETS,
    MAX_COUNTERS_PER_CONSUMPTION,
    MAX_COUNTERS_PER_SET,
    MAX_DEVICES,
    MAX_DEVICES_ADVANCED,
    MAX_TAINTS,
    TAINT_EFFECTS,
)
from draopt.kube.names import is_dns1123_label, is_dns1123_subdomain
from draopt.validation.node_selector import _node_selector


_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
    r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$"
)


_LIST_ATTR_KEYS = ("bools", "ints", "strings", "versions")
_SCALAR_ATTR_KEYS = ("bool", "int", "string", "version")


def _validate_resource_slice(ctx: _Ctx, doc: dict) -> None:
    spec = ctx.get(doc, "spec", "", dict, None)
    if spec is None:
        ctx.required("spec")
        return
    devices = _drop_disabled_fields(ctx, spec)
    _validate_driver_and_pool(ctx, spec)
    _validate_node_choice(ctx, spec)
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        ctx.invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed")

    _validate_devices(ctx, spec, devices or [])
    _validate_shared_counters(ctx, spec)


def _drop_disabled_fields(ctx: _Ctx, spec: dict) -> list | None:
    """Fields of disabled gates are dropped first; the spec's devices (None: not a list)."""
    f = ctx.features
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
                _drop(
                    ctx, cc, "compatibilityGroups", f"{p}.consumesCounters[{j}]", "DRADeviceCompatibilityGroups", False
                )
        if not f.list_type_attributes and isinstance(d.get("attributes"), dict):
            for name, attr in d["attributes"].items():
                for key in _LIST_ATTR_KEYS:
                    _drop(ctx, attr, key, f"{p}.attributes[{name}]", "DRAListTypeAttributes", False)
    return devices


def _validate_driver_and_pool(ctx: _Ctx, spec: dict) -> None:
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


def _validate_node_choice(ctx: _Ctx, spec: dict) -> None:
    """Exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection."""
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
        ctx.required(
            "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
        )
    elif len(set_fields) > 1:
        ctx.invalid(
            "spec",
            "{" + ", ".join(set_fields) + "}",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
            "required, but multiple fields are set",
        )


def _validate_devices(ctx: _Ctx, spec: dict, devices: list) -> None:
    advanced = any(
        isinstance(d, dict)
        and (
            d.get("taints")
            or d.get("consumesCounters")
            or any(
                isinstance(a, dict) and any(a.get(k) is not None for k in _LIST_ATTR_KEYS)
                for a in _dict(d.get("attributes")).values()
            )
        )
        for d in devices
    )
    limit = MAX_DEVICES_ADVANCED if advanced else MAX_DEVICES
    if len(devices) > limit:
        ctx.too_many("spec.devices", len(devices), limit)
        if advanced and len(devices) <= MAX_DEVICES:
            ctx.note(
                "spec.devices",
                f"the limit is {MAX_DEVICES_ADVANCED} (not {MAX_DEVICES}) because a device "
                "uses taints, consumesCounters or list-type attributes",
            )
    else:
        per_device = spec.get("perDeviceNodeSelection") is True
        for i, d in enumerate(devices):
            _validate_device(ctx, d, f"spec.devices[{i}]", per_device)
        ctx.unique_list(devices, "spec.devices", lambda d: d.get("name") if isinstance(d, dict) else None)


def _validate_shared_counters(ctx: _Ctx, spec: dict) -> None:
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
        ctx.invalid(
            p,
            len(attrs) + len(caps),
            f"the total number of attributes and capacities must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}",
        )
    nvalues = _attribute_values(d)
    if nvalues > MAX_ATTRIBUTE_VALUES_PER_DEVICE:
        ctx.invalid(
            p, nvalues, f"the total number of attribute values must not exceed {MAX_ATTRIBUTE_VALUES_PER_DEVICE}"
        )
    for name, attr in attrs.items():
        ctx.qualified_name(name, f"{p}.attributes")
        _validate_attribute(ctx, attr, f"{p}.attributes[{name}]")
    _validate_capacities(ctx, caps, p, d.get("allowMultipleAllocations") is True)
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
    _validate_device_nodes(ctx, d, p, per_device)
    _binding_conditions(ctx, d, p)


def _validate_device_nodes(ctx: _Ctx, d: dict, p: str, per_device: bool) -> None:
    """A device's own node choice (perDeviceNodeSelection)."""
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
        msg = (
            "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
        )
        if not set_fields:
            ctx.required(p, msg)
        elif len(set_fields) > 1:
            ctx.invalid(p, "{" + ", ".join(set_fields) + "}", msg)
    elif node_keys:
        ctx.invalid(
            p,
            None,
            "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        )


def _validate_capacities(ctx: _Ctx, caps: dict, p: str, multi: bool) -> None:
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
                ctx.forbidden(
                    f"{cp}.requestPolicy",
                    'exactly one policy can be specified, cannot specify '
                    '"validValues" and "validRange" at the same time',
                )
            elif (rp.get("validValues") or rp.get("validRange") is not None) and rp.get("default") is None:
                which = "validValues" if rp.get("validValues") else "validRange"
                ctx.required(f"{cp}.requestPolicy.default", f"required when {which} is defined")
            elif isinstance(rp.get("validRange"), dict) and rp["validRange"].get("min") is None:
                ctx.required(f"{cp}.requestPolicy.validRange.min", "required when validRange is defined")


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
            ctx.invalid(
                f"{p}.bindingFailureConditions[{i}]",
                c,
                "bindingFailureConditions must not overlap with bindingConditions",
            )
    if not bc and bfc:
        ctx.invalid(f"{p}.bindingConditions", bc, "bindingConditions are required to use bindingFailureConditions")
    if not bfc and bc:
        ctx.invalid(
            f"{p}.bindingFailureConditions", bfc, "bindingFailureConditions are required to use bindingConditions"
        )


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
