"""DeviceClass."""

from __future__ import annotations

from typing import Any

from draopt.validation.context import _Ctx, _drop
from draopt.validation.limits import MAX_CONFIG
from draopt.kube.names import is_qualified_label_name


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
