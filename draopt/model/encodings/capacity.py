"""Consumable capacity: a multi-allocatable device's capacity is shared by every allocation.

Each (request, device) pair consumes the request rounded up by the capacity's requestPolicy
(computed once in `draopt.dra.rules.consumption`); allocated shares count too. Devices without
`allowMultipleAllocations` are taken whole, so only their single-allocation fit matters
(checked when the candidate pairs are made).

`limit_shares` is the rule for one device; the per-node `encode` and the cluster model both
call it. A use's variable may count several allocations (pods of a counted class).
"""
from __future__ import annotations

from draopt.model.encodings.base import ModelData, scale_to_int, upper_bound


def limit_shares(m, dev, already: dict, uses: list) -> None:
    """`uses`: [(var, consumed: {capacity name: Quantity})] of the requests that may share `dev`."""
    cp = m.cp
    for name, cap in dev.device.capacity.items():
        limit = m.counter_value(cap.value) - already.get(name, 0)
        amounts = [consumed[name].value for _, consumed in uses]
        if sum(amounts) <= limit and all(upper_bound(v) <= 1 for v, _ in uses):
            continue
        ints, _ = scale_to_int(amounts + [limit])
        m.add(cp.add(sum(k * v for k, (v, _) in zip(ints, uses)) <= ints[-1]),
              f"device {'/'.join(dev.id)}: capacity {name} {cap.value}")



def encode(m: ModelData) -> None:
    p = m.problem
    if not p.features.consumable_capacity:
        return
    for dev in p.devices:
        specs = m.by_device.get(dev.index, [])
        if not dev.multi_allocatable or not specs:
            continue
        uses = []
        for s in specs:
            consumed = p.consumption(s, dev)
            m.consumed[(s.key, dev.index)] = consumed
            uses.append((m.x[(s.key, dev.index)], consumed))
        if len(specs) < 2:
            continue   # a single allocation was checked when the pair was made
        limit_shares(m, dev, p.inventory.allocated.capacity.get(dev.id, {}), uses)
