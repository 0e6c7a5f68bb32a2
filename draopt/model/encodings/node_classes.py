"""Interchangeable nodes (draopt.model.patterns): a class of nodes alike is counted per
configuration (how many of its nodes hold each mix of pods), not node by node. The classes'
configurations are enumerated here under one time budget, the largest classes first (they save
the most); a class whose enumeration does not finish keeps its nodes' own variables."""

from __future__ import annotations

import time
from typing import Callable

from draopt.cluster.state import pod_on
from draopt.model.encodings.context import ModelContext


def count_interchangeable_nodes(
    ctx: ModelContext, pattern_seconds: float, deadline: float | None, one_node_model: Callable
) -> None:
    """`one_node_model(nc, prep, cluster, workload, book)`: the model of a class's
    representative node, for its configuration checks."""
    from draopt.model.patterns import node_classes

    prep = ctx.prep
    # (Nodes with victim candidates keep their own variables: evictions are per node.)
    nodes = ctx.node_names - ctx.victims.nodes() if ctx.enc else ctx.node_names
    classes = node_classes(prep, ctx.kinds, nodes, ctx.cluster)
    enumerated = _enumerate(ctx, classes, pattern_seconds, deadline, one_node_model)
    for nc in classes:
        if id(nc) in enumerated:
            _class_vars(ctx, nc)


def _enumerate(ctx: ModelContext, classes: list, pattern_seconds: float, deadline, one_node_model) -> set[int]:
    """The classes (ids) whose configurations were enumerated within the budget."""
    from draopt.model.patterns import enumerate_configurations

    prep, cluster, workload, book = ctx.prep, ctx.cluster, ctx.workload, ctx.book
    stop = time.perf_counter() + pattern_seconds
    enumerated = set()
    for nc in sorted(classes, key=lambda nc: -len(nc.nodes)):
        left = min(stop, deadline if deadline is not None else stop) - time.perf_counter()
        if left <= 0:
            break
        rep_node = nc.nodes[0]
        caps = [
            min(len(prep.kinds[ki].pods), ctx.free(rep_node, pod_on(rep_node, prep.kinds[ki].pods[0]).resources))
            for ki in nc.kinds
        ]
        if enumerate_configurations(
            nc, prep, cluster, workload, book, caps, left, one_node_model(nc, prep, cluster, workload, book)
        ):
            enumerated.add(id(nc))
    return enumerated


def _class_vars(ctx: ModelContext, nc) -> None:
    """One count per configuration: how many of the class's nodes hold it."""
    m, cp, out = ctx.m, ctx.cp, ctx.node_classes
    rep_node = nc.nodes[0]
    out.used.append(nc)
    out.nodes.update(n.name for n in nc.nodes)
    nc.vars = []
    for ci, conf in enumerate(nc.configurations):
        v = cp.new_int_var(0, len(nc.nodes), f"nodes_with[{rep_node.name},{conf.counts}]")
        nc.vars.append(v)
        for ki, n in zip(nc.kinds, conf.counts):
            if n:
                out.pods_of_kind[ki].append((n, v))
        out.node_count_terms.append(v)
        if conf.devices:
            out.devices.append((conf.devices, v))
        if conf.fresh_sets:
            out.fresh_sets.append((conf.fresh_sets, v))
    if nc.vars:
        m.add(cp.add(sum(nc.vars) <= len(nc.nodes)))
