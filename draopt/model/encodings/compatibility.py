"""Device compatibility groups (DRADeviceCompatibilityGroups, on top of partitionable devices).

All devices that draw on one counter set, those allocated before and those chosen now
(across every claim allocated together), must share at least one compatibility group; a
device that declares no groups pairs only with devices that declare none. Encoded like a
matchAttribute: one witness group per counter set, and every device on the set holds it.

`limit_counter_set` is the rule for one counter set; the model builder calls it.
"""

from __future__ import annotations

from draopt.dra.inventory import compatibility_groups


def limit_counter_set(m, pool, set_name: str, fixed: list, devices: list) -> None:
    """`fixed`: groups of devices allocated on the set; `devices`: [(DeviceEntry, used literal)]."""
    cp = m.cp
    # Devices already allocated on the set narrow what a new device may share.
    allowed = frozenset.intersection(*fixed) if fixed else None
    chosen = []
    for d, used in devices:
        g = compatibility_groups(d.device, set_name)
        if g is None:
            continue
        if allowed is not None:
            g = g & allowed
        if not g:
            m.add(cp.add(used == 0))
            continue
        chosen.append((used, g))
    if len(chosen) < 2 or frozenset.intersection(*[g for _, g in chosen]):
        return  # one group common to all: nothing can clash
    groups = sorted(set().union(*[g for _, g in chosen]))
    witness = {g: cp.new_bool_var(f"compat[{pool.id},{set_name},{g}]") for g in groups}
    need = f"pool {pool.id}: compatibility groups on counter set {set_name}"
    m.at_most_one(list(witness.values()), need)
    for used, g_set in chosen:
        m.add(cp.add_bool_or([witness[g] for g in sorted(g_set)]).only_enforce_if(used), need)
