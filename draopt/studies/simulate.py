"""Online placement of a GPU trace: `draopt simulate`, the Monte-Carlo workload-inflation
protocol of the FGD paper (Weng et al., "Beware of Fragmentation", USENIX ATC '23).

Tasks are sampled from the trace's pending pods with replacement and submitted one at a time
until the GPU capacity they request reaches the largest inflation level (a level is requested
GPU capacity / the cluster's GPU capacity; like the paper's simulator, the task that would
cross it is not submitted). Each task is placed by a policy when it arrives and never moved;
a task that fits nowhere is dropped. After the arrivals that reach each level, the share of
the cluster's GPU capacity left unallocated is recorded. Runs differ by their seeded sample;
within a run every policy sees the same arrivals. `--protocol fgd-paper` runs the paper's own
protocol and scorers instead, as its authors' simulator does (draopt.studies.paper_protocol).

The simulator is incremental and vectorised (numpy): the cluster is a matrix of node resources
(cpu, memory, pods, ...) and one of device capacity left (one consumable capacity per device,
`gpu.example.com/milli` by default). What a pod may use is decided by draopt's own rules,
once per pod shape and per kind of node (`draopt.dra.problem.prepare`: class and request selectors
in CEL, taints, capacity requests and request policies); what this fast path supports is the
trace's shapes: at most one claim per pod with one ExactCount request and no constraints, no
node selection, an empty cluster. Within a node, devices are taken as the kube-scheduler's
allocator takes them (the first ones in search order with capacity left), except by `fgd`.

Policies (node choice; ties: first node by name; the names: docs/cli.md, "Policies"):
* `first-node`: the first node by name where the pod fits (`place --scheduler-config
  builtin:name-order`); called `first-fit` up to 0.1.0 (still read, with a deprecation note:
  `first-fit` is kube-scheduler's default profile in every other command, `kube-scheduler` here);
* `best-fit`: kube-scheduler's NodeResourcesFit `MostAllocated` over cpu, memory and the
  device capacity (equal weights): the node left fullest;
* `least-allocated`: `LeastAllocated` over the same resources: the node left emptiest;
* `fgd`: fragmentation gradient descent: the node and device whose choice grows the expected
  GPU fragmentation least. A node's fragmentation, against the trace's task shapes weighted by
  their frequency, is the free device capacity each shape cannot use there: all of it when the
  shape does not fit the node (or needs no device), else the capacity left on devices it cannot
  take (too little left, or not matching its selectors);
* `kube-scheduler`: a KubeSchedulerConfiguration profile's node choice (`--scheduler-config`,
  default Kubernetes 1.36's profile; ties `--tie-break`, random from `--seed`): NodeResourcesFit
  and BalancedAllocation scores, percentageOfNodesToScore (draopt.scheduler.trace says what is
  modelled and what is refused);
* `optimal-batch`: arrivals are collected K at a time (`--batch`); each batch is placed task by
  task, the (task, node, GPU) of the smallest FGD fragmentation delta first, larger tasks
  favoured (`draopt.studies.online_batch`; a heuristic, no optimum claimed); placed pods never move.
The offline optimum (`--offline-optimum`) places all tasks of a level at once with the same
model: no online policy on the same arrivals allocates more.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from draopt.errors import InputError
from draopt.kube.features import add_version_flag
from draopt.kube.listflags import CommaList
from draopt.kube.optionfiles import check_writable, save_figure
from draopt.provenance import Provenance, record
from draopt.studies.sim_cluster import (  # noqa: F401  (re-exported: the simulator's names)
    DEFAULT_CAPACITY,
    FragModel,
    Shape,
    SimCluster,
    State,
    _first,
    _lcm_den,
    build,
)
from draopt.studies.simulate_optimal import _object_set, _quantity, residual_objects, solve_optimal  # noqa: F401  (re-exported)
from draopt.progress import format_gap
from draopt.progress import current as current_progress  # the status lines (`progress` is a parameter here)

ONLINE_POLICIES = ("first-node", "best-fit", "least-allocated", "fgd", "kube-scheduler")
POLICIES = ONLINE_POLICIES + ("optimal-batch",)
DEFAULT_POLICIES = "first-node,best-fit,least-allocated,fgd"
# Old names read for one release, each with a deprecation note: simulate's `first-fit` packed (the
# first node by name) where every other command's `first-fit` is kube-scheduler's default profile.
DEPRECATED_POLICIES = {"first-fit": "first-node"}
PAPER_PROTOCOL_ONLY = ("lp-guided", "lp-guided-learned", "bid-price")  # draopt.studies.lp_guided
OFFLINE = "offline-optimum"
DEFAULT_BATCH = 50  # optimal-batch's arrivals per batch under draopt's protocol


# ------------------------------------------------------------------ policies
def _score_alloc(st: State, s: Shape, nodes: np.ndarray, most: bool) -> np.ndarray:
    """MostAllocated / LeastAllocated over cpu, memory and the device capacity after placing."""
    c = st.c
    parts = []
    for r in ("cpu", "memory"):
        if r in c.resources:
            j = c.resources.index(r)
            a = c.alloc[nodes, j]
            used = a - st.free[nodes, j] + s.demand[j]
            with np.errstate(invalid="ignore", divide="ignore"):
                parts.append(np.where(np.isfinite(a) & (a > 0), used / a, 0.0))
    capsum = c.cap[nodes].sum(axis=1)
    used = capsum - np.clip(st.left[nodes], 0, None).sum(axis=1) + s.request
    with np.errstate(invalid="ignore", divide="ignore"):
        parts.append(np.where(capsum > 0, used / capsum, 0.0))
    frac = np.mean(parts, axis=0)
    return frac if most else 1.0 - frac


def place_one(st: State, s: Shape, policy: str, frag: FragModel | None) -> tuple[int, list[int]] | None:
    ok, use = st.feasible(s)
    cand = np.flatnonzero(ok)
    if cand.size == 0:
        return None
    if policy == "first-node":
        node = int(cand[0])
    elif policy in ("best-fit", "least-allocated"):
        score = _score_alloc(st, s, cand, policy == "best-fit")
        node = int(cand[int(np.argmax(score))])  # argmax: the first (by name) of the best
    elif policy == "fgd":
        return _fgd(st, s, cand, use, frag)
    elif policy == "kube-scheduler":
        node = st.c.kube_scheduler.choose(st, s, cand)
    else:
        raise InputError(f"--policy: unknown policy {policy!r}")
    return node, (_first(use[node], s.count) if s.count else [])


def _fgd(st: State, s: Shape, cand: np.ndarray, use, frag: FragModel | None) -> tuple[int, list[int]]:
    assert frag is not None  # simulate makes the FGD model for fgd
    if s.count == 0:
        # No device: fragmentation only changes through the node resources.
        free = st.free[cand] - s.demand
        after = frag.frag(cand, free, st.left[cand])
        before = frag.frag(cand, st.free[cand], st.left[cand])
        node = int(cand[int(np.argmin(after - before))])
        return node, []
    if s.count == 1:
        nodes, devs = np.nonzero(use[cand])
        nodes = cand[nodes]
        # Devices of one node with the same capacity left give the same state: keep the first.
        key = nodes * (1 << 32) + st.left[nodes, devs].astype(np.int64)
        _, first = np.unique(key, return_index=True)
        first.sort()
        nodes, devs = nodes[first], devs[first]
        left = st.left[nodes].copy()
        left[np.arange(len(nodes)), devs] -= s.cons[nodes, devs]
        chosen = [[int(d)] for d in devs]
    else:
        nodes = cand
        left = st.left[nodes].copy()
        chosen = []
        for k, nd in enumerate(nodes):
            picks = _first(use[nd], s.count)
            left[k, picks] -= s.cons[nd, picks]
            chosen.append(picks)
    free = st.free[nodes] - s.demand
    after = frag.frag(nodes, free, left)
    before = frag.frag(nodes, st.free[nodes], st.left[nodes])
    best = int(np.argmin(after - before))
    return int(nodes[best]), chosen[best]


def parse_levels(text: str) -> list[float]:
    try:
        if ":" in text:
            parts = [float(x) for x in text.split(":")]
            if len(parts) != 3:
                raise ValueError
            lo, hi, step = parts
            if step <= 0 or lo <= 0 or hi < lo:
                raise InputError(f"--inflation {text}: needs 0 < START <= STOP and STEP > 0")
            k = int(math.floor((hi - lo) / step + 1e-9))
            levels = [round(lo + i * step, 6) for i in range(k + 1)]
        else:
            levels = sorted({float(x) for x in text.split(",")})
    except ValueError:
        raise InputError(
            f"--inflation {text!r}: expected START:STOP:STEP or a comma-separated list "
            "of levels (1.0 = 100 % of the GPU capacity)"
        ) from None
    if not levels or any(not (0 < v <= 10) or not math.isfinite(v) for v in levels):
        raise InputError(f"--inflation {text!r}: levels must be more than 0 and at most 10")
    if len(levels) > 1000:
        raise InputError(f"--inflation {text!r}: more than 1000 levels")
    return levels


def arrivals(c: SimCluster, max_level: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Shape indices sampled (with replacement) from the trace's pods until the requested
    capacity would pass max_level x capacity; and the cumulative requested capacity."""
    pool = np.array(c.pod_shape)
    req = np.array([s.request for s in c.shapes])
    if not (req[pool] > 0).any():
        raise InputError("simulate: no pod of --trace requests device capacity: inflation cannot grow")
    target = max_level * c.total
    out: list[np.ndarray] = []
    total = 0.0
    while True:
        draw = pool[rng.integers(0, len(pool), size=max(1024, len(pool)))]
        cum = total + np.cumsum(req[draw])
        stop = int(np.searchsorted(cum, target, side="right"))
        out.append(draw[:stop])
        if stop < len(draw):
            break
        total = float(cum[-1])
    seq = np.concatenate(out) if out else np.zeros(0, dtype=int)
    return seq, np.cumsum(req[seq])


@dataclass
class Record:
    level: float
    policy: str
    run: int
    unallocated: float  # share of device capacity not allocated
    arrived: float  # requested capacity that arrived / capacity
    placed: int
    failed: int
    seconds: float
    gap: float | None = None
    bound_unallocated: float | None = None
    status: str | None = None


def run_policy(
    c: SimCluster,
    seq: np.ndarray,
    cum: np.ndarray,
    levels: list[float],
    policy: str,
    run: int,
    *,
    frag: FragModel | None,
    batch: int,
    time_limit: float,
    log: list | None = None,
) -> list[Record]:
    """One policy over one run's arrivals: a Record per level. `log` (online policies) gets
    (node, devices) or None per arrival."""
    st = State(c)
    stops = [int(np.searchsorted(cum, lv * c.total, side="right")) for lv in levels]
    out: list[Record] = []
    t0 = time.perf_counter()
    # Entered by hand, not to re-indent the run; on an exception draopt.progress.reporting closes the line.
    shown_line = current_progress().task(f"simulate: run {run}: {policy}", total=len(seq), unit="arrivals")
    shown = shown_line.__enter__()

    def record(k: int) -> None:
        shown.update_to(k)
        while out.__len__() < len(levels) and stops[len(out)] == k:
            lv = levels[len(out)]
            arrived = float(cum[k - 1]) / c.total if k else 0.0
            out.append(
                Record(
                    lv,
                    policy,
                    run,
                    1.0 - st.allocated / c.total,
                    arrived,
                    st.placed,
                    st.failed,
                    round(time.perf_counter() - t0, 3),
                )
            )
            shown.note(level=f"{lv:g} ({len(out)} of {len(levels)})", unallocated=f"{100 * out[-1].unallocated:.1f}%")

    record(0)
    if policy == "optimal-batch":
        # draopt.studies.online_batch: each batch smallest FGD delta first; a batch never crosses a level.
        from draopt.studies.online_batch import OptimalBatch, run_batches

        assert frag is not None  # simulate makes the FGD model for optimal-batch
        batch_log = run_batches(OptimalBatch(c, frag, batch=batch), st, seq, stops, after=record)
        if log is not None:
            log += batch_log
    else:
        for k, si in enumerate(seq, start=1):
            s = c.shapes[si]
            got = place_one(st, s, policy, frag)
            if got is None:
                st.failed += 1
            else:
                st.take(s, got[0], got[1])
            if log is not None:
                log.append(got)
            record(k)
    while len(out) < len(levels):
        record(len(seq))
    shown_line.__exit__(None, None, None)
    return out


def offline(
    c: SimCluster,
    seq: np.ndarray,
    cum: np.ndarray,
    levels: list[float],
    run: int,
    *,
    time_limit: float,
    logs: dict[str, list] | None = None,
) -> list[Record]:
    """All arrivals of each level placed at once by the optimal model, warm-started from the
    online policy (of `logs`, first-node's when empty) that allocated most at that level: the
    answer is never worse than any online policy's, and the bound is the model's."""
    if not logs:
        logs = {"first-node": []}
        run_policy(
            c, seq, cum, levels, "first-node", run, frag=None, batch=1, time_limit=time_limit, log=logs["first-node"]
        )
    allocated = {}
    for pol, log in logs.items():
        acc = np.zeros(len(seq) + 1)
        for i, (si, got) in enumerate(zip(seq, log), start=1):
            acc[i] = acc[i - 1] + (sum(c.shapes[si].cons[got[0], d] for d in got[1]) if got else 0.0)
        allocated[pol] = acc
    out = []
    for number, lv in enumerate(levels, start=1):
        k = int(np.searchsorted(cum, lv * c.total, side="right"))
        t0 = time.perf_counter()
        st = State(c)
        best = max(logs, key=lambda pol: (allocated[pol][k], -list(logs).index(pol)))
        with current_progress().task(
            f"simulate: run {run}: {OFFLINE}: level {lv:g} ({number} of {len(levels)}), "
            f"{k} arrivals from {best}'s placement"
        ):
            got = solve_optimal(st, [c.shapes[i] for i in seq[:k]], time_limit=time_limit, hint=logs[best][:k])
        bound = got.bound
        out.append(
            Record(
                lv,
                OFFLINE,
                run,
                1.0 - st.allocated / c.total,
                float(cum[k - 1]) / c.total if k else 0.0,
                st.placed,
                st.failed,
                round(time.perf_counter() - t0, 3),
                gap=got.gap,
                bound_unallocated=max(0.0, 1.0 - bound / c.total) if bound else None,
                status=got.status,
            )
        )
    return out


def simulate(
    c: SimCluster,
    *,
    levels: list[float],
    policies: list[str],
    runs: int = 3,
    seed: int = 0,
    batch: int = DEFAULT_BATCH,
    time_limit: float = 60.0,
    offline_optimum: bool = False,
    progress: Callable[[str], None] | None = None,
    into: list[Record] | None = None,
) -> list[Record]:
    """Every run's records, policy by policy; `into` (a list) receives each policy's records as
    its run ends, so that a caller interrupted (Ctrl-C) keeps the runs finished."""
    weights = np.array([len(s.pods) for s in c.shapes], dtype=float)
    frag = FragModel(c, weights) if {"fgd", "optimal-batch"} & set(policies) else None
    records: list[Record] = [] if into is None else into
    for run in range(runs):
        rng = np.random.default_rng([seed, run])
        seq, cum = arrivals(c, max(levels), rng)
        logs: dict[str, list] = {}
        for policy in policies:
            t0 = time.perf_counter()
            log = logs.setdefault(policy, []) if policy in ONLINE_POLICIES else None
            records += run_policy(
                c, seq, cum, levels, policy, run, frag=frag, batch=batch, time_limit=time_limit, log=log
            )
            if progress:
                progress(f"run {run}: {policy}: {len(seq)} arrivals in {time.perf_counter() - t0:.1f} s")
        if offline_optimum:
            t0 = time.perf_counter()
            records += offline(c, seq, cum, levels, run, time_limit=time_limit, logs=logs)
            if progress:
                progress(f"run {run}: {OFFLINE}: {len(levels)} level(s) in {time.perf_counter() - t0:.1f} s")
    return records


# ------------------------------------------------------------------ output
COLUMNS = [
    "inflation",
    "policy",
    "runs",
    "unallocated_pct",
    "std_pct",
    "min_pct",
    "max_pct",
    "arrived_pct",
    "placed",
    "failed",
    "bound_unallocated_pct",
    "gap",
    "status",
]  # deterministic: no timings


@dataclass
class SimRow:
    """One line of `draopt simulate`'s table and CSV: a policy at an inflation level, over the runs
    (the columns are COLUMNS, in that order)."""

    inflation: float  # the level: requested device capacity / the cluster's
    policy: str
    runs: int
    unallocated_pct: float  # device capacity not allocated, % (mean over the runs)
    std_pct: float  # ... its standard deviation over the runs (0 with one run)
    min_pct: float
    max_pct: float
    arrived_pct: float  # requested capacity that arrived, % (mean)
    placed: float  # pods placed (mean)
    failed: float  # pods that fit nowhere (mean)
    bound_unallocated_pct: float | str = ""  # the offline optimum's bound, % ("": none)
    gap: float | str = ""  # the offline optimum's largest gap ("": none)
    status: str = ""  # the offline optimum's solver statuses ("": an online policy)

    def to_dict(self) -> dict[str, Any]:
        return {c: getattr(self, c) for c in COLUMNS}

    def __getitem__(self, column: str) -> Any:
        """row["policy"]: a column, as in the dicts simulate returned."""
        if column not in COLUMNS:
            raise KeyError(column)
        return getattr(self, column)


class SimRows(list[SimRow]):
    """What :func:`aggregate` returns: the SimRow lines, shown as a table in a notebook and
    turned into a DataFrame."""

    def to_frame(self) -> Any:
        """A pandas DataFrame with COLUMNS, one row per line: inflation (requested / capacity),
        policy, runs, unallocated_pct, std_pct, min_pct, max_pct, arrived_pct (percent of the
        device capacity), placed and failed (pods, means over the runs), bound_unallocated_pct,
        gap and status (the offline optimum's; None for online policies)."""
        from draopt.studies.frames import frame

        return frame(COLUMNS, ([None if v == "" else v for v in r.to_dict().values()] for r in self))

    def __repr__(self) -> str:
        policies = list(dict.fromkeys(r.policy for r in self))
        levels = sorted({r.inflation for r in self})
        return f"<SimRows: {len(self)} rows, {len(policies)} policies ({', '.join(policies)}), {len(levels)} levels>"

    def _repr_html_(self) -> str:
        from draopt.studies.frames import html_table

        return html_table("draopt simulate", COLUMNS, ([getattr(r, c) for c in COLUMNS] for r in self))


RECORD_COLUMNS = (
    "level",
    "policy",
    "run",
    "unallocated",
    "arrived",
    "placed",
    "failed",
    "seconds",
    "gap",
    "bound_unallocated",
    "status",
)


def records_frame(records: list[Record]) -> Any:
    """The per-run records (simulate(..., records=True)) as a pandas DataFrame, RECORD_COLUMNS:
    level, policy, run, unallocated and arrived (shares of the device capacity, 0..1), placed,
    failed, seconds (wall time), and the offline optimum's gap, bound_unallocated and status."""
    from draopt.studies.frames import frame

    return frame(RECORD_COLUMNS, ([getattr(r, c) for c in RECORD_COLUMNS] for r in records))


def aggregate(records: list[Record], order: list[str]) -> SimRows:
    groups: dict[tuple[float, str], list[Record]] = {}
    for r in records:
        groups.setdefault((r.level, r.policy), []).append(r)
    rank = {p: i for i, p in enumerate(order)}
    rows = SimRows()
    for (lv, pol), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], rank.get(kv[0][1], 99))):
        u = np.array([r.unallocated for r in rs]) * 100
        bounds = [r.bound_unallocated for r in rs if r.bound_unallocated is not None]
        gaps = [r.gap for r in rs if r.gap is not None]
        statuses = sorted({r.status for r in rs if r.status})
        rows.append(
            SimRow(
                inflation=lv,
                policy=pol,
                runs=len(rs),
                unallocated_pct=round(float(u.mean()), 3),
                std_pct=round(float(u.std(ddof=1)) if len(rs) > 1 else 0.0, 3),
                min_pct=round(float(u.min()), 3),
                max_pct=round(float(u.max()), 3),
                arrived_pct=round(float(np.mean([r.arrived for r in rs])) * 100, 3),
                placed=round(float(np.mean([r.placed for r in rs])), 1),
                failed=round(float(np.mean([r.failed for r in rs])), 1),
                bound_unallocated_pct=round(float(np.mean(bounds)) * 100, 3) if bounds else "",
                gap=round(float(max(gaps)), 4) if gaps else "",
                status=",".join(statuses),
            )
        )
    return rows


def _table_cell(row: SimRow, column: str) -> str:
    value = getattr(row, column)
    if column == "gap" and isinstance(value, (int, float)):
        return format_gap(value)  # a percentage, as the progress line shows it (the CSV: the fraction)
    return str(value)


def table(rows: list[SimRow]) -> str:
    cols = list(COLUMNS)
    if not any(r.status for r in rows):
        cols = [c for c in cols if c not in ("bound_unallocated_pct", "gap", "status")]
    text = [[_table_cell(r, c) for c in cols] for r in rows]
    widths = [max(len(c), *(len(t[i]) for t in text)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(t, widths)) for t in text]
    return "\n".join(lines)


def to_csv(rows: list[SimRow]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(r.to_dict() for r in rows)
    return buf.getvalue()


PER_RUN_COLUMNS = (
    "inflation",
    "run",
    "policy",
    "unallocated_pct",
    "arrived_pct",
    "placed",
    "failed",
    "bound_unallocated_pct",
    "gap",
    "status",
)  # deterministic, as COLUMNS: no timings (--stats has them)


def records_csv(records: list[Record]) -> str:
    """`simulate -o csv --per-run`: one row per level, run and policy (PER_RUN_COLUMNS: the means'
    columns for one run; shares in percent of the device capacity), by level, run, then policy
    in --policy order."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(PER_RUN_COLUMNS)
    for r in sorted(records, key=lambda r: (r.level, r.run)):  # stable: the policies' order stays
        bound = "" if r.bound_unallocated is None else round(r.bound_unallocated * 100, 3)
        w.writerow(
            [r.level, r.run, r.policy, round(r.unallocated * 100, 3), round(r.arrived * 100, 3), r.placed, r.failed]
            + [bound, "" if r.gap is None else round(r.gap, 4), r.status or ""]
        )
    return buf.getvalue()


def plot(rows: list[SimRow], path: str, *, title: str = "") -> None:
    save_figure(figure(rows, title=title), "--plot", path, dpi=120)


def figure(rows: list[SimRow], *, title: str = ""):
    """The curves of unallocated GPU capacity against the arrived workload, per policy, on a
    matplotlib Figure of its own (pyplot and its backend untouched: display it in a notebook
    as the cell's value, or save it)."""
    from draopt.studies.report import _matplotlib, new_figure

    _matplotlib("--plot")
    fig = new_figure(figsize=(7, 4.5))
    ax = fig.subplots()
    policies = list(dict.fromkeys(r.policy for r in rows))
    for pol in policies:
        rs = [r for r in rows if r.policy == pol]
        x = [r.inflation * 100 for r in rs]
        y = [r.unallocated_pct for r in rs]
        e = [r.std_pct for r in rs]
        style = "--" if pol == OFFLINE else "-"
        line = ax.errorbar(x, y, yerr=e, label=pol, linestyle=style, marker="o", markersize=3, capsize=2)
        bounded = [(xi, r.bound_unallocated_pct, yi) for xi, r, yi in zip(x, rs, y) if r.bound_unallocated_pct != ""]
        if pol == OFFLINE and bounded:  # the optimum lies between its bound and the value found
            bx, lo, hi = zip(*bounded)
            ax.fill_between(bx, lo, hi, color=line[0].get_color(), alpha=0.2, label=f"{pol}: bound to value")
            ax.vlines(bx, lo, hi, color=line[0].get_color(), alpha=0.5, linewidth=4)  # a single bin shows too
    xs = sorted({r.inflation * 100 for r in rows})
    ax.plot(
        xs, [max(0.0, 100 - x) for x in xs], color="grey", linewidth=0.8, linestyle=":", label="requested < capacity"
    )
    ax.set_xlabel("arrived workload (% of GPU capacity requested)")
    ax.set_ylabel("unallocated GPU capacity (%)")
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# ------------------------------------------------------------------ command line
def register(sub) -> None:
    p = sub.add_parser(
        "simulate",
        help="online placement of a GPU trace under workload inflation (FGD paper's "
        "protocol): unallocated GPU capacity per policy",
    )
    p.add_argument(
        "-f",
        "--filename",
        action="extend",
        nargs="+",
        required=True,
        metavar="CLUSTER",
        help="Nodes, ResourceSlices, DeviceClasses (e.g. from `draopt trace import --nodes`)",
    )
    p.add_argument(
        "--trace",
        required=True,
        metavar="PODS",
        help="the task pool: an openb task CSV, or YAML/JSON Pods and ResourceClaimTemplates",
    )
    p.add_argument(
        "--inflation",
        default="0.5:1.3:0.05",
        metavar="START:STOP:STEP",
        help="levels of requested GPU capacity / cluster GPU capacity (or a list: 0.9,1.0)",
    )
    p.add_argument("--runs", type=_positive_int, default=3, metavar="N")
    p.add_argument("--seed", type=int, default=0, metavar="S")
    p.add_argument(
        "--protocol",
        default="draopt",
        choices=("draopt", "fgd-paper"),
        help="draopt: fresh samples per run (default); fgd-paper: the FGD paper's protocol as its "
        "authors' simulator runs it (draopt.studies.paper_protocol; seeds S..S+N-1)",
    )
    p.add_argument(
        "--policy",
        action=CommaList,
        metavar="POLICY",
        help=f"a policy, repeatable (or comma-separated): {', '.join(POLICIES)} (default {DEFAULT_POLICIES}); "
        "under fgd-paper: fgd, best-fit, gpu-packing, gpu-clustering, dot-product, random (default all), "
        "and optimal-batch, lp-guided, lp-guided-learned, bid-price",
    )
    p.add_argument(
        "--offline-optimum",
        action="store_true",
        help="also place all tasks of each level at once, optimally (with its proven gap)",
    )
    p.add_argument(
        "--batch",
        type=_positive_int,
        default=None,
        metavar="K",
        help=f"optimal-batch: arrivals per batch (default {DEFAULT_BATCH}; --protocol fgd-paper: 500)",
    )
    p.add_argument(
        "--time-limit", type=_positive_float, default=60.0, metavar="S", help="solver time limit per optimal solve"
    )
    p.add_argument(
        "--capacity",
        default=DEFAULT_CAPACITY,
        metavar="NAME",
        help="the device capacity measured and shared (default %(default)s)",
    )
    p.add_argument("--feature-gates", default="", metavar="G=true|false,...")
    add_version_flag(p)
    _output_flags(p)
    from draopt.scheduler import add_scheduler_flags

    add_scheduler_flags(p, seed=False)
    p.set_defaults(func=cmd_simulate)


def _output_flags(p) -> None:
    """simulate's outputs: the table or CSV (into a file, per run), the plot, stderr's lines."""
    p.add_argument("-o", "--output", default="table", choices=("table", "csv"))
    p.add_argument(
        "--output-file",
        metavar="FILE",
        help="-o csv: write the rows to FILE, their provenance beside it (FILE.provenance.json); default stdout "
        "(a plain CSV: no provenance)",
    )
    p.add_argument(
        "--per-run",
        action="store_true",
        help="-o csv: one row per level, run and policy instead of the means over the runs",
    )
    p.add_argument("--plot", metavar="FILE.png", help="plot the curves (needs matplotlib: draopt[plot])")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument(
        "--stats",
        action="store_true",
        help="print one JSON line of timings to stderr (load_s, build_s, simulate_s, per-policy "
        "seconds and arrivals/s, peak RSS)",
    )


def _positive_int(text: str) -> int:
    import argparse

    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least 1")
    return v


def _positive_float(text: str) -> float:
    import argparse

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not v > 0 or not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r}: must be more than 0")
    return v


def parse_policies(value: str | list[str], notes: list[str] | None = None) -> list[str]:
    """`--policy`'s names (comma-separated text, or a list), each once, in order; an old name
    (DEPRECATED_POLICIES) is read as its new one, with a deprecation note added to `notes`."""
    text = value if isinstance(value, str) else ",".join(value)
    got = [p.strip() for p in text.split(",") if p.strip()]
    for old in dict.fromkeys(p for p in got if p in DEPRECATED_POLICIES):
        if notes is not None:
            notes.append(deprecated_policy_note(old))
    got = [DEPRECATED_POLICIES.get(p, p) for p in got]
    bad = [p for p in got if p not in POLICIES]
    if bad or not got:
        paper_only = [p for p in bad if p in PAPER_PROTOCOL_ONLY]
        hint = f" ({', '.join(paper_only)}: --protocol fgd-paper only)" if paper_only else ""
        raise InputError(
            f"--policy {text!r}: unknown policy {', '.join(bad) or '(none)'} (known: {', '.join(POLICIES)}){hint}"
        )
    return list(dict.fromkeys(got))


def deprecated_policy_note(old: str) -> str:
    new = DEPRECATED_POLICIES[old]
    return (
        f"--policy {old} is deprecated in simulate and sweep and will be removed in the next release: it "
        f"means {new} (the first node by name, packing); kube-scheduler's default profile, which is "
        f"`first-fit` in place and compare, is `kube-scheduler` here"
    )


def stats_line(records: list[Record], *, load_s: float, build_s: float, simulate_s: float) -> dict[str, Any]:
    """`simulate --stats`: phase times, and per policy the seconds and arrivals over all runs
    (an online policy's last level holds its run's totals; the offline optimum solves each
    level on its own, so its seconds add up over levels), arrivals per second, peak RSS."""
    import resource

    per: dict[str, dict[str, Any]] = {}
    last: dict[tuple[str, int], Record] = {}
    for r in records:
        if r.policy == OFFLINE:
            p = per.setdefault(r.policy, {"seconds": 0.0, "arrivals": 0})
            p["seconds"] += r.seconds
            p["arrivals"] += r.placed + r.failed
        elif (r.policy, r.run) not in last or r.level >= last[(r.policy, r.run)].level:
            last[(r.policy, r.run)] = r
    for (policy, _), r in last.items():
        p = per.setdefault(policy, {"seconds": 0.0, "arrivals": 0})
        p["seconds"] += r.seconds
        p["arrivals"] += r.placed + r.failed
    for p in per.values():
        p["seconds"] = round(p["seconds"], 3)
        p["arrivals_per_s"] = round(p["arrivals"] / p["seconds"], 1) if p["seconds"] else None
    return {
        "load_s": round(load_s, 3),
        "build_s": round(build_s, 3),
        "simulate_s": round(simulate_s, 3),
        "policies": per,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def load_for_command(args) -> tuple[SimCluster, list[float], float, float, float]:
    """`draopt simulate`'s input, checked and built (either protocol): the cluster arrays, the
    levels, the seconds reading and building took, and the clock when reading began."""
    from draopt.kube.features import features_from_flags
    from draopt.kube.loader import load_files

    features = features_from_flags(getattr(args, "feature_gates", ""), getattr(args, "kubernetes_version", None))
    levels = parse_levels(args.inflation)
    if getattr(args, "per_run", False) and args.output != "csv":
        raise InputError("--per-run: the rows of each run are CSV: give -o csv")
    if getattr(args, "per_run", False) and args.protocol == "fgd-paper":
        raise InputError("--per-run: draopt's protocol only (--protocol fgd-paper bins the runs as the paper does)")
    if args.plot:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:  # checked before a long run, not after
            raise InputError("--plot needs matplotlib: pip install 'draopt[plot]'")
        check_writable("--plot", args.plot)
    t0 = time.perf_counter()
    reading = {"recursive": getattr(args, "recursive", False), "strict": getattr(args, "strict", False)}
    if args.trace.lower().endswith(".csv"):
        from draopt.studies.trace import read_tasks, workload_objects

        objects = load_files(args.filename, **reading)
        objects.extend(_object_set(workload_objects(read_tasks(args.trace, what="--trace")), args.trace))
    else:
        objects = load_files(list(args.filename) + [args.trace], **reading)
    load_s = time.perf_counter() - t0
    t_build = time.perf_counter()
    c = build(objects, capacity_name=args.capacity, features=features)
    return c, levels, load_s, time.perf_counter() - t_build, t0


def cmd_simulate(args) -> int:
    """`draopt simulate --protocol draopt` (draopt.studies.paper_protocol.cmd_simulate dispatches)."""
    notes: list[str] = []
    policies = parse_policies(args.policy or DEFAULT_POLICIES, notes)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    c, levels, load_s, build_s, t0 = load_for_command(args)
    t_build = time.perf_counter() - build_s
    if "kube-scheduler" in policies or args.scheduler_config:
        from draopt.scheduler import SchedulerConfig, load_config
        from draopt.scheduler.trace import TraceScheduler

        if "kube-scheduler" not in policies:
            raise InputError("--scheduler-config: used by the kube-scheduler policy, which --policy does not list")
        cfg = load_config(args.scheduler_config) if args.scheduler_config else SchedulerConfig.default()
        c.kube_scheduler = TraceScheduler(c, cfg, seed=args.seed, tie_break=args.tie_break)
    build_s = time.perf_counter() - t_build
    say = None if args.quiet else (lambda m: print(f"simulate: {m}", file=sys.stderr, flush=True))
    if say:
        say(
            f"{c.n} nodes, capacity {c.total:,.0f} {c.capacity_name}, {len(c.pod_keys)} trace pods in "
            f"{len(c.shapes)} shapes (loaded in {time.perf_counter() - t0:.1f} s)"
        )
    t_sim = time.perf_counter()
    records: list[Record] = []
    try:
        simulate(
            c,
            levels=levels,
            policies=policies,
            runs=args.runs,
            seed=args.seed,
            batch=args.batch or DEFAULT_BATCH,
            time_limit=args.time_limit,
            offline_optimum=args.offline_optimum,
            progress=say,
            into=records,
        )
    except KeyboardInterrupt:
        if not records:
            raise
        interrupted = True
    else:
        interrupted = False
    if getattr(args, "stats", False):
        print(
            json.dumps(
                stats_line(records, load_s=load_s, build_s=build_s, simulate_s=time.perf_counter() - t_sim),
                sort_keys=True,
            ),
            file=sys.stderr,
        )
    title = f"{c.n} nodes, {args.runs} run(s), seed {args.seed}"
    write_rows(args, aggregate(records, policies + [OFFLINE]), title=title, records=records)
    if interrupted:  # Ctrl-C: the runs finished before it (the `runs` column counts them), exit 130
        print("draopt: interrupted: the rows above hold the runs finished before Ctrl-C", file=sys.stderr)
        return 130
    return 0


def write_csv(path: str, rows: list[SimRow], provenance: Provenance | None = None, *, text: str | None = None) -> None:
    """The rows as CSV at `path` (or `text`, CSV made already), and `provenance` beside it in
    PATH.provenance.json: not as `# key: value` lines in the CSV, which csv.DictReader,
    pandas.read_csv (without comment="#") and the tests read as a header or a row."""
    try:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(to_csv(rows) if text is None else text)
        if provenance is not None:
            provenance.write_sidecar(path)
    except OSError as e:
        raise InputError(f"--output-file {path}: cannot write: {e.strerror or e}") from None


def command_provenance(args) -> Provenance:
    """`draopt simulate`'s provenance record: the cluster and trace files, the seed, the time limit."""
    from draopt.kube.features import Features

    version = getattr(args, "kubernetes_version", None) or Features.from_gates().kubernetes_version
    return record(
        list(args.filename) + [args.trace], seed=args.seed, time_limit=args.time_limit, kubernetes_version=version
    )


def write_rows(args, rows: list[SimRow], *, title: str, records: list[Record] | None = None) -> None:
    """`draopt simulate`'s output (either protocol): the table or `-o csv` (into `--output-file`
    with its provenance sidecar, when the command line has that flag; with `--per-run`, the
    per-run `records` instead of the means), and `--plot`."""
    output_file = getattr(args, "output_file", None)
    text = records_csv(records) if getattr(args, "per_run", False) and records is not None else to_csv(rows)
    if args.output == "csv" and output_file:
        write_csv(output_file, rows, command_provenance(args), text=text)
    elif args.output == "csv":
        sys.stdout.write(text)
    else:
        print(table(rows))
    if args.plot:
        plot(rows, args.plot, title=title)
