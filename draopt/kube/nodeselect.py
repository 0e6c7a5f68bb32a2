"""Node selectors as the kube-scheduler's nodeaffinity package evaluates them, and taint toleration."""

from __future__ import annotations

from typing import Callable

from draopt.errors import InputError
from draopt.kube.models import DeviceTaint, DeviceToleration, Node, NodeSelector, NodeSelectorRequirement
from draopt.kube.models.core import Taint, Toleration


def _requirement_matches(req: NodeSelectorRequirement, values: dict[str, str], where: str) -> bool:
    op, key = req.operator, req.key
    present = key in values
    if op == "In":
        return present and values[key] in req.values
    if op == "NotIn":
        return not present or values[key] not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if len(req.values) != 1:
            raise InputError(f"{where}: operator {op} needs exactly one value")
        try:
            bound = int(req.values[0])
        except ValueError:
            raise InputError(f"{where}: operator {op} needs an integer value, got {req.values[0]!r}") from None
        if not present:
            return False
        try:
            actual = int(values[key])
        except ValueError:
            return False
        return actual > bound if op == "Gt" else actual < bound
    raise InputError(f"{where}: unknown node selector operator {op!r}")


def node_selector_matches(selector: NodeSelector, node: Node, where: str | Callable[[], str] = "nodeSelector") -> bool:
    """Terms are ORed; requirements within a term are ANDed; an empty term matches nothing.
    `where` (the selector's place, in error messages) may be a function that writes it: called
    only for an operator other than In and Exists."""
    labels = node.metadata.labels or {}
    fields = None
    for i, term in enumerate(selector.node_selector_terms):
        if not term.match_expressions and not term.match_fields:
            continue
        ok = True
        for r in term.match_expressions:
            # In and Exists (most selectors) answered here; the rest, and errors, by _requirement_matches
            if r.operator == "In":
                ok = r.key in labels and labels[r.key] in r.values
            elif r.operator == "Exists":
                ok = r.key in labels
            else:
                if not isinstance(where, str):
                    where = where()
                ok = _requirement_matches(r, labels, f"{where}.nodeSelectorTerms[{i}].matchExpressions")
            if not ok:
                break
        if ok and term.match_fields:
            if fields is None:
                fields = {"metadata.name": node.name}
            if not isinstance(where, str):
                where = where()
            ok = all(
                _requirement_matches(r, fields, f"{where}.nodeSelectorTerms[{i}].matchFields")
                for r in term.match_fields
            )
        if ok:
            return True
    return False


def node_matches(
    node: Node | None,
    node_name: str | None,
    all_nodes: bool | None,
    selector: NodeSelector | None,
    where: str | Callable[[], str],
) -> bool:
    """Kubernetes' NodeMatches: nodeName, else allNodes, else nodeSelector, else no match.
    `where` as for node_selector_matches (a function: written only for an error)."""
    if node_name:
        return node is not None and node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node is not None and node_selector_matches(selector, node, where)
    return False


def tolerates(toleration: DeviceToleration | Toleration, taint: DeviceTaint | Taint) -> bool:
    """resourceclaim.ToleratesTaint (and core/v1 Toleration.ToleratesTaint, the same rule): empty key/effect match all; empty operator means Equal."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    op = toleration.operator or "Equal"
    if op == "Equal":
        return (toleration.value or "") == (taint.value or "")
    return op == "Exists"
