"""The cheapest mix of new nodes by column generation (`draopt plan` on large inputs).

The same reduction as colgen.py, as a covering problem (Gilmore-Gomory cutting stock with
several stock sizes): a column is a configuration (pods per kind) the one model accepts on the
representative node of a class of interchangeable nodes; the input's own nodes of a class are
free and limited (its real nodes), copies of a node type cost the type's cost and are unlimited.

* master (LP, GLOP): minimise the copies' cost s.t. every pod of every kind that has a node
  is placed (sum of configurations >= its pods) and the free nodes of a class are not overused;
* pricing: the compact model of colgen_pricing.py where the class has its structure (its columns
  enter unchecked; the one model checks those the integer counts use), the one model otherwise,
  maximising sum_k pi_k n_k; a round first tries the compact model's greedy fill (cheap, no
  bound) and prices exactly only when it finds no column; a class whose node holds no more than
  a no dearer class's is priced by that class (`priced_by`);
* bound (Farley): with pi scaled by theta = min over copied classes of cost / best value
  (<= 1, so that no copy has a negative reduced cost), theta * (sum_k pi_k pods_k - sum over
  free classes of nodes * best value) is a lower bound of every mix's cost, at any round; the
  bound kept is the best combination of every round's (colgen_stabilise.DualBundle: never below
  the best round's), and the prices priced are smoothed (Wentges) from the LP's duals towards
  that combination's prices; a class left unproven, and without a column, is priced longer from
  then on (its own cap);
* integer: the covering LP rounded by diving (colgen_dive.py), then CP-SAT over configuration
  counts kept at or above the first LP's whole part and hinted with the dive (or with the warm
  start, the first-fit-decreasing estimate's own nodes, whose contents are columns from the
  start); the dive is kept when CP-SAT finds nothing cheaper.

`invert` gives per class and column how many free nodes and how many copies take it.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, cast

from ortools.linear_solver import pywraplp
from ortools.sat.python import cp_model

from draopt import interrupt
from draopt.model.colgen import PRICE_FIRST_SECONDS, PRICE_SECONDS, _checked, price_classes
from draopt.model.colgen_dive import Dive, dive
from draopt.model.colgen_master import MasterTimeUp, solve_master
from draopt.model.colgen_pricing import DevicePricing
from draopt.model.colgen_stabilise import DualBundle, farley as _farley, pooled_bound as _pooled_bound, theta as _theta
from draopt.model.colgen_stats import ColgenStats
from draopt.model.colgen_substitution import realize, substitutions
from draopt.model.encodings.base import scale_to_int
from draopt.model.patterns import NodeClass, OneNodeModel, node_classes
from draopt.model.placement import one_node_model

LP_SHARE = 0.7  # of the time given, for the generation (the rest: the LP's rounding, the integer counts and the one model's checks of the columns they use)
SMOOTHING = 0.5  # Wentges: weight of the best bound's duals in the prices priced
GREEDY_COLUMNS = 4  # per class and prices, from the greedy pricing's orders
LP_TOLERANCE = 1e-4  # relative gap between the bound and the LP at which the generation stops
# The LP's rounding at most this far above the LP when the clock stops the generation: CP-SAT over
# the counts could save no more, a tenth of the 1 % gap aimed at (issue 34), while the bound, not
# converged, is what is left; its time goes back to the generation (_resumed).
NEAR_LP = 1e-3
# Of the time left then: (CP-SAT's was 0.25, then 0.6 of the rest). 0.7 left the one model's checks
# of the chain rounding's configurations 12 s at 80,000 pods: undecided under load, the rounding
# was lost (0.53 % above the LP); the generation's last rounds move the bound little.
RESUMED_SHARE = 0.5
LATE = "the time limit ran out during the column generation"
MASTER_LATE = "the time limit ran out during a master LP solve of the column generation"
LAST_RESORT_SECONDS = 15.0  # the plain rounding past the deadline (80,000 pods: 1-4 s, up to 4x under load)


@dataclass
class PlanColumn:
    cls: int
    counts: tuple[int, ...]
    conf: Any = None  # the one model's values (None: from the warm start, unchecked)


@dataclass
class PlanSolution:
    classes: list[NodeClass]
    class_cost: list[Fraction | None]  # cheapest copy type of a class (None: no copies)
    class_type: list[str | None]
    free_nodes: list[int]  # the input's own nodes per class
    columns: list[PlanColumn]
    free_counts: list[int]  # free nodes taking each column
    copy_counts: list[int]  # copies taking each column
    cost: Fraction
    bound: Fraction  # proven lower bound of any mix's cost
    lp_value: float | None
    converged: bool
    covered: bool  # every pod that has a node is placed
    stopped: str = ""
    stats: ColgenStats = field(default_factory=lambda: ColgenStats())

    def mix(self) -> dict[str, int]:
        out: Counter = Counter()
        for col, n in zip(self.columns, self.copy_counts):
            if n:
                out[self.class_type[col.cls]] += n
        return dict(out)


class CheapestMix:
    """accepts(prep, ...) -> why not (None: accepted); apply(...) -> PlanSolution."""

    @staticmethod
    def accepts(prep, kind_ids: list[int], node_names: set[str], cluster) -> str | None:
        from draopt.model.colgen import ColumnGeneration

        return ColumnGeneration.accepts(prep, kind_ids, node_names, cluster, None)

    def apply(
        self,
        prep,
        cluster,
        workload,
        book,
        kind_ids: list[int],
        node_names: set[str],
        type_of: dict[str, str],
        cost_of: dict[str, Fraction],
        *,
        deadline: float,
        covered_deadline: float | None = None,
        warm: dict[str, str | None] | None = None,
        alias: dict[str, str] | None = None,
        more_warm: tuple[dict[str, str | None], ...] = (),
    ) -> PlanSolution:
        """`type_of`: copy node -> its type (every other node is the input's, free); `warm`: pod
        key -> node of a valid placement (the estimate's, or an autoscaler's), its nodes' contents
        the first columns and its counts the incumbent (the answer is never dearer when it places
        every pod); `alias`: a node of a warm placement that is not in the cluster -> the copy it
        is alike (copies beyond the first of a type); `more_warm`: other valid placements whose
        nodes' contents are columns too (not counted). `covered_deadline` (later than `deadline`):
        the caller's deadline when the columns cover every pod (it then needs no time after them);
        taken when every kind has a column with copies (the LP and the integer counts cover it),
        the extra time the generation's: the integer counts keep the (1 - LP_SHARE) of
        `deadline`'s time they have without it (giving them less lost the cover under load)."""
        t0 = time.perf_counter()
        part = _start(prep, cluster, workload, book, kind_ids, node_names, type_of, cost_of)
        if warm:
            _add_warm(part, warm, type_of, alias)
        for other in more_warm:
            _add_warm(part, other, type_of, alias, counted=False)
        _add_alone(part, deadline)
        stop = t0 + (deadline - t0) * LP_SHARE
        if covered_deadline is not None and covered_deadline > deadline and _copies_cover(part):
            stop += covered_deadline - deadline
            deadline = covered_deadline
            part.stats["colgen_covered_deadline"] = True
        gen = _PlanGeneration(stop=stop)
        master = _CoverMaster(part.classes, part.free_nodes, part.cost_f, part.demand)
        master.add_substitutions(part.subs)
        gen.bound = _pooled_bound(part.fast, part.classes, part.free_nodes, part.class_cost, part.demand)
        _generate(part, master, gen)
        resumed = _resumed(part, master, gen, deadline)
        gen_s = time.perf_counter() - t0
        near = cast(float, gen.lp_value) * (1 + NEAR_LP) if resumed else None
        counts = _cover_counts(part, deadline, near)
        return _solution(part, gen, counts, t0, gen_s)


# ---------------------------------------------------------------- the steps of `apply`


@dataclass
class _PlanPart:
    """One plan's column generation: what stays fixed, and the columns found so far."""

    classes: list[NodeClass]
    kinds: list[Any]  # the pending kinds (prepare.Kind)
    free_nodes: list[int]  # per class, the input's own nodes
    class_type: list[str | None]  # per class, its cheapest copy type (None: no copies)
    class_cost: list[Fraction | None]
    cost_f: list[float | None]  # class_cost as floats (the LP's)
    demand: dict[int, int]  # kind that has a node -> its pods
    ones: list[OneNodeModel]  # per class, the one model on its representative
    fast: list[DevicePricing | None]  # per class, the compact pricing (None: the one model prices)
    stats: ColgenStats
    subs: list[tuple[int, int]]  # (a, b): b's pods may take a's places
    # per class, the class that prices for it (itself, or a cheaper one that holds all it holds)
    priced_by: list[int] = field(default_factory=list)
    columns: list[PlanColumn] = field(default_factory=list)
    seen: set[tuple] = field(default_factory=set)  # (class, counts) of every column
    warm_free: Counter = field(default_factory=Counter)  # (class, counts) -> the warm start's free nodes
    warm_copy: Counter = field(default_factory=Counter)  # (class, counts) -> the warm start's copies

    def add(self, j: int, counts: tuple[int, ...], conf) -> bool:
        """A new column (False: known already, or empty)."""
        if (j, counts) in self.seen or not any(counts):
            return False
        self.seen.add((j, counts))
        self.columns.append(PlanColumn(j, counts, conf))
        return True


@dataclass
class _PlanGeneration:
    """The generation loop's state."""

    stop: float  # perf_counter: the generation's share of the time
    bound: float = 0.0  # best lower bound so far
    rounds: int = 0
    converged: bool = False
    stopped: str = ""
    lp_value: float | None = None
    done: int = 0  # columns already in the master
    caps: dict[int, float] = field(default_factory=dict)  # per priced class, per solve (PRICE_FIRST_SECONDS first)
    raised: bool = False  # the last exact round raised a class's cap (its bound was not proven)
    center: dict[int, float] | None = None  # Wentges smoothing, as in colgen.py
    alpha: float = SMOOTHING
    bundle: DualBundle | None = None  # every point priced exactly (colgen_stabilise.py)
    greedy: bool = True  # rounds start with the greedy pricing; the exact one when it finds nothing
    greedy_rounds: int = 0
    exact_rounds: int = 0  # rounds that priced every class exactly (each gives a bound)
    farley: float = 0.0  # the best single point's Farley bound (gen.bound: the points combined)
    theta: float = 0.0  # Farley's theta at the last exact round's prices
    late: bool = False  # the clock stopped it (a class not priced before `stop`)


@dataclass
class _CoverCounts:
    """The integer counts: free nodes and copies per column."""

    free_counts: list[int]
    copy_counts: list[int]
    scale: Fraction  # costs are multiples of it
    status: str = "UNKNOWN"


def _start(prep, cluster, workload, book, kind_ids, node_names, type_of, cost_of) -> _PlanPart:
    """The classes, their costs, one models and compact pricings, and the substitutions."""
    kinds = [prep.kinds[i] for i in kind_ids]
    classes = node_classes(prep, kinds, node_names, cluster, min_size=1)
    free_nodes = [sum(1 for n in nc.nodes if n.name not in type_of) for nc in classes]
    class_type: list[str | None] = []
    class_cost: list[Fraction | None] = []
    for nc in classes:
        types = sorted({type_of[n.name] for n in nc.nodes if n.name in type_of}, key=lambda t: (cost_of[t], t))
        class_type.append(types[0] if types else None)
        class_cost.append(cost_of[types[0]] if types else None)
    demand = {k.index: len(k.pods) for k in kinds if any(k.index in nc.kinds for nc in classes)}
    ones = [one_node_model(nc, prep, cluster, workload, book, packed=False) for nc in classes]
    fast: list[DevicePricing | None] = [
        DevicePricing.for_class(nc, prep, ones[j].vars)[0] for j, nc in enumerate(classes)
    ]
    for f in fast:
        if f is not None:
            f.linearization = 2  # the exact rounds' proofs: the most of the generation's time
    fast_stats: ColgenStats = {"colgen_fast_classes": sum(f is not None for f in fast), "colgen_fast_checked": 0}
    subs = [(a, b) for a, b in substitutions(classes, fast) if a in demand and b in demand]
    fast_stats["colgen_substitutions"] = len(subs)
    cost_f = [float(c) if c is not None else None for c in class_cost]
    part = _PlanPart(classes, kinds, free_nodes, class_type, class_cost, cost_f, demand, ones, fast, fast_stats, subs)
    part.priced_by = priced_by(fast, class_cost)
    fast_stats["colgen_dominated_classes"] = sum(1 for j, r in enumerate(part.priced_by) if r != j)
    return part


def priced_by(fast: list[DevicePricing | None], cost: list[Fraction | None]) -> list[int]:
    """Per class, the class that prices for it: a class with the compact model is dominated by
    one no dearer (ties: the first) whose node holds every configuration of its own (the same
    kinds taken the same way, at least its free resources and devices of the same capacity,
    DevicePricing.holds); its best reduced value is never above the dominating class's, so the
    generation prices the dominating class only and the Farley bound reads its value for both
    (valid; at most the free nodes' worth weaker). Undominated classes price for themselves."""
    out = list(range(len(fast)))
    for j, f in enumerate(fast):
        if f is None or cost[j] is None:
            continue
        for k, g in enumerate(fast):
            if k == j or g is None or cost[k] is None or (cost[k], k) >= (cost[j], j):
                continue
            if g.holds(f) and (out[j] == j or (cost[k], k) < (cost[out[j]], out[j])):
                out[j] = k
    for j in range(len(out)):  # to the root: dominance is transitive, so the root dominates j
        while out[out[j]] != out[j]:
            out[j] = out[out[j]]
    return out


def _add_warm(part: _PlanPart, warm: dict[str, str | None], type_of: dict[str, str], alias, counted=True) -> None:
    """The warm start's node contents as the first columns (unchecked), counted per free node
    and per copy (`counted`)."""
    classes = part.classes
    class_of = {n.name: j for j, nc in enumerate(classes) for n in nc.nodes}
    per_node: dict[str, Counter] = defaultdict(Counter)
    for kind in part.kinds:
        for pod in kind.pods:
            node = warm.get(pod.key)
            if node is not None:
                per_node[node][kind.index] += 1
    for name, got in sorted(per_node.items()):
        name = name if name in class_of else (alias or {}).get(name, "")
        if name not in class_of:
            continue
        j = class_of[name]
        counts = tuple(got[ki] for ki in classes[j].kinds)
        part.add(j, counts, None)
        if counted:
            (part.warm_copy if name in type_of else part.warm_free)[(j, counts)] += 1


def _add_alone(part: _PlanPart, deadline: float) -> None:
    """A column for every kind (its most pods alone on the first class that can buy more of
    them, or else any class): the covering master and the integer counts need one each. With the
    compact model, the greedy fill gives it (exact for one kind); else the one model."""
    classes, class_cost = part.classes, part.class_cost
    has = {ki for (j, counts) in part.seen for ki, n in zip(classes[j].kinds, counts) if n}
    for ki in part.demand:
        if ki in has or time.perf_counter() > deadline or interrupt.requested():  # (Ctrl-C: as out of time)
            continue
        for j in sorted(
            (j for j, nc in enumerate(classes) if ki in nc.kinds), key=lambda j: (class_cost[j] is None, j)
        ):
            f = part.fast[j]
            if f is not None:
                # One kind alone: the greedy fill is exact (as many as the resources and devices
                # hold). Unchecked, as the greedy rounds' columns.
                most = f.greedy({ki: 1.0}, {ki: part.demand[ki]})
                if most and part.add(j, most[0], None):
                    break
                continue
            alone = _alone(part.fast[j], part.ones[j], classes[j], ki, part.demand[ki], part.stats)
            if alone is not None and part.add(j, alone.counts, alone):
                break


def _copies_cover(part: _PlanPart) -> bool:
    """Every kind with pods has a column of a class that has copies (unlimited: the covering LP
    needs no slack, and the integer counts have a cover)."""
    bought = {
        ki
        for (j, counts) in part.seen
        if part.class_cost[j] is not None
        for ki, n in zip(part.classes[j].kinds, counts)
        if n
    }
    return all(ki in bought for ki in part.demand)


def _resumed(part: _PlanPart, master: _CoverMaster, gen: _PlanGeneration, deadline: float) -> bool:
    """When the clock stopped the generation and the LP's rounding (with moves along the chains:
    a quick dive) is within NEAR_LP of the LP, CP-SAT's time goes back to the generation
    (RESUMED_SHARE of the time left), and the integer counts are the roundings alone: True."""
    if not gen.late or gen.lp_value is None or not part.subs or interrupt.requested():
        return False
    now = time.perf_counter()
    got = dive(
        *_dive_args(part, set(), part.subs),
        now + (deadline - now) * (1 - RESUMED_SHARE) / 2,
        chains=True,
    )
    if got is None:
        return False
    cost = sum(float(cast(Fraction, part.class_cost[c.cls])) * n for c, n in zip(part.columns, got.copy) if n)
    if cost > gen.lp_value * (1 + NEAR_LP):
        return False
    now = time.perf_counter()
    gen.stop, gen.stopped, gen.late = now + (deadline - now) * RESUMED_SHARE, "", False
    rounds = gen.rounds
    _generate(part, master, gen)
    part.stats["colgen_resumed_rounds"] = gen.rounds - rounds
    return True


def _generate(part: _PlanPart, master: _CoverMaster, gen: _PlanGeneration) -> None:
    """Covering LP and pricing rounds until the LP reaches the bound, no column is left, or time."""
    while True:
        master.add_columns(part.columns[gen.done :])
        gen.done = len(part.columns)
        try:
            # Bounded by the generation's stop, as colgen.apply's master (a GLOP solve ran
            # minutes past its limit there); the integer counts keep their share of the time.
            lp_value, pi_lp, sigma = master.solve(gen.stop)
        except MasterTimeUp:
            gen.stopped = MASTER_LATE
            break
        gen.lp_value = lp_value
        gen.rounds += 1
        if lp_value is not None and lp_value - gen.bound <= LP_TOLERANCE * max(1.0, lp_value):
            gen.converged = True
            break
        if interrupt.requested() or not _price_round(part, gen, pi_lp, sigma):
            break


def _price_round(part: _PlanPart, gen: _PlanGeneration, pi_lp: dict[int, float], sigma: list[float]) -> bool:
    """One pricing round at the (smoothed) duals: new columns and the round's Farley bound.
    True: another round follows."""
    classes = part.classes
    center = gen.center
    a = gen.alpha if center is not None else 0.0
    pi = _smoothed(center, a, pi_lp)
    limits = []
    for j in range(len(classes)):
        limit = part.cost_f[j]
        limit = limit if limit is not None else math.inf
        if part.free_nodes[j]:
            limit = min(limit, sigma[j])
        limits.append(limit)

    def wanted(j: int):
        def negative(counts, j=j):
            """A negative reduced cost at the LP's own duals: a column the master lacks."""
            return sum(pi_lp.get(ki, 0.0) * n for ki, n in zip(classes[j].kinds, counts)) > limits[j] + 1e-6

        return negative

    if time.perf_counter() >= gen.stop:  # the greedy rounds, too, stop at the generation's time
        gen.stopped, gen.late = LATE, True
        return False
    if gen.greedy:
        found = _greedy_columns(part, (pi, pi_lp), wanted)
        if found:
            gen.greedy_rounds += 1
            part.stats["colgen_greedy_columns"] = part.stats.get("colgen_greedy_columns", 0) + found
            return True
    roots = [j for j, r in enumerate(part.priced_by) if r == j]
    fast = [part.fast[j] for j in roots]
    got_roots = price_classes(
        [classes[j] for j in roots],
        fast,
        [part.ones[j] for j in roots],
        lambda i: {ki: pi.get(ki, 0.0) for ki in classes[roots[i]].kinds},
        lambda i: wanted(roots[i]),
        [gen.caps.get(j, PRICE_FIRST_SECONDS) for j in roots],
        gen.stop,
        part.stats,
        checked=False,  # the integer counts check the columns they use (an undecided check under
        # load made a round unproven, so the generation never converged)
    )
    for j, f in zip(roots, fast):
        part.fast[j] = f  # None where the one model disagreed with the compact one
    got = _exact_columns(part, gen, dict(zip(roots, got_roots)), wanted, limits)
    if got is None:
        return False  # the clock stopped it
    best, added, exact = got
    incomplete = math.inf in best.values()
    if not incomplete:
        _bound(part, gen, pi, best)
    return _next_round(gen, added, a, exact, incomplete)


def _exact_columns(part: _PlanPart, gen: _PlanGeneration, priced: dict, wanted, limits: list[float]):
    """The exact round's columns from each root class's pricing (`priced`), and per class (the
    dominated ones: their root's) the proven upper bound of its best value (inf: nothing found
    in time): (best, columns added, every class proven), None when the clock stopped it. A root
    class left unproven without a column is priced longer from then on (_raise_cap)."""
    best: dict[int, float] = {}
    exact, added = True, 0
    gen.raised = False
    for j, got in priced.items():
        if got == "late":
            gen.stopped, gen.late = LATE, True
            return None
        if got is None:
            # Nothing in time on this class: no bound this round, the other classes
            # still give columns.
            exact = False
            _raise_cap(gen, j)
            best[j] = math.inf
            continue
        confs, upper, proven = got
        exact = exact and proven
        best[j] = max(0.0, upper)
        check = wanted(j)
        before = added
        for conf in confs if isinstance(confs, list) else [confs]:
            counts = conf if isinstance(conf, tuple) else None if conf is None else conf.counts
            if counts is not None and check(counts):
                added += part.add(j, counts, None if isinstance(conf, tuple) else conf)
        if not proven and added == before and upper > limits[j] + 1e-6:
            _raise_cap(gen, j)
    return {j: best[part.priced_by[j]] for j in range(len(part.classes))}, added, exact


def _bound(part: _PlanPart, gen: _PlanGeneration, pi: dict[int, float], best: dict[int, float]) -> None:
    """A complete exact round at `pi`: its Farley bound, and the best bound of every such round's
    prices combined (colgen_stabilise.DualBundle, never below the best round's); the centre the
    next prices are smoothed towards is the combination's prices when they raise the bound."""
    upper = list(best.values())
    farley = _farley(pi, part.demand, upper, part.cost_f, part.free_nodes)
    gen.exact_rounds += 1
    gen.farley, gen.theta = max(gen.farley, farley), _theta(upper, part.cost_f)
    if gen.bundle is None:
        gen.bundle = DualBundle(part.demand, part.cost_f, part.free_nodes)
    gen.bundle.add(pi, upper)
    combined, center = gen.bundle.best()
    if center is not None and combined > gen.bound:
        gen.bound, gen.center = combined, center
    elif farley > gen.bound or gen.center is None:
        gen.bound, gen.center = max(gen.bound, farley), pi


def _smoothed(center: dict[int, float] | None, a: float, pi: dict[int, float]) -> dict[int, float]:
    """Wentges: the prices `a` of the way from `pi` to the centre."""
    return pi if not a or center is None else {k: a * center[k] + (1 - a) * pi[k] for k in pi}


def _raise_cap(gen: _PlanGeneration, j: int) -> None:
    """Class `j` gave no column and no proof: its bound, not its columns, is what the next rounds
    need from it (a loose one held theta at 0.95 over the last rounds at 8,000 scale pods), so it
    is priced longer from now on, alone (the others' caps are kept: short while columns come)."""
    cap = gen.caps.get(j, PRICE_FIRST_SECONDS)
    if cap < PRICE_SECONDS:
        gen.caps[j], gen.raised = min(PRICE_SECONDS, cap * 4), True


def _greedy_columns(part: _PlanPart, prices: tuple[dict[int, float], ...], wanted) -> int:
    """Columns of negative reduced cost (`wanted(j)(counts)`) from the greedy fill of every class
    that has the compact model (DevicePricing.greedy) at each of `prices`: added unchecked (the one
    model checks those the integer counts use, as the warm start's), the number added."""
    added = 0
    for j, f in enumerate(part.fast):
        # Dominated classes too: no copy of theirs is worth buying once their dominating class
        # prices out, but their free nodes are still worth filling (the exact rounds skip them).
        if f is None:
            continue
        kinds = part.classes[j].kinds
        negative = wanted(j)
        for pi in prices:
            for counts in f.greedy({ki: pi.get(ki, 0.0) for ki in kinds}, part.demand)[:GREEDY_COLUMNS]:
                if negative(counts):
                    added += part.add(j, counts, None)
    return added


def _next_round(gen: _PlanGeneration, added: int, smoothed: float, exact: bool, incomplete: bool) -> bool:
    """After a complete round: True for another one, False when the generation ends."""
    if added:
        gen.alpha = SMOOTHING
        return True
    if smoothed:
        gen.alpha = 0.0  # mispricing: the LP's own duals next
        return True
    if incomplete and time.perf_counter() < gen.stop and not gen.raised:
        gen.stopped = "a pricing model found nothing in time"
        return False
    if not exact and gen.raised:
        return True
    gen.converged = exact
    if not exact:
        gen.stopped = "a pricing model was not solved to optimality in time"
    return False


def _cover_counts(part: _PlanPart, deadline: float, near: float | None = None) -> _CoverCounts:
    """The integer counts, their columns checked by the one model (at most 4 solves: a column it
    rejects is banned, a substitution it rejects is dropped, and the cover solved again); `near`:
    a rounding no dearer than it is the counts, no CP-SAT (see _resumed)."""
    columns = part.columns
    ints, scale = scale_to_int([c if c is not None else Fraction(0) for c in part.class_cost])
    part_counts = _CoverCounts([0] * len(columns), [0] * len(columns), scale)
    banned: set[int] = set()
    use_subs = part.subs
    for _ in range(4):
        left = deadline - time.perf_counter()
        dived = time.perf_counter()
        dive_args = _dive_args(part, banned, use_subs)
        # The plain rounding first (quick), then the one that prices the residual demand (new
        # columns; cheaper on openb and most scale runs, not on every one): the cheaper is the start.
        plain = dive(*dive_args, deadline - left / 4)
        priced = dive(
            *dive_args,
            deadline - left / 2,
            _residual_pricing(part),
            price_until=deadline - left * 3 / 4,  # then the plain rounding goes on
        )
        # The plain rounding with moves along the substitutions' chains (dive's `chains`): at
        # 80,000 scale pods 0.013 % above the LP where the others were 1-1.7 % above; its more
        # numerous configurations may not all be confirmed in time (openb), so it is tried
        # first only where cheaper, the counts below its fallback.
        chained = dive(*dive_args, deadline - left / 2, chains=True) if use_subs else None
        dives = [
            (_cost(ints, columns, d.copy), k, _padded(d, len(columns))) for k, d in enumerate((plain, priced)) if d
        ]
        cheapest = min(dives, key=lambda c: c[:2], default=None)
        start = cheapest[2] if cheapest is not None else None
        part.stats["colgen_dive_s"] = round(time.perf_counter() - dived, 3)
        if cheapest is not None:
            part.stats["colgen_dive_cost"] = float(cheapest[0] * scale)
            part.stats["colgen_dive_priced"] = cheapest[1] == 1
        roundings = [c[0] for c in dives] + ([_cost(ints, columns, chained.copy)] if chained is not None else [])
        enough = near is not None and bool(roundings) and float(min(roundings) * scale) <= near
        got = _counts_from(part, start, ints, banned, use_subs, deadline, enough)
        if got is None:
            break
        tries = [got]
        if chained is not None and _cost(ints, columns, chained.copy) < _cost(ints, columns, got[1]):
            chained = _padded(chained, len(columns))
            tries.insert(0, (chained.free, chained.copy, "DIVE_CHAINS", chained.moves))
        outcome = _accepted(part, part_counts, tries, banned, deadline)
        if outcome == "banned":
            continue
        if outcome == "rejected":
            part.stats["colgen_substitution_rejected"] = True
            use_subs = []
            continue
        break
    if not _covers(part.classes, part.demand, columns, part_counts.free_counts, part_counts.copy_counts):
        _last_resort(part, part_counts, banned)
    return part_counts


def _counts_from(part: _PlanPart, start: Dive | None, ints, banned: set[int], use_subs, deadline, rounding_only):
    """The counts from the dive `start` (free, copy, status, moves), or None: with it, CP-SAT with
    the first LP's whole part kept first (relax and fix: a small problem, where all the counts of
    the 40 scale types are too many for it in the time), then over all the counts hinted with the
    better of that and the dive (it may leave the LP's whole part: on openb's 15 types it proves
    the optimum); the warm start's counts where cheaper. `rounding_only`: no CP-SAT."""
    columns = part.columns
    args = (part.classes, part.free_nodes, ints, part.demand, columns, banned, part.warm_free, part.warm_copy)
    got = None
    if start is not None and not rounding_only:
        got = _integer_cover(*args, _stop_at(deadline, 0.25), use_subs, start, keep_floor=True)
        if got is not None:
            got = got[0], got[1], "FIXED_" + got[2], got[3]  # optimal for the fixed part only
            if _cost(ints, columns, got[1]) < _cost(ints, columns, start.copy):
                start = Dive(got[0], got[1], got[3], start.floor_free, start.floor_copy)
    warm = _warm_counts(part, banned)
    hint = start
    if warm is not None and (start is None or _cost(ints, columns, warm.copy) < _cost(ints, columns, start.copy)):
        hint = warm  # the incumbent is the better hint (CP-SAT over all the counts: no floor kept)
    whole = None if rounding_only else _integer_cover(*args, _stop_at(deadline, 0.6), use_subs, hint)
    if whole is not None and (got is None or _cost(ints, columns, whole[1]) <= _cost(ints, columns, got[1])):
        got = whole
    if start is not None and (got is None or _cost(ints, columns, got[1]) > _cost(ints, columns, start.copy)):
        got = start.free, start.copy, "DIVE", start.moves  # the LP's rounding is cheaper
    if warm is not None and (got is None or _cost(ints, columns, got[1]) > _cost(ints, columns, warm.copy)):
        got = warm.free, warm.copy, "WARM", warm.moves  # the incumbent (a baseline's mix) is cheaper
    return got


def _dive_args(part: _PlanPart, banned: set[int], subs) -> tuple[Any, Any, Any, Any, Any, set[int], Any]:
    """dive's leading arguments for this part: its classes, free nodes, costs, demand, columns."""
    return part.classes, part.free_nodes, part.class_cost, part.demand, part.columns, banned, subs


def _last_resort(part: _PlanPart, part_counts: _CoverCounts, banned: set[int]) -> None:
    """The counts of the LP's plain rounding without substitutions (no configuration of theirs to
    confirm), even past the deadline (LAST_RESORT_SECONDS at most), when the counts found in time
    do not cover: substitutions rejected for checks undecided under load, then nothing found in
    the time left, had lost the cover (the table's estimate, minutes at 80,000 pods, the answer)."""
    got = dive(*_dive_args(part, banned, []), time.perf_counter() + LAST_RESORT_SECONDS)
    if got is not None:
        got = _padded(got, len(part.columns))
        part_counts.free_counts, part_counts.copy_counts, part_counts.status = got.free, got.copy, "DIVE_LAST"


def _accepted(part: _PlanPart, part_counts: _CoverCounts, tries: list, banned: set[int], deadline: float) -> str:
    """The first of `tries` (free and copy counts, status, moves) whose columns the one model
    does not reject and whose moves it confirms, into `part_counts`: "done"; "banned" (columns
    it rejected, banned: the counts are solved again), or "rejected" (no try's moves confirmed)."""
    columns = part.columns
    for free, copy, status, moves in tries:
        pad = [0] * (len(columns) - len(free))
        part_counts.free_counts, part_counts.copy_counts, part_counts.status = free + pad, copy + pad, status
        bad = [
            i
            for i, c in enumerate(columns)
            if (part_counts.free_counts[i] or part_counts.copy_counts[i])
            and _checked(c, part.ones, deadline - time.perf_counter()) is False
        ]
        if bad:
            banned.update(bad)
            return "banned"
        if not any(moves.values()):
            return "done"
        if _realize_moves(part, part_counts, moves, deadline):
            part.stats["colgen_substituted_pods"] = sum(moves.values())
            return "done"
    return "rejected"


def _padded(d: Dive, n: int) -> Dive:
    """`d` over `n` columns (columns added after it took none)."""
    pad = [0] * (n - len(d.free))
    if not pad:
        return d
    return Dive(d.free + pad, d.copy + pad, d.moves, d.floor_free + pad, d.floor_copy + pad)


def _warm_counts(part: _PlanPart, banned: set[int]) -> Dive | None:
    """The warm start's counts per column (the incumbent: a valid placement's nodes), as a Dive
    with no floor; None without a warm start, or when it does not cover every kind or uses a
    banned column."""
    if not part.warm_free and not part.warm_copy:
        return None
    columns = part.columns
    index = {(c.cls, c.counts): i for i, c in enumerate(columns)}
    free, copy = [0] * len(columns), [0] * len(columns)
    for counted, into in ((part.warm_free, free), (part.warm_copy, copy)):
        for key, n in counted.items():
            into[index[key]] += n
    if any(free[i] or copy[i] for i in banned) or not _covers(part.classes, part.demand, columns, free, copy):
        return None
    zero = [0] * len(columns)
    return Dive(free, copy, {}, zero, zero)


def _residual_pricing(part: _PlanPart):
    """The dive's pricing (colgen_dive.dive's `price`): the greedy fill of every class that has
    the compact model at the residual LP's duals, each kind at most its pods still uncovered, so
    that the pods the LP's whole part leaves get mixed columns of their own (the columns of the
    generation are full patterns of the LP's kinds). Columns of negative reduced cost are added,
    unchecked (the integer counts check those they use); deterministic."""

    def price(pi: dict[int, float], left: dict[int, int], free_left: list[int], sigma: list[float]) -> list[int]:
        new = []
        for j, f in enumerate(part.fast):
            cost = part.cost_f[j]
            limit = cost if cost is not None else math.inf
            if free_left[j]:
                limit = min(limit, sigma[j])
            if f is None or math.isinf(limit):
                continue
            kinds = part.classes[j].kinds
            reduced = {ki: pi.get(ki, 0.0) for ki in kinds}
            for counts in f.greedy(reduced, left)[:GREEDY_COLUMNS]:
                if sum(reduced[ki] * n for ki, n in zip(kinds, counts)) > limit + 1e-6 and part.add(j, counts, None):
                    new.append(len(part.columns) - 1)
        part.stats["colgen_residual_columns"] = part.stats.get("colgen_residual_columns", 0) + len(new)
        return new

    return price


def _realize_moves(part: _PlanPart, counts: _CoverCounts, moves: dict, deadline: float) -> bool:
    """Pods of smaller kinds take places of larger ones: the configurations that gives, each
    checked by the one model, replace `counts`. False (counts kept) if it rejects any."""
    columns = part.columns
    used, complete = realize(part.classes, columns, counts.free_counts, counts.copy_counts, moves)
    index = {(c.cls, c.counts): i for i, c in enumerate(columns)}
    placed_free, placed_copy = [0] * len(columns), [0] * len(columns)
    rejected = not complete
    for j, got, copy, n in used:
        i = index.get((j, got))
        if i is None:
            i = index[(j, got)] = len(columns)
            columns.append(PlanColumn(j, got, None))
            placed_free.append(0)
            placed_copy.append(0)
        # Checked, new or met again unused (undecided in time counts as rejected).
        rejected = rejected or _checked(columns[i], part.ones, deadline - time.perf_counter()) is not True
        (placed_copy if copy else placed_free)[i] += n
    if rejected:
        return False
    counts.free_counts, counts.copy_counts = placed_free, placed_copy
    return True


def _solution(part: _PlanPart, gen: _PlanGeneration, counts: _CoverCounts, t0: float, gen_s: float) -> PlanSolution:
    """The PlanSolution and its figures."""
    columns, class_cost = part.columns, part.class_cost
    scale = counts.scale
    # A column with copies is of a class that has a copy type (its cost is not None).
    cost = cast(
        Fraction,
        sum((cast(Fraction, class_cost[c.cls]) * n for c, n in zip(columns, counts.copy_counts) if n), Fraction(0)),
    )
    covered = _covers(part.classes, part.demand, columns, counts.free_counts, counts.copy_counts)
    # Costs are multiples of `scale`: a bound rounds up to the next multiple.
    bound = gen.bound
    lower = Fraction(math.ceil(Fraction(bound) / scale - Fraction(1, 10**6))) * scale if bound > 0 else Fraction(0)
    sol = PlanSolution(
        part.classes,
        class_cost,
        part.class_type,
        part.free_nodes,
        columns,
        counts.free_counts,
        counts.copy_counts,
        cost,
        min(lower, cost) if covered else lower,
        gen.lp_value,
        gen.converged,
        covered,
        gen.stopped,
    )
    stats: ColgenStats = {
        "colgen_rounds": gen.rounds,
        "colgen_greedy_rounds": gen.greedy_rounds,
        "colgen_exact_rounds": gen.exact_rounds,
        "colgen_farley_bound": round(gen.farley, 3),
        "colgen_theta": round(gen.theta, 4),
        "colgen_columns": len(columns),
        "colgen_classes": len(part.classes),
        "colgen_kinds": len(part.demand),  # pending pods that have a node, grouped into kinds
        "colgen_s": round(gen_s, 3),
        "colgen_integer_status": counts.status,
        "colgen_integer_s": round(time.perf_counter() - t0 - gen_s, 3),
        "colgen_converged": gen.converged,
        "colgen_lp_value": gen.lp_value,
    }
    stats.update(part.stats)
    if gen.stopped:
        stats["colgen_stopped"] = gen.stopped
    sol.stats = stats
    return sol


def _alone(fast, one, nc, ki: int, pods: int, stats: ColgenStats):
    """The configuration with the most pods of kind `ki` alone on class `nc` (one model's values),
    or None."""
    i = nc.kinds.index(ki)
    var = one.vars[i]
    if var is None:
        return None
    hi = min(pods, int(var.proto.domain[1]))
    if fast is not None:
        got = fast.price({ki: 1.0}, 1.0)
        if got is not None:
            hi = min(hi, got[0][i])
    one.b.model.cp.clear_objective()
    while hi > 0:
        counts = tuple(hi if k == i else 0 for k in range(len(nc.kinds)))
        conf = one.check(counts, seconds=2.0)
        stats["colgen_fast_checked"] += 1
        if conf:
            return conf
        hi -= 1 if conf is False else hi  # undecided in time: give up on this class
    return None


class _CoverMaster:
    """The restricted covering LP (GLOP): copies' cost minimised, every kind's pods covered."""

    def __init__(self, classes, free_nodes, cost, demand):
        self.lp = pywraplp.Solver.CreateSolver("GLOP")
        inf = self.lp.infinity()
        self.kind_rows = {k: self.lp.Constraint(d, inf) for k, d in demand.items()}
        self.free_rows = [self.lp.Constraint(-inf, n) if n else None for n in free_nodes]
        self.objective = self.lp.Objective()
        self.objective.SetMinimization()
        self.classes, self.cost, self.free_nodes = classes, cost, free_nodes
        # A slack per kind at a high price: the master is feasible before it has columns for all.
        big = 1.0 + 10 * sum(c for c in cost if c is not None) * max([1] + list(demand.values()))
        for k, row in self.kind_rows.items():
            s = self.lp.NumVar(0.0, inf, f"short{k}")
            row.SetCoefficient(s, 1)
            self.objective.SetCoefficient(s, big)

    def add_substitutions(self, pairs) -> None:
        """A pod of kind b in a place of kind a (colgen_substitution.py), at no cost."""
        for a, b in pairs:
            z = self.lp.NumVar(0.0, self.lp.infinity(), "")
            self.kind_rows[a].SetCoefficient(z, -1)
            self.kind_rows[b].SetCoefficient(z, 1)

    def add_columns(self, cols) -> None:
        for col in cols:
            j = col.cls
            if self.free_nodes[j]:
                x = self.lp.NumVar(0.0, self.lp.infinity(), "")
                self.free_rows[j].SetCoefficient(x, 1)
                self._cover(col, x)
            if self.cost[j] is not None:
                y = self.lp.NumVar(0.0, self.lp.infinity(), "")
                self.objective.SetCoefficient(y, self.cost[j])
                self._cover(col, y)

    def _cover(self, col, var) -> None:
        for ki, n in zip(self.classes[col.cls].kinds, col.counts):
            if n and ki in self.kind_rows:
                self.kind_rows[ki].SetCoefficient(var, n)

    def solve(self, until: float | None = None):
        """The LP's value, the kinds' duals and the free rows' (sigma), solved by `until`
        (perf_counter) if given: MasterTimeUp when it cannot."""
        solve_master(self.lp, "covering master", until)
        pi = {k: max(0.0, r.dual_value()) for k, r in self.kind_rows.items()}
        # A free node's row: its dual (<= 0 in a minimisation) is what one more free node saves.
        sigma = [(-min(0.0, r.dual_value()) if r is not None else 0.0) for r in self.free_rows]
        return self.objective.Value(), pi, sigma


def _stop_at(deadline: float, share: float) -> float:
    """`share` of the time left before `deadline` (perf_counter), from now."""
    return time.perf_counter() + max(0.1, (deadline - time.perf_counter()) * share)


def _cost(ints, columns, copy_counts) -> int:
    """The integer counts' cost (in `ints`, the classes' costs scaled to integers)."""
    return sum(ints[c.cls] * n for c, n in zip(columns, copy_counts) if n)


def _integer_cover(
    classes,
    free_nodes,
    ints,
    demand,
    columns,
    banned,
    warm_free,
    warm_copy,
    hard_stop,
    subs=(),
    start=None,
    keep_floor=False,
):
    """Free nodes and copies per column (CP-SAT): every kind covered, the least cost; with
    `subs`, pods of kind b may take places of kind a (pair (a, b)): how many, per pair."""
    m = cp_model.CpModel()
    xs, ys = [], []
    top = max([1] + list(demand.values()))
    for i, c in enumerate(columns):
        ok = i not in banned
        has_copy = ints[c.cls] > 0 or False
        hi_x, hi_y = free_nodes[c.cls] if ok else 0, top if ok and has_copy else 0
        # `keep_floor`: the dive's first LP's whole part is kept (relax and fix): CP-SAT
        # decides the fractional rest, a small problem, where the whole one is too large.
        lo_x, lo_y = (min(start.floor_free[i], hi_x), min(start.floor_copy[i], hi_y)) if keep_floor else (0, 0)
        xs.append(m.new_int_var(lo_x, hi_x, f"x{i}"))
        ys.append(m.new_int_var(lo_y, hi_y, f"y{i}"))
    for j, n in enumerate(free_nodes):
        vs = [x for c, x in zip(columns, xs) if c.cls == j]
        if vs:
            m.add(sum(vs) <= n)
    by_kind = defaultdict(list)
    for c, x, y in zip(columns, xs, ys):
        for ki, n in zip(classes[c.cls].kinds, c.counts):
            if n and ki in demand:
                by_kind[ki].append(n * (x + y))
    zs = []
    for a, b in subs:
        z = m.new_int_var(0, demand[b], f"z{a}_{b}")
        zs.append(z)
        by_kind[a].append(-z)
        by_kind[b].append(z)
        m.add_hint(z, start.moves.get((a, b), 0) if start is not None else 0)
    for ki, d in demand.items():
        if not by_kind[ki]:
            return None
        m.add(sum(by_kind[ki]) >= d)
    cost = sum(ints[c.cls] * y for c, y in zip(columns, ys))
    # Without a warm start (plan's columns), a greedy cover as the hint: CP-SAT starts from a
    # solution, so a short time still gives one (all-zero hints left it none on a loaded machine).
    # `start` (the LP's rounding, colgen_dive.py) is the better hint when there is one.
    greedy = _greedy_cover(classes, demand, columns, banned, ints) if not (warm_free or warm_copy or start) else {}
    for i, c in enumerate(columns):
        if start is not None:
            m.add_hint(xs[i], start.free[i])
            m.add_hint(ys[i], start.copy[i])
            continue
        m.add_hint(xs[i], min(free_nodes[c.cls], warm_free.get((c.cls, c.counts), 0)))
        m.add_hint(ys[i], warm_copy.get((c.cls, c.counts), 0) or greedy.get(i, 0))
    m.minimize(cost)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 2
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = 0
    left = max(0.1, hard_stop - time.perf_counter())
    solver.parameters.max_deterministic_time = left
    solver.parameters.max_time_in_seconds = left
    status = interrupt.watch(solver).solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    moves = {p: solver.value(z) for p, z in zip(subs, zs)}
    return [solver.value(x) for x in xs], [solver.value(y) for y in ys], solver.status_name(status), moves


def _greedy_cover(classes, demand, columns, banned, ints) -> dict[int, int]:
    """Copies per column that cover every kind's demand (column -> copies): kind by kind, the
    bought column with the most pods of the kind, as many copies as its pods still short need."""
    got: Counter = Counter()
    out: dict[int, int] = {}
    for ki, d in sorted(demand.items()):
        if got[ki] >= d:
            continue
        best, most = None, 0
        for i, c in enumerate(columns):
            if i in banned or ints[c.cls] <= 0 or ki not in classes[c.cls].kinds:
                continue
            n = c.counts[classes[c.cls].kinds.index(ki)]
            if n > most:
                best, most = i, n
        if best is None:
            continue
        copies = math.ceil((d - got[ki]) / most)
        out[best] = out.get(best, 0) + copies
        for kj, n in zip(classes[columns[best].cls].kinds, columns[best].counts):
            got[kj] += n * copies
    return out


def _covers(classes, demand, columns, free_counts, copy_counts) -> bool:
    got: Counter = Counter()
    for c, x, y in zip(columns, free_counts, copy_counts):
        for ki, n in zip(classes[c.cls].kinds, c.counts):
            got[ki] += n * (x + y)
    return all(got[k] >= d for k, d in demand.items())
