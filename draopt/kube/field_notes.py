"""Notes on what the input has that placements do not honour: a gated field whose gate is off (the
API server drops it), a field draopt does not model, a PodGroup that differs from its Workload
template. Said once per run (`say_note`), kept in `Workload.notes`."""

from __future__ import annotations

from typing import Any

from draopt.kube.features import Features
from draopt.notes import note
from draopt.kube.loader import ObjectSet
from draopt.kube.models.workload import topology_key


# Volume sources kube-scheduler's volume filters read (VolumeBinding, VolumeZone,
# VolumeRestrictions, NodeVolumeLimits): a claim to bind, a zone, an attach limit.
_SCHEDULED_VOLUMES = ("persistentVolumeClaim", "ephemeral", "csi")


HOST_PORTS = "host ports (NodePorts filter)"
VOLUMES = "claimed or attached volumes (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits filters)"
_FIELD = {HOST_PORTS: "spec.containers[].ports[].hostPort", VOLUMES: "spec.volumes[]"}


def pods_with_unmodelled_fields(pods) -> dict[str, list[str]]:
    """Scheduler filters draopt does not model (HOST_PORTS, VOLUMES) -> the pending pods whose
    fields they read (a host port; a persistentVolumeClaim, ephemeral or csi volume)."""
    out: dict[str, list[str]] = {}
    for d in pods:
        spec = d.pod.spec
        if any(_asks_host_port(c) for c in spec.containers + spec.init_containers):
            out.setdefault(HOST_PORTS, []).append(d.key)
        extra = spec.__pydantic_extra__
        vols = (extra.get("volumes") if extra else None) or []
        if any(isinstance(v, dict) and any(k in v for k in _SCHEDULED_VOLUMES) for v in vols):
            out.setdefault(VOLUMES, []).append(d.key)
    return out


def unmodelled_filter_rules(pods) -> list[str]:
    """The filters of pods_with_unmodelled_fields as rules, named with the first pod and field."""
    return [
        f"{rule}, which draopt does not model ({keys[0]}: {_FIELD[rule]})"
        for rule, keys in pods_with_unmodelled_fields(pods).items()
    ]


def unmodelled_pod_fields(pods) -> list[str]:
    """One note per field of the pending pods whose scheduler filter draopt does not model, the
    first pod and how many more: placements ignore them, said rather than silent."""
    found = pods_with_unmodelled_fields(pods)
    lines = []
    if HOST_PORTS in found:
        lines.append(
            "field Pod spec.containers[].ports[].hostPort not modelled: kube-scheduler's NodePorts filter keeps "
            f"pods asking for the same host port off one node; draopt places them as if they asked for none "
            f"({_first_and_more(found[HOST_PORTS])})"
        )
    if VOLUMES in found:
        lines.append(
            "field Pod spec.volumes[] (persistentVolumeClaim, ephemeral, csi) not modelled: kube-scheduler's volume "
            "filters (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits) are not checked; draopt "
            f"places the pods as if they had no such volume ({_first_and_more(found[VOLUMES])})"
        )
    return lines


def _asks_host_port(container) -> bool:
    extra = container.__pydantic_extra__
    ports = (extra.get("ports") if extra else None) or []
    return any(isinstance(p, dict) and p.get("hostPort") for p in ports)


def _first_and_more(keys: list[str]) -> str:
    return keys[0] + (f" and {len(keys) - 1} more" if len(keys) > 1 else "")


_SAID: set[str] = set()


def say_note(line: str) -> None:
    """A note (draopt.notes), once per run however many policies (or rounds) meet the same input."""
    if line not in _SAID:
        _SAID.add(line)
        note(line)


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
    lines = _fields_the_release_lacks(objects, features)
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


def _fields_the_release_lacks(objects: ObjectSet, features: Features) -> list[str]:
    """A line per field the input sets that the release's API does not have (1.35 and 1.36:
    derivedAttributes, compatibilityGroups): its API server drops it as unknown, and draopt reads
    the object without it (Features.has_derived_attributes, has_compatibility_groups)."""
    found: dict[str, list[str]] = {}
    if not features.has_derived_attributes:
        for c in list(objects.resource_claims) + list(objects.claim_templates):
            spec = c.spec if hasattr(c.spec, "devices") else c.spec.spec
            if any(
                f.derived_attributes
                for r in spec.devices.requests
                for f in ([r.exactly] if r.exactly is not None else []) + list(r.first_available)
            ):
                found.setdefault(f"{c.kind} spec.devices.requests[].derivedAttributes", []).append(c.ref)
    if not features.has_compatibility_groups:
        for sl in objects.resource_slices:
            if any(u.compatibility_groups for d in sl.spec.devices for u in d.consumes_counters):
                found.setdefault("ResourceSlice spec.devices[].consumesCounters[].compatibilityGroups", []).append(
                    sl.ref
                )
    return [
        f"field {name} dropped: Kubernetes {features.kubernetes_version} has no such field ({refs[0]}"
        f"{f' and {len(refs) - 1} more' if len(refs) > 1 else ''})"
        for name, refs in found.items()
    ]


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
