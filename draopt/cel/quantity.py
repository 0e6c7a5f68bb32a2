"""Kubernetes' quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go).

``isGreaterThan``, ``isLessThan`` and ``compareTo`` are shared with semver: one function each,
dispatching on the receiver (draopt.cel.functions).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

from draopt.kube.quantity import Quantity, QuantityError
from draopt.cel.values import _q_msg, _q_py


@lru_cache(maxsize=4096)
def _quantity_literal(s: str):
    try:
        q = Quantity.parse(s)
    except QuantityError as e:
        return e
    return _q_msg(q)


def _fn_quantity(s):
    r = _quantity_literal(s)
    if isinstance(r, Exception):
        raise r
    return r


def _fn_is_quantity(s):
    return not isinstance(_quantity_literal(s), Exception)


def _fn_q_sign(a):
    return _q_py(a).sign()


@lru_cache(maxsize=65536)
def _q_compare_keys(x: str, y: str) -> int:
    # the value keys are exact (integer or fraction text); equal keys are equal values
    if x == y:
        return 0
    fx, fy = Fraction(x), Fraction(y)
    return (fx > fy) - (fx < fy)


def _fn_q_gt(a, b):
    return _q_compare_keys(a.v, b.v) == 1


def _fn_q_lt(a, b):
    return _q_compare_keys(a.v, b.v) == -1


def _fn_q_cmp(a, b):
    return _q_compare_keys(a.v, b.v)


def _fn_q_float(a):
    return _q_py(a).as_approximate_float()


def _fn_q_int(a):
    v = _q_py(a).as_int64()
    if v is None:
        raise ValueError("cannot convert value to integer")
    return v


def _fn_q_is_int(a):
    return _q_py(a).as_int64() is not None


def _fn_q_add(a, b):
    return _q_msg(_q_py(a) + _q_py(b))


def _fn_q_add_int(a, b):
    return _q_msg(_q_py(a) + Quantity.from_fraction(b, "DecimalExponent"))


def _fn_q_sub(a, b):
    return _q_msg(_q_py(a) - _q_py(b))


def _fn_q_sub_int(a, b):
    return _q_msg(_q_py(a) - Quantity.from_fraction(b, "DecimalExponent"))
