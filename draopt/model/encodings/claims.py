"""Owners' claims: each (sub-)request takes its count of devices among its candidate columns
(a term per column), a prioritized list chooses one sub-request per pod, allocationMode All
takes every matching device on the node of a pod that uses the claim, a unit's claim is
allocated (`active`) iff one of its pods is placed and its devices are reachable from their
nodes, and matchAttribute / distinctAttribute hold over the owner's terms
(`draopt.model.encodings.attributes`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from draopt.dra.constraints import constraint_applies, normalise
from draopt.dra.problem import MAX_RESULTS, Problem
from draopt.model.encodings import attributes
from draopt.model.encodings.attributes import AttributeTerm, constraint_name
from draopt.model.encodings.base import upper_bound
from draopt.model.encodings.context import ModelContext, Owner, PlacementModel, Term
from draopt.model.prepare import _usable
from draopt.model.reductions import Kind


def _specs(problem: Problem, claim_indexes=None):
    for claim in problem.claims:
        if claim_indexes is not None and claim.index not in claim_indexes:
            continue
        for g in claim.requests:
            yield claim, g


def _select(m: PlacementModel, owner: Owner, g, cap: int, preference: list) -> None:
    """A request's selection: its owner's multiplicity for a plain request; for a prioritized
    list, one count per sub-request (how many of the owner's pods take it), summing to it."""
    if not g.has_subrequests:
        owner.sel[g.alternatives[0].key] = owner.mult
        return
    sels = []
    for s in g.alternatives:
        v = m.cp.new_int_var(0, cap, f"sel[{owner.index},{s.key}]")
        owner.sel[s.key] = v
        sels.append(v)
        if s.sub_index:
            preference.append(s.sub_index * v)
    m.add(m.cp.add(sum(sels) == owner.mult))


def add_requests(ctx: ModelContext, owner: Owner, cap: int) -> None:
    """A counted kind on one node: `cap` pods at most, each with the kind's claims."""
    m, prep, preference = ctx.m, ctx.prep, ctx.preference
    cp = m.cp
    p = owner.problem
    node = owner.node
    assert node is not None  # a counted owner
    refs = prep.refs.get(node.name, [])
    reach = set(owner.spans) if owner.spans else {node.name}
    claim_terms: dict[int, list] = defaultdict(list)
    for claim, g in _specs(p):
        _select(m, owner, g, cap, preference)
        for s in g.alternatives:
            ts = []
            for ref in refs:
                e = ref.first if ref.node is not None else p.inventory.by_id.get(ref.first.id)
                if e is None or not prep.candidacy(p, s, e):
                    continue
                multi = p.features.consumable_capacity and e.multi_allocatable
                # A shared device serves each pod once; admin access may take a device every pod takes.
                hi = min(cap * s.count, cap if multi else ref.size * (cap if s.admin_access else 1))
                v = cp.new_int_var(0, hi, f"z[{owner.index},{s.key},{ref.key}]")
                if multi:
                    m.add(cp.add(v <= owner.sel[s.key]))  # each pod takes a shared device once per request
                ts.append(Term(owner, s, p, ref, v, set(reach), e))
            owner.terms[s.key] = ts
            claim_terms[claim.index].extend(t.var for t in ts)
            m.add(
                cp.add(sum(t.var for t in ts) == s.count * owner.sel[s.key]),
                f"claim {claim.key} request {s.full_name}: {s.count} device(s)",
            )
    for claim in p.claims:
        if claim_terms[claim.index]:
            m.add(cp.add(sum(claim_terms[claim.index]) <= MAX_RESULTS * owner.mult))
    add_constraints(m, owner, counted=True)


def add_unit_claims(ctx: ModelContext, kind: Kind) -> None:
    """A unit: one owner per pending claim, allocated iff one of the pods that use it is placed."""
    m, cp, prep = ctx.m, ctx.cp, ctx.prep
    for ci, key in enumerate(kind.claim_keys):
        users = kind.users[key]
        active = cp.new_bool_var(f"active[{key}]")
        for u in users:
            m.add(cp.add(active >= ctx.placed[u]))
        m.add(cp.add(active <= sum(ctx.placed[u] for u in users)))
        nodes = sorted(
            {n.name for u in users for n in prep.pod_nodes[u] if n.name in ctx.node_names and (u, n.name) in ctx.y}
        )
        problems = [(n, prep.problems[(kind.index, n)]) for n in nodes if (kind.index, n) in prep.problems]
        if not problems:
            m.add(cp.add(active == 0))
            continue
        owner = Owner(len(ctx.owners), kind, None, active, problems[0][1], ci, claim_key=key)
        ctx.owners.append(owner)
        _add_unit_requests(ctx, owner, problems, users, reach_holds=ctx.allocation)


def _add_unit_requests(
    ctx: ModelContext,
    owner: Owner,
    problems: list[tuple[str, Problem]],
    users: list[str],
    reach_holds: bool = False,
) -> None:
    """One pending claim of a unit, over the nodes its pods may use. `reach_holds`: the reach
    rule is left out where it holds by itself (a term reached from every node of the pod)."""
    m, prep, y, placed = ctx.m, ctx.prep, ctx.y, ctx.placed
    cp = m.cp
    user_nodes = {u: {n.name for n in prep.pod_nodes[u] if (u, n.name) in y} for u in users} if reach_holds else {}
    ci = owner.claim_index
    assert ci is not None  # a unit's owner
    claim = owner.problem.claims[ci]
    claim_vars: list = []
    for ri, g in enumerate(claim.requests):
        _select(m, owner, g, 1, ctx.preference)
        for s in g.alternatives:
            ts, all_nodes = _unit_terms(ctx, owner, s, problems)
            owner.terms[s.key] = ts
            claim_vars.extend(t.var for t in ts)
            sel = owner.sel[s.key]
            if s.mode == "All":
                _all_request(m, owner, s, ts, problems, all_nodes, users, y, sel)
            else:
                m.add(
                    cp.add(sum(t.var for t in ts) == s.count * sel),
                    f"claim {claim.key} request {s.full_name}: {s.count} device(s)",
                )
            # Reach: a device goes only with pods on nodes that can use it.
            for t in ts:
                for u in users:
                    if reach_holds and user_nodes[u] <= t.reach:
                        continue  # allocate's one pod on its one node: the constraint says t.var <= hi
                    near = [y[(u, n)] for n in sorted(t.reach) if (u, n) in y]
                    hi = upper_bound(t.var)
                    m.add(cp.add(t.var <= hi * (sum(near) + 1 - placed[u])))
    if claim_vars:
        m.add(cp.add(sum(claim_vars) <= MAX_RESULTS), f"claim {claim.key}: at most {MAX_RESULTS} results")
    add_constraints(m, owner, counted=False)


def _unit_terms(ctx: ModelContext, owner: Owner, s, problems: list[tuple[str, Problem]]) -> tuple[list[Term], dict]:
    """The (sub-)request's terms over the nodes of the claim's pods (a column once, with the
    nodes it is reached from), and its spec per node where its mode is All."""
    prep, cp = ctx.prep, ctx.cp
    by_ref: dict[Any, Term] = {}
    all_nodes: dict[str, Any] = {}
    for node_name, p in problems:
        spec = _same_spec(p, s)
        for ref in prep.refs.get(node_name, []):
            e = ref.first if ref.node is not None else p.inventory.by_id.get(ref.first.id)
            if e is None or not prep.candidacy(p, spec, e):
                continue
            t = by_ref.get(ref.key)
            if t is None:
                v = (
                    cp.new_int_var(0, ref.size, f"z[{owner.index},{s.key},{ref.key}]")
                    if ref.size > 1
                    else cp.new_bool_var(f"z[{owner.index},{s.key},{ref.key}]")
                )
                t = by_ref[ref.key] = Term(owner, spec, p, ref, v, set(), e)
            t.reach.add(node_name)
        if spec.mode == "All":
            all_nodes[node_name] = spec
    return list(by_ref.values()), all_nodes


def _same_spec(problem: Problem, spec):
    claim = problem.claims[spec.claim_index]
    group = claim.requests[spec.request_index]
    return group.alternatives[max(0, spec.sub_index)]


def _all_request(m, owner, s, ts, problems, all_nodes, users, y, sel) -> None:
    """allocationMode All: on the node of a pod that uses the claim, every matching device."""
    cp = m.cp
    for t in ts:
        m.add(cp.add(t.var <= t.ref.size * sel))
    claim_key = owner.problem.claims[owner.claim_index].key
    for node_name, spec in all_nodes.items():
        p = dict(problems)[node_name]
        need = f"claim {claim_key} request {spec.full_name}: all {len(spec.all_devices)} matching devices"
        usable = bool(spec.all_devices) and all(_usable(p, spec, d) for d in spec.all_devices)
        term_of: dict[tuple, Term] = {}  # device id -> the term whose column holds it (reached from the node)
        for t in ts:
            if node_name in t.reach:
                for x in t.ref.entries:
                    term_of.setdefault(x.id, t)
        for u in users:
            yv = y.get((u, node_name))
            if yv is None:
                continue
            if not usable:
                m.add(cp.add(yv + sel <= 1), need)
                continue
            for d in spec.all_devices:
                t = term_of.get(d.id)
                if t is None:
                    m.add(cp.add(yv + sel <= 1), need)
                    break
                m.add(cp.add(t.var >= t.ref.size * (yv + sel - 1)), need)


def add_constraints(m: PlacementModel, owner: Owner, counted: bool) -> None:
    """matchAttribute / distinctAttribute of the owner's claims."""
    for claim in owner.claims():
        for ci, c in enumerate(claim.constraints):
            kind, name = constraint_name(c)
            need = f"claim {claim.key} constraints[{ci}]: {kind} {name}" + (
                f" over {', '.join(c.requests)}" if c.requests else ""
            )
            terms = []
            for g in claim.requests:
                for s in g.alternatives:
                    if not constraint_applies(list(c.requests), s.request_name, s.sub_name):
                        continue
                    for t in owner.terms.get(s.key, []):
                        raw = t.problem.attribute_for_constraint(t.spec, t.entry, name)
                        if raw is None:
                            m.add(m.cp.add(t.var == 0), need)
                            continue
                        terms.append(
                            AttributeTerm(
                                t.var,
                                normalise(raw, t.problem.features.list_type_attributes),
                                t.ref.size,
                                s.key,
                                s.count,
                            )
                        )
            if not terms:
                continue
            tag = f"{owner.index},{claim.index},{ci}"
            if c.match_attribute is not None:
                owner.witness[(claim.index, ci)] = attributes.limit_match(
                    m, terms, need, tag, mult=owner.mult if counted else None, counted=counted
                )
            else:
                attributes.limit_distinct(m, terms, need, mult=owner.mult if counted else None)
