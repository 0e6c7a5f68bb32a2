"""The column generation's master LP (GLOP) and its solves, bounded by the clock and by GLOP's
deterministic work (colgen.py's apply and relax, colgen_plan.py's covering master)."""

from __future__ import annotations

import math
import time
from typing import Any

from ortools.linear_solver import pywraplp


# GLOP's parameters for a master solve made again after a stall: the dual simplex with perturbed
# costs (the master is degenerate: on gpuspec33's seed 43 the primal simplex from one basis ran
# 59,000 iterations in a minute without an end, the dual simplex solves it in 736).
STALLED_PARAMS = "use_dual_simplex: true perturb_costs_in_dual_simplex: true"


class MasterTimeUp(Exception):
    """A master LP solve that did not finish by its wall-clock stop (apply's time limit, a plan's)."""


def solve_master(
    lp: pywraplp.Solver,
    what: str,
    until: float | None = None,
    retry: tuple[str, str] | None = None,
    params: str = "",
) -> None:
    """Solve a column generation's master LP to optimality (`what` names it in the error), by
    `until` (perf_counter) if given: MasterTimeUp when it cannot. `retry`: (GLOP parameters of
    the solve from scratch after a failed one, the parameters restored after it); None: the same
    parameters (`params`, the LP's own), then, if that fails too, STALLED_PARAMS."""
    status = _solve_by(lp, None, until)
    if status != pywraplp.Solver.OPTIMAL:
        # GLOP's warm start from the last basis can fail numerically (seen on learned re-solves
        # of gpuspec33 and lp-guided on default), or stall until its work limit (MASTER_WORK,
        # APPLY_MASTER_WORK): the same LP solved again from scratch.
        status = _from_scratch(lp, until, retry)
    if status != pywraplp.Solver.OPTIMAL and retry is None and not _time_up(until):
        # Stalled again with the same parameters (relax keeps them first: the online plans'
        # figures were measured with them): the dual simplex, as apply's retry, before giving up.
        status = _from_scratch(lp, until, (STALLED_PARAMS, params))
    if status != pywraplp.Solver.OPTIMAL:
        if until is not None and time.perf_counter() >= until:
            raise MasterTimeUp(what)
        raise RuntimeError(f"internal: the {what} LP ended with status {status}")


def _from_scratch(lp: pywraplp.Solver, until: float | None, retry: tuple[str, str] | None) -> int:
    """One solve from scratch (no warm start), under retry[0]'s GLOP parameters if given
    (retry[1] restored after it)."""
    from_scratch = pywraplp.MPSolverParameters()
    from_scratch.SetIntegerParam(from_scratch.INCREMENTALITY, from_scratch.INCREMENTALITY_OFF)
    if retry is not None:
        lp.SetSolverSpecificParametersAsString(retry[0])
    try:
        return _solve_by(lp, from_scratch, until)
    finally:
        if retry is not None:
            lp.SetSolverSpecificParametersAsString(retry[1])


def _time_up(until: float | None) -> bool:
    return until is not None and time.perf_counter() >= until


def _solve_by(lp: pywraplp.Solver, params: pywraplp.MPSolverParameters | None, until: float | None) -> int:
    """One GLOP solve, stopped at `until` in wall time (one master solve of the offline optimum
    on gpuspec33 ran 15 minutes past its time limit)."""
    if until is not None and math.isfinite(until):  # (an infinite stop: no wall-clock limit)
        left = until - time.perf_counter()
        if left <= 0:
            raise MasterTimeUp("the time limit")
        lp.SetTimeLimit(max(1, int(left * 1000)))
    return lp.Solve() if params is None else lp.Solve(params)


class _Master:
    """The restricted master LP (GLOP), grown by columns."""

    def __init__(self, classes, kinds, pods_of, work: float | None = None, stalled: str | None = None):
        self.lp = pywraplp.Solver.CreateSolver("GLOP")
        params = f"max_deterministic_time: {work}" if work is not None else ""
        if params:  # GLOP's deterministic time: the same stop on any machine
            self.lp.SetSolverSpecificParametersAsString(params)
        # `stalled`: the parameters of the solve from scratch after a failed one (solve_master)
        self.retry = (stalled, params) if stalled is not None else None
        self.params = params
        inf = self.lp.infinity()
        self.class_rows = [self.lp.Constraint(-inf, len(nc.nodes)) for nc in classes]
        self.kind_rows = {k.index: self.lp.Constraint(-inf, pods_of[k.index]) for k in kinds}
        self.objective = self.lp.Objective()
        self.objective.SetMaximization()
        self.classes = classes
        self.vars: list[Any] = []

    def add_substitutions(self, pairs, value) -> None:
        """A pod of kind b in a place of kind a (colgen_substitution.py): b's value for a's. A
        kind's row then also keeps its places used >= 0: only places the columns have move."""
        for a, b in pairs:
            self.kind_rows[a].SetLb(0.0)
            z = self.lp.NumVar(0.0, self.lp.infinity(), "")
            self.kind_rows[a].SetCoefficient(z, -1)
            self.kind_rows[b].SetCoefficient(z, 1)
            self.objective.SetCoefficient(z, value[b] - value[a])

    def add_columns(self, cols) -> None:
        for col in cols:
            x = self.lp.NumVar(0.0, self.lp.infinity(), f"x{len(self.vars)}")
            self.vars.append(x)
            self.class_rows[col.cls].SetCoefficient(x, 1)
            for ki, n in zip(self.classes[col.cls].kinds, col.counts):
                if n:
                    self.kind_rows[ki].SetCoefficient(x, n)
            self.objective.SetCoefficient(x, col.value)

    def solve(self, until: float | None = None):
        solve_master(self.lp, "restricted master", until, self.retry, self.params)
        # Dual prices of a maximisation with <= rows are >= 0; rounding noise is clipped (any
        # prices >= 0 give a valid Lagrangian bound).
        pi = {ki: max(0.0, r.dual_value()) for ki, r in self.kind_rows.items()}
        mu = [max(0.0, r.dual_value()) for r in self.class_rows]
        return self.objective.Value(), pi, mu

    def primal(self) -> list[float]:
        """The last solve's value of every column (in the order added)."""
        return [x.solution_value() for x in self.vars]
