"""The cheapest mix of new nodes by column generation (`draopt plan` on large inputs).

The same reduction as colgen.py, as a covering problem (Gilmore-Gomory cutting stock with
several stock sizes): a column is a configuration (pods per kind) the one model accepts on the
representative node of a class of interchangeable nodes; the input's own nodes of a class are
free and limited (its real nodes), copies of a node type cost the type's cost and are unlimited.

* master (LP, GLOP): minimise the copies' cost s.t. every pod of every kind that has a node
  is placed (sum of configurations >= its pods) and the free nodes of a class are not overused;
* pricing: the compact model of colgen_pricing.py where the class has its structure (each column
  it returns checked by the one model), the one model otherwise, maximising sum_k pi_k n_k;
* bound (Farley): with pi scaled by theta = min over copied classes of cost / best value
  (<= 1, so that no copy has a negative reduced cost), theta * (sum_k pi_k pods_k - sum over
  free classes of nodes * best value) is a lower bound of every mix's cost, at any round;
* integer: CP-SAT over configuration counts, hinted with (and never above) the warm start (the
  first-fit-decreasing estimate's own nodes, whose contents are columns from the start).

`invert` gives per class and column how many free nodes and how many copies take it.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ortools.linear_solver import pywraplp
from ortools.sat.python import cp_model

from draopt.model.colgen import PRICE_FIRST_SECONDS, PRICE_SECONDS, _checked, price_classes
from draopt.model.colgen_pricing import DevicePricing
from draopt.model.colgen_substitution import realize, substitutions
from draopt.model.encodings.base import scale_to_int
from draopt.model.patterns import NodeClass, node_classes
from draopt.model.placement import one_node_model

LP_SHARE = 0.7  # of the time given, for the generation (the rest: integer counts)
SMOOTHING = 0.5  # Wentges: weight of the best bound's duals in the prices priced
LP_TOLERANCE = 1e-4  # relative gap between the bound and the LP at which the generation stops


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
    stats: dict[str, Any] = field(default_factory=dict)

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
        warm: dict[str, str | None] | None = None,
        alias: dict[str, str] | None = None,
    ) -> PlanSolution:
        """`type_of`: copy node -> its type (every other node is the input's, free); `warm`: pod
        key -> node of a valid placement (the estimate's), its nodes' contents the first columns;
        `alias`: a node of the warm placement that is not in the cluster -> the copy it is alike
        (the estimate's copies beyond the first of a type)."""
        t0 = time.perf_counter()
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
        fast_stats: dict[str, Any] = {"colgen_fast_classes": sum(f is not None for f in fast), "colgen_fast_checked": 0}
        subs = [(a, b) for a, b in substitutions(classes, fast) if a in demand and b in demand]
        fast_stats["colgen_substitutions"] = len(subs)
        columns: list[PlanColumn] = []
        seen: set[tuple] = set()

        def add(j: int, counts: tuple[int, ...], conf) -> bool:
            if (j, counts) in seen or not any(counts):
                return False
            seen.add((j, counts))
            columns.append(PlanColumn(j, counts, conf))
            return True

        class_of = {n.name: j for j, nc in enumerate(classes) for n in nc.nodes}
        warm_free: Counter = Counter()
        warm_copy: Counter = Counter()
        if warm:
            per_node: dict[str, Counter] = defaultdict(Counter)
            for kind in kinds:
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
                add(j, counts, None)
                (warm_copy if name in type_of else warm_free)[(j, counts)] += 1
        # A column for every kind (its most pods alone on the first class that can buy more of
        # them, or else any class): the covering master and the integer counts need one each.
        has = {ki for (j, counts) in seen for ki, n in zip(classes[j].kinds, counts) if n}
        for ki in demand:
            if ki in has or time.perf_counter() > deadline:
                continue
            for j in sorted(
                (j for j, nc in enumerate(classes) if ki in nc.kinds), key=lambda j: (class_cost[j] is None, j)
            ):
                alone = _alone(fast[j], ones[j], classes[j], ki, demand[ki], fast_stats)
                if alone is not None and add(j, alone.counts, alone):
                    break
        cost_f = [float(c) if c is not None else None for c in class_cost]
        # ------------------------------------------------------------ generation
        lp_stop = t0 + (deadline - t0) * LP_SHARE
        master = _CoverMaster(classes, free_nodes, cost_f, demand)
        master.add_substitutions(subs)
        done, rounds, converged, stopped, lp_value = 0, 0, False, "", None
        bound = _pooled_bound(fast, classes, free_nodes, class_cost, demand)
        cap = PRICE_FIRST_SECONDS
        center: dict[int, float] | None = None  # Wentges smoothing, as in colgen.py
        alpha = SMOOTHING
        while True:
            master.add_columns(columns[done:])
            done = len(columns)
            lp_value, pi_lp, sigma = master.solve()
            rounds += 1
            if lp_value is not None and lp_value - bound <= LP_TOLERANCE * max(1.0, lp_value):
                converged = True
                break
            a = alpha if center is not None else 0.0
            pi = pi_lp if not a else {k: a * center[k] + (1 - a) * pi_lp[k] for k in pi_lp}
            best = []
            exact, added, incomplete = True, 0, False
            limits = []
            for j in range(len(classes)):
                limit = cost_f[j] if cost_f[j] is not None else math.inf
                if free_nodes[j]:
                    limit = min(limit, sigma[j])
                limits.append(limit)

            def wanted(j: int):
                def negative(counts, j=j):
                    """A negative reduced cost at the LP's own duals: a column the master lacks."""
                    return sum(pi_lp.get(ki, 0.0) * n for ki, n in zip(classes[j].kinds, counts)) > limits[j] + 1e-6

                return negative

            priced = price_classes(
                classes,
                fast,
                ones,
                lambda j: {ki: pi.get(ki, 0.0) for ki in classes[j].kinds},
                wanted,
                cap,
                lp_stop,
                fast_stats,
            )
            for j, got in enumerate(priced):
                if got == "late":
                    stopped = "the time limit ran out during the column generation"
                    break
                if got is None:
                    # Nothing in time on this class: no bound this round, the other classes
                    # still give columns.
                    exact, incomplete = False, True
                    best.append(math.inf)
                    continue
                confs, upper, proven = got
                exact = exact and proven
                best.append(max(0.0, upper))
                check = wanted(j)
                for conf in confs if isinstance(confs, list) else [confs]:
                    if conf is not None and check(conf.counts):
                        added += add(j, conf.counts, conf)
            else:
                farley = 0.0 if incomplete else _farley(pi, demand, best, cost_f, free_nodes)
                if farley > bound or (center is None and not incomplete):
                    bound, center = max(bound, farley), pi
                if added:
                    alpha = SMOOTHING
                    continue
                if a:
                    alpha = 0.0  # mispricing: the LP's own duals next
                    continue
                if incomplete and time.perf_counter() < lp_stop and cap >= PRICE_SECONDS:
                    stopped = "a pricing model found nothing in time"
                    break
                if not exact and cap < PRICE_SECONDS:
                    cap = min(PRICE_SECONDS, cap * 4)
                    continue
                converged = exact
                if not exact:
                    stopped = "a pricing model was not solved to optimality in time"
                break
            break
        gen_s = time.perf_counter() - t0
        # ------------------------------------------------------------ integer counts
        ints, scale = scale_to_int([c if c is not None else Fraction(0) for c in class_cost])
        free_counts, copy_counts, int_status = [0] * len(columns), [0] * len(columns), "UNKNOWN"
        banned: set[int] = set()
        use_subs = subs
        for _ in range(4):
            got = _integer_cover(
                classes,
                free_nodes,
                ints,
                demand,
                columns,
                banned,
                warm_free,
                warm_copy,
                time.perf_counter() + max(0.1, (deadline - time.perf_counter()) * 0.8),
                use_subs,
            )
            if got is None:
                break
            free_counts, copy_counts, int_status, moves = got
            bad = []
            for i, c in enumerate(columns):
                if free_counts[i] or copy_counts[i]:
                    ok = _checked(c, ones, deadline - time.perf_counter())
                    if ok is False:
                        bad.append(i)
            if bad:
                banned.update(bad)
                continue
            if not any(moves.values()):
                break
            # Pods of smaller kinds take places of larger ones: the configurations that gives,
            # each checked by the one model; any it rejects, the cover is solved again without.
            used, complete = realize(classes, columns, free_counts, copy_counts, moves)
            index = {(c.cls, c.counts): i for i, c in enumerate(columns)}
            placed_free, placed_copy = [0] * len(columns), [0] * len(columns)
            rejected = not complete
            for j, counts, copy, n in used:
                i = index.get((j, counts))
                if i is None:
                    i = index[(j, counts)] = len(columns)
                    columns.append(PlanColumn(j, counts, None))
                    placed_free.append(0)
                    placed_copy.append(0)
                # Checked, new or met again unused (undecided in time counts as rejected).
                rejected = rejected or _checked(columns[i], ones, deadline - time.perf_counter()) is not True
                (placed_copy if copy else placed_free)[i] += n
            if rejected:
                fast_stats["colgen_substitution_rejected"] = True
                use_subs = []
                continue
            fast_stats["colgen_substituted_pods"] = sum(moves.values())
            free_counts, copy_counts = placed_free, placed_copy
            break
        cost = sum((class_cost[c.cls] * n for c, n in zip(columns, copy_counts) if n), Fraction(0))
        covered = _covers(classes, demand, columns, free_counts, copy_counts)
        # Costs are multiples of `scale`: a bound rounds up to the next multiple.
        lower = Fraction(math.ceil(Fraction(bound) / scale - Fraction(1, 10**6))) * scale if bound > 0 else Fraction(0)
        sol = PlanSolution(
            classes,
            class_cost,
            class_type,
            free_nodes,
            columns,
            free_counts,
            copy_counts,
            cost,
            min(lower, cost) if covered else lower,
            lp_value,
            converged,
            covered,
            stopped,
        )
        sol.stats = {
            "colgen_rounds": rounds,
            "colgen_columns": len(columns),
            "colgen_classes": len(classes),
            "colgen_s": round(gen_s, 3),
            "colgen_integer_status": int_status,
            "colgen_integer_s": round(time.perf_counter() - t0 - gen_s, 3),
            "colgen_converged": converged,
            "colgen_lp_value": lp_value,
            **fast_stats,
        }
        if stopped:
            sol.stats["colgen_stopped"] = stopped
        return sol


def _alone(fast, one, nc, ki: int, pods: int, stats: dict):
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


def _pooled_bound(fast, classes, free_nodes, class_cost, demand) -> float:
    """A bound without any round: per resource (node resources, and devices: a share counts its
    part of one), the demand the free nodes cannot hold, bought at the best capacity per cost.
    Pooling a resource over nodes relaxes every node's limits, so any mix costs at least this.
    Needs the compact structure (colgen_pricing) of every class; 0 otherwise."""
    if any(f is None for f in fast):
        return 0.0
    need: dict = defaultdict(Fraction)
    for kind_index, pods in demand.items():
        for f in fast:
            if kind_index in f.kinds:
                i = f.kinds.index(kind_index)
                for r, a in f.demand[i].items():
                    need[r] += a * pods
                need["devices"] += (f.whole[i] + f.share[i] / f.capacity) * pods
                break
    best = 0.0
    for r, total in need.items():
        have = Fraction(0)
        per_cost = 0.0
        for j, f in enumerate(fast):
            cap = Fraction(f.devices) if r == "devices" else f.free.get(r)
            if cap is None:
                break  # a class that does not limit r: no bound from r
            have += cap * free_nodes[j]
            if class_cost[j] is not None:
                per_cost = max(per_cost, float(cap / class_cost[j]))
        else:
            if total > have and per_cost > 0:
                best = max(best, float(total - have) / per_cost)
    return best


def _farley(
    pi: dict[int, float], demand: dict[int, int], best: list[float], cost: list[float | None], free_nodes: list[int]
) -> float:
    """Lagrangian lower bound at theta * pi (see the module docstring)."""
    theta = 1.0
    for b, c in zip(best, cost):
        if c is not None and b > c:
            theta = min(theta, c / b)
    value = sum(pi.get(k, 0.0) * d for k, d in demand.items()) - sum(n * b for n, b in zip(free_nodes, best))
    return max(0.0, theta * value)


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

    def solve(self):
        status = self.lp.Solve()
        if status != pywraplp.Solver.OPTIMAL:
            raise RuntimeError(f"internal: the covering master LP ended with status {status}")
        pi = {k: max(0.0, r.dual_value()) for k, r in self.kind_rows.items()}
        # A free node's row: its dual (<= 0 in a minimisation) is what one more free node saves.
        sigma = [(-min(0.0, r.dual_value()) if r is not None else 0.0) for r in self.free_rows]
        return self.objective.Value(), pi, sigma


def _integer_cover(classes, free_nodes, ints, demand, columns, banned, warm_free, warm_copy, hard_stop, subs=()):
    """Free nodes and copies per column (CP-SAT): every kind covered, the least cost; with
    `subs`, pods of kind b may take places of kind a (pair (a, b)): how many, per pair."""
    m = cp_model.CpModel()
    xs, ys = [], []
    top = max([1] + list(demand.values()))
    for i, c in enumerate(columns):
        ok = i not in banned
        xs.append(m.new_int_var(0, free_nodes[c.cls] if ok else 0, f"x{i}"))
        has_copy = ints[c.cls] > 0 or False
        ys.append(m.new_int_var(0, top if ok and has_copy else 0, f"y{i}"))
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
        m.add_hint(z, 0)
    for ki, d in demand.items():
        if not by_kind[ki]:
            return None
        m.add(sum(by_kind[ki]) >= d)
    cost = sum(ints[c.cls] * y for c, y in zip(columns, ys))
    for i, c in enumerate(columns):
        m.add_hint(xs[i], min(free_nodes[c.cls], warm_free.get((c.cls, c.counts), 0)))
        m.add_hint(ys[i], warm_copy.get((c.cls, c.counts), 0))
    m.minimize(cost)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 2
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = 0
    left = max(0.1, hard_stop - time.perf_counter())
    solver.parameters.max_deterministic_time = left
    solver.parameters.max_time_in_seconds = left
    status = solver.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    moves = {p: solver.value(z) for p, z in zip(subs, zs)}
    return [solver.value(x) for x in xs], [solver.value(y) for y in ys], solver.status_name(status), moves


def _covers(classes, demand, columns, free_counts, copy_counts) -> bool:
    got: Counter = Counter()
    for c, x, y in zip(columns, free_counts, copy_counts):
        for ki, n in zip(classes[c.cls].kinds, c.counts):
            got[ki] += n * (x + y)
    return all(got[k] >= d for k, d in demand.items())
