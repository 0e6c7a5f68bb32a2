"""When each difference of a crosscheck report happened, in kube-scheduler's order of scheduling
attempts (`report.kubernetes_attempts`), and which differences come after the scenario's first
divergence: the first difference that leaves the two clusters in different states.

A difference at or before the first divergence has to be explained by a cause of its own
(tests/crosscheck_record.py); only a difference of a pod tried after it may be put down to the
clusters being apart ("after-a-placement-difference").
"""

from __future__ import annotations

from dataclasses import dataclass

# the kinds of difference after which the clusters are no longer in the same state: a pod bound
# elsewhere or not at all, a pod evicted by one side only, a nominated node (its requests held
# there), devices allocated otherwise
STATE_KINDS = ("node", "pending", "eviction", "device", "nominated")


@dataclass(frozen=True)
class Timeline:
    """Positions in kube-scheduler's attempt order: `times` pod -> its attempts' positions (a pod
    kube-scheduler never tried: the position draopt's queue order gives it, half a step after the
    pod before it), and `first_divergence` (None: no state difference)."""

    times: dict[str, tuple[float, ...]]
    first_divergence: float | None

    def when(self, d, report) -> tuple[float, ...]:
        """The positions of the attempts a difference belongs to: its pod's; a claim's users';
        an eviction's victim's and its preemptors' (either side's)."""
        if d.kind == "device":
            pods = list((getattr(report, "claim_users", None) or {}).get(d.subject, []))
        elif d.kind == "eviction":
            pods = [d.subject, *_preemptor_pods(d.subject, report)]
        else:
            pods = [d.subject]
        return tuple(sorted(t for p in pods for t in self.times.get(p, ())))

    def is_first_divergence(self, d, report) -> bool:
        when = self.when(d, report)
        return d.kind in STATE_KINDS and bool(when) and when[0] == self.first_divergence

    def after_first_divergence(self, d, report) -> bool:
        """The difference's pod was tried (again) after the first divergence, and is not part of
        it: its answer may follow from the clusters' different states."""
        if self.first_divergence is None or self.is_first_divergence(d, report):
            return False
        when = self.when(d, report)
        return bool(when) and when[-1] > self.first_divergence


def timeline(report) -> Timeline:
    times = _attempt_times(report)
    line = Timeline(times, None)
    starts = [w[0] for d in report.differences if d.kind in STATE_KINDS and (w := line.when(d, report))]
    return Timeline(times, min(starts) if starts else None)


def _attempt_times(report) -> dict[str, tuple[float, ...]]:
    """pod -> positions of its attempts in kube-scheduler's order; the pods it never tried (or every
    pod, where the oracle gave no attempts) take their place in draopt's order (report.pods)."""
    attempts = getattr(report, "kubernetes_attempts", None) or []
    if not attempts:
        return {row.pod: (float(i),) for i, row in enumerate(report.pods)}
    times: dict[str, list[float]] = {}
    for i, a in enumerate(attempts):
        times.setdefault(a["pod"], []).append(float(i))
    last = -1.0
    for row in report.pods:
        if row.pod in times:
            last = times[row.pod][0]
        else:
            times[row.pod] = [last + 0.5]
    return {p: tuple(t) for p, t in times.items()}


def _preemptor_pods(victim: str, report) -> list[str]:
    """The pods whose preemption evicted `victim`, on either side (a PodGroup preemptor: its pods)."""
    preemptors = (getattr(report, "evicted_by", None) or {}).get(victim, [])
    out = []
    for who in preemptors:
        members = [row.pod for row in report.pods if row.group == who]
        out += members or [who]
    return out
