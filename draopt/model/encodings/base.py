"""What the encodings share: literals derived from variables, bounds, exact integer scaling."""

from __future__ import annotations

from fractions import Fraction
from math import gcd
from typing import Any


class LiteralHelpers:
    """Literals derived from variables, for the model (`draopt.model.placement.PlacementModel`);
    needs `cp` and `_positive`."""

    cp: Any  # the CP-SAT model
    _positive: dict[int, Any]  # variable index -> its positive literal

    def positive(self, var):
        """A literal true iff `var` > 0 (the variable itself when it is a boolean)."""
        if upper_bound(var) <= 1:
            return var
        hit = self._positive.get(var.index)
        if hit is None:
            hit = self._positive[var.index] = self.any_of([var], f"pos[{var.name}]")
        return hit

    def any_of(self, xs: list, name: str):
        """A new boolean true iff some variable of `xs` is positive."""
        lit = self.cp.new_bool_var(name)
        if all(upper_bound(v) <= 1 for v in xs):
            self.cp.add_max_equality(lit, xs)
        else:
            self.cp.add(sum(xs) >= lit)
            for v in xs:
                self.cp.add(v <= upper_bound(v) * lit)
        return lit


def upper_bound(var) -> int:
    """The largest value of a CP-SAT variable (a plain int is its own bound)."""
    if isinstance(var, int):
        return var
    domain = var.proto.domain
    return domain[len(domain) - 1]  # the proto's repeated field has no negative indexing


def scale_to_int(values: list[Fraction]) -> tuple[list[int], Fraction]:
    """Exact integers proportional to `values` (common denominator, then common divisor)."""
    den = 1
    for v in values:
        den = den * v.denominator // gcd(den, v.denominator)
    ints = [int(v * den) for v in values]
    g = 0
    for i in ints:
        g = gcd(g, abs(i))
    g = g or 1
    return [i // g for i in ints], Fraction(g, den)
