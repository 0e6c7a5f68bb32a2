"""Node selectors (ValidateNodeSelector, pkg/apis/core/validation)."""

from __future__ import annotations

from typing import Any

from draopt.validation.context import _Ctx
from draopt.kube.names import is_dns1123_subdomain


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
        for key, check in (
            ("matchExpressions", _node_selector_requirement),
            ("matchFields", _node_field_selector_requirement),
        ):
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
            ctx.required(
                f"{p}.values", "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            )
    else:
        ctx.invalid(f"{p}.operator", op, "not a valid selector operator")
    if req.get("key") not in NODE_FIELD_SELECTOR_KEYS:
        ctx.invalid(f"{p}.key", req.get("key"), "not a valid field selector key")
    elif isinstance(values, list):
        for i, v in enumerate(values):
            ctx.names(v, f"{p}.values[{i}]", is_dns1123_subdomain)
