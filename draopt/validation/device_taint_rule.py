"""DeviceTaintRule."""

from __future__ import annotations

from draopt.validation.context import _Ctx
from draopt.kube.names import is_dns1123_label
from draopt.validation.resource_slice import _validate_taint


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
            # deviceClassName and selectors (1.33-1.34's v1alpha3) are unknown fields now, which the
            # API server drops unvalidated; the loader warns about them.
            if sel.get("driver") is not None:
                ctx.driver_name(sel["driver"], f"{sp}.driver")
            if sel.get("pool") is not None:
                ctx.pool_name(sel["pool"], f"{sp}.pool")
            if sel.get("device") is not None:
                ctx.names(sel["device"], f"{sp}.device", is_dns1123_label)
            if not any(sel.get(k) for k in ("driver", "pool", "device")):
                ctx.note(sp, "empty selector: the rule selects every device (the empty selector matches all devices)")
    else:
        ctx.note(
            "spec.deviceSelector",
            "no selector: the rule selects every device (Kubernetes applies a rule without selector to all devices)",
        )
    taint = spec.get("taint")
    if taint is None:
        ctx.required("spec.taint")
    else:
        _validate_taint(ctx, taint, "spec.taint")
