"""GPU cluster traces as Kubernetes DRA objects: `draopt trace import`.

The openb trace (Alibaba, 2023; Weng et al., "Beware of Fragmentation", USENIX ATC '23) lists
nodes (`sn, cpu_milli, memory_mib, gpu, model`) and tasks (`name, cpu_milli, memory_mib, num_gpu,
gpu_milli, gpu_spec, ..., creation_time, ...`). They become:

* one Node per node row: `status.allocatable` cpu and memory from the row, the GPU model and count
  as labels (`gpu.example.com/model`, `gpu.example.com/count`), no pod limit (the trace has none);
* one ResourceSlice per GPU node (pool = node name) publishing its GPUs `gpu-0` ... `gpu-N-1`,
  each with a `model` and an `index` attribute, shared as DRA consumable capacity:
  `allowMultipleAllocations: true` and a capacity `gpu.example.com/milli` of 1000 with a
  requestPolicy (default 1000: a request without an amount takes the whole GPU; 1 to 1000);
* DeviceClasses: `gpu.example.com` (every GPU) and one per model (`<model>.gpu.example.com`);
* one Pod per task (namespace `openb`), cpu/memory requests from the row, created at
  `creation_time` seconds after 2023-01-01T00:00:00Z (row order when the column is absent);
  a GPU task has one claim from a ResourceClaimTemplate shared by the tasks of its shape:
  `num_gpu` whole GPUs (each consuming the whole 1000), or `gpu_milli` of one shared GPU
  (a capacity request), restricted by a CEL selector on the model when `gpu_spec` is set.

The output is deterministic (same CSVs, same bytes) and reads back with every other command.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

import yaml

from draopt.errors import InputError

DRIVER = "gpu.example.com"
CAPACITY = f"{DRIVER}/milli"  # the consumable capacity of one GPU, in 1/1000 GPU
GPU_MILLI = 1000
NAMESPACE = "openb"
CLASS = DRIVER
MODEL_LABEL = f"{DRIVER}/model"
COUNT_LABEL = f"{DRIVER}/count"
EPOCH = datetime(2023, 1, 1, tzinfo=timezone.utc)
API = "resource.k8s.io/v1"

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
_MODEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,62})$")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


@dataclass(frozen=True)
class TraceNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True)
class Task:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int  # per GPU: 1000 for whole GPUs, less for a share of one GPU
    gpu_spec: tuple[str, ...] = ()
    creation_time: int | None = None

    @property
    def shared(self) -> bool:
        return self.num_gpu == 1 and self.gpu_milli < GPU_MILLI

    @property
    def gpu_request_milli(self) -> int:
        return self.num_gpu * self.gpu_milli


# ------------------------------------------------------------------ reading the CSVs
def _rows(path: str, required: tuple[str, ...], what: str) -> Iterable[tuple[int, dict[str, str]]]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{what} {path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise InputError(f"{what} {path}: not UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(
            f"{what} {path}: missing column(s) {', '.join(missing)} "
            f"(header: {','.join(header) or 'empty'}; needs {','.join(required)})"
        )
    for i, row in enumerate(reader, start=2):
        if None in row:
            raise InputError(f"{what} {path} line {i}: more fields than the header has")
        yield i, row


def _int(
    row: dict[str, str], col: str, where: str, *, low: int = 0, high: int | None = None, default: int | None = None
) -> int:
    raw = (row.get(col) or "").strip()
    if raw == "" and default is not None:
        return default
    try:
        value = int(raw)
    except ValueError:
        try:
            f = float(raw)
        except ValueError:
            raise InputError(f"{where}: column {col}: {raw!r} is not a number") from None
        if f != f or f in (float("inf"), float("-inf")) or f != int(f):
            raise InputError(f"{where}: column {col}: {raw!r} is not a whole number") from None
        value = int(f)
    if value < low or (high is not None and value > high):
        bound = f"{low} to {high}" if high is not None else f"at least {low}"
        raise InputError(f"{where}: column {col}: {value} is out of range ({bound})")
    return value


def _name(raw: str, where: str, col: str) -> str:
    name = raw.strip().lower()
    if not _NAME.match(name):
        raise InputError(
            f"{where}: column {col}: {raw!r} is not a valid Kubernetes object name "
            "(lowercase letters, digits, '-' and '.')"
        )
    return name


def _model(raw: str, where: str, col: str) -> str:
    model = raw.strip()
    if not _MODEL.match(model):
        raise InputError(f"{where}: column {col}: {raw!r} is not a GPU model name (letters, digits, '.', '_', '-')")
    return model


def read_nodes(path: str) -> list[TraceNode]:
    nodes: list[TraceNode] = []
    seen: set[str] = set()
    for line, row in _rows(path, NODE_COLUMNS, "--nodes"):
        where = f"--nodes {path} line {line}"
        name = _name(row["sn"], where, "sn")
        if name in seen:
            raise InputError(f"{where}: column sn: node {name!r} is listed twice")
        seen.add(name)
        gpus = _int(row, "gpu", where, high=128)
        model = (row.get("model") or "").strip()
        if gpus:
            model = _model(model, where, "model")
        nodes.append(
            TraceNode(
                name,
                _int(row, "cpu_milli", where, low=1),
                _int(row, "memory_mib", where, low=1),
                gpus,
                model if gpus else "",
            )
        )
    if not nodes:
        raise InputError(f"--nodes {path}: no node rows")
    return nodes


def read_tasks(path: str, *, what: str = "--pods") -> list[Task]:
    tasks: list[Task] = []
    seen: set[str] = set()
    for line, row in _rows(path, POD_COLUMNS, what):
        where = f"{what} {path} line {line}"
        name = _name(row["name"], where, "name")
        if name in seen:
            raise InputError(f"{where}: column name: task {name!r} is listed twice")
        seen.add(name)
        num = _int(row, "num_gpu", where, high=128)
        milli = _int(row, "gpu_milli", where, high=GPU_MILLI)
        if num == 0 and milli:
            raise InputError(f"{where}: column gpu_milli: {milli} without GPUs (num_gpu is 0)")
        if num and milli == 0:
            raise InputError(
                f"{where}: column gpu_milli: 0 for a task with num_gpu {num} "
                "(1000 = whole GPUs, less = a share of one GPU)"
            )
        if num > 1 and milli != GPU_MILLI:
            raise InputError(
                f"{where}: column gpu_milli: {milli} with num_gpu {num}: a task of several "
                "GPUs takes them whole (gpu_milli 1000)"
            )
        spec_raw = (row.get("gpu_spec") or "").strip()
        spec = tuple(sorted({_model(m, where, "gpu_spec") for m in spec_raw.split("|")})) if spec_raw else ()
        if spec and not num:
            raise InputError(f"{where}: column gpu_spec: {spec_raw!r} for a task without GPUs")
        created = _int(row, "creation_time", where, default=-1) if "creation_time" in row else None
        tasks.append(
            Task(
                name,
                _int(row, "cpu_milli", where),
                _int(row, "memory_mib", where),
                num,
                milli if num else 0,
                spec,
                None if created in (None, -1) else created,
            )
        )
    if not tasks:
        raise InputError(f"{what} {path}: no task rows")
    return tasks


# ------------------------------------------------------------------ objects
def _cpu(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _class_name(model: str) -> str:
    return f"{model.lower().replace('_', '-')}.{DRIVER}"


def node_objects(nodes: list[TraceNode]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in nodes:
        labels = {"kubernetes.io/hostname": n.name}
        if n.gpus:
            labels[MODEL_LABEL] = n.model
            labels[COUNT_LABEL] = str(n.gpus)
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": n.name, "labels": labels},
                "status": {
                    "allocatable": {"cpu": _cpu(n.cpu_milli), "memory": f"{n.memory_mib}Mi"},
                    "capacity": {"cpu": _cpu(n.cpu_milli), "memory": f"{n.memory_mib}Mi"},
                },
            }
        )
    return out


def slice_objects(nodes: list[TraceNode]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in nodes:
        if not n.gpus:
            continue
        devices = [
            {
                "name": f"gpu-{i}",
                "allowMultipleAllocations": True,
                "attributes": {"model": {"string": n.model}, "index": {"int": i}},
                "capacity": {
                    CAPACITY: {
                        "value": str(GPU_MILLI),
                        "requestPolicy": {"default": str(GPU_MILLI), "validRange": {"min": "1", "max": str(GPU_MILLI)}},
                    }
                },
            }
            for i in range(n.gpus)
        ]
        out.append(
            {
                "apiVersion": API,
                "kind": "ResourceSlice",
                "metadata": {"name": f"{n.name}-{DRIVER}"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": n.name,
                    "pool": {"name": n.name, "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    return out


def class_objects(models: Iterable[str]) -> list[dict[str, Any]]:
    out = [
        {
            "apiVersion": API,
            "kind": "DeviceClass",
            "metadata": {"name": CLASS},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    ]
    for m in sorted(set(models)):
        out.append(
            {
                "apiVersion": API,
                "kind": "DeviceClass",
                "metadata": {"name": _class_name(m)},
                "spec": {
                    "selectors": [
                        {
                            "cel": {
                                "expression": f'device.driver == "{DRIVER}" && '
                                f'device.attributes["{DRIVER}"].model == "{m}"'
                            }
                        }
                    ]
                },
            }
        )
    return out


def template_name(task: Task) -> str:
    base = f"gpu-{task.num_gpu}x{task.gpu_milli}"
    if task.gpu_spec:
        base += "-" + "-".join(_class_name(m).split(".")[0] for m in task.gpu_spec)
    return base


def template_object(task: Task) -> dict[str, Any]:
    exactly: dict[str, Any] = {
        "deviceClassName": CLASS,
        "count": task.num_gpu,
        "capacity": {"requests": {CAPACITY: str(task.gpu_milli)}},
    }
    if task.gpu_spec:
        models = ", ".join(f'"{m}"' for m in task.gpu_spec)
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model in [{models}]'}}]
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": template_name(task), "namespace": NAMESPACE},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    }


def _timestamp(seconds: int) -> str:
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_object(task: Task, index: int, *, priority: int | None = None) -> dict[str, Any]:
    created = task.creation_time if task.creation_time is not None else index
    container: dict[str, Any] = {
        "name": "main",
        "image": "openb-task",
        "resources": {"requests": {"cpu": _cpu(task.cpu_milli), "memory": f"{task.memory_mib}Mi"}},
    }
    spec: dict[str, Any] = {"containers": [container]}
    if task.num_gpu:
        container["resources"]["claims"] = [{"name": "gpu"}]
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template_name(task)}]
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": task.name, "namespace": NAMESPACE, "creationTimestamp": _timestamp(created)},
        "spec": spec,
    }


def workload_objects(tasks: list[Task], *, priority=None) -> list[dict[str, Any]]:
    """ResourceClaimTemplates (one per GPU shape, sorted by name) and the Pods, in input order.
    `priority`: a function Task -> pod priority (None: no priority field)."""
    templates = {template_name(t): template_object(t) for t in tasks if t.num_gpu}
    out = [templates[k] for k in sorted(templates)]
    out += [pod_object(t, i, priority=priority(t) if priority else None) for i, t in enumerate(tasks)]
    return out


def import_trace(nodes_csv: str | None, pods_csv: str | None) -> list[dict[str, Any]]:
    if not nodes_csv and not pods_csv:
        raise InputError("trace import: give --nodes CSV, --pods CSV or both")
    objs: list[dict[str, Any]] = []
    nodes = read_nodes(nodes_csv) if nodes_csv else []
    tasks = read_tasks(pods_csv) if pods_csv else []
    if nodes_csv:
        models = {n.model for n in nodes if n.gpus} | {m for t in tasks for m in t.gpu_spec}
        objs += class_objects(models)
        objs += node_objects(nodes)
        objs += slice_objects(nodes)
    objs += workload_objects(tasks)
    return objs


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]  # the C dumper when built
    pass


def dump_yaml(objs: list[dict[str, Any]]) -> str:
    """One document per object, keys in the order written: the same input gives the same bytes."""
    return yaml.dump_all(
        objs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, explicit_start=True, width=1000
    )


def register(sub) -> None:
    t = sub.add_parser("trace", help="GPU cluster traces (openb) as Kubernetes DRA objects")
    tsub = t.add_subparsers(dest="trace_command", required=True, parser_class=type(t))
    imp = tsub.add_parser(
        "import",
        help="openb node/pod CSVs -> Nodes, ResourceSlices, DeviceClasses, ResourceClaimTemplates and Pods (YAML)",
    )
    imp.add_argument("--nodes", metavar="CSV", help="node list: sn,cpu_milli,memory_mib,gpu,model")
    imp.add_argument(
        "--pods",
        metavar="CSV",
        help="task list: name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,creation_time,...]",
    )
    imp.add_argument("-o", "--output", metavar="FILE", default="-", help="output file ('-': stdout)")
    imp.set_defaults(func=cmd_trace_import)


def cmd_trace_import(args) -> int:
    import sys

    text = dump_yaml(import_trace(args.nodes, args.pods))
    if args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise InputError(f"-o {args.output}: cannot write: {e.strerror or e}") from None
    return 0


# ------------------------------------------------------------------ an independent check
def replay_errors(nodes: list[TraceNode], placements: Iterable[tuple[Task, str, list[int]]]) -> list[str]:
    """Placements of trace tasks (task, node name, GPU indices) replayed with the CSV's numbers
    alone, not draopt's objects or arrays: no node over its cpu or memory, each task on as many
    distinct GPUs as it asks, none over 1000 milli, whole GPUs unshared, the models of its
    gpu_spec. One message per violation; empty when the placements are valid."""
    by_name = {n.name: n for n in nodes}
    cpu: dict[str, int] = {}
    mem: dict[str, int] = {}
    shares: dict[tuple[str, int], list[int]] = {}
    errs = []
    for t, node_name, devs in placements:
        n = by_name.get(node_name)
        if n is None:
            errs.append(f"{t.name}: no node {node_name}")
            continue
        cpu[n.name] = cpu.get(n.name, 0) + t.cpu_milli
        mem[n.name] = mem.get(n.name, 0) + t.memory_mib
        if cpu[n.name] > n.cpu_milli or mem[n.name] > n.memory_mib:
            errs.append(f"{n.name}: over cpu or memory")
        if len(devs) != t.num_gpu or len(set(devs)) != len(devs):
            errs.append(f"{t.name} on {n.name}: {list(devs)} for {t.num_gpu} GPU(s)")
        if t.gpu_spec and n.model not in t.gpu_spec:
            errs.append(f"{t.name} on {n.name}: model {n.model} not in {t.gpu_spec}")
        for d in devs:
            if d >= n.gpus:
                errs.append(f"{n.name}: no GPU {d}")
            on = shares.setdefault((n.name, d), [])
            on.append(t.gpu_milli)
            if sum(on) > GPU_MILLI or (len(on) > 1 and GPU_MILLI in on):
                errs.append(f"{n.name} gpu-{d}: {on}")
    return errs
