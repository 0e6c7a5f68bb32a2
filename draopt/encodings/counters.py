"""Shared counters (partitionable devices).

For every counter of every counter set of a pool: what allocated devices consume plus what
the chosen devices consume must not exceed the counter's value. A multi-allocatable device
draws its counters once, when it is first allocated. Admin-access allocations also draw
counters in Kubernetes (quirk, first-fit only). A pool whose counters are already
over-committed by allocated devices admits no further counter-consuming device.
"""
from __future__ import annotations

from ..inventory import available_counters
from .base import ModelData, scale_to_int


def encode(m: ModelData) -> None:
    p = m.problem
    if not p.features.partitionable_devices:
        return
    cp = m.cp
    for devs in m.counter_consumers():
        pool = devs[0].pool
        avail = available_counters(pool, p.inventory.allocated)
        if any(v < 0 for cs in avail.values() for v in cs.values()):
            for dev in devs:
                if dev.multi_allocatable and p.features.consumable_capacity and dev.id in p.inventory.allocated.capacity:
                    continue   # counter check skipped: capacity already in use
                for spec in m.by_device[dev.index]:
                    m.add(cp.add(m.x[(spec.key, dev.index)] == 0))
            continue
        # terms[(set, counter)] = [(amount, literal)]
        terms: dict[tuple[str, str], list] = {}
        for dev in devs:
            multi = p.features.consumable_capacity and dev.multi_allocatable
            if multi:
                if dev.id in p.inventory.allocated.capacity:
                    continue
                if m.kubernetes_quirks:
                    lits = [m.device_used(dev)]   # admin-access shares draw too (DEFECT admin-counters)
                else:
                    users = [m.x[(s.key, dev.index)] for s in m.by_device[dev.index] if not s.admin_access]
                    if not users:
                        continue
                    lit = m.cp.new_bool_var(f"draws[{dev.index}]")
                    m.cp.add_max_equality(lit, users)
                    lits = [lit]
            else:
                lits = [m.x[(s.key, dev.index)] for s in m.by_device[dev.index]
                        if m.kubernetes_quirks or not s.admin_access]
            for c in dev.device.consumes_counters:
                for n, v in c.counters.items():
                    amount = p.counter_value(v.value)
                    for lit in lits:
                        terms.setdefault((c.counter_set, n), []).append((amount, lit))
        for (set_name, counter), items in terms.items():
            cap = avail.get(set_name, {}).get(counter)
            if cap is None:
                continue
            if sum(a for a, _ in items) <= cap:
                continue   # cannot be exceeded
            ints, unit = scale_to_int([a for a, _ in items] + [cap])
            bound = ints[-1]
            m.add(cp.add(sum(k * lit for k, (_, lit) in zip(ints, items)) <= bound),
                  f"pool {pool.id}: counter {set_name}/{counter} ({_fmt(cap)} left)")


def _fmt(value) -> str:
    from ..quantity import Quantity
    return str(Quantity.from_fraction(value, "BinarySI"))
