"""The `optimal` policy for one node: among all valid allocations, the best, not the first.

Lexicographic objective (weights keep the levels apart):
1. prioritized lists: the lowest sub-request indexes (most preferred alternatives);
2. the fewest counter sets newly drawn on (keeps whole partitionable GPUs free);
3. the least counter amount and consumable capacity taken (smallest fitting devices);
4. among equals, devices earlier in Kubernetes' search order (a deterministic, familiar choice).
"""
from __future__ import annotations

from fractions import Fraction

from ..encodings.base import ModelData


def add_packing_objective(m: ModelData) -> None:
    p = m.problem
    cp = m.cp
    level1 = []
    for spec in m.specs:
        sel = m.select[spec.key]
        if sel is not None and spec.sub_index > 0:
            level1.append(spec.sub_index * sel)
    level2, level3_items = [], []
    allocated = p.inventory.allocated
    touched: dict[tuple, list] = {}
    for dev in p.devices:
        if not m.by_device.get(dev.index) or not dev.device.consumes_counters:
            continue
        used = m.device_used(dev)
        for c in dev.device.consumes_counters:
            touched.setdefault((id(dev.pool), c.counter_set), []).append(used)
            for v in c.counters.values():
                level3_items.append((p.counter_value(v.value), used))
    for (pool_id, set_name), lits in touched.items():
        pool = next(d.pool for d in p.devices if id(d.pool) == pool_id)
        already = any(allocated.holds((pool.driver, pool.name, d.name))
                      for s in pool.slices for d in s.spec.devices
                      if any(c.counter_set == set_name for c in d.consumes_counters))
        if already:
            continue   # drawing on a set already in use costs nothing new
        t = cp.new_bool_var(f"touched[{set_name}]")
        cp.add_max_equality(t, lits)
        level2.append(t)
    for (key, idx), consumed in m.consumed.items():
        if consumed:
            lit = m.x[(key, idx)]
            for q in consumed.values():
                level3_items.append((q.value, lit))
    level3 = 0
    if level3_items:
        total = sum(a for a, _ in level3_items) or Fraction(1)
        # Normalised to at most 1000 so that one step of level 2 always outweighs level 3.
        level3 = sum(int(round(1000 * a / total)) * lit for a, lit in level3_items)
    level4 = [(dev_index, lit) for (_, dev_index), lit in m.x.items()]
    w3 = sum(i for i, _ in level4) + 1
    w2 = 1001 * w3
    w1 = w2 * (len(level2) + 1)
    cp.minimize(w1 * sum(level1) + w2 * sum(level2) + w3 * level3 + sum(i * lit for i, lit in level4))
