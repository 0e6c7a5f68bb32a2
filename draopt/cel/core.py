"""Compiling and evaluating: CelEnvironment and CompiledExpression.

Compiling runs the checks cel-cpp lacks (draopt.cel.literals), rewrites the source
(draopt.cel.rewrite), adds the cost counter to comprehensions not bounded under the limit
(draopt.cel.cost) and compiles with cel-cpp.  Evaluating turns cel-cpp's ERROR values into
CelRuntimeError with Kubernetes' messages, stops at Kubernetes' cost limit and, past cel-cpp's
iteration budget, evaluates the comprehensions from Python (draopt.cel.loops).
"""

from __future__ import annotations

import re
import string
import threading
from typing import Any, Dict, Optional, Tuple

from draopt.cel.cost import _COST_EXCEEDED, _COST_STATE, _LOOP_OVERHEAD, _instrument
from draopt.cel.device import CelDevice, _base_variables
from draopt.cel.errors import CelCompileError, CelRuntimeError, _compile_message, _runtime_message
from draopt.cel.functions import new_env
from draopt.cel.literals import _aggregate_literal_problem, _literal_problem
from draopt.cel.loops import _LOOP_STATE, _fn_loop, _offload
from draopt.cel.simple import simple_selector
from draopt.cel.rewrite import (
    _rename_members,
    _rewrite,
    guarded_domains,
    _rewrite_format,
    _rewrite_has,
    _rewrite_map_literals,
    _rewrite_numeric,
)
from draopt.cel.values import _BOOL_TYPE, _DYN_TYPE, _ERROR_TYPE, _to_python


# Any name of a comprehension macro, anywhere in the source (in a string or an identifier too: a
# source without one has no comprehension for draopt.cel.cost to instrument)
_LOOP_NAMES = re.compile("|".join(sorted(map(re.escape, _LOOP_OVERHEAD), key=len, reverse=True)))

# cel-cpp's default RuntimeOptions.comprehension_max_iterations (not configurable in the binding)
_ITERATION_BUDGET = 10_000


class CompiledExpression:
    """A compiled CEL expression bound to its environment."""

    __slots__ = (
        "expression",
        "output_type",
        "_expr",
        "_cenv",
        "_loops",
        "_base_cost",
        "_static_cost",
        "_prepared",
        "_ticked",
        "_offloaded",
        "_domains",
        "_guarded",
    )

    def __init__(
        self,
        expression: str,
        expr,
        cenv: "CelEnvironment",
        output_type: str,
        loops: bool = False,
        base_cost: Optional[int] = 0,
        static_cost: Optional[int] = None,
    ):
        # base_cost None: not worked out yet (an expression without a loop: _cost_outside_loops)
        self._static_cost = static_cost
        self._prepared = expression
        self._ticked: Optional[str] = None  # counting source of a bounded loop expression
        self._offloaded: Any = None  # compiled with comprehensions run from Python (past the iteration budget)
        # Compiled without the unknown-domain guards (draopt.cel.rewrite.guarded_domains): the
        # domains of device.attributes and of device.capacity the lookups name (None: the
        # program is the guarded one), and the guarded source, compiled when a device lacks one
        self._domains: Optional[Tuple[Tuple[str, ...], Tuple[str, ...]]] = None
        self._guarded: Any = None
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
            expr = self._expr
            if self._domains is not None and not _has_domains(device.data, self._domains):
                expr = self._guarded_program()
            try:
                return expr.eval(act)
            except RuntimeError as e:
                if "Iteration budget exceeded" in str(e):
                    return self._past_iteration_budget(device, act)
                raise CelRuntimeError(_runtime_message(str(e), self.expression)) from None
        st = _COST_STATE
        st.cost = self._base_cost
        st.limit = self._cenv.cost_limit
        try:
            r = self._expr.eval(act)
        except RuntimeError as e:
            if st.cost > st.limit:
                raise CelRuntimeError(_COST_EXCEEDED) from None
            if "Iteration budget exceeded" in str(e) and self._static_cost is not None and self._static_cost > st.limit:
                # every receiver's size is in the source: the full evaluation would exceed the limit
                raise CelRuntimeError(_COST_EXCEEDED) from None
            if "Iteration budget exceeded" in str(e):
                return self._past_iteration_budget(device, act)
            raise CelRuntimeError(_runtime_message(str(e), self.expression)) from None
        if st.cost > st.limit:
            raise CelRuntimeError(_COST_EXCEEDED)
        return r

    def _guarded_program(self):
        """The program with the unknown-domain guards, for a device without a domain the
        lookups name (compiled on first use; the same source compiled on every path)."""
        guarded = self._guarded
        if isinstance(guarded, str):
            guarded = self._guarded = self._cenv._compile_source(guarded)
        return guarded

    def _past_iteration_budget(self, device: CelDevice, act):
        """Evaluate again with the comprehensions run from Python (see _fn_loop)."""
        if self._offloaded is None:
            src = _offload(self._prepared, (), self._cenv._functions_key)
            try:
                self._offloaded = self._cenv._compile_source(src)
            except RuntimeError as e:  # pragma: no cover - the offloaded form should always compile
                raise CelRuntimeError(
                    f"more than {_ITERATION_BUDGET} comprehension iterations and the expression "
                    f"cannot be evaluated otherwise: {_runtime_message(str(e))}"
                ) from None
        st = _COST_STATE
        st.cost = self._cost_outside_loops()
        st.limit = self._cenv.cost_limit
        _LOOP_STATE.data = device.data
        try:
            r = self._offloaded.eval(act)
        except RuntimeError as e:
            if st.cost > st.limit:
                raise CelRuntimeError(_COST_EXCEEDED) from None
            raise CelRuntimeError(_runtime_message(str(e), self.expression)) from None
        if st.cost > st.limit:
            raise CelRuntimeError(_COST_EXCEEDED)
        return r

    def _cost_outside_loops(self) -> int:
        """The static cost outside loop bodies (draopt.cel.cost), worked out on first use for
        an expression compiled without one (most selectors: nothing reads it on the way to an
        answer)."""
        if self._base_cost is None:
            self._base_cost = _instrument(self._prepared)[1]
        return self._base_cost

    def estimated_cost(self) -> Optional[int]:
        """Worst-case cost over every device (the API server's estimate, as far as draopt
        can bound the loops: literal lists, ``lists.range(N)``, the device's attribute and
        capacity maps (32 entries) and list attributes (48 values)); None when a loop's
        size cannot be bounded from the expression."""
        if not self._loops and self._ticked is None:
            return self._cost_outside_loops()
        return _instrument(self._prepared, worst=True)[3]

    def exceeds_estimated_cost_limit(self) -> bool:
        """True when the worst-case estimate passes the cost limit (the API server refuses
        such a selector: "too complex, exceeds cost limit")."""
        est = self.estimated_cost()
        return est is not None and est > self._cenv.cost_limit

    def cost(self, device: CelDevice) -> int:
        """The estimated Kubernetes runtime cost of one evaluation on ``device`` (see
        draopt.cel.cost); also when the evaluation fails."""
        if self._ticked is not None:  # bounded loops run uncounted: count with a separate compile
            counting = CompiledExpression(
                self.expression,
                self._cenv._compile_source(self._ticked),
                self._cenv,
                self.output_type,
                True,
                self._cost_outside_loops(),
                self._static_cost,
            )
            return counting.cost(device)
        if not self._loops:
            return self._cost_outside_loops()
        try:
            self._eval(device)
        except CelRuntimeError:
            pass
        return _COST_STATE.cost

    def matches(self, device: CelDevice) -> bool:
        """Evaluate as a selector; the result must be a bool. Answers are kept on the device
        (CelDevice.matched); errors are raised again on each call."""
        known = device.matched.get(self)
        if known is not None:
            return known
        r = self._eval(device)
        v = r.value()
        if v is True or v is False:
            device.matched[self] = v
            return v
        t = r.type()
        if t == _ERROR_TYPE:
            raise CelRuntimeError(_runtime_message(str(v), self.expression))
        raise CelRuntimeError(
            f"CEL result of type {t.name().lower()} could not be converted to bool: must evaluate to bool"
        )

    def evaluate(self, device: CelDevice):
        """Evaluate to a Python value (bool/int/float/str/bytes/None/
        semver.Version/Quantity/list/dict)."""
        r = self._eval(device)
        try:
            if r.type() == _ERROR_TYPE:
                raise CelRuntimeError(_runtime_message(str(r.value()), self.expression))
            return _to_python(r.plain_value())
        except TypeError:  # the binding cannot convert some values (optionals) to Python
            raise CelRuntimeError(f"a result of type {r.type().name()} cannot be returned to Python") from None

    def __repr__(self):
        return f"CompiledExpression({self.expression!r})"


def _has_domains(data: Dict[str, Any], domains: Tuple[Tuple[str, ...], Tuple[str, ...]]) -> bool:
    """The device's CEL input (CelDevice.data) has every domain named: (attributes, capacity)."""
    attributes, capacity = data["device.attributes"], data["device.capacity"]
    for d in domains[0]:
        if d not in attributes:
            return False
    for d in domains[1]:
        if d not in capacity:
            return False
    return True


class _SimpleComparison(CompiledExpression):
    """A selector of draopt.cel.simple's shape (``device.driver == "<name>"``, an attribute
    compared with a literal, joined by ``&&``): it always compiles, to a bool, so cel-cpp
    compiles it when CEL is first needed (the allocator answers it on most devices without CEL:
    draopt.dra.problem), not when it is compiled (a compile was a quarter of a first
    allocation's instructions)."""

    __slots__ = ()

    def __init__(self, expression: str, cenv: "CelEnvironment"):
        super().__init__(expression, None, cenv, "BOOL", base_cost=None)

    def _compiled(self) -> None:
        """Compile now (once): the program and what the compile works out, as compile() gives it."""
        if self._expr is None:
            full = self._cenv._compile_now(self.expression, True)
            for name in _COMPILED_SLOTS:
                setattr(self, name, getattr(full, name))

    def _eval(self, device: CelDevice):
        self._compiled()
        return CompiledExpression._eval(self, device)

    def _cost_outside_loops(self) -> int:
        self._costed()
        return CompiledExpression._cost_outside_loops(self)

    def estimated_cost(self) -> Optional[int]:
        self._costed()
        return CompiledExpression.estimated_cost(self)

    def _costed(self) -> None:
        """Ready to cost: a driver comparison is costed as written (it is its own prepared
        source), other shapes on the source the compile prepares."""
        selector = simple_selector(self.expression)
        if selector is None or not selector.driver_only:
            self._compiled()

    def cost(self, device: CelDevice) -> int:
        self._compiled()
        return CompiledExpression.cost(self, device)


# What a compile works out besides the expression and its type (_SimpleComparison copies them)
_COMPILED_SLOTS = tuple(s for s in CompiledExpression.__slots__ if s not in ("expression", "output_type", "_cenv"))


# What prime() compiles and evaluates: the parts of the library selectors use most (the
# driver, an attribute's presence and value, a quantity and a semver comparison, a list
# macro, a map literal).
_PRIMER = (
    'device.driver == "prime.draopt.invalid" && "a" in device.attributes["prime.draopt.invalid"]'
    ' && device.attributes["prime.draopt.invalid"].a == 1'
    ' && device.capacity["prime.draopt.invalid"].c.compareTo(quantity("1Gi")) >= 0'
    ' && device.attributes["prime.draopt.invalid"].v.isGreaterThan(semver("1.0.0"))'
    ' && [1, 2].all(x, x > 0) && {"k": 1}["k"] == 1'
)

# What prime() parses besides: every ASCII letter, digit and printable character where a selector
# has them (identifiers beginning with each letter, a string literal, numbers, each operator). The
# parser's lexer works out its moves per character on first sight and keeps them for the process:
# the first compiles paid for them (about 3 % of a first allocation's instructions).
_LEXER_PRIMER = (
    'device.attributes["'
    + "".join(c for c in string.printable if c not in '"\\\n\r\x0b\x0c')
    + '"].x == 1 || !(2 < 3.5) && -4 <= 5u && 6 > 7 && 8 >= 9 && 1 != 2 ? ['
    + ", ".join(c + string.ascii_letters + string.digits + "_" for c in string.ascii_letters + "_")
    + '] : [1, 2][0] % 3 * 4 / 5 - 6 in {"a": b"x", r"y": 0x1F} && true && false && null == null'
)


class CelEnvironment:
    """The Kubernetes DRA selector environment."""

    def __init__(
        self, *, list_type_attributes: bool = False, cost_limit: int = 1_000_000, new_expressions: bool = False
    ):
        """``new_expressions``: the environment the API server validates new objects with.
        Otherwise the allocator's (Kubernetes' StoredExpressions), where ``includes`` exists
        whatever DRAListTypeAttributes says (its versioned option ignores the gate there)."""
        self.list_type_attributes = list_type_attributes
        self.new_expressions = new_expressions
        self.cost_limit = cost_limit  # Kubernetes' runtime cost limit (see draopt.cel.cost)
        self._functions_key = list_type_attributes or not new_expressions
        self._env = new_env(_base_variables(), self._functions_key, _fn_loop)
        self._cache: Dict[Tuple[str, bool], Any] = {}
        self._lock = threading.Lock()

    def prime(self) -> None:
        """Pay the library's first-use costs now, at set-up (cel-cpp builds its checker on an
        environment's first compile, protobuf its message classes on first use, and the
        extension functions have first calls too: several ms, on whatever expression came
        first): one built-in expression compiled and evaluated on one built-in device.
        Nothing is cached: the cache stays as it was."""
        from draopt.cel.device import make_cel_device

        compiled = self._compile(_PRIMER, True)
        device = make_cel_device(
            "prime.draopt.invalid",
            {
                "name": "d",
                "attributes": {"a": {"int": 1}, "v": {"version": "1.1.0"}},
                "capacity": {"c": {"value": "2Gi"}},
            },
            list_type_attributes=self.list_type_attributes,
        )
        compiled.matches(device)
        try:
            self._env.compile(_LEXER_PRIMER)
        except RuntimeError:
            pass  # (it does not type-check: its parse is what is wanted)

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
        if simple_selector(expression) is not None:
            return _SimpleComparison(expression, self)
        return self._compile_now(expression, selector)

    def _compile_now(self, expression: str, selector: bool) -> CompiledExpression:
        # The rewritten form (unknown domains as empty maps) is what runs; compiling it alone
        # saves a compile. Errors are reported for the expression as written.
        problem = _literal_problem(self, expression)
        if problem:
            raise CelCompileError(f"compilation failed: {problem}")
        unguarded = _rewrite_format(_rewrite_has(expression))
        guards: list = []
        prepared = _rename_members(_rewrite(unguarded, guards))
        ticked = None
        domains = None
        if _LOOP_NAMES.search(prepared) is None:
            # No comprehension: the source runs as it is, uncounted (its cost, read by cost() and
            # estimated_cost() alone, is worked out when they ask: _cost_outside_loops)
            rewritten, base_cost, loops, static_cost = prepared, None, False, None
            domains = guarded_domains(guards)
        else:
            rewritten, base_cost, loops, static_cost = _instrument(prepared)
        if loops:
            worst_cost = _instrument(prepared, worst=True, ticks=False)[3]
            if worst_cost is not None and worst_cost <= self.cost_limit:
                # every loop is bounded and even the worst case stays under the limit: no need
                # to count at runtime (a tick is a Python call per iteration); the counting
                # version is compiled only if cost() asks
                ticked = rewritten
                rewritten = _instrument(prepared, ticks=False)[0]
                loops = False
        expr = None
        if domains is not None:
            # Without the unknown-domain guards (half the source: a compile costs about its
            # length), run on the devices that have every domain named; the guarded program
            # is compiled if a device lacks one (CompiledExpression._eval), or here if this
            # fails, for its errors
            try:
                expr = self._compile_source(_rename_members(unguarded))
            except RuntimeError:
                domains = None
        try:
            if expr is None:
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
        # (a literal list or map whose elements, keys or values differ in type has two of them,
        # so a comma: without one there is nothing to check)
        problem = _aggregate_literal_problem(expr) if "," in rewritten else None
        if not problem and _rewrite_map_literals(rewritten) != rewritten:
            # the map literals as written: their keys and values must be homogeneous too
            problem = _aggregate_literal_problem(self._compile_source(rewritten, maps_as_written=True))
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
        if domains is not None:
            compiled._domains = domains
            compiled._guarded = rewritten
        return compiled

    def _compile_source(self, src: str, maps_as_written: bool = False):
        """Compile rewritten source; a mixed-type numeric ordering the checker refuses is
        retried with its right operand as dyn (see _rewrite_numeric); map literals with a
        repeated key as cel-go builds them (see _rewrite_map_literals) unless
        ``maps_as_written``.  Raises RuntimeError."""
        if not maps_as_written:
            src = _rewrite_map_literals(src)
        for _ in range(32):
            try:
                return self._env.compile(src)
            except RuntimeError as e:
                fixed = _rewrite_numeric(src, str(e))
                if fixed is None:
                    raise
                src = fixed
        raise RuntimeError("too many mixed-type numeric comparisons")
