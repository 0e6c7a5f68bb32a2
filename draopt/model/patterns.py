"""Interchangeable nodes (a reduction, applied only where exact).

Nodes in the same state (same free resources, the same counted kinds of pods may use them,
the same device columns with the same candidacy and constrained attribute values, no device
shared with other nodes, no unit pod that may land there) are interchangeable. For such a
class of N nodes, `apply` enumerates every *configuration* (how many pods of each kind one
node holds) that the one model accepts on one node of the class, each solved once on a
representative node with the packing objective (fewest counter sets, least amounts, fewest
devices); the cluster model then only counts how many nodes take each configuration
(Gilmore-Gomory), which is exact because the nodes are identical and independent. `invert`
hands the configurations out to the nodes in order and maps the representative's device
columns to each node's own (identical nodes list their columns in the same order).

Feasible configurations are downward closed (fewer pods always fit), so the enumeration
extends a configuration only while it stays feasible. A class whose enumeration would need
more than MAX_CHECKS one-node solves keeps the per-node form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ortools.sat.python import cp_model

from draopt import interrupt
from draopt.model.encodings.attributes import constraint_name

MAX_CHECKS = 400
MAX_KINDS = 12


@dataclass
class Configuration:
    counts: tuple[int, ...]  # pods per kind (in NodeClass.kinds order)
    values: dict[tuple, int]  # (kind, "sel"|"term"|"wit", key...) -> value on the representative
    devices: int = 0
    fresh_sets: int = 0


@dataclass
class NodeClass:
    nodes: list[Any]  # NodeState, node order
    kinds: list[int]  # counted kinds that may use them
    configurations: list[Configuration] = field(default_factory=list)
    rep_owners: dict[int, Any] = field(default_factory=dict)  # kind -> Owner on the representative
    # The model's count per configuration (draopt.model.encodings.node_classes).
    vars: list = field(default_factory=list, compare=False, repr=False)
    # The representative's column key -> position (draopt.model.solution), once per class.
    ref_positions: dict | None = field(default=None, compare=False, repr=False)


def node_classes(prep, kinds, node_names: set[str], cluster, min_size: int = 2) -> list[NodeClass]:
    """Classes of at least `min_size` interchangeable nodes (1: every node that can be classed,
    each alone if need be; column generation covers a whole part this way)."""
    kinds_on: dict[str, list[int]] = {}
    blocked: set[str] = set()
    for kind in kinds:
        if kind.counted and kind.unit_size == 1:
            for node in prep.pod_nodes.get(kind.pods[0].key, []):
                kinds_on.setdefault(node.name, []).append(kind.index)
        else:
            for pod in kind.pods:
                for node in prep.pod_nodes.get(pod.key, []):
                    blocked.add(node.name)
    groups: dict[tuple, list] = {}
    for node in cluster.nodes:
        if node.name not in node_names or node.name in blocked or node.name not in kinds_on:
            continue
        refs = prep.refs.get(node.name, [])
        if any(r.node is None for r in refs) or any(
            e.device.node_allocatable_resources for r in refs for e in r.entries
        ):
            continue
        sig = _signature(prep, node, kinds_on[node.name], refs)
        if sig is not None:
            groups.setdefault(sig, []).append(node)
    return [NodeClass(nodes, list(kinds_on[nodes[0].name])) for nodes in groups.values() if len(nodes) >= min_size]


def _signature(prep, node, kind_ids: list[int], refs) -> tuple | None:
    parts: list[Any] = [tuple(sorted(node.allocatable.items())), tuple(sorted(node.used.items())), tuple(kind_ids)]
    for ki in kind_ids:
        p = prep.problems.get((ki, node.name))
        if p is None:
            parts.append((ki, None))
            continue
        names = sorted({constraint_name(c)[1] for cl in p.claims for c in cl.constraints})
        for cl in p.claims:
            for g in cl.requests:
                for s in g.alternatives:
                    row = []
                    for i, ref in enumerate(refs):
                        e = ref.first
                        if prep.candidacy(p, s, e):
                            row.append(
                                (
                                    i,
                                    ref.size,
                                    prep.candidacy.attributes(p, s, e, names) if names else (),
                                    repr(
                                        sorted(
                                            (c.counter_set, sorted((n, v.value) for n, v in c.counters.items()))
                                            for c in e.device.consumes_counters
                                        )
                                    ),
                                    bool(e.multi_allocatable),
                                    repr(sorted((n, c.value) for n, c in e.device.capacity.items())),
                                )
                            )
                    parts.append((ki, s.key, tuple(row)))
    return tuple(parts)


def enumerate_configurations(
    nc: NodeClass, prep, cluster, workload, book, caps: list[int], seconds: float, one: OneNodeModel
) -> bool:
    """Fill nc.configurations (non-empty ones); False if the class is too large to enumerate
    (more than MAX_CHECKS one-node solves, or more than `seconds`).

    One model of the representative node serves every check (the counts are variable bounds).
    Before enumerating (unless the caps alone allow few configurations), pods are added kind by
    kind while they fit: a configuration with counts c proves prod(c_i + 1) - 1 configurations
    (downward closed), so a class that has more than MAX_CHECKS is given up early; so is one
    with more than MAX_KINDS kinds that fit one node alone."""
    import time

    stop = time.perf_counter() + seconds
    if one.b is None:
        return False
    checks = [0]
    found: list[Configuration] = []
    cache: dict[tuple, Configuration | None] = {}

    def feasible(counts: tuple[int, ...]) -> Configuration | None:
        if counts not in cache:
            checks[0] += 1
            cache[counts] = one.solve(counts)
        return cache[counts]

    # A configuration c found greedily proves at least prod(c_i + 1) - 1 configurations (every
    # count vector below it): past MAX_CHECKS the class is given up, at most sum(caps) checks in.
    bound = 1
    for cap in caps:
        bound *= max(0, cap) + 1
    if bound - 1 > MAX_CHECKS:
        # More than MAX_KINDS kinds that fit one node alone: their few-pod combinations alone
        # usually pass MAX_CHECKS (26 kinds, 3 pods a node: 3,653 configurations), not worth trying.
        alone = 0
        for i, cap in enumerate(caps):
            if cap > 0:
                single = [0] * len(nc.kinds)
                single[i] = 1
                alone += feasible(tuple(single)) is not None
        if alone > MAX_KINDS:
            return False
        together = [0] * len(nc.kinds)
        below = 1
        for i, cap in enumerate(caps):
            while together[i] < cap:
                together[i] += 1
                if feasible(tuple(together)) is None:
                    together[i] -= 1
                    break
                if below * (together[i] + 1) - 1 > MAX_CHECKS or time.perf_counter() > stop:
                    return False
            below *= together[i] + 1

    def extend(prefix: list[int], i: int) -> bool:
        if checks[0] > MAX_CHECKS or time.perf_counter() > stop:
            return False
        if i == len(nc.kinds):
            return True
        c = 0
        while True:
            counts = tuple(prefix + [c] + [0] * (len(nc.kinds) - i - 1))
            if c > 0:
                if c > caps[i]:
                    break
                conf = feasible(counts)
                if conf is None:
                    break
                found.append(conf)
            if not extend(prefix + [c], i + 1):
                return False
            c += 1
        return True

    if not extend([], 0):
        return False
    nc.configurations = found
    return True


class OneNodeModel:
    """The one model on the representative node, packed; each check fixes the pods per kind
    through the bounds of their count variables."""

    def __init__(self, nc, built, packing=None):
        """`built`: the placement model built on nc's representative node alone (the builder,
        draopt.model.placement.one_node_model, passes itself in: it also calls this module);
        `packing`: the packing objective its checks minimise (None: any feasible values)."""
        rep = nc.nodes[0]
        self.b = built
        self.vars = [self.b.k.get((ki, rep.name)) for ki in nc.kinds]
        if packing is not None:
            self.b.model.cp.minimize(packing)

    def solve(self, counts, seconds: float = 5.0) -> Configuration | None:
        got = self.check(counts, seconds)
        return got or None

    def check(self, counts, seconds: float = 5.0, hard: bool = True) -> Configuration | Literal[False] | None:
        """The configuration, False if the model rejects the counts, None if undecided in time
        (`seconds` of wall clock; `hard` False: of deterministic time, the same answer on any machine)."""
        b = self.b
        saved = []
        for var, n in zip(self.vars, counts):
            if var is None:
                if n:
                    return False
                continue
            dom = var.proto.domain
            saved.append((dom, dom[0], dom[1]))
            if n > dom[1]:
                for d, lo, hi in saved:
                    d[0], d[1] = lo, hi
                return False
            dom[0] = dom[1] = n
        try:
            solver = cp_model.CpSolver()
            solver.parameters.num_workers = 1
            solver.parameters.random_seed = 0
            if hard:
                solver.parameters.max_time_in_seconds = max(0.01, seconds)
            else:
                solver.parameters.max_deterministic_time = max(0.01, seconds)
            status = interrupt.watch(solver).solve(b.model.cp)
        finally:
            for d, lo, hi in saved:
                d[0], d[1] = lo, hi
        if status == cp_model.INFEASIBLE:
            return False
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None
        return self.configuration(solver, tuple(counts))

    def configuration(self, solver, counts: tuple[int, ...]) -> Configuration:
        """The configuration a solve of this model found (its values on the representative)."""
        b = self.b
        values: dict[tuple, int] = {}
        devices = 0
        for o in b.owners:
            for key, v in o.sel.items():
                values[(o.kind.index, "sel", key)] = solver.value(v)
            for key, ts in o.terms.items():
                for pos, t in enumerate(ts):
                    n = solver.value(t.var)
                    values[(o.kind.index, "term", key, pos)] = n
                    devices += n
            for wkey, chosen in o.witness.items():
                for e, v in chosen.items():
                    values[(o.kind.index, "wit", wkey, e)] = solver.value(v)
        fresh = sum(solver.value(t) for t in b.packing["counter_sets"])
        return Configuration(counts, values, devices, fresh)
