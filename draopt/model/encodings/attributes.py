"""matchAttribute and distinctAttribute, scalar and list-type attributes.

Values are sets of (type, value) elements (a scalar is a one-element set).
match: one element is chosen and every chosen device of the constrained requests contains
it, so all chosen devices share a common element. distinct: each element appears on at most
one chosen device (pairwise disjoint); a multi-allocatable device picked twice clashes with
itself. A device without the attribute cannot be chosen for a constrained request; one with
a value of unknown type can only be chosen alone.

`limit_match` and `limit_distinct` are the rules for one constraint of one claim; the model
builder calls them. A term's variable may count devices of a group
(identical values) taken for `mult` identical pods (a counted class); then match counts the
pods per chosen element (`counted=True`: each pod holds exactly one element, and the devices of
a covered request with that element are `count` per such pod), and distinct allows each element
at most `mult` times (once per pod; exact for scalar values, see docs/placement.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from draopt.model.encodings.base import upper_bound


@dataclass
class AttributeTerm:
    var: Any  # devices taken (bool, or a count)
    value: Any  # normalised value, or None for an unknown type
    size: int = 1  # devices the variable may count (its upper bound)
    spec_key: Any = None  # the (sub-)request (counted match: per request)
    count: int = 1  # devices the request takes per pod (counted match)


def limit_match(m, terms: list[AttributeTerm], need: str, name: str, *, mult=None, counted: bool = False) -> dict:
    """Returns the witness variables (element -> var)."""
    cp = m.cp
    _unknown_alone(m, terms, need)
    typed = [t for t in terms if t.value is not None]
    elements = sorted({(t.value[0], e) for t in typed for e in t.value[1]}, key=repr)
    if counted:
        # Scalar values only (the caller checks): each pod picks one element, every covered
        # request takes its `count` devices among devices with that element.
        chosen = {e: cp.new_int_var(0, upper_bound(mult), f"match[{name},{e!r}]") for e in elements}
        m.add(cp.add(sum(chosen.values()) == mult), need)
        by_req: dict = {}
        for t in typed:
            by_req.setdefault(t.spec_key, {}).setdefault((t.value[0], next(iter(t.value[1]))), []).append(t)
        for key, per_value in by_req.items():
            count = next(iter(per_value.values()))[0].count
            for e in elements:
                m.add(cp.add(sum(t.var for t in per_value.get(e, [])) == count * chosen[e]), need)
        return chosen
    chosen = {e: cp.new_bool_var(f"match[{name},{e!r}]") for e in elements}
    if chosen:
        m.at_most_one(list(chosen.values()), need)
    for t in typed:
        witnesses = [chosen[(t.value[0], e)] for e in t.value[1]]
        if t.size == 1 and upper_bound(t.var) <= 1:
            m.add(cp.add_bool_or(witnesses).only_enforce_if(t.var), need)
        else:
            m.add(cp.add(t.var <= t.size * sum(witnesses)), need)
    return chosen


def limit_distinct(m, terms: list[AttributeTerm], need: str, *, mult=None) -> None:
    cp = m.cp
    _unknown_alone(m, terms, need)
    typed = [t for t in terms if t.value is not None]
    elements = sorted({(t.value[0], e) for t in typed for e in t.value[1]}, key=repr)
    for e in elements:
        holders = [t.var for t in typed if t.value[0] == e[0] and e[1] in t.value[1]]
        if mult is None:
            if len(holders) > 1 and all(upper_bound(h) <= 1 for h in holders):
                m.at_most_one(holders, need)
            elif len(holders) > 1:
                m.add(cp.add(sum(holders) <= 1), need)
            elif holders and upper_bound(holders[0]) > 1:
                m.add(cp.add(holders[0] <= 1), need)
        else:
            m.add(cp.add(sum(holders) <= mult), need)


def _unknown_alone(m, terms: list[AttributeTerm], need: str) -> None:
    """A value of unknown type can only be chosen alone."""
    for t in terms:
        if t.value is None:
            others = [o.var for o in terms if o is not t]
            if others:
                m.add(m.cp.add(sum(others) == 0).only_enforce_if(m.positive(t.var)), need)
            if upper_bound(t.var) > 1:
                m.add(m.cp.add(t.var <= 1), need)


def constraint_name(c) -> tuple[str, str]:
    """(kind, attribute name) of a DeviceConstraint."""
    if c.match_attribute is not None:
        return "matchAttribute", c.match_attribute
    return "distinctAttribute", c.distinct_attribute
