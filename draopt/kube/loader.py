"""Read Kubernetes objects from YAML/JSON files, `kind: List`s and stdin."""

from __future__ import annotations

import gc
import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, cast

import yaml
from pydantic import ValidationError

from draopt.kube import apply, batch_controllers, controllers, settle
from draopt.kube import fastyaml
from draopt.kube.groups import api_group, is_kubernetes_group, of_another_group
from draopt.kube.convert import SERVED_VERSIONS, ConversionError, schema_for, slice_layout_error, to_v1
from draopt.errors import InputError
from draopt import notes as say
from draopt.kube.models import (
    DeviceClass,
    DeviceTaintRule,
    Namespace,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from draopt.kube.models.base import TypedObject
from draopt.kube.object_set import ObjectSet
from draopt.kube.models.workload import CompositePodGroup, Workload
from draopt.kube.shared_attributes import share_attributes
from draopt.kube.strict import describe, unknown_fields

RESOURCE_GROUP = "resource.k8s.io"

# kind -> (model, accepted apiVersions)
KINDS: dict[str, tuple[type[TypedObject], tuple[str, ...]]] = {
    "DeviceClass": (DeviceClass, SERVED_VERSIONS["DeviceClass"]),
    "ResourceSlice": (ResourceSlice, SERVED_VERSIONS["ResourceSlice"]),
    "ResourceClaim": (ResourceClaim, SERVED_VERSIONS["ResourceClaim"]),
    "ResourceClaimTemplate": (ResourceClaimTemplate, SERVED_VERSIONS["ResourceClaimTemplate"]),
    "DeviceTaintRule": (DeviceTaintRule, SERVED_VERSIONS["DeviceTaintRule"]),
    "Node": (Node, ("v1",)),
    "Pod": (Pod, ("v1",)),
    "PodGroup": (PodGroup, ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3", "scheduling.k8s.io/v1alpha2")),
    "Workload": (Workload, ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3", "scheduling.k8s.io/v1alpha2")),
    # KEP-6012: alpha in 1.37, served as v1alpha3 only
    "CompositePodGroup": (CompositePodGroup, ("scheduling.k8s.io/v1alpha3",)),
    "Namespace": (Namespace, ("v1",)),
    "PriorityClass": (PriorityClass, ("scheduling.k8s.io/v1",)),
}


def _location(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def describe_validation_error(what: str, err: ValidationError) -> str:
    lines = []
    for e in err.errors()[:5]:
        lines.append(f"{what}: field {_location(e['loc']) or '(object)'}: {e['msg']}")
    more = len(err.errors()) - 5
    if more > 0:
        lines.append(f"{what}: ... and {more} more problems")
    return "\n".join(lines)


def _type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", bool: "a boolean", int: "an integer", float: "a number"}.get(
        type(value), type(value).__name__
    )


def parse_object(doc: Any, source: str, *, attributes: dict[Any, Any] | None = None) -> TypedObject:
    """Validate one document into its model; `source` names it in errors. `attributes`: the
    device attributes read so far in this read, shared (draopt.kube.shared_attributes)."""
    if not isinstance(doc, dict):
        raise InputError(f"{source}: expected a Kubernetes object (a mapping), got {type(doc).__name__}")
    kind = doc.get("kind")
    name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    what = f"{source}: {kind or '(no kind)'} {name or '(no name)'}"
    if not kind:
        raise InputError(f"{what}: field kind: missing")
    if not isinstance(kind, str):
        raise InputError(f"{source}: field kind: expected a string, got {_type_name(kind)}")
    if kind not in KINDS:
        raise InputError(f"{what}: field kind: unsupported kind {kind!r} (supported: {', '.join(KINDS)})")
    model, versions = KINDS[kind]
    api_version = doc.get("apiVersion")
    if api_version is None:
        raise InputError(f"{what}: field apiVersion: missing (accepted: {', '.join(versions)})")
    if api_version not in versions:
        raise InputError(
            f"{what}: field apiVersion: {api_version!r} is not served for {kind} (accepted: {', '.join(versions)})"
        )
    if not name:
        raise InputError(f"{what}: field metadata.name: missing")
    if kind == "ResourceSlice":
        doc = node_allocatable_136(doc, what)
    unknown = unknown_fields(doc, schema_for(model, api_version))  # strict decoding, as written
    try:
        v1 = to_v1(doc)  # older versions as v1
        if attributes is not None and kind == "ResourceSlice":
            v1 = share_attributes(v1, attributes)
        obj = model.model_validate(v1)
    except ConversionError as e:
        raise InputError(f"{what}: {e}") from None
    except ValidationError as e:
        raise InputError(describe_validation_error(what, e)) from None
    if unknown:  # kept (fields of newer versions survive), but said once per object
        say.warn(f"{obj.ref}: {describe(unknown)} ({source})")
    if isinstance(obj, ResourceSlice) and (problem := slice_layout_error(obj)):
        raise InputError(f"{what}: {problem}")
    return obj


MAPPINGS_136 = "nodeAllocatableResourceMappings"


def node_allocatable_136(doc: dict[str, Any], what: str) -> dict[str, Any]:
    """A ResourceSlice's devices with Kubernetes 1.36's ``nodeAllocatableResourceMappings``
    (``{resource: {capacityKey, allocationMultiplier}}``, DRANodeAllocatableResources alpha;
    1.37 renamed it ``nodeAllocatableResources`` with ``mapping``/``overhead`` parts) in the
    1.37 shape: the multiplier scales the consumed ``capacityKey`` when set, else each
    allocated device (default 1). Both names on one device: an error."""
    spec = doc.get("spec")
    devices = spec.get("devices") if isinstance(spec, dict) else None
    if not isinstance(devices, list) or not any(
        isinstance(d, dict) and (MAPPINGS_136 in d or isinstance(d.get("basic"), dict) and MAPPINGS_136 in d["basic"])
        for d in devices
    ):
        return doc
    out = []
    for i, d in enumerate(devices):
        inner = d.get("basic") if isinstance(d, dict) and isinstance(d.get("basic"), dict) else d
        if not isinstance(inner, dict) or MAPPINGS_136 not in inner:
            out.append(d)
            continue
        path = f"spec.devices[{i}]" + (".basic" if inner is not d else "")
        raw = inner[MAPPINGS_136]
        if "nodeAllocatableResources" in inner:
            raise InputError(
                f"{what}: field {path}.{MAPPINGS_136}: set together with nodeAllocatableResources "
                f"(its 1.37 name); give one"
            )
        if not isinstance(raw, dict):
            raise InputError(f"{what}: field {path}.{MAPPINGS_136}: expected a mapping, got {_type_name(raw)}")
        converted: dict[str, Any] = {}
        for resource, m in raw.items():
            if not isinstance(m, dict) or set(m) - {"capacityKey", "allocationMultiplier"}:
                raise InputError(
                    f"{what}: field {path}.{MAPPINGS_136}.{resource}: expected "
                    f"{{capacityKey, allocationMultiplier}}, got {m!r}"
                )
            mapping: dict[str, Any] = {}
            if m.get("capacityKey") is not None:
                mapping["capacityKey"] = m["capacityKey"]
                if m.get("allocationMultiplier") is not None:
                    mapping["capacityMultiplier"] = m["allocationMultiplier"]
            elif m.get("allocationMultiplier") is not None:
                mapping["deviceMultiplier"] = m["allocationMultiplier"]
            converted[resource] = {"mapping": mapping}
        new_inner = {k: v for k, v in inner.items() if k != MAPPINGS_136}
        new_inner["nodeAllocatableResources"] = converted
        out.append(dict(d, basic=new_inner) if inner is not d else new_inner)
    return dict(doc, spec=dict(cast(dict[str, Any], spec), devices=out))


def node_allocatable_as_136(doc: dict[str, Any]) -> dict[str, Any]:
    """A ResourceSlice (Kubernetes JSON, 1.37 shape) with each device's ``nodeAllocatableResources``
    written in 1.36's ``nodeAllocatableResourceMappings``, the inverse of
    :func:`node_allocatable_136`: a 1.36 API server knows only that field and drops the 1.37 one.
    1.36 has no overhead: a resource with an overhead only has no mapping there."""
    devices = (doc.get("spec") or {}).get("devices")
    if not isinstance(devices, list) or not any(
        isinstance(d, dict) and "nodeAllocatableResources" in d for d in devices
    ):
        return doc
    out = []
    for d in devices:
        resources = d.get("nodeAllocatableResources") if isinstance(d, dict) else None
        if resources is None:
            out.append(d)
            continue
        mappings: dict[str, Any] = {}
        for name, r in resources.items():
            m = r.get("mapping") if isinstance(r, dict) else None
            if m is None:
                continue
            key, multiplier = (
                m.get("capacityKey"),
                m.get("capacityMultiplier" if m.get("capacityKey") else "deviceMultiplier"),
            )
            mappings[name] = {
                k: v for k, v in (("capacityKey", key), ("allocationMultiplier", multiplier)) if v is not None
            }
        d = {k: v for k, v in d.items() if k != "nodeAllocatableResources"}
        if mappings:
            d[MAPPINGS_136] = mappings
        out.append(d)
    return dict(doc, spec=dict(doc["spec"], devices=out))


class _KubernetesYaml:
    """YAML read as Kubernetes reads it (YAML converted to JSON): timestamps and binary scalars stay
    the strings written, sets become mappings to null, and mapping keys that are numbers, booleans
    or null become strings."""

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep=deep)  # raises its error
        self.flatten_mapping(node)  # merge keys (<<)
        data = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, (list, dict, set, tuple)):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    "found a key that is not a string",
                    key_node.start_mark,
                )
            data[_key_text(key)] = self.construct_object(value_node, deep=deep)
        return data


class _YamlLoader(_KubernetesYaml, yaml.SafeLoader):
    """Pure Python: the reference reading, and the one whose error messages users get."""


# libyaml scans and parses in C (the same documents, about 3x faster); its error messages are
# worded differently, so a document it refuses is read again by _YamlLoader for the message.
_CYamlLoader: Any = type("_CYamlLoader", (_KubernetesYaml, yaml.CSafeLoader), {}) if yaml.__with_libyaml__ else None


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


def _number_or_base60_text(construct):
    """YAML 1.1's base-60 numbers (`10:20` = 620, `0000:19:00.0` = 1140.0) are text to Kubernetes:
    its go-yaml fork never read them (sigs.k8s.io/yaml goyaml.v3 README: "Does not support base-60
    floats"), so a PCI address kubectl writes plain stays the string written. Only they have a `:`."""

    def construct_number(loader, node):
        if ":" in node.value:
            return loader.construct_scalar(node)
        try:
            return construct(loader, node)
        except ValueError:
            # PyYAML's int resolver also matches tokens with no digits after the prefix (`0b_`,
            # `0x_`), then cannot convert them; go-yaml reads such a token as the string written.
            return loader.construct_scalar(node)

    return construct_number


# YAML 1.1's booleans as PyYAML reads them: yes/no/on/off/true/false in their three spellings.
# Kubernetes' go-yaml v2 (sigs.k8s.io/yaml YAMLToJSON, go.yaml.in/yaml/v2 resolve.go) also reads the
# one-letter y/Y/n/N as booleans; draopt keeps them strings, as PyYAML does (docs/inputs.md).
for _loader in filter(None, (_YamlLoader, _CYamlLoader)):
    _loader.add_constructor("tag:yaml.org,2002:int", _number_or_base60_text(yaml.SafeLoader.construct_yaml_int))
    _loader.add_constructor("tag:yaml.org,2002:float", _number_or_base60_text(yaml.SafeLoader.construct_yaml_float))
    _loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_scalar)
    _loader.add_constructor("tag:yaml.org,2002:binary", yaml.SafeLoader.construct_scalar)
    _loader.add_constructor("tag:yaml.org,2002:set", _loader.construct_yaml_map)


MAX_ALIAS_EXPANSION = 10  # expanded nodes per node written, beyond MIN_ALIAS_BUDGET
MIN_ALIAS_BUDGET = 100_000


def _check_aliasing(root: Any, source: str) -> None:
    """Refuse a YAML document whose aliases expand it far beyond its text ("billion laughs"), as
    the Kubernetes YAML decoder refuses excessive aliasing: nodes counted once as written and
    once per use."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in sizes:
            continue
        children = (
            [c for kv in node.value for c in kv]
            if isinstance(node, yaml.MappingNode)
            else list(node.value)
            if isinstance(node, yaml.SequenceNode)
            else []
        )
        if done:
            sizes[id(node)] = 1 + sum(sizes[id(c)] for c in children)
            open_nodes.discard(id(node))
            continue
        if id(node) in open_nodes:
            raise InputError(
                f"{source}: YAML document at line {root.start_mark.line + 1}: an alias refers to "
                f"a node that contains it (line {node.start_mark.line + 1}): not JSON"
            )
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    expanded = sizes[id(root)]
    if expanded > MIN_ALIAS_BUDGET + MAX_ALIAS_EXPANSION * len(sizes):
        line = root.start_mark.line + 1
        raise InputError(
            f"{source}: YAML document at line {line}: excessive aliasing ({len(sizes)} nodes "
            f"written expand to {expanded}): refused, as Kubernetes' YAML decoder does"
        )


def _documents(text: str, source: str) -> Iterable[Any]:
    """The documents of a JSON or YAML text. YAML: large texts through rapidyaml when that reads
    them exactly as PyYAML does (draopt.kube.fastyaml), else libyaml, else (and for every error
    message) PyYAML's pure Python reader."""
    stripped = text.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{source}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
        yield from (data if isinstance(data, list) else [data])
        return
    done, docs = fastyaml.load(text, min_chars=fastyaml.MIN_CHARS)
    if done:
        yield from (doc for doc in docs if doc is not None)
        return
    yielded = 0
    if _CYamlLoader is not None:
        try:
            for doc in _yaml_documents(_CYamlLoader, text, source):
                yielded += 1
                yield doc
            return
        except yaml.YAMLError:
            pass  # read again below, for PyYAML's own message
    try:
        for index, doc in enumerate(_yaml_documents(_YamlLoader, text, source)):
            if index >= yielded:
                yield doc
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise InputError(f"{source}: invalid YAML{where}: {problem}") from None


def _yaml_documents(loader_class: type, text: str, source: str) -> Iterable[Any]:
    loader = loader_class(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            _check_aliasing(node, source)
            doc = loader.construct_document(node)
            if doc is not None:
                yield doc
    finally:
        loader.dispose()


def _flatten(doc: Any, source: str) -> Iterable[tuple[Any, str]]:
    if (
        isinstance(doc, dict)
        and doc.get("kind") == "List"
        or isinstance(doc, dict)
        and str(doc.get("kind", "")).endswith("List")
        and "items" in doc
    ):
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError(f"{source}: {doc.get('kind')}: field items: expected a list")
        for i, item in enumerate(items):
            yield from _flatten(item, f"{source} items[{i}]")
    else:
        yield doc, source


def _route(doc: Any, source: str, objects: ObjectSet, attributes: dict[Any, Any] | None = None) -> None:
    """A document into `objects`: a modelled kind is parsed, a workload controller kept for
    `finish`, any other kind counted as skipped."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if kind is not None and not isinstance(kind, str):
        meta = doc.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        raise InputError(
            f"{source}: (no kind) {name if isinstance(name, str) and name else '(no name)'}: "
            f"field kind: expected a string, got {_type_name(kind)}"
        )
    doc = _generated_name(doc, source)
    if isinstance(kind, str) and kind and (kind not in KINDS or custom_resource_group(doc) is not None):
        if custom_resource_group(doc) is not None:  # another group's kind of the same name
            _skip(objects, kind, doc.get("apiVersion"))
        elif kind in controllers.CONTROLLER_KINDS:
            controllers.check_api_version(doc, source)
            objects.controllers.append((doc, source))
        elif kind in batch_controllers.BATCH_KINDS:
            batch_controllers.check_api_version(doc, source)
            objects.controllers.append((doc, source))
        elif kind in batch_controllers.RUNTIME_KINDS:
            batch_controllers.check_api_version(doc, source)
            objects.runtimes.append((doc, source))
        else:
            if kind in KEPT_RAW:  # not modelled, but a study reads it (plan --consolidate: PDBs)
                objects.extra.setdefault(kind, []).append(doc)
            _skip(objects, kind, doc.get("apiVersion"))
        return
    objects.add(parse_object(doc, source, attributes=attributes))


# Kinds draopt does not model whose documents are kept as read (ObjectSet.extra[kind]) for the
# studies that read them: PodDisruptionBudgets for `plan --consolidate` (draopt.studies.consolidate_rules).
KEPT_RAW = ("PodDisruptionBudget",)


def served_versions(kind: str) -> tuple[str, ...] | None:
    """The apiVersions draopt reads `kind` in (objects, workload controllers, training runtimes);
    None for a kind it does not read."""
    if kind in KINDS:
        return KINDS[kind][1]
    return (
        controllers.CONTROLLER_KINDS.get(kind)
        or batch_controllers.BATCH_KINDS.get(kind)
        or batch_controllers.RUNTIME_KINDS.get(kind)
    )


def custom_resource_group(doc: Any) -> str | None:
    """The group of a document whose kind draopt reads but whose apiVersion is a custom resource's
    group (Kueue's kueue.x-k8s.io Workload): another object, not read; else None."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    versions = served_versions(kind) if isinstance(kind, str) else None
    return None if versions is None else of_another_group(doc.get("apiVersion"), versions)


def _skip(objects: ObjectSet, kind: str, api_version: Any) -> None:
    key = (kind, api_group(api_version) or "")
    objects.skipped[key] = objects.skipped.get(key, 0) + 1


def _generated_name(doc: Any, source: str) -> Any:
    """`metadata.generateName` without a name (a manifest for `kubectl create`): the name the API
    server would give, with a stable suffix from where the document came (see draopt.kube.controllers)."""
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    if (
        not isinstance(meta, dict)
        or meta.get("name")
        or not isinstance(meta.get("generateName"), str)
        or not meta["generateName"]
    ):
        return doc
    name = controllers.generate_name(meta["generateName"], str(meta.get("namespace") or "default"), source, 0)
    return dict(doc, metadata=dict(meta, name=name))


# Workload kinds of batch frameworks whose controllers create pods draopt does not make (Kubeflow
# training-operator, KubeRay; MPIJob, PyTorchJob and TrainJob are made: draopt.kube.batch_controllers).
POD_CREATING_KINDS = frozenset({"TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "RayCluster", "RayJob", "RayService"})
# The same, for kinds whose name is also a Kubernetes kind: (kind, API group).
POD_CREATING_CUSTOM_KINDS = frozenset({("Job", "batch.volcano.sh")})

# Kinds that would change a placement but that draopt does not read: said as such, not as unused.
NOT_MODELLED_KINDS = {
    "PodDisruptionBudget": (
        "not modelled: preemption counts every victim as violating no PodDisruptionBudget "
        "(kube-scheduler's DefaultPreemption reprieves PDB-violating victims first and prefers the "
        "candidate node with the fewest violations: pkg/scheduler/framework/plugins/defaultpreemption/"
        "default_preemption.go SelectVictimsOnNode), so the victims draopt chooses may differ "
        "(`plan --consolidate` reads them: its moves keep each budget)"
    ),
}


def _note(line: str, stream: Any) -> None:
    """A note on `stream` when the caller gave one, else said (draopt.notes: stderr from the
    command line, a DraoptNote warning from the Python API)."""
    if stream is not None:
        print(f"note: {line}", file=stream)
    else:
        say.note(line)


def finish(objects: ObjectSet, *, strict: bool = False, notes: Any = None) -> ObjectSet:
    """After every input is read: skipped kinds reported (one note per kind on `notes`, default
    draopt.notes; errors with `strict`), controllers expanded into the Pods they would create."""
    if objects.skipped:
        lines = [f"skipped {n} {label} object(s): {why}" for label, n, why in _skipped_kinds(objects.skipped)]
        if strict:
            raise InputError("; ".join(lines) + " (--strict)")
        for line in lines:
            _note(line, notes)
        objects.skipped = {}
    if objects.controllers:
        groups = {f"{g.namespace}/{g.name}" for g in objects.pod_groups}
        objects.deleted_by_controllers = controllers.deleted_by_suspended_jobs(objects.controllers, objects.pods)
        leaving = {d.pod for d in settle.departures_of(objects)}
        created = batch_controllers.expand(
            objects.controllers, [_controller_view(p) for p in objects.pods], objects.nodes, objects.runtimes, groups
        )
        said = list(created.notes)
        if leaving:  # the settled clock: the controllers see the departing pods gone
            staying = [_controller_view(p) for p in objects.pods if f"{p.namespace}/{p.name}" not in leaving]
            later = batch_controllers.expand(objects.controllers, staying, objects.nodes, objects.runtimes, groups)
            said += [line for line in later.notes if line not in said]
            objects.settled = settle.SettledPods(_created_pods(later, read=True), later.order, set(created.order))
        for doc, where in created.groups:  # gangs of batch jobs (before their pods)
            group = parse_object(doc, where)
            objects.add(group)
            objects.simulated_groups.add(f"{group.namespace}/{group.name}")
        for pod in _created_pods(created):
            objects.add(pod)
        objects.creation_order.update(created.order)
        objects.selector_owners += [d for d, _ in objects.controllers if d.get("kind") in _SELECTOR_OWNERS]
        objects.controllers = []
        for line in said:
            _note(line, notes)
    return objects


def _created_pods(created: Any, read: bool = False) -> list[Pod]:
    """The pods a controller expansion made, read as input pods are; `read`: their templates were
    read (and warned about) by an expansion before."""
    out = []
    for i, (doc, where) in enumerate(created.pods):
        if read or i in created.repeats:  # its template was read (and warned about) for an earlier pod
            out.append(Pod.model_validate(doc))
        else:
            out.append(cast(Pod, parse_object(doc, where)))
    return out


def _skipped_kinds(skipped: dict[tuple[str, str], int]) -> list[tuple[str, int, str]]:
    """(label, count, why) per skipped kind, in label order. A custom resource's kind is labelled
    with its group where the kind alone is ambiguous: a kind draopt reads in another group
    (Workload (kueue.x-k8s.io)), or one given in several groups."""
    groups: dict[str, int] = {}
    for kind, _ in skipped:
        groups[kind] = groups.get(kind, 0) + 1
    out: dict[tuple[str, str], int] = {}  # (label, why) -> count: a kind in two Kubernetes groups is one
    for (kind, group), n in skipped.items():
        custom = not is_kubernetes_group(group)
        label = f"{kind} ({group})" if custom and (served_versions(kind) or groups[kind] > 1) else kind
        if kind in POD_CREATING_KINDS or (kind, group) in POD_CREATING_CUSTOM_KINDS:
            why = (
                "creates pods that draopt does not model (give the pods it creates, e.g. from kubectl get pods -o yaml)"
            )
        else:
            why = (None if custom else NOT_MODELLED_KINDS.get(kind)) or "not used for placement"
        out[label, why] = out.get((label, why), 0) + n
    return sorted((label, n, why) for (label, why), n in out.items())


_SELECTOR_OWNERS = frozenset(("ReplicaSet", "StatefulSet", "ReplicationController"))


@contextmanager
def _collector_paused():
    """Reading builds millions of containers and frees almost none: Python's cycle collector,
    run every 700 allocations over the young ones and often over everything alive, would take
    most of the time (a 5,000-pod dump: 4x the reading itself). Paused while reading; what was
    read then goes straight to the oldest generation (freeze + unfreeze moves every tracked
    object there without looking at it) instead of being traversed once per generation."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:  # (unfreeze would also release what a caller froze)
            gc.freeze()
            gc.unfreeze()
        gc.enable()


def _controller_view(pod: Pod) -> dict[str, Any]:
    """What draopt.kube.controllers reads of a pod already in the input (name, namespace, labels,
    annotations, ownerReferences, deletionTimestamp, spec.nodeName, spec.affinity, status.phase), as `to_k8s`
    writes it, without writing out the whole pod."""
    meta = pod.metadata
    view_meta: dict[str, Any] = {"name": meta.name}
    if meta.namespace is not None:
        view_meta["namespace"] = meta.namespace
    extra = meta.model_extra or {}
    for key, value in (
        ("labels", meta.labels),
        ("annotations", meta.annotations),
        ("ownerReferences", extra.get("ownerReferences")),
        ("deletionTimestamp", extra.get("deletionTimestamp")),
    ):
        if value:
            view_meta[key] = value
    spec: dict[str, Any] = {}
    if pod.spec.node_name is not None:
        spec["nodeName"] = pod.spec.node_name
    if pod.spec.affinity is not None:
        spec["affinity"] = pod.spec.affinity.to_k8s()
    return {
        "metadata": view_meta,
        "spec": spec,
        "status": {"phase": pod.status.phase} if pod.status.phase is not None else {},
    }


def load_text(
    text: str, source: str = "<input>", *, strict: bool = False, notes: Any = None, _finish: bool = True
) -> ObjectSet:
    objects = ObjectSet()
    attributes: dict[Any, Any] = {}  # device attributes read, shared within this text
    with _collector_paused():
        for index, doc in enumerate(_documents(text, source)):
            for item, where in _flatten(doc, f"{source} document {index + 1}"):
                _route(item, where, objects, attributes)
        return finish(objects, strict=strict, notes=notes) if _finish else objects


def read_source(path: str) -> tuple[str, str]:
    """(text, source name) of a file; `-` reads stdin. Errors name the file."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(encoding="utf-8"), path
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a YAML or JSON file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None


FILE_EXTENSIONS = (".json", ".yaml", ".yml")  # kubectl's, for files found in a directory


def expand_paths(paths: Iterable[str], recursive: bool = False) -> list[str]:
    """Files to read: a directory gives its .json/.yaml/.yml files sorted by name, as `kubectl -f
    DIR` does (with `recursive`, those of its subdirectories too, walked in name order, each
    directory once even through symbolic links); files and `-` are kept as given."""
    out: list[str] = []
    seen: set[Path] = set()

    def walk(path: str, top: bool) -> None:
        p = Path(path)
        if top and (path == "-" or not p.is_dir()):
            out.append(path)
            return
        real = p.resolve()
        if real in seen:
            return
        seen.add(real)
        try:
            entries = sorted(p.iterdir(), key=lambda e: e.name)
        except OSError as e:
            raise InputError(f"{path}: cannot read the directory: {e.strerror}") from None
        for entry in entries:
            if entry.is_dir():
                if recursive:
                    walk(str(entry), False)
            elif entry.suffix in FILE_EXTENSIONS:
                out.append(str(entry))

    for path in paths:
        seen.clear()  # per -f argument: a directory given twice is read twice, as kubectl does
        walk(path, True)
    return out


def raw_documents(paths: Iterable[str], recursive: bool = False) -> list[tuple[Any, str]]:
    """Every document of the files, Lists flattened, unvalidated, each with where it came from."""
    out: list[tuple[Any, str]] = []
    with _collector_paused():
        for path in expand_paths(paths, recursive):
            text, source = read_source(path)
            for index, doc in enumerate(_documents(text, source)):
                out.extend(_flatten(doc, f"{source} document {index + 1}"))
    return out


def refuse_unused_kinds(paths: Iterable[str], recursive: bool = False) -> None:
    """--strict where the files are not read here at once (`validate`, `taint-impact`, `sweep`'s
    clusters): a kind draopt does not use is an error, as `load_files(strict=True)` makes it."""
    made = {**controllers.CONTROLLER_KINDS, **batch_controllers.BATCH_KINDS, **batch_controllers.RUNTIME_KINDS}
    unused: dict[str, int] = {}
    for doc, _source in raw_documents(paths, recursive):
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if isinstance(kind, str) and kind not in made and (kind not in KINDS or custom_resource_group(doc) is not None):
            unused[kind] = unused.get(kind, 0) + 1
    if unused:
        kinds = "; ".join(f"{n} {kind} object(s)" for kind, n in sorted(unused.items()))
        raise InputError(f"not used for placement: {kinds} (--strict)")


def load_files(paths: Iterable[str], *, recursive: bool = False, strict: bool = False, notes: Any = None) -> ObjectSet:
    """Load files in order; `-` reads stdin; a directory gives its .json/.yaml/.yml files (see
    :func:`expand_paths`). Kinds draopt does not use are skipped with a note on `notes` (default
    draopt.notes: stderr from the command line, a DraoptNote from the API), an error with
    `strict`; workload controllers become their Pods. An object that a later file gives again is applied over the earlier one as `kubectl apply` does
    (draopt.kube.apply), with a note naming both files."""
    objects = ObjectSet()
    seen: dict[str, tuple[str, int, str]] = {}  # ref -> (list, position, file) of the last one read
    with _collector_paused():
        for path in expand_paths(paths, recursive):
            text, source = read_source(path)
            part = load_text(text, source, _finish=False)
            for line in _apply_repeats(objects, part, source, seen):
                _note(line, notes)
            objects.extend(part)
        return finish(objects, strict=strict, notes=notes)


def _controller_ref(doc: dict[str, Any]) -> str:
    return f"{doc.get('kind')} {controllers._ns(doc)}/{controllers._name(doc)}"


def _apply_repeats(
    objects: ObjectSet, part: ObjectSet, source: str, seen: dict[str, tuple[str, int, str]]
) -> list[str]:
    """Objects of `part` (the file `source`) that an earlier file gave: applied over the earlier
    ones in `objects` as `kubectl apply` applies them (draopt.kube.apply) and left out of `part`;
    `seen` is updated with `part`'s other objects. Returns the notes, naming the file that won.
    (Repeats within one file are left to the checks that refuse them.)"""
    out: list[str] = []

    def said(ref: str, earlier: str, refused: bool = False, same: bool = False) -> None:
        if same:
            out.append(f"{ref}: given in {earlier} and again, unchanged, in {source}")
        elif refused:
            out.append(
                f"{ref}: given in {earlier} and again in {source}: the API server refuses the "
                f"second (pod updates may not change fields other than container images, "
                f"activeDeadlineSeconds, terminationGracePeriodSeconds and added tolerations): "
                f"{earlier}'s is kept"
            )
        else:
            out.append(
                f"{ref}: given in {earlier} and again in {source}: {source}'s is applied over it, "
                f"as kubectl apply -f {earlier} -f {source} does"
            )

    base = {attr: len(getattr(objects, attr)) for attr in ObjectSet._BY_KIND.values()}
    for attr in ObjectSet._BY_KIND.values():
        kept: list[Any] = []
        for obj in getattr(part, attr):
            hit = seen.get(obj.ref)
            if hit is None or hit[0] != attr or hit[2] == source:
                seen[obj.ref] = (attr, base[attr] + len(kept), source)
                kept.append(obj)
                continue
            _, position, earlier = hit
            live = getattr(objects, attr)[position].to_k8s()
            merged = apply.apply_over(live, obj.to_k8s())
            if obj.kind == "Pod" and apply.pod_update_refused(live, merged):
                said(obj.ref, earlier, refused=True)
                continue
            if merged != live:
                getattr(objects, attr)[position] = parse_object(merged, f"{source} (applied over {earlier})")
            said(obj.ref, earlier, same=merged == live)
        setattr(part, attr, kept)
    kept_controllers: list[tuple[dict[str, Any], str]] = []
    for doc, where in part.controllers:
        ref = _controller_ref(doc)
        hit = seen.get(ref)
        if hit is None or hit[0] != "controllers" or hit[2] == source:
            seen[ref] = ("controllers", len(objects.controllers) + len(kept_controllers), source)
            kept_controllers.append((doc, where))
            continue
        _, position, earlier = hit
        live_doc, _ = objects.controllers[position]
        merged_doc = apply.apply_over(live_doc, doc)
        if merged_doc != live_doc:
            objects.controllers[position] = (merged_doc, f"{where} (applied over {earlier})")
        said(ref, earlier, same=merged_doc == live_doc)
    part.controllers = kept_controllers
    return out


def dump_objects(objs: list[dict[str, Any]], fmt: str) -> str:
    doc = {"apiVersion": "v1", "kind": "List", "items": objs}
    if fmt == "json":
        return json.dumps(doc, indent=2) + "\n"
    return yaml.safe_dump(doc, sort_keys=False)
