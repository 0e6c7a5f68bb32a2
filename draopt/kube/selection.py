"""Which pending objects a command considers: kubectl's `-n NS` (repeatable), `-A` (every
namespace, wins over -n) and `-l SELECTOR` (kubectl's label selector syntax), read by the command
line (draopt.cli.conventions.selection_flags) and applied here, below the commands that use them."""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable
from typing import Any

from draopt.errors import DraoptError


def pending_filter(
    namespace: list[str] | None, all_namespaces: bool, selector: str | None
) -> Callable[[Any], bool] | None:
    """Whether an object (a pod, a claim: its namespace and labels) is selected; None when -n/-l
    select everything. A selector that cannot be read: an input error (exit 2)."""
    namespaces = None if all_namespaces or not namespace else set(namespace)
    parsed = parse_selector(selector) if selector else None
    if namespaces is None and parsed is None:
        return None
    from draopt.kube.adoption import selector_matches

    def wanted(obj) -> bool:
        if namespaces is not None and obj.namespace not in namespaces:
            return False
        return parsed is None or selector_matches(parsed, obj.metadata.labels)

    return wanted


def select_pending(objects, namespace: list[str] | None, all_namespaces: bool, selector: str | None):
    """The input with only the pending pods that -n/-l select (running pods stay: they hold their
    resources). A gang cut by the selection is short of its minCount, as it would be."""
    wanted_pending = pending_filter(namespace, all_namespaces, selector)
    if wanted_pending is None:
        return objects

    def wanted(pod) -> bool:
        return bool(pod.spec.node_name) or wanted_pending(pod)

    pods = [pod for pod in objects.pods if wanted(pod)]
    pending = sum(1 for pod in objects.pods if not pod.spec.node_name)
    chosen = sum(1 for pod in pods if not pod.spec.node_name)
    print(f"note: {chosen} of {pending} pending pod(s) selected (-n/-l)", file=sys.stderr)
    return dataclasses.replace(objects, pods=pods)


def select_claim_refs(
    claims, refs: list[str] | None, namespace: list[str] | None, all_namespaces: bool, selector: str | None
) -> list[str] | None:
    """The claims a command allocates (NAMESPACE/NAME) once -n/-l have chosen: `refs` (--claim)
    when they select everything; the named claims, each of which they must select; without names,
    the pending claims they select, in input order (a claim given again with status.allocation
    is not pending). An empty list: they select no pending claim."""
    wanted = pending_filter(namespace, all_namespaces, selector)
    if wanted is None:
        return refs
    by_key = {f"{c.namespace}/{c.name}": c for c in claims}
    if refs:
        for ref in refs:
            claim = by_key.get(ref if "/" in ref else f"default/{ref}")
            if claim is not None and not wanted(claim):
                raise DraoptError(f"--claim {ref}: not among the claims -n/-l select")
        return refs
    allocated = {f"{c.namespace}/{c.name}" for c in claims if c.status.allocation is not None}
    pending = [c for c in claims if c.status.allocation is None and f"{c.namespace}/{c.name}" not in allocated]
    chosen = list(dict.fromkeys(f"{c.namespace}/{c.name}" for c in pending if wanted(c)))
    total = len(dict.fromkeys(f"{c.namespace}/{c.name}" for c in pending))
    print(f"note: {len(chosen)} of {total} pending claim(s) selected (-n/-l)", file=sys.stderr)
    return chosen


def parse_selector(text: str) -> dict:
    """kubectl's label selector (`-l`) as a LabelSelector: requirements separated by commas
    outside parentheses: `k=v` and `k==v` (present and equal), `k!=v` (absent or other),
    `k in (a,b)`, `k notin (a,b)`, `k` (present), `!k` (absent)."""
    terms, depth, current = [], 0, ""
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    terms.append(current)
    key = r"([A-Za-z0-9][-A-Za-z0-9_./]*)"
    expressions = []
    for term in (t.strip() for t in terms):
        if m := re.fullmatch(key + r"\s+(in|notin)\s+\(([^()]*)\)", term):
            values = [v.strip() for v in m[3].split(",") if v.strip()]
            expressions.append({"key": m[1], "operator": "In" if m[2] == "in" else "NotIn", "values": values})
        elif m := re.fullmatch(key + r"\s*(==|=|!=)\s*([-A-Za-z0-9_.]*)", term):
            expressions.append({"key": m[1], "operator": "NotIn" if m[2] == "!=" else "In", "values": [m[3]]})
        elif m := re.fullmatch(r"(!?)\s*" + key, term):
            expressions.append({"key": m[2], "operator": "DoesNotExist" if m[1] else "Exists"})
        else:
            raise DraoptError(
                f"--selector {text!r}: cannot read {term!r} (k=v, k!=v, k in (a,b), k notin (a,b), k, !k)"
            )
    return {"matchExpressions": expressions}
