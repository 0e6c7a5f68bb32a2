"""Who may share a device.

A device without `allowMultipleAllocations` goes to one request at most, across all claims
allocated together; admin-access requests may take a device another claim uses, but never a
device twice within one claim. Kubernetes quirk (first-fit only): inside one allocation run,
a device an admin-access request took is "allocating" and blocks non-admin requests that come
later in the search order. A multi-allocatable device may serve several requests (capacity
and distinctAttribute limit that elsewhere).
"""
from __future__ import annotations

from .base import ModelData


def encode(m: ModelData) -> None:
    cp = m.cp
    f = m.problem.features
    order = {spec.key: i for i, spec in enumerate(m.specs)}
    for dev in m.problem.devices:
        specs = m.by_device.get(dev.index, [])
        if len(specs) < 2 or (f.consumable_capacity and dev.multi_allocatable):
            continue
        xs = {s.key: m.x[(s.key, dev.index)] for s in specs}
        non_admin = [xs[s.key] for s in specs if not s.admin_access]
        if len(non_admin) > 1:
            m.add(cp.add_at_most_one(non_admin))
        by_claim: dict[int, list] = {}
        for s in specs:
            by_claim.setdefault(s.claim_index, []).append(xs[s.key])
        for group in by_claim.values():
            if len(group) > 1:
                m.add(cp.add_at_most_one(group))
        if m.kubernetes_quirks:
            for a in specs:
                if not a.admin_access:
                    continue
                for n in specs:
                    if not n.admin_access and n.claim_index != a.claim_index and order[n.key] > order[a.key]:
                        m.add(cp.add_bool_or([xs[a.key].negated(), xs[n.key].negated()]))
