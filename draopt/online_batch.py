"""`optimal-batch` that looks forward: a batch of K arrivals placed together, in the order that
fragments the cluster least, on a table of FGD fragmentation deltas kept up to date per node.

The FGD policy (Weng et al., ATC '23; `draopt.simulate.FragModel`) places each task where the
cluster's expected fragmentation against the trace's shapes grows least. A batch policy knows K
tasks at once; it places them one at a time, each time the (task, node, GPU choice) of the batch
whose fragmentation delta is smallest, so a task that fills a hole goes first and a task that
would open one waits until the batch has used what suits it. Placed tasks never move; a task
that fits nowhere when its turn comes is skipped (failed).

Speed: the deltas of every trace shape on every node are held in a table [shapes, nodes] and
only the column of the node just used is computed again (its state is the only one that
changed), so a placement costs one node's options for all shapes, not every node's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError

if TYPE_CHECKING:       # draopt.simulate imports this module to run the policy: types only
    from .simulate import FragModel, Shape, SimCluster, State


@dataclass
class _Stacked:
    """Every shape of the cluster as stacked arrays (shape index = position)."""
    demand: np.ndarray      # [T, R]
    count: np.ndarray       # [T]
    compat: np.ndarray      # [T, N, D]
    cons: np.ndarray        # [T, N, D]
    node_ok: np.ndarray     # [T, N]


def _stack(c: SimCluster) -> _Stacked:
    return _Stacked(np.stack([s.demand for s in c.shapes]), np.array([s.count for s in c.shapes]),
                    np.stack([s.compat for s in c.shapes]), np.stack([s.cons for s in c.shapes]),
                    np.stack([s.node_ok for s in c.shapes]))


class DeltaTable:
    """FGD fragmentation delta of placing one task of each shape on each node, and the devices
    that delta is for (FGD's own choice on that node: the GPU whose use fragments least, first
    by index on ties; multi-GPU tasks take the first usable GPUs, as `simulate._fgd` does).
    `delta[s, n]` is +inf where shape s does not fit node n."""

    def __init__(self, st: State, frag: FragModel):
        c = st.c
        self.st, self.frag, self.c = st, frag, c
        self.x = _stack(c)
        self.delta = np.full((len(c.shapes), c.n), np.inf)
        self.devs: list[list[list[int] | None]] = [[None] * c.n for _ in c.shapes]
        for n in range(c.n):
            self.refresh(n)

    def refresh(self, n: int) -> None:
        """Recompute node n's column (after its state changed)."""
        st, x = self.st, self.x
        free, left = st.free[n], st.left[n]
        ok = (free[None] >= x.demand).all(axis=1) & x.node_ok[:, n]
        use = x.compat[:, n, :] & (left[None] >= x.cons[:, n, :]) & ok[:, None]
        ok &= (use.sum(axis=1) >= x.count)
        self.delta[:, n] = np.inf
        cand_s: list[np.ndarray] = []
        cand_left: list[np.ndarray] = []
        cand_devs: list[list[int]] = []
        # No device: only the node resources change.
        s0 = np.flatnonzero(ok & (x.count == 0))
        cand_s.append(s0)
        cand_left.append(np.repeat(left[None], len(s0), axis=0))
        cand_devs += [[] for _ in s0]
        # One device: each GPU with a distinct capacity left (same left, same state: the first).
        s1, d1 = np.nonzero(use & (ok & (x.count == 1))[:, None])
        if s1.size:
            key = s1.astype(np.int64) * (1 << 32) + left[d1].astype(np.int64)
            _, first = np.unique(key, return_index=True)
            first.sort()
            s1, d1 = s1[first], d1[first]
            la = np.repeat(left[None], len(s1), axis=0)
            la[np.arange(len(s1)), d1] -= x.cons[s1, n, d1]
            cand_s.append(s1)
            cand_left.append(la)
            cand_devs += [[int(d)] for d in d1]
        # Several devices: the first usable ones.
        sm = np.flatnonzero(ok & (x.count > 1))
        if sm.size:
            u = use[sm]
            pick = u & (np.cumsum(u, axis=1) <= x.count[sm][:, None])
            cand_s.append(sm)
            cand_left.append(left[None] - np.where(pick, x.cons[sm, n, :], 0.0))
            cand_devs += [[int(d) for d in np.flatnonzero(p)] for p in pick]
        s_all = np.concatenate(cand_s)
        if not s_all.size:
            return
        l_all = np.concatenate(cand_left)
        f_all = free[None] - x.demand[s_all]
        nodes = np.full(len(s_all), n)
        before = float(self.frag.frag(np.array([n]), free[None], left[None])[0])
        # Rounded: float noise from how numpy sums must not break ties (deterministic either way).
        d_all = np.round(self.frag.frag(nodes, f_all, l_all) - before, 6)
        # Per shape the smallest delta, first candidate (lowest GPU) on ties: candidates of a
        # shape are contiguous and in GPU order, so a stable sort by (shape, delta) keeps it.
        order = np.lexsort((d_all, s_all))
        s_sorted = s_all[order]
        head = np.ones(len(order), dtype=bool)
        head[1:] = s_sorted[1:] != s_sorted[:-1]
        for k in order[head]:
            s = int(s_all[k])
            self.delta[s, n] = d_all[k]
            self.devs[s][n] = cand_devs[k]

    def take(self, s: Shape, n: int) -> list[int]:
        devs = self.devs[s.index][n]
        self.st.take(s, n, devs)
        self.refresh(n)
        return devs


ORDERS = ("arrival", "greedy")


def place_batch(table: DeltaTable, batch: list[Shape], *, order: str = "greedy",
                size_weight: float = 0.0) -> list[tuple[int, list[int]] | None]:
    """Place `batch` on the table's state; (node, devices) or None (failed) per task, in the
    batch's order. `arrival`: each task in turn where FGD puts it (= FGD); `greedy`: the task
    and node of the smallest score first, score = delta - size_weight x the task's requested GPU
    milli (a larger task goes first when deltas are close: left to the batch's end it finds only
    what the smaller ones left; ties: earliest task, then first node by name)."""
    if order not in ORDERS:
        raise InputError(f"optimal-batch: unknown order {order!r} (known: {', '.join(ORDERS)})")
    st = table.st
    out: list[tuple[int, list[int]] | None] = [None] * len(batch)
    if order == "arrival":
        for k, s in enumerate(batch):
            row = table.delta[s.index]
            n = int(np.argmin(row))
            if not np.isfinite(row[n]):
                st.failed += 1
                continue
            out[k] = (n, table.take(s, n))
        return out
    pending = list(range(len(batch)))
    while pending:
        rows = table.delta[[batch[k].index for k in pending]]
        if size_weight:
            rows = rows - size_weight * np.array([batch[k].request for k in pending])[:, None]
        flat = int(np.argmin(rows))
        i, n = divmod(flat, rows.shape[1])
        if not np.isfinite(rows[i, n]):
            st.failed += len(pending)
            break
        k = pending.pop(i)
        out[k] = (n, table.take(batch[k], n))
    return out


DEFAULT_BATCH = 100
DEFAULT_SIZE_WEIGHT = 0.3


class OptimalBatch:
    """The `optimal-batch` policy as an object (`frag`: the FGD model, `simulate.FragModel` of the
    trace's shape weights): `place(st, shapes)` places one batch (the K
    arrivals, all known) on `st` and returns (node, devices) or None per task, in arrival order.
    The delta table belongs to one State: a new State (or one changed by someone else since the
    last batch) gets a new table, so the policy never reads a stale one.

    Not an optimum: the greedy order has no proof; the policy claims no solver status."""

    name = "optimal-batch"

    def __init__(self, c: SimCluster, frag: FragModel, *, batch: int = DEFAULT_BATCH,
                 size_weight: float = DEFAULT_SIZE_WEIGHT, order: str = "greedy"):
        if not isinstance(batch, int) or batch < 1:
            raise InputError(f"optimal-batch: batch {batch!r}: a whole number, at least 1")
        if order not in ORDERS:
            raise InputError(f"optimal-batch: unknown order {order!r} (known: {', '.join(ORDERS)})")
        self.c, self.frag, self.batch, self.size_weight, self.order = c, frag, batch, size_weight, order
        self._table: DeltaTable | None = None
        self._seen: tuple | None = None

    def _table_for(self, st: State) -> DeltaTable:
        if st.c is not self.c:
            raise InputError("optimal-batch: the state is of another cluster than the policy's")
        mark = (id(st), st.placed, st.allocated)
        if self._table is None or self._table.st is not st or self._seen != mark:
            self._table = DeltaTable(st, self.frag)
        return self._table

    def place(self, st: State, shapes: list[Shape]) -> list[tuple[int, list[int]] | None]:
        table = self._table_for(st)
        out = place_batch(table, shapes, order=self.order, size_weight=self.size_weight)
        self._seen = (id(st), st.placed, st.allocated)
        return out

    __call__ = place


def run_batches(policy: OptimalBatch, st: State, seq, stops: list[int] | None = None,
                after=None) -> list[tuple[int, list[int]] | None]:
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
