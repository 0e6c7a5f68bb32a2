"""The pod-group scheduling cycle with placements (KEP-5732 topology-aware workload scheduling,
KEP-6012 CompositePodGroup), as kube-scheduler 1.37 runs it.

Source: kubernetes/kubernetes pkg/scheduler/algorithm_podgroup.go (PodGroupSchedulingAlgorithm),
framework/plugins/topologyaware/topology_placement.go (GeneratePlacements),
framework/plugins/podgrouppodscount (PodGroupPodsCount) and
framework/plugins/noderesources/placement_bin_packing.go (PlacementBinPacking).

One cycle places a whole root: a PodGroup with a topology constraint, or a CompositePodGroup
tree.

* **Placements** (GeneratePlacements): the nodes of the parent placement grouped by the value of
  the group's topology label, one placement per value (the empty value is a value); nodes without
  the label are in none. No constraint: the parent placement itself. Pods of the group already
  running pin the domain (their nodes' value); pods in two domains, or on a node without the
  label, are an error for the group (it stays unplaced with that reason).
* **Each placement** (podGroupSchedulingDefaultAlgorithm): the pending pods one by one in queue
  order, each through the normal filters and scores restricted to the placement's nodes, each
  placed pod seen by the next. A gang stops as soon as minCount is out of reach
  (PlacementFeasible); it is feasible with at least minCount pods (running ones count), a basic
  group with at least one. Then everything is taken back.
* **Choice** (findBestPlacement): one feasible placement is taken as is; several are scored, the
  weighted sum of PodGroupPodsCount (running + proposed pods, normalised to 0-100 by the
  maximum) and PlacementBinPacking (MostAllocated over the placement's summed cpu and memory,
  plus the extended resources the proposed pods request); the highest wins, ties to the
  placement first in name order (Kubernetes: random). The chosen placement's pods are then placed
  on the nodes found for them (assumeSubtreeWithRevert).
* **PercentageOfPlacementsToScore** (kubernetes/kubernetes PR #139859, formula of PR #139064; not
  confirmed in a release): placements are evaluated until max(1, placements x pct / 100) are
  feasible, pct = max(5, 100 - 9 x (nodes summed over the placements) / 500).
* **CompositePodGroup** (compositePodGroupSchedulingDefaultAlgorithm): inside each placement of
  the composite, its children in name order, each by its own cycle over the composite's
  placement (nested placements); a gang composite needs minGroupCount children scheduled (it
  stops once that is out of reach), a basic one at least one; children that fail hold nothing.
* The root needs at least one pod newly placed ("no pods were schedulable").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, cast

from draopt.cluster.filter_error import group_member_error
from draopt.cluster.podgroup_status import POD_GROUP_UNSCHEDULABLE, min_count_status, placement_failure
from draopt.cluster.result import PodPlacement
from draopt.kube.releases import at_least

OUTSIDE = "node(s) outside the pod group's placement"
PLACEMENT_SCORE_WEIGHTS = {"PodGroupPodsCount": 1, "PlacementBinPacking": 1}
MAX_SCORE = 100
EXPLAIN_DOMAINS = 8  # domains a failed group's explanation lists one by one

# (pod demand, allowed node names) -> its placement (committed when placed)
PlaceFn = Callable[[Any, frozenset], PodPlacement]
RetractFn = Callable[[PodPlacement], None]


def percentage_of_placements_to_score(total_nodes: int) -> int:
    """The adaptive percentage (PR #139064): 100 % for small clusters down to 10 % at 5,000
    nodes summed over the placements, never below 5 %."""
    return max(5, 100 - total_nodes * 9 // 500)


def placements_to_find(num_placements: int, total_nodes: int) -> int:
    return max(1, num_placements * percentage_of_placements_to_score(total_nodes) // 100)


def cycle_root(workload, group: str | None) -> tuple[str, str] | None:
    """The entity whose cycle places the pods of `group`: ("pg", key) or ("cpg", key); None when
    the group is placed by draopt's plain gang handling (no topology constraint, no
    CompositePodGroup)."""
    if group is None or group not in workload.groups:
        return None
    gang = workload.groups[group]
    if gang.parent is None:
        return ("pg", group) if gang.topology_key is not None else None
    at = gang.parent
    while workload.composites[at].parent is not None:
        at = workload.composites[at].parent
    return ("cpg", at)


def running_pods(workload, group: str, pending: set[str]) -> list:
    return [workload.pod(p) for p in workload.groups[group].pods if p not in pending]


def chain_of(workload, group: str) -> list[tuple[str, str]]:
    """The group and its CompositePodGroup ancestors, innermost first: ("pg"|"cpg", key)."""
    out = [("pg", group)]
    at = workload.groups[group].parent
    while at is not None:
        out.append(("cpg", at))
        at = workload.composites[at].parent
    return out


@dataclass
class Placement:
    name: str  # the topology label's value; "" and `parent` for the parent placement
    nodes: list[Any]  # NodeState, in the cluster's order
    parent: bool = False


def generate_placements(key: str | None, nodes: list, pinned: list) -> tuple[list[Placement], str | None]:
    """GeneratePlacements: (placements, error). `nodes`: the parent placement's nodes; `pinned`:
    the nodes (NodeState or None when not in the input) of the group's running pods."""
    if key is None:
        return [Placement("", list(nodes), parent=True)], None
    required: set[str] = set()
    for node in pinned:
        if node is None:
            return [], "a running pod of the group is on a node not in the input"
        labels = node.node.metadata.labels or {}
        if key not in labels:
            return [], f"no topology domain found for pod on node {node.name} (no label {key})"
        required.add(labels[key])
    if len(required) > 1:
        return [], f"more than 1 domain found for pod group ({key}: {', '.join(sorted(required))})"
    by_value: dict[str, list] = {}
    for node in nodes:
        labels = node.node.metadata.labels or {}
        if key in labels:
            by_value.setdefault(labels[key], []).append(node)
    if required:
        by_value = {v: ns for v, ns in by_value.items() if v in required}
    return [Placement(v, by_value[v]) for v in sorted(by_value)], None


def pods_count_scores(counts: list[int]) -> list[int] | None:
    """NormalizePlacementScore of PodGroupPodsCount: score x 100 / max (integer division);
    None when every count is 0 (the plugin's error)."""
    top = max(counts, default=0)
    if top == 0:
        return None
    return [c * MAX_SCORE // top for c in counts]


def bin_packing_score(
    nodes: list, extra_resources: set[str], used_sums: dict[str, Fraction] | None = None, caps: dict | None = None
) -> int:
    """PlacementBinPacking with MostAllocated, weight 1 per resource: requested / allocatable
    over the placement's nodes summed (pods already there and the proposed ones), per resource
    x 100 (integer), averaged. cpu and memory, plus the extended resources proposed pods request.
    `used_sums`: the amounts in use summed over the nodes, when not the nodes' own (a trial the
    TrialMemo knew). `caps`: the nodes' allocatable amounts summed, as far as known (filled in)."""
    scores = []
    for r in ["cpu", "memory"] + sorted(extra_resources - {"cpu", "memory", "pods"}):
        cap = caps.get(r) if caps is not None else None
        if cap is None:
            cap = sum((n.allocatable.get(r, Fraction(0)) for n in nodes), Fraction(0))
            if caps is not None:
                caps[r] = cap
        if cap <= 0:
            continue
        if used_sums is not None:
            used = used_sums.get(r, Fraction(0))
        else:
            used = sum((n.used.get(r, Fraction(0)) for n in nodes), Fraction(0))
        scores.append(int(min(used, cap) * MAX_SCORE / cap))
    return sum(scores) // len(scores) if scores else 0


@dataclass
class FirstPlacement:
    """The trial of a root PodGroup's first placement, run pod by pod, when no placement was
    feasible: kube-scheduler words its pods' messages from it (podgroup_status.placement_failure)."""

    placements: int  # how many there were
    nodes: int  # the first one's nodes
    fitted: list[str]  # pods that fitted (taken back)
    failed: dict[str, PodPlacement]  # pods tried that did not fit, each with its reasons there
    status: str  # PlacementFeasible's status where the trial stopped ("" if it did not)


@dataclass
class Outcome:
    """One evaluation of a group (or composite) in a set of nodes."""

    ok: bool
    placed: list[PodPlacement] = field(default_factory=list)  # committed, in placing order
    failed: dict[str, PodPlacement] = field(default_factory=dict)  # pods evaluated, not placed
    reason: str = ""
    lines: list[str] = field(default_factory=list)  # the explanation (per domain)
    domains: dict[str, frozenset] = field(default_factory=dict)  # leaf group -> nodes it was placed in
    new: int = 0  # pods newly placed
    assignment: list[tuple[str, str]] = field(default_factory=list)  # (pod, node) once reverted
    shortfall: dict[str, str] = field(default_factory=dict)  # failed pod -> its device shortfall
    # A trial the TrialMemo knew, not run: (random state it started from, domain state it ends in,
    # domain state it started from, the pods' kinds).
    replayed: tuple[Any, tuple, tuple, tuple] | None = None
    # A filter error ended the cycle (draopt.cluster.filter_error): the pod and its message.
    error_pod: str = ""
    error: str = ""
    tried: list[str] = field(default_factory=list)  # the pods tried, in order (a trial run pod by pod)
    first: FirstPlacement | None = None  # a root PodGroup in no placement: its first one's trial
    # A gang's PlacementFeasible status where its trial stopped, in kube-scheduler's words ("" if none)
    status: str = ""


class GroupCycle:
    """Runs the cycles of one simulation. `place(pod, allowed)` and `retract(pl)` are first-fit's
    own (draopt.cluster.firstfit.simulate): the pod's filters and scores restricted to `allowed`,
    and its exact undo."""

    def __init__(
        self,
        workload,
        cluster,
        place: PlaceFn,
        retract: RetractFn,
        pending: set[str],
        claim_allocated: Callable[[str], bool] = lambda key: False,
        memo=None,
        skipped: Callable[[int, int], None] = lambda pods, results: None,
    ):
        self.w = workload
        self.cluster = cluster
        # 1.37's gangscheduling PlacementFeasible stops a gang's trial once minCount is out of reach
        # (1.36 tries every pod; draopt stops there too, the outcome is the same, but not the words)
        self.placement_feasible = at_least(cluster.features.version, "1.37")
        self.place = place
        self.retract = retract
        self.pending = pending
        self.claim_allocated = claim_allocated
        self.by_name = {n.name: n for n in cluster.nodes}
        # draopt.scheduler.trial_memo.TrialMemo (or None): trials of placements known from earlier
        # cycles. `skipped(pods, device results)`: what first-fit does when a trial of that many
        # pods is placed and taken back, minus the placing (its caches' bookkeeping).
        self.memo = memo
        # first-fit's scheduler (draopt.scheduler.cycle) and its random state, or None: set by first-fit
        self.scheduler: Any = None
        self.rng: Any = None
        self.skipped = skipped
        # (group, placement size) -> its pending pods' kinds, whether all nodes are filtered (this cycle)
        self._kinds_of: dict[tuple[str, int], tuple] = {}
        self._caps: dict[tuple[int, ...], dict] = {}  # a placement's nodes -> allocatable summed
        # (node name, least amounts and devices) -> (node version, how many pods it could take)
        self._node_caps: dict[tuple, tuple[int, int]] = {}
        self._shared: set[str] | None = None  # claims several pods use (_shared_claims; made on first use)
        # (id(inventory), class, selectors, exact) -> (inventory, its devices they select)
        self._selected: dict[tuple, tuple] = {}

    # ---------------------------------------------------------------- which groups
    def root_of(self, group: str | None) -> tuple[str, str] | None:
        return cycle_root(self.w, group)

    def leaves(self, entity: tuple[str, str]) -> list[str]:
        kind, key = entity
        if kind == "pg":
            return [key]
        out = []
        for child in self.w.composites[key].children:
            out.extend(self.leaves(_entity(child)))
        return out

    def _pending_pods(self, group: str) -> list:
        return [self.w.pod(p) for p in self.w.groups[group].pods if p in self.pending]

    def _running(self, group: str) -> list:
        return [self.w.pod(p) for p in self.w.groups[group].pods if p not in self.pending]

    # ---------------------------------------------------------------- the cycle
    def run(self, entity: tuple[str, str]) -> Outcome:
        """RunRootSchedulingAlgorithm: the root's placements, committed when it is scheduled."""
        self._kinds_of = {}
        out = self._placement_algorithm(entity, list(self.cluster.nodes))
        if out.error:
            return out
        if out.ok and out.new == 0:
            self._revert(out)
            out = Outcome(False, failed=out.failed, reason="no pods were schedulable", lines=out.lines)
        return out

    def _placement_algorithm(self, entity: tuple[str, str], nodes: list) -> Outcome:
        kind, key = entity
        obj = self.w.groups[key] if kind == "pg" else self.w.composites[key]
        pinned = [self.by_name.get(d.node_name) for leaf in self.leaves(entity) for d in self._running(leaf)]
        placements, error = generate_placements(obj.topology_key, nodes, pinned)
        what = f"{'PodGroup' if kind == 'pg' else 'CompositePodGroup'} {key}"
        if error is not None:
            return Outcome(False, reason=error, lines=[f"{what}: {error}"])
        if not placements:
            if pinned:
                why = f"the domain of its running pods ({obj.topology_key}) is outside the parent placement"
            else:
                why = f"no node carries the topology label {obj.topology_key!r}: no feasible placements found"
            return Outcome(False, reason=why, lines=[f"{what}: {why}"])
        if len(placements) == 1:
            out = self._default(entity, placements[0])
            if not out.ok and not out.error and not placements[0].parent:
                out.reason = f"0/1 placements are available, first placement status: {out.reason}"
                out.first = self._first_trial(entity, placements[0], out, 1)
            return out
        limit = placements_to_find(len(placements), sum(len(p.nodes) for p in placements))
        feasible: list[tuple[Placement, Outcome, int, int]] = []
        failures: list[tuple[Placement, Outcome]] = []
        for placement in placements:
            out = self._default(entity, placement, replay=True)
            if out.error:  # (taken back already: the whole cycle ends)
                return out
            if out.ok:
                running = sum(len(self._running(leaf)) for leaf in self.leaves(entity))
                caps = self._caps.setdefault(tuple(n.index for n in placement.nodes), {})
                if out.replayed is not None:
                    extra = {r for d in self._pending_pods(entity[1]) for r in d.resources}
                    used = self.memo.used_sums(out.replayed[1])
                    score = bin_packing_score(placement.nodes, extra, used, caps)
                    feasible.append((placement, out, running + out.new, score))
                else:
                    extra = {r for pl in out.placed for r in self.w.pod(pl.pod).resources}
                    score = bin_packing_score(placement.nodes, extra, caps=caps)
                    feasible.append((placement, out, running + len(out.placed), score))
            else:
                failures.append((placement, out))
            self._revert(out)
            if len(feasible) >= limit:
                break
        if not feasible:
            first = failures[0][1]
            reason = f"0/{len(placements)} placements are available, first placement status: {first.reason}"
            lines = [f"{what} ({obj.topology_key}): fits in none of its {len(placements)} placements"]
            for placement, out in failures[:EXPLAIN_DOMAINS]:
                lines.extend(out.lines)
            if len(failures) > EXPLAIN_DOMAINS:
                lines.append(f"... and {len(failures) - EXPLAIN_DOMAINS} more placements")
            failed: dict[str, PodPlacement] = {}
            for _, out in failures:
                for pod, pl in out.failed.items():
                    failed.setdefault(pod, pl)
            first_trial = self._first_trial(entity, failures[0][0], failures[0][1], len(placements))
            return Outcome(False, failed=failed, reason=reason, lines=lines, first=first_trial)
        best = feasible[0]
        if len(feasible) > 1:
            counts = pods_count_scores([f[2] for f in feasible]) or [0] * len(feasible)
            totals = [
                PLACEMENT_SCORE_WEIGHTS["PodGroupPodsCount"] * c + PLACEMENT_SCORE_WEIGHTS["PlacementBinPacking"] * f[3]
                for c, f in zip(counts, feasible)
            ]
            best = feasible[max(range(len(feasible)), key=lambda i: (totals[i], -i))]
        placement, trial = best[0], best[1]
        return self._assume(trial, placement, entity)

    def _first_trial(
        self, entity: tuple[str, str], placement: Placement, trial: Outcome, n: int
    ) -> FirstPlacement | None:
        """What a root PodGroup's pods are told when none of its `n` placements is feasible: the
        trial of the first placement (kube-scheduler reports that one's per-pod results), pod by
        pod as kube-scheduler runs it (`trial` itself when it was, else again, then taken back;
        the random state kept as it was). None for a CompositePodGroup, or a trial the filter
        error or the capacity bound got wrong. A Basic group failed with every pod tried, none
        fitting: each pod's FitError (1.37 seed 236)."""
        kind, key = entity
        gang = self.w.groups.get(key) if kind == "pg" else None
        if gang is None or gang.parent is not None:
            return None
        exact = trial.replayed is None and bool(trial.status) and self.placement_feasible
        if not exact:
            saved = self.rng.getstate() if self.rng is not None else None
            trial = self._leaf_default(key, placement, exact=True)
            if saved is not None:
                self.rng.setstate(saved)
            if trial.ok or trial.error:  # (cannot happen: the same state as the first trial)
                if trial.ok:
                    self._revert(trial)
                return None
        fitted = [pod for pod, _ in trial.assignment]
        return FirstPlacement(n, len(placement.nodes), fitted, dict(trial.failed), trial.status)

    def _assume(self, trial: Outcome, placement: Placement, entity) -> Outcome:
        """assumeSubtreeWithRevert: the chosen placement's pods on the nodes found for them. For a
        trial the TrialMemo knew (not run), each pod's node is found as the trial would have found
        it: its step's node state, the trial's draws made again from the random state it started
        with (the cluster is as it was then: every trial was taken back); the random state after
        every trial is kept."""
        out = Outcome(True, failed=dict(trial.failed), domains=dict(trial.domains), new=trial.new, lines=trial.lines)
        known = trial.replayed
        if known is not None:
            rng = self.memo.rng
            after = rng.getstate()
            rng.setstate(known[0])
            at = known[2]
            for pod, kind in zip(self._pending_pods(entity[1]), known[3]):
                node, at = self.memo.choose(at, kind, placement.nodes)
                self._assume_one(out, pod.key, node.name)
            if self.memo.state(placement.nodes) != known[1]:
                raise RuntimeError(f"internal: {entity[1]} in {placement.name} differs from its remembered trial")
            rng.setstate(after)
            return out
        for pod, node in trial.assignment:
            self._assume_one(out, pod, node)
        return out

    def _assume_one(self, out: Outcome, pod: str, node: str) -> None:
        # assumeAndReserve runs no filter: the start index stays where the trials left it (not
        # moved by this one-node placement; 1.37 seed 130: the next CEL error on another node)
        start = self.scheduler.next_start if self.scheduler is not None else 0
        again = self.place(self.w.pod(pod), frozenset((node,)))
        if self.scheduler is not None:
            self.scheduler.next_start = start
        if again.placed:
            out.placed.append(again)
        else:  # cannot happen: the same state as in the trial
            raise RuntimeError(f"internal: {pod} fitted {node} in its placement's trial, not now")

    def _revert(self, out: Outcome) -> None:
        if out.placed:  # (a trial taken back already keeps its assignment)
            out.assignment = [(pl.pod, cast(str, pl.node)) for pl in out.placed]  # (placed: a node each)
        for pl in reversed(out.placed):
            self.retract(pl)
        out.placed = []

    def _default(self, entity: tuple[str, str], placement: Placement, replay: bool = False) -> Outcome:
        """One trial; `replay`: it will be taken back, so the TrialMemo may answer it instead."""
        if entity[0] == "pg":
            return self._leaf_default(entity[1], placement, replay)
        return self._composite_default(entity[1], placement)

    def _leaf_default(self, group: str, placement: Placement, replay: bool = False, exact: bool = False) -> Outcome:
        """One trial of a leaf group in a placement. `exact`: pod by pod whatever the capacity
        bound and the TrialMemo say, and on 1.36 every pod (its cycle has no PlacementFeasible)."""
        gang = self.w.groups[group]
        pods = self._pending_pods(group)
        scheduled = len(self._running(group))
        need = gang.min_count if gang.policy == "gang" else 1
        allowed = frozenset(n.name for n in placement.nodes)
        out = Outcome(False, domains={group: allowed})
        remaining = len(pods)
        stopped = None
        room = None
        memo = self.memo
        view = self._memo_view(group, pods, placement.nodes) if memo is not None and pods and not exact else None
        stops = gang.policy == "gang" and not (exact and not self.placement_feasible)
        if gang.policy == "gang" and scheduled + remaining < need:
            stopped = f"{scheduled + remaining} pods, minCount {need}"
            out.status = POD_GROUP_UNSCHEDULABLE
        elif exact:
            pass
        else:
            room = self._bound(pods, placement.nodes, view)
            # (not where a selector errs on a device there: the trial would run the filters and
            # may end the whole cycle with that error, draopt.cluster.filter_error)
            if scheduled + room < need and not self._may_err(pods, placement.nodes):
                # Not tried: the placement's free resources and devices hold fewer pods than the
                # group needs whatever the filters say (a necessary condition; the trial would
                # fail the same way).
                short = self._shortfall(pods[0], placement.nodes, view)
                if short:
                    out.shortfall[pods[0].key] = short
            else:
                room = None
        pods_to_try = [] if stopped or room is not None else pods
        if room is not None and self.scheduler is not None:
            self.scheduler.next_start %= len(placement.nodes)  # (the pods kube-scheduler would try: select_within)
        # The TrialMemo: a trial known step by step is not run (its draws are); one that runs is
        # remembered step by step (every node of the placement filtered for each pod).
        known = at = kinds = None
        if view is not None and pods_to_try and view[2] and memo.usable():
            at, kinds = view[0], view[1]
            known = memo.replay(at, kinds) if replay else None
            if known is not None:
                if self.scheduler is not None:
                    self.scheduler.next_start %= len(placement.nodes)  # (as the trial's pods would: select_within)
                start, end, results = known
                self.skipped(len(pods_to_try), results)
                out.replayed = (start, end, at, kinds)
                scheduled += len(pods_to_try)
                pods_to_try = []
        for i, pod in enumerate(pods_to_try):
            if at is not None and kinds is not None:
                memo.begin()
                pl = self.place(pod, allowed)
                at = memo.end(at, kinds[i], pl, placement.nodes)
            else:
                pl = self.place(pod, allowed)
            remaining -= 1
            if pl.error:  # the whole cycle ends here (draopt.cluster.filter_error)
                out.error_pod, out.error = pod.key, pl.error
                self._revert(out)
                return out
            out.tried.append(pod.key)
            if pl.placed:
                out.placed.append(pl)
                scheduled += 1
            else:
                out.failed[pod.key] = pl
                short = self._shortfall(pod, placement.nodes)
                if short:
                    out.shortfall[pod.key] = short
            if stops and scheduled + remaining < need:
                out.status = min_count_status(need, scheduled, remaining)
                if remaining:
                    stopped = f"minCount {need} out of reach after {i + 1} of {len(pods)} pods"
                break
        out.new = len(out.placed) if known is None else len(pods)
        out.ok = scheduled >= need if gang.policy == "gang" else out.new >= 1
        self._conclude_leaf(out, group, placement, len(pods), need, room, stopped)
        return out

    def _conclude_leaf(
        self, out: Outcome, group: str, placement: Placement, n_pods: int, need: int, room, stopped
    ) -> None:
        """A leaf's trial in words (its summary and failed pods' lines); taken back if it failed."""
        gang = self.w.groups[group]
        name = placement.name if not placement.parent else "all nodes"
        label = f"{name}" if gang.parent is None else f"{group} in {name}"
        running = f", {len(self._running(group))} running" if self._running(group) else ""
        if room is not None:
            summary = (
                f"{label}: at most {room} of {n_pods} pending pods fit, by its nodes' free resources and "
                f"devices (minCount {need}{running}; not tried pod by pod)"
            )
        else:
            summary = f"{label}: {out.new} of {n_pods} pending pods fit" + (
                f" (minCount {need}{running})" if gang.policy == "gang" else ""
            )
        if stopped:
            summary += f"; stopped: {stopped}"
        out.lines = [summary] + self._failed_lines(out.failed, out.shortfall, len(placement.nodes))
        if room is not None and out.shortfall:
            out.lines.extend(f"    {text}" for text in out.shortfall.values())
        if not out.ok:
            out.reason = (
                f"not enough capacity for the gang: {summary}"
                if gang.policy == "gang"
                else f"no pod of the group fits: {summary}"
            )
            self._revert(out)

    def _failed_lines(self, failed: dict[str, PodPlacement], shortfall: dict[str, str], n_nodes: int) -> list[str]:
        """The pods that did not fit, alike reasons together: how many, why (the reasons over
        the placement's nodes, and what their devices lack, as seen when they were tried)."""
        by_reason: dict[tuple[str, str], list[PodPlacement]] = {}
        for pl in failed.values():
            reasons = Counter({r: n for r, n in pl.reasons.items() if r != OUTSIDE})
            text = PodPlacement(pl.pod, None, reasons=reasons).reason_text(n_nodes)
            by_reason.setdefault((text, shortfall.get(pl.pod, "")), []).append(pl)
        lines = []
        for (text, short), pls in by_reason.items():
            lines.append(
                f"  {len(pls)} pod(s) do not fit ({', '.join(pl.pod for pl in pls[:3])}"
                f"{', ...' if len(pls) > 3 else ''}): {text}"
            )
            if short:
                lines.append(f"    {short}")
        return lines

    def _memo_view(self, group: str, pods: list, nodes: list) -> tuple[tuple, tuple, bool] | None:
        """What the TrialMemo knows a trial of `pods` in `nodes` by: (the placement's state, the
        pods' kinds, whether every node is filtered for each); None when it does not describe them."""
        memo = self.memo
        got = self._kinds_of.get((group, len(nodes)))
        if got is None:
            kinds = tuple(memo.kind(p) for p in pods)
            got = self._kinds_of[(group, len(nodes))] = (
                (None, False) if None in kinds else (kinds, all(memo.full_scan(p, len(nodes)) for p in pods))
            )
        kinds, scan = got
        state = memo.state(nodes) if kinds is not None else None
        if state is None:
            return None
        return state, kinds, scan

    def _bound(self, pods: list, nodes: list, view) -> int:
        """_capacity_bound, remembered by the placement's state and the pods' kinds (`view`)."""
        if view is None:
            return self._capacity_bound(pods, nodes)
        key = (view[0], view[1])
        got = self.memo.bounds.get(key)
        if got is None:
            got = self.memo.bounds[key] = self._capacity_bound(pods, nodes)
        return got

    def _capacity_bound(self, pods: list, nodes: list) -> int:
        """At most how many of `pods` the nodes could take: per node, its free amount of each
        resource over the least any of the pods requests, and its free devices of each kind of
        ExactCount request over the least count any pod asks (pods without such a request
        bound nothing); summed over the nodes. Never below the truth: shared claims, admin
        access and devices several claims may share leave devices out of the bound."""
        if not pods:
            return 0
        least: dict[str, Fraction] = {}
        for r in pods[0].resources:
            amounts = [p.resources.get(r, Fraction(0)) for p in pods]
            if min(amounts) > 0:
                least[r] = min(amounts)
        device_need: dict[tuple, int] = {}
        per_pod = [self._device_requests(p) for p in pods]
        # (not for extended resources: a node's device plugin may serve them instead of devices)
        if all(per_pod) and not any(p.extended_resources for p in pods):
            for key in set.intersection(*(set(d) for d in per_pod)):
                device_need[key] = min(d[key] for d in per_pod)
        total = 0
        # A node's answer for these least amounts and devices, kept until the node changes (its
        # version is bumped by every change on it: Cluster.bump_all for shared devices).
        known = self._node_caps
        shape = (tuple(sorted(least.items())), tuple(sorted(device_need.items())))
        for node in nodes:
            key = (node.name, shape)
            got = known.get(key)
            if got is not None and got[0] == node.version:
                cap = min(len(pods), got[1])
            else:
                cap = self._node_cap(node, least, device_need)
                known[key] = (node.version, cap)
                cap = min(len(pods), cap)
            total += cap
            if total >= len(pods):
                return len(pods)
        return total

    def _node_cap(self, node, least: dict, device_need: dict) -> int:
        """How many pods of the least amounts `least` and devices `device_need` the node could take
        (no more than the node has pods' worth of free amounts; unbounded: a large number)."""
        cap = 1 << 30
        for r, v in least.items():
            if r not in node.allocatable:
                continue
            free = node.allocatable[r] - node.used.get(r, Fraction(0))
            cap = min(cap, int(free // v) if free > 0 else 0)
        for (class_name, selectors), count in device_need.items():
            if cap == 0:
                break
            free_devices = self._free_devices(node, class_name, list(selectors), exact=True)
            if free_devices is not None:
                cap = min(cap, free_devices // count)
        return cap

    def _device_requests(self, pod) -> dict[tuple, int]:
        """The devices a pod's own pending claims ask for, by (class, selectors): ExactCount
        requests without admin access; claims other pods share are left out."""
        out: dict[tuple, int] = {}
        for use in pod.claims:
            claim = self.w.claims.get(use.key)
            if (
                claim is None
                or claim.status.allocation is not None
                or self.claim_allocated(use.key)
                or use.for_group is not None
                or use.key in self._shared_claims()
            ):
                continue
            for request in claim.spec.devices.requests:
                exact = request.exactly
                if exact is None or (exact.allocation_mode or "ExactCount") != "ExactCount" or exact.admin_access:
                    continue
                key = (
                    exact.device_class_name,
                    tuple(sel.cel.expression for sel in (exact.selectors or []) if sel.cel is not None),
                )
                out[key] = out.get(key, 0) + (exact.count or 1)
        return out

    def _shared_claims(self) -> set[str]:
        got = self._shared
        if got is None:
            seen: dict[str, str] = {}
            got = set()
            for d in list(self.w.pending) + list(self.w.running):
                for use in d.claims:
                    if seen.setdefault(use.key, d.key) != d.key:
                        got.add(use.key)
            self._shared = got
        return got

    def _shortfall(self, pod, nodes: list, view=None) -> str:
        """For a pod whose claims found no devices: how many devices each pending claim asks for
        (ExactCount requests), and the most free devices of that class any one node of the
        placement has now ("needs 8 devices of class gpu.nvidia.com on one node, best node has 5")."""
        parts = []
        for use in pod.claims:
            claim = self.w.claims.get(use.key)
            if claim is None or claim.status.allocation is not None or self.claim_allocated(use.key):
                continue
            for request in claim.spec.devices.requests:
                exact = request.exactly
                if exact is None or (exact.allocation_mode or "ExactCount") != "ExactCount":
                    continue
                count = exact.count or 1
                own = [sel.cel.expression for sel in (exact.selectors or []) if sel.cel is not None]
                best = self._best_free(nodes, exact.device_class_name, own, view)
                if best < count:
                    parts.append(
                        f"request {request.name} of {use.key} needs {count} device(s) of class "
                        f"{exact.device_class_name} on one node, best node has {best} free"
                    )
        return "; ".join(parts)

    def _best_free(self, nodes: list, class_name: str, own: list[str], view) -> int:
        """The most free devices of the class and selectors on one of the nodes; remembered by the
        placement's state (`view`, a TrialMemo's) when there is one."""
        key = (view[0], class_name, tuple(own)) if view is not None else None
        got = self.memo.best_free.get(key) if key is not None else None
        if got is None:
            got = max((self._free_devices(node, class_name, own) or 0 for node in nodes), default=0)
            if key is not None:
                self.memo.best_free[key] = got
        return got

    def _free_devices(self, node, class_name: str, own: list[str], exact: bool = False) -> int | None:
        """Devices of the node's inventory the class and the request's selectors select and no
        claim holds. `exact` (a bound that must never be too low): None when a device of the node
        may be shared by several claims (its being held does not make it unavailable)."""
        inv = self.cluster.inventory(node)
        if exact and any(entry.multi_allocatable for entry in inv.devices):
            return None
        # The devices a (class, selectors) selects do not change: found once per inventory.
        memo = self._selected
        key = (id(inv), class_name, tuple(own), exact)
        got = memo.get(key)
        if got is None or got[0] is not inv:
            cls = self.cluster.classes.get(class_name)
            exprs = [
                sel.cel.expression for sel in (cls.spec.selectors if cls is not None else []) if sel.cel is not None
            ] + list(own)
            chosen = []
            erring = False
            for entry in inv.devices:
                try:
                    if all(self.cluster.cel_env.compile(e).matches(entry.cel) for e in exprs):
                        chosen.append(entry.id)
                except Exception:  # a selector that errors on this device: counted when bounding
                    erring = True
                    if exact:
                        chosen.append(entry.id)
            got = memo[key] = (inv, chosen, erring)
        holds = self.cluster.allocated.holds
        return sum(1 for did in got[1] if not holds(did))

    def _may_err(self, pods: list, nodes: list) -> bool:
        """A selector of the pods' device requests errs on some device of the nodes (as
        _free_devices evaluates them: the class's and the request's, for the requests it bounds)."""
        for pod in pods:
            for class_name, selectors in self._device_requests(pod):
                for node in nodes:
                    self._free_devices(node, class_name, list(selectors), exact=True)
                    key = (id(self.cluster.inventory(node)), class_name, tuple(selectors), True)
                    if self._selected[key][2]:
                        return True
        return False

    def _composite_default(self, key: str, placement: Placement) -> Outcome:
        comp = self.w.composites[key]
        need = comp.min_group_count if comp.policy == "gang" else 1
        out = Outcome(False)
        children = list(comp.children)
        remaining = len(children)
        scheduled = 0
        name = placement.name if not placement.parent else "all nodes"
        out.lines = [f"CompositePodGroup {key} in {name}:"]
        if comp.policy != "gang" or remaining >= need:
            for child in children:
                entity = _entity(child)
                sub = self._placement_algorithm(entity, placement.nodes)
                if sub.error:
                    self._revert(out)
                    return Outcome(False, error_pod=sub.error_pod, error=sub.error)
                remaining -= 1
                out.lines.extend("  " + line for line in sub.lines)
                out.failed.update(sub.failed)
                if sub.ok:
                    scheduled += 1
                    out.placed.extend(sub.placed)
                    out.domains.update(sub.domains)
                    out.new += sub.new
                if comp.policy == "gang" and scheduled + remaining < need:
                    break
        out.ok = scheduled >= need
        out.lines[0] += f" {scheduled} of {len(children)} child groups scheduled" + (
            f" (minGroupCount {need})" if comp.policy == "gang" else ""
        )
        if not out.ok:
            out.reason = (
                f"CompositePodGroup {key}: {scheduled} of {len(children)} child groups scheduled, {need} needed"
            )
            self._revert(out)
        return out


def needs_group_cycles(workload) -> bool:
    """Some group is placed by a pod-group cycle with placements (a topology constraint, or a
    CompositePodGroup tree)."""
    return bool(getattr(workload, "composites", None)) or any(
        g.topology_key is not None for g in workload.groups.values()
    )


def run_group_cycle(
    cycles: GroupCycle, root: tuple[str, str], group_domain: dict[str, frozenset], failed_groups: set[str], n_nodes: int
) -> dict[str, PodPlacement]:
    """One root's cycle, as first-fit records it: every pending pod of its leaves gets its
    placement; a leaf that was scheduled is bound to its placement's nodes (`group_domain`: its
    pods that did not fit are tried there again later), one that was not joins `failed_groups`
    and its pods carry the group's reason and the per-domain explanation."""
    out = cycles.run(root)
    if out.error:
        return _errored(cycles, root, out, failed_groups)
    placed = {pl.pod: pl for pl in out.placed}
    scheduled = set(out.domains) if out.ok else set()
    explanation = "\n".join(out.lines)
    results: dict[str, PodPlacement] = {}
    first: str | None = None
    for leaf in cycles.leaves(root):
        pods = cycles._pending_pods(leaf)
        if leaf in scheduled:
            group_domain[leaf] = out.domains[leaf]
            for d in pods:
                pl = placed.get(d.key) or out.failed.get(d.key)
                if pl is None:
                    pl = PodPlacement(d.key, None, d.priority, d.group)
                    pl.reasons[f"pod group {leaf}: not evaluated in its placement"] = n_nodes
                results[d.key] = pl
            continue
        failed_groups.add(leaf)
        reason = out.reason if not out.ok else "not scheduled within its CompositePodGroup's placement"
        words = placement_failure(out.first, pods, cycles.placement_feasible) if out.first is not None else {}
        for d in pods:
            pl = PodPlacement(d.key, None, d.priority, d.group)
            pl.reasons[f"pod group {leaf} not scheduled: {reason}"] = n_nodes
            # The explanation once per root, on its first pod; the others point to it.
            pl.explanation = explanation if first is None else f"(as for {first})"
            first = first or d.key
            if d.key in words:
                pl.message, pl.group_fitted = words[d.key]
            results[d.key] = pl
    return results


def _errored(cycles: GroupCycle, root: tuple[str, str], out: Outcome, failed_groups: set[str]) -> dict:
    """A cycle a filter error ended: the failing pod keeps its error, every other pending pod of
    the root gets the group's (schedule_one_podgroup.go)."""
    results = {}
    for leaf in cycles.leaves(root):
        failed_groups.add(leaf)
        for d in cycles._pending_pods(leaf):
            error = out.error if d.key == out.error_pod else group_member_error(out.error)
            results[d.key] = PodPlacement(d.key, None, d.priority, d.group, error=error)
    return results


def _entity(child: tuple[str, str]) -> tuple[str, str]:
    return ("pg" if child[0] == "PodGroup" else "cpg", child[1])


__all__ = [
    "GroupCycle",
    "Outcome",
    "needs_group_cycles",
    "run_group_cycle",
    "cycle_root",
    "chain_of",
    "running_pods",
    "Placement",
    "OUTSIDE",
    "generate_placements",
    "pods_count_scores",
    "bin_packing_score",
    "percentage_of_placements_to_score",
    "placements_to_find",
]
