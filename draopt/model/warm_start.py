"""The placement model's warm start: first-fit's placement in the model's variables (phase 1 is
hinted with it and must place at least as much)."""

from __future__ import annotations

from collections import Counter, defaultdict

from draopt.cluster.firstfit import ClaimBook
from draopt.model.placement import Built
from draopt.model.prepare import Prepared


def _first_fit_hint(b: Built, prep: Prepared, book: ClaimBook, ff_by_pod: dict) -> dict:
    """First-fit's placement in the model's variables."""
    hint: dict = defaultdict(int)
    ff_counts: dict[str, Counter] = defaultdict(Counter)
    for var in list(b.k.values()) + list(b.y.values()) + list(b.placed.values()) + list(b.totals.values()):
        hint[var] = 0
    owner_at = {(o.kind.index, name): o for o in b.owners if o.node is not None for name in (o.spans or [o.node.name])}
    owner_of_claim = {o.claim_key: o for o in b.owners if not o.counted}
    for o in b.owners:
        if not o.counted:
            hint[o.mult] = 0
        for v in o.sel.values():
            hint[v] = 0
        for ts in o.terms.values():
            for t in ts:
                hint[t.var] = 0
    for kind in b.kinds:
        if kind.counted and kind.unit_size > 1:
            _hint_units(hint, b, prep, kind, ff_by_pod, owner_at)
            continue
        for pod in kind.pods:
            pl = ff_by_pod[pod.key]
            if not pl.placed:
                continue
            if kind.counted:
                hint[b.totals[(kind.index, (pod.priority, pod.group))]] += 1
                if (kind.index, pl.node) not in b.k:
                    ff_counts[pl.node][kind.index] += 1  # an interchangeable node, or none of the model's
                    continue
                hint[b.k[(kind.index, pl.node)]] += 1
                at = owner_at.get((kind.index, pl.node))
                results = (
                    [] if at is None else [(at, r) for alloc in pl.new_claims.values() for r in alloc.devices.results]
                )
                _hint_results(hint, prep, pl.node, results)
            else:
                if (pod.key, pl.node) not in b.y:
                    continue
                hint[b.y[(pod.key, pl.node)]] = 1
                hint[b.placed[pod.key]] = 1
                for ck, alloc in pl.new_claims.items():
                    of_claim = owner_of_claim.get(ck)
                    if of_claim is None:
                        continue
                    hint[of_claim.mult] = 1
                    _hint_results(hint, prep, pl.node, [(of_claim, r) for r in alloc.devices.results])
    # Kinds owned across nodes: the owner's multiplicity is the kind's pods on its nodes.
    for o in b.owners:
        if o.spans:
            hint[o.mult] = sum(hint.get(b.k[(o.kind.index, n)], 0) for n in o.spans)
    # Interchangeable nodes: first-fit's node contents as configurations.
    for nc in b.node_classes:
        index = {conf.counts: v for conf, v in zip(nc.configurations, nc.vars)}
        for v in nc.vars:
            hint[v] = 0
        for node in nc.nodes:
            counts = tuple(ff_counts[node.name][ki] for ki in nc.kinds)
            v = index.get(counts)
            if v is not None:
                hint[v] += 1
    return dict(hint)


def _hint_units(hint, b, prep, kind, ff_by_pod, owner_at) -> None:
    """First-fit's placement of counted units: per node, units by pods placed."""
    for (ki, name), parts in b.unit_parts.items():
        if ki == kind.index:
            for _, kj in parts:
                hint.setdefault(kj, 0)
    for unit, claims in zip(kind.units, kind.unit_claims):
        placed = [ff_by_pod[p.key] for p in unit if ff_by_pod[p.key].placed]
        if not placed:
            continue
        node = placed[0].node
        parts = dict(b.unit_parts.get((kind.index, node), []))
        if len(placed) not in parts or any(pl.node != node for pl in placed):
            continue  # not expressible: the completion of the hint will say so
        hint[parts[len(placed)]] += 1
        hint[b.k[(kind.index, node)]] += 1
        hint[b.totals[(kind.index, (unit[0].priority, unit[0].group))]] += len(placed)
        o = owner_at.get((kind.index, node))
        if o is None:
            continue
        results = [
            (o, r) for pl in placed for ck in claims if ck in pl.new_claims for r in pl.new_claims[ck].devices.results
        ]
        _hint_results(hint, prep, node, results)


def _hint_results(hint, prep, node, results) -> None:
    seen_sel = set()
    for o, r in results:
        ref = prep.column(node, (r.driver, r.pool, r.device))
        if ref is None:
            continue
        index = o.term_of
        if index is None:
            # (request, column) -> the owner's first term there (built once per owner).
            index = o.term_of = {}
            for key, ts in o.terms.items():
                for t in ts:
                    index.setdefault((t.spec.full_name, t.ref.key), (key, t))
        got = index.get((r.request, ref.key))
        if got is None:
            continue
        key, t = got
        hint[t.var] += 1
        sel = o.sel.get(key)
        if sel is not None and sel is not o.mult and (id(o), key, r.request) not in seen_sel:
            seen_sel.add((id(o), key, r.request))
            hint[sel] += 1
