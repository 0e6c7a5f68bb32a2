"""CEL expression fields (selectors, derived attributes), compiled as the API server compiles new
objects' expressions.  The one module of the rules that imports draopt.cel.
"""

from __future__ import annotations

from draopt.cel import CelCompileError, CelEnvironment
from draopt.kube.features import Features
from draopt.validation.context import _Ctx


class Expressions:
    """An ExpressionCheck (draopt.validation.context) on one CEL environment."""

    def __init__(self, features: Features):
        self.cel = CelEnvironment(list_type_attributes=features.list_type_attributes, new_expressions=True)

    def check(self, ctx: _Ctx, expr: str, path: str, selector: bool) -> None:
        """Compile; report a compile error, a worst-case cost over the limit and, for a derived
        attribute (``selector=False``), a result type attributes cannot hold."""
        try:
            compiled = self.cel.compile(expr, selector=selector)
        except CelCompileError as e:
            ctx.invalid(path, expr, str(e))
            return
        if compiled.exceeds_estimated_cost_limit():  # the API server's worst-case estimate (see draopt.cel.cost)
            ctx.forbidden(path, "too complex, exceeds cost limit")
        if not selector:
            t = compiled.output_type.upper()
            if t.startswith("MAP") or t in ("NULL_TYPE", "DOUBLE", "BYTES", "UINT", "DURATION", "TIMESTAMP"):
                allowed = "string, int, bool or semver" + (
                    ", or a list of these" if ctx.features.list_type_attributes else ""
                )
                ctx.invalid(path, expr, f"must evaluate to {allowed}, not {compiled.output_type.lower()}")
            elif t.startswith("LIST") and not ctx.features.list_type_attributes:
                ctx.invalid(
                    path,
                    expr,
                    "must evaluate to a scalar (string, int, bool or semver); lists "
                    "need the DRAListTypeAttributes feature gate",
                )
