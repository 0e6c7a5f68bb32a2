"""What a placement policy returns, and how it is printed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from draopt.kube.admission import SCHEDULER_ERROR, Hold
from draopt.kube.models import AllocationResult


@dataclass
class PodPlacement:
    pod: str  # namespace/name
    node: str | None  # None: not placed
    priority: int = 0
    group: str | None = None
    new_claims: dict[str, AllocationResult] = field(default_factory=dict)  # claims this pod allocated
    reasons: Counter = field(default_factory=Counter)  # why nodes were rejected
    prioritized_score: int = 0
    explanation: str = ""  # device-level, when it failed
    nominated_node: str | None = None  # set by preemption: the node its victims were evicted from
    # nodes earlier preemptions nominated it to (it waited its back-off there, then was tried again
    # and placed elsewhere or preempted again): their victims are its too
    nominated_before: tuple[str, ...] = ()
    preemption: str = ""  # why preemption did or did not help (PostFilter's message)
    # kube-scheduler's PodScheduled message where it is not the FitError's and PostFilter's (the
    # members of a PodGroup whose pod-group cycle failed: draopt.cluster.podgroup_status); ""
    # where it writes none (a pod it never tries: another scheduler's, a group never popped)
    message: str | None = None
    skipped: bool = False  # never tried (a pending pod being deleted: skipPodSchedule)
    # The scheduling attempt ended with a Filter plugin's error (draopt.cluster.filter_error):
    # kube-scheduler's message (condition reason SchedulerError); no node reasons, no PostFilter.
    error: str = ""
    hold: Hold | None = None  # kube-scheduler keeps the pod out of its queue: never placed
    # The nodes of the pod group's placement it was tried in (0: every node): kube-scheduler's
    # FitError counts the snapshot's nodes, the placement's only (NumNodesInPlacement).
    placement_nodes: int = 0
    # It fitted in its pod group's trial, taken back with the group (a root PodGroup in no
    # placement): kube-scheduler 1.37 adds the PodGroupPostFilter's words to its message.
    group_fitted: bool = False

    @property
    def placed(self) -> bool:
        return self.node is not None

    def reason_text(self, n_nodes: int) -> str:
        if self.hold is not None:
            return self.hold.text
        if self.error:
            return self.error
        if not self.reasons:
            return ""
        return f"0/{self.placement_nodes or n_nodes} nodes are available: {reason_histogram(self.reasons)}"

    def condition_message(self, n_nodes: int) -> str:
        """The PodScheduled message kube-scheduler would write for this unplaced pod: the FitError's
        node reasons ending in '.', then the PostFilter's (preemption) message; or the pod-group
        cycle's own message."""
        if self.skipped:
            return ""  # (never tried: no PodScheduled condition)
        if self.hold is not None:
            # outside the queue, in the oracle's words: the reason SchedulingGated, or the
            # PreEnqueue plugin that holds it; a gated pod group's other pods: no condition
            if self.hold.group:
                return ""
            if self.hold.condition_reason == SCHEDULER_ERROR:
                return self.hold.message  # (validatePodGroup's error, the pods' message)
            return self.hold.condition_reason or f"waiting at PreEnqueue plugin {self.hold.plugin}"
        if self.error:
            return self.error
        if self.message is not None:
            return self.message
        return fit_error_message(self.reason_text(n_nodes)) + (f" {self.preemption}" if self.preemption else "")


def fit_error_message(reason_text: str) -> str:
    """A FitError's text ends in '.' (framework.FitError.Error)."""
    return reason_text + "." if reason_text and not reason_text.endswith(".") else reason_text


def waiting_placements(workload) -> list[PodPlacement]:
    """The pods kube-scheduler keeps out of its queue (Workload.waiting), as every policy reports
    them: not placed, with the reason."""
    return [PodPlacement(d.key, None, d.priority, d.group, hold=d.hold) for d in workload.waiting]


def reason_histogram(reasons: Counter) -> str:
    """The reasons and how many nodes gave each, as the scheduler's FitError lists them: the
    texts "<count> <reason>" in byte order ("1 b, 2 a"; "10 x" before "2 y")."""
    return ", ".join(sorted(f"{n} {r}" for r, n in reasons.items()))


@dataclass
class FirstFitStats(Mapping[str, Any]):
    """First-fit's figures for one run (`PlacementResult.stats` of the first-fit policy). Read as
    a mapping, it has the keys the result's stats have always had (`to_dict`: the CLI's `--stats`
    and `-o json` lines): a field that is None is left out, as a key that was never set, and the
    keys come in the order they were always set in."""

    solve_s: float  # wall seconds of simulate(), rounded to the millisecond
    pods_per_s: float | None  # pending pods per second of solve_s (None: solve_s was 0)
    scheduler: str  # the profile's source (draopt.scheduler.SchedulerConfig), or builtin:name-order
    evicted: int | None = None  # running pods preemption evicted (None: none)
    evicted_by_priority: dict[int, int] | None = None  # evicted pods by priority, ascending
    tie_break: str | None = None  # with a scheduler: how ties were broken (name, random (seed n), ...)
    nodes: int | None = None  # nodes in the cluster (set by draopt.placement.place)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"solve_s": self.solve_s, "pods_per_s": self.pods_per_s, "scheduler": self.scheduler}
        for key in ("evicted", "evicted_by_priority", "tie_break", "nodes"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


@dataclass
class PlacementResult:
    policy: str
    pods: list[PodPlacement]
    claims: dict[str, tuple[AllocationResult, str]]  # claim key -> (allocation, node)
    # first-fit: its FirstFitStats; optimal: SolverStats.to_dict() and what placement adds to it
    stats: FirstFitStats | dict[str, Any] = field(default_factory=dict)
    # Running pods preemption evicted (draopt.cluster.evictions.Eviction), and the claims that were
    # deallocated because their last pod was evicted.
    evictions: list[Any] = field(default_factory=list)
    deallocated: list[str] = field(default_factory=list)

    @property
    def optimal_stats(self) -> dict[str, Any]:
        """`stats` of an optimal (or hint) result, which its steps add keys to; first-fit's is a
        FirstFitStats."""
        stats = self.stats
        assert isinstance(stats, dict), "first-fit's stats are a FirstFitStats"
        return stats

    def placed_pods(self) -> list[PodPlacement]:
        return [p for p in self.pods if p.placed]

    def weighted_placed(self) -> int:
        return sum(weight(p.priority) for p in self.pods if p.placed)

    def devices_used(self) -> int:
        return sum(len(a.devices.results) for a, _ in self.claims.values())

    def nodes_used(self) -> int:
        return len({p.node for p in self.pods if p.placed})

    def summary(self) -> PlacementSummary:
        """The placement in figures (`PlacementSummary`; `.to_dict()` as the CLI prints it)."""
        waiting = sum(1 for p in self.pods if p.hold is not None)
        return PlacementSummary(
            policy=self.policy,
            pods=len(self.pods),
            placed=len(self.placed_pods()),
            weighted_placed=self.weighted_placed(),
            devices_used=self.devices_used(),
            nodes_used=self.nodes_used(),
            evicted=len(self.evictions) if self.evictions else None,
            waiting=waiting or None,
            stats=dict(self.stats),
        )


@dataclass
class PlacementSummary:
    """A placement in figures: what `PlacementResult.summary()` returns."""

    policy: str  # first-fit or optimal
    pods: int  # pending pods, placed or not
    placed: int  # pods placed
    weighted_placed: int  # placed pods weighted by priority (`weight`): the optimal model's objective
    devices_used: int  # devices allocated to the placed pods' new claims
    nodes_used: int  # nodes with a placed pod
    evicted: int | None = None  # running pods preemption evicted (None: none)
    waiting: int | None = None  # pods kube-scheduler keeps out of its queue: no policy places them
    # The policy's own figures, `PlacementResult.stats`: first-fit's scheduler profile and tie
    # break; optimal's model size, phase times, status, gap and proofs in words
    # (draopt.placement.solver_stats.SolverStats documents each).
    stats: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """One flat dict, as `draopt place -o json` prints it on stderr (the stats' keys last,
        over the counts of the same name)."""
        out: dict[str, Any] = {
            "policy": self.policy,
            "pods": self.pods,
            "placed": self.placed,
            "weighted_placed": self.weighted_placed,
            "devices_used": self.devices_used,
            "nodes_used": self.nodes_used,
        }
        if self.evicted is not None:
            out["evicted"] = self.evicted
        if self.waiting is not None:
            out["waiting"] = self.waiting  # (outside the scheduling queue: no policy places them)
        out.update(self.stats)
        return out


def weight(priority: int) -> int:
    """Objective weight of one placed pod: higher priority counts more; never below 1."""
    return max(1, 1 + priority)
