"""The reduced problem the encodings share: candidate pairs and their variables."""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import gcd
from typing import Any

from ortools.sat.python import cp_model

from draopt.dra.inventory import DeviceEntry
from draopt.dra.problem import Problem, RequestSpec
from draopt.kube.quantity import Quantity


class LiteralHelpers:
    """Literals derived from variables, shared by the per-node model (`ModelData`) and the
    cluster model (`draopt.model.placement.PlacementModel`); needs `cp` and `_positive`."""

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


@dataclass
class ModelData(LiteralHelpers):
    """What `apply` builds and `invert` needs (cvxpy-style reduction data)."""
    problem: Problem
    cp: cp_model.CpModel
    kubernetes_quirks: bool                       # reproduce kube-scheduler behaviour that is static
    specs: list[RequestSpec] = field(default_factory=list)             # every (sub-)request
    select: dict[tuple[int, int, int], Any] = field(default_factory=dict)  # spec key -> selector bool (None: plain request)
    x: dict[tuple[tuple[int, int, int], int], Any] = field(default_factory=dict)  # (spec key, dev idx) -> bool
    by_spec: dict[tuple[int, int, int], list[DeviceEntry]] = field(default_factory=dict)
    by_device: dict[int, list[RequestSpec]] = field(default_factory=dict)
    consumed: dict[tuple[tuple[int, int, int], int], dict[str, Quantity]] = field(default_factory=dict)
    used: dict[int, Any] = field(default_factory=dict)   # device idx -> "chosen by any request"
    infeasible_reasons: list[str] = field(default_factory=list)
    n_constraints: int = 0
    explain: bool = False                          # guard requirements with assumption literals
    guards: dict[str, Any] = field(default_factory=dict)   # requirement text -> literal
    _positive: dict[int, Any] = field(default_factory=dict)

    def pairs(self):
        for spec in self.specs:
            for dev in self.by_spec[spec.key]:
                yield spec, dev, self.x[(spec.key, dev.index)]

    def device_used(self, dev: DeviceEntry):
        """A boolean true iff any request picks the device (created once)."""
        var = self.used.get(dev.index)
        if var is None:
            xs = [self.x[(s.key, dev.index)] for s in self.by_device.get(dev.index, [])]
            var = self.cp.new_bool_var(f"used[{dev.index}]")
            self.cp.add_max_equality(var, xs) if xs else self.cp.add(var == 0)
            self.used[dev.index] = var
        return var

    def counter_consumers(self) -> list[list[DeviceEntry]]:
        """Candidate devices that draw on counters, grouped by pool (search order kept)."""
        by_pool: dict[int, list[DeviceEntry]] = {}
        for dev in self.problem.devices:
            if dev.device.consumes_counters and self.by_device.get(dev.index):
                by_pool.setdefault(id(dev.pool), []).append(dev)
        return list(by_pool.values())

    def counter_value(self, value: str):
        return self.problem.counter_value(value)

    def add(self, ct, requirement: str | None = None):
        """Count a constraint; in explain mode, a named requirement is enforced only under its
        guard literal so that an infeasible model yields the requirements that clash."""
        self.n_constraints += 1
        if self.explain and requirement is not None:
            guard = self.guards.get(requirement)
            if guard is None:
                guard = self.guards[requirement] = self.cp.new_bool_var(f"guard[{requirement}]")
            ct.only_enforce_if(guard)
        return ct

    def at_most_one(self, lits, requirement: str | None = None):
        """AtMostOne, as a linear constraint when it may need a guard (CP-SAT's AtMostOne
        takes no enforcement literal)."""
        if self.explain and requirement is not None:
            return self.add(self.cp.add(sum(lits) <= 1), requirement)
        return self.add(self.cp.add_at_most_one(lits))


def upper_bound(var) -> int:
    """The largest value of a CP-SAT variable (a plain int is its own bound)."""
    if isinstance(var, int):
        return var
    domain = var.proto.domain
    return domain[len(domain) - 1]   # the proto's repeated field has no negative indexing


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
