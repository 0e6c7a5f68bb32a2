"""Device compatibility groups (DRADeviceCompatibilityGroups, on top of partitionable devices).

All devices that draw on one counter set, those allocated before and those chosen now
(across every claim allocated together), must share at least one compatibility group; a
device that declares no groups pairs only with devices that declare none. Encoded like a
matchAttribute: one witness group per counter set, and every device on the set holds it.
"""
from __future__ import annotations

from ..inventory import compatibility_groups, in_use_groups
from .base import ModelData


def encode(m: ModelData) -> None:
    p = m.problem
    if not (p.features.partitionable_devices and p.features.compatibility_groups):
        return
    cp = m.cp
    for devs in m.counter_consumers():
        pool = devs[0].pool
        for set_name in sorted(pool.counter_sets):
            fixed = in_use_groups(p, pool, set_name)
            # Devices already allocated on the set narrow what a new device may share.
            allowed = frozenset.intersection(*fixed) if fixed else None
            chosen = []
            for d in devs:
                g = compatibility_groups(d.device, set_name)
                if g is None:
                    continue
                if allowed is not None:
                    g = g & allowed
                if not g:
                    m.add(cp.add(m.device_used(d) == 0))
                    continue
                chosen.append((d, g))
            if len(chosen) < 2 or frozenset.intersection(*[g for _, g in chosen]):
                continue   # one group common to all: nothing can clash
            groups = sorted(set().union(*[g for _, g in chosen]))
            witness = {g: cp.new_bool_var(f"compat[{pool.id},{set_name},{g}]") for g in groups}
            need = f"pool {pool.id}: compatibility groups on counter set {set_name}"
            m.at_most_one(list(witness.values()), need)
            for dev, g_set in chosen:
                m.add(cp.add_bool_or([witness[g] for g in sorted(g_set)]).only_enforce_if(m.device_used(dev)), need)
