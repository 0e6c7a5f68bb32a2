"""`optimal-batch` under the FGD paper's protocol: K known arrivals placed together by FGD's own
rule, the batch's plan chosen by what it allocates over time, then a repair by ejection within
the batch; placed pods of earlier batches never move.

Why this shape (docs/studies/fgd-paper.md, "optimal-batch", has the measurements): under the
paper's protocol (draopt.studies.paper_protocol) nothing fails until the cluster is about 95 %
full, so every batch before that is placed exactly as the protocol's `fgd` places it: the same
scorer object, the same memoised scores, the same tie-break by the run's node rank. Reordering
a batch that fits loses to that (docs/studies/online-batch.md). Near saturation fgd takes the
arrivals as they come, so a small pod takes the last whole GPU a larger pod of the same batch
needed. A batch policy sees both, and neither is committed yet:

* plans: when fgd's arrival order leaves a pod of the batch unplaced, the batch is placed again
  with the same rule in another order (`largest`: most GPU milli first; `area`: GPU milli x the
  arrivals left in the batch first), from the same state; the plan of greatest value is kept,
  fgd's arrival order on ties;
* eject: a pod `f` still unplaced is tried on a node `n` holding pods of the same batch: they
  are taken off `n`, `f` is placed on `n` (fgd's GPU choice), and they are placed again by fgd's
  rule over the whole cluster (`n` included, so they may go back beside `f`). The move is kept
  when every pod taken off found a node, or (`drop`) when `f` is worth more than those that did
  not (they stay unplaced: a batch scheduler admits the pods that use its GPUs best; every pod
  still counts as arrived). Candidates: the nodes where `f` fits once the batch's pods are off,
  the least GPU milli to move first (then the node rank), at most `tries`; a pod shape whose
  repair failed is not tried again until a move is kept (the state, and the answer, are the same).

Value (`value`): the protocol measures the allocation after every arrival (binned by arrived %),
so a plan that places a late large pod instead of an early small one allocates less in between.
`area` (default) weighs a pod's GPU milli by the arrivals it is allocated for: those left in the
batch after it plus `horizon` (default K) after the batch; `milli` counts the batch's end only
(horizon infinite); `prefix` keeps a plan only if it allocates at least as much after every
arrival of the batch (and drops only pods arriving after `f`).

The policy plans on a private copy of the protocol's State (checked equal at every batch, copied
again if not) and returns one placement (or None) per arrival; the protocol checks and applies
them in arrival order (a set feasible together is feasible in any order). No solver runs: no
status or optimality is claimed.

This module imports nothing of the protocol: `paper_protocol` passes in its fgd scorer and its
RunContext class (it imports this module lazily to register the policy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from draopt.errors import InputError

DEFAULT_BATCH = 500
DEFAULT_TRIES = 8
PLANS = ("largest", "area")
VALUES = ("area", "milli", "prefix")


class PaperForwardBatch:
    """The policy object of paper_protocol's batch interface (`batch`, `start`, `choose_batch`).

    `make_fgd()`: a new fgd scorer of the protocol (start(ctx), choose(ctx, si, candidates, usable),
    taken(ctx, si, node, devices)); `make_context(pc, state, rank, rng)`: the protocol's RunContext."""

    name = "optimal-batch"

    def __init__(
        self,
        make_fgd: Callable[[], Any],
        make_context: Callable[..., Any],
        *,
        batch: int = DEFAULT_BATCH,
        tries: int = DEFAULT_TRIES,
        drop: bool = True,
        repair: bool = True,
        plans: tuple[str, ...] = ("largest",),
        value: str = "area",
        horizon: int | None = None,
    ):
        if not isinstance(batch, int) or batch < 1:
            raise InputError(f"optimal-batch: batch {batch!r}: a whole number, at least 1")
        if not isinstance(tries, int) or tries < 0:
            raise InputError(f"optimal-batch: tries {tries!r}: a whole number, at least 0")
        for plan in plans:
            if plan not in PLANS:
                raise InputError(f"optimal-batch: unknown plan {plan!r} (known: {', '.join(PLANS)})")
        if value not in VALUES:
            raise InputError(f"optimal-batch: unknown value {value!r} (known: {', '.join(VALUES)})")
        if horizon is not None and (not isinstance(horizon, int) or horizon < 0):
            raise InputError(f"optimal-batch: horizon {horizon!r}: a whole number of arrivals, at least 0")
        self.make_fgd, self.make_context = make_fgd, make_context
        self.batch, self.tries, self.drop, self.repair = batch, tries, drop, repair
        self.plans, self.value = tuple(plans), value
        self.horizon = batch if horizon is None else horizon
        self.plan_wins: dict[str, int] = {}
        self.moves = 0  # repairs kept over the run (for the study)
        self.dropped = 0  # pods left unplaced by a kept repair
        self._ctx: Any = None  # make_context's, from start on
        self._fgd: Any = None  # make_fgd's, from start on

    # ------------------------------------------------------------------ private state
    def start(self, ctx) -> None:
        self._rank = ctx.rank
        self._sync(ctx)

    def _sync(self, ctx) -> None:
        src = ctx.st
        st = type(src)(src.c)
        st.free[:], st.left[:] = src.free, src.left
        st.allocated, st.placed, st.failed = src.allocated, src.placed, src.failed
        self._ctx = self.make_context(ctx.pc, st, ctx.rank, np.random.default_rng(0))
        self._fgd = self.make_fgd()
        self._fgd.start(self._ctx)

    def _take(self, si: int, node: int, devs: list[int]) -> None:
        ctx = self._ctx
        ctx.st.take(ctx.c.shapes[si], node, devs)
        ctx.refresh(node)
        self._fgd.taken(ctx, si, node, devs)

    def _untake(self, si: int, node: int, devs: list[int]) -> None:
        ctx = self._ctx
        st, s = ctx.st, ctx.c.shapes[si]
        st.free[node] += s.demand
        for d in devs:
            st.left[node, d] += s.cons[node, d]
            st.allocated -= s.cons[node, d]
        st.placed -= 1
        ctx.refresh(node)
        self._fgd.taken(ctx, si, node, [])  # fgd's taken re-reads the node's state

    def _place(self, si: int, only: int | None = None) -> tuple[int, list[int]] | None:
        """fgd's choice for shape si on the private state (on node `only` if given), taken."""
        ctx = self._ctx
        ok, use = ctx.st.feasible(ctx.c.shapes[si])
        if only is not None:
            cand = np.array([only]) if ok[only] else np.zeros(0, dtype=np.int64)
        else:
            cand = np.flatnonzero(ok)
        if not cand.size:
            return None
        node, devs = self._fgd.choose(ctx, si, cand, use)
        node, devs = int(node), [int(d) for d in devs]
        self._take(si, node, devs)
        return node, devs

    def _snapshot(self):
        ctx = self._ctx
        st = ctx.st
        return (
            st.free.copy(),
            st.left.copy(),
            st.allocated,
            st.placed,
            ctx.cpu_left.copy(),
            ctx.left.copy(),
            ctx.sid.copy() if ctx.sid is not None else None,
        )

    def _restore(self, snap) -> None:
        ctx = self._ctx
        st = ctx.st
        st.free[:], st.left[:] = snap[0], snap[1]
        st.allocated, st.placed = snap[2], snap[3]
        ctx.cpu_left[:], ctx.left[:] = snap[4], snap[5]
        if snap[6] is not None:
            ctx.sid[:] = snap[6]

    # ------------------------------------------------------------------ a batch
    def choose_batch(self, ctx, shape_indices) -> list[tuple[int, list[int]] | None]:
        if self._ctx is None:
            raise InputError("optimal-batch: choose_batch before start (the protocol calls start first)")
        mine = self._ctx.st
        if not (np.array_equal(mine.free, ctx.st.free) and np.array_equal(mine.left, ctx.st.left)):
            self._sync(ctx)
        seq = [int(i) for i in shape_indices]
        out = [self._place(si) for si in seq]
        if self.plans and any(g is None for g in out):
            out = self._best_plan(seq, out)
        if self.repair and self.tries:
            self._repair(seq, out)
        return out

    def _value(self, seq, out) -> int:
        return sum(self._worth(seq, j) for j, g in enumerate(out) if g is not None)

    def _curve(self, seq, out) -> np.ndarray:
        req = self._ctx.pc.shape_request
        return np.cumsum([int(req[si]) if g is not None else 0 for si, g in zip(seq, out)])

    def _dominates(self, seq, new, old) -> bool:
        """`new` allocates at least as much as `old` after every arrival of the batch, more at its end."""
        a, b = self._curve(seq, new), self._curve(seq, old)
        return bool((a >= b).all() and a[-1] > b[-1])

    def _worth(self, seq, j: int) -> int:
        """Arrival j's GPU milli, weighed by the arrivals it is allocated for (`value`)."""
        req = int(self._ctx.pc.shape_request[seq[j]])
        if self.value == "area":
            return req * (len(seq) - j + self.horizon)
        return req

    def _best_plan(self, seq: list[int], out: list) -> list:
        """The batch placed again in each of `plans`' orders from the batch's start state; the
        plan of greatest value stays placed on the private state (fgd's arrival order on ties)."""
        req = self._ctx.pc.shape_request
        best, best_milli, best_snap, best_name = out, self._value(seq, out), self._snapshot(), "arrival"
        placed_snap = best_snap
        for j in range(len(seq)):
            if out[j] is not None:
                self._untake(seq[j], out[j][0], out[j][1])
        empty = self._snapshot()
        for plan in self.plans:
            self._restore(empty)
            if plan == "largest":
                order = sorted(range(len(seq)), key=lambda j: (-int(req[seq[j]]), j))
            else:
                order = sorted(range(len(seq)), key=lambda j: (-int(req[seq[j]]) * (len(seq) - j), j))
            got: list = [None] * len(seq)
            for j in order:
                got[j] = self._place(seq[j])
            m = self._value(seq, got)
            if self._dominates(seq, got, best) if self.value == "prefix" else m > best_milli:
                best, best_milli, best_snap, best_name = got, m, self._snapshot(), plan
        self._restore(best_snap if best is not out else placed_snap)
        self.plan_wins[best_name] = self.plan_wins.get(best_name, 0) + 1
        return best

    def _repair(self, seq: list[int], out: list) -> None:
        """Ejections for the batch's unplaced pods, the largest first (see the module's docstring)."""
        pc = self._ctx.pc
        req = pc.shape_request
        failed = sorted((k for k, g in enumerate(out) if g is None), key=lambda k: (-int(req[seq[k]]), k))
        hopeless: set[int] = set()
        queue = list(failed)
        while queue:
            k = queue.pop(0)
            if out[k] is not None or seq[k] in hopeless:
                continue
            lost = self._eject(seq, out, k)
            if lost is None:
                hopeless.add(seq[k])
                continue
            hopeless.clear()
            self.moves += 1
            self.dropped += len(lost)
            queue += lost  # a dropped pod may find a place after a later move

    def _eject(self, seq: list[int], out: list, k: int) -> list[int] | None:
        """Try to place arrival k by taking the batch's pods off one node; the arrivals left
        unplaced by the kept move (empty: every pod moved found a node), or None (no move kept)."""
        ctx = self._ctx
        c, st, pc = ctx.c, ctx.st, ctx.pc
        f = c.shapes[seq[k]]
        on: dict[int, list[int]] = {}
        for j, g in enumerate(out):
            if g is not None:
                on.setdefault(g[0], []).append(j)
        if not on:
            return None
        nodes = np.array(sorted(on), dtype=np.int64)
        # What each node would hold with the batch's pods taken off.
        free = st.free[nodes].copy()
        left = st.left[nodes].copy()
        moved_milli = np.zeros(len(nodes), dtype=np.int64)
        for r, n in enumerate(nodes):
            for j in on[int(n)]:
                s = c.shapes[seq[j]]
                free[r] += s.demand
                devs = out[j][1]
                left[r, devs] += s.cons[n, devs]
                moved_milli[r] += int(pc.shape_request[seq[j]])
        ok = (free >= f.demand).all(axis=1) & f.node_ok[nodes]
        if f.count:
            ok &= (f.compat[nodes] & (left >= f.cons[nodes])).sum(axis=1) >= f.count
        cand = np.flatnonzero(ok)
        if not cand.size:
            return None
        order = cand[np.lexsort((self._rank[nodes[cand]], moved_milli[cand]))][: self.tries]
        for r in order:
            n = int(nodes[r])
            snap = self._snapshot()
            moved = sorted(on[n], key=lambda j: (-int(pc.shape_request[seq[j]]), j))
            old = {j: out[j] for j in moved}
            for j in moved:
                self._untake(seq[j], n, out[j][1])
            got_f = self._place(seq[k], only=n)
            if got_f is None:  # cannot happen (checked above); be safe
                self._restore(snap)
                continue
            placed = {j: self._place(seq[j]) for j in moved}
            lost = [j for j, g in placed.items() if g is None]
            lost_worth = sum(self._worth(seq, j) for j in lost)
            if not lost:
                keep = True
            elif not self.drop:
                keep = False
            elif self.value == "prefix":
                # Prefix-safe: after every arrival at least as much allocated as before (f arrives
                # before the pods it displaces and asks more than they do together).
                keep = all(j > k for j in lost) and self._worth(seq, k) > lost_worth
            else:
                keep = self._worth(seq, k) > lost_worth
            if keep:
                out[k] = got_f
                for j, g in placed.items():
                    out[j] = g
                return lost
            self._restore(snap)
            for j in moved:
                out[j] = old[j]
        return None
