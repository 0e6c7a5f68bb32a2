"""Kubernetes' runtime cost and the API server's worst-case estimate, which cel-cpp does not count.

Kubernetes stops an evaluation whose actual cost passes 1,000,000 ("operation
cancelled: actual cost limit exceeded").  cel-cpp does not count cost, so
draopt estimates it: 1 per identifier, field selection, index, operator and
function call, 10 per list literal, 30 per map literal (cel-go's runtime cost
tracker with the Kubernetes options), and for every comprehension iteration
the body's cost plus what cel-go's expansion of that macro costs (see
``_LOOP_OVERHEAD``: all 3, exists 4 per iteration; filter 13 and exists_one 2
more when the predicate is true; map/transform* 12 plus 10 (30) once for the
accumulator; checked against cel-go's runtimecost_test.go).  Calls whose
Kubernetes cost grows with their arguments (``contains``, ``startsWith``,
``matches``, ``split``, ``==`` on strings, ``in`` on a list...: runtimecost.go
and apiserver/pkg/cel/library/cost.go) are charged by those formulas when the
sizes are in the source: string and list literals, and names a ``cel.bind``
gives a string literal; inside a loop, a member call on an iteration variable
or a ``cel.bind`` name adds its cost from the value's size at runtime
(``size(s)`` in the loop's tick).  Expressions without comprehensions cannot
come near the limit and run untouched, and so do those whose loops are all
bounded (see ``estimated_cost`` below) with a worst case under the limit; in
the others every macro body gets a ``__dra_tick(cost)`` call (one Python call
per iteration).  Differences from Kubernetes' figure: other operands whose
size is known only at runtime (``(a + b).contains(x)``, attribute values,
``==`` between variables) count 1 per call, every part of a body counts even where ``&&``/``||`` would
skip it, ``sortBy`` iterations are not counted, and ``has()`` counts 0 (Kubernetes'
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

import ast
import math
import threading
from typing import Optional

from draopt.cel.includes import MAX_INCLUDES_LIST
from draopt.cel.internal import _EMPTY_ATTRS, _EMPTY_CAP, _MERGE_MAPS, _TICK, _TO_MAP
from draopt.cel.rewrite import _split_args, _tokenize


_COST_STATE = threading.local()
_COST_EXCEEDED = "operation cancelled: actual cost limit exceeded"

# What cel-go's expansion of each macro (parser/macro.go) costs beyond its bodies, as
# interpreter/runtimecost.go charges it (identifiers 1, calls 1, `[]` 10, `{}` 30, ?: 0):
# per iteration (loop condition + step), what an element the filter keeps or a true
# exists_one predicate adds (`@result + [x]` 12 + x; `@result + 1` 2), and once (the
# accumulator's initial value and the result).  Checked against cel-go's
# interpreter/runtimecost_test.go: [1,2,3,4,5].filter(x, x % 2 == 0) 62, .map(x, x) 86,
# .map(x, x).map(x, x) 162, .map(x, [x, x]).filter(z, z.size() == 2) 232; and
# celcoststability_test.go's "self.array.all(e, e > 0)" on 8 elements 43 = 2 + 8 * (3 + 2) + 1.
_LOOP_OVERHEAD = {
    "all": 3,
    "exists": 4,
    "exists_one": 0,
    "existsOne": 0,
    "filter": 0,
    "map": 12,
    "transformList": 12,
    "transformMap": 12,
    "transformMapEntry": 12,
}
_KEPT_COST = {"exists_one": 2, "existsOne": 2, "filter": 13}  # a filtering map: 12 + its transform
_ONCE_COST = {
    "all": 1,
    "exists": 1,
    "exists_one": 2,
    "existsOne": 2,
    "filter": 11,
    "map": 11,
    "transformList": 11,
    "transformMap": 31,
    "transformMapEntry": 31,
}


def _iteration_costs(macro: str, body_costs: list) -> tuple[int, int]:
    """(cost of every iteration, extra cost of an iteration whose predicate is true)."""
    if len(body_costs) == 2:  # a predicate, then the transform of the kept elements
        return body_costs[0], _LOOP_OVERHEAD[macro] + body_costs[1]
    if macro in _KEPT_COST:
        return body_costs[0], _KEPT_COST[macro]
    return _LOOP_OVERHEAD[macro] + sum(body_costs), 0


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
        if (
            toks[sig[end]][0] == "id"
            and end >= 2
            and toks[sig[end - 1]][1] == "."
            and toks[sig[end - 2]][1] == ")"
            and end >= 3
            and toks[sig[end - 3]][1] in (_EMPTY_ATTRS,)
        ):
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
        if k > 0 and (
            toks[sig[k - 1]][0] in ("id", "str")
            or toks[sig[k - 1]][1] in (")", "]", "}")
            or toks[sig[k - 1]][1].isdigit()
        ):
            return None  # an index, not a list literal
        return 0 if end == k + 1 else commas + 1
    inner = "".join(toks[sig[x]][1] for x in range(k + 1, end))
    if (
        k >= 3
        and toks[sig[k - 1]][1] == "range"
        and toks[sig[k - 2]][1] == "."
        and toks[sig[k - 3]][1] == "lists"
        and inner.isdigit()
    ):
        return int(inner)
    return None


# ------------------------------------------------------------------------- size-dependent costs
# Kubernetes' runtime cost of a call grows with the sizes of its string and list arguments
# (cel-go interpreter/runtimecost.go costCall and apiserver/pkg/cel/library/cost.go CallCost,
# with common.StringTraversalCostFactor = 0.1 and RegexStringLengthCostFactor = 0.25).  Here a
# call is charged that way when the sizes are in the source (string and list literals);
# otherwise it counts 1.
_TRAVERSAL = 0.1
_REGEX = 0.25


def _ceil_factor(size: int, factor: float) -> int:
    return math.ceil(size * factor)


def _receiver_cost(receiver: int, _args: list) -> int:
    return _ceil_factor(receiver, _TRAVERSAL)


def _twice_receiver_cost(receiver: int, _args: list) -> int:
    return _ceil_factor(receiver * 2, _TRAVERSAL)


def _contains_cost(receiver: int, args: list) -> Optional[int]:
    if len(args) != 1 or args[0] is None:
        return None
    return _ceil_factor(receiver, _TRAVERSAL) * _ceil_factor(args[0], _TRAVERSAL)


def _regex_cost(receiver: int, args: list) -> Optional[int]:
    if not args or args[0] is None:
        return None
    return _ceil_factor(1 + receiver, _TRAVERSAL) * _ceil_factor(args[0], _REGEX)


# member calls whose cost depends on the receiver's size (and an argument's, given as None
# when unknown): runtimecost.go (startsWith, endsWith, contains, matches, format) and
# library/cost.go (lowerAscii, upperAscii, substring, trim, url, replace, split, find, findAll)
_MEMBER_COSTS = {
    "startsWith": _receiver_cost,
    "endsWith": _receiver_cost,
    "format": _receiver_cost,
    "lowerAscii": _receiver_cost,
    "upperAscii": _receiver_cost,
    "substring": _receiver_cost,
    "trim": _receiver_cost,
    "replace": _twice_receiver_cost,
    "split": _twice_receiver_cost,
    "contains": _contains_cost,
    "matches": _regex_cost,
    "find": _regex_cost,
    "findAll": _regex_cost,
}
# global functions of one string: library/cost.go (url, quantity, isQuantity, semver, isSemver,
# ip, isIP, isCIDR, cidr) and strings.quote in runtimecost.go
_STRING_FUNCTION_COSTS = {
    "url",
    "isURL",
    "quantity",
    "isQuantity",
    "semver",
    "isSemver",
    "ip",
    "isIP",
    "isCIDR",
    "cidr",
    "quote",
}
_STRING_OPERATORS = {"==", "!=", "<", "<=", ">", ">="}
_OPERAND_BOUNDARY = {"", "(", ",", "[", "{", "?", ":", "&", "|", "!"}


def _literal_size(tok, bound: dict) -> Optional[int]:
    """Code points of a string literal token (bytes for b"..."), or of the literal a
    ``cel.bind`` gave the identifier; None for other tokens."""
    if tok[0] == "id":
        return bound.get(tok[1])
    if tok[0] != "str":
        return None
    text = tok[1]
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        quote = 3 if text.lstrip("rRbB")[:3] in ('"""', "'''") else 1
        return max(0, len(text.lstrip("rRbB")) - 2 * quote)
    return len(value)


def _list_literal_size(sig, toks, j: int) -> Optional[int]:
    """Elements of the list literal opening at sig index j (None if it is not one)."""
    if toks[sig[j]][1] != "[":
        return None
    close, args = _split_args(sig, toks, j)
    if close is None:
        return None
    if close == j + 1:
        return 0
    return len(args) - (1 if toks[sig[close - 1]][1] == "," else 0)


def _bound_literals(sig, toks) -> dict:
    """Identifiers bound to a string literal: ``cel.bind(name, "...", ...)``."""
    out = {}
    for j in range(len(sig) - 6):
        if (
            toks[sig[j]][1] == "cel"
            and toks[sig[j + 1]][1] == "."
            and toks[sig[j + 2]][1] == "bind"
            and toks[sig[j + 3]][1] == "("
            and toks[sig[j + 4]][0] == "id"
            and toks[sig[j + 5]][1] == ","
            and toks[sig[j + 6]][0] == "str"
            and j + 7 < len(sig)
            and toks[sig[j + 7]][1] == ","
        ):
            size = _literal_size(toks[sig[j + 6]], {})
            if size is not None:
                out[toks[sig[j + 4]][1]] = size
    return out


# The same formulas as CEL integer arithmetic on sizes known only at runtime: ceil(n * 0.1) is
# (n + 9) / 10, ceil(n * 0.25) is (n + 3) / 4.
def _size_term(operand: str) -> str:
    return f"size({operand})"


def _dynamic_member_cost(name: str, receiver: str, args: list) -> Optional[str]:
    """The cost of ``receiver.name(args...)`` as a CEL expression over the receiver's size (an
    identifier holding a string); args: literal sizes (int) or identifiers (str) or None."""
    r = _size_term(receiver)
    if _MEMBER_COSTS[name] is _receiver_cost:
        return f"(({r} + 9) / 10)"
    if _MEMBER_COSTS[name] is _twice_receiver_cost:
        return f"(({r} * 2 + 9) / 10)"
    if not args or args[0] is None:
        return None
    a = args[0]
    if _MEMBER_COSTS[name] is _contains_cost:
        other = str(_ceil_factor(a, _TRAVERSAL)) if isinstance(a, int) else f"(({_size_term(a)} + 9) / 10)"
        return f"(({r} + 9) / 10 * {other})"
    other = str(_ceil_factor(a, _REGEX)) if isinstance(a, int) else f"(({_size_term(a)} + 3) / 4)"
    return f"(({r} + 10) / 10 * {other})"


# Device attribute names, domains and string values are at most this long (resourceapi
# validation: DeviceAttributeMaxValueLength 64; names and domains are shorter)
_ATTRIBUTE_STRING_MAX = 64


def _runtime_call_cost(sig, toks, j: int, bound: dict, visible: frozenset) -> Optional[tuple]:
    """For a size-dependent member call on a variable whose value is only known at runtime (an
    iteration variable, a cel.bind name) that is in scope where the loop's tick is evaluated:
    (its cost beyond the 1 counted statically, as a CEL expression; the variable; that extra
    cost when the variable holds a device attribute string), else None."""
    name = toks[sig[j]][1]
    if j < 2 or toks[sig[j - 1]][1] != "." or name not in _MEMBER_COSTS:
        return None
    recv = toks[sig[j - 2]]
    if recv[0] != "id" or recv[1] not in visible or recv[1] in bound or (j >= 3 and toks[sig[j - 3]][1] == "."):
        return None
    close, args = _split_args(sig, toks, j + 1)
    sizes: list = []
    for a, b in args or []:
        if b - a != 1:
            sizes.append(None)
            continue
        tok = toks[sig[a]]
        size = _literal_size(tok, bound)
        sizes.append(size if size is not None else (tok[1] if tok[0] == "id" and tok[1] in visible else None))
    term = _dynamic_member_cost(name, recv[1], sizes)
    if term is None:
        return None
    longest = [_ATTRIBUTE_STRING_MAX if isinstance(x, str) else x for x in sizes]
    at_most = _MEMBER_COSTS[name](_ATTRIBUTE_STRING_MAX, longest)
    return f"({term} - 1)", recv[1], (None if at_most is None else at_most - 1)


def _visible_at(sig, toks, j: int) -> set:
    """Names that cel.bind calls enclosing sig index j bind there."""
    out = set()
    for b in range(max(0, j - 1)):
        if (
            toks[sig[b]][1] == "cel"
            and b + 4 < len(sig)
            and toks[sig[b + 1]][1] == "."
            and toks[sig[b + 2]][1] == "bind"
            and toks[sig[b + 3]][1] == "("
            and toks[sig[b + 4]][0] == "id"
        ):
            close, args = _split_args(sig, toks, b + 3)
            if close is not None and len(args) == 3 and args[2][0] <= j < close:
                out.add(toks[sig[b + 4]][1])
    return out


def _call_cost(sig, toks, j: int, bound: dict) -> int:
    """The runtime cost of the call whose name is at sig index j (1 unless sizes are known)."""
    name = toks[sig[j]][1]
    prev = toks[sig[j - 1]][1] if j > 0 else ""
    if prev == "." and name in _MEMBER_COSTS and j >= 2:
        receiver = _literal_size(toks[sig[j - 2]], bound)
        if receiver is None or (j >= 3 and toks[sig[j - 3]][1] == "."):
            return 1
        close, args = _split_args(sig, toks, j + 1)
        sizes = [(_literal_size(toks[sig[a]], bound) if b - a == 1 else None) for a, b in (args or []) if b > a]
        got = _MEMBER_COSTS[name](receiver, sizes)
        return 1 if got is None else got
    if name in _STRING_FUNCTION_COSTS and (prev != "." or name == "quote"):
        close, args = _split_args(sig, toks, j + 1)
        if args and len(args) == 1 and args[0][1] - args[0][0] == 1:
            size = _literal_size(toks[sig[args[0][0]]], bound)
            if size is not None:
                return _ceil_factor(size, _TRAVERSAL)
    return 1


def _operator_cost(sig, toks, j: int, op: str, bound: dict) -> int:
    """The runtime cost of the binary operator starting at sig index j: a comparison of two
    string literals ceil(min(sizes) * 0.1), their concatenation ceil((l + r) * 0.1)."""
    after = j + len(op)
    if j < 1 or after >= len(sig):
        return 1
    left, right = toks[sig[j - 1]], toks[sig[after]]
    before_left = toks[sig[j - 2]][1] if j >= 2 else ""
    after_right = toks[sig[after + 1]][1] if after + 1 < len(sig) else ""
    a, b = _literal_size(left, bound), _literal_size(right, bound)
    if left[0] == "id" and before_left == ".":
        a = None  # a field, not the bound name
    if a is None or b is None or before_left not in _OPERAND_BOUNDARY or after_right in (".", "["):
        return 1
    if op == "+":
        return _ceil_factor(a + b, _TRAVERSAL) if before_left not in ("+",) else 1
    return _ceil_factor(min(a, b), _TRAVERSAL)


def _instrument(src: str, worst: bool = False, ticks: bool = True, bound: Optional[dict] = None):
    """Return (instrumented source, static cost outside loop bodies, has comprehensions,
    static cost with the loops when every receiver's size is known from the source, else None).
    ``bound``: sizes of the string literals that enclosing ``cel.bind`` calls name."""
    return _instrument_terms(src, worst, ticks, bound, frozenset())[:4]


def _instrument_terms(src: str, worst: bool, ticks: bool, bound: Optional[dict], visible: frozenset):
    """_instrument, and the costs of this level's calls that depend on runtime sizes, as CEL
    expressions over the variables in ``visible`` (added to the enclosing loop's tick)."""
    terms: list[tuple] = []
    toks = _tokenize(src)
    sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]
    bound = dict(bound or {})
    if "bind" in src:
        bound.update(_bound_literals(sig, toks))
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
            nvars = _loop_variables(t, args)
            if (
                close is not None
                and nvars in (1, 2)
                and all(b - a == 1 and toks[sig[a]][0] == "id" for a, b in args[:nvars])
            ):
                call, extra = _instrument_loop(
                    sig, toks, j, t, args, nvars, (worst, ticks, bound, visible), total_extra is not None
                )
                if total_extra is not None:
                    total_extra = None if extra is None else total_extra + extra
                out.append("".join(x for _, x in toks[pos : sig[j]]))
                out.append(call)
                pos = sig[close] + 1
                j = close + 1
                cost += _ONCE_COST[t]
                loops = True
                operand_end = True
                continue
        if kind == "id":
            cost += _identifier_cost(sig, toks, j, t, prev, nxt, bound, visible, terms)
            operand_end = t not in ("in",)
        elif kind == "str":
            operand_end = True
        else:
            cost += _symbol_cost(sig, toks, j, t, prev, nxt, bound, operand_end)
            operand_end = t.isalnum() or t in ")]}"
        j += 1
    out.append("".join(x for _, x in toks[pos:]))
    return "".join(out), cost, loops, (None if total_extra is None else cost + total_extra), terms


def _loop_variables(t: str, args: list) -> int:
    """How many iteration variables a macro call with these arguments names (0: not a macro)."""
    if not args:
        return 0
    if t in _PREDICATE_MACROS:
        return len(args) - 1 if len(args) in (2, 3) else 0
    if t == "map":
        return 1 if len(args) in (2, 3) else 0
    return 2 if len(args) in (3, 4) else 0


def _instrument_loop(sig, toks, j: int, t: str, args: list, nvars: int, how: tuple, count_extra: bool):
    """One macro call at sig[j] (its name `t`), its bodies instrumented and its iterations
    ticked: (the call rewritten, the loop's static cost over its receiver, None when a size is
    known only at runtime; computed only when `count_extra`). `how`: _instrument_terms'
    (worst, ticks, bound, visible)."""
    worst, ticks, bound, visible = how
    texts = ["".join(x for _, x in toks[sig[a] : sig[b]]) for a, b in args]
    inside = visible | frozenset(x.strip() for x in texts[:nvars]) | frozenset(_visible_at(sig, toks, j))
    inner = [_instrument_terms(x, worst, ticks, bound, inside) for x in texts[nvars:]]
    per_iter, kept = _iteration_costs(t, [x[1] for x in inner])
    runtime = [term for x in inner for term in x[4]]
    size = _receiver_size(sig, toks, j - 1, worst)
    # sizes known only at runtime have a bound when they are this loop's elements
    # and the loop runs over a device attribute map or list (the worst case only)
    over_attributes = worst and size is not None and _receiver_size(sig, toks, j - 1) is None
    own = {x.strip() for x in texts[:nvars]}
    bounded = not runtime or (over_attributes and all(r[1] in own and r[2] is not None for r in runtime))
    extra = None
    if count_extra:
        if size is None or not bounded or any(x[3] is None for x in inner):
            extra = None  # a size known only at runtime: no static bound
        else:
            extra = size * (sum(_iteration_costs(t, [x[3] for x in inner])) + sum(r[2] for r in runtime))
    tick = f"{_TICK}({' + '.join([str(per_iter)] + [r[0] for r in runtime])})"
    bodies = [x[0] for x in inner]
    # a predicate whose truth costs more (a kept element, a true exists_one)
    counted = f"{tick} && (({bodies[0]}) ? {_TICK}({kept}) : false)" if kept else None
    if not ticks:
        new_body = list(bodies)
    elif t in _PREDICATE_MACROS:
        new_body = [counted or f"{tick} && ({bodies[0]})"]
    elif len(bodies) == 1:  # transform only: add an always-true filter
        new_body = [tick, f"({bodies[0]})"]
    else:  # filter + transform
        new_body = [counted or f"{tick} && ({bodies[0]})", bodies[1]]
    # cel-cpp knows the two-variable form as existsOne only
    name = "existsOne" if t == "exists_one" and nvars == 2 else t
    suffix = ""
    if t == "transformMap":  # pairs [key, value], then a map (no cel.@mapInsert in the binding)
        name, suffix = "transformList", f".{_TO_MAP}()"
        new_body[-1] = f"[dyn({texts[0]}), dyn({new_body[-1]})]"
    elif t == "transformMapEntry":  # one-entry maps, then merged
        name, suffix = "transformList", f".{_MERGE_MAPS}()"
    return name + "(" + ", ".join(texts[:nvars] + new_body) + ")" + suffix, extra


def _identifier_cost(sig, toks, j: int, t: str, prev: str, nxt: str, bound: dict, visible: frozenset, terms: list):
    """An identifier's static cost (a call's, with its runtime-size term appended to `terms`)."""
    cost = 0
    if nxt == "(":
        cost += 0 if t == "has" else _call_cost(sig, toks, j, bound)
        term = _runtime_call_cost(sig, toks, j, bound, visible) if visible and t in _MEMBER_COSTS else None
        if term is not None:
            terms.append(term)
    elif t in ("true", "false", "null"):
        pass
    elif t == "in":
        # `x in [a, b, c]`: the list's size (runtimecost.go)
        listed = _list_literal_size(sig, toks, j + 1) if j + 1 < len(sig) else None
        cost += 1 if listed is None else max(1, listed)
    elif prev == "." or t not in _TYPE_NAMES:
        cost += 1
    return cost


def _symbol_cost(sig, toks, j: int, t: str, prev: str, nxt: str, bound: dict, operand_end: bool) -> int:
    """An operator's or bracket's static cost."""
    cost = 0
    if t == "[":
        cost += 1 if operand_end else 10
    elif t == "{":
        cost += 30
    elif t in "<>!=" and (t != "=" or prev not in ("=", "!", "<", ">")):
        op = t + nxt if nxt == "=" else t
        if op in _STRING_OPERATORS:
            cost += _operator_cost(sig, toks, j, op, bound)
        elif t != "=":
            cost += 1  # ! (a unary not)
    elif t == "+":
        cost += _operator_cost(sig, toks, j, "+", bound)
    elif t in "-*/%":
        cost += 1
    return cost
