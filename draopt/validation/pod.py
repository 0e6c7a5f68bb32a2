"""Pod: the parts of core/v1 Pod validation that decide which devices a pod gets."""

from __future__ import annotations

from draopt.validation.context import _Ctx
from draopt.kube.names import is_dns1123_label, is_dns1123_subdomain
from draopt.validation.node_selector import _node_selector


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
                    ctx.err(
                        rp,
                        "Not found",
                        "must be one of the names in pod.spec.resourceClaims"
                        + (": " + ", ".join(known) if known else " which is empty"),
                        name,
                    )
    affinity = spec.get("affinity")
    if not isinstance(affinity, dict):
        affinity = {}
    node_affinity = affinity.get("nodeAffinity")
    if not isinstance(node_affinity, dict):
        node_affinity = {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        _node_selector(ctx, required, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution")
