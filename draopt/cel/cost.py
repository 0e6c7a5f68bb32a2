"""Kubernetes' runtime cost and the API server's worst-case estimate, which cel-cpp does not count.

Kubernetes stops an evaluation whose actual cost passes 1,000,000 ("operation
cancelled: actual cost limit exceeded").  cel-cpp does not count cost, so
draopt estimates it: 1 per identifier, field selection, index, operator and
function call, 10 per list literal, 30 per map literal (cel-go's runtime cost
tracker with the Kubernetes options), and for every comprehension iteration
the body's cost plus the loop condition/step overhead of cel-go's expansion of
that macro (all 3, exists 4, exists_one 2, filter 7, map/transform* 13;
calibrated on celcoststability_test.go: ``self.array.all(e, e > 0)`` over 8
elements costs 43 there, 43 here).  Expressions without comprehensions cannot
come near the limit and run untouched, and so do those whose loops are all
bounded (see ``estimated_cost`` below) with a worst case under the limit; in
the others every macro body gets a ``__dra_tick(cost)`` call (one Python call
per iteration).  Differences from Kubernetes' figure: the
size-dependent costs Kubernetes' cost.go gives to string and list functions
(``matches``, ``split``, ``sort``, ``lists.range``...) count 1 here, ``sortBy``
iterations are not counted, and ``has()`` counts 0 (Kubernetes'
``PresenceTestHasCost(false)``).  ``CompiledExpression.cost`` (draopt.cel.core) returns the
estimate for one device.

``CompiledExpression.estimated_cost`` is the API server's worst case over
all devices, which ``draopt validate`` checks ("too complex, exceeds cost
limit"): the same model with each loop's size bounded by a literal list,
``lists.range(N)``, the device's attribute/capacity maps (32 entries) or a
list-type attribute (48 values).  Loops over anything else (``split()``
results, ...) have no bound here and are not checked; Kubernetes' estimator
bounds them from string and list size limits.  On the DRA test cases the
figures are within 25% of Kubernetes' (``exists_one`` over the domains: 131
here, 164 there; the nested "expensive" loops: 75,555,551 / 85,555,551).
"""
from __future__ import annotations

import threading
from typing import Optional

from draopt.cel.includes import MAX_INCLUDES_LIST
from draopt.cel.internal import _EMPTY_ATTRS, _EMPTY_CAP, _MERGE_MAPS, _TICK, _TO_MAP
from draopt.cel.rewrite import _split_args, _tokenize


_COST_STATE = threading.local()
_COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"

# cost of one iteration beyond its body: loop condition + step of cel-go's expansion
# (calibrated on the runtime costs of k8s.io/apiextensions-apiserver/.../celcoststability_test.go,
# e.g. "self.array.all(e, e > 0)" on 8 elements = 43 = 2 + 8 * (3 + 2) + 1).
_LOOP_OVERHEAD = {
    "all": 3, "exists": 4, "exists_one": 2, "existsOne": 2,
    "filter": 7, "map": 13, "transformList": 13, "transformMap": 13, "transformMapEntry": 13,
}
# arguments before the body: number of iteration variables (one or two)
_PREDICATE_MACROS = {"all", "exists", "exists_one", "existsOne", "filter"}
_TRANSFORM_MACROS = {"map", "transformList", "transformMap", "transformMapEntry"}
_TYPE_NAMES = {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn"}


def _fn_to_map(pairs):
    return {k: v for k, v in pairs}


def _fn_merge_maps(maps):
    out = {}
    for m in maps:
        for k, v in m.items():
            if k in out:
                raise ValueError(f"insert failed: key {k} already exists")
            out[k] = v
    return out


def _fn_tick(c):
    st = _COST_STATE
    st.cost += c
    if st.cost > st.limit:
        raise ValueError(_COST_EXCEEDED)
    return True


# worst-case sizes of the DRA inputs (resourceapi limits), for the API server's estimate
MAX_ATTRIBUTES_AND_CAPACITIES = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice


def _receiver_size(sig, toks, dot_idx, worst: bool = False) -> Optional[int]:
    """Number of elements of a macro receiver known from the source: a list literal or
    ``lists.range(N)`` with an integer literal N (None otherwise).  With ``worst``, also
    the maximum sizes of the device's maps and list attributes."""
    if dot_idx == 0:
        return None
    end = dot_idx - 1
    if worst:
        text = "".join(toks[sig[x]][1] for x in range(max(0, end - 2), end + 1))
        if text in ("device.attributes", "device.capacity"):
            return MAX_ATTRIBUTES_AND_CAPACITIES
        closer = toks[sig[end]][1]
        if closer == ")" and (_EMPTY_ATTRS in toks[sig[end - 1]][1] or _EMPTY_CAP in toks[sig[end - 1]][1]):
            return MAX_ATTRIBUTES_AND_CAPACITIES  # the attributes (capacities) of one domain
        if toks[sig[end]][0] == "id" and end >= 2 and toks[sig[end - 1]][1] == "." \
                and toks[sig[end - 2]][1] == ")" and end >= 3 and toks[sig[end - 3]][1] in (_EMPTY_ATTRS,):
            return MAX_INCLUDES_LIST  # a list-type attribute
    closer = toks[sig[end]][1]
    if closer not in ("]", ")"):
        return None
    opener = "[" if closer == "]" else "("
    depth = 0
    k = end
    commas = 0
    while k >= 0:
        t = toks[sig[k]][1] if toks[sig[k]][0] == "other" else None
        if t in ("]", ")", "}"):
            depth += 1
        elif t in ("[", "(", "{"):
            depth -= 1
            if depth == 0:
                break
        elif t == "," and depth == 1:
            commas += 1
        k -= 1
    if k < 0 or toks[sig[k]][1] != opener:
        return None
    if opener == "[":
        if k > 0 and (toks[sig[k - 1]][0] in ("id", "str") or toks[sig[k - 1]][1] in (")", "]", "}")
                      or toks[sig[k - 1]][1].isdigit()):
            return None  # an index, not a list literal
        return 0 if end == k + 1 else commas + 1
    inner = "".join(toks[sig[x]][1] for x in range(k + 1, end))
    if k >= 3 and toks[sig[k - 1]][1] == "range" and toks[sig[k - 2]][1] == "." \
            and toks[sig[k - 3]][1] == "lists" and inner.isdigit():
        return int(inner)
    return None


def _instrument(src: str, worst: bool = False, ticks: bool = True):
    """Return (instrumented source, static cost outside loop bodies, has comprehensions,
    static cost with the loops when every receiver's size is known from the source, else None)."""
    toks = _tokenize(src)
    sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]
    out = []
    cost = 0
    loops = False
    total_extra: int | None = 0  # cost of the loops, for the static total
    pos = 0
    j = 0
    operand_end = False
    while j < len(sig):
        kind, t = toks[sig[j]]
        nxt = toks[sig[j + 1]][1] if j + 1 < len(sig) else ""
        prev = toks[sig[j - 1]][1] if j > 0 else ""
        if kind == "id" and prev == "." and nxt == "(" and t in _LOOP_OVERHEAD:
            close, args = _split_args(sig, toks, j + 1)
            if not args:
                nvars = 0
            elif t in _PREDICATE_MACROS:
                nvars = len(args) - 1 if len(args) in (2, 3) else 0
            elif t == "map":
                nvars = 1 if len(args) in (2, 3) else 0
            else:
                nvars = 2 if len(args) in (3, 4) else 0
            if close is not None and nvars in (1, 2) and all(
                b - a == 1 and toks[sig[a]][0] == "id" for a, b in args[:nvars]
            ):
                texts = ["".join(x for _, x in toks[sig[a] : sig[b]]) for a, b in args]
                inner = [_instrument(x, worst, ticks) for x in texts[nvars:]]
                per_iter = _LOOP_OVERHEAD[t] + sum(x[1] for x in inner)
                size = _receiver_size(sig, toks, j - 1, worst)
                if total_extra is not None:
                    if size is None or any(x[3] is None for x in inner):
                        total_extra = None
                    else:
                        total_extra += size * (_LOOP_OVERHEAD[t] + sum(x[3] for x in inner))
                tick = f"{_TICK}({per_iter})"
                bodies = [x[0] for x in inner]
                if not ticks:
                    new_body = list(bodies)
                elif t in _PREDICATE_MACROS:
                    new_body = [f"{tick} && ({bodies[0]})"]
                elif len(bodies) == 1:  # transform only: add an always-true filter
                    new_body = [tick, f"({bodies[0]})"]
                else:  # filter + transform
                    new_body = [f"{tick} && ({bodies[0]})", bodies[1]]
                out.append("".join(x for _, x in toks[pos : sig[j]]))
                # cel-cpp knows the two-variable form as existsOne only
                name = "existsOne" if t == "exists_one" and nvars == 2 else t
                suffix = ""
                if t == "transformMap":  # pairs [key, value], then a map (no cel.@mapInsert in the binding)
                    name, suffix = "transformList", f".{_TO_MAP}()"
                    new_body[-1] = f"[dyn({texts[0]}), dyn({new_body[-1]})]"
                elif t == "transformMapEntry":  # one-entry maps, then merged
                    name, suffix = "transformList", f".{_MERGE_MAPS}()"
                out.append(name + "(" + ", ".join(texts[:nvars] + new_body) + ")" + suffix)
                pos = sig[close] + 1
                j = close + 1
                cost += 1
                loops = True
                operand_end = True
                continue
        if kind == "id":
            if nxt == "(":
                cost += 0 if t == "has" else 1
            elif t in ("true", "false", "null"):
                pass
            elif t == "in":
                cost += 1
            elif prev == "." or t not in _TYPE_NAMES:
                cost += 1
            operand_end = t not in ("in",)
        elif kind == "str":
            operand_end = True
        else:
            if t == "[":
                cost += 1 if operand_end else 10
            elif t == "{":
                cost += 30
            elif t in "+-*/%<>!" or (t == "=" and prev not in ("=", "!", "<", ">")):
                cost += 1
            operand_end = t.isalnum() or t in ")]}"
        j += 1
    out.append("".join(x for _, x in toks[pos:]))
    return "".join(out), cost, loops, (None if total_extra is None else cost + total_extra)
