"""Column generation over interchangeable nodes (a reduction of the one placement model).

Where every node of a part is in a class of interchangeable nodes (`patterns.node_classes`,
classes of one node allowed) and every pod is of a counted kind (`CountIdenticalPods`), the
part is a cutting-stock problem (Gilmore-Gomory): a *column* is a configuration (pods per kind
on one node of a class) that the one model accepts on the class's representative node; the
placement chooses how many nodes of each class take each configuration. `patterns.py`
enumerates every configuration, which stops at MAX_CHECKS; here they are generated:

* master (LP, GLOP): maximise the placed value (optimal.py's first objective: priority-weighted
  placed pods) over the columns found so far, s.t. columns per class <= its nodes and pods per
  kind <= its pods;
* pricing (exact CP-SAT): the one model on the representative (the same model, so the same DRA
  rules, as every other check), maximising the reduced value sum_k (w_k - pi_k) n_k under the
  LP's dual prices pi; a configuration whose reduced value beats the class's dual mu_j is a new
  column. Every round gives a valid bound, the Lagrangian (Farley) one:
  sum_k pi_k pods_k + sum_j nodes_j * max(mu_j, best reduced value of class j) (the pricing
  solver's proven upper bound, with the rounding of the prices to integers added), valid for
  any pi, mu >= 0 whether or not the generation has converged; at convergence it is the LP
  bound;
* integer placement: CP-SAT over configuration counts per class, warm-started from (and never
  below) the warm start's own configurations, which are columns from the start.

`invert` hands the chosen configurations out to the nodes of each class in node order and the
pods of each kind in queue order (then optimal.py's decoding deals their devices, as for
patterns.py). Columns from the warm start are checked on the representative only when used.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from ortools.sat.python import cp_model

from draopt import interrupt
from draopt import progress
from draopt.model.colgen_master import STALLED_PARAMS, MasterTimeUp, _Master
from draopt.model.colgen_pricing import DevicePricing
from draopt.model.colgen_stats import ColgenStats, PricingCounts
from draopt.model.colgen_substitution import realize, substitutions
from draopt.model.patterns import Configuration, NodeClass, OneNodeModel, node_classes
from draopt.model.placement import one_node_model
from draopt.cluster.result import weight
from draopt.cluster.state import pod_on

MAX_CLASSES = 64  # more classes: the per-node model is the better form
MIN_NODES = 200  # smaller parts: the one model (and patterns.py) proves them exactly
PRICE_SCALE = 10**6  # reduced values are scaled to integers up to about this
PRICE_FIRST_SECONDS = 1.0  # one pricing solve while columns come (deterministic seconds)
PRICE_SECONDS = 16.0  # at most, to prove that no column is left
SMOOTHING = 0.5  # Wentges: weight of the best bound's duals in the prices priced
FAST_COLUMNS = 4  # columns taken from one compact pricing solve (its best solutions)
INTEGER_GAP = 2e-4  # the integer placement stops this close to the bound (of all pods' value)
ROUNDING_SHARE = 0.2  # of the time left after the generation, for the LP's rounding
LP_TOLERANCE = 1e-4  # the generation stops when its bound is this close to the LP (of all pods' value)
MASTER_WORK = 20.0  # relax bounded by rounds: GLOP's deterministic time per master solve
# apply: GLOP's deterministic time for a master solve warm-started from the last basis (its
# solves take 0.05-0.2 at 2,000 columns); past it the solve has stalled and is made again from
# scratch by the dual simplex with perturbed costs (colgen_master.STALLED_PARAMS). The master is
# degenerate (hundreds of substitutions of zero value).
APPLY_MASTER_WORK = 5.0
LP_SHARE = 0.6  # of the time limit, for the generation (the rest: integer placement)
# Classes priced at once: CP-SAT releases the GIL and every class has its own models, so the
# columns are the ones pricing the classes one by one gives.
PRICING_THREADS = max(1, min(2, os.cpu_count() or 1))


@dataclass
class Column:
    cls: int  # index of its NodeClass
    counts: tuple[int, ...]  # pods per kind (in the class's kinds order)
    value: int  # placed value of one node with it
    conf: Configuration | None  # values on the representative (None: not checked yet)


@dataclass
class Solution:
    classes: list[NodeClass]
    columns: list[Column]
    counts: list[int]  # nodes taking each column
    objective: int
    bound: int  # proven upper bound of the placed value
    lp_bound: float | None  # the last restricted master's LP value
    converged: bool  # no column has a positive reduced value
    stopped: str = ""  # why the generation stopped early
    warm: str = ""  # why the warm start's placement is kept
    stats: ColgenStats = field(default_factory=lambda: ColgenStats())


class ColumnGeneration:
    """accepts(part) -> why not (None: accepted); apply(part) -> Solution; invert -> nodes."""

    @staticmethod
    def accepts(prep, kind_ids: list[int], node_names: set[str], cluster, workload) -> str | None:
        kinds = [prep.kinds[i] for i in kind_ids]
        for kind in kinds:
            if not kind.counted or kind.unit_size != 1:
                return "a kind is not counted"
            if any(p.group is not None for p in kind.pods):
                return "gangs"
            if len({p.priority for p in kind.pods}) > 1:
                return "a kind with several priorities"
            rep = kind.pods[0]
            if rep.extended_resources and any(pod_on(n, rep) is not rep for n in cluster.nodes):
                return "extended resources a device plugin serves on some node (requests differ by node)"
        seen: set[int] = set()
        for problem in prep.problems.values():  # problems are shared by nodes alike: each looked at once
            if id(problem) not in seen:
                seen.add(id(problem))
                if any(g.has_subrequests for cl in problem.claims for g in cl.requests):
                    return "prioritized lists (preferences are the model's second objective)"
        classes = node_classes(prep, kinds, node_names, cluster, min_size=1)
        if len(classes) > MAX_CLASSES:
            return f"more than {MAX_CLASSES} classes of interchangeable nodes"
        classed = {n.name for nc in classes for n in nc.nodes}
        for kind in kinds:
            if any(n.name in node_names and n.name not in classed for n in prep.pod_nodes.get(kind.pods[0].key, [])):
                return "a node that is not interchangeable with a class (shared devices, node-resource devices)"
        return None

    def apply(
        self,
        prep,
        cluster,
        workload,
        book,
        kind_ids: list[int],
        node_names: set[str],
        *,
        deadline: float,
        warm: dict[str, str | None] | None = None,
    ) -> Solution:
        """`warm`: pod key -> node of a valid placement (its configurations are the first
        columns and the integer floor). `deadline` (perf_counter) bounds everything."""
        t0 = time.perf_counter()
        part = _start(prep, cluster, workload, book, kind_ids, node_names)
        if warm:
            _add_warm(part, warm)
        gen, lp = _generated(
            part, t0 + (deadline - t0) * LP_SHARE, master_work=APPLY_MASTER_WORK, master_until_stop=True
        )
        gen_s = time.perf_counter() - t0
        ints = _integer_start(part)
        if gen.lp_value is not None and time.perf_counter() < deadline:
            _dive(part, lp, gen, ints, deadline)
        _place_integer(part, gen, ints, deadline)
        return _solution(part, gen, ints, t0, gen_s)

    @staticmethod
    def _realized(classes, columns, counts, moves, value, ones, deadline) -> list[int] | None:
        """Nodes per column once `moves` are made (colgen_substitution.realize); new columns are
        appended and checked by the one model; None if it rejects one (or cannot decide)."""
        used, complete = realize(classes, columns, counts, [0] * len(counts), moves)
        if not complete:
            return None
        index = {(c.cls, c.counts): i for i, c in enumerate(columns)}
        out = [0] * len(columns)
        for j, got, _, n in used:
            i = index.get((j, got))
            if i is None:
                i = index[(j, got)] = len(columns)
                columns.append(Column(j, got, sum(value[ki] * k for ki, k in zip(classes[j].kinds, got)), None))
                out.append(0)
            # A column met again may be one the placement did not use, not checked yet.
            if columns[i].conf is None and not _checked(columns[i], ones, deadline - time.perf_counter()):
                return None
            out[i] += n
        return out

    @staticmethod
    def invert(sol: Solution, prep, kind_ids: list[int]) -> tuple[dict[str, tuple], dict[int, list]]:
        """Node -> (class, configuration) for every node given one, and per kind the pods placed
        (queue order: a kind has one priority, so any of its pods is worth the same)."""
        assignment: dict[str, tuple] = {}
        placed: Counter = Counter()
        given: dict[int, int] = defaultdict(int)
        for col, n in zip(sol.columns, sol.counts):
            nc = sol.classes[col.cls]
            for _ in range(n):
                node = nc.nodes[given[col.cls]]
                given[col.cls] += 1
                assignment[node.name] = (nc, col.conf)
                for ki, c in zip(nc.kinds, col.counts):
                    placed[ki] += c
        chosen = {ki: prep.kinds[ki].pods[: placed[ki]] for ki in kind_ids}
        for ki in kind_ids:
            if placed[ki] > len(prep.kinds[ki].pods):
                raise RuntimeError(
                    f"internal: {placed[ki]} pods of kind {ki} placed, it has {len(prep.kinds[ki].pods)}"
                )
        return assignment, chosen


@dataclass
class Relaxation:
    """The configuration LP alone (`relax`): its columns, nodes per column, and dual prices."""

    classes: list[NodeClass]
    columns: list[Column]
    primal: list[float]  # nodes of its class taking each column, in the LP
    pi: dict[int, float]  # kind -> dual price of one of its pods
    mu: list[float]  # class -> dual price of one of its nodes
    lp_value: float
    bound: float  # the Lagrangian bound (the LP's value at convergence)
    converged: bool
    stopped: str = ""
    rounds: int = 0  # master solves of the generation


def relax(
    prep,
    cluster,
    workload,
    book,
    kind_ids: list[int],
    node_names: set[str],
    *,
    deadline: float = math.inf,
    rounds: int | None = None,
    pods_of: dict[int, float] | None = None,
    columns: list[tuple[int, tuple[int, ...]]] = (),  # type: ignore[assignment]
    classes: list[NodeClass] | None = None,
) -> Relaxation:
    """The column generation of `apply` without the integer placement: the master LP over the
    generated columns, with `pods_of` (kind -> pods, fractional allowed: an expectation) in place
    of the kinds' own pod counts, warm-started from `columns` ((class, counts) from an earlier
    solve over the same classes; checked by the one model only if used). Bounded by `deadline`
    (perf_counter) and/or `rounds` (master solves); with no deadline the pricing solves have no
    wall-clock stop either (deterministic time only): the same input gives the same LP on any
    machine. `classes`: node_classes' answer for these arguments, computed once by a caller that
    solves the same model again (the classes take most of a solve's time at 1,213 nodes)."""
    part = _start(prep, cluster, workload, book, kind_ids, node_names, classes)
    if pods_of is not None:
        # an expectation: fractional counts (the master's rows take any bound)
        part.pods_of = cast("dict[int, int]", {k: float(pods_of.get(k, 0.0)) for k in part.pods_of})
    for j, counts in columns:
        if j < len(part.classes) and len(counts) == len(part.classes[j].kinds):
            part.add(j, tuple(counts), None)
    # bounded by rounds: each master solve by GLOP's deterministic work too (a learned re-solve
    # of default's seed 49 ran minutes in one master solve)
    gen, lp = _generated(part, deadline, rounds, MASTER_WORK if rounds is not None else None)
    lp.add_columns(part.columns[gen.done :])
    value, pi, mu = lp.solve()
    return Relaxation(
        part.classes, part.columns, lp.primal(), pi, mu, value, gen.bound, gen.converged, gen.stopped, gen.rounds
    )


def _generated(
    part: "_Part",
    stop: float,
    rounds: int | None = None,
    master_work: float | None = None,
    master_until_stop: bool = False,
) -> tuple["_Generation", "_Master"]:
    """The column generation run on `part` until it converges, `stop` (perf_counter) or `rounds`
    master solves: its state, and the master LP holding its columns (the first bound: every pod
    placed). `master_until_stop`: a master solve still running at `stop` ends the generation."""
    gen = _Generation(stop=stop, bound=float(sum(part.value[k] * part.pods_of[k] for k in part.value)))
    gen.max_rounds = rounds
    gen.master_until_stop = master_until_stop
    # apply (bounded by the clock): a stalled solve is made again by the dual simplex; relax
    # first from scratch with its own parameters (the online plans' figures were measured so),
    # then by the dual simplex.
    lp = _Master(part.classes, part.kinds, part.pods_of, master_work, STALLED_PARAMS if master_until_stop else None)
    lp.add_substitutions(part.subs, part.value)
    _generate(part, lp, gen)
    return gen, lp


# ---------------------------------------------------------------- the steps of `apply`


@dataclass
class _Part:
    """One part's column generation: what stays fixed, and the columns found so far."""

    classes: list[NodeClass]
    kinds: list[Any]  # the part's kinds (prepare.Kind)
    value: dict[int, int]  # kind -> placed value of one of its pods
    pods_of: dict[int, int]  # kind -> its pods
    ones: list[OneNodeModel]  # per class, the one model on its representative
    fast: list[DevicePricing | None]  # per class, the compact pricing (None: the one model prices)
    stats: ColgenStats
    subs: list[tuple[int, int]] = field(default_factory=list)  # (a, b): b's pods may take a's places
    columns: list[Column] = field(default_factory=list)
    seen: set[tuple] = field(default_factory=set)  # (class, counts) of every column
    warm_counts: Counter = field(default_factory=Counter)  # (class, counts) -> warm start's nodes

    def add(self, j: int, counts: tuple[int, ...], conf: Configuration | None) -> bool:
        """A new column (False: known already, or empty)."""
        if (j, counts) in self.seen or not any(counts):
            return False
        self.seen.add((j, counts))
        value = self.value
        self.columns.append(Column(j, counts, sum(value[ki] * n for ki, n in zip(self.classes[j].kinds, counts)), conf))
        return True


@dataclass
class _Generation:
    """The generation loop's state."""

    stop: float  # perf_counter: the generation's share of the time
    bound: float  # best Lagrangian bound so far
    rounds: int = 0
    max_rounds: int | None = None  # relax's work bound (None: time only)
    master_until_stop: bool = False  # apply: each master solve stops at `stop` too
    converged: bool = False
    stopped: str = ""
    lp_value: float | None = None
    done: int = 0  # columns already in the master
    # Wentges smoothing: the pricing reads prices between the LP's duals and the duals of the
    # best bound so far (the master is degenerate: its duals jump between rounds). A round
    # whose columns do not improve the LP (mispricing) prices at the LP's duals next.
    center: dict[int, float] | None = None
    alpha: float = SMOOTHING
    cap: float = PRICE_FIRST_SECONDS  # per pricing solve: short while columns come, longer to prove
    total_value: float = field(init=False)  # of every pod placed (the first bound)

    def __post_init__(self) -> None:
        self.total_value = self.bound


@dataclass
class _IntegerState:
    """The integer placement's state."""

    floor: int  # a placement of columns known to reach this value
    warm_only: list[int]  # nodes per column of the warm start
    start: list[int]  # the hint: the warm start, or the LP's rounding when it is better
    subs: list[tuple[int, int]]  # the substitutions still allowed
    counts: list[int] | None = None
    status: str = "UNKNOWN"
    banned: set[int] = field(default_factory=set)  # columns the one model rejects
    fallback: str = ""  # why the warm start's placement is kept
    rounded: int = 0  # placed value of the LP's rounding
    moves: dict[tuple[int, int], int] = field(default_factory=dict)


def _start(
    prep, cluster, workload, book, kind_ids: list[int], node_names: set[str], known: list[NodeClass] | None = None
) -> _Part:
    """The classes (`known`: node_classes' answer, given by the caller), their one models and
    compact pricings, and the substitutions."""
    kinds = [prep.kinds[i] for i in kind_ids]
    if known is None:
        classes = node_classes(prep, kinds, node_names, cluster, min_size=1)
    else:  # fresh objects: a solve's memos on its classes stay its own
        classes = [NodeClass(list(nc.nodes), list(nc.kinds)) for nc in known]
    value = {k.index: weight(k.pods[0].priority) for k in kinds}
    pods_of = {k.index: len(k.pods) for k in kinds}
    ones = [one_node_model(nc, prep, cluster, workload, book, packed=False) for nc in classes]
    fast: list[DevicePricing | None] = []
    fast_stats: ColgenStats = {"colgen_fast_classes": 0, "colgen_fast_checked": 0}
    for j, nc in enumerate(classes):
        pricing, why = DevicePricing.for_class(nc, prep, ones[j].vars)
        fast.append(pricing)
        if pricing is not None:
            fast_stats["colgen_fast_classes"] += 1
        else:
            fast_stats.setdefault("colgen_fast_not_used", why)
    subs = [(a, b) for a, b in substitutions(classes, fast) if a in pods_of and b in pods_of]
    fast_stats["colgen_substitutions"] = len(subs)
    return _Part(classes, kinds, value, pods_of, ones, fast, fast_stats, subs)


def _add_warm(part: _Part, warm: dict[str, str | None]) -> None:
    """The warm start's node contents as the first columns (unchecked), counted in `warm_counts`."""
    classes = part.classes
    class_of = {n.name: (j, n) for j, nc in enumerate(classes) for n in nc.nodes}
    per_node: dict[str, Counter] = defaultdict(Counter)
    for kind in part.kinds:
        for pod in kind.pods:
            node = warm.get(pod.key)
            if node is not None:
                per_node[node][kind.index] += 1
    for name, got in per_node.items():
        if name not in class_of:
            continue
        j, _ = class_of[name]
        counts = tuple(got[ki] for ki in classes[j].kinds)
        part.add(j, counts, None)
        part.warm_counts[(j, counts)] += 1


def _generate(part: _Part, lp: _Master, gen: _Generation) -> None:
    """Master LP and pricing rounds until the LP reaches the bound, no column is left, or time."""
    # Entered by hand, not to re-indent the loop; on an exception draopt.progress.reporting
    # closes the line.
    generation_line = progress.current().task("optimal: column generation")
    generation = generation_line.__enter__()
    while True:
        generation.note(round=gen.rounds + 1, columns=len(part.columns), bound=f"{gen.bound:,.0f}")
        lp.add_columns(part.columns[gen.done :])
        gen.done = len(part.columns)
        try:
            lp_value, pi_lp, mu = lp.solve(gen.stop if gen.master_until_stop else None)
        except MasterTimeUp:
            gen.stopped = "the time limit ran out during a master LP solve of the column generation"
            break
        gen.lp_value = lp_value
        gen.rounds += 1
        if gen.bound - lp_value <= LP_TOLERANCE * max(1.0, gen.total_value):
            gen.converged = True  # the LP is proven within the tolerance of its bound
            break
        if gen.max_rounds is not None and gen.rounds >= gen.max_rounds:
            gen.stopped = f"the column generation reached its {gen.max_rounds} rounds"
            break
        if not _price_round(part, gen, pi_lp, mu):
            break
    generation_line.__exit__(None, None, None)


def _price_round(part: _Part, gen: _Generation, pi_lp: dict[int, float], mu: list[float]) -> bool:
    """One pricing round at the (smoothed) duals: new columns and the round's bound. True: another
    round follows."""
    classes, value = part.classes, part.value

    def improves(j: int, counts: tuple[int, ...], mu_j: float) -> bool:
        """A positive reduced value at the LP's own duals: a column the master lacks."""
        return sum((value[ki] - pi_lp[ki]) * n for ki, n in zip(classes[j].kinds, counts)) > mu_j + 1e-6

    center = gen.center
    a = gen.alpha if center is not None else 0.0
    pi = pi_lp if not a or center is None else {ki: a * center[ki] + (1 - a) * pi_lp[ki] for ki in pi_lp}
    lagrange = sum(pi[k] * part.pods_of[k] for k in part.pods_of)
    added = 0
    exact = True
    priced = price_classes(
        classes,
        part.fast,
        part.ones,
        lambda j: {ki: value[ki] - pi[ki] for ki in classes[j].kinds},
        lambda j: lambda counts: improves(j, counts, mu[j]),
        gen.cap,
        gen.stop,
        part.stats,
    )
    for j, (nc, got) in enumerate(zip(classes, priced)):
        if got == "late":
            gen.stopped = "the time limit ran out during the column generation"
            return False
        if got is None:
            gen.stopped = "a pricing model found nothing in time"
            return False
        confs, upper, proven = got
        exact = exact and proven
        # Lagrangian bound at prices pi (kind rows relaxed): valid for any pi >= 0.
        lagrange += len(nc.nodes) * max(0.0, upper)
        for conf in confs if isinstance(confs, list) else [confs]:
            if conf is not None and improves(j, conf.counts, mu[j]):
                added += part.add(j, conf.counts, conf)
    if lagrange < gen.bound:
        gen.bound, gen.center = lagrange, pi
    return _next_round(gen, added, a, exact)


def _next_round(gen: _Generation, added: int, smoothed: float, exact: bool) -> bool:
    """After a complete round: True for another one (and at which prices and time per solve),
    False when the generation ends (converged or not)."""
    if added:
        gen.alpha = SMOOTHING
        return True
    if smoothed:
        gen.alpha = 0.0  # mispricing: the LP's own duals next
        return True
    if not exact and gen.cap < PRICE_SECONDS:
        gen.cap = min(PRICE_SECONDS, gen.cap * 4)  # nothing found quickly: look longer
        return True
    gen.converged = exact
    if not exact:
        gen.stopped = "a pricing model was not solved to optimality in time"
    return False


def _integer_start(part: _Part) -> _IntegerState:
    """The warm start as the integer placement's floor and hint."""
    columns, warm_counts = part.columns, part.warm_counts
    floor = sum(
        columns[i].value * warm_counts[(c.cls, c.counts)]
        for i, c in enumerate(columns)
        if (c.cls, c.counts) in warm_counts
    )
    warm_only = [warm_counts.get((c.cls, c.counts), 0) for c in columns]
    return _IntegerState(floor, warm_only, warm_only, part.subs)


def _dive(part: _Part, lp: _Master, gen: _Generation, ints: _IntegerState, deadline: float) -> None:
    """Diving by the LP: its columns rounded down, the pods and nodes left over placed by a small
    CP-SAT model over every column; the hint and floor when it beats the warm start."""
    columns, classes = part.columns, part.classes
    lp.add_columns(columns[gen.done :])
    gen.done = len(columns)
    try:
        lp.solve(deadline)
    except MasterTimeUp:
        return  # no LP to dive by: the integer placement starts from the warm start
    down, pods_left = _round_down(part, lp.primal())
    nodes_left = [len(nc.nodes) for nc in classes]
    for c, n in zip(columns, down):
        nodes_left[c.cls] -= n
    rest, _ = _integer(
        classes,
        part.kinds,
        pods_left,
        columns,
        ints.banned,
        [0] * len(columns),
        0,
        time.perf_counter() + (deadline - time.perf_counter()) * ROUNDING_SHARE,
        nodes_of=nodes_left,
    )
    dive = [a + b for a, b in zip(down, rest)]
    ints.rounded = sum(c.value * n for c, n in zip(columns, dive))
    if ints.rounded > ints.floor:
        ints.start, ints.floor = dive, ints.rounded


def _round_down(part: _Part, primal: list[float]) -> tuple[list[int], dict[int, int]]:
    """The LP's columns rounded down, and the pods of each kind they leave."""
    columns, classes = part.columns, part.classes
    down = [int(math.floor(x + 1e-6)) for x in primal]
    pods_left = dict(part.pods_of)
    for c, n in zip(columns, down):
        for ki, k in zip(classes[c.cls].kinds, c.counts):
            pods_left[ki] -= n * k
    # The LP may fill places of a kind with smaller pods (substitutions): the rounding
    # keeps no more of a kind's places than it has pods, dropping nodes where it has more.
    for i in sorted(range(len(columns)), key=lambda i: -sum(columns[i].counts)):
        c = columns[i]
        while down[i] and any(pods_left[ki] < 0 for ki, k in zip(classes[c.cls].kinds, c.counts) if k):
            down[i] -= 1
            for ki, k in zip(classes[c.cls].kinds, c.counts):
                pods_left[ki] += k
    return down, pods_left


def _place_integer(part: _Part, gen: _Generation, ints: _IntegerState, deadline: float) -> None:
    """The integer placement, its columns checked by the one model (at most 4 solves: a column it
    rejects is banned, a substitution it rejects is dropped, and the placement solved again)."""
    for _ in range(4):
        if not _integer_attempt(part, gen, ints, deadline):
            break
    else:
        ints.counts, ints.status = [0] * len(part.columns), "REJECTED"


def _integer_attempt(part: _Part, gen: _Generation, ints: _IntegerState, deadline: float) -> bool:
    """One integer solve and its checks. True: solve again."""
    columns, value = part.columns, part.value
    # The rest of the time: 70 % for the integer model, then checks and decoding.
    with progress.current().task("optimal: column generation, integer placement") as integer_line:
        integer_line.solver(ints.floor, math.floor(gen.bound + 1e-6))
        counts, ints.status = _integer(
            part.classes,
            part.kinds,
            part.pods_of,
            columns,
            ints.banned,
            ints.start,
            ints.floor,
            time.perf_counter() + (deadline - time.perf_counter()) * 0.7,
            shown=integer_line,
            bound=math.floor(gen.bound + 1e-6),
            gap=INTEGER_GAP * gen.total_value,
            subs=[(a, b, value[b] - value[a]) for a, b in ints.subs],
            moves=ints.moves,
        )
    ints.counts = counts
    if ints.status == "WARM" and ints.start is not ints.warm_only:
        ints.status = "ROUNDED"  # the LP's rounding stands: a placement of columns, checked below
    if ints.status == "WARM" or not any(counts):
        return False
    bad, unchecked = _check_used(part, counts, deadline)
    if not bad and not unchecked and any(ints.moves.values()):
        # Pods of smaller kinds in places of larger ones: the configurations that gives,
        # checked by the one model; any it rejects, the placement is solved without.
        realized = ColumnGeneration._realized(part.classes, columns, counts, ints.moves, value, part.ones, deadline)
        if realized is None:
            part.stats["colgen_substitution_rejected"] = True
            ints.subs, ints.moves = [], {}
            ints.warm_only += [0] * (len(columns) - len(ints.warm_only))
            ints.start = ints.start + [0] * (len(columns) - len(ints.start))
            return True
        part.stats["colgen_substituted_pods"] = sum(ints.moves.values())
        ints.counts = realized
        ints.warm_only += [0] * (len(columns) - len(ints.warm_only))
        ints.moves = {}
    if unchecked:
        # No time to check the configurations it uses: the warm start (all its columns
        # are real node contents) is returned, said so.
        ints.fallback = "the time limit ran out while checking the configurations of the integer placement"
        ints.counts, ints.status = ints.warm_only, "WARM"
        return False
    if not bad:
        return False
    ints.banned.update(bad)
    ints.floor = 0  # a warm configuration the one model rejects: the warm start is no floor
    ints.start = ints.warm_only
    return True


def _check_used(part: _Part, counts: list[int], deadline: float) -> tuple[list[int], bool]:
    """The columns a placement uses, checked by the one model: those it rejects, and whether
    time ran out before all were decided."""
    bad: list[int] = []
    for i, n in enumerate(counts):
        if n:
            ok = _checked(part.columns[i], part.ones, deadline - time.perf_counter())
            if ok is None:
                return bad, True
            if not ok:
                bad.append(i)
    return bad, False


def _solution(part: _Part, gen: _Generation, ints: _IntegerState, t0: float, gen_s: float) -> Solution:
    """The Solution and its figures."""
    columns = part.columns
    counts = ints.counts if ints.counts is not None else []
    if ints.status == "WARM":
        reach = sum(c.value * n for c, n in zip(columns, counts)) >= math.floor(gen.bound + 1e-6)
        ints.fallback = ints.fallback or (
            "the warm start reaches the bound" if reach else "no better integer placement found in time"
        )
    objective = sum(c.value * n for c, n in zip(columns, counts))
    proven_bound = max(objective, math.floor(gen.bound + 1e-6))
    sol = Solution(
        part.classes,
        columns,
        counts,
        objective,
        proven_bound,
        gen.lp_value,
        gen.converged,
        gen.stopped,
        warm=ints.fallback,
    )
    stats: ColgenStats = {
        "colgen_rounds": gen.rounds,
        "colgen_columns": len(columns),
        "colgen_classes": len(part.classes),
        "colgen_s": round(gen_s, 3),
        "colgen_integer_status": ints.status,
        "colgen_integer_s": round(time.perf_counter() - t0 - gen_s, 3),
        "colgen_converged": gen.converged,
    }
    stats.update(part.stats)
    if gen.lp_value is not None:
        stats["colgen_lp_value"] = round(gen.lp_value, 3)
        stats["colgen_rounded_value"] = ints.rounded
    if gen.stopped:
        stats["colgen_stopped"] = gen.stopped
    if ints.fallback:
        stats["colgen_warm_kept"] = ints.fallback
    sol.stats = stats
    return sol


def price_classes(
    classes,
    fast,
    ones,
    reduced_of,
    wanted_of,
    cap: float | list[float],
    stop: float,
    stats: ColgenStats,
    checked: bool = True,
) -> list:
    """Price every class under its `reduced_of(j)` values, PRICING_THREADS classes at once: the
    compact pricing where the class has it (a column the one model rejects drops it for the
    class, `fast[j] = None`), else the one model. Per class, in class order: (configurations,
    proven upper bound, proven), None when nothing was found in time, or "late" when `stop`
    (perf_counter) passed before the class was priced. `checked=False`: the compact pricing's
    columns come as counts, not checked by the one model (the caller checks those it uses). An
    infinite `stop`: no wall-clock stop at all, the solves are bounded by deterministic time only
    (the same columns on any machine)."""
    hard = math.isfinite(stop)
    caps = cap if isinstance(cap, list) else [cap] * len(classes)

    def one_class(j: int):
        cap = caps[j]
        left = stop - time.perf_counter()
        if left <= 0:
            return "late", {}, False
        own: PricingCounts = {"colgen_fast_checked": 0}
        got, dropped = None, False
        if fast[j] is not None and not checked:
            # A hard stop at `stop` too: a long cap (16 s, three times that in wall time) no longer
            # runs past it into the time of what follows.
            got = _price_fast_counts(fast[j], reduced_of(j), min(cap, left), wanted_of(j), hard, left)
            return got, own, False
        if fast[j] is not None:
            got = _price_fast(fast[j], ones[j], reduced_of(j), min(cap, left), own, wanted_of(j), hard)
            if got == "disagree":
                got, dropped = None, True
        if got is None:
            left = stop - time.perf_counter()
            got = _price(ones[j], reduced_of(j), classes[j].kinds, max(0.05, min(cap, left)), wall=max(0.05, left))
        return got, own, dropped

    with ThreadPoolExecutor(max_workers=PRICING_THREADS) as pool:
        results = list(pool.map(one_class, range(len(classes))))
    out = []
    # Added key by key in each class's order (the keys' order in the stats stays that of the run).
    counts = cast("dict[str, int]", stats)
    for j, (got, own, dropped) in enumerate(results):
        for k, v in own.items():
            counts[k] = counts.get(k, 0) + v
        if dropped:
            fast[j] = None
        out.append(got)
    return out


def _price(one: OneNodeModel, reduced: dict[int, float], kinds: list[int], seconds: float, wall: float):
    """The best configuration of the representative under `reduced` values per pod of a kind:
    (configuration or None, proven upper bound of its reduced value, proven optimal), or None
    if the solver found nothing in time."""
    cp = one.b.model.cp
    top = max([abs(v) for v in reduced.values()] + [1e-9])
    scale = PRICE_SCALE / top
    terms, slack = [], 0.0
    for ki, var in zip(kinds, one.vars):
        if var is None:
            continue
        r = reduced.get(ki, 0.0)
        coef = int(round(r * scale)) if r > 0 else -1
        terms.append((coef, var))
        if r > 0:  # the price lost to its rounding (none where it was rounded up)
            slack += max(0.0, r - coef / scale) * var.proto.domain[len(var.proto.domain) - 1]
    if not any(c > 0 for c, _ in terms):
        return None, 0.0, True  # nothing of positive value fits: the empty configuration
    cp.maximize(sum(c * v for c, v in terms))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    solver.parameters.max_deterministic_time = max(0.05, seconds)
    if math.isfinite(wall):
        solver.parameters.max_time_in_seconds = max(0.05, min(seconds * 3, wall))  # a hard stop
    status = interrupt.watch(solver).solve(cp)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    counts = tuple(solver.value(v) if v is not None else 0 for v in one.vars)
    upper = max(0.0, solver.best_objective_bound / scale + slack)
    return one.configuration(solver, counts), upper, status == cp_model.OPTIMAL


def _price_fast(
    fast: DevicePricing,
    one: OneNodeModel,
    reduced: dict[int, float],
    seconds: float,
    stats: PricingCounts,
    wanted,
    hard: bool = True,
):
    """The compact pricing (colgen_pricing.py); a column it returns is checked by the one model
    (the rule source) before it is used (`wanted(counts)`: the master lacks it). "disagree" if the one model rejects it (the class is
    then priced by the one model), None if nothing was found in time."""
    got = fast.price(reduced, seconds, hard=hard)
    if got is None:
        return None
    counts, upper, proven, others = got
    confs: list[Configuration | bool] = []
    for c in [counts] + others:
        if len(confs) == FAST_COLUMNS or not wanted(c):  # no new column: nothing to check
            continue
        one.b.model.cp.clear_objective()
        conf = one.check(c, seconds=max(0.1, seconds), hard=hard)
        stats["colgen_fast_checked"] += 1
        if conf is False:
            stats["colgen_fast_disagreed"] = stats.get("colgen_fast_disagreed", 0) + 1
            return "disagree"
        if conf is None:
            # Undecided in time: the column is not used; the bound stays valid (any prices), the
            # round is not a proof of convergence.
            stats["colgen_fast_undecided"] = stats.get("colgen_fast_undecided", 0) + 1
            proven = False
            continue
        confs.append(conf)
    return confs, upper, proven


def _price_fast_counts(
    fast: DevicePricing, reduced: dict[int, float], seconds: float, wanted, hard: bool = True, wall: float | None = None
):
    """The compact pricing's best configurations the master lacks (`wanted`), as counts, with its
    proven upper bound and whether it is proven; None if nothing was found in time (`wall`: the
    wall-clock seconds left at most, with `hard`)."""
    got = fast.price(reduced, seconds, hard=hard, wall=wall)
    if got is None:
        return None
    counts, upper, proven, others = got
    return [c for c in [counts] + others if wanted(c)][:FAST_COLUMNS], upper, proven


class _CheckedColumn(Protocol):
    """A column of either generation (Column, colgen_plan.PlanColumn)."""

    cls: int
    counts: tuple[int, ...]
    conf: Any


def _checked(col: _CheckedColumn, ones: list[OneNodeModel], seconds: float) -> bool | None:
    """A column from the warm start, checked by the one model when it is used: True, False
    (the model rejects it), None (not decided in `seconds`)."""
    if col.conf is not None:
        return True
    if seconds <= 0.05:
        return None
    one = ones[col.cls]
    one.b.model.cp.clear_objective()
    got = one.check(col.counts, seconds=min(5.0, seconds))
    if got is None or got is False:
        return got
    col.conf = cast(Configuration, got)  # `check` gives False or a configuration, never True
    return True


def _integer(
    classes,
    kinds,
    pods_of,
    columns,
    banned,
    start,
    floor,
    hard_stop,
    shown=progress.Task(),
    bound: int | None = None,
    gap: float = 0.0,
    nodes_of: list[int] | None = None,
    subs=(),
    moves: dict | None = None,
):
    """Configuration counts per class (CP-SAT), at least the warm start's value. `shown`: where
    its best value and bound are reported (draopt.progress). `bound`: the generation's proven
    bound (no integer placement exceeds it: CP-SAT's own bound starts there); it stops within
    `gap` of it. `start`: nodes per column of a known placement (the hint; returned, "WARM", when
    nothing better is found); `nodes_of`: nodes per class (default: the class's nodes)."""
    nodes_of = nodes_of if nodes_of is not None else [len(nc.nodes) for nc in classes]
    if moves is not None:
        moves.clear()  # filled with this solve's moves (none when the start is returned)
    m, xs, zs, objective = _integer_model(classes, pods_of, columns, banned, nodes_of, subs)
    if floor:
        m.add(objective >= floor)
    if bound is not None and bound >= floor:
        m.add(objective <= bound)
    for x, n in zip(xs, start):
        m.add_hint(x, n)
    m.maximize(objective)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 2
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = 0
    if gap > 0:
        solver.parameters.absolute_gap_limit = gap
    left = max(0.1, hard_stop - time.perf_counter())
    solver.parameters.max_deterministic_time = left
    solver.parameters.max_time_in_seconds = left  # wall time: the time limit is kept
    status = interrupt.watch(solver).solve(m, progress.solver_callback(solver, shown))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if floor:
            return list(start), "WARM"
        return [0] * len(columns), solver.status_name(status)
    if floor and solver.objective_value <= floor:
        return list(start), "WARM"
    if moves is not None:
        moves.clear()
        moves.update({(a, b): solver.value(z) for (a, b, _), z in zip(subs, zs)})
    return [solver.value(x) for x in xs], solver.status_name(status)


def _integer_model(classes, pods_of, columns, banned, nodes_of: list[int], subs):
    """`_integer`'s CP-SAT model: nodes per column (xs), pods of b in places of a per pair (zs),
    the rows per class and kind, and the placed value (not yet set as the objective)."""
    m = cp_model.CpModel()
    xs = []
    given = {a for a, _, _ in subs}  # kinds whose places smaller pods may take
    for i, c in enumerate(columns):
        hi = 0 if i in banned else nodes_of[c.cls]
        if hi:
            for ki, n in zip(classes[c.cls].kinds, c.counts):
                if n and ki not in given:
                    hi = min(hi, pods_of[ki] // n)
        xs.append(m.new_int_var(0, hi, f"x{i}"))
    by_class = defaultdict(list)
    by_kind = defaultdict(list)
    for c, x in zip(columns, xs):
        by_class[c.cls].append(x)
        for ki, n in zip(classes[c.cls].kinds, c.counts):
            if n:
                by_kind[ki].append(n * x)
    zs = []
    for a, b, _ in subs:  # `subs`: (a, b, b's value less a's): b's pods in a's places
        z = m.new_int_var(0, max(0, pods_of[b]), f"z{a}_{b}")
        zs.append(z)
        by_kind[a].append(-z)
        by_kind[b].append(z)
    for j, vs in by_class.items():
        m.add(sum(vs) <= nodes_of[j])
    for ki, terms in by_kind.items():
        m.add(sum(terms) <= pods_of[ki])
        if ki in given:
            m.add(sum(terms) >= 0)  # only places the columns have move
    objective = sum(c.value * x for c, x in zip(columns, xs)) + sum(d * z for z, (_, _, d) in zip(zs, subs))
    return m, xs, zs, objective
