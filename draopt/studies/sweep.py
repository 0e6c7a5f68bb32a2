"""Sweeps: one study over a grid of inputs, on a local process pool or on Dask, resumable.

A :class:`Grid` names the axes (clusters, traces, node counts, policies, seeds, inflation
levels) of a study, `simulate` (one policy, one seeded run of :mod:`draopt.studies.simulate`'s
inflation protocol, one level: exactly `draopt simulate --runs 1 --seed S --inflation L`) or
`place` (one policy on one cluster and workload, measured as `draopt compare` does). Each
point of the grid is a *scenario*: a flat dict of its inputs, the same on every machine.

:func:`run_sweep` runs the scenarios not already in the output Parquet file (same inputs, same
`key`), on a local process pool (default), in this process (`serial`), or on Dask (`dask`: a
local cluster, or the scheduler at `address`, or a `distributed.Client`), with a progress bar
(tqdm). The file is rewritten (atomically) as scenarios finish (at most once a second, and
when the sweep ends or fails), so an interrupted sweep loses at most the last second's rows. Each row holds the scenario's inputs, its results,
`elapsed_s` (wall time, the one column that differs between runs) and `key`.

:func:`sweep` is the generic form: `run(study)` for every study, in order.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from draopt.errors import InputError
from draopt.progress import LineProgress, Progress, wanted
from draopt.kube.features import add_version_flag
from draopt.kube.listflags import CommaList
from draopt.kube.optionfiles import check_writable, read_yaml_option
from draopt.provenance import Provenance, record

STUDIES = ("simulate", "place")
ENGINES = ("processes", "serial", "dask")
INPUTS = ("study", "cluster", "trace", "nodes", "policy", "seed", "inflation", "time_limit", "batch", "capacity")
# Inputs a scenario carries only when given (--feature-gates, --kubernetes-version): part of its key
# then, and absent otherwise, so that the rows of earlier sweeps keep their keys and resume.
GATE_INPUTS = ("feature_gates", "kubernetes_version")
_EXTRA = "pip install 'draopt[sweep]'"
WRITE_EVERY_S = 1.0


# ------------------------------------------------------------------ the generic runner
def _dask_client(address: str | None, workers: int | None, processes: bool = True):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise InputError(f"--engine dask: install the extra: {_EXTRA}") from None
    if address:
        try:
            return Client(address)
        except (OSError, ValueError, TypeError) as e:  # unreachable, or not an address
            raise InputError(f"--scheduler {address}: cannot connect to a Dask scheduler: {e}") from None
    import signal

    # The worker processes start with SIGINT ignored (an ignored signal stays ignored across their
    # exec, and Python then installs no KeyboardInterrupt handler): Ctrl-C is the parent's, which
    # closes the cluster; no worker prints a traceback.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        cluster = LocalCluster(
            n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=processes, dashboard_address=None
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    return Client(cluster)


def _guarded(run: Callable[[Any], Any], item: Any) -> tuple[bool, Any]:
    """run(item), an input error returned rather than raised: the caller raises it (exit 2),
    and Dask workers do not log it as a failed computation."""
    from draopt.errors import DraoptError

    try:
        return True, run(item)
    except DraoptError as e:
        return False, e


def ignore_sigint() -> None:
    """A worker process's initializer: Ctrl-C is for the parent, which stops the workers."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def quiet_distributed_logs() -> None:
    """Quiets Dask's own logging, in the parent and (client.run) in each worker, before the shutdown
    that Ctrl-C asked for: the errors it would log are ours."""
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL)


def _indexed(run: Callable[[Any], Any], pair: tuple[int, Any]) -> tuple[int, Any]:
    return pair[0], run(pair[1])


def _unwrap(got: tuple[bool, Any]) -> Any:
    ok, value = got
    if not ok:
        raise value
    return value


def _completed(
    items: list[Any],
    run: Callable[[Any], Any],
    *,
    engine: str,
    workers: int | None = None,
    address: str | None = None,
    client=None,
) -> Iterator[tuple[int, Any]]:
    """(index, run(item)) for every item, as they finish."""
    import functools

    if engine == "serial":
        for i, item in enumerate(items):
            yield i, run(item)
        return
    guarded = functools.partial(_guarded, run)
    if engine == "processes":
        import multiprocessing

        # spawn: the parent may hold solver threads, which fork would copy in an unknown state.
        # The workers ignore SIGINT: Ctrl-C (sent to the whole process group) is the parent's,
        # which stops them at once (Pool's exit terminates them) with no traceback from any worker.
        context = multiprocessing.get_context("spawn")
        with context.Pool(workers or os.cpu_count() or 1, initializer=ignore_sigint) as pool:
            indexed = functools.partial(_indexed, guarded)
            for i, got in pool.imap_unordered(indexed, enumerate(items)):
                yield i, _unwrap(got)
    elif engine == "dask":
        own = client is None
        if own:
            client = _dask_client(address, workers)
        try:
            yield from _dask_completed(client, guarded, items)
        except KeyboardInterrupt:
            if own:  # the workers closed by the scheduler, before it goes: no heartbeat left hanging
                quiet_distributed_logs()
                # A worker whose heartbeat meets the scheduler already gone logs it with a traceback,
                # in its own process: quieted there too, as the shutdown is ours.
                with contextlib.suppress(Exception):
                    client.run(quiet_distributed_logs)
                client.shutdown()
                own = False
            raise
        finally:
            if own:
                cluster = client.cluster
                client.close()
                if cluster is not None:
                    cluster.close()
    else:
        raise InputError(f"--engine: unknown engine {engine!r} (known: {', '.join(ENGINES)}, local)")


def _dask_completed(client, guarded: Callable[[Any], Any], items: list[Any]) -> Iterator[tuple[int, Any]]:
    """(index, result) as Dask finishes them. Ctrl-C is taken between polls (a flag, then a
    KeyboardInterrupt raised here): raised anywhere in the main thread, it would land inside
    Dask's own callbacks there and leave the client's threads hanging."""
    import signal
    import threading

    from dask.distributed import as_completed as dask_as_completed

    interrupted = threading.Event()
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, lambda *_: interrupted.set()) if main else None
    try:
        submitted = []
        for item in items:
            if interrupted.is_set():
                raise KeyboardInterrupt
            submitted.append(client.submit(guarded, item, pure=False))
        index = {f.key: i for i, f in enumerate(submitted)}
        waiting = dask_as_completed(submitted)
        while not waiting.is_empty():
            if interrupted.is_set():
                raise KeyboardInterrupt
            batch = waiting.next_batch(block=False)
            for f in batch:
                yield index[f.key], _unwrap(f.result())
            if not batch:
                time.sleep(0.05)
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


def sweep(
    studies: Iterable[Any],
    run: Callable[[Any], Any],
    *,
    engine: str = "local",
    address: str | None = None,
    workers: int | None = None,
    client=None,
) -> list[Any]:
    """`run(study)` for every study; results in the studies' order. engine "local" (or
    "serial") runs them here, one after the other; "processes" on a local process pool (`run`
    must be importable: a module-level function); "dask" hands them to Dask (a local cluster,
    the scheduler at `address`, or `client`)."""
    studies = list(studies)
    engine = "serial" if engine == "local" else engine
    out: list[Any] = [None] * len(studies)
    for i, got in _completed(studies, run, engine=engine, workers=workers, address=address, client=client):
        out[i] = got
    return out


# ------------------------------------------------------------------ grids of scenarios
@dataclass
class Grid:
    study: str = "simulate"
    clusters: list[list[str]] = field(default_factory=list)  # each: the files of one cluster
    traces: list[str] = field(default_factory=list)  # simulate: task pools; place: workload files
    nodes: list[int] = field(default_factory=lambda: [0])  # 0: every node
    policies: list[str] = field(default_factory=list)  # empty: first-node (simulate) or first-fit (place)
    seeds: list[int] = field(default_factory=lambda: [0])
    inflation: list[float] = field(default_factory=lambda: [1.0])
    time_limit: float = 60.0
    batch: int = 50
    capacity: str = "gpu.example.com/milli"
    feature_gates: str = ""  # --feature-gates text ("G=true,H=false"): on top of the release's defaults
    kubernetes_version: str = ""  # the release whose gates apply ("": draopt's default)

    def renamed_policies(self) -> list[str]:
        """The study's default policy when none is named; the simulate study's old policy names
        (simulate.DEPRECATED_POLICIES) replaced by their new ones: the deprecation notes, one per
        old name (a sweep's rows and keys carry the new name)."""
        from draopt.studies import simulate

        if not self.policies:
            self.policies = ["first-node" if self.study == "simulate" else "first-fit"]
        if self.study != "simulate":
            return []
        notes: list[str] = []
        renamed = [simulate.DEPRECATED_POLICIES.get(p, p) for p in self.policies]
        for old in dict.fromkeys(p for p in self.policies if p in simulate.DEPRECATED_POLICIES):
            notes.append(simulate.deprecated_policy_note(old))
        self.policies = list(dict.fromkeys(renamed))
        return notes

    def validate(self) -> None:
        import warnings

        from draopt.studies import simulate

        for note in self.renamed_policies():  # a caller of the API (the command line said it already)
            warnings.warn(note, FutureWarning, stacklevel=3)
        if self.study not in STUDIES:
            raise InputError(f"study: unknown study {self.study!r} (known: {', '.join(STUDIES)})")
        if not self.clusters:
            raise InputError("clusters: give at least one cluster (--cluster FILE[,FILE...])")
        if self.study == "simulate" and not self.traces:
            raise InputError("traces: the simulate study needs a task pool (--trace FILE)")
        for files in self.clusters + [[t] for t in self.traces]:
            for f in files:
                if not os.path.exists(f):
                    raise InputError(f"{f}: no such file")
        if not self.nodes or any(not isinstance(n, int) or isinstance(n, bool) or n < 0 for n in self.nodes):
            raise InputError(f"nodes: {self.nodes!r}: whole numbers of nodes, at least 1 (0: every node)")
        if not self.seeds or any(not isinstance(s, int) or isinstance(s, bool) for s in self.seeds):
            raise InputError(f"seeds: {self.seeds!r}: whole numbers")
        known = simulate.POLICIES + (simulate.OFFLINE,) if self.study == "simulate" else _place_policies()
        bad = [
            p
            for p in self.policies
            if p not in known
            and not (self.study == "place" and p.startswith("first-fit:") and len(p) > len("first-fit:"))
        ]
        if bad or not self.policies:
            raise InputError(
                f"policies: unknown policy {', '.join(map(repr, bad)) or '(none)'} for the "
                f"{self.study} study (known: {', '.join(known)})"
            )
        if not self.inflation or any(not isinstance(v, (int, float)) or not (0 < v <= 10) for v in self.inflation):
            raise InputError(f"inflation: {self.inflation!r}: levels more than 0 and at most 10")
        if not (
            isinstance(self.time_limit, (int, float))
            and not isinstance(self.time_limit, bool)
            and self.time_limit > 0
            and math.isfinite(self.time_limit)
        ):
            raise InputError(f"time_limit: {self.time_limit!r}: a number of seconds more than 0")
        if not isinstance(self.batch, int) or isinstance(self.batch, bool) or self.batch < 1:
            raise InputError(f"batch: {self.batch!r}: a whole number, at least 1")
        self.features()  # unknown gates and releases: refused before any scenario runs

    def features(self):
        """The Features every scenario reads its cluster with."""
        from draopt.kube.features import features_from_flags

        return features_from_flags(str(self.feature_gates or ""), str(self.kubernetes_version or "") or None)

    def scenarios(self) -> list[dict[str, Any]]:
        """Every point of the grid, in a fixed order (cluster, trace, nodes, policy, seed, level)."""
        self.validate()
        simulate = self.study == "simulate"
        out = []
        for cluster in self.clusters:
            for trace in self.traces or [""]:
                for nodes in self.nodes:
                    for policy in self.policies:
                        for seed in self.seeds if simulate else [None]:
                            for level in self.inflation if simulate else [None]:
                                out.append(
                                    {
                                        "study": self.study,
                                        "cluster": ",".join(cluster),
                                        "trace": trace,
                                        "nodes": nodes,
                                        "policy": policy,
                                        "seed": seed,
                                        "inflation": None if level is None else float(level),
                                        "time_limit": float(self.time_limit),
                                        "batch": self.batch,
                                        "capacity": self.capacity,
                                    }
                                    | self._gate_inputs()
                                )
        return out

    def _gate_inputs(self) -> dict[str, str]:
        given = {
            "feature_gates": str(self.feature_gates or ""),
            "kubernetes_version": str(self.kubernetes_version or ""),
        }
        return {k: v for k, v in given.items() if v}


def _scenario_features(s: dict[str, Any]):
    from draopt.kube.features import features_from_flags

    return features_from_flags(s.get("feature_gates") or "", s.get("kubernetes_version") or None)


def _place_policies() -> tuple[str, ...]:
    from draopt.placement import PLACE_POLICIES

    return PLACE_POLICIES + ("first-fit:CONFIG",)


def scenario_key(s: dict[str, Any]) -> str:
    gates = {k: s[k] for k in GATE_INPUTS if s.get(k)}
    return json.dumps({k: s.get(k) for k in INPUTS} | gates, sort_keys=True)


def load_grid(path: str) -> Grid:
    """A grid from YAML: the keys of :class:`Grid` (clusters: a file, or a list of files per cluster;
    inflation: a list or START:STOP:STEP; seeds: a list or START:STOP, STOP excluded)."""
    data = read_yaml_option("--grid", path)
    if not isinstance(data, dict):
        raise InputError(f"--grid {path}: expected a mapping of grid axes")
    grid = Grid()
    known = set(Grid.__dataclass_fields__)
    for k, v in data.items():
        if k not in known:
            raise InputError(f"--grid {path}: unknown field {k!r} (known: {', '.join(sorted(known))})")
        try:
            setattr(grid, k, _axis(k, v))
        except InputError as e:
            raise InputError(f"--grid {path}: {e}") from None
    return grid


def _axis(name: str, v: Any) -> Any:
    from draopt.studies.simulate import parse_levels

    if v is None:  # `clusters:` with nothing after it: the axis is empty
        raise InputError(f"{name}: no value given")
    if name in ("clusters", "traces"):
        items = [f for c in (v if isinstance(v, list) else [v]) for f in (c if isinstance(c, list) else [c])]
        bad = [f for f in items if not isinstance(f, str) or not f]
        if bad:
            raise InputError(f"{name}: {bad[0]!r}: expected file names")
    if name == "clusters":
        items = v if isinstance(v, list) else [v]
        return [[str(f) for f in (c if isinstance(c, list) else str(c).split(","))] for c in items]
    if name == "traces":
        return [str(t) for t in (v if isinstance(v, list) else [v])]
    if name == "policies":
        return [str(p) for p in (v if isinstance(v, list) else str(v).split(","))]
    if name == "inflation":
        if not isinstance(v, list):
            return parse_levels(str(v))
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in v):
            raise InputError(f"inflation: {v!r}: levels are numbers (1.0 = 100 % of the GPU capacity)")
        return [float(x) for x in v]
    if name == "seeds":
        return v if isinstance(v, list) else parse_seeds(str(v))
    if name == "nodes":
        return v if isinstance(v, list) else [v]
    return v


def parse_seeds(text: str) -> list[int]:
    """`0:10` (0 to 9) or `1,5,7`."""
    try:
        if ":" in text:
            lo, hi = (int(x) for x in text.split(":"))
            if hi <= lo:
                raise ValueError
            return list(range(lo, hi))
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise InputError(f"seeds {text!r}: expected START:STOP (STOP excluded) or a comma-separated list") from None


# ------------------------------------------------------------------ one scenario
# Per worker process: inputs loaded and clusters built, reused by later scenarios (least recently
# used dropped first).
_LOADED: dict[tuple, Any] = {}
_BUILT: dict[tuple, Any] = {}


def with_nodes(objects, count: int):
    """The objects with `count` of their nodes, spread evenly over the nodes sorted by name (every
    k-th), with the slices pinned to them; pods bound to other nodes go too. 0: all nodes."""
    import copy

    nodes = sorted(objects.nodes, key=lambda n: n.name)
    if count == 0 or count == len(nodes):
        return objects
    if count > len(nodes):
        raise InputError(f"nodes: {count} nodes asked for, the cluster has {len(nodes)}")
    keep = [nodes[(i * len(nodes)) // count] for i in range(count)]
    names = {n.name for n in keep}
    out = copy.copy(objects)
    out.nodes = keep
    out.resource_slices = [s for s in objects.resource_slices if not s.spec.node_name or s.spec.node_name in names]
    out.pods = [p for p in objects.pods if not p.spec.node_name or p.spec.node_name in names]
    return out


def _objects(s: dict[str, Any]):
    """The scenario's cluster and workload, with its node count (loaded once per worker)."""

    def load():
        from draopt.kube.loader import load_files

        files = s["cluster"].split(",")
        if s["study"] == "simulate" and s["trace"].lower().endswith(".csv"):
            from draopt.studies.simulate import _object_set
            from draopt.studies.trace import read_tasks, workload_objects

            objects = load_files(files)
            objects.extend(_object_set(workload_objects(read_tasks(s["trace"], what="--trace")), s["trace"]))
            return objects
        return load_files(files + ([s["trace"]] if s["trace"] else []))

    return with_nodes(_cached(_LOADED, 2, (s["study"], s["cluster"], s["trace"]), load), s["nodes"])


def _cached(store: dict, size: int, key: tuple, make: Callable[[], Any]) -> Any:
    got = store.pop(key, None)
    if got is None:
        got = make()
        while len(store) >= size:
            store.pop(next(iter(store)))
    store[key] = got  # last: the most recently used
    return got


def run_scenario(s: dict[str, Any]) -> dict[str, Any]:
    """One scenario's results (without its inputs)."""
    t0 = time.perf_counter()
    if s["study"] == "simulate":
        out = _run_simulate(s)
    elif s["study"] == "place":
        out = _run_place(s)
    else:
        raise InputError(f"study: unknown study {s['study']!r} (known: {', '.join(STUDIES)})")
    out["elapsed_s"] = round(time.perf_counter() - t0, 3)
    return out


def _run_simulate(s: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    from draopt.studies import simulate as sim

    def make():
        c = sim.build(_objects(s), capacity_name=s["capacity"], features=_scenario_features(s))
        weights = np.array([len(sh.pods) for sh in c.shapes], dtype=float)
        return c, sim.FragModel(c, weights)

    built_key = (
        s["cluster"],
        s["trace"],
        s["nodes"],
        s["capacity"],
        s.get("feature_gates"),
        s.get("kubernetes_version"),
    )
    c, frag = _cached(_BUILT, 8, built_key, make)
    # Run 0 of `draopt simulate --seed S`: the same arrivals.
    seq, cum = sim.arrivals(c, s["inflation"], np.random.default_rng([s["seed"], 0]))
    levels = [s["inflation"]]
    if s["policy"] == sim.OFFLINE:
        rec = sim.offline(c, seq, cum, levels, 0, time_limit=s["time_limit"])[0]
    else:
        rec = sim.run_policy(
            c,
            seq,
            cum,
            levels,
            s["policy"],
            0,
            frag=frag if s["policy"] in ("fgd", "optimal-batch") else None,
            batch=s["batch"],
            time_limit=s["time_limit"],
        )[0]
    return {
        "unallocated_pct": round(rec.unallocated * 100, 6),
        "arrived_pct": round(rec.arrived * 100, 6),
        "placed": rec.placed,
        "failed": rec.failed,
        "nodes_in_cluster": c.n,
        "bound_unallocated_pct": None if rec.bound_unallocated is None else round(rec.bound_unallocated * 100, 6),
        "gap": rec.gap,
        "status": rec.status or "heuristic",
    }


def _run_place(s: dict[str, Any]) -> dict[str, Any]:
    from draopt.allocation.allocate import warm_up
    from draopt.studies.report import measure_policy

    warm_up()
    objects = _objects(s)
    r = measure_policy(objects, s["policy"], features=_scenario_features(s), time_limit=s["time_limit"])
    out = r.to_json()
    for k in ("policy", "solve_s", "summary", "counters", "capacity"):
        out.pop(k)
    out["nodes_in_cluster"] = len(objects.nodes)
    return out


# ------------------------------------------------------------------ the sweep, resumable, to Parquet
def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise InputError(f"sweep: Parquet output needs pyarrow: {_EXTRA}") from None
    return pyarrow


def read_rows(path: str) -> list[dict[str, Any]]:
    pa = _pyarrow()
    try:
        return pa.parquet.read_table(path).to_pylist()
    except (OSError, pa.ArrowException) as e:
        raise InputError(f"{path}: cannot read as Parquet: {e}") from None


# The Parquet type of every column a sweep writes, whatever the rows hold (a column of None only,
# gap or bound_unallocated_pct without an optimal row, was typed `null`, and changed type
# from one file to the next). The inputs, each study's results (simulate, then place), then
# elapsed_s and key. Read with pyarrow.parquet.read_schema(path).
COLUMN_TYPES: dict[str, str] = {
    "study": "string",
    "cluster": "string",
    "trace": "string",
    "nodes": "int64",
    "policy": "string",
    "seed": "int64",
    "inflation": "float64",
    "time_limit": "float64",
    "batch": "int64",
    "capacity": "string",
    "unallocated_pct": "float64",
    "arrived_pct": "float64",
    "placed": "int64",
    "failed": "int64",
    "nodes_in_cluster": "int64",
    "bound_unallocated_pct": "float64",
    "gap": "float64",
    "status": "string",
    "pods": "int64",
    "weighted_pods": "int64",
    "weighted_placed": "int64",
    "devices_total": "int64",
    "devices_used": "int64",
    "free_devices": "float64",
    "stranded_devices": "float64",
    "fragmentation": "float64",
    "fragmentation_pct": "float64",
    "shapes": "int64",
    "proven": "bool_",
    "elapsed_s": "float64",
    "key": "string",
}


def schema(columns: list[str], provenance: Provenance | None = None):
    """The pyarrow schema of a file holding `columns` (in that order): COLUMN_TYPES' types (a
    column it does not name, from a custom `run`, is a string), and the provenance record as
    schema metadata (provenance.PARQUET_KEY)."""
    pa = _pyarrow()
    fields = [pa.field(c, getattr(pa, COLUMN_TYPES.get(c, "string"))()) for c in columns]
    return pa.schema(fields, metadata=provenance.parquet_metadata() if provenance else None)


def write_rows(path: str, rows: list[dict[str, Any]], provenance: Provenance | None = None) -> None:
    """All rows to `path`, atomically (a reader or a crash never sees half a file), typed by
    :func:`schema`, with `provenance` in the schema's metadata."""
    pa = _pyarrow()
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        # Every column of every row (from_pylist takes the first row's keys only: a file holding
        # rows of both studies would lose the second study's measures).
        columns = list(dict.fromkeys(k for r in rows for k in r))
        table = pa.table({c: [r.get(c) for r in rows] for c in columns}, schema=schema(columns, provenance))
        pa.parquet.write_table(table, tmp)
        os.replace(tmp, path)
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e.strerror or e}") from None


def check_output(path: str) -> None:
    """Fail before any scenario runs when the results could not be written at `path`."""
    check_writable("-o", path, directory_hint="; give the Parquet file to write")


def run_sweep(
    scenarios: list[dict[str, Any]],
    out: str | None = None,
    *,
    engine: str = "processes",
    workers: int | None = None,
    address: str | None = None,
    client=None,
    progress: bool | Progress = True,
    run: Callable[[dict[str, Any]], dict[str, Any]] = run_scenario,
    provenance: Provenance | None = None,
) -> list[dict[str, Any]]:
    """Run the scenarios not already in `out`; return the rows of all of them, in their order.
    `progress`: a tqdm.auto bar (True), none (False), or a draopt.progress reporter's task (the
    command line's plain lines in a log). `provenance` goes into the file's schema metadata (the
    last run's: a resumed file says which run finished it)."""
    done: dict[str, dict[str, Any]] = {}
    kept: list[dict[str, Any]] = []
    if out:
        check_output(out)
    if out and os.path.exists(out):
        kept = read_rows(out)
        done = {r["key"]: r for r in kept if "key" in r}
    keys = [scenario_key(s) for s in scenarios]
    todo = [i for i, k in enumerate(keys) if k not in done]
    bar = _progress_bar(progress, len(scenarios), len(scenarios) - len(todo))
    rows = list(kept)
    unsaved = 0
    last_write = time.monotonic()
    try:
        for j, result in _completed(
            [scenarios[i] for i in todo], run, engine=engine, workers=workers, address=address, client=client
        ):
            i = todo[j]
            row = {k: scenarios[i].get(k) for k in INPUTS}
            row.update(result)
            row["key"] = keys[i]
            done[keys[i]] = row
            rows.append(row)
            unsaved += 1
            # The file is rewritten whole: at most once a second (and at the end, or on an error).
            if out and time.monotonic() - last_write >= WRITE_EVERY_S:
                write_rows(out, rows, provenance)
                unsaved, last_write = 0, time.monotonic()
            if bar is not None:
                bar.update(1)
    finally:
        if out and unsaved:
            write_rows(out, rows, provenance)
        if bar is not None:
            bar.close()
    return [done[k] for k in keys]


class _TaskBar:
    """A draopt.progress task used as the sweep's bar (update, close)."""

    def __init__(self, reporter: Progress, total: int, initial: int):
        self._task_block = reporter.task("sweep", total=total, unit="scenarios")
        self._task = self._task_block.__enter__()
        self.n = initial
        self._task.update_to(initial)

    def update(self, k: int) -> None:
        self.n += k
        self._task.update_to(self.n)

    def close(self) -> None:
        self._task_block.__exit__(None, None, None)


def _progress_bar(progress: bool | Progress, total: int, initial: int) -> Any:
    """The sweep's bar: None, a reporter's task, or a tqdm.auto bar on stderr."""
    if isinstance(progress, Progress):
        return _TaskBar(progress, total, initial)
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm  # a widget in a notebook, a text bar elsewhere
    except ImportError:
        raise InputError(f"sweep: the progress bar needs tqdm: {_EXTRA} (or no progress bar)") from None
    return tqdm(total=total, initial=initial, desc="sweep", unit="scenario", file=sys.stderr, dynamic_ncols=True)


def _command_progress(quiet: bool) -> bool | Progress:
    """`draopt sweep`'s progress: none with --quiet; a bar on a terminal; plain lines (no carriage
    returns or cursor moves) into a log, a file or a pipe."""
    if quiet:
        return False
    if wanted(force=False, quiet=False, stream=sys.stderr):
        return True
    return LineProgress(sys.stderr)


# ------------------------------------------------------------------ command line
def register(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a study over a grid (clusters, traces, node counts, policies, seeds, "
        "inflation levels) on a process pool or Dask; resumable; rows to Parquet",
    )
    p.add_argument(
        "--grid",
        metavar="FILE.yaml",
        help="the grid as YAML (keys: study, clusters, traces, nodes, "
        "policies, seeds, inflation, time_limit, batch, capacity); "
        "flags given override it",
    )
    p.add_argument(
        "--study",
        choices=STUDIES,
        help="simulate (default): draopt simulate, one run per seed and "
        "level; place: draopt compare's measures per policy",
    )
    p.add_argument("--cluster", action="append", metavar="FILE[,FILE...]", help="one cluster (repeat for more)")
    p.add_argument(
        "--trace",
        action="append",
        metavar="FILE",
        help="simulate: a task pool (openb CSV or YAML); place: workload files (repeat for more)",
    )
    p.add_argument("--nodes", metavar="N,...", help="node counts (every k-th node by name; 0: all)")
    p.add_argument(
        "--policy",
        action=CommaList,
        metavar="POLICY",
        help="a policy of the study, repeatable (or comma-separated): simulate's or place's names",
    )
    p.add_argument(
        "--seed", metavar="START:STOP|S,...", help="simulate: the seeds, one run each (START:STOP, STOP excluded)"
    )
    p.add_argument("--feature-gates", metavar="G=true|false,...")
    add_version_flag(p)
    p.add_argument("--inflation", metavar="START:STOP:STEP|L,...", help="simulate: inflation levels")
    p.add_argument("--time-limit", type=float, metavar="S", help="solver time limit per optimal solve")
    p.add_argument("--batch", type=int, metavar="K", help="optimal-batch: arrivals per batch")
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE.parquet",
        help="results (rows already there with the same inputs are not run again)",
    )
    p.add_argument(
        "--engine",
        default="processes",
        choices=ENGINES,
        help="processes: a local process pool (default); serial: here; dask: a Dask local "
        "cluster, or the scheduler at --scheduler",
    )
    p.add_argument("--scheduler", metavar="ADDRESS", help="a Dask scheduler (tcp://host:8786); implies --engine dask")
    p.add_argument("--workers", type=int, metavar="N", help="local workers (default: one per core)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)


def grid_from_args(args) -> Grid:
    from draopt.studies.simulate import parse_levels

    grid = load_grid(args.grid) if args.grid else Grid()
    if args.study:
        grid.study = args.study
    if args.cluster:
        grid.clusters = [c.split(",") for c in args.cluster]
    if args.trace:
        grid.traces = list(args.trace)
    if args.nodes:
        try:
            grid.nodes = [int(x) for x in args.nodes.split(",")]
        except ValueError:
            raise InputError(f"--nodes {args.nodes!r}: expected whole numbers, comma-separated") from None
    if args.policy:
        grid.policies = list(args.policy)
    if args.seed:
        grid.seeds = parse_seeds(args.seed)
    if args.feature_gates:
        grid.feature_gates = args.feature_gates
    if args.kubernetes_version:
        grid.kubernetes_version = args.kubernetes_version
    if args.inflation:
        grid.inflation = parse_levels(args.inflation)
    if args.time_limit is not None:
        grid.time_limit = args.time_limit
    if args.batch is not None:
        grid.batch = args.batch
    return grid


def _read_as_asked(grid: Grid, recursive: bool, strict: bool) -> None:
    """-R: each cluster's directories with their subdirectories (the cluster becomes the files
    found); --strict: a kind draopt does not use, in a cluster or a YAML trace, is an error before
    any scenario runs (the workers read without it)."""
    from draopt.kube.loader import expand_paths, refuse_unused_kinds

    if recursive:
        grid.clusters = [expand_paths(files, recursive=True) for files in grid.clusters]
    if strict:
        yaml_traces = [t for t in grid.traces if not t.lower().endswith(".csv")]
        refuse_unused_kinds([f for files in grid.clusters for f in files] + yaml_traces)


def summary_table(rows: list[dict[str, Any]]) -> str:
    """Mean over seeds of the study's main measure, per the other inputs."""
    simulate = bool(rows) and rows[0]["study"] == "simulate"
    measure = "unallocated_pct" if simulate else "placed"
    axes = ["cluster", "trace", "nodes", "policy"] + (["inflation"] if simulate else [])
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault(tuple(r[a] for a in axes), []).append(float(r[measure]))
    cols = axes + ["runs", f"mean_{measure}"]
    text = [[str(v) for v in (*k, len(vs), round(sum(vs) / len(vs), 3))] for k, vs in groups.items()]
    widths = [max(len(c), *(len(t[i]) for t in text)) for i, c in enumerate(cols)]
    return "\n".join(
        ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
        + ["  ".join(v.ljust(w) for v, w in zip(t, widths)) for t in text]
    )


def cmd_sweep(args) -> int:
    grid = grid_from_args(args)
    _read_as_asked(grid, recursive=args.recursive, strict=args.strict)
    for note in grid.renamed_policies():
        print(f"note: {note}", file=sys.stderr)
    scenarios = grid.scenarios()
    inputs = ([args.grid] if args.grid else []) + [f for c in grid.clusters for f in c] + list(grid.traces)
    made = record(inputs, time_limit=grid.time_limit, kubernetes_version=grid.features().kubernetes_version)
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers {args.workers}: must be at least 1")
    engine = "dask" if args.scheduler else args.engine
    t0 = time.perf_counter()
    check_output(args.output)
    present = {r.get("key") for r in read_rows(args.output)} if os.path.exists(args.output) else set()
    skipped = sum(scenario_key(s) in present for s in scenarios)
    rows = run_sweep(
        scenarios,
        args.output,
        engine=engine,
        workers=args.workers,
        address=args.scheduler,
        progress=_command_progress(args.quiet),
        provenance=made,
    )
    print(summary_table(rows))
    print(
        f"sweep: {len(scenarios)} scenarios ({skipped} already in {args.output}), "
        f"{len(scenarios) - skipped} run on {engine} in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    return 0
