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
  in cel-go; literals inside a ``format()`` call are exempt, as cel-go's format
  validator makes them.
* A map literal with a repeated key keeps its last entry, as cel-go's evalMap
  does (cel-cpp fails with "duplicate key in map"): repeated constant keys are
  dropped from the source, keys known only at runtime go through a helper
  (draopt.cel.rewrite._rewrite_map_literals).
* ``"...".format([...])`` is cel-go's formatter of the strings extension v2
  (draopt.cel.formatting; cel-cpp's differs), its validator's checks on a literal
  format string with a literal list are compile errors.
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
  every comprehension run from Python (draopt.cel.loops: the body compiled on its
  own and evaluated per element, errors absorbed as cel-go's all/exists do,
  cost counted as in draopt.cel.cost): 20,000 iterations take about 0.1 s.  ``sortBy``
  keeps cel-cpp's loop.

Runtime cost
------------
Kubernetes' cost limit (1,000,000 per evaluation) and the API server's worst-case estimate,
which cel-cpp does not count, are modelled in draopt.cel.cost.

Not reproduced
--------------
* Attribute values are typed ``dyn`` in both modes; Kubernetes types them
  ``any`` without DRAListTypeAttributes, which can move a few type errors
  from compile time to runtime here.
* ``string(ip)`` / ``string(cidr)`` conversions (cel-cpp cannot add overloads to ``string``),
  the type names ``net.IP``/``net.CIDR``/``net.URL`` (here ``kubernetes.IP``...),
  URL parsing beyond what ``url()`` checks here (an absolute URI or path, no
  space or bad port in the host: a subset of Go's url.ParseRequestURI), and
  cel-go's compile-time ``format()`` type checks of list elements whose types
  the checker knows but whose values need a variable (``"%d".format([x.size() * 1.5])``:
  a runtime error here, a compile error there).

Modules
-------
One module per library, as in Kubernetes' staging/src/k8s.io/apiserver/pkg/cel/library/:
``quantity``, ``semverlib``, ``lists``, ``sets`` (cel-go's ext.Sets), ``strings`` (the string
``indexOf``/``lastIndexOf``), ``regex``, ``ip`` (IP and CIDR), ``urls``, ``format`` and
``includes`` (DRA's).  Around them: ``values`` (the custom types as protobuf messages, values to
and from Python), ``internal`` (the names the rewritten source calls), ``errors``, ``functions``
(the function table and the cel-cpp environment), ``rewrite`` (source rewriting), ``literals``
(compile-time checks), ``cost`` (the cost model), ``device`` (make_cel_device), ``simple`` (the
selector shapes drivers write most, answered from a device's fields without CEL and compiled only
when CEL is needed), ``loops`` (comprehensions past cel-cpp's iteration budget) and ``core``
(CelEnvironment, CompiledExpression).

Layers
------
draopt.cel sits just after the Kubernetes objects layer: of draopt it imports draopt.kube.quantity and
the name formats of draopt.kube.names (the format library checks them), nothing else.
``draopt validate`` compiles selectors, so draopt.validation.expressions imports draopt.cel (and
draopt.validation.documents / .command, above it, reach CEL through it); the rules per object
kind in draopt.validation import no CEL, and draopt.validation's ``__init__`` imports nothing, so
importing draopt.kube.names loads no CEL.  Inside this package, imports run: internal ->
values, errors -> the libraries, rewrite -> cost, literals -> functions, device -> simple, loops ->
core -> this module.  tests/test_import_layers.py checks all of it (lazy imports included).
"""

from __future__ import annotations

from draopt.cel.core import CompiledExpression, CelEnvironment
from draopt.cel.device import CelDevice, make_cel_device
from draopt.cel.errors import CelCompileError, CelError, CelRuntimeError

__all__ = [
    "CelError",
    "CelCompileError",
    "CelRuntimeError",
    "CelDevice",
    "CompiledExpression",
    "CelEnvironment",
    "make_cel_device",
]
