"""`optimal-batch`: a batch of K arrivals placed together, on a table of FGD fragmentation
deltas kept up to date per node; placed tasks never move, a task that fits nowhere is skipped.

The FGD policy (Weng et al., ATC '23) places each task where the cluster's expected
fragmentation against the trace's shapes grows least. A batch policy knows K tasks at once:
* draopt's protocol (`draopt simulate`, `OptimalBatch`, order `greedy`): the batch is placed
  task by task, each time the (task, node) of the smallest delta minus a small bonus for size,
  so a task that fills a hole goes first (beats draopt's fgd: docs/studies/online-batch.md);
* the FGD paper's protocol (`PaperOptimalBatch`, the earlier policy, kept for the study in
  docs/studies/online-batch.md): the protocol's own fgd rule in arrival order, then a repair: a
  task that found no node takes the node of a task of the same batch (not yet committed) that
  fits elsewhere. The reordering orders (`greedy`, `regret`) lose to that fgd on the full trace.
  The protocol's `optimal-batch` is now draopt.studies.paper_batch (docs/studies/fgd-paper.md).
Nothing here is an optimum and no solver status is claimed.

Speed: the deltas of every shape on every node are held in a table [shapes, nodes]; only the
column of the node just used is computed again (its state is the only one that changed), per
kind of node on classes of alike shapes, so a placement costs one node's options, not every
node's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from draopt.errors import InputError

if TYPE_CHECKING:
    from draopt.studies.sim_cluster import FragModel, Shape, SimCluster, State


class _Kind:
    """One kind of node (`SimCluster.group`: same devices, same filters) seen by the shapes:
    shapes alike on it (same count, node resources, usable devices and consumption) fall in one
    class: they have the same options there and the same part in the fragmentation."""

    def __init__(self, c: SimCluster, p: np.ndarray, node: int):
        keys: dict[bytes, int] = {}
        cls = np.zeros(len(c.shapes), dtype=np.int64)
        reps: list[int] = []
        for s in c.shapes:
            ok = bool(s.node_ok[node]) and (s.count == 0 or int(s.compat[node].sum()) >= s.count)
            key = (
                b"never"
                if not ok and s.count
                else b"".join(
                    (
                        np.int64(s.count).tobytes(),
                        s.demand.tobytes(),
                        s.compat[node].tobytes(),
                        s.cons[node].tobytes(),
                        bytes([ok]),
                    )
                )
            )
            k = keys.setdefault(key, len(keys))
            if k == len(reps):
                reps.append(s.index)
            cls[s.index] = k
        self.cls, self.reps = cls, np.array(reps)
        weight = np.bincount(cls, weights=p, minlength=len(reps))
        first = [c.shapes[i] for i in reps]
        never = np.array([key == b"never" for key in keys])
        count = np.array([s.count for s in first])
        # Fragmentation's parts: shapes without a device and shapes that never fit count all
        # free device capacity; the others what they cannot use (sim_cluster.FragModel.frag).
        self.p_all = float(weight[(count == 0) | never].sum())
        g = (count > 0) & ~never
        self.p = weight[g]
        self.count = count[g]
        # None when no class of this kind has devices to fit
        self.dem: Any = np.stack([first[i].demand for i in np.flatnonzero(g)]) if g.any() else None
        self.compat: Any = np.stack([first[i].compat[node] for i in np.flatnonzero(g)]) if g.any() else None
        self.cons: Any = np.stack([first[i].cons[node] for i in np.flatnonzero(g)]) if g.any() else None
        # Options: one per class that can fit (never-fitting classes have none).
        self.opt = np.array([i for i in range(len(reps)) if not never[i]], dtype=np.int64)
        self.opt_count = count[self.opt]
        self.opt_dem = np.stack([first[i].demand for i in self.opt])
        self.opt_compat = np.stack([first[i].compat[node] for i in self.opt])
        self.opt_cons = np.stack([first[i].cons[node] for i in self.opt])
        self.opt_ok = np.array([bool(first[i].node_ok[node]) for i in self.opt])

    def frag(self, free: np.ndarray, left: np.ndarray) -> np.ndarray:
        """Expected fragmentation of states of a node of this kind (free [C, R], left [C, D])."""
        lp = np.clip(left, 0, None)
        total = lp.sum(axis=1)
        out = self.p_all * total
        if self.dem is not None:
            use = self.compat[:, None, :] & (left[None] >= self.cons[:, None, :]) & (left[None] > 0)
            fits = (use.sum(axis=2) >= self.count[:, None]) & (free[None] >= self.dem[:, None, :]).all(axis=2)
            lost = np.where(use, 0.0, lp[None]).sum(axis=2)
            out = out + self.p @ np.where(fits, lost, total[None])
        return out


class DeltaTable:
    """FGD fragmentation delta of placing one task of each shape on each node, and the devices
    that delta is for (FGD's own choice on that node: the GPU whose use fragments least, first
    by index on ties; multi-GPU tasks take the first usable GPUs, as `simulate._fgd` does).
    `delta[s, n]` is +inf where shape s does not fit node n. The fragmentation is `frag`'s
    (sim_cluster.FragModel: the trace's shapes weighted by frequency), computed per kind of node
    on classes of alike shapes."""

    def __init__(self, st: State, frag: FragModel, node_frag=None):
        """`node_frag(n, free [C, R], left [C, D]) -> [C]`: another fragmentation measure of
        states of node n (the paper protocol's, after the authors' frag.go); default `frag`'s."""
        c = st.c
        self.node_frag = node_frag
        if len(frag.p) != len(c.shapes):
            raise InputError(
                "optimal-batch: the FGD model must weigh every shape of the cluster "
                f"({len(frag.p)} weights for {len(c.shapes)} shapes)"
            )
        self.st, self.frag, self.c = st, frag, c
        kinds: dict[int, _Kind] = {}  # made at the first node of each kind
        self.kind: list[_Kind] = []
        for n, g in enumerate(c.group):
            if int(g) not in kinds:
                kinds[int(g)] = _Kind(c, frag.p, n)
            self.kind.append(kinds[int(g)])
        self.delta = np.full((len(c.shapes), c.n), np.inf)
        self.devs: list[dict[int, list[int]]] = [{} for _ in range(c.n)]
        for n in range(c.n):
            self.refresh(n)

    def refresh(self, n: int) -> None:
        """Recompute node n's column (after its state changed)."""
        kd = self.kind[n]
        free, left = self.st.free[n], self.st.left[n]
        ok = (free[None] >= kd.opt_dem).all(axis=1) & kd.opt_ok
        use = kd.opt_compat & (left[None] >= kd.opt_cons) & ok[:, None]
        ok &= use.sum(axis=1) >= kd.opt_count
        col = np.full(len(kd.reps), np.inf)
        devs: dict[int, list[int]] = {}
        cand_o: list[np.ndarray] = []
        cand_left: list[np.ndarray] = []
        cand_devs: list[list[int]] = []
        # No device: only the node resources change.
        o0 = np.flatnonzero(ok & (kd.opt_count == 0))
        cand_o.append(o0)
        cand_left.append(np.repeat(left[None], len(o0), axis=0))
        cand_devs += [[] for _ in o0]
        # One device: each GPU with a distinct capacity left (same left, same state: the first).
        o1, d1 = np.nonzero(use & (ok & (kd.opt_count == 1))[:, None])
        if o1.size:
            key = o1.astype(np.int64) * (1 << 32) + left[d1].astype(np.int64)
            _, first = np.unique(key, return_index=True)
            first.sort()
            o1, d1 = o1[first], d1[first]
            la = np.repeat(left[None], len(o1), axis=0)
            la[np.arange(len(o1)), d1] -= kd.opt_cons[o1, d1]
            cand_o.append(o1)
            cand_left.append(la)
            cand_devs += [[int(d)] for d in d1]
        # Several devices: the first usable ones.
        om = np.flatnonzero(ok & (kd.opt_count > 1))
        if om.size:
            u = use[om]
            pick = u & (np.cumsum(u, axis=1) <= kd.opt_count[om][:, None])
            cand_o.append(om)
            cand_left.append(left[None] - np.where(pick, kd.opt_cons[om], 0.0))
            cand_devs += [[int(d) for d in np.flatnonzero(p)] for p in pick]
        o_all = np.concatenate(cand_o)
        if o_all.size:
            l_all = np.concatenate(cand_left)
            f_all = free[None] - kd.opt_dem[o_all]
            measure = kd.frag if self.node_frag is None else (lambda f, lf: self.node_frag(n, f, lf))
            before = float(measure(free[None], left[None])[0])
            # Rounded: float noise from how numpy sums must not break ties (deterministic either way).
            d_all = np.round(measure(f_all, l_all) - before, 6)
            # Per class the smallest delta, first candidate (lowest GPU) on ties: candidates of a
            # class are contiguous and in GPU order, so a stable sort by (class, delta) keeps it.
            order = np.lexsort((d_all, o_all))
            o_sorted = o_all[order]
            head = np.ones(len(order), dtype=bool)
            head[1:] = o_sorted[1:] != o_sorted[:-1]
            for k in order[head]:
                cl = int(kd.opt[o_all[k]])
                col[cl] = d_all[k]
                devs[cl] = cand_devs[k]
        self.delta[:, n] = col[kd.cls]
        self.devs[n] = devs

    def untake(self, s: Shape, n: int, devs: list[int]) -> None:
        """Undo a placement made within the batch being planned (never a committed one)."""
        st = self.st
        st.free[n] += s.demand
        for d in devs:
            st.left[n, d] += s.cons[n, d]
            st.allocated -= s.cons[n, d]
        st.placed -= 1
        self.refresh(n)

    def fits_without(self, f: Shape, n: int, p: Shape, devs: list[int]) -> bool:
        """Would task f fit node n once p (placed there with devs) is taken off?"""
        st = self.st
        free = st.free[n] + p.demand
        if not (f.node_ok[n] and (free >= f.demand).all()):
            return False
        if f.count == 0:
            return True
        left = st.left[n].copy()
        left[devs] += p.cons[n, devs]
        return int((f.compat[n] & (left >= f.cons[n])).sum()) >= f.count

    def take(self, s: Shape, n: int) -> list[int]:
        devs = self.devs[n][int(self.kind[n].cls[s.index])]
        self.st.take(s, n, devs)
        self.refresh(n)
        return devs


ORDERS = ("arrival", "greedy", "regret")


def place_batch(
    table: DeltaTable,
    batch: list[Shape],
    *,
    order: str = "greedy",
    size_weight: float = 0.0,
    quantize: bool = False,
    node_order: np.ndarray | None = None,
    repair: bool = False,
) -> list[tuple[int, list[int]] | None]:
    """Place `batch` on the table's state; (node, devices) or None (failed) per task, in the
    batch's order. `arrival`: each task in turn where FGD puts it (= FGD); `greedy`: the task
    and node of the smallest score first, score = delta - size_weight x the task's requested GPU
    milli (a larger task goes first when deltas are close: left to the batch's end it finds only
    what the smaller ones left). `quantize`: the delta as the FGD plugin scores it (fgd_score.go:
    trunc(100 x sigmoid(-delta / 1000)), so deltas close together tie). Ties: the earliest task,
    then the first node of `node_order` (default by name)."""
    if order not in ORDERS:
        raise InputError(f"optimal-batch: unknown order {order!r} (known: {', '.join(ORDERS)})")
    st = table.st
    out: list[tuple[int, list[int]] | None] = [None] * len(batch)
    pending = list(range(len(batch)))
    while pending:
        rows_of = pending[:1] if order == "arrival" else pending
        rows = table.delta[[batch[k].index for k in rows_of]]
        if node_order is not None:
            rows = rows[:, node_order]
        if quantize:
            with np.errstate(over="ignore"):
                q = -np.trunc(100.0 / (1.0 + np.exp(np.where(np.isfinite(rows), rows, 0.0) / 1000.0)))
            rows = np.where(np.isfinite(rows), q, np.inf)
        if size_weight:
            rows = rows - size_weight * np.array([batch[k].request for k in rows_of])[:, None]
        if order == "regret" and rows.shape[1] > 1:
            # The task that loses most if it cannot have its best node goes first (one node
            # only: infinite regret); then its best node.
            two = np.partition(rows, 1, axis=1)[:, :2]
            with np.errstate(invalid="ignore"):
                regret = np.where(np.isfinite(two[:, 0]), two[:, 1] - two[:, 0], -np.inf)
            regret = np.nan_to_num(regret, nan=-np.inf)
            i = int(np.argmax(regret))
            col = int(np.argmin(rows[i]))
        else:
            flat = int(np.argmin(rows))
            i, col = divmod(flat, rows.shape[1])
        if not np.isfinite(rows[i, col]):
            if order == "arrival":
                st.failed += 1
                pending.pop(0)
                continue
            st.failed += len(pending)
            break
        n = int(node_order[col]) if node_order is not None else col
        k = pending.pop(i)
        out[k] = (n, table.take(batch[k], n))
    if repair:
        _repair(table, batch, out, node_order)
    return out


def _repair(table: DeltaTable, batch: list[Shape], out: list, node_order) -> None:
    """A task of the batch that found no node gets one where a task placed earlier in the same
    batch (not yet committed) stood, if that one fits elsewhere: it moves to its best other node.
    Each rescue places one more task and moves none of an earlier batch."""
    st = table.st
    for f_k, got in enumerate(out):
        if got is not None:
            continue
        f = batch[f_k]
        for p_k, placed in enumerate(out):
            if placed is None or p_k == f_k:
                continue
            n, devs = placed
            p = batch[p_k]
            row = table.delta[p.index].copy()
            row[n] = np.inf
            if not np.isfinite(row).any() or not table.fits_without(f, n, p, devs):
                continue
            table.untake(p, n, devs)
            out[f_k] = (n, table.take(f, n))
            row = table.delta[p.index] if node_order is None else table.delta[p.index][node_order]
            col = int(np.argmin(row))
            m = int(node_order[col]) if node_order is not None else col
            out[p_k] = (m, table.take(p, m))
            st.failed -= 1
            break


DEFAULT_BATCH = 100
DEFAULT_SIZE_WEIGHT = 0.3


class OptimalBatch:
    """The `optimal-batch` policy as an object (`frag`: the FGD model, `sim_cluster.FragModel` of the
    trace's shape weights): `place(st, shapes)` places one batch (the K
    arrivals, all known) on `st` and returns (node, devices) or None per task, in arrival order.
    The delta table belongs to one State: a new State (or one changed by someone else since the
    last batch) gets a new table, so the policy never reads a stale one.

    Not an optimum: the greedy order has no proof; the policy claims no solver status."""

    name = "optimal-batch"

    def __init__(
        self,
        c: SimCluster,
        frag: FragModel,
        *,
        batch: int = DEFAULT_BATCH,
        size_weight: float = DEFAULT_SIZE_WEIGHT,
        order: str = "greedy",
        node_frag=None,
        quantize: bool = False,
        node_order: np.ndarray | None = None,
        repair: bool = False,
    ):
        if not isinstance(batch, int) or batch < 1:
            raise InputError(f"optimal-batch: batch {batch!r}: a whole number, at least 1")
        if order not in ORDERS:
            raise InputError(f"optimal-batch: unknown order {order!r} (known: {', '.join(ORDERS)})")
        self.c, self.frag, self.batch, self.size_weight, self.order = c, frag, batch, size_weight, order
        self.node_frag, self.quantize, self.node_order, self.repair = node_frag, quantize, node_order, repair
        self._table: DeltaTable | None = None
        self._seen: tuple | None = None

    def _table_for(self, st: State) -> DeltaTable:
        if st.c is not self.c:
            raise InputError("optimal-batch: the state is of another cluster than the policy's")
        mark = (id(st), st.placed, st.allocated)
        if self._table is None or self._table.st is not st or self._seen != mark:
            self._table = DeltaTable(st, self.frag, self.node_frag)
        return self._table

    def place(self, st: State, shapes: list[Shape]) -> list[tuple[int, list[int]] | None]:
        table = self._table_for(st)
        out = place_batch(
            table,
            shapes,
            order=self.order,
            size_weight=self.size_weight,
            quantize=self.quantize,
            node_order=self.node_order,
            repair=self.repair,
        )
        self._seen = (id(st), st.placed, st.allocated)
        return out

    __call__ = place


def run_batches(
    policy: OptimalBatch, st: State, seq, stops: list[int] | None = None, after=None
) -> list[tuple[int, list[int]] | None]:
    """Arrivals `seq` (shape indices) in batches of policy.batch on `st`; a batch never crosses
    a stop (an arrival count where the caller measures: the state is then exactly that of the
    arrivals before it). `after(k)` is called after each batch with the arrivals done."""
    c = st.c
    cuts = sorted({int(s) for s in (stops or []) if 0 < s < len(seq)})
    log: list[tuple[int, list[int]] | None] = []
    k = 0
    while k < len(seq):
        nxt = next((s for s in cuts if s > k), len(seq))
        end = min(k + policy.batch, nxt)
        log += policy.place(st, [c.shapes[int(i)] for i in seq[k:end]])
        k = end
        if after is not None:
            after(k)
    return log


# Under the paper's protocol the reordering orders lose to its fgd on the full trace (see
# docs/studies/online-batch.md): the default there is fgd's own rule (the protocol's frag, the
# plugin's quantised score, ties by the run's node rank) in arrival order, plus the repair.
PAPER_BATCH = 500


class PaperOptimalBatch:
    """`optimal-batch` under the FGD paper's protocol (draopt.studies.paper_protocol's batch-policy
    interface): `choose_batch(ctx, shape_indices)` returns the batch's placements and the
    protocol applies them in arrival order (any order is valid: they were feasible together).
    The policy plans on a private copy of the run's State, checked equal to the protocol's at
    every batch (copied again if not), so it never writes the protocol's state itself.
    `frag_model(c, weights)`: the FGD model class (sim_cluster.FragModel; passed in, not imported,
    so that this module imports neither the simulator nor the protocol). `paper_frag`: the deltas
    are of the protocol's own fragmentation (`ctx.pc.frag`, the authors' frag.go, as its fgd
    scores them), not of sim_cluster.FragModel's."""

    name = "optimal-batch"

    def __init__(
        self,
        frag_model,
        *,
        batch: int = PAPER_BATCH,
        size_weight: float = 0.0,
        paper_frag: bool = True,
        order: str = "arrival",
        quantize: bool = True,
        rank_ties: bool = True,
        repair: bool = True,
    ):
        if not isinstance(batch, int) or batch < 1:
            raise InputError(f"optimal-batch: batch {batch!r}: a whole number, at least 1")
        self.frag_model, self.batch, self.size_weight = frag_model, batch, size_weight
        self.paper_frag, self.order, self.quantize, self.rank_ties = paper_frag, order, quantize, rank_ties
        self.repair = repair
        self._frag: dict[int, FragModel] = {}
        self._policy: OptimalBatch | None = None
        self._st: State | None = None

    def start(self, ctx) -> None:
        c = ctx.c
        frag = self._frag.get(id(c))
        if frag is None:
            frag = self._frag[id(c)] = self.frag_model(c, np.array([len(s.pods) for s in c.shapes], dtype=float))
        self._policy = OptimalBatch(
            c,
            frag,
            batch=self.batch,
            size_weight=self.size_weight,
            order=self.order,
            node_frag=_paper_node_frag(ctx.pc) if self.paper_frag else None,
            quantize=self.quantize,
            repair=self.repair,
            node_order=np.argsort(ctx.rank, kind="stable") if self.rank_ties else None,
        )
        self._st = self._copy(ctx.st)

    @staticmethod
    def _copy(st: State) -> State:
        mine = type(st)(st.c)
        mine.free[:], mine.left[:] = st.free, st.left
        mine.allocated, mine.placed, mine.failed = st.allocated, st.placed, st.failed
        return mine

    def choose_batch(self, ctx, shape_indices) -> list[tuple[int, list[int]] | None]:
        if self._policy is None:
            raise InputError("optimal-batch: choose_batch before start (the protocol calls start first)")
        st = ctx.st
        assert self._st is not None  # made with the policy, by start
        if not (np.array_equal(self._st.free, st.free) and np.array_equal(self._st.left, st.left)):
            self._st = self._copy(st)
        c = ctx.c
        return self._policy.place(self._st, [c.shapes[int(i)] for i in shape_indices])


def _paper_node_frag(pc):
    """The protocol's FGD fragmentation (paper_policies.FragModel: typical pods, CPU and GPU
    milli, memory ignored, as the authors' frag.go) as `DeltaTable`'s node_frag, in milli GPU."""
    fm, cpu_j, cpu_scale, gpu_scale = pc.frag, pc.cpu_j, pc.cpu_scale, pc.gpu_scale

    def node_frag(n: int, free: np.ndarray, left: np.ndarray) -> np.ndarray:
        cpu = np.rint(free[:, cpu_j] * cpu_scale).astype(np.int64)
        milli = np.rint(np.clip(left, 0, None) * gpu_scale).astype(np.int64)
        return fm.frag(cpu, milli, np.full(len(cpu), pc.kind[n])) / fm.cum

    return node_frag
