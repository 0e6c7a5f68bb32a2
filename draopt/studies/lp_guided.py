"""`lp-guided`: the configuration LP's plan, used while pods arrive (--protocol fgd-paper).

The plan (draopt/studies/lp_plan.py, draopt's column generation): for the classes of
interchangeable nodes and the arrivals expected up to a horizon (a share of the cluster's GPU
capacity), how many nodes of each class take each configuration (pods per shape on one node), and
the LP's dual prices. Online, a pod goes

1. to a node whose configuration still has a free slot for its shape (ties: fgd's score, then the
   protocol's node rank);
2. else to an empty node of a class whose plan has a configuration with its shape and nodes still
   unassigned: the node takes that configuration (the one with most LP nodes left);
3. else where fgd puts it (the protocol's own scorer: the same memoised scores).

Both sources first keep the empty nodes of the most GPUs from smaller pods while no more of them
are left than the whole-node pods the expectation holds for the rest of the horizon (learned:
with a margin for its estimate, `_whole_demand`), and keep whole-node pods off the nodes only
bigger whole-node shapes fit (`_keep_whole_nodes`; only when another node fits the pod). Work-conserving: step 3 takes every
feasible node, so a pod that fits somewhere is placed, and no pod moves. Devices: fgd's GPU
choice, on a planned node among the GPUs that leave its other free slots packable
(`_slot_keeping_gpus`). Two sources of expectation:

* `known`: the trace's shape frequencies (what FGD's typical pods use), scaled to the pods the
  horizon holds, the horizon cut to the share of the capacity the LP places (`fitted_horizon`):
  depends only on the trace and the nodes, solved once per cluster and reused;
* `learned`: the shapes of the arrivals so far (`LearnedExpectation` is given nothing else: it
  cannot read the trace's frequencies).

Re-solves: at the arrived shares of `RESOLVE_AT`, the plan is solved again for the arrivals so far
plus the expectation of the rest (warm-started from the last columns); nodes keep the
configurations they were given, the new plan's configurations are handed out to the nodes left.
The known source re-solves only when the arrivals drift from its frequencies by more than
`DRIFT` (L1 share). A re-solve whose LP has not converged within `rounds` keeps the last plan
(counted in `stats["resolve_timeouts"]`).

Deterministic for a seed on any machine: every LP solve is bounded by work, not by a wall clock
(`rounds` of the column generation, its pricing solves by CP-SAT's deterministic time).

`bid-price`: no slots; fgd's best score, and among equal scores the node whose class has the least
price per GPU milli (the LP's dual of a node of the class over its GPU milli: the duals as a cost
per unit of each class's resources).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from draopt.studies.lp_plan import Plan, PlanModel, ceil_nodes

HORIZON = 1.0  # the plan's arrivals: this share of the cluster's GPU capacity
RESOLVE_AT = (0.1, 0.3, 0.6)  # arrived shares of the horizon where the plan is solved again
DRIFT = 0.15  # known source: re-solve only when arrivals so far differ this much (L1 share)
PLAN_ROUNDS = 40  # column generation rounds per LP solve (the known plans converge in 2-3)
PRICE_DIGITS = 6  # bid-price: prices per GPU milli compared to this many decimals
FIRST_LEARNED = 0.02  # learned: the first plan once this share of the horizon has arrived
WHOLE_MARGIN = 2.0  # learned: whole-node pods still to come counted up to this many standard deviations


class KnownExpectation:
    """The trace's shape frequencies (the name-sorted trace's pods, FGD's typical-pod source)."""

    name = "known"

    def __init__(self, freq: np.ndarray):
        self.freq = np.asarray(freq, dtype=float)

    def rest(self, seen: np.ndarray, pods_left: float) -> np.ndarray:
        return self.freq * (pods_left / self.freq.sum())


class LearnedExpectation:
    """The frequencies of the arrivals so far; it is given nothing of the trace."""

    name = "learned"

    def rest(self, seen: np.ndarray, pods_left: float) -> np.ndarray:
        total = float(seen.sum())
        return seen * (pods_left / total) if total else np.zeros(len(seen))


def plan_model(pc) -> PlanModel:
    """The cluster's PlanModel, built once (PaperCluster.lp_model)."""
    if pc.lp_model is None:
        pc.lp_model = PlanModel(pc.c)
    return pc.lp_model


def known_plan(pc, horizon: float, rounds: int, warm_contents=None) -> Plan:
    """The plan of the known source: depends only on the trace and the nodes (cached per horizon
    and round cap on the PaperCluster, reused across seeds). `warm_contents(pc, horizon)`: node
    contents whose configurations start the column generation (the protocol's fgd on the
    name-sorted trace, up to the horizon)."""
    key = ("known", horizon, rounds)
    got = pc.lp_plans.get(key)
    if got is None:
        freq = trace_frequencies(pc)
        pods = horizon * pc.capacity_milli / float((freq * pc.shape_request).sum() / freq.sum())
        model = plan_model(pc)
        warm = model.columns_of(warm_contents(pc, horizon)) if warm_contents is not None else []
        got = pc.lp_plans[key] = model.solve(freq * (pods / freq.sum()), rounds=rounds, columns=warm)
    return got


def fitted_horizon(pc, horizon: float, rounds: int, warm_contents=None) -> float:
    """The known plan's horizon cut to what its LP places: the share of the GPU capacity the LP
    for `horizon` places (at most `horizon`). Why: the LP for more pods than the cluster holds
    leaves some out (3 % of the capacity on default, 11 % on gpushare100), but online they arrive
    before the cluster is full, find no slot and, placed by fgd, take room the plan holds for
    other shapes. Planned for what fits, the slots cover the pods that arrive until it is full."""
    plan = known_plan(pc, horizon, rounds, warm_contents)
    return min(horizon, plan.lp_value / pc.capacity_milli)


def expected_sequence(expected: np.ndarray) -> np.ndarray:
    """Shape indices in the proportions of `expected` (pods per shape, rounded), in an order fixed
    by a constant seed: what fgd places for the learned plan's warm start."""
    counts = np.round(np.asarray(expected, dtype=float)).astype(np.int64)
    seq = np.repeat(np.arange(len(counts)), counts)
    return seq[np.random.default_rng(0).permutation(len(seq))]


def trace_frequencies(pc) -> np.ndarray:
    return np.bincount(np.asarray(pc.c.pod_shape, dtype=np.int64), minlength=len(pc.c.shapes)).astype(float)


class LpGuided:
    """The policy (see the module docstring); `source` "known" or "learned", `mode` "slots" or
    "prices" (bid prices alone)."""

    def __init__(
        self,
        fgd_factory,
        source: str = "known",
        warm_contents=None,
        *,
        mode: str = "slots",
        rounds: int = PLAN_ROUNDS,
        horizon: float = HORIZON,
    ):
        self.source, self.mode, self.rounds, self.horizon = source, mode, rounds, horizon
        self.warm_contents = warm_contents
        self.first_learned, self.resolve_at, self.drift = FIRST_LEARNED, RESOLVE_AT, DRIFT
        # the known source's count is the trace's; learned's is an estimate (see _whole_demand)
        self.whole_margin = WHOLE_MARGIN if source == "learned" else 0.0
        self.name = "bid-price" if mode == "prices" else ("lp-guided" if source == "known" else "lp-guided-learned")
        self.fgd = fgd_factory()  # the protocol's fgd (this module imports nothing of paper_protocol)
        self.stats: dict[str, Any] = {}  # this run's
        self.totals: dict[str, Any] = {}  # over every run (--stats)

    # ---------------------------------------------------------------- run start
    def start(self, ctx) -> None:
        pc = ctx.pc
        self.fgd.start(ctx)
        self._gpu_milli = (ctx.c.cap * ctx.c.present).sum(axis=1) * pc.gpu_scale
        n, s = ctx.c.n, len(ctx.c.shapes)
        self.expect = KnownExpectation(trace_frequencies(pc)) if self.source == "known" else LearnedExpectation()
        self.seen = np.zeros(s)
        self.arrived = 0
        self.horizon_milli = self.horizon * pc.capacity_milli
        self.slots = np.zeros((n, s), dtype=np.int64)  # free slots of each node's configuration
        self.node_key: list[tuple | None] = [None] * n  # the configuration a node was given
        self.given: dict[tuple, int] = {}  # configuration key -> nodes given it
        self.empty = np.ones(n, dtype=bool)
        gpus = ctx.c.present.sum(axis=1)
        most = int(gpus.max()) if n else 0
        self.whole_node = gpus >= most  # nodes with the most GPUs
        self.whole_shape = (np.asarray(pc.shape_count) >= most) & (most > 0)  # pods that need all of them
        self.whole_fit = self._whole_fit(ctx.c)
        self.contents: list[dict[int, int]] = [{} for _ in range(n)]  # pods per shape on each node
        self.plan: Plan | None = None
        self.avail: dict[tuple, float] = {}
        self.next_resolve = 0
        self.stats = {
            "solves": 0,
            "unconverged": 0,
            "resolve_timeouts": 0,
            "lp_failures": 0,
            "lp_seconds": 0.0,
            "in_plan": 0,
            "opened": 0,
            "lp_rounds": 0,
            "fallback": 0,
        }
        if self.source == "known":
            try:
                horizon = self.horizon
                if self.mode == "slots":
                    horizon = fitted_horizon(pc, horizon, self.rounds, self.warm_contents)
                    self.horizon_milli = horizon * pc.capacity_milli
                self._use(known_plan(pc, horizon, self.rounds, self.warm_contents))
            except RuntimeError:  # the master LP ended abnormally (GLOP): fgd throughout
                self.stats["lp_failures"] += 1

    def finish(self) -> None:
        """Adds this run's figures to the totals (the protocol's run loop calls it at the end)."""
        for k, v in self.stats.items():
            self.totals[k] = round(self.totals.get(k, 0) + v, 3)

    def _use(self, plan: Plan) -> None:
        self.plan = plan
        self.stats["solves"] += 1
        self.stats["unconverged"] += not plan.converged
        self.stats["lp_rounds"] += plan.rounds
        self.stats["lp_seconds"] = round(self.stats["lp_seconds"] + plan.seconds, 3)
        self.avail = {}
        for cf in plan.configs:
            self.avail[cf.key] = self.avail.get(cf.key, 0) + ceil_nodes(cf.nodes)
        for key, n in self.given.items():
            if key in self.avail:
                self.avail[key] -= n
        self.by_key = {cf.key: cf for cf in plan.configs}
        if self.mode == "prices":
            # a node's price per GPU milli: its class's dual over the GPU milli of its nodes
            # Rounded to PRICE_DIGITS: prices equal but for the LP's rounding noise (on default
            # every class is worth 0.81 per GPU milli, to 1e-14) are equal, and their ties go to
            # the node rank, not to the noise of whichever dual vertex GLOP returned.
            per_milli = plan.class_price[np.maximum(plan.class_of, 0)] / np.maximum(self._gpu_milli, 1)
            self.node_price = np.where(plan.class_of >= 0, np.round(per_milli, PRICE_DIGITS), np.inf)

    # ---------------------------------------------------------------- re-solves
    def _maybe_resolve(self, ctx) -> None:
        share = self.arrived / self.horizon_milli
        points = ((self.first_learned,) if self.source == "learned" else ()) + tuple(self.resolve_at)
        if self.next_resolve >= len(points) or share < points[self.next_resolve]:
            return
        while self.next_resolve < len(points) and share >= points[self.next_resolve]:
            self.next_resolve += 1
        if self.source == "known" and self._drift() <= self.drift:
            return
        pc = ctx.pc
        mean = float((self.seen * pc.shape_request).sum() / max(self.seen.sum(), 1))
        left = max(0.0, (self.horizon_milli - self.arrived) / mean) if mean > 0 else 0.0
        expected = self.seen + self.expect.rest(self.seen, left)
        model = plan_model(pc)
        columns = []
        if self.source == "learned" and self.warm_contents is not None:
            # fgd's configurations for the expectation, as the known plan's warm start
            columns += model.columns_of(self.warm_contents(pc, self.horizon, expected_sequence(expected)))
        columns += list(self.plan.columns) if self.plan is not None else []
        columns += model.columns_of((i, dict(on)) for i, on in enumerate(self.contents) if on)
        try:
            got = model.solve(expected, rounds=self.rounds, columns=list(dict.fromkeys(columns)))
        except RuntimeError:  # the master LP ended abnormally (GLOP): the last plan stays
            self.stats["lp_failures"] += 1
            return
        if not got.converged and self.plan is not None:
            self.stats["resolve_timeouts"] += 1
            self.stats["unconverged"] += 1
            self.stats["lp_seconds"] = round(self.stats["lp_seconds"] + got.seconds, 3)
            return
        self._use(got)

    def _drift(self) -> float:
        if not isinstance(self.expect, KnownExpectation) or not self.seen.sum():
            return 0.0
        f = self.expect.freq / self.expect.freq.sum()
        return float(np.abs(self.seen / self.seen.sum() - f).sum() / 2)

    # ---------------------------------------------------------------- per arrival
    def choose(self, ctx, si: int, cand: np.ndarray, use) -> tuple[int, list[int]] | None:
        pc = ctx.pc
        self.seen[si] += 1
        self.arrived += int(pc.shape_request[si])
        self._maybe_resolve(ctx)
        if self.mode == "slots":
            cand = self._keep_whole_nodes(ctx, si, cand)
        key = (int(pc.shape_cpu[si]), int(pc.shape_milli[si]), int(pc.shape_count[si]))
        score = pc.memo.scores(key, ctx.sid[cand])
        node = None
        if self.plan is not None:
            node = self._by_prices(ctx, cand, score) if self.mode == "prices" else self._by_slots(ctx, si, cand, score)
        if node is None:
            self.stats["fallback"] += 1
            node = ctx.pick(cand, score)  # fgd
        return node, self._devices(ctx, si, node, use)

    def _keep_whole_nodes(self, ctx, si: int, cand: np.ndarray) -> np.ndarray:
        """While no more empty nodes of the most GPUs are left than the whole-node pods the
        expectation holds for the rest of the horizon, a smaller pod does not take one if another
        node fits it (learned: its plans, made from few arrivals, would fill them first; known:
        pods outside the plan would, and one whole-node pod refused is 8 GPUs at once). Per
        whole-node shape's nodes (`_whole_fit`) the same, and there whole-node pods of shapes
        that also fit elsewhere are kept off too."""
        pc = ctx.pc
        if not self.seen.sum():
            return cand
        mean = float((self.seen * pc.shape_request).sum() / self.seen.sum())
        left = (self.horizon_milli - self.arrived) / mean if mean > 0 else 0.0
        rest = self.expect.rest(self.seen, max(0.0, left))
        kept = self.empty & self.whole_node
        guard = np.zeros_like(kept)
        if not self.whole_shape[si] and kept.sum() <= self._whole_demand(rest, self.whole_shape):
            guard = kept
        for fit, within in self.whole_fit:
            if within[si]:
                continue  # a whole-node pod is kept only off the nodes of the shapes that need fewer
            nodes = kept & fit
            if nodes.sum() <= self._whole_demand(rest, within):
                guard = guard | nodes
        keep = guard[cand]
        return cand[~keep] if keep.any() and not keep.all() else cand

    def _whole_demand(self, rest: np.ndarray, shapes: np.ndarray) -> float:
        """The whole-node pods of `shapes` to keep nodes for: the expected rest, plus (learned)
        `whole_margin` standard deviations of the count to come when its rate is estimated from
        the n pods of those shapes seen so far (a Poisson count with a Gamma-estimated rate: the
        negative binomial's variance, mean + mean**2 / n). Why: learned's mean is taken from few
        pods, and where they bunch late (default seed 48: 17 of its 46 whole-node pods up to
        100 % arrived after 78 %) a guard sized to the mean lets smaller pods fill the nodes
        they need; a refused whole-node pod is 8 GPUs, a smaller pod kept off costs little."""
        mean = float(rest[shapes].sum())
        if self.whole_margin <= 0 or mean <= 0:
            return mean
        seen = max(float(self.seen[shapes].sum()), 1.0)
        return mean + self.whole_margin * float(np.sqrt(mean + mean * mean / seen))

    def _whole_fit(self, c) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per whole-node shape: the nodes of the most GPUs it fits when empty (cpu, memory,
        GPUs of its model), and the whole-node shapes that fit only among those nodes. A shape
        that fits fewer of them (120 cores on multigpu50) has its own count to keep: the pods
        that need those nodes against the nodes left (Hall's condition on nested node sets)."""
        fits: dict[int, np.ndarray] = {}
        for w in np.flatnonzero(self.whole_shape).tolist():
            sh = c.shapes[w]
            ok = self.whole_node & sh.node_ok & (c.alloc >= sh.demand).all(axis=1)
            fits[w] = ok & ((sh.compat & c.present).sum(axis=1) >= sh.count)
        out = []
        for fit in fits.values():
            within = np.zeros(len(self.whole_shape), dtype=bool)
            for w2, fit2 in fits.items():
                within[w2] = not (fit2 & ~fit).any()
            out.append((fit, within))
        return out

    def _by_slots(self, ctx, si: int, cand: np.ndarray, score: np.ndarray) -> int | None:
        has = self.slots[cand, si] > 0
        if has.any():
            self.stats["in_plan"] += 1
            return ctx.pick(cand[has], score[has])
        plan = self.plan
        assert plan is not None
        open_ = self.empty[cand] & (plan.class_of[cand] >= 0)
        if not open_.any():
            return None
        best: dict[int, tuple] = {}  # class -> configuration with the most nodes left holding si
        for cf in plan.configs:
            if si in cf.shapes and self.avail.get(cf.key, 0) > 0:
                if cf.cls not in best or self.avail[cf.key] > self.avail[best[cf.cls]]:
                    best[cf.cls] = cf.key
        ok = open_ & np.isin(plan.class_of[cand], list(best))
        if not ok.any():
            return None
        node = ctx.pick(cand[ok], score[ok])
        key = best[int(plan.class_of[node])]
        self.node_key[node] = key
        self.given[key] = self.given.get(key, 0) + 1
        self.avail[key] -= 1
        for s, k in self.by_key[key].shapes.items():
            self.slots[node, s] = k
        self.stats["opened"] += 1
        return node

    def _by_prices(self, ctx, cand: np.ndarray, score: np.ndarray) -> int:
        """fgd's best score; among equal scores the node of least price per GPU milli (the class's
        dual), then the protocol's rank. (Price first, fgd among the cheapest, was measured: far
        worse, docs/studies/online-lp.md.)"""
        top = cand[score == score.max()]
        price = self.node_price[top]
        return ctx.pick(top, -price)

    def _devices(self, ctx, si: int, node: int, use) -> list[int]:
        from draopt.studies import paper_policies as pp

        pc = ctx.pc
        cpu, milli, count = int(pc.shape_cpu[si]), int(pc.shape_milli[si]), int(pc.shape_count[si])
        if count == 0:
            return []
        if milli < pp.MILLI:
            usable = use[node]
            if self.mode == "slots":
                usable = self._slot_keeping_gpus(ctx, si, node, usable)
            return [self.fgd._fgd_gpu(ctx, node, cpu, milli, usable)]
        return pp.gpus_best(ctx.left[node], use[node], milli, count)

    def _slot_keeping_gpus(self, ctx, si: int, node: int, usable: np.ndarray) -> np.ndarray:
        """The usable GPUs after whose taking the node's other free slots still pack on its GPUs
        (whole-GPU slots on free GPUs, shared ones first-fit decreasing); all of them if none
        does. Why: a configuration fits its node GPU by GPU, and fgd's GPU choice, made pod by
        pod, may split the shared milli so that a slot no longer fits (a dead slot)."""
        from draopt.studies import paper_policies as pp

        pc = ctx.pc
        rest = self.slots[node].copy()
        if rest[si] > 0:
            rest[si] -= 1
        shapes = np.flatnonzero(rest)
        if not shapes.size:
            return usable
        whole = int(sum(rest[s] * pc.shape_count[s] for s in shapes if pc.shape_milli[s] >= pp.MILLI))
        shared = sorted(
            (int(pc.shape_milli[s]) for s in shapes if 0 < pc.shape_milli[s] < pp.MILLI for _ in range(rest[s])),
            reverse=True,
        )
        if not shared and not whole:
            return usable
        milli = int(pc.shape_milli[si])
        present = np.flatnonzero(ctx.present[node])
        keep = np.zeros_like(usable)
        for g in np.flatnonzero(usable):
            left = ctx.left[node].copy()
            left[g] -= milli
            keep[g] = _packs(left[present], whole, shared)
        return keep if keep.any() else usable

    def taken(self, ctx, si: int, node: int, devs: list[int]) -> None:
        self.fgd.taken(ctx, si, node, devs)
        self.empty[node] = False
        self.contents[node][si] = self.contents[node].get(si, 0) + 1
        if self.slots[node, si] > 0:
            self.slots[node, si] -= 1


def _packs(left: np.ndarray, whole: int, shared: list[int]) -> bool:
    """Whether `whole` fully free GPUs and then the `shared` milli (decreasing), first fit, fit
    GPUs with `left` milli free."""
    from draopt.studies import paper_policies as pp

    free = left.astype(np.int64)
    full = np.flatnonzero(free >= pp.MILLI)
    if len(full) < whole:
        return False
    free = np.delete(free, full[:whole])
    for m in shared:
        fit = np.flatnonzero(free >= m)
        if not fit.size:
            return False
        free[fit[0]] -= m
    return True
