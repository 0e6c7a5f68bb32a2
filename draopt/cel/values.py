"""Kubernetes' CEL types as protobuf messages, and values to and from Python.

cel-cpp matches no ``dyn`` parameter at runtime and implements no abstract (opaque) type, so
Quantity, Semver, IP, CIDR, Format and URL are dynamically created protobuf messages holding one
*value-only* string key: CEL ``==`` on them compares values like Kubernetes does (``1Gi ==
1024Mi``; build metadata ignored for semver).  The Python objects (with their format) are looked
up again from a registry when results are converted back.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Dict

import semver as _semver
from cel_expr_python import cel as _cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from draopt.kube.quantity import DECIMAL_SI, Quantity


_T = _cel.Type


def _make_pool():
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="draopt_kubernetes_cel.proto", package="kubernetes", syntax="proto3")
    for name in ("Quantity", "Semver", "IP", "CIDR", "Format", "URL"):
        m = fdp.message_type.add(name=name)
        m.field.add(name="v", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    q = message_factory.GetMessageClass(pool.FindMessageTypeByName("kubernetes.Quantity"))
    s = message_factory.GetMessageClass(pool.FindMessageTypeByName("kubernetes.Semver"))
    others = [
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"kubernetes.{n}"))
        for n in ("IP", "CIDR", "Format", "URL")
    ]
    return (pool, q, s, *others)


_POOL, _QMsg, _SMsg, _IPMsg, _CIDRMsg, _FormatMsg, _URLMsg = _make_pool()
_URLT = _T("kubernetes.URL")
_IPT = _T("kubernetes.IP")
_CIDRT = _T("kubernetes.CIDR")
_FORMATT = _T("kubernetes.Format")
_QT = _T("kubernetes.Quantity")
_ST = _T("kubernetes.Semver")

# value key -> python object (last registered wins; only affects the format
# of a quantity / build metadata of a semver returned by evaluate())
_REGISTRY_LIMIT = 200_000
_QREG: Dict[str, Quantity] = {}
_SREG: Dict[str, _semver.Version] = {}


def _qkey(q: Quantity) -> str:
    v = q.value
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


def _q_msg(q: Quantity):
    key = _qkey(q)
    if len(_QREG) > _REGISTRY_LIMIT:
        _QREG.clear()
    _QREG[key] = q
    return _QMsg(v=key)


def _q_py(m) -> Quantity:
    key = m.v
    q = _QREG.get(key)
    if q is None:
        q = Quantity.from_fraction(Fraction(key), DECIMAL_SI)
    return q


def _skey(v: _semver.Version) -> str:
    return str(v.replace(build=None)) if v.build else str(v)


def _s_msg(v: _semver.Version):
    key = _skey(v)
    if len(_SREG) > _REGISTRY_LIMIT:
        _SREG.clear()
    _SREG[key] = v
    return _SMsg(v=key)


def _s_py(m) -> _semver.Version:
    v = _SREG.get(m.v)
    if v is None:
        v = _semver.Version.parse(m.v)
    return v


def _cel_equal(a, b) -> bool:
    """CEL (cel-go ref.Val.Equal) equality of two converted values."""
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in (int, float) and tb in (int, float):
        return a == b
    if ta is not tb:
        return False
    if ta is _QMsg or ta is _SMsg:
        return a.v == b.v
    if ta is list:
        return len(a) == len(b) and all(_cel_equal(x, y) for x, y in zip(a, b))
    return a == b


_ERROR_TYPE = _T.ERROR
_BOOL_TYPE = _T.BOOL
_DYN_TYPE = _T.DYN


def _to_python(v):
    t = type(v)
    if t is _QMsg:
        return _q_py(v)
    if t is _SMsg:
        return _s_py(v)
    if t is list:
        return [_to_python(x) for x in v]
    if t is dict:
        return {_to_python(k): _to_python(x) for k, x in v.items()}
    return v
