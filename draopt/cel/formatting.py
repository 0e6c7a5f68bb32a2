"""``"...".format([...])`` as Kubernetes evaluates it: cel-go's strings extension, version 2.

Kubernetes' base environment (apiserver/pkg/cel/environment/base.go) pins
``ext.Strings(ext.StringsVersion(2))`` from 1.29 on, which formats with cel-go's first formatter
(ext/formatting.go: parseFormatString, stringFormatter; ext/formatting_v2.go is for version 4 and
later).  cel-cpp's own ``format`` differs (``%d`` of a double, ``%s`` of a double or a list,
``%e``...), so member calls of ``format`` are renamed (draopt.cel.rewrite._rename_members) to
this implementation.  What it does, clause by clause (all from ext/formatting.go):

* ``%s``: ints and uints in decimal, bools, strings, null, types by name, doubles as Go's
  ``%g`` (shortest digits; exponent form below 1e-4 and from 1e6 on, strconv's 'g' with the
  shortest precision), bytes as UTF-8, durations as seconds
  (``90s``), timestamps in RFC 3339 (UTC); lists ``[a, b]`` and maps ``{k:v, ...}`` (entries
  sorted by the formatted key) with their members as CEL literals (strings and bytes quoted,
  doubles ``%.6f``, ``timestamp("...")`` / ``duration("...")``).
* ``%d`` ints and uints only; ``%f`` / ``%.Nf`` doubles (and the strings ``"NaN"``,
  ``"Infinity"``, ``"-Infinity"``) through golang.org/x/text's en_US printer; ``%e`` likewise
  (``2.718280 × 10⁰⁰``; the formatter passes its precision as a width, so six digits always);
  ``%b`` ints, uints and bools; ``%o`` ints and uints; ``%x`` / ``%X`` ints, uints, strings
  and bytes; ``%%`` a percent sign.
* Errors: ``error during formatting: <clause> clause can only be used on ..., was given <type>``,
  ``could not parse formatting clause: unrecognized formatting clause "a"``, ``index N out of
  range``, ``unexpected end of string``.

Not reproduced: uints are ints once in Python (their type name in messages reads ``int``), and
en_US digit grouping of ``%f`` above 999 follows x/text's documented grouping for en (not checked
against Go).
"""

from __future__ import annotations

import datetime as _dt
import math
from decimal import Decimal
from typing import Any, Callable

from draopt.cel.values import _CIDRMsg, _FormatMsg, _IPMsg, _QMsg, _SMsg, _URLMsg

_DEFAULT_PRECISION = 6
_SUPERSCRIPT = str.maketrans("0123456789-", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207b")
_MESSAGE_TYPES = {
    _QMsg: "kubernetes.Quantity",
    _SMsg: "kubernetes.Semver",
    _IPMsg: "net.IP",
    _CIDRMsg: "net.CIDR",
    _URLMsg: "kubernetes.URL",
    _FormatMsg: "kubernetes.NamedFormat",
}
_TYPE_NAMES = {
    "INT": "int",
    "UINT": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BOOL": "bool",
    "BYTES": "bytes",
    "NULL": "null_type",
    "TYPE": "type",
    "DURATION": "google.protobuf.Duration",
    "TIMESTAMP": "google.protobuf.Timestamp",
}


class FormatError(ValueError):
    """A format() failure, with cel-go's message."""


# ----------------------------------------------------------------------------- values
def _is_cel_type(v: Any) -> bool:
    return type(v).__name__ == "Type" and hasattr(v, "name")


def _type_value_name(v: Any) -> str:
    """The CEL name of a type value (``int``, ``list``, ...)."""
    raw = v.name()
    base = raw.split("<")[0]
    if base in ("LIST", "MAP"):
        return base.lower()
    return _TYPE_NAMES.get(raw, raw.lower() if raw.isupper() else raw)


def _type_name(v: Any) -> str:
    """The CEL type name of a value, as cel-go's messages print it."""
    if v is None:
        return "null_type"
    t = type(v)
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is float:
        return "double"
    if t is str:
        return "string"
    if t in (bytes, bytearray):
        return "bytes"
    if t is list:
        return "list"
    if t is dict:
        return "map"
    if t is _dt.timedelta:
        return "google.protobuf.Duration"
    if t is _dt.datetime:
        return "google.protobuf.Timestamp"
    if _is_cel_type(v):
        return "type"
    return _MESSAGE_TYPES.get(t, t.__name__)


def _shortest_digits(x: float) -> tuple[str, int]:
    """(significant digits, decimal exponent of the first digit) of the shortest repr."""
    d = Decimal(repr(x)).normalize()
    sign, digits, exp = d.as_tuple()
    text = "".join(map(str, digits)) or "0"
    assert isinstance(exp, int)
    return text, exp + len(text) - 1


def _go_g(x: float) -> str:
    """Go's fmt %g (strconv.FormatFloat(x, 'g', -1, 64)): shortest digits, exponent form
    when the exponent is below -4 or at least 6 (ftoa.go: eprec = 6 when shortest)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if x == 0:
        return "-0" if math.copysign(1, x) < 0 else "0"
    neg = x < 0
    digits, exp = _shortest_digits(abs(x))
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        out = f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    elif exp < 0:
        out = "0." + "0" * (-exp - 1) + digits
    else:
        whole = digits[: exp + 1].ljust(exp + 1, "0")
        frac = digits[exp + 1 :]
        out = whole + ("." + frac if frac else "")
    return "-" + out if neg else out


def _go_fixed_shortest(x: float) -> str:
    """strconv.FormatFloat(x, 'f', -1, 64)."""
    if x == 0:
        return "0"
    text = format(Decimal(repr(x)).normalize(), "f")
    return text


def _go_quote(s: str) -> str:
    """Go's %q of a string (strconv.Quote): printable characters kept, the rest escaped."""
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\a\b\f\n\r\t\v":
            out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}[ch])
        elif ch.isprintable() or ch == " ":
            out.append(ch)
        elif c < 0x80:
            out.append(f"\\x{c:02x}")
        elif c < 0x10000:
            out.append(f"\\u{c:04x}")
        else:
            out.append(f"\\U{c:08x}")
    out.append('"')
    return "".join(out)


def _bytes_text(b: Any) -> str:
    try:
        return bytes(b).decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(
            'could not convert argument "invalid UTF-8 in bytes, cannot convert to string" to string'
        ) from None


def _timestamp_text(t: _dt.datetime) -> str:
    """Go's time.RFC3339Nano in UTC (trailing zeros of the fraction dropped)."""
    u = t.astimezone(_dt.timezone.utc) if t.tzinfo is not None else t
    text = u.strftime("%Y-%m-%dT%H:%M:%S")
    if u.microsecond:
        text += ("." + f"{u.microsecond:06d}").rstrip("0")
    return text + "Z"


def _duration_text(d: _dt.timedelta) -> str:
    seconds = Decimal(d.days * 86400 + d.seconds) + Decimal(d.microseconds) / Decimal(1_000_000)
    text = format(seconds.normalize(), "f") if seconds else "0"
    return text + "s"


def _format_string(v: Any) -> str:
    """FormatString: the %s clause and the members that take it."""
    t = type(v)
    if t is list:
        return _format_list(v)
    if t is dict:
        return _format_map(v)
    if v is None:
        return "null"
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return _go_g(v)
    if t is str:
        return v
    if t in (bytes, bytearray):
        return _bytes_text(v)
    if t is _dt.datetime:
        return _timestamp_text(v)
    if t is _dt.timedelta:
        return _duration_text(v)
    if _is_cel_type(v):
        return _type_value_name(v)
    raise FormatError(
        "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, "
        f"durations, and timestamps, was given {_type_name(v)}"
    )


def _member_text(v: Any) -> str:
    """clauseForType then quoteForCEL: a list or map member as a CEL literal."""
    t = type(v)
    if t is bool or v is None or _is_cel_type(v):
        return _format_string(v)
    if t is int:
        return str(v)
    if t is str:
        return _go_quote(v)
    if t in (bytes, bytearray):
        return "b" + _go_quote(_bytes_text(v))
    if t is float:
        if math.isnan(v) or math.isinf(v):
            return _go_quote("NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf"))
        return f"{v:.{_DEFAULT_PRECISION}f}"
    if t is _dt.datetime:
        return f"timestamp({_go_quote(_timestamp_text(v))})"
    if t is _dt.timedelta:
        return f"duration({_go_quote(_duration_text(v))})"
    if t is list:
        return _format_list(v)
    if t is dict:
        return _format_map(v)
    raise FormatError(f"no formatting function for {_type_name(v)}")


def _format_list(items: list) -> str:
    return "[" + ", ".join(_member_text(x) for x in items) + "]"


def _format_map(m: dict) -> str:
    pairs = []
    for k, v in m.items():
        if type(k) is str:
            key = _go_quote(k)
        elif type(k) is bool:
            key = "true" if k else "false"
        elif type(k) is int:
            key = str(k)
        else:
            raise FormatError(f"no formatting function for map key of type {_type_name(k)}")
        pairs.append((key, _member_text(v)))
    pairs.sort(key=lambda p: p[0].encode("utf-8"))  # sort.SliceStable on Go strings (bytes)
    return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"


# ----------------------------------------------------------------------------- clauses
def _float_argument(v: Any, clause: str) -> float:
    if type(v) is str and v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("Infinity", "inf"))
    if type(v) is not float:
        raise FormatError(f"{clause} clause can only be used on doubles, was given {_type_name(v)}")
    return v


def _localised_special(x: float) -> str | None:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "\u221e" if x > 0 else "-\u221e"
    return None


def _fixed(precision: int | None) -> Callable[[Any], str]:
    p = _DEFAULT_PRECISION if precision is None else precision

    def clause(v: Any) -> str:
        x = _float_argument(v, "fixed-point")
        special = _localised_special(x)
        if special is not None:
            return special
        return f"{x:,.{p}f}"  # x/text en_US: grouped thousands, '.' decimal point

    return clause


def _scientific(precision: int | None) -> Callable[[Any], str]:
    # cel-go builds "%<precision>e": a width, the precision stays x/text's default of 6
    width = _DEFAULT_PRECISION if precision is None else precision

    def clause(v: Any) -> str:
        x = _float_argument(v, "scientific")
        special = _localised_special(x)
        if special is None:
            mantissa, exponent = f"{x:.{_DEFAULT_PRECISION}e}".split("e")
            sign = "-" if exponent.startswith("-") else ""
            digits = exponent.lstrip("+-").rjust(2, "0")
            special = f"{mantissa}\u202f\u00d7\u202f10{(sign + digits).translate(_SUPERSCRIPT)}"
        return special.rjust(width)

    return clause


def _decimal(v: Any) -> str:
    if type(v) is not int:
        raise FormatError(f"decimal clause can only be used on integers, was given {_type_name(v)}")
    return str(v)


def _binary(v: Any) -> str:
    if type(v) is bool:
        return "1" if v else "0"
    if type(v) is not int:
        raise FormatError(f"only integers and bools can be formatted as binary, was given {_type_name(v)}")
    return format(v, "b")


def _octal(v: Any) -> str:
    if type(v) is not int:
        raise FormatError(f"octal clause can only be used on integers, was given {_type_name(v)}")
    return format(v, "o")


def _hex(upper: bool) -> Callable[[Any], str]:
    def clause(v: Any) -> str:
        if type(v) is str:
            text = v.encode("utf-8").hex()
        elif type(v) in (bytes, bytearray):
            text = bytes(v).hex()
        elif type(v) is int:
            text = format(v, "x")
        else:
            raise FormatError(
                f"only integers, byte buffers, and strings can be formatted as hex, was given {_type_name(v)}"
            )
        return text.upper() if upper else text

    return clause


def _clause(fmt: str, i: int) -> tuple[int, Callable[[Any], str]]:
    """parseFormattingClause at fmt[i:] (just after '%'): (characters read, clause)."""
    j = i
    precision = None
    if fmt[j] == ".":
        j += 1
        start = j
        while True:
            if j >= len(fmt):
                raise FormatError(
                    "could not parse formatting clause: error while parsing precision: "
                    "could not find end of precision specifier"
                )
            if not ("0" <= fmt[j] <= "9"):
                break
            j += 1
        if start == j:
            raise FormatError(
                "could not parse formatting clause: error while parsing precision: error while "
                'converting precision to integer: strconv.Atoi: parsing "": invalid syntax'
            )
        precision = int(fmt[start:j])
    verb = fmt[j]
    clauses: dict[str, Callable[[Any], str]] = {
        "s": _format_string,
        "d": _decimal,
        "f": _fixed(precision),
        "e": _scientific(precision),
        "b": _binary,
        "x": _hex(False),
        "X": _hex(True),
        "o": _octal,
    }
    got = clauses.get(verb)
    if got is None:
        raise FormatError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
    return j + 1 - i, got


def format_string(fmt: str, args: list) -> str:
    """parseFormatString with the stringFormatter (cel-go ext/formatting.go)."""
    out = []
    i = 0
    index = 0
    n = len(fmt)
    while i < n:
        ch = fmt[i]
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        if i + 1 < n and fmt[i + 1] == "%":
            out.append("%")
            i += 2
            continue
        if index >= len(args):
            raise FormatError(f"index {index} out of range")
        if i + 1 >= n:
            raise FormatError("unexpected end of string")
        read, clause = _clause(fmt, i + 1)
        try:
            out.append(clause(args[index]))
        except FormatError as e:
            if str(e).startswith(("could not parse", "error during")):
                raise
            raise FormatError(f"error during formatting: {e}") from None
        i += 1 + read
        index += 1
    return "".join(out)


def validator_problem(fmt: str, given: int) -> str | None:
    """What cel-go's format validator reports when compiling a literal format string with a
    literal list of `given` arguments (stringFormatValidator with stringFormatChecker, whose
    Arg never fails: a trailing '%' is "unexpected end of string" before the argument count is
    looked at), the argument types aside; then more arguments than clauses is an error too."""
    count = 0
    i = 0
    n = len(fmt)
    while i < n:
        if fmt[i] != "%":
            i += 1
            continue
        if i + 1 < n and fmt[i + 1] == "%":
            i += 2
            continue
        if i + 1 >= n:
            return "unexpected end of string"
        if count >= given:
            return f"index {count} out of range"
        try:
            read, _ = _clause(fmt, i + 1)
        except FormatError as e:
            return str(e)
        except IndexError:
            return (
                "could not parse formatting clause: error while parsing precision: "
                "could not find end of precision specifier"
            )
        count += 1
        i += 1 + read
    if given > count:
        return f"too many arguments supplied to string.format (expected {count}, got {given})"
    return None


def _fn_format(fmt, args):
    try:
        return format_string(fmt, list(args))
    except IndexError:  # a clause cut short ("%.3")
        raise FormatError(
            "could not parse formatting clause: error while parsing precision: "
            "could not find end of precision specifier"
        ) from None
