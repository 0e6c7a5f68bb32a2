"""PodGroup, CompositePodGroup and Workload (scheduling.k8s.io): what the API server checks.

Rules from kubernetes/kubernetes pkg/apis/scheduling/validation (the Workload cases of
validation_test.go and the declarative tags of the v1alpha2/v1alpha3/v1beta1 types) and the KEPs:
KEP-4671 (gang scheduling, Workload and PodGroup), KEP-5832 (standalone PodGroup), KEP-5732
(topology-aware workload scheduling: ``schedulingConstraints``), KEP-5710 (workload-aware
preemption: ``disruptionMode``, ``priority``), KEP-6012 (CompositePodGroup).

* ``schedulingPolicy``: exactly one of ``basic`` / ``gang``; ``gang.minCount`` (PodGroup) or
  ``gang.minGroupCount`` (CompositePodGroup) required and at least 1.
* ``schedulingConstraints.topology``: at most one entry; its ``key`` required and a label key
  (optional DNS-subdomain prefix and ``/``, a name of at most 63 characters). Dropped (with a
  note) while TopologyAwareWorkloadScheduling is off.
* ``disruptionMode``: 1.37 a union, exactly one of ``single`` / ``all``; 1.36 (v1alpha2) the
  string ``Pod`` or ``PodGroup``.
* ``priorityClassName`` a DNS subdomain; ``priority`` at most 1,000,000,000
  (HighestUserDefinablePriority).
* ``parentCompositePodGroupName`` (a DNS subdomain) dropped while CompositePodGroup is off;
  a CompositePodGroup needs ``workloadRef``.
* Workload: exactly one of ``podGroupTemplates`` / ``compositePodGroupTemplates``, at most 8
  each, names unique DNS labels; each template by the rules above.
"""

from __future__ import annotations

from typing import Any

from draopt.kube.names import is_dns1123_label, is_dns1123_subdomain
from draopt.validation.context import _Ctx, _drop

MAX_TEMPLATES = 8  # WorkloadMaxPodGroupTemplates
HIGHEST_USER_PRIORITY = 1_000_000_000
MAX_GROUP_CLAIMS = 4  # MaxPodGroupResourceClaims
DISRUPTION_MODES_136 = ("Pod", "PodGroup")


def _policy(ctx: _Ctx, spec: dict, path: str, count_field: str, required: bool = True) -> None:
    policy = ctx.get(spec, "schedulingPolicy", path, dict, None)
    where = f"{path}.schedulingPolicy" if path else "schedulingPolicy"
    if policy is None:
        if required:
            ctx.required(where, "must specify one of: `basic`, `gang`")
        return
    given = [k for k in ("basic", "gang") if policy.get(k) is not None]
    if len(given) != 1:
        ctx.invalid(where, policy, "must specify exactly one of: `basic`, `gang`")
    gang = ctx.get(policy, "gang", where, dict, None)
    if gang is not None:
        count = gang.get(count_field)
        if count in (None, 0):
            ctx.required(f"{where}.gang.{count_field}")
        elif not isinstance(count, int) or isinstance(count, bool):
            ctx.invalid(f"{where}.gang.{count_field}", count, "must be of type integer")
        elif count < 1:
            ctx.invalid(f"{where}.gang.{count_field}", count, "must be greater than or equal to 1")


def _constraints(ctx: _Ctx, spec: dict, path: str) -> None:
    _drop(
        ctx,
        spec,
        "schedulingConstraints",
        path,
        "TopologyAwareWorkloadScheduling",
        ctx.features.topology_aware_workload_scheduling,
    )
    where = f"{path}.schedulingConstraints" if path else "schedulingConstraints"
    constraints = ctx.get(spec, "schedulingConstraints", path, dict, None)
    if constraints is None:
        return
    topology = ctx.get(constraints, "topology", where, list, [])
    if not ctx.within(topology, f"{where}.topology", 1):
        return
    for p, entry in ctx.objects(topology, f"{where}.topology"):
        ctx.label_name(entry.get("key"), f"{p}.key")


def _disruption_mode(ctx: _Ctx, spec: dict, path: str) -> None:
    where = f"{path}.disruptionMode" if path else "disruptionMode"
    mode = spec.get("disruptionMode")
    if mode is None:
        return
    if isinstance(mode, str):
        if mode not in DISRUPTION_MODES_136:
            ctx.unsupported(where, mode, DISRUPTION_MODES_136)
        return
    if not isinstance(mode, dict):
        ctx.invalid(where, mode, "must be of type object")
        return
    given = [k for k in ("single", "all") if mode.get(k) is not None]
    if len(given) != 1:
        ctx.invalid(where, mode, "must specify exactly one of: `single`, `all`")


def _priority(ctx: _Ctx, spec: dict, path: str) -> None:
    prefix = f"{path}." if path else ""
    if spec.get("priorityClassName") is not None:
        ctx.names(spec["priorityClassName"], f"{prefix}priorityClassName", is_dns1123_subdomain)
    prio = spec.get("priority")
    if prio is None:
        return
    if not isinstance(prio, int) or isinstance(prio, bool):
        ctx.invalid(f"{prefix}priority", prio, "must be of type integer")
    elif prio > HIGHEST_USER_PRIORITY:
        ctx.invalid(f"{prefix}priority", prio, f"must be less than or equal to {HIGHEST_USER_PRIORITY}")
    elif prio < -(2**31):
        ctx.invalid(f"{prefix}priority", prio, "must be a 32-bit integer")


def _claims(ctx: _Ctx, spec: dict, path: str) -> None:
    where = f"{path}.resourceClaims" if path else "resourceClaims"
    claims = ctx.get(spec, "resourceClaims", path, list, [])
    if not ctx.within(claims, where, MAX_GROUP_CLAIMS):
        return
    for p, c in ctx.objects(claims, where):
        ctx.names(c.get("name"), f"{p}.name", is_dns1123_label)
        given = [k for k in ("resourceClaimName", "resourceClaimTemplateName") if c.get(k)]
        if len(given) != 1:
            ctx.invalid(p, c, "must specify exactly one of: `resourceClaimName`, `resourceClaimTemplateName`")
        for k in given:
            ctx.names(c[k], f"{p}.{k}", is_dns1123_subdomain)
    ctx.unique_list(claims, where, lambda c: c.get("name") if isinstance(c, dict) else None)


def _group_fields(ctx: _Ctx, spec: dict, path: str, count_field: str) -> None:
    """What a PodGroup, a CompositePodGroup and their templates share."""
    _policy(ctx, spec, path, count_field)
    _constraints(ctx, spec, path)
    _disruption_mode(ctx, spec, path)
    _priority(ctx, spec, path)


def _parent(ctx: _Ctx, spec: dict) -> None:
    _drop(ctx, spec, "parentCompositePodGroupName", "spec", "CompositePodGroup", ctx.features.composite_pod_group)
    if spec.get("parentCompositePodGroupName") is not None:
        ctx.names(spec["parentCompositePodGroupName"], "spec.parentCompositePodGroupName", is_dns1123_subdomain)
        if not isinstance(spec.get("workloadRef"), dict):
            ctx.required("spec.workloadRef", "required when spec.parentCompositePodGroupName is set")


def _workload_ref(ctx: _Ctx, spec: dict, required: bool) -> None:
    ref = ctx.get(spec, "workloadRef", "spec", dict, None)
    if ref is None:
        if required:
            ctx.required("spec.workloadRef")
        return
    ctx.names(ref.get("workloadName"), "spec.workloadRef.workloadName", is_dns1123_subdomain)
    ctx.names(ref.get("templateName"), "spec.workloadRef.templateName", is_dns1123_label)


def validate_pod_group(ctx: _Ctx, doc: dict) -> None:
    spec = ctx.get(doc, "spec", "", dict, {})
    _group_fields(ctx, spec, "spec", "minCount")
    _claims(ctx, spec, "spec")
    _parent(ctx, spec)
    _workload_ref(ctx, spec, required=False)


def validate_composite_pod_group(ctx: _Ctx, doc: dict) -> None:
    spec = ctx.get(doc, "spec", "", dict, {})
    _group_fields(ctx, spec, "spec", "minGroupCount")
    _parent(ctx, spec)
    _workload_ref(ctx, spec, required=True)  # KEP-6012: no standalone CompositePodGroups


def _templates(ctx: _Ctx, spec: dict, path: str, depth: int = 0) -> None:
    kinds = [("podGroupTemplates", "minCount"), ("compositePodGroupTemplates", "minGroupCount")]
    for key, count_field in kinds:
        where = f"{path}.{key}"
        items = ctx.get(spec, key, path, list, [])
        if not ctx.within(items, where, MAX_TEMPLATES):
            continue
        for p, t in ctx.objects(items, where):
            ctx.names(t.get("name"), f"{p}.name", is_dns1123_label)
            _group_fields(ctx, t, p, count_field)
            if key == "podGroupTemplates":
                _claims(ctx, t, p)
            else:
                _templates(ctx, t, p, depth + 1)
        ctx.unique_list(items, where, lambda t: t.get("name") if isinstance(t, dict) else None)


def validate_workload(ctx: _Ctx, doc: dict) -> None:
    spec = ctx.get(doc, "spec", "", dict, {})
    _drop(ctx, spec, "compositePodGroupTemplates", "spec", "CompositePodGroup", ctx.features.composite_pod_group)
    given = [k for k in ("podGroupTemplates", "compositePodGroupTemplates") if spec.get(k)]
    if len(given) != 1:
        ctx.invalid(
            "spec", _summary(spec), "must specify exactly one of: `podGroupTemplates`, `compositePodGroupTemplates`"
        )
    _templates(ctx, spec, "spec")


def _summary(spec: dict) -> Any:
    return {k: "..." for k in ("podGroupTemplates", "compositePodGroupTemplates") if spec.get(k)}


VALIDATORS = {
    "PodGroup": validate_pod_group,
    "CompositePodGroup": validate_composite_pod_group,
    "Workload": validate_workload,
}
