"""`draopt simulate --protocol fgd-paper`: the FGD paper's experiment as the authors' simulator
runs it (Weng et al., "Beware of Fragmentation", USENIX ATC '23; hkust-adsl/kubernetes-scheduler-
simulator, experiments/run_scripts/expected_run_scripts_0511.sh), on draopt's cluster arrays
(`draopt.studies.simulate.build`: the DRA rules decide which devices a pod may use and what it consumes).

The protocol (file: rule), see docs/studies/fgd-paper.md for the whole account:
* pkg/simulator/simulator.go SortClusterPods (--shuffle-pod=true): the trace's pods sorted by
  name, then shuffled with the run's seed (their runs: seeds 42-51);
* TunePodsByNodeTotalResource (-tune 1.3): below 1.3 x the cluster's GPU milli, copies drawn
  with replacement from the name-sorted trace are appended while `requested + the copy's milli
  per GPU` stays within 1.3 x (tuneUpPods checks MilliGpu, not MilliGpu x GpuNumber, and adds
  the total: a multi-GPU copy may overshoot); above it, pods drawn uniformly are removed until
  the request is within 1.3 x (tuneDownPods);
* syncClusterResourceList: nodes sorted by name get a random permutation prefix "%04d-"; their
  kube-scheduler keeps the smallest name among equal scores (generic_scheduler.go selectHost),
  so ties go to the node of smallest prefix: a random node order fixed for the whole run;
* SchedulePods: a pod's GPU request counts as arrived before it is tried (failures included);
  a pod that fits nowhere is skipped; after each pod the allocated GPU milli (the sum of milli
  used on every GPU, fractions included) is logged with the arrived milli (analysis.go);
* experiments/analysis/merge_alloc_discrete.py: per seed, each logged pod is binned by its
  arrived % rounded to a whole percent, its allocated % (rounded to 2 decimals) averaged within
  the bin (the bins either side when it is empty); the paper's figure is the mean over seeds.
Random draws use numpy (seeded: arrivals and node order from `seed`, the random policy's choices
from [seed, 1]); Go's math/rand streams are not reproduced, the targets are statistical.

Public interface:
* `paper_arrivals(c, seed, *, tune=1.3) -> PaperArrivals` (shapes: shape index per arrival;
  arrived: cumulative arrived GPU milli after each; node_rank: the tie-break rank of each node);
* `run_paper(c, arrivals, policy, *, rng=None) -> PaperRun` (allocated GPU milli after each
  arrival, placed/failed counts, and the log: (shape, node, devices) or None per arrival).
  `policy` is one of PAPER_POLICIES or an object with
    - `name: str`, `start(ctx)` (optional), `taken(ctx, shape_index, node, devices)` (optional),
    - either `choose(ctx, shape_index, candidates, usable) -> (node, [device, ...]) | None` per
      arrival (candidates: feasible node indices; usable [N, D]: devices the pod may take), or
      `batch: int` and `choose_batch(ctx, shape_indices) -> [(node, devices) | None, ...]`,
      receiving `batch` arrivals at once (fewer at the end); each placement is checked against
      the state (InputError naming the policy when it breaks a rule) and applied in order.
  `register_policy(name, factory)` makes another module's policy a --policy name.
  `ctx` (RunContext) holds the cluster `c`, the draopt `State` `st`, milli views (cpu_left,
  left), `rank`, `rng` and `pick(candidates, scores)` (highest score, ties by rank).
* `bin_seed(arrived, allocated, gpus, bins)` (merge_alloc_discrete for one seed) and
  `bin_curve(per_seed)` (the mean over seeds).
* `offline_paper(c, arrivals, runs, bins, *, time_limit) -> [OfflineSolve]` (`--offline-optimum`,
  not in the paper): per bin, the seed's arrivals up to the bin's last one (of the pods
  `bin_seed` averages for it), placed at once by `simulate.solve_optimal` warm-started from the online
  run that allocated most of them (fgd on ties); slow (minutes per solve at full size): meant
  for a few bins and seeds.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from draopt.studies import paper_policies as pp
from draopt.errors import InputError
from draopt.progress import current as current_progress  # the status lines (`progress` is a parameter here)
from draopt.studies.paper_policies import MILLI
from draopt.studies.simulate import SimRow

PAPER_POLICIES = ("fgd", "best-fit", "gpu-packing", "gpu-clustering", "dot-product", "random")
OFFLINE = "offline-optimum"  # simulate.OFFLINE
NOT_IN_PAPER = ("first-node", "first-fit", "least-allocated", "kube-scheduler", "optimal-batch")
PROTOCOLS = ("draopt", "fgd-paper")
POPULARITY = 95  # typicalPodsConfig.podPopularityThreshold (generate_config_and_run.py)


# ------------------------------------------------------------------ the cluster in milli units
@dataclass
class PaperCluster:
    c: Any
    cpu_j: int
    cpu_scale: float  # milli CPU per unit of State.free[:, cpu_j]
    gpu_scale: float  # milli GPU per unit of State.left
    shape_cpu: np.ndarray  # [S] milli CPU as their scorers see it (0 -> 100, GetNonzeroRequests)
    shape_milli: np.ndarray  # [S] milli per GPU
    shape_count: np.ndarray  # [S] GPUs
    shape_request: np.ndarray  # [S] milli x GPUs (what arrives)
    kind: np.ndarray  # [N] nodes alike for the typical pods' GPU-type access
    frag: pp.FragModel
    typical: list[tuple[int, int, int, int]]  # (cpu, milli, count, weight) kept by GetTypicalPods
    gpus: int  # GPUs in the cluster
    capacity_milli: int
    memo: FGDMemo = None  # type: ignore[assignment]  # set by prepare, right after construction
    tags: np.ndarray = None  # type: ignore[assignment]  # [S] GPU affinity tag, set by prepare
    # lp-guided's caches (draopt.studies.lp_guided): the column generation's model of the empty
    # cluster, and the known source's plans (they depend only on the trace and the nodes)
    lp_model: Any = None
    lp_plans: dict = field(default_factory=dict)


def prepare(c) -> PaperCluster:
    """The protocol's view of a `simulate.build` cluster (computed once: SimCluster.paper_view)."""
    if c.paper_view is not None:
        return c.paper_view
    cpu_j, cpu_scale, gpu_scale = _paper_scales(c)
    cpu, milli, count, access_rows = _shape_sizes(c, cpu_j, cpu_scale, gpu_scale)
    # Kinds of node: the same access for every shape.
    acc = np.stack([(s.compat.any(axis=1) & s.node_ok) if s.count else np.ones(c.n, bool) for s in c.shapes])
    _, kind = np.unique(acc.T, axis=0, return_inverse=True)
    kind = kind.reshape(-1)
    typ = _typical_pods(c, cpu, milli, count, access_rows, acc)
    t_cpu = np.array([k[0] for k, _ in typ], dtype=np.int64)
    t_milli = np.array([k[1] for k, _ in typ], dtype=np.int64)
    t_count = np.array([k[2] for k, _ in typ], dtype=np.int64)
    t_w = np.array([v[0] for _, v in typ], dtype=np.int64)
    n_kinds = int(kind.max()) + 1
    t_access = np.zeros((len(typ), n_kinds), dtype=bool)
    for t, (_, (_, si)) in enumerate(typ):
        row = acc[si]
        for k in range(n_kinds):
            t_access[t, k] = bool(row[np.flatnonzero(kind == k)[0]])
    frag = pp.FragModel(t_cpu, t_milli, t_count, t_w, t_access)
    tags = np.array([pp.gpu_tag(int(milli[i]), int(count[i])) for i in range(len(c.shapes))])
    pc = PaperCluster(
        c,
        cpu_j,
        cpu_scale,
        gpu_scale,
        cpu,
        milli,
        count,
        milli * count,
        kind,
        frag,
        [(int(a), int(b), int(d), int(e)) for a, b, d, e in zip(t_cpu, t_milli, t_count, t_w)],
        int(c.present.sum()),
        round(c.total * gpu_scale),
    )
    pc.tags = tags
    pc.memo = FGDMemo(pc)
    c.paper_view = pc
    return pc


def _paper_scales(c) -> tuple[int, float, float]:
    """The cpu column, and the scales to milli CPU and milli GPU; refused unless every node has a
    cpu and every GPU one capacity, as the paper's."""
    if "cpu" not in c.resources:
        raise InputError(
            "simulate --protocol fgd-paper: no pod of --trace requests cpu (their scorers weigh milli CPU)"
        )
    cpu_j = c.resources.index("cpu")
    if not np.isfinite(c.alloc[:, cpu_j]).all():
        bad = c.nodes[int(np.flatnonzero(~np.isfinite(c.alloc[:, cpu_j]))[0])]
        raise InputError(f"simulate --protocol fgd-paper: Node {bad}: no status.allocatable.cpu")
    caps = np.unique(c.cap[c.present])
    if len(caps) != 1:
        raise InputError(
            f"simulate --protocol fgd-paper: devices of {c.capacity_name} "
            f"{', '.join(str(v / c.cap_scale) for v in caps[:4])}: the paper's GPUs all hold "
            f"{MILLI} milli (one capacity for every device)"
        )
    gpu_scale = MILLI / float(caps[0])
    cpu_scale = 1000.0 / c.res_scale[cpu_j]
    return cpu_j, cpu_scale, gpu_scale


def _shape_sizes(c, cpu_j: int, cpu_scale: float, gpu_scale: float):
    """Per shape: milli CPU, milli GPU per device, devices, and the nodes its GPUs may be on."""
    S = len(c.shapes)
    cpu = np.zeros(S, dtype=np.int64)
    milli = np.zeros(S, dtype=np.int64)
    count = np.zeros(S, dtype=np.int64)
    access_rows = []
    for s in c.shapes:
        raw = s.demand[cpu_j] * cpu_scale
        cpu[s.index] = round(raw) if raw > 0 else 100
        count[s.index] = s.count
        if s.count:
            per = s.request / s.count * gpu_scale
            if abs(per - round(per)) > 1e-9:
                raise InputError(
                    f"simulate --protocol fgd-paper: Pod {s.pods[0]}: {per:g} milli GPU per device is not a whole milli"
                )
            milli[s.index] = round(per)
        access_rows.append((s.compat.any(axis=1) & s.node_ok).tobytes() if s.count else b"")
    return cpu, milli, count, access_rows


def _typical_pods(c, cpu, milli, count, access_rows, acc) -> list:
    """GetTypicalPods (pkg/utils/frag.go): PodResource classes of the trace's pods (cpu, milli,
    count, GPU type), by decreasing count (ties: reverse of PodResource.Less), the most
    frequent kept until they cover POPULARITY % of the pods, weighted by count."""
    classes: dict[tuple, list] = {}
    for si in c.pod_shape:
        key = (int(cpu[si]), int(milli[si]), int(count[si]), access_rows[si])
        classes.setdefault(key, [0, si])[0] += 1
    unrestricted = {
        access_rows[si] for si in range(len(c.shapes)) if count[si] and acc[si][c.present.any(axis=1)].all()
    }

    def type_order(row: bytes) -> bytes:
        return b"" if (row == b"" or row in unrestricted) else b"\x01" + row

    ranked = sorted(
        classes.items(), key=lambda kv: (kv[1][0], kv[0][0], kv[0][1], kv[0][2], type_order(kv[0][3])), reverse=True
    )
    total = sum(v[0] for _, v in ranked)
    expected = POPULARITY * total / 100.0
    kept, cum = 0, 0
    while cum < expected and kept < len(ranked):
        cum += ranked[kept][1][0]
        kept += 1
    return ranked[:kept]


# ------------------------------------------------------------------ arrivals
@dataclass
class PaperArrivals:
    seed: int
    shapes: np.ndarray  # shape index per arrival
    arrived: np.ndarray  # cumulative arrived GPU milli after each arrival (int64)
    node_rank: np.ndarray  # [N] tie-break rank: the node's random name prefix
    tune: float = 1.3


def trace_order(c) -> np.ndarray:
    """The trace's pods sorted by name (SetWorkloadPods / SortClusterPods): their shapes."""
    names = [k.split("/", 1)[-1] for k in c.pod_keys]
    order = sorted(range(len(names)), key=names.__getitem__)
    return np.array(c.pod_shape, dtype=np.int64)[order]


def paper_arrivals(c, seed: int, *, tune: float = 1.3) -> PaperArrivals:
    pc = prepare(c)
    pods = trace_order(c)
    rng = np.random.default_rng(seed)
    seq = pods[rng.permutation(len(pods))]
    req, per_gpu = pc.shape_request, pc.shape_milli
    total = int(req[seq].sum())
    if total <= 0:
        raise InputError(
            "simulate --protocol fgd-paper: no pod of --trace requests a GPU: the workload "
            "cannot be tuned to the cluster's GPU capacity"
        )
    target = tune * pc.capacity_milli
    if tune > 0 and total > target:
        # tuneDownPods: remove uniformly drawn pods until the request is within target.
        kept = list(seq)
        while total > target:
            i = int(rng.integers(len(kept)))
            total -= int(req[kept.pop(i)])
        seq = np.array(kept, dtype=np.int64)
    elif tune > 0 and total < target:
        # tuneUpPods: draw copies from the name-sorted trace; stop at the first whose milli per
        # GPU would pass target (a multi-GPU copy is checked with one GPU's milli).
        extra = []
        while True:
            draw = pods[rng.integers(0, len(pods), size=4096)]
            before = total + np.concatenate([[0], np.cumsum(req[draw])[:-1]])
            stop = np.flatnonzero(before + per_gpu[draw] > target)
            if stop.size:
                extra.append(draw[: stop[0]])
                break
            extra.append(draw)
            total = int(before[-1] + req[draw[-1]])
        seq = np.concatenate([seq] + extra)
    rank = rng.permutation(c.n)
    return PaperArrivals(seed, seq, np.cumsum(req[seq]), rank, tune)


# ------------------------------------------------------------------ a run
class RunContext:
    """What a policy sees: the draopt State, its milli views, the tie-break rank and the RNG."""

    def __init__(self, pc: PaperCluster, st, rank: np.ndarray, rng: np.random.Generator):
        self.pc, self.c, self.st, self.rank, self.rng = pc, pc.c, st, rank, rng
        self.present = pc.c.present
        self.cpu_left = np.rint(st.free[:, pc.cpu_j] * pc.cpu_scale).astype(np.int64)
        self.left = np.rint(np.clip(st.left, 0, None) * pc.gpu_scale).astype(np.int64)
        self.allocated = 0
        # the policies' own per-node state, made by their start (fgd: the memo's node states;
        # gpu-clustering: the pods per GPU tag)
        self.sid: np.ndarray | None = None
        self.tag_counts: np.ndarray | None = None

    def refresh(self, node: int) -> None:
        pc, st = self.pc, self.st
        self.cpu_left[node] = round(st.free[node, pc.cpu_j] * pc.cpu_scale)
        self.left[node] = np.rint(np.clip(st.left[node], 0, None) * pc.gpu_scale).astype(np.int64)

    def pick(self, cand: np.ndarray, score: np.ndarray) -> int:
        """The highest score; among equal ones the node of smallest rank (selectHost)."""
        best = cand[score == score.max()]
        return int(best[int(np.argmin(self.rank[best]))]) if len(best) > 1 else int(best[0])


class FGDMemo:
    """FGD node scores by node state (kind, CPU left, sorted GPU milli left) and pod class, kept
    across runs: a state's score for a pod class is computed once (their fragMemo idea)."""

    def __init__(self, pc: PaperCluster):
        self.pc = pc
        self.ids: dict[bytes, int] = {}
        d = pc.c.cap.shape[1]
        self.cpu = np.zeros(1024, dtype=np.int64)
        self.left = np.zeros((1024, d), dtype=np.int64)
        self.kind = np.zeros(1024, dtype=np.int64)
        self.frag = np.zeros(1024, dtype=np.int64)
        self.tables: dict[tuple[int, int, int], np.ndarray] = {}

    def state(self, kind: int, cpu: int, left: np.ndarray) -> int:
        srt = -np.sort(-left)
        key = np.concatenate([[kind, cpu], srt]).astype(np.int64).tobytes()
        sid = self.ids.get(key)
        if sid is None:
            sid = self.ids[key] = len(self.ids)
            if sid >= len(self.cpu):
                grow = len(self.cpu)
                self.cpu = np.concatenate([self.cpu, np.zeros(grow, np.int64)])
                self.left = np.concatenate([self.left, np.zeros((grow, self.left.shape[1]), np.int64)])
                self.kind = np.concatenate([self.kind, np.zeros(grow, np.int64)])
                self.frag = np.concatenate([self.frag, np.zeros(grow, np.int64)])
            self.cpu[sid], self.left[sid], self.kind[sid] = cpu, srt, kind
            self.frag[sid] = self.pc.frag.frag(
                self.cpu[sid : sid + 1], self.left[sid : sid + 1], self.kind[sid : sid + 1]
            )[0]
        return sid

    def scores(self, key: tuple[int, int, int], sids: np.ndarray) -> np.ndarray:
        table = self.tables.get(key)
        n = len(self.ids)
        if table is None or len(table) < n:
            new = np.full(max(2 * n, 1024), -1, dtype=np.int16)
            if table is not None:
                new[: len(table)] = table
            table = self.tables[key] = new
        vals = table[sids]
        miss = vals < 0
        if miss.any():
            u = np.unique(sids[miss])
            table[u] = self._compute(key, u)
            vals = table[sids]
        return vals.astype(np.int64)

    def _compute(self, key, u: np.ndarray) -> np.ndarray:
        cpu, milli, count = key
        fm = self.pc.frag
        cpu_l, left, kind, before = self.cpu[u] - cpu, self.left[u], self.kind[u], self.frag[u]
        if count == 0:
            return fm.score(before, fm.frag(cpu_l, left, kind))
        if milli < MILLI:
            m, d = left.shape
            after = np.repeat(left[:, None, :], d, axis=1)
            after[:, np.arange(d), np.arange(d)] -= milli
            fa = fm.frag(np.repeat(cpu_l, d), after.reshape(m * d, d), np.repeat(kind, d)).reshape(m, d)
            sc = fm.score(before[:, None], fa)
            return np.where(left >= milli, sc, -1).max(axis=1)
        after = left.copy()
        after[:, :count] = 0  # sorted: the first `count` GPUs are the free ones it takes
        return fm.score(before, fm.frag(cpu_l, after, kind))


class _Builtin:
    """One of the paper's six policies (see draopt.studies.paper_policies for the rules)."""

    def __init__(self, name: str):
        self.name = name

    def start(self, ctx: RunContext) -> None:
        pc = ctx.pc
        if self.name == "fgd":
            ctx.sid = np.array(
                [pc.memo.state(int(pc.kind[i]), int(ctx.cpu_left[i]), ctx.left[i]) for i in range(ctx.c.n)],
                dtype=np.int64,
            )
        if self.name == "gpu-clustering":
            ctx.tag_counts = np.zeros((ctx.c.n, int(max(pc.tags.max(), 0)) + 1), dtype=np.int64)

    def taken(self, ctx: RunContext, si: int, node: int, devs: list[int]) -> None:
        pc = ctx.pc
        if self.name == "fgd":
            assert ctx.sid is not None  # made by start
            ctx.sid[node] = pc.memo.state(int(pc.kind[node]), int(ctx.cpu_left[node]), ctx.left[node])
        elif self.name == "gpu-clustering" and pc.tags[si] >= 0:
            assert ctx.tag_counts is not None  # made by start
            ctx.tag_counts[node, pc.tags[si]] += 1

    def choose(self, ctx: RunContext, si: int, cand: np.ndarray, use) -> tuple[int, list[int]] | None:
        pc = ctx.pc
        cpu, milli, count = int(pc.shape_cpu[si]), int(pc.shape_milli[si]), int(pc.shape_count[si])
        name = self.name
        if name == "random":
            node = int(cand[int(ctx.rng.integers(len(cand)))])
            if count == 0:
                return node, []
            return node, pp.gpus_random(ctx.left[node], use[node], milli, count, ctx.rng)
        if name == "fgd":
            assert ctx.sid is not None  # made by start
            score = pc.memo.scores((cpu, milli, count), ctx.sid[cand])
        elif name in ("best-fit", "dot-product"):
            fn = pp.score_best_fit if name == "best-fit" else pp.score_dot_product
            score = fn(
                ctx.cpu_left[cand].astype(float),
                ctx.left[cand].sum(axis=1).astype(float),
                float(cpu),
                float(milli * count),
            )
        elif name == "gpu-packing":
            score = pp.score_gpu_packing(ctx.left[cand], ctx.present[cand], milli, count)
        else:
            tag = int(pc.tags[si])
            assert ctx.tag_counts is not None  # made by start
            counts = ctx.tag_counts[cand]
            same = counts[:, tag] > 0 if tag >= 0 else np.zeros(len(cand), bool)
            score = pp.score_gpu_clustering(ctx.left[cand].sum(axis=1), same, (counts > 0).sum(axis=1), tag >= 0)
        node = ctx.pick(cand, score)
        if count == 0:
            return node, []
        if name == "fgd" and milli < MILLI:
            return node, [self._fgd_gpu(ctx, node, cpu, milli, use[node])]
        return node, pp.gpus_best(ctx.left[node], use[node], milli, count)

    @staticmethod
    def _fgd_gpu(ctx: RunContext, node: int, cpu: int, milli: int, usable: np.ndarray) -> int:
        """allocateGpuIdBasedOnFGDScore: the first GPU (by index) of the best integer score."""
        pc = ctx.pc
        fm = pc.frag
        left = ctx.left[node]
        idx = np.flatnonzero(usable)
        after = np.repeat(left[None, :], len(idx), axis=0)
        after[np.arange(len(idx)), idx] -= milli
        kind = np.full(len(idx), pc.kind[node])
        before = fm.frag(ctx.cpu_left[node : node + 1], left[None, :], kind[:1])[0]
        sc = fm.score(before, fm.frag(np.full(len(idx), ctx.cpu_left[node] - cpu), after, kind))
        return int(idx[int(np.argmax(sc))])


_REGISTRY: dict[str, Callable[[], Any]] = {name: functools.partial(_Builtin, name) for name in PAPER_POLICIES}


def _optimal_batch(batch: int | None = None):
    """draopt.studies.paper_batch's batch policy (not in the paper: draopt's own), given this
    protocol's fgd scorer and RunContext (that module imports nothing of this one); `batch`:
    arrivals per batch (None: its default)."""
    from draopt.studies.paper_batch import DEFAULT_BATCH, PaperForwardBatch

    return PaperForwardBatch(lambda: _Builtin("fgd"), RunContext, batch=batch or DEFAULT_BATCH)


_REGISTRY["optimal-batch"] = _optimal_batch


def _lp_guided(source: str, mode: str = "slots"):
    """draopt.studies.lp_guided's policy (not in the paper), given this protocol's fgd scorer. Its
    LP solves are bounded by work (rounds), not by --time-limit: the same seed, the same plans."""
    from draopt.studies.lp_guided import LpGuided

    return LpGuided(lambda: _Builtin("fgd"), source, _fgd_contents, mode=mode)


def _fgd_contents(
    pc: PaperCluster, horizon: float, shapes: np.ndarray | None = None
) -> list[tuple[int, dict[int, int]]]:
    """lp-guided's warm start: node contents after fgd places, from the empty cluster, the
    name-sorted trace (the known plan: no seed, it depends on the trace and the nodes only) or
    `shapes` (the learned plan: a sequence made of the arrivals seen), up to `horizon` x the GPU
    capacity."""
    c = pc.c
    if shapes is None:
        shapes = trace_order(c)
    arrived = np.cumsum(pc.shape_request[shapes])
    shapes = shapes[: int(np.searchsorted(arrived, horizon * pc.capacity_milli, side="right")) + 1]
    arr = PaperArrivals(0, shapes, np.cumsum(pc.shape_request[shapes]), np.arange(c.n))
    out: dict[int, dict[int, int]] = {}
    for e in run_paper(c, arr, "fgd").log:
        if e is not None:
            on = out.setdefault(e[1], {})
            on[e[0]] = on.get(e[0], 0) + 1
    return sorted(out.items())


LP_GUIDED: dict[str, Callable[..., Any]] = {
    "lp-guided": functools.partial(_lp_guided, "known"),
    "lp-guided-learned": functools.partial(_lp_guided, "learned"),
    "bid-price": functools.partial(_lp_guided, "known", "prices"),
}
_REGISTRY.update(LP_GUIDED)


def register_policy(name: str, factory: Callable[[], Any]) -> None:
    """Another module's policy under `name` (e.g. optimal-batch): `factory()` returns a policy object."""
    _REGISTRY[name] = factory


def known_policies() -> list[str]:
    return list(_REGISTRY)


def make_policy(policy, *, batch: int | None = None, time_limit: float | None = None) -> Any:
    """The policy named `policy`; `batch` (--batch) goes to a batch policy (optimal-batch).
    `time_limit` reaches no policy: lp-guided's LP solves are bounded by rounds (deterministic)."""
    if not isinstance(policy, str):
        return policy
    factory = _REGISTRY.get(policy)
    if factory is None:
        hint = " (draopt's protocol only: --protocol draopt)" if policy in NOT_IN_PAPER else ""
        raise InputError(
            f"--policy {policy!r}: not a policy of --protocol fgd-paper{hint} (known: {', '.join(_REGISTRY)})"
        )
    if batch is not None and factory is _optimal_batch:
        return _optimal_batch(batch)
    return factory()


@dataclass
class PaperRun:
    policy: str
    seed: int
    arrived: np.ndarray  # cumulative arrived GPU milli after each arrival
    allocated: np.ndarray  # allocated GPU milli after each arrival
    placed: np.ndarray  # pods placed after each arrival
    failed: np.ndarray
    log: list = field(default_factory=list)
    seconds: float = 0.0


def run_paper(c, arrivals: PaperArrivals, policy, *, rng: np.random.Generator | None = None) -> PaperRun:
    """One policy over one seed's arrivals (see the module docstring for `policy`)."""
    from draopt.studies.simulate import State

    pc = prepare(c)
    pol = make_policy(policy)
    name = getattr(pol, "name", type(pol).__name__)
    t0 = time.perf_counter()
    st = State(c)
    ctx = RunContext(pc, st, arrivals.node_rank, rng if rng is not None else np.random.default_rng([arrivals.seed, 1]))
    if hasattr(pol, "start"):
        pol.start(ctx)
    seq = arrivals.shapes
    n = len(seq)
    allocated = np.zeros(n, dtype=np.int64)
    placed = np.zeros(n, dtype=np.int64)
    failed = np.zeros(n, dtype=np.int64)
    log: list = []
    taken = getattr(pol, "taken", None)
    # Entered by hand, not to re-indent the run; on an exception draopt.progress.reporting closes the line.
    shown_line = current_progress().task(f"simulate: seed {arrivals.seed}: {name}", total=n, unit="arrivals")
    shown = shown_line.__enter__()
    level = [-1]

    def apply(k: int, si: int, got) -> None:
        if shown.active:
            shown.update_to(k + 1)
            reached = int(arrivals.arrived[k] / pc.gpus / 10)  # the inflation level, % (bin_seed's unit)
            if reached != level[0]:
                level[0] = reached
                shown.note(level=f"{reached} %")
        s = c.shapes[si]
        if got is not None:
            node, devs = int(got[0]), [int(d) for d in got[1]]
            ok, use = st.feasible(s)
            if not (
                0 <= node < c.n
                and ok[node]
                and len(devs) == s.count
                and len(set(devs)) == len(devs)
                and all(use[node, d] for d in devs)
            ):
                raise InputError(
                    f"simulate --protocol fgd-paper: policy {name}: placement of pod shape "
                    f"{s.pods[0]} on node {c.nodes[node] if 0 <= node < c.n else node} "
                    f"devices {devs} breaks the cluster's rules"
                )
            st.take(s, node, devs)
            ctx.refresh(node)
            ctx.allocated += round(sum(s.cons[node, d] for d in devs) * pc.gpu_scale)
            if taken is not None:
                taken(ctx, si, node, devs)
            log.append((si, node, devs))
        else:
            st.failed += 1
            log.append(None)
        allocated[k], placed[k], failed[k] = ctx.allocated, st.placed, st.failed

    batch = int(getattr(pol, "batch", 0) or 0)
    if batch > 0 and hasattr(pol, "choose_batch"):
        for k0 in range(0, n, batch):
            chunk = seq[k0 : k0 + batch]
            got = pol.choose_batch(ctx, chunk)
            if len(got) != len(chunk):
                raise InputError(
                    f"simulate --protocol fgd-paper: policy {name}: {len(got)} placements for {len(chunk)} arrivals"
                )
            for k, (si, g) in enumerate(zip(chunk, got), start=k0):
                apply(k, int(si), g)
    else:
        for k, si in enumerate(seq):
            si = int(si)
            ok, use = st.feasible(c.shapes[si])
            cand = np.flatnonzero(ok)
            apply(k, si, pol.choose(ctx, si, cand, use) if cand.size else None)
    shown_line.__exit__(None, None, None)
    getattr(pol, "finish", lambda: None)()  # lp-guided: adds the run's LP figures to its totals
    return PaperRun(
        name, arrivals.seed, arrivals.arrived.copy(), allocated, placed, failed, log, time.perf_counter() - t0
    )


# ------------------------------------------------------------------ binning (merge_alloc_discrete.py)
def bin_seed(arrived: np.ndarray, allocated: np.ndarray, gpus: int, bins) -> dict[int, float]:
    """One seed: arrive_ratio = round(arrived / gpus / 10) (half to even, as pandas' round),
    alloc_ratio = round(allocated / gpus / 10, 2); per bin the mean alloc_ratio of its pods,
    or of the pods of the bins either side when it has none; rounded to 2 decimals."""
    arrive = np.round(np.asarray(arrived, dtype=float) / gpus / 10, 0)
    alloc = np.array([round(x, 2) for x in (np.asarray(allocated, dtype=float) / gpus / 10).tolist()])
    out: dict[int, float] = {}
    for b in bins:
        sel = arrive == b
        if not sel.any():
            sel = (arrive >= b - 1) & (arrive <= b + 1)
            if not sel.any():
                continue
        out[int(b)] = float(np.round(alloc[sel].mean(), 2))
    return out


def bin_curve(per_seed: list[dict[int, float]]) -> dict[int, dict[str, float]]:
    """Over seeds: per bin the mean allocated % (the paper's figure is 100 - it), std, min, max."""
    out = {}
    for b in sorted({b for d in per_seed for b in d}):
        v = np.array([d[b] for d in per_seed if b in d])
        out[b] = {
            "alloc_pct": float(v.mean()),
            "unallocated_pct": 100.0 - float(v.mean()),
            "std_pct": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
            "min_pct": 100.0 - float(v.max()),
            "max_pct": 100.0 - float(v.min()),
            "runs": len(v),
        }
    return out


def level_bins(levels: list[float]) -> list[int]:
    bins = []
    for lv in levels:
        pct = lv * 100
        if abs(pct - round(pct)) > 1e-6:
            raise InputError(
                f"--inflation {lv:g}: --protocol fgd-paper bins arrivals by whole arrived percent "
                "(use levels such as 0.9 or 1.05)"
            )
        bins.append(round(pct))
    return bins


# ------------------------------------------------------------------ the experiment
def simulate_paper(
    c,
    *,
    seeds: list[int],
    policies: list,
    bins: list[int],
    tune: float = 1.3,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[SimRow], list[PaperRun]]:
    """Every policy on every seed's arrivals: rows in simulate.COLUMNS form, and the runs."""
    pc = prepare(c)
    runs: list[PaperRun] = []
    for seed in seeds:
        arr = paper_arrivals(c, seed, tune=tune)
        for policy in policies:
            r = run_paper(c, arr, policy)
            runs.append(r)
            if progress:
                progress(f"seed {seed}: {r.policy}: {len(arr.shapes)} arrivals in {r.seconds:.1f} s")
    rows: list[SimRow] = []
    names = list(dict.fromkeys(r.policy for r in runs))
    for name in names:
        rs = [r for r in runs if r.policy == name]
        curve = bin_curve([bin_seed(r.arrived, r.allocated, pc.gpus, bins) for r in rs])
        for b in bins:
            if b not in curve:
                continue
            v = curve[b]
            ends = [_bin_end(r, pc.gpus, b) for r in rs]
            rows.append(
                SimRow(
                    inflation=b / 100,
                    policy=name,
                    runs=int(v["runs"]),  # a count (len)
                    unallocated_pct=round(v["unallocated_pct"], 3),
                    std_pct=round(v["std_pct"], 3),
                    min_pct=round(v["min_pct"], 3),
                    max_pct=round(v["max_pct"], 3),
                    arrived_pct=round(float(np.mean([e[0] for e in ends])), 3),
                    placed=round(float(np.mean([e[1] for e in ends])), 1),
                    failed=round(float(np.mean([e[2] for e in ends])), 1),
                    bound_unallocated_pct="",
                    gap="",
                    status="",
                )
            )
    rows.sort(key=lambda r: (r.inflation, names.index(r.policy)))
    return rows, runs


# ------------------------------------------------------------------ the offline optimum (not in the paper)
@dataclass
class OfflineSolve:
    seed: int
    bin: int
    arrivals: int  # the arrivals solved: up to the bin's last one
    arrived_milli: int
    warm: str  # the online policy whose placement it started from
    warm_allocated: int  # that policy's allocated GPU milli after those arrivals
    allocated: int  # the offline placement's GPU milli
    placed: int
    bound: int | None  # the solver's upper bound on `allocated` (GPU milli), if it gave one
    gap: float | None
    status: str  # the solver's word (OPTIMAL only when it proved it)
    log: list = field(default_factory=list)  # (shape, node, devices) of each placed pod
    seconds: float = 0.0
    colgen: dict = field(default_factory=dict)  # the column generation's figures (colgen_*)


def _recording_state():
    from draopt.studies.simulate import State

    class RecordingState(State):
        """A State that keeps its takes: the offline placement, for the replay."""

        def __init__(self, c):
            super().__init__(c)
            self.taken: list = []

        def take(self, s, node, devs):
            self.taken.append((s.index, int(node), [int(d) for d in devs]))
            super().take(s, node, devs)

    return RecordingState


def offline_paper(
    c, arrivals: PaperArrivals, runs: list[PaperRun], bins: list[int], *, time_limit: float
) -> list[OfflineSolve]:
    """Per bin: the arrivals up to the bin's last one (of the pods bin_seed averages for it),
    all placed at once by the optimal model (simulate.solve_optimal, column generation),
    warm-started from the run of `runs` (same arrivals) that allocated most after them, fgd's on
    ties: never below that online policy. The bound is the solver's, never rounded up to proven."""
    from draopt.studies.simulate import solve_optimal

    _RecordingState = _recording_state()
    pc = prepare(c)
    if not runs:
        raise InputError(
            "simulate --protocol fgd-paper --offline-optimum: needs an online policy's run on the "
            "same arrivals to start from (--policy)"
        )
    order = sorted(range(len(runs)), key=lambda i: (runs[i].policy != "fgd", i))
    out = []
    for b in bins:
        # The last of the pods bin_seed averages for b (arrived % rounded to b; b-1..b+1 when b
        # has none; no row when those have none either): the online figure of the bin never
        # reads below the optimum of these arrivals.
        arrive = np.round(arrivals.arrived / pc.gpus / 10, 0)
        sel = np.flatnonzero(arrive == b)
        if not sel.size:
            sel = np.flatnonzero((arrive >= b - 1) & (arrive <= b + 1))
            if not sel.size:
                continue
        k = int(sel[-1]) + 1
        best = max(order, key=lambda i: (int(runs[i].allocated[k - 1]), -order.index(i)))
        warm = runs[best]
        t0 = time.perf_counter()
        st = _RecordingState(c)
        shapes = [int(x) for x in arrivals.shapes[:k]]
        hint = [None if e is None else (e[1], list(e[2])) for e in warm.log[:k]]
        with current_progress().task(
            f"simulate: seed {arrivals.seed}: offline optimum: bin {b} % ({k} arrivals from {warm.policy}'s placement)"
        ):
            got = solve_optimal(st, [c.shapes[i] for i in shapes], time_limit=time_limit, hint=hint)
        bound = round(float(got.bound) * pc.gpu_scale) if got.bound else None
        out.append(
            OfflineSolve(
                arrivals.seed,
                b,
                k,
                int(arrivals.arrived[k - 1]),
                warm.policy,
                int(warm.allocated[k - 1]),
                round(st.allocated * pc.gpu_scale),
                st.placed,
                bound,
                got.gap,
                str(got.status or "UNKNOWN"),
                list(st.taken),
                time.perf_counter() - t0,
                dict(got.colgen),
            )
        )
    return out


def offline_stats(o: OfflineSolve) -> dict[str, Any]:
    """One offline solve's figures for `--stats`: where it stopped and why, and its column
    generation's own figures."""
    return {
        "seed": o.seed,
        "bin": o.bin,
        "arrivals": o.arrivals,
        "seconds": round(o.seconds, 3),
        "status": o.status,
        "allocated_milli": o.allocated,
        "bound_milli": o.bound,
        "gap": o.gap,
        **o.colgen,
    }


def offline_rows(solves: list[OfflineSolve], gpus: int, capacity_milli: int) -> list[SimRow]:
    """simulate.COLUMNS rows of the offline optimum, one per bin (means over seeds)."""
    rows = []
    for b in sorted({s.bin for s in solves}):
        ss = [s for s in solves if s.bin == b]
        u = np.array([100.0 * (1 - s.allocated / capacity_milli) for s in ss])
        lo = [100.0 * max(0.0, 1 - s.bound / capacity_milli) for s in ss if s.bound is not None]
        gaps = [float(s.gap) for s in ss if s.gap is not None]
        rows.append(
            SimRow(
                inflation=b / 100,
                policy=OFFLINE,
                runs=len(ss),
                unallocated_pct=round(float(u.mean()), 3),
                std_pct=round(float(u.std(ddof=1)) if len(ss) > 1 else 0.0, 3),
                min_pct=round(float(u.min()), 3),
                max_pct=round(float(u.max()), 3),
                arrived_pct=round(float(np.mean([s.arrived_milli for s in ss]) / gpus / 10), 3),
                placed=round(float(np.mean([s.placed for s in ss])), 1),
                failed=round(float(np.mean([s.arrivals - s.placed for s in ss])), 1),
                bound_unallocated_pct=round(float(np.mean(lo)), 3) if len(lo) == len(ss) else "",
                gap=round(max(gaps), 4) if gaps else "",
                status=",".join(sorted({s.status for s in ss})),
            )
        )
    return rows


def _bin_end(r: PaperRun, gpus: int, b: int) -> tuple[float, int, int]:
    """The last arrival whose arrived % rounds to at most b: its arrived %, placed, failed."""
    arrive = np.round(r.arrived / gpus / 10, 0)
    k = int(np.searchsorted(arrive, b, side="right")) - 1
    if k < 0:
        return 0.0, 0, 0
    return float(r.arrived[k]) / gpus / 10, int(r.placed[k]), int(r.failed[k])


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def cmd_simulate(args) -> int:
    """`draopt simulate`: this module sits above draopt.studies.simulate, so it dispatches by --protocol."""
    from draopt.studies import simulate as sim

    if args.protocol != "fgd-paper":
        return sim.cmd_simulate(args)
    c, levels, load_s, _, _ = sim.load_for_command(args)
    return cmd_simulate_paper(args, c, levels, load_s)


def cmd_simulate_paper(args, c, levels: list[float], load_s: float) -> int:
    """`draopt simulate --protocol fgd-paper` after the cluster is built (cmd_simulate)."""
    import json

    from draopt.studies.simulate import write_rows

    for flag, bad in (
        ("--scheduler-config", args.scheduler_config),
        ("--tie-break name", getattr(args, "tie_break", "random") == "name"),
    ):
        if bad:
            raise InputError(
                f"{flag}: not part of --protocol fgd-paper, whose ties go by a random node order "
                "and whose scorers are the paper's (draopt's protocol: --protocol draopt)"
            )
    text = ",".join(args.policy) if args.policy else ",".join(PAPER_POLICIES)
    names = list(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not names:
        raise InputError(f"--policy {text!r}: no policy (known: {', '.join(_REGISTRY)})")
    policies = [make_policy(p, batch=args.batch, time_limit=args.time_limit) for p in names]
    bins = level_bins(levels)
    seeds = [args.seed + i for i in range(args.runs)]
    say = None if args.quiet else (lambda m: print(f"simulate: {m}", file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    if args.offline_optimum:
        # Not refused: the user may mean it; the estimate says what it costs (minutes per solve
        # at full size: meant for a few bins, e.g. --inflation 1.0, and few --runs).
        solves = len(bins) * len(seeds)
        print(
            f"simulate: --offline-optimum: {solves} solve(s) (bins x runs) of up to {args.time_limit:g} s each "
            f"(--time-limit): up to {_duration(solves * args.time_limit)}"
            + ("; meant for a few bins (--inflation 1.0)" if solves > 5 else ""),
            file=sys.stderr,
            flush=True,
        )
    rows, runs = simulate_paper(c, seeds=seeds, policies=policies, bins=bins, progress=say)
    if args.offline_optimum:
        pc = prepare(c)
        offline_solves: list[OfflineSolve] = []
        for seed in seeds:
            got = offline_paper(
                c, paper_arrivals(c, seed), [r for r in runs if r.seed == seed], bins, time_limit=args.time_limit
            )
            offline_solves += got
            if say:
                for o in got:
                    say(
                        f"seed {seed}: {OFFLINE} bin {o.bin} %: {o.arrivals} arrivals from {o.warm}'s placement "
                        f"in {o.seconds:.1f} s ({o.status})"
                    )
        rows += offline_rows(offline_solves, pc.gpus, pc.capacity_milli)
        rows.sort(key=lambda r: r.inflation)  # stable: the online policies' order, then the optimum
    if getattr(args, "stats", False):
        per: dict[str, dict[str, Any]] = {}
        for r in runs:
            p = per.setdefault(r.policy, {"seconds": 0.0, "arrivals": 0})
            p["seconds"] += r.seconds
            p["arrivals"] += len(r.arrived)
        for p in per.values():
            p["seconds"] = round(p["seconds"], 3)
            p["arrivals_per_s"] = round(p["arrivals"] / p["seconds"], 1) if p["seconds"] else None
        for pol in policies:
            if getattr(pol, "totals", None):  # lp-guided: solves, re-solves not converged in their rounds, LP seconds
                per[pol.name]["lp"] = dict(pol.totals)
        figures: dict[str, Any] = {"load_s": round(load_s, 3), "simulate_s": round(time.perf_counter() - t0, 3)}
        if args.offline_optimum:
            figures["offline"] = [offline_stats(o) for o in offline_solves]
        print(
            json.dumps(
                {**figures, "policies": per},
                sort_keys=True,
            ),
            file=sys.stderr,
        )
    write_rows(args, rows, title=f"FGD paper's protocol: {c.n} nodes, seeds {seeds[0]}-{seeds[-1]}")
    return 0
