"""Selectors in the shape drivers and users write most, answered in Python without CEL.

The shape: comparisons (``==``, ``!=``) of ``device.driver``,
``device.allowMultipleAllocations`` or ``device.attributes["<domain>"].<name>`` with a literal
(a string without escapes, a decimal int, ``true``/``false``); key tests
``"<name>" in device.attributes["<domain>"]``; a capacity ordered against a quantity literal
(``device.capacity["<domain>"].<name>.compareTo(quantity("2Gi")) >= 0``, ``isGreaterThan``,
``isLessThan``) and a version attribute against a semver literal (``...isGreaterThan(semver("1.5.0"))``),
as the DRA documentation writes them; joined by ``&&``.  Examples: every driver's
DeviceClass (``device.driver == "gpu.nvidia.com"``), NVIDIA's MIG class
(``device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'``),
a claim's ``device.attributes["gpu.example.com"].model == "a100"``.

Such a source always compiles to a bool in Kubernetes' DRA environment, so the compile can wait
until CEL is needed (draopt.cel.core); and on a device whose CEL input converts without error
(draopt.cel.device.converts_cleanly) its answer is read from the device's fields.  Where the
answer needs CEL's rules (an attribute that is missing, of another type than the literal, a
version or a list), SimpleSelector.answer returns None and the caller evaluates with CEL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from draopt.cel.device import _parsed_version
from draopt.cel.quantity import _q_compare_keys, _quantity_literal
from draopt.cel.semverlib import _s_compare_keys, _semver_literal
from draopt.cel.values import _qkey, _skey
from draopt.kube.quantity import Quantity

_WS = r"[ \t\n\f]*"
_QUOTED = r"""(?:"[^"\\\n\r]*"|'[^'\\\n\r]*')"""
# (at most 18 digits: always an int64, so never the compile error of a too large literal)
_INT = r"-?(?:0|[1-9][0-9]{0,17})"
_LITERAL = r"(?:" + _QUOTED + "|" + _INT + r"|true|false)"
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_FIELD = r"(?:device\.driver|device\.allowMultipleAllocations|device\.attributes\[" + _QUOTED + r"\]\." + _NAME + ")"
_FIELD_FIRST = re.compile(r"(?P<field>" + _FIELD + ")" + _WS + r"(?P<op>==|!=)" + _WS + r"(?P<lit>" + _LITERAL + ")")
_LITERAL_FIRST = re.compile(r"(?P<lit>" + _LITERAL + ")" + _WS + r"(?P<op>==|!=)" + _WS + r"(?P<field>" + _FIELD + ")")
_KEY_IN = re.compile(
    r"(?P<key>" + _QUOTED + ")" + _WS + r"in[ \t\n\f]+device\.attributes\[(?P<domain>" + _QUOTED + r")\]"
)
_ATTRIBUTE = re.compile(r"device\.attributes\[(?P<domain>" + _QUOTED + r")\]\.(?P<name>" + _NAME + ")")
_ORDERED = re.compile(
    r"device\.(?P<map>capacity|attributes)\[(?P<domain>" + _QUOTED + r")\]\.(?P<name>" + _NAME + r")\."
    r"(?P<method>isGreaterThan|isLessThan|compareTo)\((?P<kind>quantity|semver)\((?P<lit>" + _QUOTED + r")\)\)"
    r"(?:" + _WS + r"(?P<op>==|!=|<=|>=|<|>)" + _WS + r"(?P<bound>" + _INT + r"))?"
)
_SPACE = re.compile(_WS)
# Words CEL reserves: not a field name after "." (a parse error there, left to CEL)
_RESERVED = frozenset(
    "as break const continue else false for function if import in let loop namespace null package return "
    "true var void while".split()
)

_DRIVER, _MULTIPLE, _VALUE, _HAS = "driver", "multiple", "value", "has"
_QUANTITY, _VERSION = "quantity", "version"  # a capacity against a quantity, a version attribute against a semver
# compareTo's result against the bound, by operator
_ORDER_TESTS = {
    "==": lambda c, b: c == b,
    "!=": lambda c, b: c != b,
    "<": lambda c, b: c < b,
    "<=": lambda c, b: c <= b,
    ">": lambda c, b: c > b,
    ">=": lambda c, b: c >= b,
}


@dataclass(frozen=True)
class _Term:
    """One comparison or key test: `what` is _DRIVER, _MULTIPLE, _VALUE (an attribute's value),
    _HAS (a key in a domain), _QUANTITY or _VERSION (ordered: `literal` is the quantity's or
    semver's value key, as CEL's compareTo reads it, and `order` tells the result from the
    comparison's -1, 0 or 1); `equal` False for != (unused by the others)."""

    what: str
    literal: Any = None
    equal: bool = True
    domain: str = ""
    name: str = ""
    order: Any = None


@dataclass(frozen=True)
class SimpleSelector:
    """A selector of the shape in this module's docstring, parsed (simple_selector)."""

    terms: Tuple[_Term, ...]

    @property
    def driver_only(self) -> bool:
        """Every term compares the driver: one answer for every device of a driver."""
        return all(t.what == _DRIVER for t in self.terms)

    def answer(self, driver: str, device: Any, list_types: bool) -> Optional[bool]:
        """The selector's value on a ResourceSlice device (draopt.kube.models.Device) of
        `driver` whose CEL input converts cleanly, or None where CEL must answer. A term that
        is false makes the whole false whatever the others give (CEL's && absorbs an error
        next to false)."""
        unsure = False
        for t in self.terms:
            if t.what == _DRIVER:
                got: Optional[bool] = (driver == t.literal) == t.equal
            elif t.what == _MULTIPLE:
                got = (bool(device.allow_multiple_allocations) == t.literal) == t.equal
            elif t.what == _QUANTITY:
                got = _capacity_term(t, driver, device.capacity)
            else:
                got = _attribute_term(t, driver, device.attributes, list_types)
            if got is None:
                unsure = True
            elif not got:
                return False
        return None if unsure else True


def _named(t: _Term, driver: str, named: Dict[str, Any]) -> Any:
    """The entry of `named` (a device's attributes or capacity) the term's lookup reads, None
    when there is none, _OTHER when it is written both with and without the driver's domain
    (which one the CEL input keeps is CEL's business)."""
    entry = named.get(t.domain + "/" + t.name)
    if t.domain == driver:
        # the name may be written without its domain: then the driver's
        plain = named.get(t.name)
        if plain is not None:
            if entry is not None:
                return _OTHER
            entry = plain
    return entry


def _capacity_term(t: _Term, driver: str, capacity: Dict[str, Any]) -> Optional[bool]:
    """A _QUANTITY term on the device's capacity (name -> DeviceCapacity, every value parses)."""
    entry = _named(t, driver, capacity)
    if entry is None or entry is _OTHER:
        return None
    # (compared as the library's compareTo compares: draopt.cel.quantity)
    return t.order(_q_compare_keys(_qkey(Quantity.parse(entry.value)), t.literal))


def _attribute_term(t: _Term, driver: str, attributes: Dict[str, Any], list_types: bool) -> Optional[bool]:
    """A _VALUE, _HAS or _VERSION term on the device's attributes (name -> DeviceAttribute)."""
    attribute = _named(t, driver, attributes)
    if attribute is _OTHER:
        return None
    if attribute is not None:
        scalar = _scalar(attribute)
        if scalar is _LIST_ONLY and not list_types:
            attribute = None  # (left out of the CEL input while list types are off)
    if t.what == _HAS:
        return attribute is not None
    if t.what == _VERSION:
        if attribute is None or attribute.version is None:
            return None  # (no such key, or another type: CEL's error)
        return t.order(_s_compare_keys(_skey(_parsed_version(attribute.version)), t.literal))
    if attribute is None or scalar is _OTHER or scalar is _LIST_ONLY:
        return None  # (CEL: no such key; or a version or list compared: CEL's rules)
    literal = t.literal
    if type(scalar) is not type(literal):
        return None  # (another type than the literal's: CEL's equality rules)
    return (scalar == literal) == t.equal


_LIST_ONLY, _OTHER = object(), object()


def _scalar(attribute: Any) -> Any:
    """The attribute's string, int or bool value; _LIST_ONLY for a list value; _OTHER for a
    version (or anything else)."""
    if attribute.string is not None:
        return attribute.string
    if attribute.int_ is not None:
        return attribute.int_
    if attribute.bool_ is not None:
        return attribute.bool_
    if attribute.version is not None:
        return _OTHER
    if (
        attribute.strings is not None
        or attribute.ints is not None
        or attribute.bools is not None
        or attribute.versions is not None
    ):
        return _LIST_ONLY
    return _OTHER


def _literal(text: str) -> Any:
    if text[0] in "\"'":
        return text[1:-1]
    if text == "true":
        return True
    if text == "false":
        return False
    return int(text)


def _comparison(field: str, op: str, literal_text: str) -> Optional[_Term]:
    literal = _literal(literal_text)
    equal = op == "=="
    if field == "device.driver":
        # (a string field: another literal type is a compile error, left to CEL)
        return _Term(_DRIVER, literal, equal) if type(literal) is str else None
    if field == "device.allowMultipleAllocations":
        return _Term(_MULTIPLE, literal, equal) if type(literal) is bool else None
    m = _ATTRIBUTE.fullmatch(field)
    if m is None:  # pragma: no cover - _FIELD has no other form
        return None
    domain, name = m.group("domain")[1:-1], m.group("name")
    if not _plain_domain(domain) or name in _RESERVED:
        return None
    return _Term(_VALUE, literal, equal, domain, name)


def _plain_domain(domain: str) -> bool:
    """A domain as attribute names qualify them (no "/": the CEL input splits a name at its
    first one)."""
    return bool(domain) and "/" not in domain


def _ordered(m: "re.Match[str]") -> Optional[_Term]:
    """A capacity against a quantity literal or an attribute against a semver literal (the
    pairs that compile whatever the device); the literal must parse, as quantity() and semver()
    parse it (else CEL reports it)."""
    domain, name, method = m.group("domain")[1:-1], m.group("name"), m.group("method")
    what = _QUANTITY if m.group("map") == "capacity" else _VERSION
    if (what == _QUANTITY) != (m.group("kind") == "quantity") or not _plain_domain(domain) or name in _RESERVED:
        return None
    text = m.group("lit")[1:-1]
    parsed = _quantity_literal(text) if what == _QUANTITY else _semver_literal(text, False)
    if isinstance(parsed, Exception):
        return None
    literal = parsed.v
    op, bound = m.group("op"), m.group("bound")
    if method == "compareTo":
        if op is None:
            return None  # (an int, not a bool)
        test, limit = _ORDER_TESTS[op], int(bound)
        order = lambda c: test(c, limit)  # noqa: E731 - a closure over the operator and bound
    elif op is not None:
        return None  # (a bool compared with an int: a compile error)
    else:
        wanted = 1 if method == "isGreaterThan" else -1
        order = lambda c: c == wanted  # noqa: E731
    return _Term(what, literal, True, domain, name, order)


def _term_at(expression: str, pos: int) -> Tuple[Optional[_Term], int]:
    m = _ORDERED.match(expression, pos)
    if m is not None:
        return _ordered(m), m.end()
    m = _FIELD_FIRST.match(expression, pos)
    if m is None:
        m = _LITERAL_FIRST.match(expression, pos)
    if m is not None:
        return _comparison(m.group("field"), m.group("op"), m.group("lit")), m.end()
    m = _KEY_IN.match(expression, pos)
    if m is not None:
        domain, name = m.group("domain")[1:-1], m.group("key")[1:-1]
        if not _plain_domain(domain) or "/" in name:
            return None, pos  # (the CEL input splits a qualified name at its first "/")
        return _Term(_HAS, domain=domain, name=name), m.end()
    return None, pos


def _parse(expression: str) -> Optional[SimpleSelector]:
    if "\r" in expression:
        return None
    terms = []
    end = len(expression)
    pos = _SPACE.match(expression).end()  # type: ignore[union-attr]
    while True:
        term, pos = _term_at(expression, pos)
        if term is None:
            return None
        terms.append(term)
        pos = _SPACE.match(expression, pos).end()  # type: ignore[union-attr]
        if pos == end:
            return SimpleSelector(tuple(terms))
        if not expression.startswith("&&", pos):
            return None
        pos = _SPACE.match(expression, pos + 2).end()  # type: ignore[union-attr]


# expression -> its SimpleSelector or None: a process's selectors are few (bounded all the same)
_PARSED: Dict[str, Optional[SimpleSelector]] = {}


def simple_selector(expression: str) -> Optional[SimpleSelector]:
    """The selector parsed, when `expression` has this module's shape, else None."""
    got = _PARSED.get(expression, _PARSED)
    if got is _PARSED:
        got = _parse(expression) if type(expression) is str else None
        if len(_PARSED) < 4096:
            _PARSED[expression] = got
    return got  # type: ignore[return-value]
