"""Capacity planning: which new nodes do the pending pods need?

`plan` (several node types, each a template Node with its slices and a cost) lets the CP-SAT
placement model decide the cheapest mix of new nodes: candidate copies of every type, each with
an "opened" literal, pods only on opened nodes; first the most pods, then the least cost. The
answer is called minimal only when CP-SAT proves it; the bound and gap are given otherwise, and
the one-fewer check (the mix less one node of each type it uses) is solved too. Side by side,
`ffd_estimate`: what the cluster-autoscaler's first-fit-decreasing binpacking estimator would buy
with each type alone. See docs/planning.md.

`nodes_needed` (the earlier search) copies one template node and searches for the smallest
number of copies with which a placement policy places every pending pod: doubling first, then
bisection. Placement need not be monotone in the number of nodes (first-fit is a heuristic), so
the answer is checked: `k` places everything, and `k - 1` was tried and did not.

`sweep` (now in `draopt.studies.sweep`, re-exported here) runs many what-if studies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draopt import progress
from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.studies.ffd_estimate import FfdEstimate, _cluster_for, _scheduled_first, _with_types
from draopt.studies.ffd_estimate import ffd_estimate as ffd_estimate
from draopt.studies.ffd_estimate import hash_node as hash_node
from draopt.studies.ffd_estimate import with_copies
from draopt.studies.node_types import (
    NodeType,
    check_cost_range,
    check_node_types,
    load_node_types as load_node_types,
    format_cost as _fmt,
    parse_cost as parse_cost,
    parse_node_type as parse_node_type,
)


@dataclass
class PlanResult:
    template: str
    policy: str
    extra_nodes: int | None  # None: not enough within max_extra
    tried: dict[int, tuple[int, int]] = field(default_factory=dict)  # copies -> (placed, pods)
    # Pods no number of copies can place (pod -> why): every node, the template included,
    # rejects them for a reason a copy of the template repeats (a resource claim error such as
    # a CEL runtime error or a missing DeviceClass, an untolerated taint, an unschedulable node).
    blocked: dict[str, str] = field(default_factory=dict)

    def table(self) -> str:
        lines = [f"{'extra nodes':>12s}  {'placed':>8s}  {'pods':>6s}"]
        for k in sorted(self.tried):
            placed, pods = self.tried[k]
            lines.append(f"{k:12d}  {placed:8d}  {pods:6d}")
        out = lines
        if self.blocked:
            out.append(f"no number of nodes like {self.template} can place {len(self.blocked)} pod(s):")
            out.extend(f"  {pod}: {why}" for pod, why in sorted(self.blocked.items()))
        others = max(self.tried[0][1] - len(self.blocked), 0) if 0 in self.tried else None
        if self.extra_nodes is None:
            out.append(f"more than {max(self.tried)} nodes like {self.template} would be needed ({self.policy})")
        elif not self.blocked:
            out.append(f"{self.extra_nodes} more node(s) like {self.template} place every pending pod ({self.policy})")
        elif others and self.extra_nodes == 0:
            out.append(f"the {others} other pending pod(s) need no extra node ({self.policy})")
        elif others:
            out.append(
                f"{self.extra_nodes} more node(s) like {self.template} place the {others} other pending "
                f"pod(s) ({self.policy})"
            )
        return "\n".join(out)


# Reasons a copy of the template node gives again, whatever the state of the cluster.
_NODE_COUNT_CANNOT_HELP = ("resource claim error", "node(s) were unschedulable", "node(s) had untolerated taint(s)")


def _blocked(pods) -> dict[str, str]:
    out = {}
    for p in pods:
        if p.hold is not None:  # outside the scheduling queue: no node helps
            out[p.pod] = p.hold.text
            continue
        if p.placed or not p.reasons:
            continue
        if all(r.startswith(_NODE_COUNT_CANNOT_HELP) for r in p.reasons):
            out[p.pod] = "; ".join(sorted(p.reasons))
    return out


def nodes_needed(
    objects: ObjectSet,
    template: str,
    *,
    policy: str = "first-fit",
    features: Features | None = None,
    max_extra: int = 256,
    time_limit: float = 60.0,
) -> PlanResult:
    from draopt.placement import place

    if max_extra < 0:
        raise InputError(f"--max-nodes: must be 0 or more, got {max_extra}")
    result = PlanResult(template, policy, None)

    def placed_all(k: int) -> bool:
        if k not in result.tried:
            out = place(with_copies(objects, template, k), policy=policy, features=features, time_limit=time_limit)
            pods = out.result.pods
            result.tried[k] = (sum(p.placed for p in pods), len(pods))
            if k == 0:
                result.blocked = _blocked(pods)
        placed, pods = result.tried[k]
        return placed >= pods - len(result.blocked)

    if placed_all(0):
        result.extra_nodes = 0
        return result
    lo, hi = 0, 1  # lo fails, hi to be tried
    while not placed_all(min(hi, max_extra)):
        if hi >= max_extra:
            return result
        lo, hi = hi, hi * 2
    hi = min(hi, max_extra)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if placed_all(mid):
            hi = mid
        else:
            lo = mid
    placed_all(hi - 1)  # recorded, so the table shows the step
    result.extra_nodes = hi
    return result


# ====================================================================== several node types
# `plan` buys nodes of several types, each a template Node (with its slices) and a cost. The
# CP-SAT placement model (draopt.model.placement) is built over the cluster plus candidate
# copies of every type; each candidate gets an "opened" literal, pods only go to opened nodes,
# and the model minimises the cost of the opened nodes once the most pods are placed. Copies of
# one type that the interchangeable-nodes reduction (patterns.py) groups are counted, not
# enumerated. Side by side: what a first-fit-decreasing estimator would buy, one type at a time,
# as the cluster-autoscaler's binpacking estimator does.


@dataclass
class OneFewer:
    removed: str  # node type one node fewer of
    mix: dict[str, int]
    verdict: str  # "infeasible (proven)", "feasible", "not proven (time limit)"


@dataclass
class MixPlan:
    """The cheapest mix of new nodes found by the CP-SAT model, and what it proves."""

    node_types: list[NodeType]
    mix: dict[str, int]  # type -> new nodes
    cost: Fraction
    status: str  # CP-SAT status of the cost phase (OPTIMAL / FEASIBLE / ...)
    bound: Fraction  # proven lower bound on the cost
    proven_minimal: bool
    why_not_proven: str
    pods: int  # pending pods of the input
    placed: int  # placed with the mix
    placed_proven: bool  # no mix of these types places more (proven)
    candidates: dict[str, int]  # copies per type in the model
    ffd: list[FfdEstimate]
    one_fewer: list[OneFewer] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)  # pod -> why no node of any type or cluster takes it
    stats: dict[str, Any] = field(default_factory=dict)
    # draopt.studies.plan_check: first-fit on the cluster with the mix, and the rules the pods use
    # that the model does not encode (then not proven, and `placed` is first-fit's count).
    first_fit: Any = None  # plan_check.FirstFitCheck
    unencoded_rules: list[str] = field(default_factory=list)

    @property
    def gap(self) -> float:
        return 0.0 if not self.cost else float((self.cost - self.bound) / self.cost)

    def ffd_best(self) -> FfdEstimate | None:
        """The cheapest single-type estimate among those that place the most pods."""
        if not self.ffd:
            return None
        most = max(e.placed for e in self.ffd)
        return min((e for e in self.ffd if e.placed == most), key=lambda e: (e.cost, e.nodes))

    def to_json(self) -> dict[str, Any]:
        best = self.ffd_best()
        return {
            "node_types": [{"name": t.name, "template": t.template, "cost": _num(t.cost)} for t in self.node_types],
            "mix": self.mix,
            "cost": _num(self.cost),
            "status": self.status,
            "bound": _num(self.bound),
            "gap": round(self.gap, 6),
            "proven_minimal": self.proven_minimal,
            "why_not_proven": self.why_not_proven,
            "pods": self.pods,
            "placed": self.placed,
            "placed_proven": self.placed_proven,
            "candidates": self.candidates,
            "blocked": self.blocked,
            "one_fewer": [{"removed": o.removed, "mix": o.mix, "verdict": o.verdict} for o in self.one_fewer],
            "unencoded_rules": self.unencoded_rules,
            "first_fit": None if self.first_fit is None else self.first_fit.to_json(),
            "ffd": {
                e.node_type.name: {
                    "nodes": e.nodes,
                    "cost": _num(e.cost),
                    "placed": e.placed,
                    "pods": e.pods,
                    "capped": e.capped,
                }
                | ({"skipped": True} if e.skipped else {})
                for e in self.ffd
            },
            "ffd_best": None
            if best is None
            else {
                "node_type": best.node_type.name,
                "nodes": best.nodes,
                "cost": _num(best.cost),
                "placed": best.placed,
            },
        }

    def table(self) -> str:
        rows = [("node type", "template", "cost", "candidates", "optimal mix", "ffd nodes", "ffd cost", "ffd placed")]
        for e, t in zip(self.ffd, self.node_types):
            rows.append(
                (
                    t.name,
                    t.template,
                    _fmt(t.cost),
                    str(self.candidates.get(t.name, 0)),
                    str(self.mix.get(t.name, 0)),
                    "-" if e.skipped else str(e.nodes) + ("+" if e.capped else ""),
                    _fmt(e.cost),
                    f"{e.placed}/{e.pods}",
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out = [
            "  ".join(v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows
        ]
        out.append("")
        mix = _mix_text(self.mix)
        out.append(f"cheapest mix: {mix}, cost {_fmt(self.cost)}; places {self.placed} of {self.pods} pending pod(s)")
        if self.pods == 0:
            out.append("nothing to place: no pending Pod (or workload controller) in the input")
        elif self.proven_minimal:
            out.append(
                f"proven minimal: CP-SAT proved no cheaper mix of these node types places as many pods "
                f"(lower bound {_fmt(self.bound)}, gap 0)"
            )
        else:
            out.append(f"not proven minimal: {self.why_not_proven}; lower bound {_fmt(self.bound)}, gap {self.gap:.1%}")
        for o in self.one_fewer:
            out.append(f"one {o.removed} fewer ({_mix_text(o.mix)}): {o.verdict}")
        out.extend(self._first_fit_lines())
        best = self.ffd_best()
        if best is not None:
            out.append(
                f"first-fit decreasing (cluster-autoscaler's estimator), cheapest single type: "
                f"{best.nodes} x {best.node_type.name}, cost {_fmt(best.cost)}, places {best.placed} of "
                f"{best.pods}" + ("" if best.placed == best.pods else " (no single type places them all)")
            )
        if self.blocked:
            out.append(f"no node of any type (nor of the cluster) takes {len(self.blocked)} pod(s):")
            out.extend(f"  {pod}: {why}" for pod, why in sorted(self.blocked.items()))
        return "\n".join(out)

    def _first_fit_lines(self) -> list[str]:
        ff = self.first_fit
        if ff is None:
            return []
        line = (
            f"checked with first-fit (kube-scheduler's default profile, no preemption) on the cluster with "
            f"{_mix_text(ff.mix)}: places {ff.placed} of {ff.pods}"
        )
        if ff.placed < self.placed:
            line += f", fewer than the plan's {self.placed} (the scheduler's order and node choice do not find its placement)"
        out = [line]
        if self.unencoded_rules:
            # The estimate runs draopt's name-order first-fit, which leaves these rules to the scheduler's plugins too.
            out.append("the first-fit-decreasing estimate below does not check these rules either")
        return out


def _num(v: Fraction) -> int | float:
    return int(v) if v.denominator == 1 else float(v)


def _mix_text(mix: dict[str, int]) -> str:
    used = [f"{n} x {t}" for t, n in mix.items() if n]
    return " + ".join(used) if used else "no new node"


def _solver(seconds: float):
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    # Same input, same answer: one worker and deterministic time; the wall clock only as a
    # generous hard stop. Measured (benchmarks/bench_plan.py, mixed, 200 pods): the cost phase
    # proves in 0.01 s with one worker, 3.9 s with two interleaved, 7.4 s with four.
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = seconds
    solver.parameters.max_time_in_seconds = max(0.1, 3 * seconds + 1)
    return solver


def _one_fewer(cp, counts: dict, mix: dict[str, int], node_types: list[NodeType], seconds: float) -> list[OneFewer]:
    """The mix less one node of each type it uses (the others at most the mix's): does it place
    as many pods? The model as solved (the pods phase's count held), its objective dropped."""
    from ortools.sat.python import cp_model

    checks = []
    used_types = [t for t in node_types if mix[t.name] > 0]
    for t in used_types:
        c = cp.clone()
        c.clear_objective()
        c.clear_hints()
        fewer = {s.name: mix[s.name] - (1 if s is t else 0) for s in node_types}
        for s in node_types:
            c.add(c.get_int_var_from_proto_index(counts[s.name].index) <= fewer[s.name])
        status = _solver(seconds / len(used_types)).solve(c)
        verdict = {
            cp_model.INFEASIBLE: "does not place them all (proven infeasible)",
            cp_model.OPTIMAL: "places them all",
            cp_model.FEASIBLE: "places them all",
        }.get(status, "not proven either way (time limit)")
        checks.append(OneFewer(t.name, fewer, verdict))
    return checks


def _open_new_nodes(
    cp, b, cluster, type_of: dict[str, str], node_types: list[NodeType], caps: dict[str, int], first: set[str]
):
    """How many copies of each type the model opens: (per type, the terms that sum to it; per
    copy outside a class, its opened literal; the classes with their parts' counts; the nodes in
    classes). Copies of a type are opened in order, those in `first` (the estimate's) first."""
    from draopt.model.encodings.base import upper_bound

    # A class of interchangeable nodes (patterns.py) counts its opened nodes per part (the
    # cluster's own, the copies of each type); every other copy has its own literal that
    # every pod placed there needs.
    on_node: dict[str, list] = {}
    for (ki, n), v in b.k.items():
        on_node.setdefault(n, []).append(v)
    for (pod, n), v in b.y.items():
        on_node.setdefault(n, []).append(v)
    opened: dict[str, Any] = {}
    count_terms: dict[str, list] = {t.name: [] for t in node_types}
    in_class = set()
    segments = []  # (class, [(type name, or None for the cluster's own nodes; opened count)])
    for nc in b.node_classes:
        in_class.update(n.name for n in nc.nodes)
        sizes: dict[str | None, int] = {}
        for n in nc.nodes:
            sizes[type_of.get(n.name)] = sizes.get(type_of.get(n.name), 0) + 1
        if set(sizes) == {None}:
            continue
        # The class's nodes are alike for placement: how many are opened of each part is all
        # that matters (minimising the cost opens the cheapest parts first).
        segs = []
        for name, size in sizes.items():
            v = cp.new_int_var(0, size, f"opened[{nc.nodes[0].name} class, {name or 'cluster'}]")
            segs.append((name, v))
            if name is not None:
                count_terms[name].append(v)
        cp.add(sum(v for _, v in segs) == sum(nc.vars))
        segments.append((nc, segs))
    for node in cluster.nodes:
        name = node.name
        if name not in type_of or name in in_class:
            continue
        lit = opened[name] = cp.new_bool_var(f"opened[{name}]")
        for v in on_node.get(name, []):
            cp.add(v <= upper_bound(v) * lit)
        count_terms[type_of[name]].append(lit)
    # Copies of a type are alike: any fixed order in which to open them loses no solution
    # (symmetry). The estimate's copies come first, so that its placement stays a solution (a gang
    # that gave its node back leaves a gap in its copies).
    for t in node_types:
        names = [f"{t.name}-plan-{i}" for i in range(caps[t.name]) if f"{t.name}-plan-{i}" in opened]
        lits = [opened[n] for n in sorted(names, key=lambda n: n not in first)]  # stable
        for a, c in zip(lits, lits[1:]):
            cp.add(a >= c)
    return count_terms, opened, segments, in_class


def _estimates(objects, node_types, features, first, max_nodes: int, stats: dict, deadline: float | None):
    """The first-fit-decreasing estimate of every type; past `deadline` (perf_counter) a type is
    not estimated (reported so). One estimate is not interrupted: the largest nodes go first
    (the fewest copies, the quickest estimates) when there is a deadline."""
    import time

    order = list(node_types)
    if deadline is not None:
        order.sort(key=lambda t: -_capacity_of(objects, t))
    got: dict[str, FfdEstimate] = {}
    with progress.current().task(
        "plan: first-fit-decreasing estimates", total=len(node_types), unit="node types"
    ) as shown:
        for t in order:
            if deadline is not None and got and time.perf_counter() > deadline:
                got[t.name] = FfdEstimate(t, 0, 0, len(first[0]), skipped=True)
                stats["ffd_skipped"] = stats.get("ffd_skipped", 0) + 1
            else:
                got[t.name] = ffd_estimate(objects, t, features=features, max_nodes=max_nodes, scheduled_first=first)
            shown.update_to(len(got))
    return [got[t.name] for t in node_types]


def _capacity_of(objects, t: NodeType) -> float:
    """The template's cpu (what orders the estimates: bigger nodes, fewer copies)."""
    from draopt.kube.quantity import Quantity

    node = next(n for n in objects.nodes if n.name == t.template)
    cpu = (node.status.allocatable or {}).get("cpu")
    return float(Quantity.parse(cpu).value) if cpu is not None else 0.0


def plan(
    objects: ObjectSet,
    node_types: list[NodeType],
    *,
    features: Features | None = None,
    time_limit: float = 60.0,
    max_nodes: int = 256,
) -> MixPlan:
    """The cheapest mix of new nodes of `node_types` with which the most pending pods (every
    one, when any mix can) are placed, decided by the CP-SAT placement model; the first-fit-
    decreasing estimate of every type side by side; the one-fewer check of the mix; and the mix
    checked with first-fit, not proven (and repaired) where the pods use a rule the model does
    not encode (draopt.studies.plan_check)."""
    import time

    from draopt.studies.plan_check import check_plan

    t0 = time.perf_counter()
    features = features or Features.from_gates()
    out = _plan(objects, node_types, features=features, time_limit=time_limit, max_nodes=max_nodes)
    with progress.current().task("plan: the mix checked with first-fit"):
        check_plan(objects, out, features, max_nodes=max_nodes, deadline=t0 + 2 * time_limit)
    out.stats["solve_s"] = round(time.perf_counter() - t0, 3)
    return out


def _plan(
    objects: ObjectSet,
    node_types: list[NodeType],
    *,
    features: Features | None = None,
    time_limit: float = 60.0,
    max_nodes: int = 256,
) -> MixPlan:
    """plan's model: the mix as the CP-SAT placement model (or column generation) decides it."""
    import time

    from ortools.sat.python import cp_model

    from draopt.model.encodings.base import scale_to_int
    from draopt.cluster.firstfit import ClaimBook
    from draopt.model.placement import build
    from draopt.model.prepare import prepare_cluster
    from draopt.placement.optimal import _complete_hint, _first_fit_hint
    from draopt.cluster.result import PodPlacement, weight

    t0 = time.perf_counter()
    if max_nodes < 1:
        raise InputError(f"--max-nodes: must be 1 or more, got {max_nodes}")
    check_node_types(objects, node_types)
    features = features or Features.from_gates()
    stats: dict[str, Any] = {}
    first = _scheduled_first(objects, features)
    large = len(first[0]) >= COLUMNS_MIN_PODS
    if large:
        # Large inputs: the columns first (their share of --time-limit, which bounds the whole
        # command here), then the estimates in the time left.
        by_columns = _plan_by_columns(objects, node_types, features, first, max_nodes, stats, t0, time_limit)
        if by_columns is not None:
            by_columns.stats["solve_s"] = round(time.perf_counter() - t0, 3)
            return by_columns
    ffd = _estimates(objects, node_types, features, first, max_nodes, stats, None)
    stats["ffd_s"] = round(time.perf_counter() - t0, 3)
    most = max(e.placed for e in ffd)
    best_ffd = min((e for e in ffd if e.placed == most), key=lambda e: (e.cost, e.nodes))
    ub = best_ffd.cost
    # Candidates per type: enough for every mix no dearer than the best estimate (a mix with
    # more than ub / cost nodes of a type costs more), at least the type's own estimate, one at least.
    # A cost-optimal mix opens no node without a pod either, so no more copies than pods that fit one
    # (the estimate's count of placed pods, checked against the model's own candidacy below).
    caps = {
        t.name: max(1, min(max_nodes, max(e.nodes, min(int(ub // t.cost), e.placed)))) for t, e in zip(node_types, ffd)
    }
    cost_of = {t.name: t.cost for t in node_types}
    by_cost = [t.name for t in sorted(node_types, key=lambda t: t.cost)]  # stable: ties keep the given order
    # The model is built again with more candidates if the mix found could be beaten by a mix
    # with more copies of a type than there were candidates (at most a few rounds).
    for _round in range(4):
        t1 = time.perf_counter()
        objs, type_of, daemon_of = _with_types(objects, [(t, caps[t.name]) for t in node_types])
        workload, cluster = _cluster_for(objs, features, type_of, by_cost)
        book = ClaimBook(cluster, workload.claims)
        prep = prepare_cluster(cluster, workload, book)
        real = [d for d in workload.pending if d.key not in daemon_of]
        # Pods a copy of each type may take (a cost-optimal mix opens no more copies than that).
        fits = {t.name: 0 for t in node_types}
        for d in real:
            for name in {type_of[n.name] for n in prep.pod_nodes.get(d.key, []) if n.name in type_of}:
                fits[name] += 1
        blocked = {}
        for d in real:
            if not prep.pod_nodes.get(d.key):
                pl = best_ffd.placement.get(d.key)
                why = "; ".join(sorted(pl.reasons)) if pl is not None and pl.reasons else "no node takes it"
                blocked[d.key] = why
        if not prep.kinds:
            return MixPlan(
                node_types,
                {t.name: 0 for t in node_types},
                Fraction(0),
                "OPTIMAL",
                Fraction(0),
                True,
                "",
                len(real),
                0,
                True,
                caps,
                ffd,
                [],
                blocked,
                stats,
            )
        with progress.current().task(
            f"plan: building the model (round {_round + 1}, {sum(caps.values())} candidate nodes)"
        ):
            b = build(
                prep,
                cluster,
                workload,
                book,
                [k.index for k in prep.kinds],
                {n.name for n in cluster.nodes},
                pattern_seconds=5.0,
            )  # not scaled down: the model must not depend on the wall clock
        cp = b.model.cp
        stats["build_s"] = round(time.perf_counter() - t1, 3)
        stats["pattern_classes"] = len(b.node_classes)
        count_terms, opened, segments, in_class = _open_new_nodes(
            cp, b, cluster, type_of, node_types, caps, best_ffd.used
        )
        # A copy's DaemonSet pods run exactly when it is opened; they are not pods to place.
        kind_of = {p.key: kind for kind in prep.kinds for p in kind.pods}
        daemon_kinds = set()
        for key, node in daemon_of.items():
            kind = kind_of[key]
            if len(kind.pods) != 1 or node in in_class:
                raise RuntimeError(f"internal: DaemonSet pod {key} of a copy is not on its own")
            daemon_kinds.add(kind.index)
            placed_var = b.placed.get(key)
            if placed_var is None:
                placed_var = sum(v for (ki, _), v in b.totals.items() if ki == kind.index)
            cp.add(placed_var == opened[node])
        counts = {t.name: cp.new_int_var(0, caps[t.name], f"new_nodes[{t.name}]") for t in node_types}
        for t in node_types:
            cp.add(counts[t.name] == sum(count_terms[t.name]))
        ints, scale = scale_to_int([t.cost for t in node_types])
        check_cost_range(node_types, ints, caps)
        cost_expr = sum(c * counts[t.name] for c, t in zip(ints, node_types))
        placed_expr = sum(weight(prio) * v for (ki, (prio, _)), v in b.totals.items() if ki not in daemon_kinds) + sum(
            weight(workload.pod(p).priority) * v for p, v in b.placed.items() if p not in daemon_of
        )
        pods_expr = sum(v for (ki, _), v in b.totals.items() if ki not in daemon_kinds) + sum(
            v for p, v in b.placed.items() if p not in daemon_of
        )
        placed_count = cp.new_int_var(0, len(real), "placed_pods")
        cp.add(placed_count == pods_expr)
        cheap = sum(weight(d.priority) for d in real if prep.pod_nodes.get(d.key))
        stats.update(variables=len(cp.proto.variables), constraints=len(cp.proto.constraints))
        # The estimate's placement as a solution of the model: the incumbent, and a bound on the cost.
        t2 = time.perf_counter()
        ff_by_pod = {}
        for d in workload.pending:
            pl = best_ffd.placement.get(d.key)
            keep = (
                pl is not None
                and pl.placed
                and pl.node in cluster.by_name
                and (d.key not in daemon_of or daemon_of[d.key] in best_ffd.used)
            )
            ff_by_pod[d.key] = pl if keep else PodPlacement(d.key, None, d.priority, d.group)
        hint = _first_fit_hint(b, prep, book, ff_by_pod)
        for name, lit in opened.items():
            hint[lit] = int(name in best_ffd.used)
        with_pods = {pl.node for pl in ff_by_pod.values() if pl.placed}
        for nc, segs in segments:
            for name, v in segs:
                hint[v] = sum(1 for n in nc.nodes if type_of.get(n.name) == name and n.name in with_pods)
        # Generous wall time: a completion cut short by a busy machine would change the answer.
        with progress.current().task("plan: the estimate as the warm start"):
            full = _complete_hint(
                cp, hint, max(10.0, 0.1 * time_limit), time.perf_counter() + max(10.0, 0.2 * time_limit)
            )
        stats["hint_s"] = round(time.perf_counter() - t2, 3)
        stats["ffd_in_model"] = full is not None
        floor = 0
        incumbent = None  # the best solution known: proto variable index -> value
        if full is not None:
            floor = sum(weight(ff_by_pod[d.key].priority) for d in real if ff_by_pod[d.key].placed)
            hint_cost = sum(c * full[counts[t.name]] for c, t in zip(ints, node_types))
            cp.add(placed_expr >= floor)
            for var, value in full.items():
                cp.add_hint(var, value)
            incumbent = ffd_solution = {var.index: value for var, value in full.items()}
        # Phase 1: the most pods (priority-weighted).
        t3 = time.perf_counter()
        if full is not None and floor >= cheap:
            best_placed, placed_proven = floor, True
            stats["placed_proof"] = "the estimate places every pod that has a feasible node"
        else:
            cp.maximize(placed_expr)
            solver = _solver(0.4 * time_limit)
            with progress.current().task("plan: phase 1 of 2, most pods placed (priority-weighted)") as shown:
                status = solver.solve(cp, progress.solver_callback(solver, shown))
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                best_placed = round(solver.objective_value)
                # Proven for any number of nodes when every pod with a node is placed, or when the
                # candidates are as many as the pods that fit each type.
                placed_proven = best_placed >= cheap or (
                    status == cp_model.OPTIMAL and all(caps[t.name] >= fits[t.name] for t in node_types)
                )
                solution = solver.response_proto.solution
                incumbent = dict(enumerate(solution))
                cp.clear_hints()
                for i in range(len(solution)):
                    cp.add_hint(cp.get_int_var_from_proto_index(i), solution[i])
            elif incumbent is not None:  # nothing better than the estimate's placement in time
                best_placed, placed_proven = floor, False
            else:
                raise InputError(
                    f"--time-limit {time_limit:g}: CP-SAT found no placement within the time limit "
                    f"({solver.status_name(status)}); give it more time"
                )
        stats["placed_s"] = round(time.perf_counter() - t3, 3)
        # Phase 2: the least cost with those pods placed.
        t4 = time.perf_counter()
        cp.add(placed_expr >= best_placed)
        if full is not None and best_placed <= floor:
            cp.add(cost_expr <= hint_cost)  # never dearer than the estimate (its placement is a solution)
        cp.minimize(cost_expr)
        solver = _solver(0.4 * time_limit)
        with progress.current().task("plan: phase 2 of 2, least cost (costs scaled to integers)") as shown:
            status = solver.solve(cp, progress.solver_callback(solver, shown))
        stats["cost_s"] = round(time.perf_counter() - t4, 3)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            incumbent = dict(enumerate(solver.response_proto.solution))
            bound = Fraction(math.ceil(solver.best_objective_bound - 1e-6)) * scale  # the objective is integral
        elif incumbent is None:
            raise RuntimeError(f"internal: the planning model lost its solution ({solver.status_name(status)})")
        else:  # no solution of the cost phase in time: the pods phase's (or the estimate's) stands
            if full is not None and best_placed <= floor:
                incumbent = ffd_solution
            bound = Fraction(0)
        mix = {t.name: incumbent[counts[t.name].index] for t in node_types}
        cost = sum(cost_of[t] * n for t, n in mix.items())
        placed = incumbent[placed_count.index]
        status_name = solver.status_name(status)
        # Proven minimal: the cost phase is proven, the pods phase too, and the candidates cover
        # every cheaper mix (n + 1 copies of a type would cost more than the mix found).
        short = [t.name for t in node_types if (caps[t.name] + 1) * t.cost <= cost and caps[t.name] < fits[t.name]]
        reasons = []
        if status != cp_model.OPTIMAL:
            reasons.append(f"CP-SAT stopped at the time limit ({status_name})")
        if not placed_proven:
            reasons.append("that no mix places more pods was not proven")
        if short:
            reasons.append(f"the candidate copies of {', '.join(short)} may be too few (--max-nodes {max_nodes})")
            # CP-SAT's bound holds for mixes within the candidates; one beyond them costs at least
            # (candidates + 1) x cost of that type: the lower bound is the smaller of the two.
            bound = min([bound] + [(caps[name] + 1) * cost_of[name] for name in short])
        grow = {name: min(max_nodes, fits[name], int(cost // cost_of[name])) for name in short}
        if not placed_proven:  # as many candidates as pods that fit each type prove the pods phase
            for name in caps:
                grow[name] = max(grow.get(name, 0), min(max_nodes, fits[name]))
        if all(grow[name] <= caps[name] for name in grow):
            break
        caps.update({name: max(caps[name], grow[name]) for name in grow})
        stats["rounds"] = _round + 2
    t5 = time.perf_counter()
    with progress.current().task("plan: one-fewer checks"):
        checks = _one_fewer(cp, counts, mix, node_types, 0.2 * time_limit)
    stats["one_fewer_s"] = round(time.perf_counter() - t5, 3)
    stats["status"] = status_name
    stats["solve_s"] = round(time.perf_counter() - t0, 3)
    return MixPlan(
        node_types,
        mix,
        cost,
        status_name,
        bound,
        not reasons,
        "; ".join(reasons),
        len(real),
        placed,
        placed_proven,
        caps,
        ffd,
        checks,
        blocked,
        stats,
    )


from draopt.studies.sweep import sweep  # noqa: E402,F401  (moved to draopt.studies.sweep; kept importable from here)


COLUMNS_MIN_PODS = 1000  # from this many pending pods, plan by column generation where it applies


COLUMNS_SHARE = 0.6  # of --time-limit for the columns on large inputs (the rest: the estimates)


def _plan_by_columns(
    objects: ObjectSet,
    node_types: list[NodeType],
    features: Features,
    first,
    max_nodes: int,
    stats: dict,
    t0: float,
    time_limit: float,
) -> MixPlan | None:
    """The cheapest mix by column generation (draopt/model/colgen_plan.py): one copy of each type
    stands for all of them (copies are alike), so the model does not grow with the candidates.
    None where the reduction does not apply (gangs, DaemonSet pods of copies, pods not counted,
    prioritized lists): the CP-SAT placement model over candidate copies decides then."""
    import time

    from draopt.cluster.firstfit import ClaimBook
    from draopt.model.colgen_plan import CheapestMix
    from draopt.model.prepare import prepare_cluster

    built = time.perf_counter()
    objs, type_of, daemon_of = _with_types(objects, [(t, 1) for t in node_types])
    if daemon_of:
        stats["columns_not_used"] = "DaemonSet pods on the copies"
        return None
    by_cost = [t.name for t in sorted(node_types, key=lambda t: t.cost)]
    workload, cluster = _cluster_for(objs, features, type_of, by_cost)
    book = ClaimBook(cluster, workload.claims)
    prep = prepare_cluster(cluster, workload, book)
    kind_ids = [k.index for k in prep.kinds]
    names = {n.name for n in cluster.nodes}
    why = CheapestMix.accepts(prep, kind_ids, names, cluster)
    if why is not None:
        stats["columns_not_used"] = why
        return None
    real = list(workload.pending)
    cost_of = {t.name: t.cost for t in node_types}
    stats["build_s"] = round(time.perf_counter() - built, 3)
    sol = CheapestMix().apply(
        prep,
        cluster,
        workload,
        book,
        kind_ids,
        names,
        type_of,
        cost_of,
        deadline=max(time.perf_counter() + 1.0, t0 + COLUMNS_SHARE * time_limit),
    )
    stats.update(sol.stats)
    t1 = time.perf_counter()
    ffd = _estimates(objects, node_types, features, first, max_nodes, stats, t0 + 0.9 * time_limit)
    stats["ffd_s"] = round(time.perf_counter() - t1, 3)
    most = max(e.placed for e in ffd)
    best_ffd = min((e for e in ffd if e.placed == most and not e.skipped), key=lambda e: (e.cost, e.nodes))
    blocked = {}
    for d in real:
        if not prep.pod_nodes.get(d.key):
            pl = best_ffd.placement.get(d.key)
            blocked[d.key] = "; ".join(sorted(pl.reasons)) if pl is not None and pl.reasons else "no node takes it"
    mix = {t.name: 0 for t in node_types}
    mix.update(sol.mix())
    placed = (
        sum(1 for d in real if prep.pod_nodes.get(d.key))
        if sol.covered
        else sum(1 for pl in best_ffd.placement.values() if pl.placed)
    )
    cost, bound = sol.cost, sol.bound
    if not sol.covered or (best_ffd.placed >= placed and best_ffd.cost < cost):
        # The estimate is cheaper or the columns cover less: it is the answer (said so).
        mix = {t.name: (best_ffd.nodes if t.name == best_ffd.node_type.name else 0) for t in node_types}
        cost, placed = best_ffd.cost, best_ffd.placed
        stats["columns_kept_estimate"] = True
    # The bound is of mixes that place every pod with a node: it proves nothing of a mix that
    # places fewer (the estimate kept when the columns cover less).
    proven = sol.covered and placed == sum(1 for d in real if prep.pod_nodes.get(d.key)) and cost <= bound
    reasons = []
    if not sol.covered:
        reasons.append("the columns found in time do not place every pod")
    elif not proven:
        reasons.append(
            f"column generation: the cost is {float((cost - bound) / cost):.2%} above the bound of its configuration LP"
            if cost
            else "no bound"
        )
    if sol.stopped:
        reasons.append(sol.stopped)
    status = "OPTIMAL" if proven else "FEASIBLE"
    stats["status"] = status
    return MixPlan(
        node_types,
        mix,
        cost,
        status,
        bound,
        proven,
        "; ".join(reasons),
        len(real),
        placed,
        sol.covered,
        {t.name: 1 for t in node_types},
        ffd,
        [],
        blocked,
        stats,
    )
