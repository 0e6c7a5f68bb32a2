"""The scheduler's filter loop over nodes on arrays (Scheduler.select for pods of a kind, no
inter-pod filters): per kind of pod, each node's last answer and the node version it was given
at; nodes that changed since are filtered again, in search order, until enough feasible nodes
lie before them. Alike kinds share their answers (boards); a device group's nodes are answered
in one step once one of them fits through the group's shared devices (see scan)."""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections import Counter
from typing import Any

import numpy as np

from draopt.cluster.filter_error import is_filter_error
from draopt.cluster.firstfit import shareable_reason

_VERSION = operator.attrgetter("version")
_TAKES = operator.attrgetter("_takes")
LAST_FIT = 6  # position of the kept fits in a table (see table)
MAX_KINDS = 1024  # kinds of pods whose per-node answers are kept (a few hundred bytes per node each)


def table(sched, tables: dict, key) -> tuple:
    """Per node: (version answered at, feasible, DRA score, generic reason or None, the node's
    take count then, its device group then (-1: none), the last fit try_node gave there:
    (node version, the pod's claim signatures, fit) or None)."""
    got = tables.get(key)
    if got is None:
        if len(tables) >= MAX_KINDS:
            del tables[next(iter(tables))]  # memory bound: forget the oldest kind
        n = len(sched.nodes)
        got = tables[key] = (
            np.full(n, -1, dtype=np.int64),
            np.zeros(n, dtype=bool),
            np.zeros(n, dtype=np.int64),
            [None] * n,
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64),
            [None] * n,
        )
    return got


def group_number(sched, memo) -> int:
    """A small number for a device group (the memo object of a shared inventory)."""
    got = sched._groups.get(id(memo))
    if got is None or got[1] is not memo:
        got = sched._groups[id(memo)] = (len(sched._groups), memo)
    return got[0]


def scan(
    sched,
    sig,
    start: int,
    frontier: int,
    to_find: int,
    try_fn,
    keys,
    first_open,
    skipped_reasons,
    generic,
    alike,
    demand=None,
    shared=None,
    merged=False,
    specs=None,
):
    """The filter loop on arrays: nodes whose state has not changed since a pod of this kind
    was filtered there keep their answer; the others, in search order, are filtered until
    enough feasible nodes lie before them. Returns (feasible node indexes in search order, an
    int64 array, their DRA scores, fits computed now, rejection reasons (on failure only), nodes processed).

    A node that changed is answered from the `alike` kind's board when a pod of an alike
    kind was filtered there since (the same answer: only the fit is left to compute, for the
    node chosen); the loop is otherwise the same, so the frontier moves as it did.

    `merged`: the table (`sig`) serves every kind alike to `alike` (Scheduler.select), so it
    needs no board; a reason that is not shareable sets the alike kinds apart.

    `specs` (the pod's claim signatures, or None): each fit found is kept with them in the
    table (Scheduler.select reuses it for the node chosen when it was not filtered now).

    `shared` (firstfit's SharedDevices): once the pod fits on a node through devices every
    node of its group reaches alike (a shared inventory, and an answer that names no node),
    the group's other nodes that passed the node filters for this kind before and took
    nothing since (the allocated devices changed, not the node) fit too, with the same
    score: try_node would answer them so from its cache. They are answered in one step."""
    st = _Scan(
        sched, sig, start, frontier, to_find, try_fn, keys, first_open, skipped_reasons, generic, alike, demand,
        shared, merged, specs,
    )  # fmt: skip
    while True:
        stale = _stale_in_search_order(st)
        if not stale:
            break
        fill = _filter_stale(st, stale)
        if st.error is not None:
            return _stopped(st)
        if fill is None:
            break
        _fill_group(st, *fill)
    return _answer(st)


class _Scan:
    """One scan's state (see scan): its arguments, the kind's table and the alike kind's board,
    every node's version now, and what the loop found."""

    __slots__ = (
        "sched", "sig", "start", "frontier", "to_find", "try_fn", "keys", "first_open", "skipped_reasons",
        "generic", "alike", "demand", "shared", "merged", "specs", "nodes", "ver", "feas", "dscore", "reasons",
        "took", "group", "last_fit", "bver", "bscore", "breason", "versions", "low", "fits", "filled", "group_fits",
        "error",
    )  # fmt: skip

    def __init__(
        self, sched, sig, start, frontier, to_find, try_fn, keys, first_open, skipped_reasons, generic, alike, demand,
        shared, merged, specs,
    ):  # fmt: skip
        self.sched, self.sig, self.start, self.frontier, self.to_find = sched, sig, start, frontier, to_find
        self.try_fn, self.keys, self.first_open, self.skipped_reasons = try_fn, keys, first_open, skipped_reasons
        self.generic, self.alike, self.demand, self.shared = generic, alike, demand, shared
        self.merged, self.specs = merged, specs
        self.nodes = sched.nodes
        self.ver, self.feas, self.dscore, self.reasons, self.took, self.group, self.last_fit = table(
            sched, sched.kinds, sig
        )
        if alike is not None and alike != sig and not merged:
            self.bver, _, self.bscore, self.breason, _, _, _ = table(sched, sched.boards, alike)
        else:
            self.bver = self.bscore = self.breason = None
        self.versions = versions_now(sched)
        # The arrays are worked on in node-index order; the search order (from `start`, wrapping
        # around) is a rotation of it. Nodes below the frontier at entry are known to reject this
        # kind (`low`); the frontier may move while nodes are filtered, `low` does not.
        self.low = frontier
        self.fits: dict[int, Any] = {}
        self.filled: set[int] = set()  # device groups answered in one step
        self.group_fits: list = []  # (nodes answered so, the fit try_node gives each of them)
        self.error: tuple[int, str] | None = None  # (node, generic reason): a filter error stopped the loop


def _stale_in_search_order(st: _Scan) -> list:
    """The nodes whose version changed since this kind was answered there (from `low` on), in
    search order (as a list: the loop mostly stops after a few of them); empty when none."""
    # (x.nonzero()[0] on these 1-D arrays: np.flatnonzero's answer without its Python wrappers)
    low, ver, versions, start = st.low, st.ver, st.versions, st.start
    if low:
        nz = (ver[low:] != versions[low:]).nonzero()[0]
        nz += low
    else:
        nz = (ver != versions).nonzero()[0]
    if not nz.size:
        return []
    stale = nz.tolist()
    if start and stale[0] < start:
        cut = bisect_left(stale, start)
        stale = stale[cut:] + stale[:cut]
    return stale


def _filter_stale(st: _Scan, stale: list):
    """The stale nodes filtered in search order until enough feasible nodes lie before the next
    one. (the device group, its fit) when a fit through a group's shared devices stops the loop
    (_fill_group answers the group), else None."""
    sched, nodes, sig, start, low, to_find = st.sched, st.nodes, st.sig, st.start, st.low, st.to_find
    ver, feas, dscore, reasons, took, group = st.ver, st.feas, st.dscore, st.reasons, st.took, st.group
    bver, bscore, breason, versions, shared = st.bver, st.bscore, st.breason, st.versions, st.shared
    frontier = st.frontier
    # Enough feasible nodes before a stale one: with every stale node before it filtered
    # (search order), the feasible nodes (>= low) before it are the known ones plus those
    # found now. kube-scheduler's loop stops at the feasible node after the to_find it keeps
    # (findNodesThatPassFilters cancels on finding one too many): the nodes before that one are
    # processed (a filter error among them stops the attempt). Reaching to_find + 1 needs at
    # least this many nodes that may be feasible; else every stale node is filtered.
    need = to_find + 1
    may_stop = int(np.count_nonzero(feas[low:] if low else feas)) + len(stale) - 1 >= need
    fill = None
    for idx in stale:
        if may_stop and feasible_before(feas, idx, start, low) >= need:
            break
        if bver is not None and bver[idx] == versions[idx]:
            reason, fit = breason[idx], None
            if reason is None:
                feas[idx] = True
                dscore[idx] = bscore[idx]
                ver[idx] = versions[idx]
                continue
            version = nodes[idx].version
        else:
            node = nodes[idx]
            version = node.version
            reason, fit = st.try_fn(node)
            if reason is not None:
                reason = st.generic(reason, st.keys)
                if is_filter_error(reason):
                    # The attempt stops here (draopt.cluster.filter_error). Not kept: the node
                    # stays stale, so every later pod of the kind that reaches it is stopped too.
                    feas[idx] = False
                    st.error = (idx, reason)
                    break
            if bver is not None:
                if shareable_reason(reason):
                    bver[idx] = version
                    breason[idx] = reason
                    bscore[idx] = fit[3] if fit is not None else 0
            elif st.merged and not shareable_reason(reason):
                # This table serves every alike kind (Scheduler.select): a reason of this
                # kind's own is not theirs, so they keep their own tables from now on.
                sched.alike_apart.add(st.alike)
        ver[idx] = version
        if reason is not None:
            feas[idx] = False
            reasons[idx] = reason
            if idx == frontier:
                frontier += 1
                st.first_open[sig] = frontier
                st.skipped_reasons.setdefault(sig, {})[idx] = (version, reason)
            continue
        assert fit is not None  # try_node's fit when it gives no reason
        feas[idx] = True
        dscore[idx] = fit[3]
        st.fits[idx] = fit
        if st.specs is not None:
            st.last_fit[idx] = (version, st.specs, fit)
        if shared is not None:
            node = nodes[idx]
            took[idx] = node._takes
            g = group[idx] = group_number(sched, shared.memo(node))
            if g not in st.filled:
                got = shared.current(st.demand)
                if got is not None and group_number(sched, got[0]) == g:
                    fill = (g, got[1])
                    break
    st.frontier = frontier
    return fill


def _fill_group(st: _Scan, g: int, group_fit) -> None:
    """Device group `g` answered in one step: its nodes that passed the node filters for this kind
    before and took nothing since fit with `group_fit`'s score (see scan's `shared`)."""
    st.filled.add(g)
    ver, versions = st.ver, st.versions
    same = (ver != versions) & (st.group == g) & (st.took == takes_now(st.sched)) & st.feas
    same[: st.frontier] = False
    ver[same] = versions[same]
    st.dscore[same] = group_fit[3]
    st.group_fits.append((same, group_fit))


def _answer(st: _Scan):
    """scan's answer once no stale node is left to filter before enough feasible ones."""
    start, low, to_find, feas, dscore = st.start, st.low, st.to_find, st.feas, st.dscore
    n = len(st.nodes)
    # Every node before the first stale one left in search order is answered now, and that one
    # has at least to_find + 1 feasible nodes before it: those found from `start` on are the
    # first; the loop processed the nodes before the one after the to_find kept.
    lo = start if start > low else low
    ahead = feas[lo:].nonzero()[0]
    if ahead.size > to_find:
        found = ahead[:to_find]
        found += lo
        processed = int(ahead[to_find]) + lo - start  # (>= start: lo is)
        return found, dscore[found], _with_groups(st.fits, st.group_fits), None, processed
    fresh = st.ver == st.versions
    answered = fresh & feas
    if low:
        answered[:low] = False
    ok = in_search_order(answered.nonzero()[0], start)
    rejected: Counter | None = None
    if ok.size > to_find:
        found = ok[:to_find]
        cut = int(ok[to_find])
        processed = cut - start if cut >= start else cut - start + n
    else:
        found = ok
        processed = n  # (no feasible node after those kept: every node processed)
    if not found.size:
        refused = fresh & ~feas
        if low:
            refused[:low] = False
        rejected = Counter(st.reasons[i] for i in in_search_order(refused.nonzero()[0], start).tolist())
    return found, dscore[found], _with_groups(st.fits, st.group_fits), rejected, processed


def _stopped(st: _Scan):
    """scan's answer when a node's filter returned an error: no feasible node, that error as the
    only reason, and the nodes before it in search order processed."""
    assert st.error is not None
    idx, reason = st.error
    n = len(st.nodes)
    processed = idx - st.start if idx >= st.start else idx - st.start + n
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), {}, Counter({reason: 1}), processed


def _with_groups(fits: dict, group_fits: list):
    if not group_fits:
        return fits
    out = Fits(fits)
    out.groups = group_fits
    return out


def feasible_before(feas: np.ndarray, idx: int, start: int, low: int) -> int:
    """Nodes >= low marked feasible before node `idx` in search order from `start`."""
    lo = start if start > low else low
    if idx >= start:
        return int(np.count_nonzero(feas[lo:idx])) if idx > lo else 0
    # wrapped around: every node from `start` on, then those from `low` to idx
    return int(np.count_nonzero(feas[lo:])) + (int(np.count_nonzero(feas[low:idx])) if idx > low else 0)


def in_search_order(indexes: np.ndarray, start: int) -> np.ndarray:
    """Sorted node indexes in search order from `start`: those >= start, then the others."""
    if not start or not indexes.size or indexes[0] >= start:
        return indexes
    cut = int(indexes.searchsorted(start))
    if cut == indexes.size:
        return indexes
    return np.concatenate((indexes[cut:], indexes[:cut]))


def takes_now(sched) -> np.ndarray:
    """Every node's take count now: the cluster's array when the nodes keep it (checked once
    per array, as versions_now does), else read."""
    arr = getattr(sched.cluster, "takes", None)
    if arr is not None and sched._takes_checked[0] is not arr:
        sched._takes_checked = (arr, all(nd._takes_kept is arr for nd in sched.nodes))
    if arr is not None and sched._takes_checked[1]:
        return arr  # (compared at once: nothing takes while the scan runs)
    return np.fromiter(map(_TAKES, sched.nodes), dtype=np.int64, count=len(sched.nodes))


def versions_now(sched) -> np.ndarray:
    """Every node's version now: the cluster's array when the nodes keep it, else read."""
    arr = getattr(sched.cluster, "versions", None)
    if sched._versions_kept is None:
        sched._versions_kept = arr is not None and all(nd._versions is arr for nd in sched.nodes)
    if arr is None or not sched._versions_kept or arr is not sched._kept_array:
        return np.fromiter(map(_VERSION, sched.nodes), dtype=np.int64, count=len(sched.nodes))
    return arr  # (read at once: nothing changes a version while the scan runs)


class Fits(dict):
    """scan's fits, and the nodes a device group's fill answered with its fit: (mask, fit)."""

    groups: list
