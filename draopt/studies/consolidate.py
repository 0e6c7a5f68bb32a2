"""`draopt plan --consolidate`: on a running cluster, the cheapest set of its nodes (plus, optionally,
new nodes of given types) that holds every running and pending pod, running pods moved as needed,
Kubernetes' drain rules kept (draopt.studies.consolidate_rules); beside it, what Karpenter's
consolidation would remove (draopt.studies.karpenter_consolidation). The model is the placement
model with an objective on opened nodes (draopt.studies.consolidate_model); its answer is decoded
into placements and checked with draopt.cluster.check, and against the drain rules, before it is
returned. See docs/planning.md."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draopt import interrupt, progress
from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.studies.consolidate_model import (
    ConsolidationInput,
    Model,
    build_model,
    moved_objects,
    pending_daemon_pods,
    unplaceable_where_they_run,
    with_new_nodes,
)
from draopt.studies.consolidate_rules import CostSource, PodRules, classify, cost_text, existing_costs
from draopt.studies.consolidate_solve import Answer, NoAnswer, solve
from draopt.studies.node_types import NodeType, check_node_types


@dataclass
class Consolidation:
    """The answer of `plan --consolidate`."""

    nodes: dict[str, tuple[str, Fraction]]  # existing node -> (type, cost)
    kept: list[str]  # existing nodes kept
    drained: list[str]  # existing nodes to drain and remove
    bought: dict[str, str]  # new node -> its type
    moves: dict[str, tuple[str, str | None]]  # moved pod -> (from, to; None: not placed again)
    pending: dict[str, str | None]  # pending pod -> its node (None: not placed)
    cost_before: Fraction
    cost_after: Fraction
    bound: Fraction
    status: str  # the cost phase's CP-SAT status
    proven: bool
    why_not_proven: list[str]
    rules: PodRules
    new_types: list[NodeType] = field(default_factory=list)
    budgets_used: dict[str, tuple[int, int]] = field(default_factory=dict)  # budget -> (moved, allowed)
    karpenter: Any = None  # karpenter_consolidation.KarpenterConsolidation
    notes: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    interrupted: bool = False  # Ctrl-C stopped the search: the best answer found before it

    @property
    def saved(self) -> Fraction:
        return self.cost_before - self.cost_after

    @property
    def gap(self) -> float:
        return 0.0 if not self.cost_after else float((self.cost_after - self.bound) / self.cost_after)

    @property
    def placed_all(self) -> bool:
        return all(to is not None for _, to in self.moves.values()) and all(
            n is not None for n in self.pending.values()
        )

    def to_json(self) -> dict[str, Any]:
        from draopt.studies.planning import _num

        return {
            "nodes": {
                n: {"type": t, "cost": _num(c), "verdict": "keep" if n in self.kept else "drain"}
                for n, (t, c) in sorted(self.nodes.items())
            },
            "drain": self.drained,
            "new_nodes": self.bought,
            "moves": {p: {"from": a, "to": b} for p, (a, b) in sorted(self.moves.items())},
            "pending": dict(sorted(self.pending.items())),
            "cost_before": _num(self.cost_before),
            "cost_after": _num(self.cost_after),
            "saved": _num(self.saved),
            "saved_share": round(float(self.saved / self.cost_before), 6) if self.cost_before else 0.0,
            "bound": _num(self.bound),
            "gap": round(self.gap, 6),
            "status": self.status,
            "proven_minimal": self.proven,
            "interrupted": self.interrupted,
            "why_not_proven": self.why_not_proven,
            "kept_by_rules": self.rules.pinned_nodes(),
            "pods": {c: sorted(p for p, k in self.rules.kind_of.items() if k == c) for c in _CLASSES},
            "pod_disruption_budgets": {k: {"moved": m, "allowed": a} for k, (m, a) in self.budgets_used.items()},
            "karpenter": None if self.karpenter is None else self.karpenter.to_json(),
            "notes": self.notes,
        }

    def table(self) -> str:
        rows = [("node", "type", "cost", "verdict", "pods after")]
        after: dict[str, int] = {}
        for _, to in self.moves.values():
            if to is not None:
                after[to] = after.get(to, 0) + 1
        for to in self.pending.values():
            if to is not None:
                after[to] = after.get(to, 0) + 1
        for pod, node in self.rules.node_of.items():
            if pod not in self.moves:  # stays where it runs
                after[node] = after.get(node, 0) + 1
        for n, (t, c) in sorted(self.nodes.items()):
            verdict = "keep" if n in self.kept else "drain"
            rows.append((n, t, cost_text(c), verdict, str(after.get(n, 0) if verdict == "keep" else 0)))
        cost_of = {t.name: t.cost for t in self.new_types}
        for n, t in sorted(self.bought.items()):
            rows.append((n, t, cost_text(cost_of[t]), "new", str(after.get(n, 0))))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out = ["  ".join(v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))) for r in rows]
        return "\n".join([line.rstrip() for line in out] + [""] + self._summary_lines())

    def _summary_lines(self) -> list[str]:
        share = f" ({float(self.saved / self.cost_before):.1%})" if self.cost_before else ""
        out = [
            f"drain {len(self.drained)} node(s)" + (f": {', '.join(self.drained)}" if self.drained else "")
            + (f"; buy {len(self.bought)}: {', '.join(sorted(self.bought))}" if self.bought else ""),
            f"cost {cost_text(self.cost_before)} -> {cost_text(self.cost_after)}: saves {cost_text(self.saved)}{share}",
        ]  # fmt: skip
        if self.proven:
            out.append(
                f"proven minimal: no cheaper set of nodes holds these pods under these rules (bound {cost_text(self.bound)})"
            )
        else:
            why = "; ".join(self.why_not_proven)
            out.append(f"not proven minimal: {why}; lower bound {cost_text(self.bound)}, gap {self.gap:.1%}")
        out.append(f"{len(self.moves)} pod(s) moved" + (":" if self.moves else ""))
        out.extend(f"  {p}: {a} -> {b or '(not placed)'}" for p, (a, b) in sorted(self.moves.items()))
        placed = {p: n for p, n in self.pending.items() if n is not None}
        if self.pending:
            out.append(f"pending pods: {len(placed)} of {len(self.pending)} placed")
            out.extend(f"  {p}: {n or '(not placed)'}" for p, n in sorted(self.pending.items()))
        kept = self.rules.pinned_nodes()
        if kept:
            out.append("kept by the drain rules:")
            out.extend(f"  {n}: {why}" for n, why in sorted(kept.items()))
        for k, (m, a) in sorted(self.budgets_used.items()):
            out.append(f"PodDisruptionBudget {k}: {m} of {a} allowed disruption(s) used")
        if self.karpenter is not None:
            out.extend(self.karpenter.lines(self.cost_after))
        out.extend(f"note: {n}" for n in self.notes)
        return out


_CLASSES = ("movable", "pinned", "daemon", "static")
# Karpenter's simulated consolidation stops issuing commands past this share of the time limit
_KARPENTER_SHARE = 0.3


def consolidate(
    objects,
    costs: CostSource,
    new_types: list[NodeType] = (),  # type: ignore[assignment]
    *,
    features: Features | None = None,
    time_limit: float = 60.0,
    max_nodes: int = 256,
    karpenter: bool = True,
) -> Consolidation:
    """The cheapest nodes that hold every running and pending pod (see the module docstring).
    Ctrl-C on the command line (draopt.interrupt): once the model is built, the best answer found
    so far, `interrupted` and not proven; before any answer, Interrupted (a KeyboardInterrupt) with
    what was known."""
    t0 = time.perf_counter()
    features = features or Features.from_gates()
    new_types = list(new_types)
    if not objects.nodes:
        raise InputError("plan --consolidate: no Node in the input (a running cluster's dump is needed)")
    if new_types:
        check_node_types(objects, new_types)
    prices = existing_costs(objects, costs, new_types)
    cost_before = sum((c for _, c in prices.values()), Fraction(0))
    try:
        workload, rules, inp, model = _built(objects, prices, new_types, features, max_nodes)
        # From here Ctrl-C stops the search with the answer it has (draopt.interrupt); before, it stops with none.
        with interrupt.deferred():
            try:
                return _solved(
                    objects,
                    workload,
                    rules,
                    inp,
                    model,
                    prices,
                    new_types,
                    features,
                    time_limit,
                    max_nodes,
                    karpenter,
                    t0,
                )
            except NoAnswer as stop:
                bound = None if stop.bound is None else stop.bound * model.scale
                raise Interrupted(cost_before, len(prices), bound) from None
    except Interrupted:
        raise
    except KeyboardInterrupt:  # (while the model was built)
        raise Interrupted(cost_before, len(prices), None) from None


class Interrupted(KeyboardInterrupt):
    """Ctrl-C before `plan --consolidate` found any answer: what was known by then (the cost of the
    nodes as they run, and the aggregate's lower bound when it was computed)."""

    def __init__(self, cost_before: Fraction, nodes: int, bound: Fraction | None):
        super().__init__()
        self.cost_before, self.nodes, self.bound = cost_before, nodes, bound

    def to_json(self) -> dict[str, Any]:
        from draopt.studies.planning import _num

        return {
            "interrupted": True,
            "answer": None,
            "nodes": self.nodes,
            "cost_before": _num(self.cost_before),
            "bound": None if self.bound is None else _num(self.bound),
        }

    def lines(self) -> list[str]:
        out = [
            "interrupted (Ctrl-C) before any consolidation was found",
            f"cost now {cost_text(self.cost_before)} ({self.nodes} node(s))",
        ]
        if self.bound is None:
            out.append("lower bound: not computed yet")
        else:
            saved = self.cost_before - self.bound
            share = f" ({float(saved / self.cost_before):.1%})" if self.cost_before else ""
            out.append(f"lower bound {cost_text(self.bound)}: a consolidation saves at most {cost_text(saved)}{share}")
        return out


def _built(objects, prices, new_types: list[NodeType], features, max_nodes: int):
    """The model of the consolidation: (the input's workload, the pods' rules, the model's input, the model)."""
    from draopt.kube.workload import expand

    workload = expand(objects, features)
    rules = classify(objects, workload)
    inp = _input(objects, workload, rules, new_types, features, max_nodes)
    node_costs = {n: c for n, (_, c) in prices.items()} | {
        copy: next(t.cost for t in new_types if t.name == name) for copy, name in inp.type_of.items()
    }
    with progress.current().task("plan --consolidate: building the model"):
        model = build_model(inp, features, node_costs, rules)
        stuck = unplaceable_where_they_run(model, inp.origin)
        if stuck:  # pinned where they run, and the model built again
            for pod in stuck:
                rules.kind_of[pod] = "pinned"
                rules.why[pod] = "runs where it could not be placed again now (a taint, a cordon or its devices)"
            inp = _input(objects, workload, rules, new_types, features, max_nodes)
            model = build_model(inp, features, node_costs, rules)
    return workload, rules, inp, model


def _solved(objects, workload, rules, inp, model, prices, new_types, features, time_limit, max_nodes, karpenter, t0):
    """Karpenter's consolidation, the model solved from it, and the answer decoded and checked."""
    found = None
    if karpenter:  # before the solve: its answer is a warm start of the model
        from draopt.studies.karpenter_consolidation import karpenter_consolidation

        started = time.perf_counter()
        with progress.current().task("plan --consolidate: Karpenter's consolidation"):
            found = karpenter_consolidation(
                objects, workload, rules, prices, new_types, features, deadline=started + _KARPENTER_SHARE * time_limit
            )
        karpenter_s = round(time.perf_counter() - started, 3)
    answer = solve(model, inp, rules, time_limit, t0 + time_limit, found)
    out = _answer(model, answer, inp, prices, rules, new_types, max_nodes)
    _unencoded(model, out)
    _check(model, answer, inp, out, features)
    if interrupt.requested():  # Ctrl-C: the best found so far, not proven
        out.interrupted, out.proven = True, False
        out.why_not_proven.insert(0, "interrupted by Ctrl-C before the search ended")
    out.stats.update(answer.stats)
    out.karpenter = found
    if found is not None:
        out.stats.update(karpenter_s=karpenter_s, karpenter_simulations=found.simulations)
    out.stats["solve_s"] = round(time.perf_counter() - t0, 3)
    return out


def _input(objects, workload, rules: PodRules, new_types, features, max_nodes: int) -> ConsolidationInput:
    """The movable pods pending again, and candidate copies of the new types: as many as pods to
    place (a cheapest answer opens no copy without a pod), at most `max_nodes` each."""
    moved = moved_objects(objects, workload, rules)
    to_place = len(rules.movable()) + len(workload.pending)
    caps = {t.name: max(0, min(max_nodes, to_place)) for t in new_types}
    objs, type_of, daemon_of, notes = with_new_nodes(moved, new_types, caps, workload)
    from draopt.kube.workload import expand

    daemon_of = dict(daemon_of)
    daemon_of.update(pending_daemon_pods(moved, expand(moved, features)))
    origin = {p: rules.node_of[p] for p in rules.movable()}
    budgets_of = {p: rules.budgets_of(p) for p in origin}
    return ConsolidationInput(objs, type_of, daemon_of, origin, budgets_of, caps, notes)


def _answer(model: Model, answer: Answer, inp: ConsolidationInput, prices, rules: PodRules, new_types, max_nodes):
    """The decoded placement as nodes kept, drained and bought, and pods moved."""
    from draopt.cluster.result import PodPlacement
    from draopt.dra.decode import deterministic_share_id
    from draopt.model.solution import decode_part

    prep, b = model.prep, model.b
    ff = {d.key: PodPlacement(d.key, None, d.priority, d.group) for d in model.workload.pending}
    sol = {"built": b, "values": answer.values}
    placed = decode_part(
        prep, model.cluster, model.workload, model.book, sol, [k.index for k in prep.kinds], ff, deterministic_share_id
    )
    placed = _runners_stay(prep, placed, inp.origin)
    model_placements = placed
    kept = sorted(n for n in prices if answer.opened.get(n))
    drained = sorted(n for n in prices if not answer.opened.get(n))
    bought = {n: t for n, t in inp.type_of.items() if answer.opened.get(n)}
    moves = {p: (o, placed[p].node) for p, o in inp.origin.items() if placed[p].node != o}
    pending = {d.key: placed[d.key].node for d in model.real if d.key not in inp.origin}
    scale = model.scale
    cost_after = sum((c for n, (_, c) in prices.items() if n in kept), Fraction(0)) + sum(
        (t.cost for n, tn in bought.items() for t in new_types if t.name == tn), Fraction(0)
    )
    if cost_after != answer.cost * scale:
        raise RuntimeError(f"internal: the model's cost {answer.cost * scale} is not its nodes' {cost_after}")
    why = []
    if answer.status != "OPTIMAL":
        stopped = "by Ctrl-C" if interrupt.requested() else "at the time limit"
        why.append(f"CP-SAT stopped {stopped} ({answer.status})")
    if not answer.placed_proven:
        why.append("that no set of nodes places more pods was not proven")
    short = [t.name for t in new_types if inp.caps[t.name] < len(model.real) and not answer.any_copies]
    if short:
        why.append(f"the candidate copies of {', '.join(short)} may be too few (--max-nodes {max_nodes})")
    out = Consolidation(
        {n: prices[n] for n in prices}, kept, drained, bought, moves, pending,
        sum((c for _, c in prices.values()), Fraction(0)), cost_after, answer.bound * scale,
        answer.status, not why, why, rules, list(new_types), notes=list(inp.notes),
    )  # fmt: skip
    for budget in rules.budgets:
        out.budgets_used[budget.key] = (sum(1 for p in budget.pods if p in moves), budget.allowed)
    out.stats["placements"] = model_placements
    return out


def _runners_stay(prep, placed: dict, origin: dict[str, str]) -> dict:
    """The decoded placements with, in each kind whose pods run on several nodes (alike, without
    claims), the pods that ran on a node given that node's places first: the decoding hands a
    kind's places to its pods in any order, the model counts how many stay."""
    from dataclasses import replace

    out = dict(placed)
    for kind in prep.kinds:
        keys = [p.key for p in kind.pods]
        if not kind.counted or len({origin.get(k) for k in keys}) < 2 or any(placed[k].new_claims for k in keys):
            continue
        free: dict[str | None, int] = {}
        for k in keys:
            free[placed[k].node] = free.get(placed[k].node, 0) + 1
        given: dict[str, str | None] = {}
        for k in keys:  # first, each pod on its own node while places are left there
            if free.get(origin.get(k), 0) > 0:
                given[k] = origin[k]
                free[origin[k]] -= 1
        rest = [n for n, c in sorted(free.items(), key=lambda x: (x[0] is None, x[0] or "")) for _ in range(c)]
        for k in keys:
            if k not in given:
                given[k] = rest.pop(0)
        for k in keys:
            out[k] = replace(placed[k], node=given[k])
    return out


def _unencoded(model: Model, out: Consolidation) -> None:
    """Rules of the pods to place that the placement model does not encode (inter-pod affinity,
    topology spread, ...: draopt.placement.optimal.unmodelled_rules): said, and not proven."""
    from draopt.placement.optimal import unmodelled_rules

    rules = unmodelled_rules(model.cluster, model.workload)
    if rules:
        out.proven = False
        out.why_not_proven.append("the model does not encode " + "; ".join(rules) + ": check the moves against them")
        out.notes.extend(f"not encoded: {r}" for r in rules)


def _check(model: Model, answer: Answer, inp: ConsolidationInput, out: Consolidation, features) -> None:
    """The answer checked from its placement alone: draopt.cluster.check on the cluster as the model
    saw it (every rule of the placement), then the consolidation's own rules: no pod on a drained
    node or a copy not bought, every node with a pinned pod kept, every budget kept."""
    from draopt.cluster.check import check_placement
    from draopt.cluster.result import PlacementResult
    from draopt.placement import PlaceOutcome
    from draopt.studies.ffd_estimate import _cluster_for

    placements = out.stats.pop("placements")
    pods = [placements[d.key] for d in model.workload.pending]
    claims = {ck: (res, pl.node) for pl in pods for ck, res in pl.new_claims.items()}
    result = PlacementResult("consolidate", pods, claims, {})
    workload, cluster = _cluster_for(inp.objects, features, inp.type_of, list(inp.caps))
    errors = check_placement(PlaceOutcome(result, workload, cluster, []))
    kept = set(out.kept) | set(out.bought)
    errors += [f"pod {pl.pod} on {pl.node}, a node not kept" for pl in pods if pl.placed and pl.node not in kept]
    errors += [
        f"node {n} has a pinned pod ({why}) but is drained"
        for n, why in out.rules.pinned_nodes().items()
        if n not in kept
    ]
    errors += [f"PodDisruptionBudget {k}: {m} moved, {a} allowed" for k, (m, a) in out.budgets_used.items() if m > a]
    if errors:
        raise RuntimeError("internal: the consolidation breaks a rule: " + "; ".join(errors[:5]))
    out.stats["checked"] = True
