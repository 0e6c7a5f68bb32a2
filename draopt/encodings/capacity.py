"""Consumable capacity: a multi-allocatable device's capacity is shared by every allocation.

Each (request, device) pair consumes the request rounded up by the capacity's requestPolicy
(computed once in `draopt.rules.consumption`); allocated shares count too. Devices without
`allowMultipleAllocations` are taken whole, so only their single-allocation fit matters
(checked when the candidate pairs are made).
"""
from __future__ import annotations

from .base import ModelData, scale_to_int


def encode(m: ModelData) -> None:
    p = m.problem
    if not p.features.consumable_capacity:
        return
    cp = m.cp
    for dev in p.devices:
        specs = m.by_device.get(dev.index, [])
        if not dev.multi_allocatable or not specs:
            continue
        already = p.inventory.allocated.capacity.get(dev.id, {})
        per_spec = {}
        for s in specs:
            per_spec[s.key] = p.consumption(s, dev)
            m.consumed[(s.key, dev.index)] = per_spec[s.key]
        if len(specs) < 2:
            continue   # a single allocation was checked when the pair was made
        for name, cap in dev.device.capacity.items():
            limit = p.counter_value(cap.value) - already.get(name, 0)
            amounts = [per_spec[s.key][name].value for s in specs]
            if sum(amounts) <= limit:
                continue
            ints, _ = scale_to_int(amounts + [limit])
            m.add(cp.add(sum(k * m.x[(s.key, dev.index)] for k, s in zip(ints, specs)) <= ints[-1]),
                  f"device {'/'.join(dev.id)}: capacity {name} {cap.value}")
