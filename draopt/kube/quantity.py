"""Exact Kubernetes ``resource.Quantity``.

This is a port of ``k8s.io/apimachinery/pkg/api/resource`` (quantity.go,
amount.go, suffix.go, math.go) with the value held as an exact
:class:`fractions.Fraction`.

Behaviour reproduced from the Go code:

* parsing (``ParseQuantity``): the same hand written scanner, the same
  suffix table, rounding of sub-nano values *up* (away from zero) to 1n,
  the BinarySI cap at 2^63-1, BinarySI values in (0, 1) switching to
  DecimalSI;
* ``String()`` / JSON: the canonical form from ``CanonicalizeBytes``, and -
  like Go - the *input string itself* when the parser decided it was
  already canonical (so ``"1E3"`` stays ``"1E3"`` and ``"+1k"`` stays
  ``"+1k"``, exactly as ``String()`` and ``MarshalJSON`` print them);
  the Go quirk that an exponent without a suffix (e.g. ``1000E`` = 1e21,
  DecimalSI) prints without suffix (``"1"``) is reproduced too;
* ``Add``/``Sub`` (format of the left operand unless it is zero, then the
  format of the right operand), ``Mul`` by an integer, ``Cmp``;
* ``AsInt64`` (:meth:`Quantity.as_int64`), which in Go depends on the
  internal representation (int64 mantissa/scale versus ``inf.Dec``): e.g.
  ``1000m`` and ``1.5Gi`` are *not* convertible although integral.  This
  matters for the CEL functions ``isInteger``/``asInteger``.

Deviations: exponents with ``|e| > 10000`` are rejected (Go would wrap the
exponent to int32 and then build astronomically large numbers).
"""

from __future__ import annotations

import enum
import math
from functools import lru_cache
from fractions import Fraction
from typing import Optional, Tuple, Union

__all__ = [
    "Format",
    "Quantity",
    "QuantityError",
    "BINARY_SI",
    "DECIMAL_SI",
    "DECIMAL_EXPONENT",
]


class QuantityError(ValueError):
    """A string (or number) is not a valid Kubernetes quantity."""


class Format(str, enum.Enum):
    DECIMAL_EXPONENT = "DecimalExponent"  # e.g. 12e6
    BINARY_SI = "BinarySI"  # e.g. 12Mi (12 * 2^20)
    DECIMAL_SI = "DecimalSI"  # e.g. 12M  (12 * 10^6)

    def __str__(self) -> str:  # pragma: no cover - cosmetic
        return self.value


BINARY_SI = Format.BINARY_SI
DECIMAL_SI = Format.DECIMAL_SI
DECIMAL_EXPONENT = Format.DECIMAL_EXPONENT

_MAX_INT64 = (1 << 63) - 1
_MIN_INT64 = -(1 << 63)
_MAX_EXPONENT = 10000
_NANO = Fraction(1, 10**9)

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_ERR_FORMAT = "quantities must match the regular expression '" + _SPLIT_RE + "'"
_ERR_NUMERIC = "unable to parse numeric part of quantity"
_ERR_SUFFIX = "unable to parse quantity's suffix"

_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")

# suffix -> (base, exponent, format)
_SUFFIXES = {
    "": (10, 0, DECIMAL_SI),
    "n": (10, -9, DECIMAL_SI),
    "u": (10, -6, DECIMAL_SI),
    "m": (10, -3, DECIMAL_SI),
    "k": (10, 3, DECIMAL_SI),
    "M": (10, 6, DECIMAL_SI),
    "G": (10, 9, DECIMAL_SI),
    "T": (10, 12, DECIMAL_SI),
    "P": (10, 15, DECIMAL_SI),
    "E": (10, 18, DECIMAL_SI),
    "Ki": (2, 10, BINARY_SI),
    "Mi": (2, 20, BINARY_SI),
    "Gi": (2, 30, BINARY_SI),
    "Ti": (2, 40, BINARY_SI),
    "Pi": (2, 50, BINARY_SI),
    "Ei": (2, 60, BINARY_SI),
}
_DEC_SUFFIX_BY_EXP = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BIN_SUFFIX_BY_EXP = {1: "Ki", 2: "Mi", 3: "Gi", 4: "Ti", 5: "Pi", 6: "Ei"}

# int64Amount representation: (unscaled int64 value, base-10 scale); None = inf.Dec
_I64 = Optional[Tuple[int, int]]


def _fits(v: int) -> bool:
    return _MIN_INT64 <= v <= _MAX_INT64


def _go_parse_int(s: str) -> Optional[int]:
    """strconv.ParseInt(s, 10, 64)."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or any(c not in _DIGITS for c in body):
        return None
    v = int(s)
    return v if _fits(v) else None


def _scan(s: str):
    """Port of parseQuantityString: (positive, value, num, denom, suffix)."""
    positive = True
    pos = 0
    end = len(s)
    if pos < end:
        if s[0] == "-":
            positive = False
            pos += 1
        elif s[0] == "+":
            pos += 1
    # strip leading zeros
    i = pos
    while True:
        if i >= end:
            return positive, "0", "0", "", ""
        if s[i] == "0":
            pos += 1
            i += 1
        else:
            break
    # numerator
    i = pos
    while True:
        if i >= end:
            return positive, s[0:end], s[pos:end], "", ""
        if s[i] not in _DIGITS:
            num = s[pos:i]
            pos = i
            break
        i += 1
    if not num:
        num = "0"
    denom = ""
    if pos < end and s[pos] == ".":
        pos += 1
        i = pos
        while True:
            if i >= end:
                return positive, s[0:end], num, s[pos:end], ""
            if s[i] not in _DIGITS:
                denom = s[pos:i]
                pos = i
                break
            i += 1
    value = s[0:pos]
    suffix_start = pos
    i = pos
    while True:
        if i >= end:
            return positive, value, num, denom, s[suffix_start:end]
        if s[i] not in _SUFFIX_CHARS:
            pos = i
            break
        i += 1
    if pos < end and s[pos] in "-+":
        pos += 1
    i = pos
    while True:
        if i >= end:
            return positive, value, num, denom, s[suffix_start:end]
        if s[i] not in _DIGITS:
            break
        i += 1
    raise QuantityError(f"invalid quantity {s!r}: {_ERR_FORMAT}")


def _interpret(suffix: str, original: str):
    hit = _SUFFIXES.get(suffix)
    if hit is not None:
        return hit
    if len(suffix) > 1 and suffix[0] in "eE":
        parsed = _go_parse_int(suffix[1:])
        if parsed is not None:
            exp = ((parsed + (1 << 31)) % (1 << 32)) - (1 << 31)  # int32(parsed)
            if abs(exp) > _MAX_EXPONENT:
                raise QuantityError(f"invalid quantity {original!r}: exponent {exp} out of supported range")
            return 10, exp, DECIMAL_EXPONENT
    raise QuantityError(f"invalid quantity {original!r}: {_ERR_SUFFIX}")


def _round_up_nano(v: Fraction) -> Fraction:
    """Round a value away from zero to a multiple of 1e-9 (inf.RoundUp)."""
    if v == 0 or (10**9 % v.denominator == 0):
        return v
    scaled = v * 10**9
    n = math.ceil(abs(scaled))
    return Fraction(n if scaled > 0 else -n, 10**9)


def _pos_scale_i64(base: int, scale: int) -> Optional[int]:
    """positiveScaleInt64: base * 10^scale, None on int64 overflow."""
    v = base * 10**scale
    return v if _fits(v) else None


def _i64_add(a: _I64, b: _I64) -> _I64:
    """int64Amount.Add; None when Go falls back to inf.Dec."""
    if a is None or b is None:
        return None
    av, asc = a
    bv, bsc = b
    if bv == 0:
        return a
    if av == 0:
        return b
    if asc == bsc:
        c = av + bv
        return (c, asc) if _fits(c) else None
    if asc > bsc:
        scaled = _pos_scale_i64(av, asc - bsc)
        if scaled is None:
            return None
        c = scaled + bv
        return (c, bsc) if _fits(c) else None
    scaled = _pos_scale_i64(bv, bsc - asc)
    if scaled is None:
        return None
    c = scaled + av
    return (c, asc) if _fits(c) else None


def _i64_mul(a: _I64, b: int) -> _I64:
    """int64Amount.Mul; None when Go falls back to inf.Dec."""
    if a is None or not _fits(b):
        return None
    av, asc = a
    if av == 0:
        return a
    if b == 0:
        return (0, 0)
    c = av * b
    if not _fits(c):
        return None
    if asc > 0:
        return (c, asc) if _pos_scale_i64(c, asc) is not None else None
    if asc < 0:
        return (c, asc) if c % (10 ** (-asc)) == 0 else None
    return (c, 0)


class Quantity:
    """An exact, immutable Kubernetes quantity.

    ``value`` is the exact value (a :class:`~fractions.Fraction`), ``format``
    the :class:`Format` Kubernetes infers from the string.  Equality, hashing
    and ordering use only the value (like Go's ``Cmp``/``Equal``).
    """

    __slots__ = ("value", "format", "_s", "_i", "_hash")

    value: Fraction
    format: Format
    _s: Optional[str]  # the string form, once made
    _i: _I64  # Go's int64 representation, when it has one
    _hash: Optional[int]

    def __init__(self, value: Fraction, fmt: Format, _s: Optional[str] = None, _i: _I64 = None):
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "format", Format(fmt))
        object.__setattr__(self, "_s", _s)
        object.__setattr__(self, "_i", _i)
        object.__setattr__(self, "_hash", None)

    def __setattr__(self, name, value):
        raise AttributeError("Quantity is immutable")

    def __delattr__(self, name):
        raise AttributeError("Quantity is immutable")

    def __reduce__(self):
        return (Quantity, (self.value, self.format, self._s, self._i))

    # ------------------------------------------------------------------ parse
    @classmethod
    def parse(cls, s: object) -> "Quantity":
        """Parse like ``resource.ParseQuantity``; ints/floats like a JSON number; any other
        value (None, a list, ...) is a QuantityError, so raw YAML values may be passed as read."""
        if isinstance(s, Quantity):
            return s
        if isinstance(s, bool):
            raise QuantityError(f"invalid quantity {s!r}: not a string or number")
        if isinstance(s, int):
            s = str(s)
        elif isinstance(s, float):
            if not math.isfinite(s):
                raise QuantityError(f"invalid quantity {s!r}: not a finite number")
            s = repr(s)
        elif not isinstance(s, str):
            raise QuantityError(f"invalid quantity {s!r}: not a string or number")
        return _parse(s)

    @classmethod
    def from_fraction(cls, value, fmt: Union[Format, str] = DECIMAL_SI) -> "Quantity":
        """Build from an exact number (int, Fraction, Decimal, ...).

        Like the parser, non-zero values are rounded up (away from zero) to a
        multiple of 1n; integral values within int64 get Go's int64
        representation (as ``resource.NewQuantity``).
        """
        if isinstance(value, bool):
            raise QuantityError(f"invalid quantity value {value!r}")
        try:
            v = Fraction(value)
        except (TypeError, ValueError) as e:
            raise QuantityError(f"invalid quantity value {value!r}: {e}") from None
        v = _round_up_nano(v)
        i = (v.numerator, 0) if v.denominator == 1 and _fits(v.numerator) else None
        return cls(v, Format(fmt), None, i)

    @classmethod
    def from_int(cls, value: int, fmt: Union[Format, str] = DECIMAL_SI) -> "Quantity":
        return cls.from_fraction(int(value), fmt)

    # ----------------------------------------------------------------- output
    def __str__(self) -> str:
        s = self._s
        if s is None:
            s = _canonical(self.value, self.format)
            object.__setattr__(self, "_s", s)
        return s

    def to_json(self) -> str:
        """The string Kubernetes serializes (``MarshalJSON`` without quotes)."""
        return str(self)

    def canonical(self) -> str:
        """The canonical form, ignoring a cached input string (``"1E3"`` -> ``"1e3"``)."""
        return _canonical(self.value, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r}, {self.format.value})"

    # ---------------------------------------------------------------- queries
    def sign(self) -> int:
        return (self.value > 0) - (self.value < 0)

    def is_zero(self) -> bool:
        return self.value == 0

    def as_int64(self) -> Optional[int]:
        """Go's ``AsInt64``: the value if Go can cheaply return it, else None.

        Only values held in Go's int64 representation with scale >= 0 qualify
        (``1000m`` or ``1.5Gi`` do not, although integral).
        """
        i = self._i
        if i is None:
            return None
        v, scale = i
        if scale == 0:
            return v
        if scale < 0:
            return None
        return _pos_scale_i64(v, scale)

    def as_approximate_float(self) -> float:
        i = self._i
        if i is not None:
            v, scale = i
            if scale == 0:
                return float(v)
            return float(v) * 10.0**scale
        try:
            return float(self.value)
        except OverflowError:
            return math.inf if self.value > 0 else -math.inf

    def ceil(self) -> int:
        """``Value()``: rounded up away from zero to an integer."""
        v = self.value
        return math.ceil(v) if v >= 0 else -math.ceil(-v)

    def milli_value(self) -> int:
        v = self.value * 1000
        return math.ceil(v) if v >= 0 else -math.ceil(-v)

    # -------------------------------------------------------------- arithmetic
    def __add__(self, other: "Quantity") -> "Quantity":
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = other.format if self.value == 0 else self.format
        return Quantity(self.value + other.value, fmt, None, _i64_add(self._i, other._i))

    def __sub__(self, other: "Quantity") -> "Quantity":
        if not isinstance(other, Quantity):
            return NotImplemented
        fmt = other.format if self.value == 0 else self.format
        neg = None
        if other._i is not None and other._i[0] != _MIN_INT64:
            neg = (-other._i[0], other._i[1])
        return Quantity(self.value - other.value, fmt, None, _i64_add(self._i, neg))

    def __mul__(self, other: int) -> "Quantity":
        if isinstance(other, bool) or not isinstance(other, int):
            return NotImplemented
        return Quantity(self.value * other, self.format, None, _i64_mul(self._i, other))

    __rmul__ = __mul__

    def __neg__(self) -> "Quantity":
        i = self._i
        if i is not None:
            i = (-i[0], i[1]) if i[0] != _MIN_INT64 else None
        return Quantity(-self.value, self.format, None, i)

    def __pos__(self) -> "Quantity":
        return self

    def __abs__(self) -> "Quantity":
        return -self if self.value < 0 else self

    def cmp(self, other: "Quantity") -> int:
        a, b = self.value, other.value
        return (a > b) - (a < b)

    # --------------------------------------------------------------- ordering
    def __eq__(self, other):
        if isinstance(other, Quantity):
            return self.value == other.value
        return NotImplemented

    def __ne__(self, other):
        if isinstance(other, Quantity):
            return self.value != other.value
        return NotImplemented

    def __lt__(self, other):
        if isinstance(other, Quantity):
            return self.value < other.value
        return NotImplemented

    def __le__(self, other):
        if isinstance(other, Quantity):
            return self.value <= other.value
        return NotImplemented

    def __gt__(self, other):
        if isinstance(other, Quantity):
            return self.value > other.value
        return NotImplemented

    def __ge__(self, other):
        if isinstance(other, Quantity):
            return self.value >= other.value
        return NotImplemented

    def __hash__(self):
        h = self._hash
        if h is None:
            h = hash(self.value)
            object.__setattr__(self, "_hash", h)
        return h

    def __bool__(self) -> bool:
        return self.value != 0


@lru_cache(maxsize=8192)
def _parse(s: str) -> Quantity:
    # Quantities are immutable, so equal strings can share one parsed value.
    if len(s) == 0:
        raise QuantityError(f"invalid quantity {s!r}: {_ERR_FORMAT}")
    if s == "0":
        return Quantity(Fraction(0), DECIMAL_SI, "0", (0, 0))

    positive, value, num, denom, suf = _scan(s)
    base, exponent, fmt = _interpret(suf, s)

    precision = 0
    scale = 0
    mantissa = 1
    if fmt is BINARY_SI:
        if exponent >= 0 and len(denom) == 0:
            mantissa = 1 << exponent
            precision = 15 - len(num) - (exponent * 3 // 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = 18 - (len(num) + len(denom))

    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            shifted = num + denom
            iv = int(shifted)
            result = iv * mantissa
            if _fits(result):
                if not positive:
                    result = -result
                v = Fraction(result) * (Fraction(10) ** scale)
                cached = None
                if fmt is BINARY_SI:
                    if exponent % 10 == 0 and (iv & 0x07) != 0:
                        cached = s
                elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
                    cached = s
                return Quantity(v, fmt, cached, (result, scale))

    # inf.Dec path
    body = value[1:] if value[:1] in ("+", "-") else value
    if not any(c in _DIGITS for c in body):
        raise QuantityError(f"invalid quantity {s!r}: {_ERR_NUMERIC}")
    ip, _, fp = body.partition(".")
    amount = Fraction(int(ip or "0") * 10 ** len(fp) + int(fp or "0"), 10 ** len(fp))
    if base == 10:
        amount *= Fraction(10) ** exponent
    else:
        amount *= 1 << exponent
    # amount is non-negative here; the sign is applied at the end
    amount = _round_up_nano(amount)
    if fmt is BINARY_SI and amount > _MAX_INT64:
        amount = Fraction(_MAX_INT64)
    if fmt is BINARY_SI and 0 < amount < 1:
        fmt = DECIMAL_SI
    if not positive:
        amount = -amount
    return Quantity(amount, fmt, None, None)


def _canonical(v: Fraction, fmt: Format) -> str:
    """CanonicalizeBytes + suffix construction."""
    if v == 0:
        return "0"
    if fmt is BINARY_SI:
        if -1024 < v < 1024:
            fmt = DECIMAL_SI
        elif v.denominator != 1:
            fmt = DECIMAL_SI
    if fmt is BINARY_SI:
        n = v.numerator
        neg = n < 0
        n = abs(n)
        times = 0
        while n >= 1024 and n % 1024 == 0:
            n //= 1024
            times += 1
        return ("-" if neg else "") + str(n) + _BIN_SUFFIX_BY_EXP.get(times, "")
    # decimal: v = m * 10^e
    e = 0
    while v.denominator != 1:
        d = v.denominator
        if (10**18) % d == 0 or d % 2 == 0 or d % 5 == 0:
            v *= 10
            e -= 1
            if e < -_MAX_EXPONENT - 30:  # non-terminating decimal; cannot happen for rounded values
                raise QuantityError(f"value {v} has no finite decimal representation")
        else:
            raise QuantityError(f"value {v} has no finite decimal representation")
    m = v.numerator
    neg = m < 0
    m = abs(m)
    while m >= 10 and m % 10 == 0:
        m //= 10
        e += 1
    while e % 3 != 0:
        m *= 10
        e -= 1
    if fmt is DECIMAL_EXPONENT:
        suffix = "" if e == 0 else f"e{e}"
    else:
        suffix = _DEC_SUFFIX_BY_EXP.get(e, "")
    return ("-" if neg else "") + str(m) + suffix
