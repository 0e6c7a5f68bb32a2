"""The forecast of `place --expect FORECAST`: the workload expected after today's pending pods.

A forecast is an openb trace CSV (`name, cpu_milli, memory_mib, num_gpu, gpu_milli[, gpu_spec]`,
one pod per row, as `draopt trace import --pods` reads it: draopt.studies.trace) or manifests
(Pods and the workload controllers draopt expands: Deployments, Jobs, JobSets, ...; the counts are
their replicas and parallelism), with the ResourceClaimTemplates, PodGroups and PriorityClasses
they name. Its pods are all pending (a forecast is not running); they are renamed `forecast-NAME`
so that they never meet today's pods, and shapes that fit no node even on an empty cluster are left
out with a note (`shapes_that_fit`).
"""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from typing import Any, Iterable, cast

from draopt.errors import InputError
from draopt.kube.loader import ObjectSet, load_files, parse_object, raw_documents
from draopt.kube.models import Pod

PREFIX = "forecast-"
# What a forecast may hold besides the workload controllers: the objects its pods name.
_SUPPORT_KINDS = (
    "Pod",
    "ResourceClaimTemplate",
    "ResourceClaim",
    "PodGroup",
    "Workload",
    "CompositePodGroup",
    "PriorityClass",
    "Namespace",
    "DeviceClass",
)
# Fields that differ between the pods of one controller but not their needs (the shape's key).
_NOT_SHAPE = ("hostname", "subdomain", "nodeName", "priority", "priorityClassName")


def read_forecast(paths: str | Iterable[str]) -> ObjectSet:
    """The forecast's objects, its pods pending and renamed. A path ending in `.csv` is a trace;
    anything else is read as manifests. Bad input raises InputError naming the file, the object
    and the field."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    if not paths:
        raise InputError("--expect: no forecast file given")
    out = ObjectSet()
    for path in paths:
        if not isinstance(path, str):
            raise InputError(f"--expect: expected a file path, got {type(path).__name__}")
        try:
            out.extend(_trace_objects(path) if path.lower().endswith(".csv") else _manifest_objects(path))
        except InputError as e:  # (the loader's own messages: said to be about the forecast)
            if str(e).startswith("--expect"):
                raise
            raise InputError(f"--expect {e}") from None
    if not out.pods:
        raise InputError(f"--expect {', '.join(paths)}: no Pod and no workload controller: nothing is expected")
    return _as_forecast(out)


def _trace_objects(path: str) -> ObjectSet:
    from draopt.studies.trace import read_tasks, workload_objects

    tasks = read_tasks(path, what="--expect")
    objects = ObjectSet()
    for i, doc in enumerate(workload_objects(tasks)):
        objects.add(parse_object(doc, f"--expect {path} object {i + 1}"))
    return objects


def _manifest_objects(path: str) -> ObjectSet:
    """Manifests, refused before loading when a document is not a workload (a Node or a
    ResourceSlice is today's cluster, not a forecast)."""
    from draopt.kube import batch_controllers, controller_docs

    workloads = {**controller_docs.CONTROLLER_KINDS, **batch_controllers.BATCH_KINDS, **batch_controllers.RUNTIME_KINDS}
    stdin = sys.stdin.read() if path == "-" else ""  # read twice: here, then by the loader
    sys.stdin = io.StringIO(stdin)
    for doc, source in raw_documents([path]):
        if not isinstance(doc, dict):
            raise InputError(f"--expect {source}: expected an object (a mapping), got {type(doc).__name__}")
        kind = doc.get("kind")
        if not isinstance(kind, str) or not kind:
            raise InputError(f"--expect {source}: field kind: missing (a forecast holds Pods and workload controllers)")
        if kind not in workloads and kind not in _SUPPORT_KINDS:
            meta = doc.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            name = "/".join(str(x) for x in (meta.get("namespace"), meta.get("name")) if x) or "(no name)"
            raise InputError(
                f"--expect {source}: {kind} {name}: field kind: {kind!r} is not a workload "
                f"(a forecast holds Pods, workload controllers ({', '.join(sorted(workloads))}) "
                f"and the {', '.join(_SUPPORT_KINDS[1:])} they name)"
            )
    sys.stdin = io.StringIO(stdin)
    return load_files([path], strict=True)


def _as_forecast(objects: ObjectSet) -> ObjectSet:
    """Every pod pending (no nodeName, no status) and named `forecast-NAME`; the queue order of
    controllers' pods follows the renaming."""
    renamed = {}
    pods = []
    for pod in objects.pods:
        doc = pod.to_k8s()
        doc.get("spec", {}).pop("nodeName", None)
        doc.pop("status", None)
        doc["metadata"]["name"] = PREFIX + doc["metadata"]["name"]
        doc["metadata"].pop("uid", None)
        new = cast(Pod, parse_object(doc, f"forecast pod {pod.namespace}/{pod.name}"))
        renamed[f"{pod.namespace}/{pod.name}"] = f"{new.namespace}/{new.name}"
        pods.append(new)
    order = {renamed.get(k, k): v for k, v in objects.creation_order.items()}
    return dataclasses.replace(objects, pods=pods, creation_order=order)


def shape_key(pod) -> str:
    """The pod's needs as text: pods of one shape need the same of a node."""
    spec = dict(pod.to_k8s().get("spec") or {})
    for name in _NOT_SHAPE:
        spec.pop(name, None)
    spec["containers"] = [{k: v for k, v in c.items() if k != "env"} for c in spec.get("containers") or []]
    return json.dumps(spec, sort_keys=True)


@dataclasses.dataclass
class LeftOut:
    """A forecast shape that fits no node, even on an empty cluster."""

    example: str  # the first forecast pod of the shape (its name as given)
    pods: int
    why: str  # the first node's reason

    def note(self) -> str:
        more = f" and {self.pods - 1} more of its shape" if self.pods > 1 else ""
        return (
            f"--expect: forecast pod {self.example}{more} fits no node of the cluster, even with every node "
            f"empty ({self.why}): left out of the forecast"
        )

    def to_json(self) -> dict[str, Any]:
        return {"example": self.example, "pods": self.pods, "why": self.why}


def given_name(key: str) -> str:
    """A forecast pod's key as the forecast named it (without the `forecast-` prefix)."""
    namespace, name = key.split("/", 1)
    return f"{namespace}/{name[len(PREFIX) :]}" if name.startswith(PREFIX) else key


def shapes_that_fit(objects: ObjectSet, forecast: ObjectSet, features) -> tuple[ObjectSet, list[LeftOut]]:
    """The forecast without the shapes that fit no node of `objects` with every node empty (no pod
    running, no claim allocated), and those shapes. One pod per shape is tried on each node with
    the scheduler's own filter and the device allocator, up to the first node that takes it."""
    from draopt.cluster.firstfit import ClaimBook
    from draopt.kube.workload import expand
    from draopt.placement import build_cluster
    from draopt.studies.forecast_merge import with_forecast

    by_shape: dict[str, list] = {}
    for pod in forecast.pods:
        by_shape.setdefault(shape_key(pod), []).append(pod)
    firsts = {f"{pods[0].namespace}/{pods[0].name}": key for key, pods in by_shape.items()}
    unallocated = [c for c in objects.resource_claims if c.status is None or c.status.allocation is None]
    empty = dataclasses.replace(objects, pods=[], resource_claims=unallocated, controllers=[], creation_order={})
    tried = with_forecast(empty, dataclasses.replace(forecast, pods=[p[0] for p in by_shape.values()]))
    workload = expand(tried, features)
    cluster = build_cluster(tried, workload, features)
    book = ClaimBook(cluster, workload.claims)
    left: list[LeftOut] = []
    unfit: set[str] = set()
    for demand in workload.pending:
        if demand.key not in firsts:
            continue
        why = _nowhere(cluster, book, demand)
        if why is not None:
            shape = firsts[demand.key]
            unfit.add(shape)
            left.append(LeftOut(given_name(demand.key), len(by_shape[shape]), why))
    kept = [pod for key, pods in by_shape.items() if key not in unfit for pod in pods]
    order = {id(p): i for i, p in enumerate(forecast.pods)}
    kept.sort(key=lambda p: order[id(p)])
    return dataclasses.replace(forecast, pods=kept), left


def _nowhere(cluster, book, demand) -> str | None:
    """None when some node takes the pod (the scheduler's filters and the device allocator, on the
    cluster as it stands); else the first node's reason."""
    from draopt.cluster.firstfit import filter_reason

    first = None
    for node in cluster.nodes:
        reason = filter_reason(cluster, book, demand, node)
        if reason is None:
            return None
        first = first or f"node {node.name}: {reason}"
    return first or "no node in the input"
