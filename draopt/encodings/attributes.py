"""matchAttribute and distinctAttribute, scalar and list-type attributes.

Values are sets of (type, value) elements (a scalar is a one-element set).
match: one element is chosen and every chosen device of the constrained requests contains
it, so all chosen devices share a common element. distinct: each element appears on at most
one chosen device (pairwise disjoint); a multi-allocatable device picked twice clashes with
itself. A device without the attribute cannot be chosen for a constrained request; one with
a value of unknown type can only be chosen alone.
"""
from __future__ import annotations

from ..constraints import constraint_applies, normalise
from .base import ModelData


def _values(m: ModelData, claim, constraint_name: str, names: list[str], requirement: str):
    """[(literal, value or None)] for the claim's pairs the constraint covers; pairs without
    the attribute are forced to 0."""
    p = m.problem
    out = []
    for group in claim.requests:
        for spec in group.alternatives:
            if not constraint_applies(names, spec.request_name, spec.sub_name):
                continue
            for dev in m.by_spec[spec.key]:
                lit = m.x[(spec.key, dev.index)]
                raw = p.attribute_for_constraint(spec, dev, constraint_name)
                if raw is None:
                    m.add(m.cp.add(lit == 0), requirement)
                    continue
                out.append((lit, normalise(raw, p.features.list_type_attributes)))
    return out


def encode(m: ModelData) -> None:
    cp = m.cp
    for claim in m.problem.claims:
        for ci, c in enumerate(claim.constraints):
            name = c.match_attribute if c.match_attribute is not None else c.distinct_attribute
            kind = "matchAttribute" if c.match_attribute is not None else "distinctAttribute"
            need = f"claim {claim.key} constraints[{ci}]: {kind} {name}" + \
                (f" over {', '.join(c.requests)}" if c.requests else "")
            items = _values(m, claim, name, list(c.requests), need)
            if not items:
                continue
            lits = [lit for lit, _ in items]
            for lit, v in items:
                if v is None:   # unknown type: only alone
                    others = [o for o in lits if o is not lit]
                    if others:
                        m.add(cp.add(sum(others) == 0).only_enforce_if(lit), need)
            typed = [(lit, v) for lit, v in items if v is not None]
            elements = sorted({(v[0], e) for _, v in typed for e in v[1]}, key=repr)
            if c.match_attribute is not None:
                chosen = {e: cp.new_bool_var(f"match[{claim.index},{ci},{e!r}]") for e in elements}
                if chosen:
                    m.at_most_one(list(chosen.values()), need)
                for lit, v in typed:
                    m.add(cp.add_bool_or([chosen[(v[0], e)] for e in v[1]]).only_enforce_if(lit), need)
            else:
                for e in elements:
                    holders = [lit for lit, v in typed if v[0] == e[0] and e[1] in v[1]]
                    if len(holders) > 1:
                        m.at_most_one(holders, need)
