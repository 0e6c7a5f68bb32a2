"""Who may share a device.

A device without `allowMultipleAllocations` goes to one request at most, across all claims
allocated together; admin-access requests may take a device another claim uses, but never a
device twice within one claim. Kubernetes quirk (first-fit only): inside one allocation run,
a device an admin-access request took is "allocating" and blocks non-admin requests that come
later in the search order. A multi-allocatable device may serve several requests (capacity
and distinctAttribute limit that elsewhere).

`limit_device` is the rule and `admin_blocks_later` the quirk; `limit_every_device` applies them
(with shared capacity) to every column of the model. A term
may stand for a group of `size` identical devices and for `mult` identical pods (counted
classes): then "one request at most" becomes "at most `size` devices taken", and "never twice
within one claim" becomes "at most `size` per pod of the claim's owner".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable

from draopt.model.encodings import capacity
from draopt.model.encodings.base import upper_bound
from draopt.model.encodings.context import ModelContext


@dataclass(frozen=True)
class DeviceUse:
    """One (sub-)request's variable on a device or device group."""

    var: Any  # devices of the group it takes (a bool for one device)
    admin: bool
    owner: Hashable  # the claim (instance) that takes it
    mult: Any = None  # pods that owner stands for: None (one), or a count variable


def limit_device(m, uses: list[DeviceUse], size: int = 1, multi_allocatable: bool = False) -> None:
    if len(uses) < 1 or multi_allocatable:
        return
    cp = m.cp
    non_admin = [u.var for u in uses if not u.admin]
    if len(non_admin) > 1:  # one use alone is bounded by its variable's range (at most `size`)
        if size == 1 and all(upper_bound(v) <= 1 for v in non_admin):
            m.add(cp.add_at_most_one(non_admin))
        else:
            m.add(cp.add(sum(non_admin) <= size))
    by_owner: dict[Hashable, list[DeviceUse]] = {}
    for u in uses:
        by_owner.setdefault(u.owner, []).append(u)
    for group in by_owner.values():
        if not any(u.admin for u in group):
            continue  # non-admin uses are already limited above
        if len(group) > 1 and size == 1 and all(u.mult is None and upper_bound(u.var) <= 1 for u in group):
            m.add(cp.add_at_most_one([u.var for u in group]))
        elif len(group) > 1 or group[0].mult is not None:
            mult = 1 if group[0].mult is None else group[0].mult
            m.add(cp.add(sum(u.var for u in group) <= size * mult))


def admin_blocks_later(m, uses: list[tuple]) -> None:
    """Kubernetes quirk (first-fit only): a device an admin-access request took is
    "allocating" within the run and blocks the non-admin requests of other claims that come
    later in the search order. `uses`: [(var, admin, spec key)] of one device; spec keys
    (claim, request, sub-request) sort in search order."""
    for var_a, admin_a, key_a in uses:
        if not admin_a:
            continue
        for var_n, admin_n, key_n in uses:
            if not admin_n and key_n[0] != key_a[0] and key_n > key_a:
                m.add(m.cp.add_bool_or([var_a.negated(), var_n.negated()]))


def index_columns(ctx: ModelContext) -> None:
    """Every column some owner may take, with the terms that may take it, in owner order."""
    for o in ctx.owners:
        for ts in o.terms.values():
            for t in ts:
                ctx.by_ref[t.ref.key].append(t)
    ctx.refs = {t.ref.key: t.ref for ts in ctx.by_ref.values() for t in ts}


def limit_every_device(ctx: ModelContext) -> None:
    """Across every owner, per column: who may share it (and allocate's admin-access quirk),
    and a multi-allocatable device's shared capacity (`draopt.model.encodings.capacity`)."""
    m, cluster = ctx.m, ctx.cluster
    for key, ts in ctx.by_ref.items():
        ref = ctx.refs[key]
        multi = cluster.features.consumable_capacity and ref.first.multi_allocatable
        limit_device(
            m,
            [
                DeviceUse(
                    t.var,
                    t.spec.admin_access,
                    (t.owner.index, t.spec.claim_index),
                    t.owner.mult if t.owner.counted else None,
                )
                for t in ts
            ],
            size=ref.size,
            multi_allocatable=multi,
        )
        if ctx.kubernetes_quirks and not multi:
            admin_blocks_later(m, [(t.var, t.spec.admin_access, t.spec.key) for t in ts])
        if multi:
            capacity.limit_shares(
                m,
                ref.first,
                cluster.allocated.capacity.get(ref.first.id, {}),
                [(t.var, t.problem.consumption(t.spec, t.entry)) for t in ts],
            )
