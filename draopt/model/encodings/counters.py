"""Shared counters (partitionable devices).

For every counter of every counter set of a pool: what allocated devices consume plus what
the chosen devices consume must not exceed the counter's value. A multi-allocatable device
draws its counters once, when it is first allocated. Admin-access allocations also draw
counters in Kubernetes (quirk, first-fit only). A pool whose counters are already
over-committed by allocated devices admits no further counter-consuming device.

`limit_pool` is the rule, over every device of one pool that some request may take (with
the variables of the requests that may take it); `limit_every_pool` calls it once per pool, with the
compatibility groups' rule (`draopt.model.encodings.compatibility`).
"""

from __future__ import annotations

from collections import defaultdict

from draopt.dra.inventory import available_counters, compatibility_groups, in_use_groups
from draopt.model.encodings import compatibility
from draopt.model.encodings.base import scale_to_int
from draopt.model.encodings.context import ModelContext


def limit_pool(m, pool, allocated, features, devices: list, *, quirks: bool) -> None:
    """`devices`: [(DeviceEntry, [(var, admin)])], each device once, its users' variables
    (bools, or counts bounded by 1: a counter device is never grouped)."""
    cp = m.cp
    avail = available_counters(pool, allocated)
    if any(v < 0 for cs in avail.values() for v in cs.values()):
        for dev, users in devices:
            if dev.multi_allocatable and features.consumable_capacity and dev.id in allocated.capacity:
                continue  # counter check skipped: capacity already in use
            for var, _ in users:
                m.add(cp.add(var == 0))
        return
    terms: dict[tuple[str, str], list] = {}
    for dev, users in devices:
        if features.consumable_capacity and dev.multi_allocatable:
            if dev.id in allocated.capacity:
                continue
            # admin-access shares draw too in Kubernetes (DEFECT admin-counters)
            drawing = [v for v, admin in users if quirks or not admin]
            if not drawing:
                continue
            lits = [m.any_of(drawing, f"draws[{'/'.join(dev.id)}]")]
        else:
            lits = [v for v, admin in users if quirks or not admin]
        for c in dev.device.consumes_counters:
            for n, v in c.counters.items():
                amount = m.counter_value(v.value)
                for lit in lits:
                    terms.setdefault((c.counter_set, n), []).append((amount, lit))
    for (set_name, counter), items in terms.items():
        cap = avail.get(set_name, {}).get(counter)
        if cap is None:
            continue
        if sum(a for a, _ in items) <= cap:
            continue  # cannot be exceeded
        ints, _ = scale_to_int([a for a, _ in items] + [cap])
        m.add(
            cp.add(sum(k * lit for k, (_, lit) in zip(ints, items)) <= ints[-1]),
            f"pool {pool.id}: counter {set_name}/{counter} ({_fmt(cap)} left)",
        )


def _fmt(value) -> str:
    from draopt.kube.quantity import Quantity

    return str(Quantity.from_fraction(value, "BinarySI"))


def limit_every_pool(ctx: ModelContext) -> None:
    """Per pool whose devices consume counters: its counters, then (DRADeviceCompatibilityGroups)
    the compatibility groups on each of its counter sets."""
    m, cluster, features = ctx.m, ctx.cluster, ctx.cluster.features
    counter_pools: dict[tuple, list] = defaultdict(list)
    for key, ts in ctx.by_ref.items():
        e = ctx.refs[key].first
        if e.device.consumes_counters:
            counter_pools[(e.pool.driver, e.pool.name)].append((e, [(t.var, t.spec.admin_access) for t in ts]))
    for devices in counter_pools.values():
        pool = devices[0][0].pool
        limit_pool(m, pool, cluster.allocated, features, devices, quirks=ctx.kubernetes_quirks)
        if features.compatibility_groups:
            for set_name in sorted(pool.counter_sets):
                fixed = in_use_groups(cluster.allocated, pool, set_name)
                compatibility.limit_counter_set(
                    m,
                    pool,
                    set_name,
                    fixed,
                    [
                        (e, m.any_of([v for v, _ in users], f"used[{'/'.join(e.id)}]"))
                        for e, users in devices
                        if compatibility_groups(e.device, set_name) is not None
                    ],
                )
