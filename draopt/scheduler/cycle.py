"""One scheduling cycle per pod, as kube-scheduler runs it with a configured profile: filter
nodes from a rotating start until enough feasible ones are found, score them with the
profile's plugins (normalised to 0-100, weighted, summed) and pick the best, ties at random.

Sources (kubernetes/kubernetes, pkg/scheduler/schedule_one.go, commit
003b4460edb52bc9a9fe6cf54294e5b3e4681610):
* schedulePod: one feasible node is taken without scoring;
* findNodesThatPassFilters / numFeasibleNodesToFind: nodes are checked from
  nextStartNodeIndex; the search stops at the feasible node after numFeasibleNodesToFind (all
  nodes below 100; else percentageOfNodesToScore of them, the profile's value over the global
  one, 0 meaning adaptive 50 - nodes/125 with at least 5 %, and never fewer than 100); one node
  is enough when the profile has no score plugins; the start index then moves by the number of
  nodes processed (feasible + rejected, that last one not counted); a filter Error from a
  processed node ends the attempt (draopt.cluster.filter_error);
* selectHost (before the heap-based version; the same distribution): the highest total score,
  ties broken uniformly at random (reservoir sampling).
Nodes come in node-tree order (draopt.cluster.state.node_tree_order), filtered one after the
other (the real scheduler runs 16 in parallel and may check a few more nodes).
"""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np

from draopt.errors import InputError
from draopt.kube.workload import effective_container_requests, q, requests_shape
from draopt.dra.rules import tolerates
from draopt.scheduler.plugins import SCORE_PLUGINS, uniform_score
from draopt.scheduler.score_breakdown import breakdown
from draopt.scheduler.config import Profile, SchedulerConfig
from draopt.scheduler.podinfo import AffinityTerm, PodInfo, SpreadRule, pod_info
from draopt.scheduler.trial_memo import TrialMemo
from draopt.scheduler.node_scores import PER_NODE, NodeScores
from draopt.cluster import firstfit
from draopt.cluster.firstfit import count_reason, count_reasons, frontier_reasons, node_level_reason, shareable_reason
from draopt.cluster.filter_error import first_filter_error, is_filter_error
from draopt.scheduler.scan import LAST_FIT, MAX_KINDS, Fits, scan

_MAXIMUM = np.maximum.reduce  # ndarray.max() without its Python wrapper (once per cycle)
MIN_FEASIBLE_NODES = 100
MIN_FEASIBLE_PERCENTAGE = 5
# pkg/scheduler/util/pod_resources.go: the requests scoring assumes for a container without one.
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
TIE_BREAKS = ("random", "name")
_NATIVE = ("cpu", "memory", "ephemeral-storage", "pods")


def num_feasible_nodes_to_find(percentage: int, num_all: int) -> int:
    """numFeasibleNodesToFind."""
    if num_all < MIN_FEASIBLE_NODES:
        return num_all
    if percentage == 0:
        percentage = max(50 - num_all // 125, MIN_FEASIBLE_PERCENTAGE)
    n = num_all * percentage // 100
    return max(n, MIN_FEASIBLE_NODES)


# Amounts are int64 in the scheduler; kept below 2**56 here so that x 100 (the score scale) and
# the sums of a node's pods stay within int64 (absurd quantities are capped, not wrapped).
MAX_UNITS = 1 << 56


def units(resource: str, value: Fraction | int) -> int:
    """A quantity as the scheduler holds it: cpu in millicores, the rest in units (rounded up)."""
    if isinstance(value, int):
        got = value * 1000 if resource == "cpu" else value
    else:
        num, den = value.numerator, value.denominator
        if resource == "cpu":
            num *= 1000
        got = -((-num) // den)
    return MAX_UNITS if got > MAX_UNITS else (max(got, -MAX_UNITS))


def is_scalar(resource: str) -> bool:
    """schedutil.IsScalarResourceName: extended, hugepages, attachable volumes, native-prefixed."""
    if resource.startswith(("hugepages-", "attachable-volumes-", "requests.")):
        return True
    if "/" not in resource:
        return False
    domain = resource.split("/", 1)[0]
    return (
        True
        if not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))
        else resource.startswith("kubernetes.io/")
    )


def nonzero_requests(pod) -> tuple[int, int]:
    """(milli-cpu, memory) with 100m / 200Mi for a container that requests none (scoring only):
    component-helpers PodRequests with NonMissingContainerRequests."""

    def one(c) -> tuple[int, int]:
        r = effective_container_requests(c.resources)
        cpu = units("cpu", q(r["cpu"])) if "cpu" in r else DEFAULT_MILLI_CPU
        mem = units("memory", q(r["memory"])) if "memory" in r else DEFAULT_MEMORY
        return cpu, mem

    cpu = mem = 0
    side_cpu = side_mem = 0
    init_cpu = init_mem = 0
    for c in pod.spec.containers:
        a, b = one(c)
        cpu, mem = cpu + a, mem + b
    for c in pod.spec.init_containers:
        a, b = one(c)
        if c.restart_policy == "Always":
            cpu, mem = cpu + a, mem + b
            side_cpu, side_mem = side_cpu + a, side_mem + b
            init_cpu, init_mem = max(init_cpu, side_cpu), max(init_mem, side_mem)
        else:
            init_cpu, init_mem = max(init_cpu, a + side_cpu), max(init_mem, b + side_mem)
    cpu, mem = max(cpu, init_cpu), max(mem, init_mem)
    level = effective_container_requests(pod.spec.resources)
    if "cpu" in level:
        cpu = units("cpu", q(level["cpu"]))
    if "memory" in level:
        mem = units("memory", q(level["memory"]))
    over = pod.spec.overhead or {}
    if "cpu" in over:
        cpu += units("cpu", q(over["cpu"]))
    if "memory" in over:
        mem += units("memory", q(over["memory"]))
    return cpu, mem


class Scheduler:
    """kube-scheduler's node choice inside `draopt.cluster.firstfit.simulate`.

    select's arguments besides the pod's: `alike`, the pod's kind as the allocator sees it
    (firstfit's kind with each claim's classes by their selectors), or None: pods of alike kinds
    get the same answers from a node that has not changed. `shared`: firstfit's SharedDevices
    (see draopt.scheduler.scan), or None. `refit(node, fit)`: the fit try_fn would give on a
    node whose answer has not changed since it gave `fit` there to a pod with the same claim
    specs (firstfit's reuse_fit), or None. `observe(breakdown)`: called with the cycle's
    ScoreBreakdown when a node is chosen.

    Alike kinds get the same answer from every node (the same feasibility and scores): one table
    of answers, frontier and skipped reasons (select's `table_key`, "merged") serves them all as
    long as every reason in it is shareable (scan keeps to that), so a node that changed is
    answered once for all of them instead of once per kind."""

    # Alike kinds of pods share one table of node answers in the filter loop (see select); False
    # gives each kind its own (tests compare both).
    share_alike_tables: bool = True
    # The node chosen from the table, not filtered this cycle, takes the fit kept there (see
    # select) instead of asking try_fn again; False asks again (tests compare both).
    reuse_kept_fits: bool = True
    # Pods of a kind are filtered by the array loop (draopt.scheduler.scan); False filters them
    # node by node as pods with inter-pod filters are (_scan_slow; tests compare both).
    array_scan: bool = True

    def __init__(self, config: SchedulerConfig, cluster, workload, *, seed: int = 0, tie_break: str = "random"):
        if tie_break not in TIE_BREAKS:
            raise InputError(f"--tie-break: {tie_break!r}: must be random or name")
        self.config = config
        self.cluster = cluster
        self.nodes = cluster.nodes
        self.rng = random.Random(seed)
        self.seed = seed
        self.tie_break = tie_break
        self.next_start = 0
        n = len(self.nodes)
        self.labels = [nd.node.metadata.labels or {} for nd in self.nodes]
        self.ns_labels = {ns.name: dict(ns.metadata.labels or {}) for ns in cluster.objects.namespaces}
        self._infos: dict[str, PodInfo] = {}
        self._nonzero: dict[str, tuple[int, int]] = {}
        self._nonzero_shapes: dict[tuple, tuple[int, int]] = {}  # requests_shape -> nonzero_requests
        self._score_plans: dict[str, tuple[Profile, list]] = {}  # profile -> its score plugins (see score)
        self._kinds_of: dict[str, Any] = {}
        tracked = {"cpu", "memory"}
        for prof in config.profiles.values():
            tracked.update(r for r, _ in prof.fit.resources)
            tracked.update(r for r, _ in prof.balanced_resources)
        self.alloc = {
            r: np.array([units(r, nd.allocatable.get(r, 0)) for nd in self.nodes], dtype=np.int64) for r in tracked
        }
        self.used = {r: np.array([units(r, nd.used.get(r, 0)) for nd in self.nodes], dtype=np.int64) for r in tracked}
        self.nz_cpu = self.used["cpu"].copy()
        self.node_scores = NodeScores(n, is_scalar, _NATIVE[:3])
        self.nz_mem = self.used["memory"].copy()
        self.pods_on: list[list[PodInfo]] = [[] for _ in range(n)]
        # existing pods' affinity terms: (kind, weight, term key) -> (term, node index -> pods)
        self.affinity_groups: dict[tuple, tuple[Any, Counter]] = {}
        self._n_anti = 0  # required anti-affinity terms of the pods on the nodes
        self._count_cache: dict[Any, tuple[Any, np.ndarray]] = {}
        self._domain_cache: dict[str, tuple[np.ndarray, list[str]]] = {}
        self._eligible_cache: dict[tuple, np.ndarray] = {}
        for d in workload.running:
            idx = self._index(d.node_name)
            if idx is None:
                continue
            nzc, nzm = self.nonzero(d)
            self.nz_cpu[idx] += nzc - units("cpu", d.resources.get("cpu", 0))
            self.nz_mem[idx] += nzm - units("memory", d.resources.get("memory", 0))
            self._add_pod(self.info(d), idx)
        self.prefer_taints = [[t for t in nd.node.spec.taints if t.effect == "PreferNoSchedule"] for nd in self.nodes]
        from draopt.kube.workload import device_class_mapping

        self.ext_classes = (
            device_class_mapping(cluster.objects.device_classes) if cluster.features.extended_resource else {}
        )
        self._class_devices: dict[tuple[str, int], list] = {}
        self.any_prefer_taints = any(self.prefer_taints)
        self.epoch = 0  # placements and releases so far
        self.fail_memo: dict[Any, tuple[int, Counter]] = {}
        self.kinds: dict[Any, tuple] = {}  # kind -> (version seen, feasible, DRA score, reason) per node
        self.boards: dict[Any, tuple] = {}  # the same per alike kind (see select), shareable answers only
        # Alike kinds whose one shared table (see select) met a reason that names a kind's own
        # claims or classes: from then on each of these kinds keeps its own table.
        self.alike_apart: set = set()
        self._groups: dict[int, tuple[int, Any]] = {}  # id(device group memo) -> (number, memo)
        self._versions_kept: bool | None = None  # the nodes keep cluster.versions (checked once)
        # (cluster.takes, whether every node keeps it): scan.takes_now's check, once per array
        self._takes_checked: tuple[Any, bool] = (None, False)
        self._kept_array = getattr(cluster, "versions", None)
        self.fit_cache: dict[
            Any, dict[int, tuple[int, int, str | None]]
        ] = {}  # kind -> node -> (version, DRA score, reason)
        self.on_tie = None  # called with the tied nodes before a tie-break (TrialMemo's recording)
        # Ties broken toward a given node per pod (draopt.crosscheck: kube-scheduler's own choice, so
        # one random draw does not make every later pod differ); others by name. No trial memo then.
        self.prefer_nodes: dict[str, str] | None = None

    def trial_memo(self, book, shared_claims: set[str]) -> TrialMemo:
        """The memory of pod-group trials for one first-fit run (draopt/scheduler/trial_memo.py)."""
        return TrialMemo(self, self.cluster, book, shared_claims, num_feasible_nodes_to_find)

    # ------------------------------------------------------------------ pods
    def _index(self, name: str | None) -> int | None:
        nd = self.cluster.by_name.get(name) if name else None
        return nd.index if nd is not None else None

    def info(self, demand) -> PodInfo:
        got = self._infos.get(demand.key)
        if got is None:
            got = self._infos[demand.key] = pod_info(demand.pod)
        return got

    def nonzero(self, demand) -> tuple[int, int]:
        got = self._nonzero.get(demand.key)
        if got is None:
            shape = requests_shape(demand.pod)
            got = self._nonzero_shapes.get(shape) if shape is not None else None
            if got is None:
                got = nonzero_requests(demand.pod)
                if shape is not None and len(self._nonzero_shapes) < MAX_KINDS:
                    self._nonzero_shapes[shape] = got
            self._nonzero[demand.key] = got
        return got

    def _add_pod(self, info: PodInfo, idx: int, sign: int = 1) -> None:
        if sign > 0:
            self.pods_on[idx].append(info)
        else:
            self.pods_on[idx].remove(info)
        if not (info.required_anti or info.required_affinity or info.preferred_affinity or info.preferred_anti):
            terms_of: tuple[tuple[str, int, list[tuple[int, AffinityTerm]]], ...] = ()  # (most pods: none to count)
        else:
            self._n_anti += sign * len(info.required_anti)
            terms_of = (
                ("anti", 0, [(0, t) for t in info.required_anti]),
                ("req", 0, [(0, t) for t in info.required_affinity]),
                ("pref", 1, info.preferred_affinity),
                ("pref", -1, info.preferred_anti),
            )
        # existing pods' terms, grouped by term: each distinct term is matched once per cycle
        for kind, weight, terms in terms_of:
            for w, t in terms:
                gkey = (kind, weight * w, t.key)
                group = self.affinity_groups.get(gkey)
                if group is None:
                    group = self.affinity_groups[gkey] = (t, Counter())
                group[1][idx] += sign
                if not group[1][idx]:
                    del group[1][idx]
        for pred, arr in self._count_cache.values():
            if pred(info):
                arr[idx] += sign

    def placed(self, demand, node, taken: dict[str, Fraction], sign: int = 1) -> None:
        """A pod was bound to `node` (sign -1: released) holding `taken` node resources."""
        idx = node.index
        self.epoch += 1
        self.node_scores.touched(idx)
        for r, arr in self.used.items():
            v = taken.get(r)
            if v:
                arr[idx] += sign * units(r, v)
        nzc, nzm = self.nonzero(demand)
        # The non-zero requests plus what the devices add (taken - requests: nothing when taken
        # holds the pod's own amount, the same object, as it does without device resources).
        cpu, own_cpu = taken.get("cpu", 0), demand.resources.get("cpu", 0)
        mem, own_mem = taken.get("memory", 0), demand.resources.get("memory", 0)
        self.nz_cpu[idx] += sign * (nzc if cpu is own_cpu else nzc + units("cpu", cpu) - units("cpu", own_cpu))
        self.nz_mem[idx] += sign * (nzm if mem is own_mem else nzm + units("memory", mem) - units("memory", own_mem))
        self._add_pod(self.info(demand), idx, sign)

    # ------------------------------------------------------------------ the cycle
    def profile(self, demand) -> Profile | None:
        return self.config.profile_for(self.info(demand).scheduler_name)

    def no_profile_reason(self, demand) -> str:
        name = self.info(demand).scheduler_name
        return (
            f"no scheduler profile {name!r} (spec.schedulerName) in {self.config.source} "
            f"(profiles: {', '.join(sorted(self.config.profiles))})"
        )

    def select(
        self,
        demand,
        try_fn,
        pl,
        sig,
        first_open: dict,
        skipped_reasons: dict,
        generic,
        specific,
        alike=None,
        shared=None,
        refit=None,
        observe=None,
    ):
        """Filter and score for `demand`; returns (node, fit) or None (reasons in pl.reasons).
        `try_fn(node)`: firstfit's try_node for this pod, (reason, fit); `alike`, `shared`, `refit`
        and `observe`: see the class's notes on select. (Its small steps are written out here: it
        runs once per pod, and bench_instructions counts each call.)"""
        prof = self.profile(demand)
        n = len(self.nodes)
        if prof is None:
            return self._not_served(demand, pl, n)
        if n == 0:
            return None
        info = self.info(demand)
        to_find = self._to_find(prof, n)
        hard = self._hard_filters(demand, info, prof)
        if sig is not None and info.has_pod_affinity:
            sig = self._node_level_kind(demand, sig)
            if alike is not None:
                alike = alike[:-1] + sig[-1:]
        keys = [u.key for u in demand.claims]
        merged = self.share_alike_tables and alike is not None and hard is None and alike not in self.alike_apart
        table_key = ("alike kinds", alike) if merged else sig  # (never a kind's own key; see the class)
        frontier = first_open.get(table_key, 0) if table_key is not None and firstfit.KIND_FRONTIERS else 0
        start = self.next_start
        memo_key = (sig, prof.name) if sig is not None and hard is None else None
        if memo_key in self.fail_memo and self._failed_before(memo_key, pl, specific, keys):
            return None
        scanned = sig is not None and hard is None and self.array_scan
        specs = (
            sig[0] if scanned and refit is not None and self.reuse_kept_fits and len(set(keys)) == len(keys) else None
        )
        if scanned:
            feasible, dra, fits, rejected, processed = scan(
                self,
                table_key,
                start,
                frontier,
                to_find,
                try_fn,
                keys,
                first_open,
                skipped_reasons,
                generic,
                alike,
                demand,
                shared,
                merged,
                specs,
            )
        else:
            kcache = self.fit_cache.setdefault(sig, {}) if sig is not None else None
            feasible, dra, fits, rejected, processed = self._scan_slow(
                sig, start, frontier, to_find, try_fn, keys, first_open, skipped_reasons, generic, hard, kcache
            )
        self.next_start = (start + processed) % n
        if not len(feasible):
            keep = shareable_reason if merged else None  # (a merged table serves alike kinds: their reasons)
            self._fits_nowhere(rejected, frontier, skipped_reasons.get(table_key), try_fn, generic, keys, keep, hard)
            return self._failed(pl, rejected, memo_key, specific, keys)
        chosen = self._chosen(demand, info, prof, feasible, dra, observe)
        # (a fit is a non-empty tuple: `or` asks _fit_at only where none was kept)
        return self.nodes[chosen], fits.get(chosen) or self._fit_at(
            demand, chosen, fits, specs, table_key, try_fn, refit
        )

    def _not_served(self, demand, pl, n: int) -> None:
        """A pod no profile of this scheduler serves: every node says so."""
        pl.reasons[self.no_profile_reason(demand)] += max(n, 1)
        pl.message = ""  # (another scheduler's pod: kube-scheduler never sees it)
        return None

    def _fits_nowhere(self, rejected: Counter, frontier: int, skipped, try_fn, generic, keys, keep, hard=None) -> None:
        """`rejected` completed with the reasons of the nodes before the kind's frontier (`hard`: the
        pod's own spread and affinity filters, which run before the devices' and say theirs first)."""
        if frontier and first_filter_error(rejected) is None:
            rejected.update(frontier_reasons(skipped, self.nodes, frontier, try_fn, generic, keys, keep, hard))

    def _failed(self, pl, rejected: Counter, memo_key, specific, keys) -> None:
        """No feasible node: the pod's reasons, remembered for its kind; or the filter error that
        ended the attempt (draopt.cluster.filter_error), remembered nowhere."""
        error = first_filter_error(rejected)
        if error is not None:
            pl.error = specific(error, keys)
            return None
        if memo_key is not None:
            self.fail_memo[memo_key] = (self.epoch, rejected)
        count_reasons(pl.reasons, {specific(r, keys): c for r, c in rejected.items()})
        return None

    def _to_find(self, prof: Profile, n: int) -> int:
        """How many feasible nodes the profile scores (percentageOfNodesToScore; 1 without scores)."""
        pct = prof.percentage_of_nodes_to_score
        if pct is None:
            pct = self.config.percentage_of_nodes_to_score
        return num_feasible_nodes_to_find(pct, n) if prof.score_weights else 1

    def _failed_before(self, memo_key, pl, specific, keys) -> bool:
        """Nothing changed since this kind of pod failed everywhere: it fails again (every node
        processed, so the start index is where it was); its reasons are the pod's."""
        memo = self.fail_memo.get(memo_key)
        if memo is not None and memo[0] == self.epoch:
            count_reasons(pl.reasons, {specific(r, keys): c for r, c in memo[1].items()})
            return True
        return False

    def _chosen(self, demand, info, prof: Profile, feasible, dra, observe, tried: int | None = None) -> int:
        """The best-scoring feasible node (ties broken); its breakdown to `observe`, if given
        (`tried`: the nodes the filter loop could try, default all)."""
        seen: dict | None = None
        if len(feasible) == 1:
            chosen = int(feasible[0])
        else:
            fe = feasible if isinstance(feasible, np.ndarray) else np.asarray(feasible, dtype=np.int64)
            seen = {} if observe is not None else None
            total = self.score(demand, info, prof, fe, np.asarray(dra, dtype=np.int64), seen)
            chosen = self._pick(feasible, total, demand)
        if observe is not None:
            n = len(self.nodes) if tried is None else tried
            self._observed(observe, demand, info, prof, feasible, dra, seen, chosen, n)
        return chosen

    def _fit_at(self, demand, chosen: int, fits, specs, table_key, try_fn, refit):
        """The pod's fit on the chosen node."""
        nodes = self.nodes
        fit = fits.get(chosen)
        if fit is None and isinstance(fits, Fits):
            fit = next((f for same, f in fits.groups if same[chosen]), None)
        if fit is None and specs is not None:
            # The node was answered from the table: the fit kept there, if it was found at the
            # node's version now for claims with these specs, is what try_fn would rebuild.
            got = self.kinds[table_key][LAST_FIT][chosen]
            if got is not None and got[0] == nodes[chosen].version and got[1] == specs:
                fit = refit(nodes[chosen], got[2])
        if fit is None:
            reason, fit = try_fn(nodes[chosen])
            if reason is not None:
                raise RuntimeError(
                    f"internal: node {nodes[chosen].name} passed for {demand.key} from the cache "
                    f"but fails now: {reason}"
                )
        return fit

    def select_within(self, demand, indexes: list[int], try_fn, pl, observe=None):
        """select() over the nodes `indexes` only (in that order): a pod of a pod group tried in
        one of its placements (draopt/cluster/podgroup_placement.py), whose snapshot holds only
        the placement's nodes: the same filters, numFeasibleNodesToFind and scores over them, the
        rotating start modulo their number (findNodesThatFitPod); no per-kind memory."""
        prof = self.profile(demand)
        if prof is None:
            pl.reasons[self.no_profile_reason(demand)] += max(len(indexes), 1)
            pl.message = ""  # (another scheduler's pod: kube-scheduler never sees it)
            return None
        info = self.info(demand)
        to_find = self._to_find(prof, len(indexes))
        hard = self._hard_filters(demand, info, prof)
        feasible: list[int] = []
        dra: list[int] = []
        fits: dict[int, Any] = {}
        n = max(len(indexes), 1)
        start = self.next_start = self.next_start % n
        for i in range(len(indexes)):
            idx = indexes[(start + i) % n]
            reason = hard(idx) if hard is not None else None
            if reason is None:
                reason, fit = try_fn(self.nodes[idx])
            if is_filter_error(reason):
                pl.error, pl.reasons = reason, Counter()  # the attempt ends here (filter_error)
                return None
            if reason is None and len(feasible) >= to_find:  # one feasible node too many: not counted
                break
            self.next_start = (start + i + 1) % n  # (moved by the nodes processed)
            if reason is not None:
                count_reason(pl.reasons, reason)
                continue
            feasible.append(idx)
            dra.append(fit[3])
            fits[idx] = fit
        if not feasible:
            return None
        chosen = self._chosen(demand, info, prof, feasible, dra, observe, len(indexes))
        return self.nodes[chosen], fits[chosen]

    def _node_level_kind(self, demand, sig):
        """firstfit's kind of pod without the pod (anti-)affinity terms, which its node filters
        (try_node) do not read (this scheduler's own filters do): pods of different apps with
        the same requests share their per-node answers."""
        got = self._kinds_of.get(demand.key)
        if got is None:
            import json

            spec = demand.pod.spec
            na = spec.affinity.node_affinity if spec.affinity is not None else None
            text = json.dumps(
                [na.to_k8s() if na is not None else None, [t.to_k8s() for t in spec.tolerations]], sort_keys=True
            )
            got = self._kinds_of[demand.key] = sig[:-1] + ("node-level " + text,)
        return got

    def _scan_slow(
        self,
        sig,
        start: int,
        frontier: int,
        to_find: int,
        try_fn,
        keys,
        first_open,
        skipped_reasons,
        generic,
        hard,
        kcache,
    ):
        """The filter loop node by node (pods with inter-pod affinity or topology spread filters,
        or using claims already allocated)."""
        nodes = self.nodes
        n = len(nodes)
        feasible: list[int] = []
        dra: list[int] = []
        fits: dict[int, Any] = {}
        rejected: Counter = Counter()  # generic reasons (claim keys as positions)
        processed = 0
        for i in range(n):
            idx = start + i
            if idx >= n:
                idx -= n
            processed += 1
            if idx < frontier:
                continue  # rejects this kind of pod (nodes only filled up since)
            node = nodes[idx]
            if hard is not None:
                reason = hard(idx)
                if reason is not None:
                    rejected[reason] += 1
                    continue
            if kcache is not None:
                # Pods of one kind get the same answer from a node that has not changed since
                # (firstfit's kind: same claims, requests, selectors, tolerations).
                hit = kcache.get(idx)
                if hit is not None and hit[0] == node.version:
                    if hit[2] is not None:
                        rejected[hit[2]] += 1
                        continue
                    if len(feasible) >= to_find:  # one feasible node too many: the loop stops before it
                        processed -= 1
                        break
                    feasible.append(idx)
                    dra.append(hit[1])
                    continue
            reason, fit = try_fn(node)
            if reason is not None:
                reason = generic(reason, keys)
                if is_filter_error(reason):  # the attempt ends here, the node not kept
                    return [], [], {}, Counter({reason: 1}), processed - 1
                rejected[reason] += 1
                if kcache is not None:
                    kcache[idx] = (node.version, 0, reason)
                    if idx == frontier:
                        frontier += 1
                        first_open[sig] = frontier
                        skipped_reasons.setdefault(sig, {})[idx] = (node.version, reason)
                continue
            if kcache is not None:
                kcache[idx] = (node.version, fit[3], None)
            if len(feasible) >= to_find:  # (findNodesThatPassFilters cancels on one too many)
                processed -= 1
                break
            fits[idx] = fit
            feasible.append(idx)
            dra.append(fit[3])
        return feasible, dra, fits, rejected, processed

    def _pick(self, feasible, total: np.ndarray, demand) -> int:
        """The chosen node of `feasible` (node indexes: a list, or scan's int64 array) for `demand`."""
        best = int(_MAXIMUM(total))
        tied = (total == best).nonzero()[0]
        if len(tied) == 1:
            return int(feasible[int(tied[0])])
        if self.on_tie is not None:
            self.on_tie([int(feasible[int(t)]) for t in tied])
        if self.prefer_nodes is not None:
            indexes = [int(feasible[int(t)]) for t in tied]
            wanted = self.prefer_nodes.get(demand.key)
            return next((i for i in indexes if self.nodes[i].name == wanted), min(indexes))
        if self.tie_break == "name":
            return min(int(feasible[int(t)]) for t in tied)
        # selectHost keeps each tied node with probability 1/count (reservoir sampling): a
        # uniform choice among the ties, drawn here in one step.
        return int(feasible[int(tied[self.rng.randrange(len(tied))])])

    # ------------------------------------------------------------------ filters
    def _hard_filters(self, demand, info: PodInfo, prof: Profile):
        checks = []
        if "PodTopologySpread" in prof.filters:
            rules = (
                [r for r in info.spread if r.when_unsatisfiable == "DoNotSchedule"]
                if info.spread
                else self.default_rules(info, prof, "DoNotSchedule")
            )
            if rules:
                checks.append(self._spread_filter(demand, info, rules))
        if "InterPodAffinity" in prof.filters and (info.required_affinity or info.required_anti or self._n_anti):
            f = self._affinity_filter(info)
            if f is not None:
                checks.append(f)
        if not checks:
            return None

        def ordered(idx: int) -> str | None:
            for c in checks:
                r = c(idx)
                if r is not None:
                    # The node filters run before PodTopologySpread and InterPodAffinity in the
                    # default order: a node both reject says theirs.
                    return node_level_reason(self.cluster, self.nodes[idx], demand) or r
            return None

        return ordered

    def default_rules(self, info: PodInfo, prof: Profile, when: str) -> list[SpreadRule]:
        """Default constraints apply to pods a ReplicaSet, StatefulSet or ReplicationController
        owns (helper.DefaultSelector): their selector is approximated as "pods of the same owner"."""
        if info.owner is None:
            return []
        owner = info.owner
        rules = []
        for c in prof.default_spread_constraints:
            if c.when_unsatisfiable != when:
                continue
            rules.append(
                SpreadRule(c.max_skew, c.topology_key, c.when_unsatisfiable, _OwnerMatch(owner), 1, True, False)
            )
        return rules

    # ------------------------------------------------------------------ pods per node, by selector
    def _counts(self, key, pred) -> np.ndarray:
        """Pods on each node for which pred(pod) holds; kept up to date as pods are placed."""
        got = self._count_cache.get(key)
        if got is not None:
            return got[1]
        arr = np.zeros(len(self.nodes), dtype=np.int64)
        for idx, pods in enumerate(self.pods_on):
            for p in pods:
                if pred(p):
                    arr[idx] += 1
        if len(self._count_cache) >= MAX_KINDS:
            del self._count_cache[next(iter(self._count_cache))]
        self._count_cache[key] = (pred, arr)
        return arr

    def rule_counts(self, rule: SpreadRule, info: PodInfo) -> np.ndarray:
        """Pods matching a spread constraint's selector in the pod's namespace, per node."""
        sel, ns = rule.selector, info.namespace
        if isinstance(sel, _OwnerMatch):
            owner = sel.owner
            return self._counts(("owner", ns, owner), lambda p: p.namespace == ns and p.owner == owner)
        return self._counts(("spread", ns, sel.key), lambda p: p.namespace == ns and sel(p.labels))

    def term_counts(self, term) -> np.ndarray:
        ns = self.ns_labels
        return self._counts(term.pods_key, lambda p: term.matches(p, ns))

    def domains(self, key: str) -> tuple[np.ndarray, list[str]]:
        """Per node, the index of its value of label `key` in the returned values (-1: no label)."""
        got = self._domain_cache.get(key)
        if got is None:
            values: dict[str, int] = {}
            ids = np.array(
                [values.setdefault(lab[key], len(values)) if key in lab else -1 for lab in self.labels], dtype=np.int64
            )
            got = self._domain_cache[key] = (ids, list(values))
        return got

    def domain_sums(self, key: str, counts: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Pods per domain of `key` (nodes without the label left out; `mask`: only these nodes)."""
        ids, values = self.domains(key)
        on = ids >= 0 if mask is None else (ids >= 0) & mask
        return np.bincount(ids[on], weights=counts[on], minlength=len(values)).astype(np.int64)

    def eligible(self, demand, rule: SpreadRule) -> np.ndarray | None:
        """matchNodeInclusionPolicies over all nodes (None: every node): node affinity/selector
        (Honor by default, only when the pod selects nodes), taints (Ignore by default)."""
        spec = demand.pod.spec
        affinity = rule.honor_node_affinity and bool(
            demand.node_selector or (spec.affinity is not None and spec.affinity.node_affinity is not None)
        )
        if not affinity and not rule.honor_taints:
            return None
        key = (demand.key, affinity, rule.honor_taints)
        got = self._eligible_cache.get(key)
        if got is None:
            cl = self.cluster
            required = (
                spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
                if spec.affinity is not None and spec.affinity.node_affinity is not None
                else None
            )
            out = np.ones(len(self.nodes), dtype=bool)
            for i, node in enumerate(self.nodes):
                if (
                    affinity
                    and not cl.node_matches(node, demand.node_selector, required)
                    or rule.honor_taints
                    and any(
                        t.effect in ("NoSchedule", "NoExecute") and not any(tolerates(x, t) for x in spec.tolerations)
                        for t in node.node.spec.taints
                    )
                ):
                    out[i] = False
            if len(self._eligible_cache) >= MAX_KINDS:
                self._eligible_cache.clear()
            got = self._eligible_cache[key] = out
        return got

    def has_keys(self, keys) -> np.ndarray:
        out = np.ones(len(self.nodes), dtype=bool)
        for k in set(keys):
            out &= self.domains(k)[0] >= 0
        return out

    def _spread_filter(self, demand, info: PodInfo, rules: list[SpreadRule]):
        """PodTopologySpread Filter (podtopologyspread/filtering.go): skew = pods matching in the
        node's domain + (1 if the pod matches itself) - the smallest count over the domains (0 when
        fewer domains than minDomains) must not exceed maxSkew. Domains: values of the nodes that
        have every constraint's key and pass the inclusion policies."""
        all_keys = self.has_keys([r.topology_key for r in rules])
        sums, mins, selfs, ids_of = [], [], [], []
        for r in rules:
            elig = self.eligible(demand, r)
            mask = all_keys if elig is None else all_keys & elig
            ids, _ = self.domains(r.topology_key)
            got = self.domain_sums(r.topology_key, self.rule_counts(r, info), mask)
            present = np.unique(ids[mask])
            n_dom = len(present)
            mins.append(0 if n_dom == 0 or n_dom < r.min_domains else int(got[present].min()))
            sums.append(got)
            ids_of.append(ids)
            sel = r.selector
            selfs.append(1 if (sel.owner == info.owner if isinstance(sel, _OwnerMatch) else sel(info.labels)) else 0)

        def check(idx: int) -> str | None:
            for ci, r in enumerate(rules):
                d = ids_of[ci][idx]
                if d < 0:
                    return "node(s) didn't match pod topology spread constraints (missing required label)"
                if sums[ci][d] + selfs[ci] - mins[ci] > r.max_skew:
                    return "node(s) didn't match pod topology spread constraints"
            return None

        return check

    def _affinity_filter(self, info: PodInfo):
        """InterPodAffinity Filter (interpodaffinity/filtering.go): the pod's required affinity
        (every term's domain holds a pod matching all terms, or no pod anywhere matches and the
        pod matches its own terms), its required anti-affinity (no matching pod in the domain),
        and existing pods' required anti-affinity against this pod."""
        ns = self.ns_labels
        aff_sums: list[np.ndarray] = []
        any_aff = False
        if info.required_affinity:
            if len(info.required_affinity) == 1:
                both = self.term_counts(info.required_affinity[0])
            else:
                terms = info.required_affinity
                both = self._counts(
                    ("all", tuple(t.pods_key for t in terms)), lambda p: all(t.matches(p, ns) for t in terms)
                )
            aff_sums = [self.domain_sums(t.topology_key, both) for t in info.required_affinity]
            any_aff = any(x.any() for x in aff_sums)
        anti_sums = [self.domain_sums(t.topology_key, self.term_counts(t)) for t in info.required_anti]
        existing: Counter = Counter()
        for (kind, _, _), (term, where) in self.affinity_groups.items():
            if kind != "anti" or not where or not term.matches(info, ns):
                continue
            for idx, c in where.items():
                v = self.labels[idx].get(term.topology_key)
                if v is not None:
                    existing[(term.topology_key, v)] += c
        if not (info.required_affinity or any(x.any() for x in anti_sums) or existing):
            return None
        self_match = all(t.matches(info, ns) for t in info.required_affinity)
        aff_ids = [self.domains(t.topology_key)[0] for t in info.required_affinity]
        anti_ids = [self.domains(t.topology_key)[0] for t in info.required_anti]

        def check(idx: int) -> str | None:
            if info.required_affinity:
                exist = True
                for ids, sums in zip(aff_ids, aff_sums):
                    d = ids[idx]
                    if d < 0:
                        return "node(s) didn't match pod affinity rules"
                    if sums[d] <= 0:
                        exist = False
                if not exist and not (not any_aff and self_match):
                    return "node(s) didn't match pod affinity rules"
            for ids, sums in zip(anti_ids, anti_sums):
                d = ids[idx]
                if d >= 0 and sums[d] > 0:
                    return "node(s) didn't match pod anti-affinity rules"
            if existing:
                labels = self.labels[idx]
                for k, v in existing:
                    if labels.get(k) == v:
                        return "node(s) didn't satisfy existing pods anti-affinity rules"
            return None

        return check

    # ------------------------------------------------------------------ scores
    def score(
        self, demand, info: PodInfo, prof: Profile, fe: np.ndarray, dra: np.ndarray, seen: dict | None = None
    ) -> np.ndarray:
        """The weighted total over the feasible nodes `fe`, without the plugins that score every
        node alike (see plugin_scores). `seen`: filled with each plugin's normalised scores (None
        where it scores every node alike)."""
        plan = self._score_plans.get(prof.name)
        if plan is None or plan[0] is not prof:
            # (plugin, weight, scorer): plugins without a module (ImageLocality, VolumeBinding)
            # score every node alike, none; per-node plugins' scorer None (kept between cycles)
            steps = [
                (plugin, weight, None if plugin in PER_NODE else SCORE_PLUGINS[plugin])
                for plugin, weight in prof.score_weights.items()
                if plugin in PER_NODE or plugin in SCORE_PLUGINS
            ]
            plan = self._score_plans[prof.name] = (prof, steps)
        total = np.zeros(len(fe), dtype=np.int64)
        for plugin, weight, scorer in plan[1]:
            if scorer is None:  # kept per node between cycles (draopt.scheduler.node_scores)
                s = self.node_scores.score(self, plugin, demand, info, prof, fe)
            else:
                s = scorer(self, demand, info, prof, fe, dra)
            if s is not None:
                total += weight * s
            if seen is not None:
                seen[plugin] = s
        return total

    def plugin_scores(
        self, demand, info: PodInfo, prof: Profile, fe: np.ndarray, dra: np.ndarray
    ) -> tuple[np.ndarray, list[tuple[str, int, np.ndarray]]]:
        """`score`'s total, and each of the profile's score plugins as (plugin, weight, normalised
        scores over `fe`) as kube-scheduler has them: the plugins that score every node alike
        with that score (uniform_score), those not modelled (ImageLocality, VolumeBinding) 0."""
        seen: dict[str, Any] = {}
        total = self.score(demand, info, prof, fe, dra, seen)
        return total, self._rows(prof, len(fe), dra, seen)

    @staticmethod
    def _rows(prof: Profile, n: int, dra: np.ndarray, seen: dict) -> list[tuple[str, int, np.ndarray]]:
        rows = []
        for plugin, weight in prof.score_weights.items():
            s = seen.get(plugin)
            if s is None:
                s = np.full(n, uniform_score(plugin, dra), dtype=np.int64)
            rows.append((plugin, weight, np.asarray(s, dtype=np.int64)))
        return rows

    def _observed(self, observe, demand, info, prof: Profile, feasible, dra, seen, chosen: int, tried: int) -> None:
        """Give `observe` the cycle's ScoreBreakdown (`seen`: what score filled, None: the cycle
        did not score; `tried`: the nodes the filter loop could try)."""
        fe = np.asarray(feasible, dtype=np.int64)
        dra_arr = np.asarray(dra, dtype=np.int64)
        if seen is None:  # one feasible node: what the plugins would give it
            rows = self.plugin_scores(demand, info, prof, fe, dra_arr)[1]
        else:
            rows = self._rows(prof, len(fe), dra_arr, seen)
        observe(
            breakdown(
                demand.key,
                prof.name,
                rows,
                [self.nodes[int(i)].name for i in fe],
                self.nodes[chosen].name,
                scored=seen is not None,
                nodes_in_cluster=tried,
                feasible_wanted=self._to_find(prof, tried),
            )
        )

    def _plugin_score(self, plugin: str, demand, info: PodInfo, prof: Profile, fe: np.ndarray, dra: np.ndarray):
        """Normalised scores (0-100) over the feasible nodes, or None when the plugin gives every
        node the same score (it cannot change the choice); one module per plugin
        (draopt.scheduler.plugins)."""
        scorer = SCORE_PLUGINS.get(plugin)
        return scorer(self, demand, info, prof, fe, dra) if scorer is not None else None

    def _pod_request(self, demand, r: str, nonzero: bool = True) -> int:
        """The pod's request of `r` in the scheduler's units (cpu/memory: the non-zero ones)."""
        if nonzero and r in ("cpu", "memory"):
            return self.nonzero(demand)[0 if r == "cpu" else 1]
        v = demand.resources.get(r) or demand.extended_resources.get(r)
        return units(r, v) if v else 0

    def resource_columns(self, demand, resources, fe: np.ndarray, nonzero: bool):
        """(requested with the pod, requested without it, allocatable, pod request) per resource
        over the feasible nodes; resources skipped as the plugin skips them come back with
        allocatable 0 (calculateResourceAllocatableRequest)."""
        out = []
        for r, w in resources:
            pod_req = self._pod_request(demand, r, nonzero)
            if nonzero and r in ("cpu", "memory"):
                node_req = (self.nz_cpu if r == "cpu" else self.nz_mem)[fe]
            else:
                node_req = self.used[r][fe]
            if r not in _NATIVE[:3] and (not is_scalar(r) or pod_req == 0):
                alloc = np.zeros(len(fe), dtype=np.int64)  # not scored: (0, 0)
            else:
                alloc = self.alloc[r][fe]
                if r in self.ext_classes and not alloc.all():
                    # Allocatable 0: no device plugin; a resource backed by DRA counts the
                    # class's devices on the node and those allocated (calculateDRAResourceTotals).
                    cap, held = self._dra_totals(r, fe)
                    dra = (alloc == 0) & (cap > 0)
                    alloc = np.where(dra, cap, alloc)
                    node_req = np.where(dra, held, node_req)
            out.append((node_req + pod_req, node_req, alloc, pod_req, w))
        return out

    def _dra_totals(self, resource: str, fe: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(devices of the resource's DeviceClass on each node, how many are allocated): the
        class's selectors only (resource_allocation.go calculateDRAResourceTotals)."""
        cls = self.ext_classes[resource]
        cap = np.zeros(len(fe), dtype=np.int64)
        held = np.zeros(len(fe), dtype=np.int64)
        state = self.cluster.allocated
        for j, i in enumerate(fe):
            devs = self._devices_of_class(cls, int(i))
            cap[j] = len(devs)
            held[j] = sum(1 for d in devs if state.holds(d))
        return cap, held

    def _devices_of_class(self, cls: str, idx: int) -> list:
        key = (cls, idx)
        got = self._class_devices.get(key)
        if got is None:
            from draopt.kube.models import ResourceClaim
            from draopt.dra.problem import prepare

            cl = self.cluster
            inv = cl.inventory(self.nodes[idx])
            probe = ResourceClaim.model_validate(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": "draopt-class-probe", "namespace": "default"},
                    "spec": {
                        "devices": {
                            "requests": [
                                {
                                    "name": "r",
                                    "exactly": {"deviceClassName": cls, "allocationMode": "ExactCount", "count": 1},
                                }
                            ]
                        }
                    },
                }
            )
            problem = prepare([probe], inv, cl.classes, cl.features, cl.cel_env, cl.expr_cache)
            req = problem.claims[0].requests[0].alternatives[0]
            got = self._class_devices[key] = [e.id for e in inv.devices if problem.selectable(req, e)]
        return got


class _OwnerMatch:
    """Selector of a default spreading constraint: the pods of one controller."""

    def __init__(self, owner: tuple[str, str]):
        self.owner = owner
        self.key = ("owner",) + tuple(owner)

    def __call__(self, labels: dict[str, str]) -> bool:  # pragma: no cover - matched by owner instead
        raise TypeError("owner selectors match by owner")
