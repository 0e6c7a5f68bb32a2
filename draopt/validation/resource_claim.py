"""ResourceClaim and ResourceClaimTemplate specs: requests, constraints, config, tolerations."""

from __future__ import annotations

from typing import Any

from draopt.validation.context import _Ctx, _dict, _drop, _list
from draopt.validation.limits import (
    ADMIN_NAMESPACE_LABEL,
    ALLOCATION_MODES,
    MAX_CONFIG,
    MAX_CONSTRAINTS,
    MAX_DERIVED_ATTRIBUTES,
    MAX_FIRST_AVAILABLE,
    MAX_REQUESTS,
    MAX_TOLERATIONS,
    TAINT_EFFECTS,
    TOLERATION_OPERATORS,
)
from draopt.kube.names import is_dns1123_label, is_dns1123_subdomain


def _constraint_attributes(constraints: list) -> dict[str, set[str]]:
    attrs: dict[str, set[str]] = {}
    for c in constraints:
        if not isinstance(c, dict):
            continue
        name = c.get("matchAttribute") or c.get("distinctAttribute")
        if not isinstance(name, str):
            continue
        reqs = _list(c.get("requests"))
        for r in reqs if reqs else [""]:
            if isinstance(r, str):
                attrs.setdefault(r, set()).add(name)
    return attrs


def _attr_used(name: str, req: str, attrs: dict[str, set[str]]) -> bool:
    if name in attrs.get("", set()) or name in attrs.get(req, set()):
        return True
    parent, sep, _ = req.partition("/")
    return bool(sep) and name in attrs.get(parent, set())


def _validate_claim_spec(ctx: _Ctx, spec: Any, base: str, namespace: str, namespaces: dict[str, dict]) -> None:
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
    _drop_disabled_fields(ctx, requests, constraints, dp)
    names = _request_names(requests)
    constraint_attrs = _constraint_attributes(constraints)

    if len(requests) > MAX_REQUESTS:
        ctx.too_many(f"{dp}.requests", len(requests), MAX_REQUESTS)
    else:
        for i, r in enumerate(requests):
            _validate_request(ctx, r, f"{dp}.requests[{i}]", constraint_attrs)
        ctx.unique_list(requests, f"{dp}.requests", lambda r: r.get("name") if isinstance(r, dict) else None)

    _validate_constraints(ctx, constraints, dp, names)
    if ctx.within(config, f"{dp}.config", MAX_CONFIG):
        for cp, c in ctx.objects(config, f"{dp}.config"):
            _request_refs(ctx, c.get("requests"), f"{cp}.requests", names)
            ctx.opaque(c, cp)

    _check_admin_access(ctx, requests, dp, namespace, namespaces)


def _drop_disabled_fields(ctx: _Ctx, requests: list, constraints: list, dp: str) -> None:
    """Drop disabled fields (on create)."""
    f = ctx.features
    for i, r in enumerate(requests):
        if not isinstance(r, dict):
            continue
        rp = f"{dp}.requests[{i}]"
        _drop(ctx, r, "firstAvailable", rp, "DRAPrioritizedList", f.prioritized_list)
        subs: list[tuple[Any, str]] = (
            [(r.get("exactly"), f"{rp}.exactly")] if isinstance(r.get("exactly"), dict) else []
        )
        subs += [
            (s, f"{rp}.firstAvailable[{j}]")
            for j, s in enumerate(_list(r.get("firstAvailable")))
            if isinstance(s, dict)
        ]
        if isinstance(r.get("exactly"), dict):
            _drop(ctx, r["exactly"], "adminAccess", f"{rp}.exactly", "DRAAdminAccess", f.admin_access)
        for s, sp in subs:
            _drop(ctx, s, "tolerations", sp, "DRADeviceTaints", f.device_taints)
            _drop(ctx, s, "capacity", sp, "DRAConsumableCapacity", f.consumable_capacity)
            _drop(ctx, s, "derivedAttributes", sp, "DRADerivedAttributes", f.derived_attributes)
    if not f.consumable_capacity:
        for i, c in enumerate(constraints):
            _drop(ctx, c, "distinctAttribute", f"{dp}.constraints[{i}]", "DRAConsumableCapacity", False)


def _request_names(requests: list) -> dict[str, set[str] | None]:
    """Request names (and sub-request names) that constraints and config may reference."""
    names: dict[str, set[str] | None] = {}
    for r in requests:
        if isinstance(r, dict) and isinstance(r.get("name"), str):
            fa = r.get("firstAvailable")
            names[r["name"]] = (
                {s["name"] for s in fa if isinstance(s, dict) and isinstance(s.get("name"), str)}
                if isinstance(fa, list) and fa
                else None
            )
    return names


def _validate_constraints(ctx: _Ctx, constraints: list, dp: str, names: dict[str, set[str] | None]) -> None:
    f = ctx.features
    if ctx.within(constraints, f"{dp}.constraints", MAX_CONSTRAINTS):
        for cp, c in ctx.objects(constraints, f"{dp}.constraints"):
            _request_refs(ctx, c.get("requests"), f"{cp}.requests", names)
            match, distinct = c.get("matchAttribute"), c.get("distinctAttribute")
            if match is not None and distinct is not None:
                ctx.invalid(
                    cp,
                    None,
                    'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set',
                )
            if match is not None:
                ctx.fully_qualified_name(match, f"{cp}.matchAttribute")
            elif distinct is not None:
                ctx.fully_qualified_name(distinct, f"{cp}.distinctAttribute")
            elif f.consumable_capacity:
                ctx.required(cp, 'exactly one of "matchAttribute" or "distinctAttribute" is required')
            else:
                ctx.required(f"{cp}.matchAttribute")


def _check_admin_access(ctx: _Ctx, requests: list, dp: str, namespace: str, namespaces: dict[str, dict]) -> None:
    """Admin access (registry strategy AuthorizedForAdmin: the first request with adminAccess)."""
    for i, r in enumerate(requests):
        ex = r.get("exactly") if isinstance(r, dict) else None
        if isinstance(ex, dict) and ex.get("adminAccess") is True:
            path = f"{dp}.requests[{i}].exactly.adminAccess"
            ns = namespaces.get(namespace)
            if ns is None:
                ctx.note(
                    path,
                    f"adminAccess needs the `{ADMIN_NAMESPACE_LABEL}: true` label on namespace "
                    f"{namespace!r}, which is not in the input: not checked",
                )
            elif _dict(_dict(ns.get("metadata")).get("labels")).get(ADMIN_NAMESPACE_LABEL) != "true":
                ctx.forbidden(
                    path,
                    f"admin access to devices requires the `{ADMIN_NAMESPACE_LABEL}: true` "
                    "label on the containing namespace",
                )
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
    fa: Any = r.get("firstAvailable")  # a list when has_fa
    has_fa = isinstance(fa, list) and len(fa) > 0
    has_exactly = exactly is not None
    if not has_fa and not has_exactly:
        ctx.required(rp, "exactly one of `exactly` or `firstAvailable` is required")
    elif has_fa and has_exactly:
        ctx.invalid(rp, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set")
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
                    ctx.invalid(
                        f"{dp}.name",
                        dname,
                        "must be referenced by at least one matchAttribute or "
                        "distinctAttribute constraint targeting this request",
                    )
            if not da.get("expression"):
                ctx.required(f"{dp}.expression")
            else:
                ctx.cel_expression(da["expression"], f"{dp}.expression", selector=False)
        ctx.unique_list(derived, f"{p}.derivedAttributes", lambda a: a.get("name") if isinstance(a, dict) else None)

    mode = e.get("allocationMode") or "ExactCount"  # defaulted
    count = e.get("count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
        ctx.invalid(f"{p}.count", count, "must be of type integer")
        count = None
    if mode == "All":
        if count not in (None, 0):
            ctx.invalid(f"{p}.count", count, "must not be specified when allocationMode is 'All'")
    elif mode == "ExactCount":
        if count is not None and count < 0:  # 0 / unset are defaulted to 1
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
    op = t.get("operator") or "Equal"  # defaulted
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
