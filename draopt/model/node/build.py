"""apply(problem) -> ModelData; invert(ModelData, values) -> chosen devices (cvxpy-style)."""
from __future__ import annotations

from ortools.sat.python import cp_model

from draopt.model.encodings import assignment, attributes, capacity, compatibility, counters, usage
from draopt.model.encodings.base import ModelData
from draopt.dra.problem import Problem
from draopt.dra.reference import Chosen

ENCODINGS = (assignment, usage, counters, compatibility, capacity, attributes)


def apply(problem: Problem, *, kubernetes_quirks: bool = True, explain: bool = False) -> ModelData:
    m = ModelData(problem=problem, cp=cp_model.CpModel(), kubernetes_quirks=kubernetes_quirks, explain=explain)
    for enc in ENCODINGS:
        enc.encode(m)
    return m


def first_fit_order(m: ModelData) -> list:
    """Decision order reproducing the kube-scheduler's search: claims, requests, sub-requests
    (each selector right before its devices), devices in search order; value 1 first. With a
    complete search over this fixed order the first solution is the lexicographically
    greatest feasible vector, which is the first solution of Kubernetes' backtracking."""
    order = []
    for spec in m.specs:
        sel = m.select[spec.key]
        if sel is not None:
            order.append(sel)
        for dev in m.by_spec[spec.key]:
            order.append(m.x[(spec.key, dev.index)])
    return order


def invert(m: ModelData, value) -> tuple[list[list[Chosen]], dict[tuple[int, int], int]]:
    """Chosen devices per claim, in Kubernetes' result order, and the chosen sub-requests."""
    chosen: list[list[Chosen]] = [[] for _ in m.problem.claims]
    selected: dict[tuple[int, int], int] = {}
    for spec in m.specs:
        sel = m.select[spec.key]
        if sel is not None and not value(sel):
            continue
        if sel is not None:
            selected[(spec.claim_index, spec.request_index)] = spec.sub_index
        for dev in m.by_spec[spec.key]:
            if value(m.x[(spec.key, dev.index)]):
                consumed = m.consumed.get((spec.key, dev.index)) if dev.multi_allocatable else None
                if consumed is None and dev.multi_allocatable and m.problem.features.consumable_capacity:
                    consumed = m.problem.consumption(spec, dev)
                chosen[spec.claim_index].append(Chosen(spec, dev, consumed))
    return chosen, selected
