"""Notes on what the input sets that the scheduler does not see: a gated field whose gate is off (the
API server drops it on write), and a PodGroup whose policy differs from its Workload template."""

from __future__ import annotations

from typing import Any

from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.kube.models.workload import topology_key


def _list_valued(attr: Any) -> bool:
    """A device attribute with a list value (to_k8s() would write bools, ints, strings or versions);
    read from the model, not from a dump of every device."""
    return attr.bools is not None or attr.ints is not None or attr.strings is not None or attr.versions is not None


_LIST_FORMS = frozenset(("bools", "ints", "strings", "versions"))


def _device_gated_fields(devices: list) -> tuple[bool, bool]:
    """(whether a device sets nodeAllocatableResources, whether one has a list-valued attribute),
    the devices read once."""
    allocatable = lists = False
    for d in devices:
        allocatable = allocatable or bool(d.node_allocatable_resources)
        if not lists:
            for a in d.attributes.values():
                # (a field never set holds None: reading the fields set is one look-up)
                if not _LIST_FORMS.isdisjoint(a.__pydantic_fields_set__) and _list_valued(a):
                    lists = True
                    break
        if allocatable and lists:
            break
    return allocatable, lists


def gated_field_notes(objects: ObjectSet, features: Features) -> list[str]:
    """One line per gated field the input sets whose gate is off (the API server drops such a
    field on write, so Kubernetes never sees it), and per field draopt does not model: the
    first object, and how many more."""
    found: dict[tuple[str, str], list[str]] = {}

    def seen(field_name: str, gate: str, ref: str) -> None:
        found.setdefault((field_name, gate), []).append(ref)

    for g in objects.pod_groups:
        if topology_key(g.spec.scheduling_constraints) is not None:
            seen("PodGroup spec.schedulingConstraints", "TopologyAwareWorkloadScheduling", g.ref)
        if g.spec.parent_composite_pod_group_name:
            seen("PodGroup spec.parentCompositePodGroupName", "CompositePodGroup", g.ref)
        if g.spec.resource_claims:
            seen("PodGroup spec.resourceClaims", "DRAWorkloadResourceClaims", g.ref)
    for c in getattr(objects, "composite_pod_groups", []):
        seen("CompositePodGroup objects", "CompositePodGroup", c.ref)
        if topology_key(c.spec.scheduling_constraints) is not None:
            seen("CompositePodGroup spec.schedulingConstraints", "TopologyAwareWorkloadScheduling", c.ref)
    for s in objects.resource_slices:
        allocatable, lists = _device_gated_fields(s.spec.devices)
        if allocatable:
            seen("ResourceSlice spec.devices[].nodeAllocatableResources", "DRANodeAllocatableResources", s.ref)
        if lists:
            seen("ResourceSlice spec.devices[].attributes[] list values", "DRAListTypeAttributes", s.ref)
    lines = []
    for (field_name, gate), refs in found.items():
        more = f" and {len(refs) - 1} more" if len(refs) > 1 else ""
        if features.gates.get(gate, False):
            continue
        if field_name.endswith(" objects"):
            lines.append(
                f"{field_name} not served: gate {gate} is off; their PodGroups are scheduled as roots ({refs[0]}{more})"
            )
        else:
            lines.append(f"field {field_name} dropped: gate {gate} is off ({refs[0]}{more})")
    if (
        features.composite_pod_group
        and not features.topology_aware_workload_scheduling
        and getattr(objects, "composite_pod_groups", [])
    ):
        lines.append(
            "CompositePodGroup needs TopologyAwareWorkloadScheduling in kube-scheduler (its placement "
            "algorithm); with that gate off draopt schedules each tree in one pod-group cycle over all "
            "nodes, without topology constraints"
        )
    lines.extend(_template_copy_notes(objects))
    return lines


def _template_copy_notes(objects: ObjectSet) -> list[str]:
    """A PodGroup whose scheduling policy or constraints differ from its Workload template: the
    scheduler reads the PodGroup's own copy (made when the PodGroup was created), so draopt does too."""
    templates = {}
    for w in getattr(objects, "workloads", []):
        for t in w.spec.pod_group_templates:
            templates[(w.namespace, w.name, t.name)] = t
    out = []
    for g in objects.pod_groups:
        ref = g.spec.workload_ref or {}
        workload, template = ref.get("workloadName"), ref.get("templateName")
        old = (g.spec.pod_group_template_ref or {}).get("workload") or {}
        workload = workload or old.get("workloadName")
        template = template or old.get("podGroupTemplateName")
        t = templates.get((g.namespace, workload, template))
        if t is None:
            continue
        for name, mine, theirs in (
            ("schedulingPolicy", g.spec.scheduling_policy, t.scheduling_policy),
            ("schedulingConstraints", g.spec.scheduling_constraints, t.scheduling_constraints),
        ):
            a = mine.to_k8s() if mine is not None else None
            b = theirs.to_k8s() if theirs is not None else None
            if (a or None) != (b or None):
                out.append(
                    f"{g.ref}: spec.{name} differs from its Workload template {g.namespace}/{workload} "
                    f"{template!r}: kube-scheduler reads the PodGroup's own copy, and so does draopt"
                )
    return out


__all__ = ["gated_field_notes"]
