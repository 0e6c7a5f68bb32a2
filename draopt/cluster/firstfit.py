"""The kube-scheduler, simulated: pods one at a time in queue order, each node filtered with
the first-fit allocator, the best-scoring node taken, no choice ever revisited.

Node choice: with a `draopt.scheduler.Scheduler` (what `place` passes: a KubeSchedulerConfiguration
profile, Kubernetes 1.36's by default), the scheduler's score plugins over a share of the nodes
(percentageOfNodesToScore, rotating start), ties at random from a seed or by name
(docs/scheduler.md). Without one (`builtin:name-order`): every node is filtered and only DRA's
prioritized-list score differs between nodes (sum over the pod's firstAvailable requests of
8 - chosen sub-request index), ties to the first node in name order. Gangs (PodGroups with a
gang policy) are placed pod by pod, as
Kubernetes does; a gang that ends the queue with fewer than minCount pods placed gives back
what it took (the Permit stage times out), and a second pass offers that room to the others.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from draopt.cluster.state import Cluster, NodeState, pod_on
from draopt.cluster.result import FirstFitStats, PlacementResult, PodPlacement
from draopt.cluster.filter_error import first_filter_error, group_member_error, is_filter_error
from draopt.cluster.podgroup_status import never_popped, word_group_members
from draopt.cluster.podgroup_placement import GroupCycle, needs_group_cycles, run_group_cycle

# The filter of one node and the claim book live in firstfit_node; their names stay importable
# from here, where the layers above have always found them.
from draopt.cluster.firstfit_node import (
    MAX_SUBREQUEST_SCORE,
    NO_FIT,
    SEARCH_LIMIT,
    SHARED_FIT,
    ClaimBook,
    SharedDevices,
    _device_plugin_serves_any,
    _generic,
    _plus,
    _rebind,
    _scheduling_constraints,
    _specific,
    DEVICES_BEYOND_NODE,
    count_reason,
    count_reasons,
    counted_reasons,
    device_demand,
    device_resources,
    filter_reason,
    frontier_reasons,
    insufficient,
    is_resource_reason,
    node_filter,
    node_level_reason,
    pending_claims,
    prioritized_score,
    reuse_fit,
    shareable_reason,
    try_node,
)

__all__ = [
    "DEVICES_BEYOND_NODE",
    "EXPLAIN_NODES",
    "KIND_FRONTIERS",
    "MAX_SUBREQUEST_SCORE",
    "NO_FIT",
    "SEARCH_LIMIT",
    "SHARED_FIT",
    "ClaimBook",
    "FailureExplainer",
    "ScoreWatch",
    "SharedDevices",
    "Simulation",
    "_generic",
    "_plus",
    "_rebind",
    "_scheduling_constraints",
    "_specific",
    "count_reason",
    "count_reasons",
    "counted_reasons",
    "device_demand",
    "device_resources",
    "filter_reason",
    "frontier_reasons",
    "insufficient",
    "is_resource_reason",
    "node_filter",
    "node_level_reason",
    "pending_claims",
    "prioritized_score",
    "reuse_fit",
    "shareable_reason",
    "simulate",
    "try_node",
]

# Nodes before a kind's frontier (each rejected a pod of the kind, and nodes only fill up until a
# release) are not filtered again for later pods of the kind, except for their reasons when a pod
# fits nowhere (frontier_reasons). Off: every node is filtered for every pod (tests compare).
KIND_FRONTIERS = True

EXPLAIN_NODES = 5  # nodes a failed pod's device-side explanation covers

# InterPodAffinity's Filter reasons (interpodaffinity/filtering.go): a node it rejected the pod on
_INTER_POD_AFFINITY_REASONS = frozenset(
    (
        "node(s) didn't match pod affinity rules",
        "node(s) didn't match pod anti-affinity rules",
        "node(s) didn't satisfy existing pods anti-affinity rules",
    )
)

# (cluster, book, pod, the reasons the pod failed with) -> the explanation's text
FailureExplainer = Callable[[Cluster, "ClaimBook", Any, list], str]


@dataclass(frozen=True)
class ScoreWatch:
    """`simulate`'s observer of the scheduler's scoring (`draopt explain --scores`): for each
    cycle in which the scheduler chooses a node for one of `pods` (keys), `seen` is called with
    that cycle's draopt.scheduler.ScoreBreakdown, in the state of that cycle (the pods before it
    placed). A pod may have several such cycles (a gang given back and tried again): the last
    is the one it stayed bound by."""

    pods: frozenset[str]
    seen: Callable[[Any], None]


def simulate(
    cluster: Cluster,
    workload,
    *,
    share_id=None,
    explain_failures: FailureExplainer | None = None,
    scheduler=None,
    preemption=None,
    watch_scores: ScoreWatch | None = None,
) -> PlacementResult:
    """Place workload.pending in queue order; returns what Kubernetes would do.

    `explain_failures(cluster, book, pod, reasons)`: the device-side explanation of a pod that
    did not fit, in the state that made it fail (draopt.allocation.explain.explain_failed_pod,
    passed in by the layers above); None: the reasons alone.

    `scheduler` (a draopt.scheduler.Scheduler): kube-scheduler's node choice with a profile
    (score plugins, percentageOfNodesToScore, random ties); None: every node is filtered and
    the node with the best DRA score is taken, the first in node order on ties (by name, one
    node of each zone in turn: draopt.cluster.state.node_tree_order).

    `preemption` (draopt.scheduler.preemption.Preemption, passed in by the layers above): the
    PostFilter that evicts lower-priority running pods for a pod, or for a PodGroup once its
    last pod was tried, that fits nowhere; None: no preemption.

    `watch_scores` (with a `scheduler`): the scoring cycles of some pods, plugin by plugin."""
    from draopt.dra.decode import decode, deterministic_share_id

    t0 = time.perf_counter()
    run = Simulation.begin(cluster, workload, share_id or deterministic_share_id, decode, explain_failures, scheduler)
    run.watch_scores = watch_scores
    run.start_preemption(preemption)
    run.start_group_cycles()
    run.queue_pass()
    run.retry_woken()
    failed_gangs = run.release_short_gangs()
    failed_gangs |= run.retry_errors(run.second_chance(failed_gangs))
    run.retry_failed_groups(failed_gangs)
    run.word_members(failed_gangs)
    return run.result(t0)


@dataclass(eq=False)
class Simulation:
    """One simulate() call: the cluster it fills, the claim book, and what first-fit remembers
    between pods (the kinds' frontiers, try_node's cache, the pods' placements)."""

    cluster: Cluster
    workload: Any
    share_id: Callable
    decode: Callable
    explain_failures: FailureExplainer | None
    scheduler: Any  # draopt.scheduler.Scheduler (a layer above), or None: draopt's own node choice
    book: ClaimBook
    demand_of: dict[str, Any]  # pending pod key -> the pod
    # The scheduler reuses a kept fit for the node it chose (see Scheduler.select) only where
    # try_node's cached successes apply: incremental, and no node-allocatable check to redo.
    reuse: bool
    cache: dict = field(default_factory=dict)  # try_node's
    # try_node's shared-devices answers, for the scheduler's filter loop (quick path only)
    shared: SharedDevices | None = None
    explained: dict[tuple, tuple[str, str]] = field(default_factory=dict)  # kind -> (first pod, text)
    by_pod: dict[str, PodPlacement] = field(default_factory=dict)
    # While nodes only fill up, a node that rejected a kind of pod rejects it again: each kind
    # remembers the first node still worth trying (reset whenever something is released).
    first_open: dict = field(default_factory=dict)
    skipped_reasons: dict = field(default_factory=dict)
    taken: dict[str, dict] = field(
        default_factory=dict
    )  # pod -> node resources it holds (requests plus device-derived)
    shared_of: set[str] = field(default_factory=set)  # placed pods whose devices other nodes reach too
    group_domain: dict[str, frozenset] = field(
        default_factory=dict
    )  # PodGroup -> the nodes of the placement it was bound to
    indexes_of: dict[frozenset, list[int]] = field(default_factory=dict)
    users_of: dict[str, list[str]] = field(default_factory=dict)  # claim -> pending pods using it (retract's heirs)
    preempting: Any = None  # draopt.scheduler.preemption.PreemptionRun, or None
    cycles: GroupCycle | None = None
    cycle_failed: set[str] = field(default_factory=set)  # groups a pod-group cycle left unscheduled (not tried again)
    released: set[str] = field(default_factory=set)  # pods that fitted in their gang's trial, taken back with it
    refused_groups: set[str] = field(default_factory=set)
    errored_groups: set[str] = field(default_factory=set)  # groups whose cycle a filter error ended
    members_of: dict[str, list] = field(default_factory=dict)
    watch_scores: ScoreWatch | None = None
    bound: list[str] = field(default_factory=list)  # pending pods bound, in the order of their cycles
    failed_at: dict[str, int] = field(default_factory=dict)  # unplaced pod -> len(bound) at its last attempt
    # required pod-affinity terms (their keys) -> (binds looked at, indexes in `bound` matching them)
    affinity_hits: dict[tuple, tuple[int, list[int]]] = field(default_factory=dict)

    @classmethod
    def begin(
        cls,
        cluster: Cluster,
        workload,
        share_id: Callable,
        decode: Callable,
        explain_failures: FailureExplainer | None,
        scheduler,
    ) -> Simulation:
        book = ClaimBook(cluster, workload.claims)
        # Generated claims' signatures, computed once per ResourceClaimTemplate by the expansion.
        book.know_signatures(workload)
        run = cls(
            cluster=cluster,
            workload=workload,
            share_id=share_id,
            decode=decode,
            explain_failures=explain_failures,
            scheduler=scheduler,
            book=book,
            demand_of={p.key: p for p in workload.pending},
            reuse=cluster.incremental and not cluster.features.node_allocatable_resources,
        )
        # (not where a device plugin serves some pod's extended resources on some nodes: nodes that
        # share devices may then differ in what they ask of them)
        if (
            cluster.incremental
            and not cluster.features.node_allocatable_resources
            and not _device_plugin_serves_any(cluster, workload)
        ):
            run.shared = SharedDevices(cluster, run.cache)
        return run

    def start_preemption(self, preemption) -> None:
        if preemption is not None:
            self.preempting = preemption.start(
                self.cluster,
                self.workload,
                self.book,
                self.scheduler,
                self.place,
                self.unplace,
                self.by_pod,
                self.changed,
            )

    def start_group_cycles(self) -> None:
        """The pod-group cycles (podgroup_placement), where the workload needs them; the PodGroups'
        pending members."""
        workload, cluster, scheduler = self.workload, self.cluster, self.scheduler
        if needs_group_cycles(workload):
            self.cycles = GroupCycle(
                workload,
                cluster,
                lambda pod, allowed: self.place(pod, allowed=allowed),
                self.retract,
                set(self.demand_of),
                lambda key: self.book.allocation(key) is not None,
                skipped=self.skipped,
            )
            if scheduler is not None and cluster.incremental and scheduler.prefer_nodes is None:
                self.cycles.memo = scheduler.trial_memo(self.book, self.cycles._shared_claims())
            self.cycles.scheduler = scheduler
            self.cycles.rng = scheduler.rng if scheduler is not None else None
        for pod in workload.pending:
            if pod.group is not None:
                self.members_of.setdefault(pod.group, []).append(pod)

    # -- one pod ---------------------------------------------------------------------------------

    def kind(self, pod):
        """Pods of one kind fail on the same nodes; None when the pod uses an allocated claim."""
        book = self.book
        if any(book.allocation(u.key) is not None for u in pod.claims):
            return None
        return (
            tuple([book.signature(u.key) for u in pod.claims]),
            # amounts as (numerator, denominator): the same kinds, and the key, looked up several
            # times per cycle, hashes without Fraction.__hash__
            tuple(sorted([(r, (v.numerator, v.denominator)) for r, v in pod.resources.items()])),
            tuple(sorted(pod.node_selector.items())),
            _scheduling_constraints(pod),
            # (which names a device plugin may serve instead: DRA's claim alone does not say)
            tuple(sorted(pod.extended_resources)),
        )

    def placement_indexes(self, allowed: frozenset) -> list[int]:
        got = self.indexes_of.get(allowed)
        if got is None:
            got = self.indexes_of[allowed] = sorted(self.cluster.by_name[n].index for n in allowed)
        return got

    def place(self, pod, only: NodeState | None = None, allowed: frozenset | None = None) -> PodPlacement:
        """`only`: the one node to try (the node preemption nominated, which the scheduler's next
        cycle tries first and takes when it passes the filters). `allowed`: the nodes of the pod
        group's placement (podgroup_placement); default: the placement its group was bound to.
        With a scheduler, its choice; else (or with `only`, or a pod group's placement) draopt's
        own (_filter_nodes). (The scheduler's call is written out here, not in a function of its
        own: this runs once per pod; bench_instructions counts each call.)"""
        cluster, book, scheduler, cache = self.cluster, self.book, self.scheduler, self.cache
        pl = PodPlacement(pod.key, None, pod.priority, pod.group)
        if allowed is None and pod.group in self.group_domain:
            allowed = self.group_domain[pod.group]
        sig = self.kind(pod) if only is None and allowed is None else None
        keys = [u.key for u in pod.claims]
        best = None
        start = self.first_open.get(sig, 0) if sig is not None and KIND_FRONTIERS else 0
        if only is not None:
            start = len(cluster.nodes)
        elif scheduler is not None:
            watch = self.watch_scores
            observe = watch.seen if watch is not None and pod.key in watch.pods else None
            if allowed is not None:  # a pod group's placement: its nodes only
                pl.placement_nodes = len(allowed)
                found = scheduler.select_within(
                    pod,
                    self.placement_indexes(allowed),
                    lambda node: try_node(cluster, book, pod, node, cache, self.share_id),
                    pl,
                    observe,
                )
            else:
                alike = None
                if sig is not None and self.reuse:  # (reuse: incremental, no node-allocatable check)
                    # The kind as the allocator sees it (classes by their selectors): alike kinds get
                    # the same answer from a node (try_node's cache says so for the devices).
                    alike = (tuple([book.allocation_signature(k) for k in keys]),) + sig[1:]
                refit = (lambda node, fit: reuse_fit(cluster, book, pod, node, fit)) if self.reuse else None
                found = scheduler.select(
                    pod,
                    lambda node: try_node(cluster, book, pod, node, cache, self.share_id),
                    pl,
                    sig,
                    self.first_open,
                    self.skipped_reasons,
                    _generic,
                    _specific,
                    alike,
                    self.shared,
                    refit,
                    observe,
                )
            if found is not None:
                node, (problem, chosen, selected, score) = found
                best = (node, score, problem, chosen, selected)
            start = len(cluster.nodes)  # draopt's own node choice (_filter_nodes) has nothing left to try
        if only is not None or start < len(cluster.nodes):
            best = self._filter_nodes(pod, pl, sig, keys, only, allowed, start, best)
        if best is None:
            skipped_below = start if start and scheduler is None and only is None else 0
            self._failed(pod, pl, sig, keys, skipped_below)
            return pl
        self._bind(pod, pl, best)
        return pl

    def _filter_nodes(self, pod, pl: PodPlacement, sig, keys, only, allowed, start: int, best):
        """draopt's own node choice (no scheduler, `only`, or a pod group's placement): the nodes
        from `start` filtered in order, the best DRA score taken, the first on ties."""
        cluster, book, cache, share_id = self.cluster, self.book, self.cache, self.share_id
        first_open, skipped_reasons = self.first_open, self.skipped_reasons
        max_score = None
        contiguous = True
        if only is not None:
            candidates = [only]
        elif allowed is not None:
            candidates = (
                [cluster.nodes[i] for i in self.placement_indexes(allowed)] if start < len(cluster.nodes) else []
            )
        else:
            candidates = cluster.nodes[start:]
        for node in candidates:
            if allowed is not None and node.name not in allowed:
                continue
            reason, fit = try_node(cluster, book, pod, node, cache, share_id)
            if is_filter_error(reason):
                pl.error, pl.reasons = reason, Counter()  # the attempt ends here (filter_error)
                return None
            if reason is not None:
                count_reason(pl.reasons, reason)
                if contiguous and sig is not None:
                    first_open[sig] = node.index + 1
                    skipped_reasons.setdefault(sig, {})[node.index] = (node.version, _generic(reason, keys))
                continue
            contiguous = False
            problem, chosen, selected, score = fit
            if max_score is None:
                max_score = MAX_SUBREQUEST_SCORE * sum(
                    1 for c in (problem.claims if problem else []) for g in c.requests if g.has_subrequests
                )
            if best is None or score > best[1]:
                best = (node, score, problem, chosen, selected)
            if score >= max_score:
                break
        return best

    def _failed(self, pod, pl: PodPlacement, sig, keys: list[str], skipped_below: int) -> None:
        """A pod that fits nowhere: the reasons of the nodes its kind's frontier passed, and the
        device-side explanation."""
        cluster, book, cache = self.cluster, self.book, self.cache
        if skipped_below and not pl.error:
            fresh = frontier_reasons(
                self.skipped_reasons.get(sig),
                cluster.nodes,
                skipped_below,
                lambda node: try_node(cluster, book, pod, node, cache, self.share_id),
                _generic,
                keys,
            )
            count_reasons(pl.reasons, {_specific(r, keys): n for r, n in fresh.items()})
            error = first_filter_error(pl.reasons)
            if error is not None:
                pl.error, pl.reasons = error, Counter()
        if pl.error:
            # (the attempt ended at a filter error, in the loop or behind the kind's frontier: no
            # node reasons; the device side still says which devices err, and why)
            self._explain(pod, pl, [pl.error], keys)
            return
        if not cluster.nodes:
            pl.reasons["no Node objects in the input"] += 1
        if any(r.startswith(("cannot allocate", "resource claim error")) for r in pl.reasons):
            self._explain(pod, pl, list(pl.reasons), keys)

    def _explain(self, pod, pl: PodPlacement, reasons: list[str], keys: list[str]) -> None:
        """The device side of a failed pod, in the state that made it fail; once per kind of pod
        (same claims), which keeps large simulations fast."""
        if self.explain_failures is None:
            return
        book = self.book
        claims_sig = tuple(book.signature(u.key) for u in pod.claims)
        if claims_sig not in self.explained:
            text = self.explain_failures(self.cluster, book, pod, reasons)
            self.explained[claims_sig] = (pod.key, _generic(text, keys))
        first, text = self.explained[claims_sig]
        text = _specific(text, keys)
        pl.explanation = (
            text if first == pod.key or not text else f"(as for {first}, the first pod like it that failed)\n{text}"
        )

    def _bind(self, pod, pl: PodPlacement, best) -> None:
        """The pod on the chosen node: its claims' allocations committed, the node's resources taken."""
        cluster, book = self.cluster, self.book
        node, score, problem, chosen, selected = best
        pl.node, pl.prioritized_score = node.name, score
        pl.reasons.clear()
        touched_shared = False
        if problem is not None:
            results = self.decode(problem, chosen, selected, self.share_id)
            for claim, result in zip(problem.claims, results):
                pl.new_claims[claim.key] = result
                book.commit(claim.key, result, node.name)
            # Devices other nodes can reach too (allNodes, node selectors) change their answers.
            touched_shared = any(c.device.slice.spec.node_name != node.name for cl in chosen for c in cl)
        on_node = pod_on(node, pod)
        taken = self.taken[pod.key] = _plus(
            on_node.resources,
            device_resources(cluster, book, on_node, node, (problem, chosen))
            if problem is not None
            else device_resources(cluster, book, on_node, node, None),
        )
        node.take(taken)
        if self.scheduler is not None:
            self.scheduler.placed(pod, node, taken)
        if touched_shared:
            cluster.bump_all()
            self.shared_of.add(pod.key)

    # -- taking pods back ------------------------------------------------------------------------

    def changed(self, devices: bool) -> None:
        """Preemption took pods off or put them back: what first-fit remembers is stale."""
        if devices:
            self.cluster.bump_all()
        self.first_open.clear()
        self.skipped_reasons.clear()
        self.explained.clear()  # explanations of earlier failures describe the state before

    def retract(self, pl: PodPlacement) -> None:
        """Take a placed pod back, exactly (a pod-group cycle's trial of one placement)."""
        by_pod, users_of = self.by_pod, self.users_of
        pod = self.demand_of[pl.pod]
        node = self.cluster.by_name[_node_name(pl)]
        if not users_of:
            for d in self.workload.pending:
                for u in d.claims:
                    users_of.setdefault(u.key, []).append(d.key)
        for key, result in pl.new_claims.items():
            heir = next(
                (by_pod[u] for u in users_of.get(key, ()) if u in by_pod and by_pod[u] is not pl and by_pod[u].placed),
                None,
            )
            if heir is not None:
                heir.new_claims[key] = result
            else:
                self.book.release(key)
        if self.scheduler is not None:
            self.scheduler.placed(pod, node, self.taken[pod.key], -1)
        node.take(self.taken.pop(pod.key), -1)
        if pod.key in self.shared_of:
            self.shared_of.discard(pod.key)
            self.cluster.bump_all()
        self.first_open.clear()
        self.skipped_reasons.clear()
        pl.node, pl.new_claims = None, {}

    def unplace(self, pl: PodPlacement) -> None:
        """Take a placed pod of a gang short of minCount back (the Permit stage timed out)."""
        by_pod, demand_of = self.by_pod, self.demand_of
        pod = demand_of[pl.pod]
        pl_node = _node_name(pl)
        node = self.cluster.by_name[pl_node]
        for key, result in pl.new_claims.items():
            # A claim that another placed pod uses stays allocated (its reservation remains);
            # that pod now holds the allocation.
            heir = next(
                (
                    other
                    for other in by_pod.values()
                    if other is not pl and other.placed and any(u.key == key for u in demand_of[other.pod].claims)
                ),
                None,
            )
            if heir is not None:
                heir.new_claims[key] = result
            else:
                self.book.release(key)
        if self.scheduler is not None:
            self.scheduler.placed(pod, node, self.taken[pod.key], -1)
        node.take(self.taken.pop(pod.key), -1)
        self.cluster.bump_all()
        self.first_open.clear()
        self.skipped_reasons.clear()
        pl.node, pl.new_claims = None, {}
        pl.reasons = Counter({"pod group could not be placed whole (minCount not reached)": len(self.cluster.nodes)})
        pl.explanation = (
            f"placed on {pl_node} first, then released: its PodGroup {pod.group} did not reach minCount "
            f"{self.workload.groups[pod.group].min_count}"
        )

    def skipped(self, pods: int, results: int) -> None:
        """A pod-group trial of `pods` pods that the TrialMemo answered: what placing and retracting
        them leaves besides (retract's resets, the counters that date the caches)."""
        self.first_open.clear()
        self.skipped_reasons.clear()
        if self.scheduler is not None:
            self.scheduler.epoch += 2 * pods
        self.cluster.allocated.version += 2 * results
        self.cluster.allocated.releases += results

    # -- groups ----------------------------------------------------------------------------------

    def release_short_gang(self, key: str) -> bool:
        """A gang short of minCount (its running pods count) gives back what its pods took."""
        by_pod = self.by_pod
        gang = self.workload.groups[key]
        placed = [by_pod[p] for p in gang.pods if p in by_pod and by_pod[p].placed]
        running = sum(1 for p in gang.pods if p not in self.demand_of)
        if gang.policy != "gang" or running + len(placed) >= gang.min_count:
            return False
        for pl in placed:
            self.released.add(pl.pod)
            self.unplace(pl)
        return True

    def held_or_refused(self, group: str) -> bool:
        """A gang never popped for want of this scheduler's pods (draopt.cluster.podgroup_status)."""
        scheduler = self.scheduler
        members = self.members_of[group]
        outside = [m.key for m in members if scheduler is not None and scheduler.profile(m) is None]
        why = never_popped(self.workload.groups[group], outside)
        if not why:
            return False
        self.refused_groups.add(group)
        for m in members:  # (another scheduler's pod: place() gives its reason)
            quiet = PodPlacement(m.key, None, m.priority, m.group, message="", explanation=why)
            self.by_pod[m.key] = self.place(m) if m.key in outside else quiet
        return True

    # -- the queue -------------------------------------------------------------------------------

    def queue_pass(self) -> None:
        """Every pending pod in queue order: alone, with its PodGroup, or in its root's pod-group
        cycle; each followed by the PostFilter (preemption) where it did not fit."""
        by_pod, cycles, preempting, workload = self.by_pod, self.cycles, self.preempting, self.workload
        for pod in workload.pending:
            root = cycles.root_of(pod.group) if cycles is not None else None
            if root is not None:
                if pod.key not in by_pod:  # the root's first pod in queue order starts its cycle
                    if root[0] == "pg" and self.held_or_refused(root[1]):
                        continue
                    self._root_cycle(_cycles(cycles), root)
                continue
            if pod.group is not None and pod.group in workload.groups:
                # The pod-group cycle (schedule_one_podgroup.go): the group's first pod in queue order
                # brings all its pending pods, tried one after the other; then the group's PostFilter;
                # a gang short of minCount is taken back at once, before any other pod is tried.
                if pod.key in by_pod or self.held_or_refused(pod.group):
                    continue
                members = self.members_of[pod.group]
                if not self.place_group(pod.group, members):
                    continue  # (a filter error ended the cycle: no PostFilter)
                if preempting is not None:
                    preempting.after(members[-1])
                self.release_short_gang(pod.group)
                continue
            by_pod[pod.key] = self.place(pod)
            if preempting is not None:
                preempting.after(pod)  # PostFilter: the pod, or its PodGroup once its last pod was tried
            self._attempted(pod.key)

    def _attempted(self, key: str) -> None:
        """A single pod's cycle (and PostFilter) ended: bound, or failed at this point of the run."""
        if self.by_pod[key].placed:
            self.bound.append(key)
            self.failed_at.pop(key, None)
        else:
            self.failed_at[key] = len(self.bound)

    def retry_woken(self) -> None:
        """Pods kube-scheduler tries again once the active queue is empty, popped from its back-off
        queue in the order they failed (SchedulerPopFromBackoffQ): a preemptor waiting on its
        nominated node (its victims' deletion moved it back), and an unschedulable pod that goes
        back to the queue when a pod bound after its attempt matches every one of its required
        pod-affinity terms, where InterPodAffinity rejected it on some node (the plugin's queueing
        hint for an added pod, isSchedulableAfterAssignedPodChange). A pod tried again that binds
        may wake others. Other plugins' hints are not modelled (docs/differences.md,
        retried-after-cluster-events)."""
        held = self.preempting.held if self.preempting is not None else {}
        if self.scheduler is None and not held:
            return
        order = {k: i for i, k in enumerate(self.failed_at)}  # (ties: queue order)
        waiting = {k for k in self.failed_at if k in held or self._wants_affinity(k)}
        seen: dict[str, int] = {}  # pod -> the binds already looked at for it (each bind once)
        due: list[tuple[int, int, str]] = [(self.failed_at[k], order[k], k) for k in waiting if k in held]
        heapq.heapify(due)
        queued = {k for _, _, k in due}
        while waiting:
            for k in waiting:
                if k not in queued and self._woken(k, seen):
                    heapq.heappush(due, (self.failed_at[k], order[k], k))
                    queued.add(k)
            if not due:
                return
            _, _, key = heapq.heappop(due)
            queued.discard(key)
            pod = self.demand_of[key]
            if key in held:
                self.preempting.retry(pod)
            else:
                self.by_pod[key] = self.place(pod)
                if self.preempting is not None:
                    self.preempting.after(pod)
            self._attempted(key)
            if key in self.failed_at and (key in held or self._wants_affinity(key)):
                if key in held:  # (nominated again: waits again)
                    heapq.heappush(due, (self.failed_at[key], order[key], key))
                    queued.add(key)
            else:
                waiting.discard(key)

    def _wants_affinity(self, key: str) -> bool:
        """A single pod left pending with required pod affinity that some node rejected it for."""
        pod, pl = self.demand_of[key], self.by_pod[key]
        return (
            self.scheduler is not None
            and pod.group is None
            and not pl.placed
            and not pl.nominated_node
            and bool(self.scheduler.info(pod).required_affinity)
            and any(r in _INTER_POD_AFFINITY_REASONS for r in pl.reasons)
        )

    def _woken(self, key: str, seen: dict[str, int]) -> bool:
        """A pod bound since `key`'s last attempt matches all its required pod-affinity terms."""
        scheduler = self.scheduler
        terms = scheduler.info(self.demand_of[key]).required_affinity
        start = max(self.failed_at[key], seen.get(key, 0))
        seen[key] = len(self.bound)
        # The binds matching these terms, found once per set of terms (pods alike share them).
        tkey = tuple(t.key for t in terms)
        upto, hits = self.affinity_hits.get(tkey, (0, []))
        ns = scheduler.ns_labels
        for i in range(upto, len(self.bound)):
            info = scheduler.info(self.demand_of[self.bound[i]])
            if all(t.matches(info, ns) for t in terms):
                hits.append(i)
        self.affinity_hits[tkey] = (len(self.bound), hits)
        return any(self.by_pod[self.bound[i]].placed for i in hits[bisect_left(hits, start) :])

    def place_group(self, group: str, members: list) -> bool:
        """The plain pod-group cycle: the group's pending pods one after the other. A filter error
        ends it (schedule_one_podgroup.go, 1.36 and 1.37): what its pods took is given back, the
        failing pod keeps its error and every other pod gets the group's (GROUP_ERROR before it);
        False then."""
        by_pod = self.by_pod
        tried: list[PodPlacement] = []
        out_of_reach = self._placement_feasible(group, len(members))
        for i, m in enumerate(members):
            if out_of_reach(i, len([t for t in tried if t.placed])):
                # 1.37's PlacementFeasible stops the cycle: the rest are never tried (their
                # message is the gang's status, podgroup_status), so no filter of theirs runs.
                for rest in members[i:]:
                    by_pod[rest.key] = PodPlacement(rest.key, None, rest.priority, rest.group)
                return True
            pl = by_pod[m.key] = self.place(m)
            tried.append(pl)
            if pl.error:
                break
        else:
            return True
        for earlier in reversed(tried):
            if earlier.placed:
                self.retract(earlier)
        self.errored_groups.add(group)
        for m in members:
            if m.key != pl.pod:
                by_pod[m.key] = PodPlacement(m.key, None, m.priority, m.group, error=group_member_error(pl.error))
        return False

    def _placement_feasible(self, group: str, pending: int):
        """(pods tried, pods placed) -> whether 1.37's cycle stops before the next pod: a gang's
        minCount out of reach, its running pods counted (gang_trial's rule); never on 1.36 (its
        cycle tries every pod) nor for a basic group."""
        from draopt.kube.releases import at_least

        gang = self.workload.groups[group]
        if gang.policy != "gang" or not at_least(self.cluster.features.version, "1.37"):
            return lambda tried, placed: False
        running = sum(1 for p in gang.pods if p not in self.demand_of)
        return lambda tried, placed: running + placed + pending - tried < gang.min_count

    def retry_errors(self, earlier: tuple[bool, set[str]]) -> set[str]:
        """The pods (and pod groups) whose attempt a filter error ended, tried again in queue order
        once the rest is done, pass after pass until one places nothing: kube-scheduler puts them in
        backoff, not among the pods waiting for a cluster event, and retries them until no pod makes
        progress; their message is their last attempt's. `earlier`: second_chance's (whether its
        pass retried them and placed a pod, the gangs it left failed). Returns the gangs that failed."""
        progress, failed = earlier
        for _ in self.workload.pending:  # (bounded: each pass but the last places a pod)
            if not progress:
                break
            progress, more = self._retry_pass(lambda pod: False)
            failed |= more
        return failed

    def _placed_count(self) -> int:
        return sum(1 for pl in self.by_pod.values() if pl.placed)

    def _retry_pass(self, also) -> tuple[bool, set[str]]:
        """One pass in queue order over the errored pods (their groups' cycles again) and the pods
        `also(pod)` names; (whether it placed a pod, the gangs it left failed)."""
        by_pod, cycles, failed = self.by_pod, self.cycles, set()
        placed, seen = self._placed_count(), set[str]()
        for pod in self.workload.pending:
            pl = by_pod[pod.key]
            if pl.error and pod.key not in seen:
                failed |= self._retry(pod, cycles.root_of(pod.group) if cycles is not None else None, seen)
            elif also(pod):
                by_pod[pod.key] = self.place(pod)
                if not by_pod[pod.key].placed:
                    by_pod[pod.key].preemption = pl.preemption  # what preemption said stays said
        return self._placed_count() != placed, failed

    def _retry(self, pod, root, seen: set[str]) -> set[str]:
        """One errored pod's cycle again (its group's, or its root's); the gangs it left failed."""
        by_pod, preempting = self.by_pod, self.preempting
        if root is not None:
            cycles = _cycles(self.cycles)
            for leaf in cycles.leaves(root):
                self.cycle_failed.discard(leaf)
            seen.update(self._root_cycle(cycles, root))
            return set()
        if pod.group is not None and pod.group in self.workload.groups:
            members = self.members_of[pod.group]
            seen.update(m.key for m in members)
            self.errored_groups.discard(pod.group)
            if not self.place_group(pod.group, members):
                return set()
            if preempting is not None:
                preempting.after(members[-1])
            return {pod.group} if self.release_short_gang(pod.group) else set()
        seen.add(pod.key)
        by_pod[pod.key] = self.place(pod)
        if preempting is not None:
            preempting.after(pod)
        return set()

    def release_short_gangs(self) -> set[str]:
        """Gangs short of minCount hold nothing now; returns the gangs that failed."""
        failed_gangs = set()
        for key in self.workload.groups:
            if key in self.group_domain or key in self.refused_groups:  # (a cycle bound it: its running pods count)
                continue
            if self.release_short_gang(key):
                failed_gangs.add(key)
        return failed_gangs | self.cycle_failed

    def second_chance(self, failed_gangs: set[str]) -> tuple[bool, set[str]]:
        """The unplaced pods of the PodGroups that did not fail try again once every pod was tried
        (the oracle, 1.37.2: their messages read the final state); the pods a filter error stopped
        are retried in the same pass (retry_errors' first). A pod of no group is not tried again for
        the room a failed gang left: kube-scheduler requeues it only on an event that may help it (a
        gang's failure that freed nothing, or freed pods but no claim of its own, requeues no pod
        rejected for its devices: tests/data/crosscheck/gang-retry-*.yaml). Returns (whether the
        pass placed a pod, the gangs it left failed)."""
        skip = failed_gangs | self.refused_groups | self.errored_groups
        by_pod = self.by_pod
        return self._retry_pass(
            lambda pod: pod.group is not None and not by_pod[pod.key].placed and pod.group not in skip
        )

    def retry_failed_groups(self, failed_gangs: set[str]) -> None:
        """kube-scheduler puts a plain PodGroup whose cycle failed back in its queue, and tries it
        again once the other pods were tried (the oracle, 1.37.2: a failed gang's members read the
        final state's reasons, "Too many pods" where later pods filled a node): its cycle again,
        in the state the run left. 1.36 too (the oracle, 1.36.3: a gang short of minCount at Permit
        is tried again and again, its members' messages its last cycle's)."""
        cycles = self.cycles
        for key in sorted(failed_gangs - self.cycle_failed - self.refused_groups - self.errored_groups):
            if key not in self.workload.groups or key in self.group_domain:
                continue
            if cycles is not None and cycles.root_of(key) is not None:
                continue  # (a cycle with placements: its own messages)
            members = self.members_of.get(key) or []
            if not members or any(self.by_pod[m.key].placed for m in members):
                continue  # (none, or placed since it failed: an errored pod's retry placed it)
            for m in members:
                self.released.discard(m.key)
            # (its cycle again: stopped by PlacementFeasible, ended by a filter error, as the first)
            if not self.place_group(key, members):
                continue
            if self.preempting is not None:
                self.preempting.after(members[-1])
            self.release_short_gang(key)
        self._retry_failed_cycles()

    def _retry_failed_cycles(self) -> None:
        """The roots a cycle with placements left unscheduled, their cycle again in the state the
        run left, as a plain gang's (the oracle, 1.37.2: a topology gang's members read the second
        cycle's trial, seed 44)."""
        cycles = self.cycles
        if cycles is None or not self.cycle_failed:
            return
        roots = sorted({root for key in self.cycle_failed if (root := cycles.root_of(key)) is not None})
        for root in roots:
            leaves = cycles.leaves(root)
            if any(leaf not in self.cycle_failed or leaf in self.errored_groups for leaf in leaves):
                continue
            for leaf in leaves:
                self.cycle_failed.discard(leaf)
            self._root_cycle(cycles, root)

    def _root_cycle(self, cycles, root: tuple[str, str]) -> dict:
        """A root's pod-group cycle, its pods' placements recorded (and returned); then, for a root
        PodGroup with placements that it scheduled, the pods it left, tried again and preempted for
        (PreemptionRun.after_cycle); a CompositePodGroup's: not modelled."""
        got = run_group_cycle(cycles, root, self.group_domain, self.cycle_failed, len(self.cluster.nodes))
        self.by_pod.update(got)
        if self.preempting is not None and root[0] == "pg" and root[1] in self.group_domain:
            self.preempting.after_cycle(root[1])
        return got

    def word_members(self, failed_gangs: set[str]) -> None:
        """The PodGroups' pending members' messages, in the release's words (podgroup_status)."""
        cycles, scheduler = self.cycles, self.scheduler
        word_group_members(
            self.workload,
            self.by_pod,
            self.released,
            failed_gangs - self.cycle_failed,
            lambda pod: (
                pod.group not in self.refused_groups
                and (cycles is None or cycles.root_of(pod.group) is None)
                and (scheduler is None or scheduler.profile(pod) is not None)  # (no profile: never tried)
            ),
            self.preempting.group_post_filter if self.preempting is not None else None,
            self.cluster,
        )

    def result(self, t0: float) -> PlacementResult:
        elapsed = time.perf_counter() - t0
        pods = [self.by_pod[p.key] for p in self.workload.pending]
        stats = FirstFitStats(
            solve_s=round(elapsed, 3),
            pods_per_s=round(len(pods) / elapsed, 1) if elapsed else None,
            scheduler=self.scheduler.config.source if self.scheduler is not None else "builtin:name-order",
        )
        result = PlacementResult("first-fit", pods, dict(self.book.allocations), stats)
        if self.preempting is not None:
            self.preempting.finish(result)
        return result


def _node_name(pl: PodPlacement) -> str:
    """The node of a placed pod."""
    assert pl.node is not None
    return pl.node


def _cycles(cycles: GroupCycle | None) -> GroupCycle:
    assert cycles is not None
    return cycles
