"""The Kubernetes DRA CEL environment (device selectors).

Library choice
--------------
Two CEL implementations are installed; both were measured on the same
prepared device (``pytest -s tests/test_cel.py -k bench`` prints the numbers;
Python 3.11, one core):

=================================================  ============  ==========
per evaluation, compiled, prepared device          cel-expr-py   cel-python
=================================================  ============  ==========
``device.driver == "dra.example.com"``             1.4 us        78 us
attribute string compare (domain lookup)           1.6 us        120 us
``cel.bind`` + two attribute compares              1.8 us        n/a (no bind)
``includes()`` on a list attribute                 5 us          n/a
``capacity.memory.compareTo(quantity("1Gi"))``     7.7 us        n/a
``version.isGreaterThan(semver("1.2.0"))``         9 us          n/a
=================================================  ============  ==========

(make_cel_device for 12 attributes + 3 capacities: ~32 us, once per device.)
``benchmarks/bench_cel.py`` measures the selectors of the issue (quantity /
semver selectors: 8-17 us median, 5-13 us best round, on a loaded 2-core
machine; cel-go takes 14-25 us).  cel-expr-python 0.1.3 exposes no runtime
options (cost tracking, comprehension budget, cross-type numeric checks); its
environment YAML gives the cel-cpp extensions at chosen versions.  The other
maintained binding on PyPI, ``common-expression-language`` 0.10 (Rust cel
crate), was downloaded and its API read (cel/cel.pyi) but not adopted: it has
``compile(expression)`` without declarations (so no type checking, which
Kubernetes' compile errors need), no cost or limit options and no extension
configuration; its functions are Python callbacks too.

``cel-expr-python`` (the C++ cel-cpp binding) is used.  It is 10-30x faster,
has ``cel.bind``, optional syntax and the strings extension, and detects
undeclared references at compile time.  Its quirks are worked around here:

* Overloads with a ``dyn`` parameter never match at runtime, and abstract
  (opaque) types are "Unimplemented".  Quantity and Semver are therefore
  dynamically created protobuf messages (``kubernetes.Quantity`` /
  ``kubernetes.Semver``) holding one *value-only* string key, so CEL ``==``
  on them compares values like Kubernetes does (``1Gi == 1024Mi``; build
  metadata ignored for semver).  The Python objects (with their format) are
  looked up again from a registry when results are converted back.
  ``includes`` is registered with one overload per concrete kind.
* Errors are returned as ERROR values (not exceptions); they are turned into
  :class:`CelRuntimeError` and cel-cpp's ``Key not found in map : "x"`` is
  rephrased as Kubernetes' ``no such key: x``.
* Python mappings cannot be lazy, so "an unknown domain is an empty map" is
  implemented by rewriting ``device.attributes[K]`` / ``device.capacity[K]``
  (and ``device.attributes.dom``) into ``(K in device.attributes ?
  device.attributes[K] : <empty>)`` before compiling; ``[?K]`` / ``.?dom``
  become ``optional.of(...)`` of that and ``has(device.attributes.dom)`` is
  true, because Kubernetes' mapper ``Find`` reports every domain as found
  (``"dom" in device.attributes`` and iteration still see only the real
  domains, exactly as in Kubernetes).
* ``device`` is declared as the qualified variables ``device.driver``,
  ``device.allowMultipleAllocations``, ``device.attributes`` and
  ``device.capacity`` so that ``device.foo`` is a compile error, like the
  Kubernetes object type.

Kubernetes' base environment (apiserver/pkg/cel/environment/base.go, up to 1.34)
------------------------------------------------------------------------------
Provided: the standard library and macros, optional types, ``cel.bind``,
strings extension v2 (no string ``reverse()``, which is v3), cel-go's lists
extension (``slice``, ``flatten``, ``lists.range``, ``reverse``, ``distinct``,
``sort``, ``sortBy``; cel-cpp's "lists" version 2 has the functions of the
version 3 Kubernetes pins, which changed cel-go's cost estimates only), sets
(``sets.contains/equivalent/intersects``), two-variable comprehensions
(``all``/``exists``/``existsOne``/``exists_one``/``transformList``/
``transformMap``/``transformMapEntry``), the Kubernetes lists library (``isSorted``, ``sum``, ``min``,
``max``, ``indexOf``, ``lastIndexOf``), regex ``find``/``findAll``, quantity,
semver, the IP and CIDR libraries (``ip``, ``isIP``, ``ip.isCanonical``,
``family``, ``is*`` tests, ``cidr``, ``isCIDR``, ``containsIP``,
``containsCIDR``, ``masked``, ``prefixLength``; messages holding the
canonical text, Go net/netip semantics through Python's ipaddress), the
format library (``format.<name>()``, ``format.named()``, ``validate()``), the
URL library (``url``, ``isURL``, ``getScheme``/``getHost``/``getHostname``/
``getPort``/``getEscapedPath``/``getQuery``), and
``includes`` (in the allocator's environment always, as Kubernetes'
StoredExpressions; with ``new_expressions=True``, which ``draopt validate``
uses, only with DRAListTypeAttributes).  Workarounds:

* ``indexOf``/``lastIndexOf`` exist in both the strings extension and the
  lists library; cel-cpp cannot add overloads to an extension's function, so
  member calls are renamed before compiling to one function holding both
  (string forms reimplemented after cel-go's ext/strings.go) and renamed back
  in messages.
* Results of ``sum``/``min``/``max`` are converted by the binding to the return
  type of the overload carrying the implementation; that overload is the
  duration/bytes one, declared ``dyn``: ``[1, 2].sum()`` is typed ``dyn`` here,
  ``int`` in Kubernetes (a selector ``[1].sum()`` compiles here and fails when
  evaluated).  ``sum()`` over durations fails (the binding cannot return them).
* Cross-type numeric ordering (``1 < 1.5``, ``2u > 1``; Kubernetes enables
  ``cel.CrossTypeNumericComparisons``): cel-cpp's checker rejects it but its
  runtime compares across types, so when the checker reports no overload of
  ``<``/``<=``/``>``/``>=`` for two different numeric types, the right operand
  is wrapped in ``dyn()`` and the expression compiled again.  ``1 == 1.0``
  stays a compile error, as in cel-go.
* Kubernetes' AST validators (regex, duration and timestamp literals): a
  literal argument of ``matches``, ``duration`` or ``timestamp`` that does not
  parse is a compile error.
* ``format.named(n)`` and ``<Format>.validate(s)`` return optionals, which a
  Python implementation cannot return through the binding: they are rewritten
  to ``cel.bind`` + ``optional.of``/``optional.none()`` around helpers that
  return a plain Format / list of messages.
* ``cel.HomogeneousAggregateLiterals``: after compiling, the checked AST
  (``Expression.serialize()``, decoded with a minimal description of
  cel.expr.CheckedExpr) is walked and a list literal whose elements, or a map
  literal whose keys or values, have different checked types (``dyn`` matches
  anything) is a compile error "expected type 'int' but found 'string'", as
  in cel-go.  Duplicate map-literal keys fail at runtime, as in Kubernetes.
* ``has(device.driver)`` (and ``allowMultipleAllocations``, ``attributes``,
  ``capacity``) is true, as on Kubernetes' device object.
* The two-variable ``exists_one`` is compiled as ``existsOne`` (cel-cpp knows
  only that spelling).
* ``transformMap``/``transformMapEntry``: the binding has no implementation
  of ``cel.@mapInsert`` their expansion uses, so ``m.transformMap(k, v, e)``
  is compiled as ``m.transformList(k, v, [k, e])`` turned into a map by a
  helper function, and ``transformMapEntry`` as ``transformList`` of the entry
  maps, merged (a repeated key fails, as cel-go's mapInsert does).  The result
  is typed ``map(dyn, dyn)``.
* cel-cpp stops after 10,000 comprehension iterations in one evaluation
  (``comprehension_max_iterations``, not settable through the binding);
  Kubernetes has no such limit.  When the budget stops an evaluation, draopt
  reports "cost limit exceeded" if every loop's size is written in the
  expression and the full evaluation would pass the limit (the DRA
  "expensive" test case), and otherwise evaluates the expression again with
  every comprehension run from Python (``_fn_loop``: the body compiled on its
  own and evaluated per element, errors absorbed as cel-go's all/exists do,
  cost counted as above): 20,000 iterations take about 0.1 s.  ``sortBy``
  keeps cel-cpp's loop.

Runtime cost
------------
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
``PresenceTestHasCost(false)``).  :meth:`CompiledExpression.cost` returns the
estimate for one device.

:meth:`CompiledExpression.estimated_cost` is the API server's worst case over
all devices, which ``draopt validate`` checks ("too complex, exceeds cost
limit"): the same model with each loop's size bounded by a literal list,
``lists.range(N)``, the device's attribute/capacity maps (32 entries) or a
list-type attribute (48 values).  Loops over anything else (``split()``
results, ...) have no bound here and are not checked; Kubernetes' estimator
bounds them from string and list size limits.  On the DRA test cases the
figures are within 25% of Kubernetes' (``exists_one`` over the domains: 131
here, 164 there; the nested "expensive" loops: 75,555,551 / 85,555,551).

Not reproduced
--------------
* Attribute values are typed ``dyn`` in both modes; Kubernetes types them
  ``any`` without DRAListTypeAttributes, which can move a few type errors
  from compile time to runtime here.
* ``string(ip)`` / ``string(cidr)`` conversions (cel-cpp cannot add overloads to ``string``),
  the type names ``net.IP``/``net.CIDR``/``net.URL`` (here ``kubernetes.IP``...),
  URL parsing beyond what ``url()`` checks here (an absolute URI or path, no
  space or bad port in the host: a subset of Go's url.ParseRequestURI), and
  cel-go's compile-time ``format()`` checks beyond a call on literals (a
  ``"...".format([...])`` that uses no variable is evaluated when compiling and
  its error is a compile error; with variables the error comes at runtime;
  cel-cpp formats a double with ``%d`` where cel-go refuses it).
"""

from __future__ import annotations

import ipaddress
import re
import threading
from fractions import Fraction
from functools import lru_cache
from typing import Any, Dict, Optional, Tuple

import semver as _semver
from cel_expr_python import cel as _cel
from cel_expr_python.ext import ext_bindings as _ext_bindings
from cel_expr_python.ext import ext_optional as _ext_optional
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ..quantity import DECIMAL_SI, Quantity, QuantityError

try:  # RE2, like Go's regexp (used by find/findAll)
    import re2 as _re2  # type: ignore
except Exception:  # pragma: no cover
    _re2 = re

__all__ = [
    "CelError",
    "CelCompileError",
    "CelRuntimeError",
    "CelDevice",
    "CompiledExpression",
    "CelEnvironment",
    "make_cel_device",
]

# cel-cpp's default RuntimeOptions.comprehension_max_iterations (not configurable in the binding)
_ITERATION_BUDGET = 10_000

# Extensions of Kubernetes' base environment that cel-cpp provides, at the versions
# Kubernetes pins (apiserver/pkg/cel/environment/base.go): strings v2 (1.29), two-variable
# comprehensions (1.32), lists v3 (1.34; cel-cpp's lists v2 has the same functions: slice,
# flatten, lists.range, reverse, distinct, sort, sortBy; v3 changed cel-go's cost estimates only).
_EXTENSIONS_YAML = """
extensions:
  - name: strings
    version: 2
  - name: lists
    version: 2
  - name: two-var-comprehensions
"""

# resourceapi.ResourceSliceMaxAttributeValuesPerDevice ("includes" limit)
MAX_INCLUDES_LIST = 48


class CelError(Exception):
    """Base class of all CEL errors."""


class CelCompileError(CelError):
    """The expression does not compile (syntax, undeclared reference, type)."""


class CelRuntimeError(CelError):
    """The expression failed at runtime (e.g. ``no such key: memory``)."""


# --------------------------------------------------------------------------
# Custom types as protobuf messages

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
    others = [message_factory.GetMessageClass(pool.FindMessageTypeByName(f"kubernetes.{n}"))
              for n in ("IP", "CIDR", "Format", "URL")]
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


# --------------------------------------------------------------------------
# Function implementations


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


def _parse_semver_strict(s: str) -> _semver.Version:
    return _semver.Version.parse(s)


def _normalize_semver(s: str) -> _semver.Version:
    # port of normalizeAndParse in k8s.io/apiserver/pkg/cel/library/semverlib.go
    if s.startswith("v"):
        s = s[1:]
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if len(p) == 0 or p[0] not in "0123456789":
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        while len(parts) < 3:
            parts.append("0")
    return _semver.Version.parse(".".join(parts))


@lru_cache(maxsize=4096)
def _semver_literal(s: str, normalize: bool):
    try:
        v = _normalize_semver(s) if normalize else _parse_semver_strict(s)
    except (ValueError, TypeError) as e:
        return ValueError(str(e))
    return _s_msg(v)


def _fn_semver(s):
    r = _semver_literal(s, False)
    if isinstance(r, Exception):
        raise r
    return r


def _fn_semver_n(s, n):
    r = _semver_literal(s, bool(n))
    if isinstance(r, Exception):
        raise r
    return r


def _fn_is_semver(s):
    return not isinstance(_semver_literal(s, False), Exception)


def _fn_is_semver_n(s, n):
    return not isinstance(_semver_literal(s, bool(n)), Exception)


@lru_cache(maxsize=65536)
def _s_compare_keys(x: str, y: str) -> int:
    # keys are versions without build metadata, which comparisons ignore
    return 0 if x == y else _semver.Version.parse(x).compare(_semver.Version.parse(y))


def _fn_s_cmp(a, b):
    return _s_compare_keys(a.v, b.v)


def _fn_s_gt(a, b):
    return _s_compare_keys(a.v, b.v) == 1


def _fn_s_lt(a, b):
    return _s_compare_keys(a.v, b.v) == -1


def _fn_s_major(a):
    return _s_py(a).major


def _fn_s_minor(a):
    return _s_py(a).minor


def _fn_s_patch(a):
    return _s_py(a).patch


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


def _fn_includes_list(target, arg):
    for i, item in enumerate(target):
        if i >= MAX_INCLUDES_LIST:
            raise ValueError(
                f"'includes' function cannot be applied to lists longer than {MAX_INCLUDES_LIST} values"
            )
        if _cel_equal(item, arg):
            return True
    return False


def _fn_includes_scalar(target, arg):
    return _cel_equal(target, arg)


@lru_cache(maxsize=1024)
def _regex(pattern: str):
    return _re2.compile(pattern)


def _fn_find(s, pattern):
    m = _regex(pattern).search(s)
    return m.group(0) if m else ""


def _fn_find_all(s, pattern):
    return [m.group(0) for m in _regex(pattern).finditer(s)]


def _fn_find_all_n(s, pattern, n):
    if n == 0:
        return []
    out = []
    for m in _regex(pattern).finditer(s):
        out.append(m.group(0))
        if n > 0 and len(out) >= n:
            break
    return out


def _fn_sets_contains(a, b):
    return all(any(_cel_equal(x, y) for x in a) for y in b)


def _fn_sets_equivalent(a, b):
    return _fn_sets_contains(a, b) and _fn_sets_contains(b, a)


def _fn_sets_intersects(a, b):
    return any(any(_cel_equal(x, y) for x in a) for y in b)


# Kubernetes IP and CIDR libraries (k8s.io/apiserver/pkg/cel/library/ip.go, cidr.go), after
# Go's net/netip semantics.  Values are messages holding the canonical text.


def _parse_ip(s: str):
    if "%" in s:
        raise ValueError(f'IP address "{s}" with zone value is not allowed')
    try:
        a = ipaddress.ip_address(s)
    except ValueError as e:
        raise ValueError(f'IP Address "{s}" parse error during conversion from string: {e}') from None
    if a.version == 6 and a.ipv4_mapped is not None:
        raise ValueError(f'IPv4-mapped IPv6 address "{s}" is not allowed')
    return a


def _parse_cidr(s: str):
    if "%" in s:
        raise ValueError(f'CIDR "{s}" with zone value is not allowed')
    addr, sep, bits = s.partition("/")
    try:
        if not sep or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
            raise ValueError("no '/' or invalid prefix length")
        iface = ipaddress.ip_interface(s)
    except ValueError as e:
        raise ValueError(f"network address parse error during conversion from string: {e}") from None
    if iface.version == 6 and iface.ip.ipv4_mapped is not None:
        raise ValueError(f'IPv4-mapped IPv6 address "{s}" is not allowed')
    return iface


def _ip_py(m):
    return ipaddress.ip_address(m.v)


def _cidr_py(m):
    return ipaddress.ip_interface(m.v)


def _fn_ip(s):
    return _IPMsg(v=str(_parse_ip(s)))


def _fn_is_ip(s):
    try:
        _parse_ip(s)
        return True
    except ValueError:
        return False


def _fn_ip_is_canonical(s):
    return str(_parse_ip(s)) == s


def _fn_ip_family(m):
    return _ip_py(m).version


def _fn_ip_is_unspecified(m):
    return _ip_py(m).is_unspecified


def _fn_ip_is_loopback(m):
    a = _ip_py(m)
    return a in _V4_LOOPBACK if a.version == 4 else a == _V6_LOOPBACK


def _fn_ip_is_link_local_multicast(m):
    a = _ip_py(m)
    if a.version == 4:
        return a in _V4_LL_MULTICAST
    b = a.packed
    return b[0] == 0xFF and (b[1] & 0x0F) == 0x02


def _fn_ip_is_link_local_unicast(m):
    a = _ip_py(m)
    return a in (_V4_LL_UNICAST if a.version == 4 else _V6_LL_UNICAST)


def _fn_ip_is_global_unicast(m):
    a = _ip_py(m)
    if a.is_unspecified or a.is_multicast or _fn_ip_is_loopback(m) or _fn_ip_is_link_local_unicast(m):
        return False
    return not (a.version == 4 and a == _V4_BROADCAST)


_V4_LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
_V6_LOOPBACK = ipaddress.ip_address("::1")
_V4_LL_MULTICAST = ipaddress.ip_network("224.0.0.0/24")
_V4_LL_UNICAST = ipaddress.ip_network("169.254.0.0/16")
_V6_LL_UNICAST = ipaddress.ip_network("fe80::/10")
_V4_BROADCAST = ipaddress.ip_address("255.255.255.255")


def _cidr_text(iface) -> str:
    return f"{iface.ip}/{iface.network.prefixlen}"


def _fn_cidr(s):
    return _CIDRMsg(v=_cidr_text(_parse_cidr(s)))


def _fn_is_cidr(s):
    try:
        _parse_cidr(s)
        return True
    except ValueError:
        return False


def _fn_cidr_contains_ip(m, other):
    net = _cidr_py(m).network
    a = _ip_py(other) if type(other) is _IPMsg else _parse_ip(other)
    return a.version == net.version and a in net


def _fn_cidr_contains_cidr(m, other):
    net = _cidr_py(m).network
    o = (_cidr_py(other) if type(other) is _CIDRMsg else _parse_cidr(other)).network
    return o.version == net.version and o.subnet_of(net)


def _fn_cidr_ip(m):
    return _IPMsg(v=str(_cidr_py(m).ip))


def _fn_cidr_masked(m):
    net = _cidr_py(m).network
    return _CIDRMsg(v=f"{net.network_address}/{net.prefixlen}")


def _fn_cidr_prefix_length(m):
    return _cidr_py(m).network.prefixlen


# Kubernetes URL library (k8s.io/apiserver/pkg/cel/library/urls.go): Go's url.ParseRequestURI
# (an absolute URI or an absolute path) and the accessors of its result.

_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):(.*)$", re.S)


def _parse_url(s: str):
    def fail(why):
        raise ValueError(f'URL parse error during conversion from string: parse "{s}": {why}')
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in s):
        fail("net/url: invalid control character in URL")
    if not s:
        fail("empty url")
    if s.startswith("/"):
        return "", "", s
    m = _URL_SCHEME.match(s)
    if not m:
        fail("invalid URI for request")
    scheme, rest = m.group(1), m.group(2)
    if rest.startswith("//"):
        rest = rest[2:]
        cut = min([i for i in (rest.find("/"), rest.find("?")) if i >= 0] or [len(rest)])
        host = rest[:cut].rpartition("@")[2]
        if " " in host:
            fail('invalid character " " in host name')
        if not host.startswith("["):
            port = host.rpartition(":")[2] if ":" in host else ""
            if port and not port.isdigit():
                fail(f'invalid port ":{port}" after host')
        return scheme, rest[:cut], rest[cut:]
    if not rest.startswith("/"):
        return scheme, "", rest  # opaque
    return scheme, "", rest


def _url_parts(m):
    scheme, host, tail = _parse_url(m.v)
    path, _, query = tail.partition("#")[0].partition("?")
    return scheme, host, path, query


def _fn_url(s):
    _parse_url(s)
    return _URLMsg(v=s)


def _fn_is_url(s):
    try:
        _parse_url(s)
        return True
    except ValueError:
        return False


def _fn_url_scheme(m):
    return _url_parts(m)[0]


def _fn_url_host(m):
    host = _url_parts(m)[1]
    return host.rpartition("@")[2]


def _url_host_port(m):
    host = _fn_url_host(m)
    if host.startswith("["):
        end = host.find("]")
        return host[1:end], host[end + 2:] if host[end + 1:end + 2] == ":" else ""
    name, sep, port = host.rpartition(":")
    return (name, port) if sep else (host, "")


def _fn_url_hostname(m):
    return _url_host_port(m)[0]


def _fn_url_port(m):
    return _url_host_port(m)[1]


def _fn_url_escaped_path(m):
    from urllib.parse import quote, unquote
    path = _url_parts(m)[2]
    return quote(unquote(path), safe="/:@!$&'()*+,;=-._~")


def _fn_url_query(m):
    from urllib.parse import parse_qs
    out: Dict[str, list] = {}
    for k, vs in parse_qs(_url_parts(m)[3], keep_blank_values=True).items():
        out[k] = vs
    return out


# Kubernetes format library (k8s.io/apiserver/pkg/cel/library/format.go)

_DNS1035_RE = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                f"regex used for validation is '{_DNS1035_RE}')")
_UUID_RE = re.compile(r"(?i)^(?:urn:uuid:)?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})?$")


def _mask_trailing_dash(s: str) -> str:
    return s[:-1] + "a" if len(s) > 1 and s.endswith("-") else s


def _dns1035_label(s: str) -> list:
    from ..validation.documents import _length_and_pattern
    return _length_and_pattern(s, 63, _DNS1035_RE, _DNS1035_MSG)


def _validate_uri(s: str) -> list:
    # Go's url.ParseRequestURI: an absolute URI or an absolute path, no fragment handling needed
    if not s:
        return [f'parse "{s}": empty url']
    if s.startswith("/"):
        return []
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", s, re.S)
    if not m:
        return [f'parse "{s}": invalid URI for request']
    return []


def _validate_byte(s: str) -> list:
    import base64
    try:
        base64.b64decode(s, validate=True)
        return []
    except Exception:
        return ["invalid base64"]


def _validate_date(s: str) -> list:
    import datetime as _dt
    try:
        if not _DATE_RE.match(s):
            raise ValueError
        _dt.date.fromisoformat(s)
        return []
    except ValueError:
        return ["invalid date"]


def _format_validators():
    from ..validation import documents as v
    return {
        "dns1123Label": lambda s: v.is_dns1123_label(s),
        "dns1123Subdomain": lambda s: v.is_dns1123_subdomain(s),
        "dns1035Label": _dns1035_label,
        "qualifiedName": lambda s: v.is_qualified_label_name(s),
        "dns1123LabelPrefix": lambda s: v.is_dns1123_label(_mask_trailing_dash(s)),
        "dns1123SubdomainPrefix": lambda s: v.is_dns1123_subdomain(_mask_trailing_dash(s)),
        "dns1035LabelPrefix": lambda s: _dns1035_label(_mask_trailing_dash(s)),
        "labelValue": lambda s: v.is_label_value(s),
        "uri": _validate_uri,
        "uuid": lambda s: [] if _UUID_RE.match(s) else ["does not match the UUID format"],
        "byte": _validate_byte,
        "date": _validate_date,
        "datetime": lambda s: [] if _DATETIME_RE.match(s) else ["invalid datetime"],
    }


_FORMAT_NAMES = ("dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix",
                 "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date",
                 "datetime")
_FORMATS: Dict[str, Any] = {}  # filled on first use (draopt.validate imports this module)


def _fn_format_known(name):
    return name in _FORMAT_NAMES


def _fn_format_named(name):
    if name not in _FORMAT_NAMES:
        raise ValueError(f"unknown format {name}")
    return _FormatMsg(v=name)


def _fn_format_errors(fmt, s):
    if not _FORMATS:
        _FORMATS.update(_format_validators())
    return list(_FORMATS[fmt.v](s))


# Kubernetes lists library (k8s.io/apiserver/pkg/cel/library/lists.go)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _cel_compare(a, b) -> int:
    """traits.Comparer.Compare for the comparable kinds (numbers compare across types)."""
    ta, tb = type(a), type(b)
    num = (int, float)
    if (ta in num and tb in num) or ta is tb:
        try:
            return (a > b) - (a < b)
        except TypeError:
            pass
    raise ValueError("no such overload")


def _fn_list_is_sorted(lst):
    for i in range(1, len(lst)):
        if _cel_compare(lst[i - 1], lst[i]) == 1:
            return False
    return True


def _fn_list_sum(lst):
    acc = None
    for x in lst:
        acc = x if acc is None else acc + x
        if type(acc) is int and not _INT64_MIN <= acc <= _INT64_MAX:
            raise ValueError("integer overflow")
    return 0 if acc is None else acc


def _list_extreme(name, prefer):
    def impl(lst):
        if not lst:
            raise ValueError(f"{name} called on empty list")
        best = lst[0]
        for x in lst[1:]:
            if _cel_compare(best, x) == prefer:
                best = x
        return best
    return impl


_fn_list_min = _list_extreme("min", 1)
_fn_list_max = _list_extreme("max", -1)


def _fn_list_index_of(lst, item):
    for i, x in enumerate(lst):
        if _cel_equal(x, item):
            return i
    return -1


def _str_offset(s, sub, offset):
    # cel-go ext/strings.go: a negative offset is an error; one past the end finds only ""
    if offset < 0:
        raise ValueError(f"index out of range: {offset}")
    if offset > len(s):
        return len(s) if sub == "" else -1
    return None


def _fn_str_index_of(s, sub, offset=None):
    if offset is None:
        return s.find(sub)
    r = _str_offset(s, sub, offset)
    return s.find(sub, offset) if r is None else r


def _fn_str_last_index_of(s, sub, offset=None):
    if offset is None:
        return s.rfind(sub)
    r = _str_offset(s, sub, offset)
    return s.rfind(sub, 0, offset + len(sub)) if r is None else r


def _fn_list_last_index_of(lst, item):
    for i in range(len(lst) - 1, -1, -1):
        if _cel_equal(lst[i], item):
            return i
    return -1


def _fn_gt(a, b):
    if type(a) is _QMsg:
        return _fn_q_gt(a, b)
    return _fn_s_gt(a, b)


def _fn_lt(a, b):
    if type(a) is _QMsg:
        return _fn_q_lt(a, b)
    return _fn_s_lt(a, b)


def _fn_cmp(a, b):
    if type(a) is _QMsg:
        return _fn_q_cmp(a, b)
    return _fn_s_cmp(a, b)


def _runtime_kind(t) -> str:
    # both custom types are protobuf messages: the same runtime kind
    if t == _QT or t == _ST:
        return "message"
    return t.name().split("<")[0]


def _decl(name, overloads):
    """FunctionDecl whose overloads share one implementation per runtime kind
    signature (cel-cpp refuses two implementations for the same kinds)."""
    seen = set()
    ovs = []
    for oid, ret, params, member, impl in overloads:
        sig = (member, tuple(_runtime_kind(p) for p in params))
        if sig in seen:
            ovs.append(_cel.Overload(oid, return_type=ret, parameters=params, is_member=member))
        else:
            seen.add(sig)
            ovs.append(_cel.Overload(oid, return_type=ret, parameters=params, is_member=member, impl=impl))
    return _cel.FunctionDecl(name, ovs)


def _build_functions(list_type_attributes: bool, loops: bool = True):
    T = _T
    QT, ST = _QT, _ST
    fns = [
        _decl("quantity", [("string_to_quantity", QT, [T.STRING], False, _fn_quantity)]),
        _decl("isQuantity", [("is_quantity_string", T.BOOL, [T.STRING], False, _fn_is_quantity)]),
        _decl("sign", [("quantity_sign", T.INT, [QT], False, _fn_q_sign)]),
        _decl("isGreaterThan", [
            ("quantity_is_greater_than", T.BOOL, [QT, QT], True, _fn_gt),
            ("semver_is_greater_than", T.BOOL, [ST, ST], True, _fn_gt),
        ]),
        _decl("isLessThan", [
            ("quantity_is_less_than", T.BOOL, [QT, QT], True, _fn_lt),
            ("semver_is_less_than", T.BOOL, [ST, ST], True, _fn_lt),
        ]),
        _decl("compareTo", [
            ("quantity_compare_to", T.INT, [QT, QT], True, _fn_cmp),
            ("semver_compare_to", T.INT, [ST, ST], True, _fn_cmp),
        ]),
        _decl("asApproximateFloat", [("quantity_get_float", T.DOUBLE, [QT], True, _fn_q_float)]),
        _decl("asInteger", [("quantity_get_int", T.INT, [QT], True, _fn_q_int)]),
        _decl("isInteger", [("quantity_is_integer", T.BOOL, [QT], True, _fn_q_is_int)]),
        _decl("add", [
            ("quantity_add", QT, [QT, QT], True, _fn_q_add),
            ("quantity_add_int", QT, [QT, T.INT], True, _fn_q_add_int),
        ]),
        _decl("sub", [
            ("quantity_sub", QT, [QT, QT], True, _fn_q_sub),
            ("quantity_sub_int", QT, [QT, T.INT], True, _fn_q_sub_int),
        ]),
        _decl("semver", [
            ("string_to_semver", ST, [T.STRING], False, _fn_semver),
            ("string_bool_to_semver", ST, [T.STRING, T.BOOL], False, _fn_semver_n),
        ]),
        _decl("isSemver", [
            ("is_semver_string", T.BOOL, [T.STRING], False, _fn_is_semver),
            ("is_semver_string_bool", T.BOOL, [T.STRING, T.BOOL], False, _fn_is_semver_n),
        ]),
        _decl("major", [("semver_major", T.INT, [ST], True, _fn_s_major)]),
        _decl("minor", [("semver_minor", T.INT, [ST], True, _fn_s_minor)]),
        _decl("patch", [("semver_patch", T.INT, [ST], True, _fn_s_patch)]),
        # Kubernetes regex library
        _decl("find", [("string_find_string", T.STRING, [T.STRING, T.STRING], True, _fn_find)]),
        _decl("findAll", [
            ("string_find_all_string", T.List(T.STRING), [T.STRING, T.STRING], True, _fn_find_all),
            ("string_find_all_string_int", T.List(T.STRING), [T.STRING, T.STRING, T.INT], True, _fn_find_all_n),
        ]),
        # cel-go ext.Sets
        _decl("sets.contains", [("list_sets_contains_list", T.BOOL, [T.LIST, T.LIST], False, _fn_sets_contains)]),
        _decl("sets.equivalent", [("list_sets_equivalent_list", T.BOOL, [T.LIST, T.LIST], False, _fn_sets_equivalent)]),
        _decl("sets.intersects", [("list_sets_intersects_list", T.BOOL, [T.LIST, T.LIST], False, _fn_sets_intersects)]),
    ]
    # Kubernetes lists library: one overload per element type as Kubernetes declares them
    # (cel-cpp calls one implementation per runtime kind; all list overloads share it).
    comparable = [("int", T.INT), ("uint", T.UINT), ("double", T.DOUBLE), ("bool", T.BOOL),
                  ("duration", T.DURATION), ("timestamp", T.TIMESTAMP), ("string", T.STRING), ("bytes", T.BYTES)]
    summable = [("int", T.INT), ("uint", T.UINT), ("double", T.DOUBLE), ("duration", T.DURATION)]
    fns.append(_decl("isSorted", [(f"list_{n}_is_sorted_bool", T.BOOL, [T.List(t)], True, _fn_list_is_sorted)
                                  for n, t in comparable]))
    # The binding converts an implementation's result to the return type of the overload that
    # carries it, so that overload (the least used element type: duration, bytes) returns dyn.
    def _first_dyn(ovs):
        return [(ovs[-1][0], T.DYN) + ovs[-1][2:]] + ovs[:-1]
    fns.append(_decl("sum", _first_dyn([(f"list_{n}_sum_{n}", t, [T.List(t)], True, _fn_list_sum)
                                        for n, t in summable])))
    fns.append(_decl("min", _first_dyn([(f"list_{n}_min_{n}", t, [T.List(t)], True, _fn_list_min)
                                        for n, t in comparable])))
    fns.append(_decl("max", _first_dyn([(f"list_{n}_max_{n}", t, [T.List(t)], True, _fn_list_max)
                                        for n, t in comparable])))
    elem = comparable + [("quantity", QT), ("semver", ST), ("list", T.LIST), ("map", T.MAP)]
    # indexOf / lastIndexOf are declared by the strings extension too, and cel-cpp cannot add
    # overloads to a function an extension declares: member calls are renamed (_rename_members)
    # to one function with the strings extension's overloads and the lists library's.
    for name, lst_impl, str_impl in (("indexOf", _fn_list_index_of, _fn_str_index_of),
                                     ("lastIndexOf", _fn_list_last_index_of, _fn_str_last_index_of)):
        fns.append(_decl(_RENAMED[name], [
            (f"string_{name}", T.INT, [T.STRING, T.STRING], True, str_impl),
            (f"string_{name}_int", T.INT, [T.STRING, T.STRING, T.INT], True, str_impl),
        ] + [(f"list_{n}_{name}_int", T.INT, [T.List(t), t], True, lst_impl) for n, t in elem]))
    # IP / CIDR (Kubernetes 1.30)
    IPT, CIDRT = _IPT, _CIDRT
    fns += [
        _decl("ip", [("string_to_ip", IPT, [T.STRING], False, _fn_ip),
                     ("cidr_ip", IPT, [CIDRT], True, _fn_cidr_ip)]),
        _decl("isIP", [("is_ip", T.BOOL, [T.STRING], False, _fn_is_ip)]),
        _decl("ip.isCanonical", [("ip_is_canonical", T.BOOL, [T.STRING], False, _fn_ip_is_canonical)]),
        _decl("family", [("ip_family", T.INT, [IPT], True, _fn_ip_family)]),
        _decl("isUnspecified", [("ip_is_unspecified", T.BOOL, [IPT], True, _fn_ip_is_unspecified)]),
        _decl("isLoopback", [("ip_is_loopback", T.BOOL, [IPT], True, _fn_ip_is_loopback)]),
        _decl("isLinkLocalMulticast", [("ip_is_link_local_multicast", T.BOOL, [IPT], True,
                                        _fn_ip_is_link_local_multicast)]),
        _decl("isLinkLocalUnicast", [("ip_is_link_local_unicast", T.BOOL, [IPT], True, _fn_ip_is_link_local_unicast)]),
        _decl("isGlobalUnicast", [("ip_is_global_unicast", T.BOOL, [IPT], True, _fn_ip_is_global_unicast)]),
        _decl("cidr", [("string_to_cidr", CIDRT, [T.STRING], False, _fn_cidr)]),
        _decl("isCIDR", [("is_cidr", T.BOOL, [T.STRING], False, _fn_is_cidr)]),
        _decl("containsIP", [("cidr_contains_ip_string", T.BOOL, [CIDRT, T.STRING], True, _fn_cidr_contains_ip),
                             ("cidr_contains_ip_ip", T.BOOL, [CIDRT, IPT], True, _fn_cidr_contains_ip)]),
        _decl("containsCIDR", [("cidr_contains_cidr_string", T.BOOL, [CIDRT, T.STRING], True, _fn_cidr_contains_cidr),
                               ("cidr_contains_cidr", T.BOOL, [CIDRT, CIDRT], True, _fn_cidr_contains_cidr)]),
        _decl("masked", [("cidr_masked", CIDRT, [CIDRT], True, _fn_cidr_masked)]),
        _decl("prefixLength", [("cidr_prefix_length", T.INT, [CIDRT], True, _fn_cidr_prefix_length)]),
    ]
    # URLs (Kubernetes base environment since 1.0)
    URLT = _URLT
    fns += [
        _decl("url", [("string_to_url", URLT, [T.STRING], False, _fn_url)]),
        _decl("isURL", [("is_url_string", T.BOOL, [T.STRING], False, _fn_is_url)]),
        _decl("getScheme", [("url_get_scheme", T.STRING, [URLT], True, _fn_url_scheme)]),
        _decl("getHost", [("url_get_host", T.STRING, [URLT], True, _fn_url_host)]),
        _decl("getHostname", [("url_get_hostname", T.STRING, [URLT], True, _fn_url_hostname)]),
        _decl("getPort", [("url_get_port", T.STRING, [URLT], True, _fn_url_port)]),
        _decl("getEscapedPath", [("url_get_escaped_path", T.STRING, [URLT], True, _fn_url_escaped_path)]),
        _decl("getQuery", [("url_get_query", T.Map(T.STRING, T.List(T.STRING)), [URLT], True, _fn_url_query)]),
    ]
    # format library (Kubernetes 1.31): format.<name>() and, through _rewrite_format,
    # format.named() and <Format>.validate()
    for fname in _FORMAT_NAMES:
        fns.append(_decl(f"format.{fname}", [(f"format.{fname}", _FORMATT, [], False,
                                               (lambda n: (lambda: _FormatMsg(v=n)))(fname))]))
    fns.append(_decl(_FORMAT_KNOWN, [(_FORMAT_KNOWN, T.BOOL, [T.STRING], False, _fn_format_known)]))
    fns.append(_decl(_FORMAT_NAMED, [(_FORMAT_NAMED, _FORMATT, [T.STRING], False, _fn_format_named)]))
    fns.append(_decl(_FORMAT_ERRORS, [(_FORMAT_ERRORS, T.List(T.STRING), [_FORMATT, T.STRING], True,
                                       _fn_format_errors)]))
    fns.append(_decl(_TICK, [(f"{_TICK}_int", T.BOOL, [T.INT], False, _fn_tick)]))
    if loops:
        fns.append(_decl(_LOOP_FN, [(f"{_LOOP_FN}_list", T.DYN, [T.INT, T.LIST, T.MAP], False, _fn_loop),
                                    (f"{_LOOP_FN}_map", T.DYN, [T.INT, T.MAP, T.MAP], False, _fn_loop)]))
    fns.append(_decl(_TO_MAP, [(f"{_TO_MAP}_list", T.Map(T.DYN, T.DYN), [T.LIST], True, _fn_to_map)]))
    fns.append(_decl(_MERGE_MAPS, [(f"{_MERGE_MAPS}_list", T.Map(T.DYN, T.DYN), [T.LIST], True, _fn_merge_maps)]))
    if list_type_attributes:
        # Kubernetes declares one overload dra_includes_dyn_dyn.  cel-cpp never
        # matches dyn parameters at runtime, so enumerate the concrete kinds.
        kinds = [("bool", T.BOOL), ("int", T.INT), ("uint", T.UINT), ("double", T.DOUBLE), ("string", T.STRING),
                 ("bytes", T.BYTES), ("quantity", QT), ("semver", ST)]
        ovs = []
        for an, at in kinds:
            ovs.append((f"dra_includes_list_{an}", T.BOOL, [T.LIST, at], True, _fn_includes_list))
        for tn, tt in kinds:
            for an, at in kinds:
                ovs.append((f"dra_includes_{tn}_{an}", T.BOOL, [tt, at], True, _fn_includes_scalar))
        fns.append(_decl("includes", ovs))
    return fns


# --------------------------------------------------------------------------
# Unknown domain -> empty map: source rewriting

_EMPTY_ATTRS = "__dra_empty_attributes"
_EMPTY_CAP = "__dra_empty_capacity"
_BIND_VAR = "__dra_domain"

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<str>
        (?:[rR][bB]?|[bB][rR])(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|"[^"\n\r]*"|'[^'\n\r]*')
      | [bB]?(?:\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\"|'''(?:\\[\s\S]|[^\\])*?'''|"(?:\\.|[^"\\\n\r])*"|'(?:\\.|[^'\\\n\r])*')
    )
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<other>[\s\S])
    """,
    re.X,
)


def _tokenize(src: str):
    return [(m.lastgroup, m.group()) for m in _TOKEN_RE.finditer(src)]


def _rewrite(src: str) -> str:
    """Rewrite ``device.attributes[K]``/``device.capacity[K]`` lookups so that an
    unknown domain yields an empty map (Kubernetes' mapper with default)."""
    if "device" not in src:
        return src
    toks = _tokenize(src)
    sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]  # indices of significant tokens
    out = []
    pos = 0  # next token index to copy
    j = 0
    changed = False
    while j < len(sig):
        i0 = sig[j]
        if (
            toks[i0] == ("id", "device")
            and j + 3 < len(sig)
            and toks[sig[j + 1]][1] == "."
            and toks[sig[j + 2]][0] == "id"
            and toks[sig[j + 2]][1] in ("attributes", "capacity")
            and toks[sig[j + 3]][1] in ("[", ".")
            and (j == 0 or toks[sig[j - 1]][1] != ".")
        ):
            field = toks[sig[j + 2]][1]
            var = "device." + field
            empty = _EMPTY_ATTRS if field == "attributes" else _EMPTY_CAP
            optional = False
            if toks[sig[j + 3]][1] == "[":
                end = _matching(sig, toks, j + 3, 1)
                if end is None:
                    break  # unbalanced: let the compiler report it
                first = j + 4
                if first < end and toks[sig[first]][1] == "?":  # device.attributes[?K]
                    optional = True
                    first += 1
                if first >= end:
                    j += 1
                    continue
                key_src = "".join(t for _, t in toks[sig[first] : sig[end]])
                key_sig = [toks[sig[x]] for x in range(first, end)]
                literal = key_sig[0][1] if len(key_sig) == 1 and key_sig[0][0] == "str" else None
            else:  # device.attributes.dom / device.attributes.?dom (a domain without dots)
                k = j + 4
                if k < len(sig) and toks[sig[k]][1] == "?":
                    optional = True
                    k += 1
                if k >= len(sig) or toks[sig[k]][0] != "id" or (k + 1 < len(sig) and toks[sig[k + 1]][1] == "("):
                    j += 1
                    continue
                end = k
                literal = '"' + toks[sig[k]][1] + '"'
            out.append("".join(t for _, t in toks[pos:i0]))
            if literal is not None:
                lookup = f"({literal} in {var} ? {var}[{literal}] : {empty})"
            else:
                inner = _rewrite(key_src)
                lookup = f"cel.bind({_BIND_VAR}, ({inner}), {_BIND_VAR} in {var} ? {var}[{_BIND_VAR}] : {empty})"
            # Kubernetes' mapper finds every domain (Find returns the empty map), so an
            # optional lookup always has a value; "in" and iteration see the real domains only
            out.append(f"optional.of({lookup})" if optional else lookup)
            pos = sig[end] + 1
            j = end + 1
            changed = True
            continue
        j += 1
    if not changed:
        return src
    out.append("".join(t for _, t in toks[pos:]))
    return "".join(out)


# --------------------------------------------------------------------------
# Homogeneous aggregate literals (cel.HomogeneousAggregateLiterals, Kubernetes base env)
#
# cel-cpp's checker accepts ``[1, "a"]`` (a list(dyn)); Kubernetes' refuses it.  The
# checked AST (Expression.serialize(): a cel.expr.CheckedExpr in an Any) is decoded with a
# minimal wire-compatible description of the messages needed, and every list literal's
# elements and map literal's keys and values are compared by their checked types.


def _make_ast_classes():
    F = descriptor_pb2.FieldDescriptorProto
    O, R, M = F.LABEL_OPTIONAL, F.LABEL_REPEATED, F.TYPE_MESSAGE
    fdp = descriptor_pb2.FileDescriptorProto(name="draopt_cel_ast.proto", package="draopt_ast", syntax="proto3")

    def msg(name, fields):
        m = fdp.message_type.add(name=name)
        for fname, num, ftype, label, tname in fields:
            f = m.field.add(name=fname, number=num, type=ftype, label=label)
            if tname:
                f.type_name = ".draopt_ast." + tname

    msg("Empty", [])
    msg("Type", [("dyn", 1, M, O, "Empty"), ("null", 2, F.TYPE_INT32, O, None),
                 ("primitive", 3, F.TYPE_INT32, O, None), ("wrapper", 4, F.TYPE_INT32, O, None),
                 ("well_known", 5, F.TYPE_INT32, O, None), ("list_type", 6, M, O, "ListType"),
                 ("map_type", 7, M, O, "MapType"), ("message_type", 9, F.TYPE_STRING, O, None),
                 ("type_param", 10, F.TYPE_STRING, O, None), ("type", 11, M, O, "Type"),
                 ("error", 12, M, O, "Empty"), ("abstract_type", 14, M, O, "AbstractType")])
    msg("ListType", [("elem_type", 1, M, O, "Type")])
    msg("MapType", [("key_type", 1, M, O, "Type"), ("value_type", 2, M, O, "Type")])
    msg("AbstractType", [("name", 1, F.TYPE_STRING, O, None), ("parameter_types", 2, M, R, "Type")])
    msg("Expr", [("id", 2, F.TYPE_INT64, O, None), ("select_expr", 5, M, O, "Select"), ("call_expr", 6, M, O, "Call"),
                 ("list_expr", 7, M, O, "CreateList"), ("struct_expr", 8, M, O, "CreateStruct"),
                 ("comprehension_expr", 9, M, O, "Comprehension")])
    msg("Select", [("operand", 1, M, O, "Expr")])
    msg("Call", [("target", 1, M, O, "Expr"), ("args", 3, M, R, "Expr")])
    msg("CreateList", [("elements", 1, M, R, "Expr")])
    msg("Entry", [("map_key", 3, M, O, "Expr"), ("value", 4, M, O, "Expr")])
    msg("CreateStruct", [("message_name", 1, F.TYPE_STRING, O, None), ("entries", 2, M, R, "Entry")])
    msg("Comprehension", [("iter_range", 2, M, O, "Expr"), ("accu_init", 4, M, O, "Expr"),
                          ("loop_condition", 5, M, O, "Expr"), ("loop_step", 6, M, O, "Expr"),
                          ("result", 7, M, O, "Expr")])
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

    stack = [checked.expr]
    while stack:
        e = stack.pop()
        if e.HasField("list_expr"):
            problem = same(e.list_expr.elements)
            if problem:
                return problem
            stack.extend(e.list_expr.elements)
        elif e.HasField("struct_expr"):
            entries = e.struct_expr.entries
            if not e.struct_expr.message_name:
                problem = same([x.map_key for x in entries]) or same([x.value for x in entries])
                if problem:
                    return problem
            for x in entries:
                stack.extend((x.map_key, x.value))
        elif e.HasField("call_expr"):
            if e.call_expr.HasField("target"):
                stack.append(e.call_expr.target)
            stack.extend(e.call_expr.args)
        elif e.HasField("select_expr"):
            stack.append(e.select_expr.operand)
        elif e.HasField("comprehension_expr"):
            c = e.comprehension_expr
            stack.extend((c.iter_range, c.accu_init, c.loop_condition, c.loop_step, c.result))
    return None


# --------------------------------------------------------------------------
# Cross-type numeric ordering (cel.CrossTypeNumericComparisons, Kubernetes >= 1.28)
#
# cel-cpp's checker has no such option, but its runtime compares numbers of
# different types.  When the checker rejects ``a < b`` for two different
# numeric types, the right operand is wrapped in ``dyn(...)`` and the
# expression compiled again; the comparison then runs on the values.

_NUMERIC_OVERLOAD = re.compile(
    r"<input>:(\d+):(\d+): found no matching overload for '_(<|<=|>|>=)_' applied to "
    r"'\((int|uint|double), (int|uint|double)\)'"
)


def _token_spans(src: str):
    """Tokens with their start offsets: [(kind, text, start)]."""
    return [(m.lastgroup, m.group(), m.start()) for m in _TOKEN_RE.finditer(src)]


def _rewrite_numeric(src: str, message: str) -> Optional[str]:
    m = _NUMERIC_OVERLOAD.search(message)
    if m is None or m.group(4) == m.group(5):
        return None
    line, col = int(m.group(1)), int(m.group(2))
    lines = src.split("\n")
    if line > len(lines):
        return None
    offset = sum(len(x) + 1 for x in lines[: line - 1]) + col - 1
    op = m.group(3)
    if src[offset : offset + len(op)] != op:
        return None
    start = offset + len(op)
    toks = [t for t in _token_spans(src) if t[2] >= start and t[0] != "ws"]
    depth = 0
    first = last = None
    prev = None
    for i, (kind, text, pos) in enumerate(toks):
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        if kind == "other":
            if text in "([{":
                depth += 1
            elif text in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0:
                if text in ",:<>=" or (text == "!" and nxt == "=") or (text == "&" and nxt == "&") \
                        or (text == "|" and nxt == "|") or (text == "?" and prev not in (".", "[")):
                    break
        elif kind == "id" and text == "in" and depth == 0:
            break
        if first is None:
            first = pos
        last = pos + len(text)
        prev = text
    if first is None:
        return None
    return src[:first] + "dyn(" + src[first:last] + ")" + src[last:]


# --------------------------------------------------------------------------
# Runtime cost (Kubernetes' 1,000,000 per-call limit)
#
# cel-cpp does not track cost.  Kubernetes' cost (cel-go's runtime cost
# tracker) is essentially 1 per identifier, field selection and function
# call, 10 per list literal and 30 per map literal, plus, for every
# comprehension iteration, the loop condition and step.  Only comprehensions
# can make a selector expensive, so an expression without one runs untouched;
# in an expression with comprehensions, each macro body is prefixed with a
# call ``__dra_tick(C)`` where C is the static cost of one iteration (the body
# counted as above plus the loop overhead cel-go's expansion of that macro
# costs).  The ticks add up per evaluation; past the limit the evaluation
# fails with Kubernetes' "operation cancelled: actual cost limit exceeded".

_TICK = "__dra_tick"
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


_TO_MAP = "__dra_to_map"
_MERGE_MAPS = "__dra_merge_maps"


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


def _split_args(sig, toks, open_idx):
    """Given the significant-token index of '(' return (close_idx, [arg token-index ranges])."""
    depth = 0
    args = []
    start = open_idx + 1
    k = open_idx
    while k < len(sig):
        kind, t = toks[sig[k]]
        if kind == "other":
            if t in "([{":
                depth += 1
            elif t in ")]}":
                depth -= 1
                if depth == 0:
                    args.append((start, k))
                    return k, args
            elif t == "," and depth == 1:
                args.append((start, k))
                start = k + 1
        k += 1
    return None, None


_RENAMED = {"indexOf": "__dra_indexOf", "lastIndexOf": "__dra_lastIndexOf"}
_RENAMED_BACK = {v: k for k, v in _RENAMED.items()}
_RENAMED_BACK.update({"__dra_format_errors": "validate"})


def _rename_members(src: str) -> str:
    if "ndexOf" not in src:
        return src
    toks = _tokenize(src)
    sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]
    for j, i in enumerate(sig):
        kind, t = toks[i]
        if kind == "id" and t in _RENAMED and j > 0 and toks[sig[j - 1]][1] == "." \
                and j + 1 < len(sig) and toks[sig[j + 1]][1] == "(":
            toks[i] = (kind, _RENAMED[t])
    return "".join(t for _, t in toks)


_FORMAT_KNOWN = "__dra_format_known"
_FORMAT_NAMED = "__dra_format_named"
_FORMAT_ERRORS = "__dra_format_errors"


def _matching(sig, toks, k, step):
    """Index (in sig) of the bracket matching the one at sig index k, scanning by step (+1/-1)."""
    depth = 0
    while 0 <= k < len(sig):
        kind, t = toks[sig[k]]
        if kind == "other":
            if t in "([{":
                depth += step
            elif t in ")]}":
                depth -= step
            if depth == 0:
                return k
        k += step
    return None


def _postfix_start(sig, toks, k):
    """Start (sig index) of the postfix expression ending at sig index k."""
    while True:
        kind, t = toks[sig[k]]
        if kind == "other" and t in ")]}":
            m = _matching(sig, toks, k, -1)
            if m is None:
                return None
            prev = toks[sig[m - 1]] if m > 0 else ("", "")
            if t == ")" and prev[0] == "id":
                k = m - 1
                continue
            if t == "]" and (prev[0] in ("id", "str") or prev[1] in (")", "]", "}")):
                k = m - 1
                continue
            k = m
        if k > 1 and toks[sig[k - 1]][1] == "." and toks[sig[k]][0] == "id":
            k -= 2
            continue
        return k


def _rewrite_format(src: str) -> str:
    """``format.named(n)`` and ``<Format>.validate(s)`` return optionals, which functions
    implemented in Python cannot: they are rewritten around helpers returning plain values."""
    if "named" not in src and "validate" not in src:
        return src
    for _ in range(64):
        toks = _tokenize(src)
        sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]
        done = True
        for j in range(1, len(sig) - 1):
            kind, t = toks[sig[j]]
            if kind != "id" or toks[sig[j - 1]][1] != "." or toks[sig[j + 1]][1] != "(":
                continue
            if t == "named" and j >= 2 and toks[sig[j - 2]][1] == "format" and \
                    (j < 3 or toks[sig[j - 3]][1] != "."):
                close = _matching(sig, toks, j + 1, 1)
                if close is None:
                    return src
                arg = "".join(x for _, x in toks[sig[j + 1] + 1 : sig[close]])
                new = (f"cel.bind(__dra_fn, ({arg}), {_FORMAT_KNOWN}(__dra_fn) ? "
                       f"optional.of({_FORMAT_NAMED}(__dra_fn)) : optional.none())")
                start = sig[j - 2]
            elif t == "validate":
                close = _matching(sig, toks, j + 1, 1)
                rs = _postfix_start(sig, toks, j - 2) if j >= 2 else None
                if close is None or rs is None:
                    return src
                recv = "".join(x for _, x in toks[sig[rs] : sig[j - 1]])
                arg = "".join(x for _, x in toks[sig[j + 1] + 1 : sig[close]])
                new = (f"cel.bind(__dra_fv, ({recv}).{_FORMAT_ERRORS}({arg}), "
                       f"__dra_fv.size() == 0 ? optional.none() : optional.of(__dra_fv))")
                start = sig[rs]
            else:
                continue
            src = "".join(x for _, x in toks[:start]) + new + "".join(x for _, x in toks[sig[close] + 1 :])
            done = False
            break
        if done:
            return src
    return src


_ALWAYS_PRESENT = {"driver", "allowMultipleAllocations", "attributes", "capacity"}
_LITERAL_CHECKS = {"matches": '"".matches({})', "duration": "duration({})", "timestamp": "timestamp({})"}


def _rewrite_has(src: str) -> str:
    """``has(device.driver)`` (and the other device fields) is true, as on Kubernetes'
    device object; here they are variables, for which cel-cpp's has() means something else."""
    if "has" not in src:
        return src
    toks = _tokenize(src)
    sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]
    for j in range(len(sig) - 5):
        if toks[sig[j]][1] != "has":
            continue
        w = [toks[sig[j + x]][1] for x in range(6)]
        if w[0] == "has" and w[1] == "(" and w[2] == "device" and w[3] == "." and w[4] in _ALWAYS_PRESENT \
                and w[5] == ")" and (j == 0 or toks[sig[j - 1]][1] != "."):
            for x in range(6):
                toks[sig[j + x]] = ("ws", "")
            toks[sig[j]] = ("id", "true")
        elif w[0] == "has" and w[1] == "(" and w[2] == "device" and w[3] == "." and w[4] in ("attributes", "capacity") \
                and w[5] == "." and j + 7 < len(sig) and toks[sig[j + 6]][0] == "id" and toks[sig[j + 7]][1] == ")" \
                and (j == 0 or toks[sig[j - 1]][1] != "."):
            # has(device.attributes.dom): Kubernetes' mapper finds every domain (the empty map)
            for x in range(8):
                toks[sig[j + x]] = ("ws", "")
            toks[sig[j]] = ("id", "true")
    return "".join(t for _, t in toks)


def _format_literal_problem(cenv, src: str) -> Optional[str]:
    """cel-go's strings extension checks ``"<literal>".format([...])`` when compiling (its
    format validator): a clause that does not fit its argument is a compile error.  Here the
    call is evaluated at compile time when it uses no variable."""
    toks = [t for t in _tokenize(src) if t[0] != "ws"]
    sig = list(range(len(toks)))
    for j in range(len(toks) - 3):
        if toks[j][0] == "str" and toks[j + 1][1] == "." and toks[j + 2][1] == "format" and toks[j + 3][1] == "(" \
                and (j == 0 or toks[j - 1][1] != "."):
            close = _matching(sig, toks, j + 3, 1)
            if close is None:
                return None
            snippet = "".join(t for _, t in toks[j : close + 1])
            if "device" in snippet:
                continue
            try:
                r = cenv._env.compile(snippet).eval()
            except RuntimeError:
                continue  # uses a variable (an iteration variable...) or does not compile alone
            if r.type() == _ERROR_TYPE:
                return _runtime_message(str(r.value()))
    return None


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
        if toks[j][0] == "id" and name in _LITERAL_CHECKS and toks[j + 1][1] == "(" \
                and toks[j + 2][0] == "str" and toks[j + 3][1] in (")", ","):
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
    total_extra = 0  # cost of the loops, for the static total
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


# --------------------------------------------------------------------------
# Past cel-cpp's iteration budget: comprehensions evaluated from Python
#
# cel-cpp stops an evaluation after 10,000 comprehension iterations; Kubernetes only
# has its cost limit.  When the budget stops an evaluation that the cost limit would
# not, the expression is compiled again with every comprehension replaced by a call
# ``__dra_loop(id, range, {captured variables})``: a Python function that runs the
# macro over the range, evaluating its body (compiled on its own, with the iteration
# and captured variables declared dyn) once per element, with cel-go's semantics for
# errors (all/exists absorb an error when the result is decided by another element),
# and counts the same cost as the ticks.  Each body evaluation has its own budget.

def _base_variables() -> Dict[str, Any]:
    T = _T
    return {
        "device.driver": T.STRING,
        "device.allowMultipleAllocations": T.BOOL,
        "device.attributes": T.Map(T.STRING, T.Map(T.STRING, T.DYN)),
        "device.capacity": T.Map(T.STRING, T.Map(T.STRING, _QT)),
        _EMPTY_ATTRS: T.Map(T.STRING, T.DYN),
        _EMPTY_CAP: T.Map(T.STRING, _QT),
    }


_LOOP_FN = "__dra_loop"
_LOOP_STATE = threading.local()
_LOOP_REGISTRY: list = []  # id -> (macro, variable names, body sources, captured names, env key)
_LOOP_ENVS: Dict[Tuple[Any, ...], Any] = {}
_LOOP_LOCK = threading.Lock()


def _offload(src: str, scope: Tuple[str, ...], env_key) -> str:
    """Replace every comprehension macro (and descend into cel.bind scopes) in src."""
    toks = _tokenize(src)
    sig = [i for i, (k, _) in enumerate(toks) if k != "ws"]
    for j in range(len(sig)):
        kind, t = toks[sig[j]]
        nxt = toks[sig[j + 1]][1] if j + 1 < len(sig) else ""
        prev = toks[sig[j - 1]][1] if j > 0 else ""
        if kind != "id" or nxt != "(":
            continue
        if t == "bind" and prev == "." and j >= 2 and toks[sig[j - 2]][1] == "cel":
            close, args = _split_args(sig, toks, j + 1)
            if close is None or len(args) != 3 or args[0][1] - args[0][0] != 1:
                continue
            texts = ["".join(x for _, x in toks[sig[a] : sig[b]]) for a, b in args]
            name = texts[0].strip()
            new = (f"cel.bind({name}, {_offload(texts[1], scope, env_key)}, "
                   f"{_offload(texts[2], scope + (name,), env_key)})")
            head = "".join(x for _, x in toks[: sig[j - 2]])
            return head + new + _offload("".join(x for _, x in toks[sig[close] + 1 :]), scope, env_key)
        if t not in _LOOP_OVERHEAD or prev != ".":
            continue
        close, args = _split_args(sig, toks, j + 1)
        if close is None:
            continue
        if t in _PREDICATE_MACROS:
            nvars = len(args) - 1 if len(args) in (2, 3) else 0
        elif t == "map":
            nvars = 1 if len(args) in (2, 3) else 0
        else:
            nvars = 2 if len(args) in (3, 4) else 0
        if not nvars or not all(b - a == 1 and toks[sig[a]][0] == "id" for a, b in args[:nvars]):
            continue
        rs = _postfix_start(sig, toks, j - 2) if j >= 2 else None
        if rs is None:
            continue
        texts = ["".join(x for _, x in toks[sig[a] : sig[b]]) for a, b in args]
        names = tuple(x.strip() for x in texts[:nvars])
        receiver = _offload("".join(x for _, x in toks[sig[rs] : sig[j - 1]]), scope, env_key)
        inner_scope = scope + names
        bodies = [_offload(x, inner_scope, env_key) for x in texts[nvars:]]
        per_iter = _LOOP_OVERHEAD[t] + sum(_instrument(x)[1] for x in texts[nvars:])
        with _LOOP_LOCK:
            _LOOP_REGISTRY.append((t, names, bodies, scope, env_key, per_iter))
            loop_id = len(_LOOP_REGISTRY) - 1
        caps = ", ".join(f'"{n}": {n}' for n in dict.fromkeys(scope))
        new = f"{_LOOP_FN}({loop_id}, dyn({receiver}), {{{caps}}})"
        head = "".join(x for _, x in toks[: sig[rs]])
        return _offload(head + new + "".join(x for _, x in toks[sig[close] + 1 :]), scope, env_key)
    return src


def _loop_env(env_key, names: Tuple[str, ...]):
    key = (env_key, tuple(sorted(set(names))))
    env = _LOOP_ENVS.get(key)
    if env is None:
        list_types = env_key
        variables = _base_variables()
        variables.update({n: _T.DYN for n in names})
        env = _cel.NewEnv(_POOL, variables=variables, config=_cel.NewEnvConfigFromYaml(_EXTENSIONS_YAML),
                          extensions=[_ext_bindings.ExtBindings(), _ext_optional.ExtOptional()],
                          functions=_build_functions(list_types, loops=True))
        _LOOP_ENVS[key] = env
    return env


_LOOP_BODIES: Dict[Tuple[int, int], Any] = {}


def _loop_body(loop_id: int, k: int):
    hit = _LOOP_BODIES.get((loop_id, k))
    if hit is None:
        macro, names, bodies, scope, env_key, _ = _LOOP_REGISTRY[loop_id]
        env = _loop_env(env_key, names + scope)
        hit = _LOOP_BODIES[(loop_id, k)] = env.compile(bodies[k], disable_check=False)
    return hit


class _BodyError(Exception):
    pass


def _fn_loop(loop_id, rng, caps):
    macro, names, bodies, scope, env_key, per_iter = _LOOP_REGISTRY[loop_id]
    base = dict(_LOOP_STATE.data)
    base.update(caps)
    st = _COST_STATE
    env = _loop_env(env_key, names + scope)
    items = list(rng.items()) if isinstance(rng, dict) else list(enumerate(rng))
    if isinstance(rng, dict) and len(names) == 1:
        items = [(k, k) for k, _ in items]

    def run(k, i, v):
        data = dict(base)
        if len(names) == 1:
            data[names[0]] = v
        else:
            data[names[0]], data[names[1]] = i, v
        r = _loop_body(loop_id, k).eval(env.Activation(data))
        if r.type() == _ERROR_TYPE:
            raise _BodyError(_runtime_message(str(r.value())))
        return r.plain_value()

    out_list, out_map, count, error = [], {}, 0, None
    for i, v in items:
        st.cost += per_iter
        if st.cost > st.limit:
            raise ValueError(_COST_EXCEEDED)
        try:
            if macro in ("all", "exists"):
                p = run(0, i, v)
                if p is (macro == "exists"):
                    return p
                continue
            if macro in ("exists_one", "existsOne"):
                count += run(0, i, v) is True
                continue
            keep = True
            if macro == "filter" or len(bodies) == 2:
                keep = run(0, i, v) is True
            if not keep:
                continue
            if macro == "filter":
                out_list.append(v)
                continue
            value = run(len(bodies) - 1, i, v)
            if macro in ("map", "transformList"):
                out_list.append(value)
            elif macro == "transformMap":
                out_map[i] = value
            else:  # transformMapEntry
                for mk, mv in value.items():
                    if mk in out_map:
                        raise _BodyError(f"insert failed: key {mk} already exists")
                    out_map[mk] = mv
        except _BodyError as e:
            if macro in ("all", "exists"):
                error = error or str(e)
                continue
            raise ValueError(str(e)) from None
    if macro in ("all", "exists"):
        if error:
            raise ValueError(error)
        return macro == "all"
    if macro in ("exists_one", "existsOne"):
        return count == 1
    return out_map if macro in ("transformMap", "transformMapEntry") else out_list


# --------------------------------------------------------------------------
# Devices

_ERROR_TYPE = _T.ERROR
_BOOL_TYPE = _T.BOOL
_DYN_TYPE = _T.DYN


class CelDevice:
    """A prepared activation for one device (build once, evaluate many times)."""

    __slots__ = ("driver", "name", "data", "error", "_activations", "__weakref__")

    def __init__(self, driver: str, name: str, data: Dict[str, Any], error: Optional[str]):
        self.driver = driver
        self.name = name
        self.data = data
        self.error = error
        self._activations: Dict[Any, Any] = {}

    def _activation(self, env: "CelEnvironment"):
        act = self._activations.get(env)
        if act is None:
            act = env._env.Activation(self.data)
            self._activations[env] = act
        return act

    def __repr__(self):
        return f"CelDevice(driver={self.driver!r}, name={self.name!r})"


def _split_qualified(name: str, driver: str) -> Tuple[str, str]:
    sep = name.find("/")
    if sep == -1:
        return driver, name
    return name[:sep], name[sep + 1 :]


def _attribute_value(attr: Dict[str, Any], list_types: bool):
    """getAttributeValue: list types first (only when enabled), then scalars."""
    if not isinstance(attr, dict):
        raise ValueError("unsupported attribute value")
    if list_types:
        if attr.get("ints") is not None:
            return [int(x) for x in attr["ints"]]
        if attr.get("bools") is not None:
            return [bool(x) for x in attr["bools"]]
        if attr.get("strings") is not None:
            return [str(x) for x in attr["strings"]]
        if attr.get("versions") is not None:
            try:
                return [_s_msg(_semver.Version.parse(v)) for v in attr["versions"]]
            except (ValueError, TypeError) as e:
                raise ValueError(f"parse semantic version: {e}") from None
    if attr.get("int") is not None:
        v = attr["int"]
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"invalid int value {v!r}")
        return v
    if attr.get("bool") is not None:
        return bool(attr["bool"])
    if attr.get("string") is not None:
        return str(attr["string"])
    if attr.get("version") is not None:
        try:
            return _s_msg(_semver.Version.parse(attr["version"]))
        except (ValueError, TypeError) as e:
            raise ValueError(f"parse semantic version: {e}") from None
    raise ValueError("unsupported attribute value")


def make_cel_device(driver: str, device: dict, *, list_type_attributes: bool = False) -> CelDevice:
    """Prepare the CEL input for one ResourceSlice device (plain Kubernetes JSON).

    Problems Kubernetes reports when *evaluating* (an attribute without a
    supported value, an unparsable version or quantity) are stored and raised
    as :class:`CelRuntimeError` by every evaluation on this device.
    """
    error = None
    attributes: Dict[str, Dict[str, Any]] = {}
    for name, attr in (device.get("attributes") or {}).items():
        try:
            # Like Kubernetes' getAttributeValue, list values are read whatever the gate says
            # (with DRAListTypeAttributes off the API server drops them on write; objects that
            # still carry them are evaluated as they are).
            value = _attribute_value(attr, True)
        except ValueError as e:
            error = error or f"attribute {name}: {e}"
            continue
        domain, ident = _split_qualified(name, driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: Dict[str, Dict[str, Any]] = {}
    for name, cap in (device.get("capacity") or {}).items():
        try:
            raw = cap.get("value") if isinstance(cap, dict) else cap
            q = Quantity.parse(raw)
        except (QuantityError, AttributeError) as e:
            error = error or f"capacity {name}: {e}"
            continue
        domain, ident = _split_qualified(name, driver)
        capacity.setdefault(domain, {})[ident] = _q_msg(q)
    data = {
        "device.driver": driver,
        "device.allowMultipleAllocations": bool(device.get("allowMultipleAllocations") or False),
        "device.attributes": attributes,
        "device.capacity": capacity,
        _EMPTY_ATTRS: {},
        _EMPTY_CAP: {},
    }
    return CelDevice(driver, device.get("name", ""), data, error)


# --------------------------------------------------------------------------
# Compilation and evaluation

_KEY_NOT_FOUND = re.compile(r'^(?:NOT_FOUND: )?Key not found in map : "?(.*?)"?$', re.S)
_NO_OVERLOAD = re.compile(r"^(?:[A-Z_]+: )?No matching overloads found : (.*)$", re.S)
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")


def _runtime_message(msg: str) -> str:
    for new, old in _RENAMED_BACK.items():
        msg = msg.replace(new, old)
    m = _KEY_NOT_FOUND.match(msg)
    if m:
        return f"no such key: {m.group(1)}"
    m = _NO_OVERLOAD.match(msg)
    if m:
        return f"no such overload: {m.group(1)}"
    return _STATUS_PREFIX.sub("", msg, count=1)


def _compile_message(msg: str) -> str:
    msg = msg.strip()
    if msg.startswith("INVALID_ARGUMENT: "):
        msg = msg[len("INVALID_ARGUMENT: ") :]
    if msg.endswith("[INVALID_ARGUMENT]"):
        msg = msg[: -len("[INVALID_ARGUMENT]")].rstrip()
    for new, old in _RENAMED_BACK.items():
        msg = msg.replace(new, old)
    return "compilation failed: " + msg


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


class CompiledExpression:
    """A compiled CEL expression bound to its environment."""

    __slots__ = ("expression", "output_type", "_expr", "_cenv", "_loops", "_base_cost", "_static_cost", "_prepared",
                 "_ticked", "_offloaded")

    def __init__(self, expression: str, expr, cenv: "CelEnvironment", output_type: str,
                 loops: bool = False, base_cost: int = 0, static_cost: Optional[int] = None):
        self._static_cost = static_cost
        self._prepared = expression
        self._ticked: Optional[str] = None  # counting source of a bounded loop expression
        self._offloaded = None  # compiled with comprehensions run from Python (past the iteration budget)
        self.expression = expression
        self.output_type = output_type
        self._expr = expr
        self._cenv = cenv
        self._loops = loops
        self._base_cost = base_cost

    def _eval(self, device: CelDevice):
        if device.error is not None:
            raise CelRuntimeError(device.error)
        act = device._activations.get(self._cenv)
        if act is None:
            act = device._activation(self._cenv)
        if not self._loops:
            try:
                return self._expr.eval(act)
            except RuntimeError as e:
                if "Iteration budget exceeded" in str(e):
                    return self._past_iteration_budget(device, act)
                raise CelRuntimeError(_runtime_message(str(e))) from None
        st = _COST_STATE
        st.cost = self._base_cost
        st.limit = self._cenv.cost_limit
        try:
            r = self._expr.eval(act)
        except RuntimeError as e:
            if st.cost > st.limit:
                raise CelRuntimeError(_COST_EXCEEDED) from None
            if "Iteration budget exceeded" in str(e) and self._static_cost is not None \
                    and self._static_cost > st.limit:
                # every receiver's size is in the source: the full evaluation would exceed the limit
                raise CelRuntimeError(_COST_EXCEEDED) from None
            if "Iteration budget exceeded" in str(e):
                return self._past_iteration_budget(device, act)
            raise CelRuntimeError(_runtime_message(str(e))) from None
        if st.cost > st.limit:
            raise CelRuntimeError(_COST_EXCEEDED)
        return r

    def _past_iteration_budget(self, device: CelDevice, act):
        """Evaluate again with the comprehensions run from Python (see _fn_loop)."""
        if self._offloaded is None:
            src = _offload(self._prepared, (), self._cenv._functions_key)
            try:
                self._offloaded = self._cenv._compile_source(src)
            except RuntimeError as e:  # pragma: no cover - the offloaded form should always compile
                raise CelRuntimeError(f"more than {_ITERATION_BUDGET} comprehension iterations and the expression "
                                      f"cannot be evaluated otherwise: {_runtime_message(str(e))}") from None
        st = _COST_STATE
        st.cost = self._base_cost
        st.limit = self._cenv.cost_limit
        _LOOP_STATE.data = device.data
        try:
            r = self._offloaded.eval(act)
        except RuntimeError as e:
            if st.cost > st.limit:
                raise CelRuntimeError(_COST_EXCEEDED) from None
            raise CelRuntimeError(_runtime_message(str(e))) from None
        if st.cost > st.limit:
            raise CelRuntimeError(_COST_EXCEEDED)
        return r

    def estimated_cost(self) -> Optional[int]:
        """Worst-case cost over every device (the API server's estimate, as far as draopt
        can bound the loops: literal lists, ``lists.range(N)``, the device's attribute and
        capacity maps (32 entries) and list attributes (48 values)); None when a loop's
        size cannot be bounded from the expression."""
        if not self._loops and self._ticked is None:
            return self._base_cost
        return _instrument(self._prepared, worst=True)[3]

    def exceeds_estimated_cost_limit(self) -> bool:
        """True when the worst-case estimate passes the cost limit (the API server refuses
        such a selector: "too complex, exceeds cost limit")."""
        est = self.estimated_cost()
        return est is not None and est > self._cenv.cost_limit

    def cost(self, device: CelDevice) -> int:
        """The estimated Kubernetes runtime cost of one evaluation on ``device`` (see
        "Runtime cost"); also when the evaluation fails."""
        if self._ticked is not None:  # bounded loops run uncounted: count with a separate compile
            counting = CompiledExpression(self.expression, self._cenv._compile_source(self._ticked), self._cenv,
                                          self.output_type, True, self._base_cost, self._static_cost)
            return counting.cost(device)
        if not self._loops:
            return self._base_cost
        try:
            self._eval(device)
        except CelRuntimeError:
            pass
        return _COST_STATE.cost

    def matches(self, device: CelDevice) -> bool:
        """Evaluate as a selector; the result must be a bool."""
        r = self._eval(device)
        v = r.value()
        if v is True or v is False:
            return v
        t = r.type()
        if t == _ERROR_TYPE:
            raise CelRuntimeError(_runtime_message(str(v)))
        raise CelRuntimeError(
            f"CEL result of type {t.name().lower()} could not be converted to bool: must evaluate to bool"
        )

    def evaluate(self, device: CelDevice):
        """Evaluate to a Python value (bool/int/float/str/bytes/None/
        semver.Version/Quantity/list/dict)."""
        r = self._eval(device)
        try:
            if r.type() == _ERROR_TYPE:
                raise CelRuntimeError(_runtime_message(str(r.value())))
            return _to_python(r.plain_value())
        except TypeError:  # the binding cannot convert some values (optionals) to Python
            raise CelRuntimeError(f"a result of type {r.type().name()} cannot be returned to Python") from None

    def __repr__(self):
        return f"CompiledExpression({self.expression!r})"


class CelEnvironment:
    """The Kubernetes DRA selector environment."""

    def __init__(self, *, list_type_attributes: bool = False, cost_limit: int = 1_000_000,
                 new_expressions: bool = False):
        """``new_expressions``: the environment the API server validates new objects with.
        Otherwise the allocator's (Kubernetes' StoredExpressions), where ``includes`` exists
        whatever DRAListTypeAttributes says (its versioned option ignores the gate there)."""
        self.list_type_attributes = list_type_attributes
        self.new_expressions = new_expressions
        self.cost_limit = cost_limit  # Kubernetes' runtime cost limit (see "Runtime cost")
        self._functions_key = list_type_attributes or not new_expressions
        self._env = _cel.NewEnv(
            _POOL,
            variables=_base_variables(),
            config=_cel.NewEnvConfigFromYaml(_EXTENSIONS_YAML),
            extensions=[
                _ext_bindings.ExtBindings(),
                _ext_optional.ExtOptional(),
            ],
            functions=_build_functions(self._functions_key),
        )
        self._cache: Dict[Tuple[str, bool], Any] = {}
        self._lock = threading.Lock()

    def compile(self, expression: str, *, selector: bool = True) -> CompiledExpression:
        """Compile (cached per expression string).

        With ``selector=True`` (the default, Kubernetes' rule for
        ``spec.selectors[].cel.expression``) the static result type must be
        bool or dyn; ``selector=False`` allows any result type (for
        :meth:`CompiledExpression.evaluate`).
        """
        key = (expression, selector)
        hit = self._cache.get(key)
        if hit is not None:
            if isinstance(hit, CelCompileError):
                raise CelCompileError(str(hit))
            return hit
        try:
            result = self._compile(expression, selector)
        except CelCompileError as e:
            with self._lock:
                self._cache[key] = e
            raise
        with self._lock:
            result = self._cache.setdefault(key, result)
        return result

    def _compile(self, expression: str, selector: bool) -> CompiledExpression:
        if not isinstance(expression, str):
            raise CelCompileError(f"compilation failed: expression must be a string, got {type(expression).__name__}")
        # The rewritten form (unknown domains as empty maps) is what runs; compiling it alone
        # saves a compile. Errors are reported for the expression as written.
        problem = _literal_problem(self, expression)
        if problem:
            raise CelCompileError(f"compilation failed: {problem}")
        prepared = _rename_members(_rewrite(_rewrite_format(_rewrite_has(expression))))
        rewritten, base_cost, loops, static_cost = _instrument(prepared)
        ticked = None
        if loops:
            worst_cost = _instrument(prepared, worst=True, ticks=False)[3]
            if worst_cost is not None and worst_cost <= self.cost_limit:
                # every loop is bounded and even the worst case stays under the limit: no need
                # to count at runtime (a tick is a Python call per iteration); the counting
                # version is compiled only if cost() asks
                ticked = rewritten
                rewritten = _instrument(prepared, ticks=False)[0]
                loops = False
        try:
            expr = self._compile_source(rewritten)
        except RuntimeError as error:
            if rewritten == expression:
                raise CelCompileError(_compile_message(str(error))) from None
            try:
                self._env.compile(expression)
            except RuntimeError as original:
                if _rewrite_numeric(expression, str(original)) is None:
                    raise CelCompileError(_compile_message(str(original))) from None
            raise CelCompileError(_compile_message(str(error))) from None
        problem = _aggregate_literal_problem(expr)
        if problem:
            raise CelCompileError(f"compilation failed: {problem}")
        rtype = expr.return_type()
        type_name = rtype.name()
        if selector and not (rtype == _BOOL_TYPE or rtype == _DYN_TYPE):
            shown = type_name.lower() if rtype.name().isupper() else type_name
            raise CelCompileError(f"must evaluate to bool or the unknown type, not {shown}")
        compiled = CompiledExpression(expression, expr, self, type_name, loops, base_cost, static_cost)
        compiled._prepared = prepared
        compiled._ticked = ticked
        return compiled

    def _compile_source(self, src: str):
        """Compile rewritten source; a mixed-type numeric ordering the checker refuses is
        retried with its right operand as dyn (see _rewrite_numeric).  Raises RuntimeError."""
        for _ in range(32):
            try:
                return self._env.compile(src)
            except RuntimeError as e:
                fixed = _rewrite_numeric(src, str(e))
                if fixed is None:
                    raise
                src = fixed
        raise RuntimeError("too many mixed-type numeric comparisons")
