"""Compile-time checks cel-cpp does not make and Kubernetes' environment does.

* ``cel.HomogeneousAggregateLiterals``: a list literal whose elements, or a map literal whose
  keys or values, have different checked types is a compile error.
* Kubernetes' AST validators (regex, duration and timestamp literals) and cel-go's check of
  ``"<literal>".format([...])``: a literal argument that does not parse is a compile error.
"""

from __future__ import annotations

import re
from typing import Optional

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from draopt.cel.errors import _runtime_message
from draopt.cel.formatting import validator_problem
from draopt.cel.internal import _FORMAT
from draopt.cel.rewrite import _matching, _rename_members, _tokenize
from draopt.cel.values import _ERROR_TYPE


# --------------------------------------------------------------------------
# Homogeneous aggregate literals (cel.HomogeneousAggregateLiterals, Kubernetes base env)
#
# cel-cpp's checker accepts ``[1, "a"]`` (a list(dyn)); Kubernetes' refuses it.  The
# checked AST (Expression.serialize(): a cel.expr.CheckedExpr in an Any) is decoded with a
# minimal wire-compatible description of the messages needed, and every list literal's
# elements and map literal's keys and values are compared by their checked types.


def _make_ast_classes():
    F = descriptor_pb2.FieldDescriptorProto
    O, R, M = F.LABEL_OPTIONAL, F.LABEL_REPEATED, F.TYPE_MESSAGE  # noqa: E741  (protobuf label names)
    fdp = descriptor_pb2.FileDescriptorProto(name="draopt_cel_ast.proto", package="draopt_ast", syntax="proto3")

    def msg(name, fields):
        m = fdp.message_type.add(name=name)
        for fname, num, ftype, label, tname in fields:
            f = m.field.add(name=fname, number=num, type=ftype, label=label)
            if tname:
                f.type_name = ".draopt_ast." + tname

    msg("Empty", [])
    msg(
        "Type",
        [
            ("dyn", 1, M, O, "Empty"),
            ("null", 2, F.TYPE_INT32, O, None),
            ("primitive", 3, F.TYPE_INT32, O, None),
            ("wrapper", 4, F.TYPE_INT32, O, None),
            ("well_known", 5, F.TYPE_INT32, O, None),
            ("list_type", 6, M, O, "ListType"),
            ("map_type", 7, M, O, "MapType"),
            ("message_type", 9, F.TYPE_STRING, O, None),
            ("type_param", 10, F.TYPE_STRING, O, None),
            ("type", 11, M, O, "Type"),
            ("error", 12, M, O, "Empty"),
            ("abstract_type", 14, M, O, "AbstractType"),
        ],
    )
    msg("ListType", [("elem_type", 1, M, O, "Type")])
    msg("MapType", [("key_type", 1, M, O, "Type"), ("value_type", 2, M, O, "Type")])
    msg("AbstractType", [("name", 1, F.TYPE_STRING, O, None), ("parameter_types", 2, M, R, "Type")])
    msg(
        "Expr",
        [
            ("id", 2, F.TYPE_INT64, O, None),
            ("select_expr", 5, M, O, "Select"),
            ("call_expr", 6, M, O, "Call"),
            ("list_expr", 7, M, O, "CreateList"),
            ("struct_expr", 8, M, O, "CreateStruct"),
            ("comprehension_expr", 9, M, O, "Comprehension"),
        ],
    )
    msg("Select", [("operand", 1, M, O, "Expr")])
    msg("Call", [("target", 1, M, O, "Expr"), ("function", 2, F.TYPE_STRING, O, None), ("args", 3, M, R, "Expr")])
    msg("CreateList", [("elements", 1, M, R, "Expr")])
    msg("Entry", [("map_key", 3, M, O, "Expr"), ("value", 4, M, O, "Expr")])
    msg("CreateStruct", [("message_name", 1, F.TYPE_STRING, O, None), ("entries", 2, M, R, "Entry")])
    msg(
        "Comprehension",
        [
            ("iter_range", 2, M, O, "Expr"),
            ("accu_init", 4, M, O, "Expr"),
            ("loop_condition", 5, M, O, "Expr"),
            ("loop_step", 6, M, O, "Expr"),
            ("result", 7, M, O, "Expr"),
        ],
    )
    msg("TypeMapEntry", [("key", 1, F.TYPE_INT64, O, None), ("value", 2, M, O, "Type")])
    msg("CheckedExpr", [("type_map", 3, M, R, "TypeMapEntry"), ("expr", 4, M, O, "Expr")])
    msg("Any", [("type_url", 1, F.TYPE_STRING, O, None), ("value", 2, F.TYPE_BYTES, O, None)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = lambda n: message_factory.GetMessageClass(pool.FindMessageTypeByName("draopt_ast." + n))  # noqa: E731
    return get("Any"), get("CheckedExpr")


_AnyMsg, _CheckedMsg = _make_ast_classes()
_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "any", 2: "google.protobuf.Timestamp", 3: "google.protobuf.Duration"}


def _type_name(t) -> Optional[str]:
    """CEL's name of a checked type; None for dyn / type parameters / errors (wildcards)."""
    if t.HasField("dyn") or t.HasField("error") or t.type_param:
        return None
    if t.HasField("list_type"):
        e = _type_name(t.list_type.elem_type)
        return f"list({e or 'dyn'})"
    if t.HasField("map_type"):
        return f"map({_type_name(t.map_type.key_type) or 'dyn'}, {_type_name(t.map_type.value_type) or 'dyn'})"
    if t.message_type:
        return t.message_type
    if t.HasField("abstract_type"):
        return t.abstract_type.name
    if t.HasField("type"):
        return "type"
    for field, names in (("primitive", _PRIMITIVES), ("well_known", _WELL_KNOWN)):
        v = getattr(t, field)
        if v:
            return names.get(v)
    if t.wrapper:
        return "wrapper(" + _PRIMITIVES.get(t.wrapper, "?") + ")"
    return "null_type" if t.ListFields() else None


def _types_conflict(a: Optional[str], b: Optional[str]) -> bool:
    if a is None or b is None or a == b:
        return False
    if "dyn" in a or "dyn" in b:  # list(dyn) and list(int)...: compare the known parts only
        ra, rb = re.split(r"[(), ]+", a), re.split(r"[(), ]+", b)
        return len(ra) != len(rb) or any(x != y and "dyn" not in (x, y) for x, y in zip(ra, rb))
    return True


def _aggregate_literal_problem(expr) -> Optional[str]:
    try:
        any_msg = _AnyMsg.FromString(expr.serialize())
        checked = _CheckedMsg.FromString(any_msg.value)
    except Exception:  # pragma: no cover - a binding without serialize(): not checked
        return None
    types = {e.key: e.value for e in checked.type_map}

    def name(e):
        t = types.get(e.id)
        return None if t is None else _type_name(t)

    def same(exprs):
        first = None
        for e in exprs:
            n = name(e)
            if first is None:
                first = n
            elif _types_conflict(first, n):
                return f"expected type '{first}' but found '{n}'"
        return None

    # (expression, inside a format() call): cel-go's validator skips every literal with an
    # exempt function among its ancestors, and the strings extension exempts format
    # (cel/validator.go inExemptFunction; ext/formatting.go adds "format")
    stack = [(checked.expr, False)]
    while stack:
        e, exempt = stack.pop()
        if e.HasField("list_expr"):
            problem = None if exempt else same(e.list_expr.elements)
            if problem:
                return problem
            stack.extend((x, exempt) for x in e.list_expr.elements)
        elif e.HasField("struct_expr"):
            entries = e.struct_expr.entries
            if not e.struct_expr.message_name and not exempt:
                problem = same([x.map_key for x in entries]) or same([x.value for x in entries])
                if problem:
                    return problem
            for x in entries:
                stack.extend(((x.map_key, exempt), (x.value, exempt)))
        elif e.HasField("call_expr"):
            inner = exempt or e.call_expr.function == _FORMAT
            if e.call_expr.HasField("target"):
                stack.append((e.call_expr.target, inner))
            stack.extend((x, inner) for x in e.call_expr.args)
        elif e.HasField("select_expr"):
            stack.append((e.select_expr.operand, exempt))
        elif e.HasField("comprehension_expr"):
            c = e.comprehension_expr
            stack.extend((x, exempt) for x in (c.iter_range, c.accu_init, c.loop_condition, c.loop_step, c.result))
    return None


_LITERAL_CHECKS = {"matches": '"".matches({})', "duration": "duration({})", "timestamp": "timestamp({})"}


def _format_literal_problem(cenv, src: str) -> Optional[str]:
    """cel-go's strings extension checks ``"<literal>".format([...])`` when compiling (its
    format validator): a clause that does not fit its argument is a compile error.  Here the
    call is evaluated at compile time when it uses no variable."""
    toks = [t for t in _tokenize(src) if t[0] != "ws"]
    sig = list(range(len(toks)))
    for j in range(len(toks) - 3):
        if (
            toks[j][0] == "str"
            and toks[j + 1][1] == "."
            and toks[j + 2][1] == "format"
            and toks[j + 3][1] == "("
            and (j == 0 or toks[j - 1][1] != ".")
        ):
            close = _matching(sig, toks, j + 3, 1)
            if close is None:
                return None
            snippet = "".join(t for _, t in toks[j : close + 1])
            problem = _format_validator_problem(toks, j, close)
            if problem:
                return problem
            if "device" in snippet:
                continue
            try:
                r = cenv._env.compile(_rename_members(snippet)).eval()
            except RuntimeError:
                continue  # uses a variable (an iteration variable...) or does not compile alone
            if r.type() == _ERROR_TYPE:
                return _runtime_message(str(r.value()))
    return None


def _format_validator_problem(toks, j: int, close: int) -> Optional[str]:
    """cel-go's format validator on a literal format string with a literal list: syntax, the
    argument count (more elements than clauses is an error here, ignored at runtime)."""
    if toks[j + 4][1] != "[" or _matching(list(range(len(toks))), toks, j + 4, 1) != close - 1:
        return None
    fmt = _string_literal_value(toks[j][1])
    if fmt is None:
        return None
    if close - 1 == j + 5:
        given = 0
    else:
        depth, given = 0, 1
        for k in range(j + 5, close - 1):
            t = toks[k][1] if toks[k][0] == "other" else None
            if t in ("(", "[", "{"):
                depth += 1
            elif t in (")", "]", "}"):
                depth -= 1
            elif t == "," and depth == 0:
                given += 1
        if toks[close - 2][1] == ",":
            given -= 1  # a trailing comma
    return validator_problem(fmt, given)


def _string_literal_value(tok: str) -> Optional[str]:
    """The value of a plain (unprefixed, unescaped, single-quoted-or-double) string literal."""
    if len(tok) < 2 or tok[0] not in "\"'" or tok[-1] != tok[0] or "\\" in tok:
        return None
    if tok.startswith(('"""', "'''")):
        return None
    return tok[1:-1]


def _literal_problem(cenv, src: str) -> Optional[str]:
    """Kubernetes' AST validators (ValidateRegexLiterals, ValidateDurationLiterals,
    ValidateTimestampLiterals): a literal argument that cannot be parsed is a compile error."""
    if ".format" in src or "format(" in src:
        problem = _format_literal_problem(cenv, src)
        if problem:
            return problem
    if not any(name in src for name in _LITERAL_CHECKS):
        return None
    toks = [t for t in _tokenize(src) if t[0] != "ws"]
    for j in range(len(toks) - 3):
        name = toks[j][1]
        if (
            toks[j][0] == "id"
            and name in _LITERAL_CHECKS
            and toks[j + 1][1] == "("
            and toks[j + 2][0] == "str"
            and toks[j + 3][1] in (")", ",")
        ):
            if name != "matches" and j > 0 and toks[j - 1][1] == ".":
                continue
            probe = _LITERAL_CHECKS[name].format(toks[j + 2][1])
            try:
                r = cenv._env.compile(probe).eval()
            except RuntimeError:
                continue  # not a plain literal call: left to the compiler
            if r.type() == _ERROR_TYPE:
                what = {"matches": "regular expression", "duration": "duration", "timestamp": "timestamp"}[name]
                return f"invalid {what} literal {toks[j + 2][1]}: {_runtime_message(str(r.value()))}"
    return None
