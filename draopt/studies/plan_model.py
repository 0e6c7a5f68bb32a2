"""The CP-SAT model `draopt.studies.planning.plan` decides the mix with, step by step: the input
with candidate copies of every node type (`_candidates`), the placement model with the mix's
variables (`_mix_model`), the first-fit-decreasing estimate as the warm start (`_warm_start`), the
most pods (`_most_pods`), then the least cost (`_least_cost`), and the candidates the next round
needs (`_more_candidates`); the one-fewer checks of the answer (`_one_fewer`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

from draopt import interrupt
from draopt import progress
from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.studies.ffd_estimate import _cluster_for, _with_types
from draopt.studies.node_types import NodeType, check_cost_range


@dataclass
class OneFewer:
    removed: str  # node type one node fewer of
    mix: dict[str, int]
    verdict: str  # "infeasible (proven)", "feasible", "not proven (time limit)"


@dataclass
class PlanStats:
    """How a plan was decided and what each step took (seconds, rounded to the millisecond). A
    field left None was not measured on this input (`to_dict` leaves it out)."""

    # the first-fit-decreasing estimates: their time, and the node types not estimated (past the deadline)
    ffd_s: float | None = None
    ffd_skipped: int | None = None
    ffd_skipped_why: str | None = None  # why those types were not estimated (the table says it)
    pending_pods: int | None = None  # pending pods of the input (expanded from their controllers)
    # large inputs (column generation): why the columns were not used, or that the estimate was kept
    columns_not_used: str | None = None
    columns_kept_estimate: bool | None = None
    # the cheapest incumbent (a baseline that places every pod) the search started from, and
    # whether its mix is the answer (the search found none cheaper)
    incumbent: str | None = None
    incumbent_kept: bool | None = None
    # the model: its build time, classes of interchangeable nodes, size, rounds (more candidates)
    build_s: float | None = None
    pattern_classes: int | None = None
    variables: int | None = None
    constraints: int | None = None
    rounds: int | None = None
    # the estimate as the warm start: its time, and whether it is a solution of the model
    hint_s: float | None = None
    ffd_in_model: bool | None = None
    # the phases: most pods (and why that is proven without a solve), least cost, one-fewer checks
    placed_proof: str | None = None
    placed_s: float | None = None
    cost_s: float | None = None
    one_fewer_s: float | None = None
    # the answer's status (after the first-fit check: the model's own in model_status), and the whole plan
    status: str | None = None
    solve_s: float | None = None
    # draopt.studies.plan_check: the first-fit check's time, the model's status and count, the mix repaired
    first_fit_check_s: float | None = None
    first_fit_skipped: str | None = None  # why the first-fit check was not run
    model_status: str | None = None
    model_placed: int | None = None
    repaired_from: dict[str, int] | None = None
    # column generation's own figures (colgen_*: draopt.model.colgen_plan), as it reports them
    columns: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The figures measured, one flat dict (`plan --stats`)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "columns"}
        return {k: v for k, v in out.items() if v is not None} | self.columns


@dataclass(frozen=True)
class PlanOptions:
    """What `plan` is asked, once for every step of it."""

    features: Features  # the feature gates the rules follow
    time_limit: float = 60.0  # wall-clock seconds: bounds the whole plan (each phase takes its share)
    max_nodes: int = 256  # candidate copies per node type, at most
    # perf_counter at which the time limit runs out (None: only the phases' own limits)
    deadline: float | None = None
    # mixes already known to place the pending pods (the autoscalers' baselines, AutoscalerBaseline):
    # the cheapest that places as many pods is the plan's incumbent, its nodes' contents columns
    incumbents: tuple[Any, ...] = ()


def _solver(seconds: float, deadline: float | None = None):
    import time

    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    # Same input, same answer: one worker and deterministic time; the wall clock only as a
    # generous hard stop, and the command's deadline (--time-limit bounds the whole plan): a
    # solve it cuts short may answer otherwise from run to run. Measured (benchmarks/bench_plan.py,
    # mixed, 200 pods): the cost phase proves in 0.01 s with one worker, 3.9 s with two
    # interleaved, 7.4 s with four.
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = seconds
    wall = max(0.1, 3 * seconds + 1)
    if deadline is not None:
        wall = min(wall, max(0.1, deadline - time.perf_counter()))
    solver.parameters.max_time_in_seconds = wall
    return solver


def _one_fewer(
    cp, counts: dict, mix: dict[str, int], node_types: list[NodeType], seconds: float, deadline: float | None = None
) -> list[OneFewer]:
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
        status = interrupt.watch(_solver(seconds / len(used_types), deadline)).solve(c)
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
    in_class: set[str] = set()
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


@dataclass
class _Candidates:
    """One round's cluster: the input with the candidate copies of every type, prepared."""

    workload: Any  # draopt.kube.workload.Workload
    cluster: Any  # draopt.cluster.state.Cluster
    book: Any  # draopt.cluster.firstfit.ClaimBook
    prep: Any  # draopt.model.prepare's prepared cluster
    type_of: dict[str, str]  # copy -> its node type
    daemon_of: dict[str, str]  # DaemonSet pod of a copy -> the copy
    real: list[Any]  # the pending pods to place (not the copies' DaemonSet pods)
    fits: dict[str, int]  # type -> pods a copy of it may take
    blocked: dict[str, str]  # pod -> why no node takes it


def _candidates(objects, node_types: list[NodeType], caps: dict[str, int], features, best_ffd) -> _Candidates:
    from draopt.cluster.firstfit import ClaimBook
    from draopt.model.prepare import prepare_cluster

    by_cost = [t.name for t in sorted(node_types, key=lambda t: t.cost)]  # stable: ties keep the given order
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
    return _Candidates(workload, cluster, book, prep, type_of, daemon_of, real, fits, blocked)


@dataclass
class _MixModel:
    """The CP-SAT placement model over the candidates, with the mix's variables and objectives."""

    b: Any  # draopt.model.placement's built model
    cp: Any  # its cp_model.CpModel
    counts: dict[str, Any]  # type -> new nodes of it (int var)
    opened: dict[str, Any]  # copy outside a class -> its opened literal
    segments: list  # (class, [(type name or None, opened count)])
    daemon_kinds: set[int]  # kinds of the copies' DaemonSet pods
    ints: list[int]  # the costs scaled to integers
    scale: Fraction  # ... by this unit
    cost_expr: Any
    placed_expr: Any  # pods placed, priority-weighted
    placed_count: Any  # pods placed (int var)
    cheap: int  # the weight of every pod that has a feasible node


def _mix_model(cand: _Candidates, node_types, caps, best_ffd, stats: PlanStats, _round: int, t1: float) -> _MixModel:
    import time

    from draopt.cluster.result import weight
    from draopt.model.encodings.base import scale_to_int
    from draopt.model.placement import build

    prep, cluster, workload, daemon_of = cand.prep, cand.cluster, cand.workload, cand.daemon_of
    with progress.current().task(
        f"plan: building the model (round {_round + 1}, {sum(caps.values())} candidate nodes)"
    ):
        b = build(
            prep,
            cluster,
            workload,
            cand.book,
            [k.index for k in prep.kinds],
            {n.name for n in cluster.nodes},
            pattern_seconds=5.0,
        )  # not scaled down: the model must not depend on the wall clock
    cp = b.model.cp
    stats.build_s = round(time.perf_counter() - t1, 3)
    stats.pattern_classes = len(b.node_classes)
    count_terms, opened, segments, in_class = _open_new_nodes(
        cp, b, cluster, cand.type_of, node_types, caps, best_ffd.used
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
    placed_count = cp.new_int_var(0, len(cand.real), "placed_pods")
    cp.add(placed_count == pods_expr)
    cheap = sum(weight(d.priority) for d in cand.real if prep.pod_nodes.get(d.key))
    stats.variables, stats.constraints = len(cp.proto.variables), len(cp.proto.constraints)
    return _MixModel(
        b, cp, counts, opened, segments, daemon_kinds, ints, scale, cost_expr, placed_expr, placed_count, cheap
    )


@dataclass
class _WarmStart:
    """The estimate's placement as a solution of the model (when it is one)."""

    full: dict | None  # var -> value of the completed hint; None: not a solution
    floor: int = 0  # its placed pods, priority-weighted
    hint_cost: Any = None  # its cost (scaled)
    solution: dict[int, int] | None = None  # the same solution: proto variable index -> value


def _warm_start(model: _MixModel, cand: _Candidates, best_ffd, time_limit: float, stats: PlanStats) -> _WarmStart:
    """The estimate's placement as a solution of the model: the incumbent, and a bound on the cost."""
    import time

    from draopt.cluster.result import PodPlacement, weight
    from draopt.placement.optimal import _complete_hint, _first_fit_hint

    cp, cluster, daemon_of = model.cp, cand.cluster, cand.daemon_of
    t2 = time.perf_counter()
    ff_by_pod = {}
    for d in cand.workload.pending:
        pl = best_ffd.placement.get(d.key)
        keep = (
            pl is not None
            and pl.placed
            and pl.node in cluster.by_name
            and (d.key not in daemon_of or daemon_of[d.key] in best_ffd.used)
        )
        ff_by_pod[d.key] = pl if keep else PodPlacement(d.key, None, d.priority, d.group)
    hint = _first_fit_hint(model.b, cand.prep, cand.book, ff_by_pod)
    for name, lit in model.opened.items():
        hint[lit] = int(name in best_ffd.used)
    with_pods = {pl.node for pl in ff_by_pod.values() if pl.placed}
    for nc, segs in model.segments:
        for name, v in segs:
            hint[v] = sum(1 for n in nc.nodes if cand.type_of.get(n.name) == name and n.name in with_pods)
    # Generous wall time: a completion cut short by a busy machine would change the answer.
    with progress.current().task("plan: the estimate as the warm start"):
        full = _complete_hint(cp, hint, max(10.0, 0.1 * time_limit), time.perf_counter() + max(10.0, 0.2 * time_limit))
    stats.hint_s = round(time.perf_counter() - t2, 3)
    stats.ffd_in_model = full is not None
    warm = _WarmStart(full)
    if full is not None:
        warm.floor = sum(weight(ff_by_pod[d.key].priority) for d in cand.real if ff_by_pod[d.key].placed)
        warm.hint_cost = sum(c * full[v] for c, v in zip(model.ints, model.counts.values()))
        cp.add(model.placed_expr >= warm.floor)
        for var, value in full.items():
            cp.add_hint(var, value)
        warm.solution = {var.index: value for var, value in full.items()}
    return warm


@dataclass
class _PodsPhase:
    """Phase 1's answer: the most pods placed (priority-weighted)."""

    best_placed: int
    placed_proven: bool  # no mix of these types places more (proven)
    incumbent: dict[int, int] | None  # the best solution known: proto variable index -> value


def _most_pods(
    model: _MixModel, warm: _WarmStart, cand: _Candidates, node_types, caps, time_limit, stats, deadline=None
) -> _PodsPhase:
    """Phase 1: the most pods (priority-weighted)."""
    import time

    from ortools.sat.python import cp_model

    cp = model.cp
    incumbent = warm.solution
    t3 = time.perf_counter()
    if warm.full is not None and warm.floor >= model.cheap:
        best_placed, placed_proven = warm.floor, True
        stats.placed_proof = "the estimate places every pod that has a feasible node"
    else:
        cp.maximize(model.placed_expr)
        solver = _solver(0.4 * time_limit, deadline)
        with progress.current().task("plan: phase 1 of 2, most pods placed (priority-weighted)") as shown:
            status = interrupt.watch(solver).solve(cp, progress.solver_callback(solver, shown))
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            best_placed = round(solver.objective_value)
            # Proven for any number of nodes when every pod with a node is placed, or when the
            # candidates are as many as the pods that fit each type.
            placed_proven = best_placed >= model.cheap or (
                status == cp_model.OPTIMAL and all(caps[t.name] >= cand.fits[t.name] for t in node_types)
            )
            solution = solver.response_proto.solution
            incumbent = dict(enumerate(solution))
            cp.clear_hints()
            for i in range(len(solution)):
                cp.add_hint(cp.get_int_var_from_proto_index(i), solution[i])
        elif incumbent is not None:  # nothing better than the estimate's placement in time
            best_placed, placed_proven = warm.floor, False
        else:
            raise InputError(
                f"--time-limit {time_limit:g}: CP-SAT found no placement within the time limit "
                f"({solver.status_name(status)}); give it more time"
            )
    stats.placed_s = round(time.perf_counter() - t3, 3)
    return _PodsPhase(best_placed, placed_proven, incumbent)


@dataclass
class _CostPhase:
    """Phase 2's answer, and what it proves."""

    mix: dict[str, int]  # type -> new nodes
    cost: Fraction
    placed: int
    status_name: str
    bound: Fraction  # proven lower bound on the cost
    short: list[str]  # types whose candidates may be too few
    reasons: list[str]  # why the mix is not proven minimal
    proven_minimal: bool


def _least_cost(
    model: _MixModel, warm: _WarmStart, pods: _PodsPhase, node_types, opts: PlanOptions, caps, fits, stats
) -> _CostPhase:
    """Phase 2: the least cost with those pods placed."""
    import time

    from ortools.sat.python import cp_model

    cp = model.cp
    incumbent = pods.incumbent
    t4 = time.perf_counter()
    cp.add(model.placed_expr >= pods.best_placed)
    if warm.full is not None and pods.best_placed <= warm.floor:
        cp.add(model.cost_expr <= warm.hint_cost)  # never dearer than the estimate (its placement is a solution)
    cp.minimize(model.cost_expr)
    solver = _solver(0.4 * opts.time_limit, opts.deadline)
    with progress.current().task("plan: phase 2 of 2, least cost (costs scaled to integers)") as shown:
        status = interrupt.watch(solver).solve(cp, progress.solver_callback(solver, shown))
    stats.cost_s = round(time.perf_counter() - t4, 3)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        incumbent = dict(enumerate(solver.response_proto.solution))
        bound = Fraction(math.ceil(solver.best_objective_bound - 1e-6)) * model.scale  # the objective is integral
    elif incumbent is None:
        raise RuntimeError(f"internal: the planning model lost its solution ({solver.status_name(status)})")
    else:  # no solution of the cost phase in time: the pods phase's (or the estimate's) stands
        if warm.full is not None and pods.best_placed <= warm.floor:
            incumbent = warm.solution
        bound = Fraction(0)
    assert incumbent is not None  # the cost phase's, the pods phase's or the estimate's
    cost_of = {t.name: t.cost for t in node_types}
    mix = {t.name: incumbent[model.counts[t.name].index] for t in node_types}
    cost = sum(cost_of[t] * n for t, n in mix.items())
    placed = incumbent[model.placed_count.index]
    status_name = solver.status_name(status)
    # Proven minimal: the cost phase is proven, the pods phase too, and the candidates cover
    # every cheaper mix (n + 1 copies of a type would cost more than the mix found).
    short = [t.name for t in node_types if (caps[t.name] + 1) * t.cost <= cost and caps[t.name] < fits[t.name]]
    reasons = []
    if status != cp_model.OPTIMAL:
        stopped = "by Ctrl-C" if interrupt.requested() else "at the time limit"
        reasons.append(f"CP-SAT stopped {stopped} ({status_name})")
    if not pods.placed_proven:
        reasons.append("that no mix places more pods was not proven")
    if short:
        reasons.append(f"the candidate copies of {', '.join(short)} may be too few (--max-nodes {opts.max_nodes})")
        # CP-SAT's bound holds for mixes within the candidates; one beyond them costs at least
        # (candidates + 1) x cost of that type: the lower bound is the smaller of the two.
        bound = min([bound] + [(caps[name] + 1) * cost_of[name] for name in short])
    return _CostPhase(mix, cost, placed, status_name, bound, short, reasons, not reasons)


def _more_candidates(answer: _CostPhase, pods: _PodsPhase, node_types, caps, fits, max_nodes: int) -> dict[str, int]:
    """The candidates per type a mix that beats this round's may need (this round decides when
    none is past `caps`)."""
    cost_of = {t.name: t.cost for t in node_types}
    grow = {name: min(max_nodes, fits[name], int(answer.cost // cost_of[name])) for name in answer.short}
    if not pods.placed_proven:  # as many candidates as pods that fit each type prove the pods phase
        for name in caps:
            grow[name] = max(grow.get(name, 0), min(max_nodes, fits[name]))
    return grow
