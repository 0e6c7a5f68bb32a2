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

from dataclasses import dataclass, field
from fractions import Fraction
from collections.abc import Sequence
from typing import Any

from draopt import interrupt, progress
from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.kube.workload import expand
from draopt.studies.ffd_estimate import FfdEstimate, _cluster_for, _scheduled_first, _with_types
from draopt.studies.ffd_estimate import ffd_estimate as ffd_estimate
from draopt.studies.ffd_estimate import hash_node as hash_node
from draopt.studies.ffd_estimate import with_copies
from draopt.studies.plan_model import (
    OneFewer,
    PlanOptions,
    PlanStats,
    _Candidates,
    _candidates,
    _CostPhase,
    _least_cost,
    _mix_model,
    _more_candidates,
    _most_pods,
    _one_fewer,
    _warm_start,
)
from draopt.studies.node_types import (
    NodeType,
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
        if p.error:  # a filter error ends the attempt on the nodes there are; copies keep them
            out[p.pod] = p.error
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
            placements = out.result.pods
            result.tried[k] = (sum(p.placed for p in placements), len(placements))
            if k == 0:
                result.blocked = _blocked(placements)
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
    stats: PlanStats = field(default_factory=PlanStats)
    # draopt.studies.plan_check: first-fit on the cluster with the mix, and the rules the pods use
    # that the model does not encode (then not proven, and `placed` is first-fit's count).
    first_fit: Any = None  # plan_check.FirstFitCheck
    unencoded_rules: list[str] = field(default_factory=list)
    # What the autoscalers' own loops buy (draopt.studies.autoscalers.run_baselines), when asked.
    baselines: list[Any] = field(default_factory=list)

    @property
    def gap(self) -> float:
        return 0.0 if not self.cost else float((self.cost - self.bound) / self.cost)

    def __repr__(self) -> str:
        proof = "proven minimal" if self.proven_minimal else f"gap {progress.format_gap(self.gap)}"
        return (
            f"<MixPlan: {_mix_text(self.mix)}, cost {_fmt(self.cost)} ({proof}, {self.status}), "
            f"{self.placed} of {self.pods} pods placed, {len(self.node_types)} node types>"
        )

    FRAME_COLUMNS = (
        "node_type",
        "template",
        "cost_per_node",
        "candidates",
        "new_nodes",
        "ffd_nodes",
        "ffd_cost",
        "ffd_placed",
        "ffd_pods",
    )

    def _frame_rows(self) -> list[list[Any]]:
        by_type = {e.node_type.name: e for e in self.ffd}
        rows = []
        for t in self.node_types:
            e = by_type.get(t.name)
            estimated = e is not None and not e.skipped
            rows.append(
                [
                    t.name,
                    t.template,
                    _num(t.cost),
                    self.candidates.get(t.name, 0),
                    self.mix.get(t.name, 0),
                    e.nodes if e is not None and estimated else None,
                    _num(e.cost) if e is not None and estimated else None,
                    e.placed if e is not None and estimated else None,
                    e.pods if e is not None and estimated else None,
                ]
            )
        return rows

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per node type (FRAME_COLUMNS): its name and template Node,
        `cost_per_node`, `candidates` (copies in the model), `new_nodes` (the cheapest mix), and
        what first-fit-decreasing with that type alone buys: `ffd_nodes`, `ffd_cost`, `ffd_placed`
        of `ffd_pods` (None: not estimated, `stats.ffd_skipped_why` says why)."""
        from draopt.studies.frames import frame

        return frame(self.FRAME_COLUMNS, self._frame_rows())

    def _repr_html_(self) -> str:
        from draopt.studies.frames import html_table

        caption = (
            f"draopt plan: {_mix_text(self.mix)}, cost {_fmt(self.cost)}, {self.placed} of {self.pods} pods placed"
        )
        return html_table(caption, self.FRAME_COLUMNS, self._frame_rows())

    def ffd_best(self) -> FfdEstimate | None:
        """The cheapest single-type estimate among those made that place the most pods (None: none
        made: on a large input whose columns place every pod, when their share of the time ran out or
        a baseline gives the comparison)."""
        made = [e for e in self.ffd if not e.skipped]
        if not made:
            return None
        most = max(e.placed for e in made)
        return min((e for e in made if e.placed == most), key=lambda e: (e.cost, e.nodes))

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
        } | ({"baselines": {b.name: b.to_json() for b in self.baselines}} if self.baselines else {})

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
                    "-" if e.skipped else _fmt(e.cost),
                    "-" if e.skipped else f"{e.placed}/{e.pods}",
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
            out.append(
                f"not proven minimal: {self.why_not_proven}; lower bound {_fmt(self.bound)}, gap {progress.format_gap(self.gap)}"
            )
        if self.stats.incumbent:
            out.append(self.incumbent_line())
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
        if self.stats.ffd_skipped:
            out.append(
                f"first-fit-decreasing estimates not made for {self.stats.ffd_skipped} of {len(self.ffd)} "
                f"node type(s) ('-'): {self.stats.ffd_skipped_why or 'the time limit ran out'}"
            )
        out.extend(self._baseline_lines())
        if self.blocked:
            out.append(f"no node of any type (nor of the cluster) takes {len(self.blocked)} pod(s):")
            out.extend(f"  {pod}: {why}" for pod, why in sorted(self.blocked.items()))
        return "\n".join(out)

    def _baseline_lines(self) -> list[str]:
        """The autoscalers' loops beside the optimal mix, and what optimal saves against each."""
        if not self.baselines:
            return []
        from draopt.studies.autoscalers import savings

        out = []
        for b in self.baselines:
            out.append(
                f"{b.name}: {_mix_text(b.nodes)}, cost {_fmt(b.cost)}, places {b.placed} of {b.pods}"
                + (f" ({len(b.not_placed)} pod(s) no type holds)" if b.not_placed else "")
            )
        out.append(savings(self.cost, self.placed, self.baselines))
        return out

    def incumbent_line(self) -> str:
        """Which baseline the search started from, and whether its mix is the answer."""
        head = f"incumbent: {self.stats.incumbent}'s mix, the cheapest baseline that places every pod: "
        if self.stats.incumbent_kept:
            return head + "the search found none cheaper, so it is the answer"
        return head + "the search found a cheaper one"

    def _first_fit_lines(self) -> list[str]:
        ff = self.first_fit
        if ff is None:
            skipped = self.stats.first_fit_skipped
            return [f"not checked with first-fit: {skipped}"] if skipped else []
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


def _estimates(
    objects,
    node_types,
    features,
    first_of,
    max_nodes: int,
    stats: PlanStats,
    deadline: float | None,
    optional=False,
    first_guess: float = 0.0,
):
    """The first-fit-decreasing estimate of every type; past `deadline` (perf_counter) a type is
    not estimated (reported so). One estimate is not interrupted: the largest nodes go first
    (the fewest copies, the quickest estimates) when there is a deadline. The first is made
    whatever the time unless `optional` (the answer does not need one): then an estimate starts
    only when the last one's time (`first_guess` seconds for the first) still fits before the
    deadline. `first_of()`: what `_scheduled_first` gives (asked only when an estimate is made)."""
    import time

    order = list(node_types)
    if deadline is not None:
        order.sort(key=lambda t: -_capacity_of(objects, t))
    got: dict[str, FfdEstimate] = {}
    with progress.current().task(
        "plan: first-fit-decreasing estimates", total=len(node_types), unit="node types"
    ) as shown:
        last = first_guess
        for t in order:
            started = time.perf_counter()
            late = interrupt.requested() or (deadline is not None and started + (last if optional else 0.0) > deadline)
            if late and (got or optional):
                got[t.name] = _not_estimated(t, stats, "their share of --time-limit ran out")
            else:
                # An optional estimate stops at the deadline rather than grow (a needed one never stops).
                got[t.name] = ffd_estimate(
                    objects,
                    t,
                    features=features,
                    max_nodes=max_nodes,
                    scheduled_first=first_of(),
                    deadline=deadline if optional else None,
                )
                if got[t.name].skipped:
                    _not_estimated(t, stats, "their share of --time-limit ran out")
                last = time.perf_counter() - started
            shown.update_to(len(got))
    return [got[t.name] for t in node_types]


def _not_estimated(t: NodeType, stats: PlanStats, why: str) -> FfdEstimate:
    """A type not estimated, counted in `stats` with why (the table says so)."""
    stats.ffd_skipped = (stats.ffd_skipped or 0) + 1
    stats.ffd_skipped_why = why
    return FfdEstimate(t, 0, 0, stats.pending_pods or 0, skipped=True)


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
    incumbents: Sequence[Any] = (),
) -> MixPlan:
    """The cheapest mix of new nodes of `node_types` with which the most pending pods (every
    one, when any mix can) are placed, decided by the CP-SAT placement model; the first-fit-
    decreasing estimate of every type side by side; the one-fewer check of the mix; and the mix
    checked with first-fit, not proven (and repaired) where the pods use a rule the model does
    not encode (draopt.studies.plan_check).

    `incumbents`: mixes known to place the pods (the autoscalers' baselines,
    draopt.studies.autoscalers.AutoscalerBaseline, run on the same input): the column generation
    starts from the cheapest that places every pod (its nodes' contents are columns, its counts
    the incumbent of the integer counts, the other baselines' nodes columns too), and the answer
    is never dearer than a baseline that places as many pods: if the search ends dearer, that
    baseline's mix is the answer, said so (`stats.incumbent_kept`).

    `time_limit`: wall-clock seconds bounding the whole plan; when it runs out the best mix found
    so far is returned with its proven bound. What is deterministic: on inputs below
    COLUMNS_MIN_PODS pending pods CP-SAT runs one worker, seeded, with deterministic-time limits
    (shares of `time_limit`), so the same input gives the same answer whenever the wall clock does
    not stop a phase first; column generation (larger inputs) stops on the wall clock only, so its
    answer depends on the machine's speed when the limit is hit (its cost is the same when the
    columns converge and the integer counts are proven in time). At least one first-fit-decreasing
    estimate is made even past the limit (the fallback answer), unless the columns place every pod."""
    import time

    from draopt.studies.plan_check import check_plan

    t0 = time.perf_counter()
    opts = PlanOptions(features or Features.from_gates(), time_limit, max_nodes, t0 + time_limit, tuple(incumbents))
    out = _plan(objects, node_types, opts)
    _take_incumbent(out, opts.incumbents)
    # After Ctrl-C (draopt.interrupt) the check adds no node, and a Ctrl-C during it keeps the mix unchecked.
    deadline = time.perf_counter() if interrupt.requested() else t0 + time_limit
    with interrupt.refining(), progress.current().task("plan: the mix checked with first-fit"):
        check_plan(objects, out, opts.features, max_nodes=max_nodes, deadline=deadline)
    out.stats.solve_s = round(time.perf_counter() - t0, 3)
    return out


def _take_incumbent(out: MixPlan, incumbents: tuple[Any, ...]) -> None:
    """The cheapest incumbent that places every pending pod, when it is cheaper than the search's
    mix and places no fewer pods: its mix becomes the answer (not proven unless it meets the
    bound), and the plan says so."""
    whole = [b for b in incumbents if b.placed == b.pods == out.pods and b.placed >= out.placed]
    if not whole:
        return
    best = min(whole, key=lambda b: (b.cost, b.name))
    out.stats.incumbent = out.stats.incumbent or best.name
    if best.cost >= out.cost and out.placed == out.pods:
        out.stats.incumbent_kept = bool(out.stats.incumbent_kept)
        return
    why = (
        f"the search ended at {_fmt(out.cost)}, dearer than the incumbent {best.name}'s mix: that mix is the answer"
        if out.placed == out.pods
        else f"the search's mix places {out.placed} of {out.pods} pods, the incumbent {best.name}'s every one: "
        "that mix is the answer"
    )
    out.mix = {t.name: best.nodes.get(t.name, 0) for t in out.node_types}
    out.cost, out.placed, out.one_fewer = best.cost, best.placed, []
    out.proven_minimal = best.cost <= out.bound
    out.status = out.stats.status = "OPTIMAL" if out.proven_minimal else "FEASIBLE"
    out.why_not_proven = "; ".join([why] + ([out.why_not_proven] if out.why_not_proven else []))
    out.stats.incumbent, out.stats.incumbent_kept = best.name, True


def _plan(objects: ObjectSet, node_types: list[NodeType], opts: PlanOptions) -> MixPlan:
    """plan's model: the mix as the CP-SAT placement model (or column generation) decides it."""
    import time

    t0 = time.perf_counter()
    if opts.max_nodes < 1:
        raise InputError(f"--max-nodes: must be 1 or more, got {opts.max_nodes}")
    check_node_types(objects, node_types)
    stats = PlanStats()
    first = _FirstOnCluster(objects, opts.features)
    stats.pending_pods = len(expand(objects, opts.features).pending)
    if stats.pending_pods >= COLUMNS_MIN_PODS:
        # Large inputs: the columns first (their share of --time-limit, which bounds the whole
        # command here), then the estimates in the time left.
        by_columns = _plan_by_columns(objects, node_types, opts, first, stats, t0)
        if by_columns is not None:
            by_columns.stats.solve_s = round(time.perf_counter() - t0, 3)
            return by_columns
    ffd = _estimates(objects, node_types, opts.features, first.get, opts.max_nodes, stats, None)
    stats.ffd_s = round(time.perf_counter() - t0, 3)
    best_ffd = _cheapest_estimate(ffd)
    caps = _first_caps(node_types, ffd, best_ffd, opts.max_nodes)
    # From here the estimate is an answer: Ctrl-C on the command line stops the search and keeps
    # the best mix found (draopt.interrupt); before, it stops the plan with none.
    with interrupt.deferred():
        return _mix_by_model(objects, node_types, opts, ffd, best_ffd, caps, stats, t0)


def _mix_by_model(
    objects: ObjectSet,
    node_types: list[NodeType],
    opts: PlanOptions,
    ffd: list[FfdEstimate],
    best_ffd: FfdEstimate,
    caps: dict[str, int],
    stats: PlanStats,
    t0: float,
) -> MixPlan:
    """The cheapest mix by the CP-SAT placement model over candidate copies of each type (more
    candidates in a later round when the mix could use them); then the one-fewer checks."""
    import time

    # The model is built again with more candidates if the mix found could be beaten by a mix
    # with more copies of a type than there were candidates (at most a few rounds).
    for _round in range(4):
        t1 = time.perf_counter()
        cand = _candidates(objects, node_types, caps, opts.features, best_ffd)
        if not cand.prep.kinds:
            nothing = _CostPhase({t.name: 0 for t in node_types}, Fraction(0), 0, "OPTIMAL", Fraction(0), [], [], True)
            return _mix_plan(node_types, nothing, len(cand.real), True, caps, ffd, cand.blocked, stats)
        model = _mix_model(cand, node_types, caps, best_ffd, stats, _round, t1)
        warm = _warm_start(model, cand, best_ffd, opts.time_limit, stats)
        try:
            pods_phase = _most_pods(model, warm, cand, node_types, caps, opts.time_limit, stats, opts.deadline)
        except InputError:
            if not interrupt.requested():
                raise
            return _estimate_answer(node_types, best_ffd, cand, caps, ffd, stats)  # Ctrl-C before any mix
        answer = _least_cost(model, warm, pods_phase, node_types, opts, caps, cand.fits, stats)
        grow = _more_candidates(answer, pods_phase, node_types, caps, cand.fits, opts.max_nodes)
        if interrupt.requested() or all(grow[name] <= caps[name] for name in grow):
            break
        caps.update({name: max(caps[name], grow[name]) for name in grow})
        stats.rounds = _round + 2
    t5 = time.perf_counter()
    checks = []
    if not interrupt.requested():  # (after Ctrl-C: the mix as it stands, unchecked)
        with progress.current().task("plan: one-fewer checks"):
            checks = _one_fewer(model.cp, model.counts, answer.mix, node_types, 0.2 * opts.time_limit, opts.deadline)
    stats.one_fewer_s = round(time.perf_counter() - t5, 3)
    stats.status = answer.status_name
    stats.solve_s = round(time.perf_counter() - t0, 3)
    return _mix_plan(
        node_types, answer, len(cand.real), pods_phase.placed_proven, caps, ffd, cand.blocked, stats, checks
    )


def _mix_plan(
    node_types: list[NodeType],
    answer: _CostPhase,
    pods: int,
    placed_proven: bool,
    candidates: dict[str, int],
    ffd: list[FfdEstimate],
    blocked: dict[str, str],
    stats: PlanStats,
    one_fewer: list[OneFewer] | None = None,
) -> MixPlan:
    """The plan of a cost phase's answer (the model's, or the columns')."""
    return MixPlan(
        node_types,
        answer.mix,
        answer.cost,
        answer.status_name,
        answer.bound,
        answer.proven_minimal,
        "; ".join(answer.reasons),
        pods,
        answer.placed,
        placed_proven,
        candidates,
        ffd,
        one_fewer or [],
        blocked,
        stats,
    )


def _estimate_answer(node_types, best_ffd: FfdEstimate, cand, caps, ffd, stats: PlanStats) -> MixPlan:
    """The cheapest estimate as the answer, when Ctrl-C came before the model had a mix."""
    mix = {t.name: (best_ffd.nodes if t.name == best_ffd.node_type.name else 0) for t in node_types}
    why = "interrupted (Ctrl-C) before the model found a mix: the cheapest estimate's"
    stats.status = "UNKNOWN"
    return MixPlan(
        node_types,
        mix,
        best_ffd.cost,
        "UNKNOWN",
        Fraction(0),
        False,
        why,
        len(cand.real),
        best_ffd.placed,
        False,
        caps,
        ffd,
        [],
        cand.blocked,
        stats,
    )


class _FirstOnCluster:
    """`_scheduled_first` (the kube-scheduler on the input's cluster: its scan of every pending pod
    over the nodes grows with pods x nodes), made when an estimate first needs it: large inputs
    whose columns place every pod may need none."""

    def __init__(self, objects: ObjectSet, features: Features):
        self.objects, self.features = objects, features
        self.value: Any = None

    def get(self):
        if self.value is None:
            self.value = _scheduled_first(self.objects, self.features)
        return self.value


def _cheapest_estimate(ffd: list[FfdEstimate]) -> FfdEstimate:
    """The cheapest estimate among those that place the most pods."""
    most = max(e.placed for e in ffd)
    return min((e for e in ffd if e.placed == most), key=lambda e: (e.cost, e.nodes))


def _first_caps(node_types: list[NodeType], ffd: list[FfdEstimate], best_ffd: FfdEstimate, max_nodes: int):
    """Candidates per type: enough for every mix no dearer than the best estimate (a mix with
    more than ub / cost nodes of a type costs more), at least the type's own estimate, one at least.
    A cost-optimal mix opens no node without a pod either, so no more copies than pods that fit one
    (the estimate's count of placed pods, checked against the model's own candidacy below)."""
    ub = best_ffd.cost
    return {
        t.name: max(1, min(max_nodes, max(e.nodes, min(int(ub // t.cost), e.placed)))) for t, e in zip(node_types, ffd)
    }


from draopt.studies.sweep import sweep  # noqa: E402,F401  (moved to draopt.studies.sweep; kept importable from here)


COLUMNS_MIN_PODS = 1000  # from this many pending pods, plan by column generation where it applies


# Of --time-limit for the columns on large inputs (the rest: the estimates, which the answer
# needs only when the columns do not place every pod).
COLUMNS_SHARE = 0.8
ESTIMATES_UNTIL = 0.9  # of --time-limit: the estimates after the columns start no later
# Of --time-limit for the estimates when the columns place every pod (they are for the table only:
# on openb they took 280-515 s of a 600 s limit with a whole share).
ESTIMATES_SHARE = 0.05
ESTIMATE_GUESS = 3.0  # the first optional estimate's time guess, in one-copy-each build times
# Of --time-limit, kept after the columns when they place every pod: the answer's decoding and
# output (the first-fit check is skipped on the columns' path); at 80,000 pods the command ended
# 6-10 s after the plan (17 s at 570).
PLAN_MARGIN = 0.03


def _plan_by_columns(
    objects: ObjectSet, node_types: list[NodeType], opts: PlanOptions, first, stats: PlanStats, t0: float
) -> MixPlan | None:
    """The cheapest mix by column generation (draopt/model/colgen_plan.py): one copy of each type
    stands for all of them (copies are alike), so the model does not grow with the candidates.
    None where the reduction does not apply (gangs, DaemonSet pods of copies, pods not counted,
    prioritized lists): the CP-SAT placement model over candidate copies decides then."""
    import time

    built = time.perf_counter()
    cand = _one_copy_each(objects, node_types, opts.features, stats)
    if cand is None:
        return None
    real = list(cand.workload.pending)
    stats.build_s = round(time.perf_counter() - built, 3)
    whole = _whole_incumbents(opts.incumbents, len(real))
    with interrupt.deferred():  # Ctrl-C: the columns and integer counts found so far (draopt.interrupt)
        sol = _columns(
            cand,
            node_types,
            deadline=max(time.perf_counter() + 1.0, t0 + COLUMNS_SHARE * opts.time_limit),
            covered_deadline=_covered_deadline(opts, stats, bool(whole), t0),
            incumbents=whole,
            stats=stats,
        )
    stats.columns.update(sol.stats)
    t1 = time.perf_counter()
    ffd = _table_estimates(objects, node_types, opts, first, stats, sol.covered, bool(whole), t0)
    stats.ffd_s = round(time.perf_counter() - t1, 3)
    made = [e for e in ffd if not e.skipped]
    most = max((e.placed for e in made), default=0)
    best_ffd = min((e for e in made if e.placed == most), key=lambda e: (e.cost, e.nodes), default=None)
    blocked = {}
    for d in real:
        if not cand.prep.pod_nodes.get(d.key):
            pl = best_ffd.placement.get(d.key) if best_ffd is not None else None
            blocked[d.key] = (
                "; ".join(sorted(pl.reasons)) if pl is not None and pl.reasons else "no node of any type takes it"
            )
    answer = _columns_answer(sol, best_ffd, real, cand.prep, node_types, stats)
    stats.status = answer.status_name
    return _mix_plan(node_types, answer, len(real), sol.covered, {t.name: 1 for t in node_types}, ffd, blocked, stats)


def _covered_deadline(opts: PlanOptions, stats: PlanStats, baselines: bool, t0: float) -> float:
    """The columns' deadline (perf_counter) when they place every pod: the estimates after them
    are then for the table only, and get their share only where one can start (no baseline gives
    the comparison, and the first estimate's guess fits the share; at 80,000 pods it did not, and
    the plan ended at COLUMNS_SHARE of the limit with the rest unused). The rest of --time-limit,
    less PLAN_MARGIN, goes to the columns (colgen_plan.CheapestMix.apply gives it to the
    generation; the integer counts keep their time)."""
    share = ESTIMATES_SHARE * opts.time_limit
    starts = not baselines and ESTIMATE_GUESS * (stats.build_s or 0.0) <= share
    return t0 + (1.0 - PLAN_MARGIN) * opts.time_limit - (share if starts else 0.0)


def _table_estimates(
    objects, node_types: list[NodeType], opts: PlanOptions, first, stats: PlanStats, covered: bool, baselines: bool, t0
) -> list[FfdEstimate]:
    """The estimates after the columns. When the columns place every pod the answer needs none:
    none is made where a baseline that places every pod gives the table its comparison, else they
    get ESTIMATES_SHARE of --time-limit (never past ESTIMATES_UNTIL of it), each started only
    when the last one's time still fits and stopped rather than grown past it."""
    import time

    if covered and baselines:
        return [_not_estimated(t, stats, "the baselines give the comparison") for t in node_types]
    now = time.perf_counter()
    until = t0 + ESTIMATES_UNTIL * opts.time_limit
    return _estimates(
        objects,
        node_types,
        opts.features,
        first.get,
        opts.max_nodes,
        stats,
        min(until, now + ESTIMATES_SHARE * opts.time_limit) if covered else until,
        optional=covered,
        # Building the one-copy-each cluster is a pass over every pod; an estimate simulates every
        # pod over many copies: at 80,000 pods it took 1.5-3 times the build (145 s, 47 s past the
        # limit, with the build's time as its guess).
        first_guess=ESTIMATE_GUESS * (stats.build_s or 0.0),
    )


def _one_copy_each(objects, node_types: list[NodeType], features, stats: PlanStats) -> _Candidates | None:
    """The input with one copy of each type, prepared; None (said in `stats`) where the columns
    do not apply."""
    from draopt.cluster.firstfit import ClaimBook
    from draopt.model.colgen_plan import CheapestMix
    from draopt.model.prepare import prepare_cluster

    objs, type_of, daemon_of = _with_types(objects, [(t, 1) for t in node_types])
    if daemon_of:
        stats.columns_not_used = "DaemonSet pods on the copies"
        return None
    by_cost = [t.name for t in sorted(node_types, key=lambda t: t.cost)]
    workload, cluster = _cluster_for(objs, features, type_of, by_cost)
    book = ClaimBook(cluster, workload.claims)
    prep = prepare_cluster(cluster, workload, book)
    why = CheapestMix.accepts(prep, [k.index for k in prep.kinds], {n.name for n in cluster.nodes}, cluster)
    if why is not None:
        stats.columns_not_used = why
        return None
    return _Candidates(workload, cluster, book, prep, type_of, daemon_of, list(workload.pending), {}, {})


def _whole_incumbents(incumbents: tuple[Any, ...], pods: int) -> list[Any]:
    """The incumbents that place every one of the `pods` pending pods and say where (cheapest first)."""
    return sorted(
        (b for b in incumbents if b.placed == b.pods == pods and getattr(b, "placement", None)),
        key=lambda b: (b.cost, b.name),
    )


def _columns(
    cand: _Candidates,
    node_types: list[NodeType],
    *,
    deadline: float,
    covered_deadline: float | None = None,
    incumbents: Sequence[Any] = (),
    stats: PlanStats | None = None,
):
    """The column generation's answer (colgen_plan.CheapestMix.apply), warm-started from the
    incumbents' placements (the first counted: the integer counts' incumbent); `deadline`, or
    `covered_deadline` when the columns cover every kind (see CheapestMix.apply)."""
    from draopt.model.colgen_plan import CheapestMix

    copy_of: dict[str, str] = {}
    for node, t in sorted(cand.type_of.items()):
        copy_of.setdefault(t, node)
    # A baseline's new node stands for the one copy of its type (copies are alike).
    alias = {n: copy_of[t] for b in incumbents for n, t in b.bought.items() if t in copy_of}
    sol = CheapestMix().apply(
        cand.prep,
        cand.cluster,
        cand.workload,
        cand.book,
        [k.index for k in cand.prep.kinds],
        {n.name for n in cand.cluster.nodes},
        cand.type_of,
        {t.name: t.cost for t in node_types},
        deadline=deadline,
        covered_deadline=covered_deadline,
        warm=incumbents[0].placement if incumbents else None,
        alias=alias,
        more_warm=tuple(b.placement for b in incumbents[1:]),
    )
    if incumbents and stats is not None:
        stats.incumbent = incumbents[0].name
        stats.incumbent_kept = sol.stats.get("colgen_integer_status") == "WARM"
    return sol


def _columns_answer(
    sol, best_ffd: FfdEstimate | None, real, prep, node_types: list[NodeType], stats: PlanStats
) -> _CostPhase:
    """The mix of the columns, or the estimate's when it is cheaper or the columns cover less
    (there is an estimate whenever the columns cover less: see _estimates' `optional`)."""
    mix = {t.name: 0 for t in node_types}
    mix.update(sol.mix())
    if sol.covered:
        placed = sum(1 for d in real if prep.pod_nodes.get(d.key))
    else:
        assert best_ffd is not None  # made whatever the time when the columns cover less
        placed = sum(1 for pl in best_ffd.placement.values() if pl.placed)
    cost, bound = sol.cost, sol.bound
    if best_ffd is not None and (not sol.covered or (best_ffd.placed >= placed and best_ffd.cost < cost)):
        # The estimate is cheaper or the columns cover less: it is the answer (said so).
        mix = {t.name: (best_ffd.nodes if t.name == best_ffd.node_type.name else 0) for t in node_types}
        cost, placed = best_ffd.cost, best_ffd.placed
        stats.columns_kept_estimate = True
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
    return _CostPhase(mix, cost, placed, "OPTIMAL" if proven else "FEASIBLE", bound, [], reasons, proven)
