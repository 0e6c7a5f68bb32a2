"""The configuration LP of a simulated cluster, for an expected multiset of pod shapes.

`lp-guided` (draopt/studies/lp_guided.py) plans with draopt's own column generation
(`draopt.model.colgen.relax`: the master LP over configurations of each class of interchangeable
nodes, priced exactly by the one-node model, so under the same DRA rules as every other check).
This module puts a `SimCluster` into that model's form once (`PlanModel`: the empty cluster as
Kubernetes objects, with enough pods of every shape for one node to be filled with it) and solves
the LP for any expected count per shape (`PlanModel.solve`), warm-started from earlier columns.
The pods' value is their GPU request (simulate_optimal.residual_objects' priorities): the LP
maximises the GPU capacity a plan places.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
import numpy as np

MAX_PODS_PER_SHAPE = 128  # pods of one shape in the model: a node never holds more in openb


@dataclass
class PlanConfig:
    """One configuration of a plan: a class of nodes, its pods per shape, nodes the LP gives it."""

    cls: int
    shapes: dict[int, int]  # shape index -> pods on one node
    nodes: float  # the LP's nodes of the class taking it
    key: tuple[int, tuple[int, ...]]  # (class, counts over the class's kinds): the warm start's column


@dataclass
class Plan:
    """The LP's answer: configurations, the prices of pods (per shape) and of nodes (per class)."""

    configs: list[PlanConfig]
    class_of: np.ndarray  # [N] class of each node (-1: in no class)
    shape_price: np.ndarray  # [S] dual price of one pod of a shape, in GPU milli
    class_price: np.ndarray  # [classes] dual price of one node of a class, in GPU milli
    lp_value: float  # GPU milli the LP places
    bound: float
    converged: bool
    stopped: str
    seconds: float
    rounds: int  # master solves of the column generation
    columns: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)


def shape_caps(c) -> np.ndarray:
    """Per shape, the most pods of it one node can hold (node resources and devices), at most
    MAX_PODS_PER_SHAPE: the model's pods of that shape."""
    out = np.zeros(len(c.shapes), dtype=np.int64)
    for s in c.shapes:
        ok = s.node_ok.copy()
        need = s.demand > 0
        by_res = np.full(c.n, MAX_PODS_PER_SHAPE, dtype=np.float64)
        if need.any():
            by_res = np.minimum(by_res, np.floor(c.alloc[:, need] / s.demand[need]).min(axis=1))
        if s.count:
            per = np.where(s.compat & c.present, np.floor(c.cap / np.where(s.cons > 0, s.cons, np.inf)), 0)
            by_dev = np.floor(np.where(np.isfinite(per), per, 0).sum(axis=1) / s.count)
            by_res = np.minimum(by_res, by_dev)
        out[s.index] = int(max(0, np.where(ok, by_res, 0).max()))
    return out


class PlanModel:
    """The empty cluster and every shape in the column generation's form, built once per cluster
    (cached on the protocol's PaperCluster: `plan_model(c)`)."""

    def __init__(self, c):
        from draopt.cluster.firstfit import ClaimBook
        from draopt.kube.features import Features
        from draopt.kube.workload import expand
        from draopt.model.patterns import node_classes
        from draopt.model.prepare import prepare_cluster
        from draopt.placement import _no_gc_pauses, build_cluster
        from draopt.placement.chain import model_reductions
        from draopt.studies.simulate import State
        from draopt.studies.simulate_optimal import residual_objects, value_scale

        t0 = time.perf_counter()
        self.c = c
        caps = shape_caps(c)
        batch = [(s, f"s{s.index:04d}-{k:04d}") for s in c.shapes for k in range(int(caps[s.index]))]
        self.scale = value_scale([s for s, _ in batch])
        objs = residual_objects(State(c), batch, scale=self.scale)
        with _no_gc_pauses():
            features = Features.from_gates()
            self.workload = expand(objs, features)
            self.cluster = build_cluster(objs, self.workload, features)
            self.book = ClaimBook(self.cluster, self.workload.claims)
            self.book._signature.update(getattr(self.workload, "spec_texts", None) or {})
            self.prep = prepare_cluster(self.cluster, self.workload, self.book, reductions=model_reductions())
        self.kind_ids = [k.index for k in self.prep.kinds]
        # kind -> shape, from its pods' names (one shape per kind; a shape may split in kinds)
        self.kind_shape = {k.index: int(k.pods[0].key.split("/", 1)[1][1:5]) for k in self.prep.kinds}
        self.node_names = {n.name for n in self.cluster.nodes}
        self.node_index = {name: i for i, name in enumerate(c.nodes)}
        # the classes relax makes (node_classes is deterministic for the same model): node
        # contents become warm-start columns
        kinds = [self.prep.kinds[i] for i in self.kind_ids]
        classes = node_classes(self.prep, kinds, self.node_names, self.cluster, min_size=1)
        self.classes = classes  # given to every solve: relax would compute them again each time
        self.class_kinds = [list(nc.kinds) for nc in classes]
        self.node_class = np.full(c.n, -1, dtype=np.int64)
        for j, nc in enumerate(classes):
            for node in nc.nodes:
                self.node_class[self.node_index[node.name]] = j
        self.shape_kinds: dict[int, list[int]] = {}
        for ki, si in self.kind_shape.items():
            self.shape_kinds.setdefault(si, []).append(ki)
        self.build_s = time.perf_counter() - t0

    def columns_of(self, contents) -> list[tuple[int, tuple[int, ...]]]:
        """Warm-start columns from node contents (node index, {shape: pods}): each node's pods as
        a configuration of its class (a shape of several kinds: its first kind)."""
        out = []
        for node, shapes in contents:
            j = int(self.node_class[node])
            if j < 0 or not shapes:
                continue
            kinds = self.class_kinds[j]
            counts = [0] * len(kinds)
            for si, k in shapes.items():
                ki = self.shape_kinds.get(si, [None])[0]
                if ki is None or ki not in kinds:
                    break
                counts[kinds.index(ki)] += k
            else:
                out.append((j, tuple(counts)))
        return list(dict.fromkeys(out))

    def solve(self, expected: np.ndarray, *, rounds: int | None = None, seconds: float = math.inf, columns=()) -> Plan:
        """The LP for `expected` pods per shape (fractional allowed), warm-started from `columns`;
        bounded by `rounds` of the column generation (deterministic: the same plan on any machine)
        and/or `seconds` of wall clock."""
        from draopt.model.colgen import relax

        t0 = time.perf_counter()
        c = self.c
        per_kind: dict[int, list[int]] = {}
        for ki, si in self.kind_shape.items():
            per_kind.setdefault(si, []).append(ki)
        pods_of = {ki: float(expected[si]) / len(per_kind[si]) for ki, si in self.kind_shape.items()}
        rx = relax(
            self.prep,
            self.cluster,
            self.workload,
            self.book,
            self.kind_ids,
            self.node_names,
            deadline=t0 + seconds,
            rounds=rounds,
            pods_of=pods_of,
            columns=list(columns),
            classes=self.classes,
        )
        class_of = np.full(c.n, -1, dtype=np.int64)
        for j, nc in enumerate(rx.classes):
            for node in nc.nodes:
                class_of[self.node_index[node.name]] = j
        configs = []
        for col, x in zip(rx.columns, rx.primal):
            if x <= 1e-6:
                continue
            shapes: dict[int, int] = {}
            for ki, n in zip(rx.classes[col.cls].kinds, col.counts):
                if n:
                    si = self.kind_shape[ki]
                    shapes[si] = shapes.get(si, 0) + int(n)
            configs.append(PlanConfig(col.cls, shapes, float(x), (col.cls, tuple(col.counts))))
        shape_price = np.zeros(len(c.shapes))
        for ki, p in rx.pi.items():
            shape_price[self.kind_shape[ki]] = max(shape_price[self.kind_shape[ki]], p / self.scale)
        return Plan(
            configs,
            class_of,
            shape_price,
            np.array(rx.mu) / self.scale,
            rx.lp_value / self.scale,
            rx.bound / self.scale,
            rx.converged,
            rx.stopped,
            time.perf_counter() - t0,
            rx.rounds,
            [(col.cls, tuple(col.counts)) for col in rx.columns],
        )


def ceil_nodes(x: float) -> int:
    """Nodes a configuration may be handed out to: the LP's nodes rounded up."""
    return int(math.ceil(x - 1e-6))
