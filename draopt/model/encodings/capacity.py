"""Consumable capacity: a multi-allocatable device's capacity is shared by every allocation.

Each (request, device) pair consumes the request rounded up by the capacity's requestPolicy
(computed once in `draopt.dra.rules.consumption`); allocated shares count too. Devices without
`allowMultipleAllocations` are taken whole, so only their single-allocation fit matters
(checked when the candidate pairs are made).

`limit_shares` is the rule for one device; the model builder calls it. A use's variable may count several allocations (pods of a counted class).
"""

from __future__ import annotations

from draopt.model.encodings.base import scale_to_int, upper_bound


def limit_shares(m, dev, already: dict, uses: list) -> None:
    """`uses`: [(var, consumed: {capacity name: Quantity})] of the requests that may share `dev`."""
    cp = m.cp
    for name, cap in dev.device.capacity.items():
        limit = m.counter_value(cap.value) - already.get(name, 0)
        amounts = [consumed[name].value for _, consumed in uses]
        if sum(amounts) <= limit and all(upper_bound(v) <= 1 for v, _ in uses):
            continue
        ints, _ = scale_to_int(amounts + [limit])
        m.add(
            cp.add(sum(k * v for k, (v, _) in zip(ints, uses)) <= ints[-1]),
            f"device {'/'.join(dev.id)}: capacity {name} {cap.value}",
        )
