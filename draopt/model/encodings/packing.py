"""Phase 3's terms (packing, `draopt.model.objective.packing_levels`), most important first:
touched nodes, counter sets newly drawn on, counter amounts and shared capacity taken
(normalised), devices taken, search order; interchangeable nodes add theirs per configuration."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from draopt.dra.inventory import counter_sets_in_use
from draopt.model.encodings.context import ModelContext


def packing_terms(ctx: ModelContext) -> dict[str, list]:
    """The terms by level: nodes, counter_sets, amounts, devices, order."""
    packing = (
        _column_terms(ctx)
        if ctx.packing_terms
        else {"nodes": [], "counter_sets": [], "amounts": [], "devices": [], "order": []}
    )
    classes = ctx.node_classes
    packing["nodes"] = packing["nodes"] + classes.node_count_terms
    packing["devices"] = packing["devices"] + classes.devices
    packing["counter_sets"] = packing["counter_sets"] + classes.fresh_sets
    return packing


def _column_terms(ctx: ModelContext) -> dict[str, list]:
    m, cluster = ctx.m, ctx.cluster
    cp = m.cp
    sets: dict[tuple, list] = defaultdict(list)
    pools: dict[int, Any] = {}
    amounts = []
    devices = []
    order = []
    for key, ts in ctx.by_ref.items():
        ref = ctx.refs[key]
        e = ref.first
        for t in ts:
            devices.append(t.var)
            order.append((e.index, t.var))
            if t.entry.multi_allocatable and cluster.features.consumable_capacity:
                for q in (t.problem.consumption(t.spec, t.entry) or {}).values():
                    amounts.append((q.value, t.var))
        if e.device.consumes_counters and cluster.features.partitionable_devices:
            used = m.positive(ts[0].var) if len(ts) == 1 else m.any_of([t.var for t in ts], f"taken[{key}]")
            for c in e.device.consumes_counters:
                sets[(id(e.pool), c.counter_set)].append(used)
                pools[id(e.pool)] = e.pool
                for v in c.counters.values():
                    amounts.append((m.counter_value(v.value), used))
    fresh = []
    for (pool_id, set_name), lits in sets.items():
        pool = pools[pool_id]
        if set_name in counter_sets_in_use(cluster.allocated, pool):
            continue  # drawing on a set already in use costs nothing new
        drawn = cp.new_bool_var(f"set_used[{pool.id}/{set_name}]")
        cp.add_max_equality(drawn, lits)
        fresh.append(drawn)
    return {"nodes": ctx.touched_nodes, "counter_sets": fresh, "amounts": amounts, "devices": devices, "order": order}
