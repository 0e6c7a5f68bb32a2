"""invert for the placement model: a solved model's values as pod placements, with each pod's
claims allocated device by device as Kubernetes writes AllocationResults (counted kinds dealt out
to interchangeable nodes and devices, configurations of node classes mapped onto their nodes)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from draopt.dra.constraints import constraint_applies, normalise
from draopt.dra.decode import decode_claim
from draopt.dra.problem import ClaimSpec
from draopt.dra.reference import Chosen
from draopt.cluster.state import Cluster
from draopt.cluster.firstfit import ClaimBook, pending_claims
from draopt.cluster.state import pod_on
from draopt.model.placement import Built, Owner, Term, representative_owners
from draopt.model.prepare import Prepared
from draopt.cluster.result import PodPlacement


def decode_part(
    prep: Prepared, cluster: Cluster, workload, book: ClaimBook, sol: dict, kind_ids, ff_by_pod, share_id, held=None
) -> dict[str, PodPlacement]:
    """Invert the reductions for one part: nodes to the pods of counted kinds, devices out of
    groups, then AllocationResults as Kubernetes writes them. `held`: devices (id -> 1) that
    running pods the model kept still hold (free in `cluster`, not to be given)."""
    out: dict[str, PodPlacement] = {}
    kinds = [prep.kinds[i] for i in kind_ids]
    if sol.get("fallback"):
        for kind in kinds:
            for pod in kind.pods:
                ff = ff_by_pod[pod.key]
                out[pod.key] = PodPlacement(
                    pod.key,
                    ff.node,
                    pod.priority,
                    pod.group,
                    dict(ff.new_claims),
                    Counter(ff.reasons),
                    ff.prioritized_score,
                    ff.explanation,
                )
        return out
    b: Built | None = sol.get("built")
    val = sol.get("values", {})
    taken: dict = dict(held or {})
    assignment = _pattern_assignment(b, val) if b is not None else {}
    chosen = None
    if "colgen" in sol:
        assignment, chosen = sol["colgen"]
    for kind in kinds:
        if chosen is not None:
            _decode_counted(
                prep,
                cluster,
                workload,
                None,
                {},
                kind,
                book,
                share_id,
                taken,
                out,
                assignment,
                chosen=chosen[kind.index],
            )
        elif kind.counted and kind.unit_size > 1:
            _decode_units(prep, cluster, b, val, kind, book, share_id, taken, out)
        elif kind.counted:
            _decode_counted(prep, cluster, workload, b, val, kind, book, share_id, taken, out, assignment)
        else:
            _decode_unit(prep, b, val, kind, book, share_id, taken, out)
    for kind in kinds:
        for pod in kind.pods:
            pl = out.get(pod.key)
            if pl is None:
                pl = out[pod.key] = PodPlacement(pod.key, None, pod.priority, pod.group)
            if not pl.placed:
                ff = ff_by_pod[pod.key]
                if ff.placed:
                    pl.reasons = Counter(
                        {"not placed by the optimum (its room serves pods of more weight)": len(cluster.nodes)}
                    )
                else:
                    pl.reasons = Counter(ff.reasons)
                    pl.explanation = ff.explanation
    return out


def _pattern_assignment(b: Built, val: dict) -> dict[str, tuple]:
    """Interchangeable nodes: each node of a class gets the configurations the solution
    counts, in node order (the reduction's invert)."""
    out: dict[str, tuple] = {}
    for nc in b.node_classes:
        confs = [conf for conf, v in zip(nc.configurations, nc.vars) for _ in range(val.get(v, 0))]
        for node, conf in zip(nc.nodes, confs):
            out[node.name] = (nc, conf)
    return out


def _view_owner(prep, cluster, workload, book, nc, conf, kind, node):
    """The representative node's owner of `kind` with `conf`'s values, mapped onto `node`:
    its own problem and device columns, the representative's variables as keys."""

    rep = representative_owners(nc, prep, cluster, workload, book).get(kind.index)
    if rep is None:
        return None, {}
    rep_refs = nc.ref_positions
    if rep_refs is None:  # the representative's column positions, once per class
        rep_refs = nc.ref_positions = {r.key: i for i, r in enumerate(prep.refs[nc.nodes[0].name])}
    refs = prep.refs[node.name]
    o = Owner(-1, kind, node, None, prep.problems[(kind.index, node.name)], None)
    val: dict = {}
    for key, v in rep.sel.items():
        o.sel[key] = ("sel", key)
        val[("sel", key)] = conf.values.get((kind.index, "sel", key), 0)
    for key, ts in rep.terms.items():
        o.terms[key] = []
        for pos, t in enumerate(ts):
            var = ("term", key, pos)
            o.terms[key].append(Term(o, t.spec, t.problem, refs[rep_refs[t.ref.key]], var, {node.name}, t.entry))
            val[var] = conf.values.get((kind.index, "term", key, pos), 0)
    for wkey, chosen in rep.witness.items():
        o.witness[wkey] = {e: ("wit", wkey, e) for e in chosen}
        for e in chosen:
            val[("wit", wkey, e)] = conf.values.get((kind.index, "wit", wkey, e), 0)
    return o, val


def _decode_counted(prep, cluster, workload, b, val, kind, book, share_id, taken, out, assignment, chosen=None) -> None:
    """`chosen`: the kind's placed pods (column generation), else the model's totals say."""
    owners = prep.reductions.own_across.invert(b.owners, kind) if b is not None else {}
    per_node = [(name, val.get(var, 0)) for (ki, name), var in b.k.items() if ki == kind.index] if b is not None else []
    for name, (nc, conf) in assignment.items():
        if kind.index in nc.kinds:
            per_node.append((name, conf.counts[nc.kinds.index(kind.index)]))
    index = {n.name: n.index for n in cluster.nodes}
    per_node.sort(key=lambda nk: index[nk[0]])
    # Which pods: each (priority, gang) class gets its count, in queue order.
    chosen_pods = list(chosen or [])
    for (ki, ck), var in b.totals.items() if b is not None else []:
        if ki != kind.index:
            continue
        chosen_pods.extend(b.class_pods[(ki, ck)][: val.get(var, 0)])
    order = {p.key: i for i, p in enumerate(kind.pods)}
    chosen_pods.sort(key=lambda p: order[p.key])
    on_node: dict[str, list] = defaultdict(list)
    node_of = prep.reductions.count_pods.invert(chosen_pods, per_node)
    for pod in chosen_pods:
        on_node[node_of[pod.key]].append(pod)
    started: dict[int, Any] = {}  # id -> owner (kept alive: ids stay unique)
    for name, pods in on_node.items():
        problem = None
        if name in assignment:
            nc, conf = assignment[name]
            o, local = _view_owner(prep, cluster, workload, book, nc, conf, kind, cluster.by_name[name])
        else:
            o, local = owners.get(name), val
            if o is not None and o.spans:
                problem = prep.problems[(kind.index, name)]  # the pod's own node writes its claims
        if o is not None and id(o) not in started:
            # An owner across nodes deals to the pods of all its nodes from one count.
            started[id(o)] = o
            _start_dealing(o, local)
        for pod in pods:
            pl = out[pod.key] = PodPlacement(pod.key, name, pod.priority, pod.group)
            if o is not None:
                _deal_one_pod(prep, o, pod, book, share_id, taken, pl, local, problem=problem)


def _decode_units(prep, cluster, b, val, kind, book, share_id, taken, out) -> None:
    """Counted units alike: each (node, pods placed) slot to the next unit in queue order; the
    unit's first pods are placed, its claims allocated once, reported with its first pod."""
    if b is None:
        return
    index = {n.name: n.index for n in cluster.nodes}
    slots = []
    for (ki, name), parts in sorted(b.unit_parts.items(), key=lambda kv: index[kv[0][1]]):
        if ki == kind.index:
            for j, kj in parts:
                slots.extend([(name, j)] * val.get(kj, 0))
    if len(slots) > len(kind.units):
        raise RuntimeError(f"internal: {len(slots)} unit slots for {len(kind.units)} units")
    owners = {o.node.name: o for o in b.owners if o.counted and o.kind is kind}
    ready = set()
    for (name, j), unit, claims in zip(slots, kind.units, kind.unit_claims):
        for pod in unit[:j]:
            out[pod.key] = PodPlacement(pod.key, name, pod.priority, pod.group)
        o = owners.get(name)
        if o is None:
            continue
        if name not in ready:
            ready.add(name)
            _start_dealing(o, val)
        _deal_one_pod(prep, o, unit[0], book, share_id, taken, out[unit[0].key], val, claim_keys=claims)


def _start_dealing(o, val: dict) -> None:
    """What a counted owner has left to deal to its pods: device counts per column,
    sub-request counts, matchAttribute elements."""
    o._left = {t.var: val.get(t.var, 0) for ts in o.terms.values() for t in ts}
    o._sel_left = {k: val.get(v, 0) for k, v in o.sel.items()}
    o._wit_left = {key: {e: val.get(v, 0) for e, v in ch.items()} for key, ch in o.witness.items()}


def _deal_one_pod(prep, o, pod, book, share_id, taken, pl, val, claim_keys=None, problem=None) -> None:
    """One pod's share of a counted owner's devices (greedy; exact for what `countable` admits).
    `problem`: the pod's node's problem when the owner spans nodes (default the owner's)."""
    p = problem or o.problem
    group_devices = prep.reductions.group_devices  # its invert deals each column's devices
    left = o._left
    sel_left = o._sel_left
    wit_left = o._wit_left
    chosen_lists: list[list[Chosen]] = [[] for _ in p.claims]
    selected: dict = {}
    for claim in p.claims:
        # The pod's matchAttribute element (at most one counted choice per pod).
        witness: dict = {}
        for ci, c in enumerate(claim.constraints):
            if (claim.index, ci) in wit_left:
                counts = wit_left[(claim.index, ci)]
                e = next((e for e in sorted(counts, key=repr) if counts[e] > 0), None)
                if e is not None:
                    counts[e] -= 1
                    witness[ci] = e
        for ri, g in enumerate(claim.requests):
            alts = g.alternatives
            if g.has_subrequests:
                spec = next((s for s in alts if sel_left.get(s.key, 0) > 0), None)
                if spec is None:
                    raise RuntimeError(f"internal: no sub-request left for {pod.key}")
                sel_left[spec.key] -= 1
                selected[(claim.index, ri)] = spec.sub_index
            else:
                spec = alts[0]
            ts = o.terms.get(spec.key, [])
            need = spec.count
            allowed = _allowed_terms(o, claim, spec, ts, witness)
            picks = _choose_terms(o, claim, spec, allowed, left, need)
            for t in picks:
                left[t.var] -= 1
                reusable = spec.admin_access or (p.features.consumable_capacity and t.entry.multi_allocatable)
                dev = group_devices.invert(t.ref, 1, taken, reusable)[0]
                entry = p.inventory.by_id[dev.id]
                consumed = (
                    p.consumption(spec, entry) if entry.multi_allocatable and p.features.consumable_capacity else None
                )
                chosen_lists[claim.index].append(Chosen(spec, entry, consumed))
    if claim_keys is None:
        # the claims the pod's node asks for (not the extended-resource claim where a device
        # plugin serves the pod's extended resources: Cluster.pod_on)
        node = book.cluster.by_name.get(pl.node) if pl.node else None
        claim_keys = pending_claims(book, pod_on(node, pod) if node is not None else pod)
    keys = claim_keys
    if len(keys) != len(p.claims):
        raise RuntimeError(f"internal: pod {pod.key} has {len(keys)} pending claims, its kind {len(p.claims)}")
    _write_claims(p, [book.claims[u] for u in keys], chosen_lists, selected, share_id, pl)


def _allowed_terms(o, claim, spec, ts, witness: dict) -> list:
    """The terms whose device holds the pod's matchAttribute element of every constraint that
    covers the request (an index per owner, request and constraint: built once per owner)."""

    index = o.by_element
    out = None
    for ci, e in witness.items():
        c = claim.constraints[ci]
        if not constraint_applies(list(c.requests), spec.request_name, spec.sub_name):
            continue
        by_element: dict[tuple, list] | None = index.get((spec.key, ci))
        if by_element is None:
            fresh: dict[tuple, list] = defaultdict(list)
            by_element = index[(spec.key, ci)] = fresh
            for t in ts:
                raw = t.problem.attribute_for_constraint(t.spec, t.entry, c.match_attribute)
                v = normalise(raw, t.problem.features.list_type_attributes) if raw is not None else None
                if v is not None:
                    by_element[(v[0], next(iter(v[1])))].append(t)
        got = by_element.get(e, [])
        out = got if out is None else [t for t in out if t in set(got)]
    return list(ts) if out is None else out


def _choose_terms(o, claim, spec, allowed, left, need) -> list:
    """`need` column picks for one pod: distinct values when a distinctAttribute covers the
    request (most remaining first), a column at most once per pod when it is shared or admin."""

    distinct = [
        c.distinct_attribute
        for c in claim.constraints
        if c.distinct_attribute is not None and constraint_applies(list(c.requests), spec.request_name, spec.sub_name)
    ]
    once = spec.admin_access or (
        o.problem.features.consumable_capacity and any(t.entry.multi_allocatable for t in allowed)
    )
    picks = []
    if distinct:

        def value(t):
            raw = t.problem.attribute_for_constraint(t.spec, t.entry, distinct[0])
            v = normalise(raw, t.problem.features.list_type_attributes)
            return (v[0], next(iter(v[1])))

        by_value: dict = defaultdict(list)
        for t in allowed:
            if left.get(t.var, 0) > 0:
                by_value[value(t)].append(t)
        ranked = sorted(by_value, key=lambda e: (-sum(left[t.var] for t in by_value[e]), repr(e)))
        for e in ranked[:need]:
            picks.append(next(t for t in by_value[e] if left[t.var] > 0))
    else:
        for t in allowed:
            avail = left.get(t.var, 0)
            n = min(avail, need - len(picks), 1 if once else avail)
            picks.extend([t] * n)
            if len(picks) == need:
                break
    if len(picks) != need:
        raise RuntimeError(f"internal: request {spec.full_name}: {len(picks)} of {need} devices dealt")
    return picks


def _decode_unit(prep, b, val, kind, book, share_id, taken, out) -> None:
    for pod in kind.pods:
        node = None
        if b is not None:
            for n in prep.pod_nodes.get(pod.key, []):
                var = b.y.get((pod.key, n.name))
                if var is not None and val.get(var, 0):
                    node = n.name
                    break
        out[pod.key] = PodPlacement(pod.key, node, pod.priority, pod.group)
    if b is None:
        return
    for o in b.owners:
        if o.counted or o.kind is not kind or not val.get(o.mult, 0):
            continue
        key = o.claim_key
        users = [u for u in o.kind.users[key] if out[u].placed]
        anchor = out[users[0]].node
        p = prep.problems.get((kind.index, anchor)) or o.problem
        claim = p.claims[o.claim_index]
        chosen: list[Chosen] = []
        selected = {}
        in_claim: set = set()
        # Requests that need free devices first, admin access after (it may reuse any other).
        order = sorted(
            ((ri, g, s) for ri, g in enumerate(claim.requests) for s in g.alternatives), key=lambda x: x[2].admin_access
        )
        for ri, g, s in order:
            if True:
                sel = o.sel.get(s.key)
                if sel is None or not val.get(sel, 0):
                    continue
                if g.has_subrequests:
                    selected[(claim.index, ri)] = s.sub_index
                for t in o.terms.get(s.key, []):
                    n = val.get(t.var, 0)
                    if not n:
                        continue
                    reusable = s.admin_access or (p.features.consumable_capacity and t.entry.multi_allocatable)
                    for dev in prep.reductions.group_devices.invert(t.ref, n, taken, reusable, in_claim):
                        if not (p.features.consumable_capacity and dev.multi_allocatable):
                            in_claim.add(dev.id)
                        entry = p.inventory.by_id.get(dev.id)
                        if entry is None:
                            raise RuntimeError(f"internal: device {dev.id} not reachable from {anchor}")
                        spec = p.claims[claim.index].requests[ri].alternatives[max(0, s.sub_index)]
                        consumed = (
                            p.consumption(spec, entry)
                            if entry.multi_allocatable and p.features.consumable_capacity
                            else None
                        )
                        chosen.append(Chosen(spec, entry, consumed))
        lists: list[list[Chosen]] = [[] for _ in p.claims]
        lists[claim.index] = chosen
        results = _results(p, lists, selected, share_id, only=claim.index, real=book.claims[key])
        for u in users:
            out[u].new_claims[key] = results
        # The claim is reported once, with the first user (as the scheduler allocates it once).
        for u in users[1:]:
            out[u].new_claims.pop(key, None)


def _results(problem, lists, selected, share_id, only: int, real=None):
    order = {}
    for claim in problem.claims:
        for ri, g in enumerate(claim.requests):
            for s in g.alternatives:
                order[s.key] = ri
    ordered = [sorted(ch, key=lambda c: (order[c.request.key], c.device.index)) for ch in lists]
    claim = problem.claims[only]
    if real is not None:  # the problem may belong to a claim alike: write this one
        claim = ClaimSpec(claim.index, real, claim.requests, claim.constraints)

    return decode_claim(problem, claim, ordered[only], selected, share_id)


def _write_claims(p, claims, chosen_lists, selected, share_id, pl: PodPlacement) -> None:
    order = {}
    for claim in p.claims:
        for ri, g in enumerate(claim.requests):
            for s in g.alternatives:
                order[s.key] = ri
    for claim, real in zip(p.claims, claims):
        spec = ClaimSpec(claim.index, real, claim.requests, claim.constraints)
        ordered = sorted(chosen_lists[claim.index], key=lambda c: (order[c.request.key], c.device.index))

        pl.new_claims[f"{real.namespace}/{real.name}"] = decode_claim(p, spec, ordered, selected, share_id)
