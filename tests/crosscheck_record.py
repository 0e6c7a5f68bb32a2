"""What the differential tests against Kubernetes' own code ran and found, for the summary at the
end of the run (tests/conftest.py) and $DRAOPT_CROSSCHECK_REPORT; and which documented cause
(docs/differences.md) explains a difference.

Each rule in EXPLAINED names its section of docs/differences.md. A difference no rule explains is
put down to an earlier one ("after-a-placement-difference") only when its pod was tried after the
scenario's first divergence, in kube-scheduler's order (tests/crosscheck_order.py); the first
divergence itself needs a rule of its own. What is left fails its test with both answers, unless
it is on the committed list of first divergences not traced yet (tests/crosscheck_untraced.py),
counted as "untraced"."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from crosscheck_order import timeline
from crosscheck_untraced import UNTRACED


def _message_tail(text: str) -> str:
    return text.split("\n", 1)[0]


def _row(report, subject: str):
    return next((p for p in report.pods if p.pod == subject), None)


# A PodGroup member's difference: the causes traced and not fixed (docs/differences.md, each its
# own section), then the groups whose differences are not traced yet, listed one by one
# (pod-group-untraced).
_MANY_PLACEMENTS = re.compile(r"\b0/([2-9]|\d\d+) placements are available")
_FIT_ERROR_NODES = re.compile(r"0/(\d+) nodes are available: ")
UNTRACED_GROUP_DIFFERENCES = Path(__file__).resolve().parent / "data" / "crosscheck" / "pod-group-untraced.txt"


def _members(report, group: str) -> list:
    return [p for p in report.pods if p.group == group]


def _first_placement_drawn(members: list, d=None) -> bool:
    """A root PodGroup in none of its several placements: kube-scheduler reports the first it tried,
    and it takes them in Go map order (GeneratePlacements), a draw of each run. A basic group's
    pods keep their FitErrors over that placement's nodes: counted over other nodes on each side
    (`d`, a reason difference), the other placement."""
    if any(_MANY_PLACEMENTS.search(p.draopt_message) or _MANY_PLACEMENTS.search(p.kubernetes_message) for p in members):
        return True
    counts = [_FIT_ERROR_NODES.match(text) for text in (d.draopt, d.kubernetes)] if d is not None else []
    return len(counts) == 2 and all(counts) and counts[0].group(1) != counts[1].group(1)


def _outcomes_permuted(members: list) -> bool:
    """The group's pods got the same nodes and messages on both sides, given to other pods."""

    def outcomes(side: str) -> list[tuple[str, str]]:
        got = []
        for p in members:
            node = getattr(p, f"{side}_node")
            got.append((node, "" if node else getattr(p, f"{side}_message")))
        return sorted(got)

    return outcomes("draopt") == outcomes("kubernetes")


def _topology_group_preemption(members: list) -> bool:
    """draopt does not model the preemption of a PodGroup with a topology constraint (it says so)."""
    return any("not modelled for a group with topology constraints" in p.draopt_message for p in members)


# the oracle's words for a pod a PreEnqueue plugin holds (no PodScheduled condition in a cluster)
_GANG_PREENQUEUE = "waiting at PreEnqueue plugin GangScheduling"


def _preemptor_short_of_kept_claims(row, report) -> bool:
    """A PodGroup's pod kube-scheduler nominated (its group evicted for it) and then left pending for
    want of devices, which draopt placed: the oracle keeps the victims' claims allocated (1.37
    seeds 63 and 101: the victim's claim `dev`, the preemptor's devices on that node)."""
    nominated = any(a["pod"] == row.pod and a.get("nominatedNode") for a in _attempts(report))
    evicted_for = {p for preemptors in (getattr(report, "evicted_by", None) or {}).values() for p in preemptors}
    return (
        nominated
        and bool(evicted_for & {row.pod, row.group})
        and "cannot allocate all claims" in row.kubernetes_message
    )


def _fingerprint(report) -> str:
    """The scenario, by its pending pods and their groups (in input order)."""
    import hashlib

    text = "\n".join(f"{p.pod} {p.group}" for p in report.pods)
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def untraced_key(group: str, report) -> str:
    """The key of a PodGroup with untraced differences in UNTRACED_GROUP_DIFFERENCES: the group in
    its scenario (not the pod: which of its members differ changes from one run of the oracle to
    the next, docs/differences.md pod-group-untraced)."""
    return f"{report.kubernetes_version} {_fingerprint(report)} {group}"


_UNTRACED: set[str] | None = None


def _untraced() -> set[str]:
    global _UNTRACED
    if _UNTRACED is None:
        lines = UNTRACED_GROUP_DIFFERENCES.read_text().splitlines() if UNTRACED_GROUP_DIFFERENCES.exists() else []
        # (a line: release fingerprint group [# seed]; '#' starts a comment)
        _UNTRACED = {line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()}
    return _UNTRACED


def _pod_group(d, report) -> str | None:
    """A PodGroup member's difference: its traced cause (docs/differences.md), or
    pod-group-untraced where it is one of the differences listed one by one; None otherwise."""
    row = _row(report, d.subject)
    if row is None or not row.group:
        return None
    members = _members(report, row.group)
    if d.kind == "pending" and d.draopt != "pending" and _preemptor_short_of_kept_claims(row, report):
        return "victim-claims-kept-by-the-oracle"
    if d.kind == "reason" and {d.draopt, d.kubernetes} == {"", _GANG_PREENQUEUE}:
        return "pod-group-preenqueue-drawn"
    if d.kind == "reason" and _first_placement_drawn(members, d):
        return "pod-group-first-placement-drawn"
    if _topology_group_preemption(members):
        return "topology-group-preemption"
    if report.kubernetes_version == "1.36" and _outcomes_permuted(members):
        return "release-1.36-pod-group-order"
    if untraced_key(row.group, report) in _untraced():
        return "pod-group-untraced"
    return None


# 1.36's DynamicResources PostFilter adds its own words before DefaultPreemption's (1.37 does not)
_RELEASE_136_POSTFILTER = ("still not schedulable, ", "no new claims to deallocate, ")


def _node_reasons(head: str) -> list[str]:
    return sorted(head.split(" nodes are available: ", 1)[-1].rstrip(".").split(", "))


def _reason_cause(d, report) -> str | None:
    """The documented cause of a difference in the message of a pod both leave pending."""
    if d.kind != "reason":
        return None
    ours, theirs = _message_tail(d.draopt), _message_tail(d.kubernetes)
    if theirs == "no nodes available to schedule pods" and "no Node objects in the input" in ours:
        return "no-nodes-wording"
    if "does not exist" in theirs and "could not retrieve device class" in ours:
        return "dra-prefilter-wording"  # a missing DeviceClass: PreFilter's message, once for all nodes
    causes = []
    for words in _RELEASE_136_POSTFILTER:
        if (words in theirs) != (words in ours):
            causes.append("release-1.36-dynamicresources-postfilter")
        theirs, ours = theirs.replace(words, ""), ours.replace(words, "")
    if ours == theirs:
        return causes[0] if causes else None
    head_a, _, tail_a = ours.partition(" preemption: ")
    head_b, _, tail_b = theirs.partition(" preemption: ")
    if _node_reasons(head_a) != _node_reasons(head_b):
        # (all-insufficient-resources is fixed: every resource a node lacks is counted on both
        # sides; nodes' reasons counted apart are a state's, below)
        return None
    if tail_a != tail_b:
        causes.append("preemption-victims-placed-in-this-run")
    return causes[-1] if causes else None


def _gang_in_scenario(report) -> bool:
    return any(p.group for p in report.pods)


def _extended_prebind(d, report) -> bool:
    """kube-scheduler's PreBind fails for the pod (extended resources a device plugin serves next
    to claims of its own): draopt places it."""
    pod = next((p for p in report.pods if p.pod == d.subject), None)
    return pod is not None and "nil or empty request mappings" in pod.kubernetes_message


def _attempts(report) -> list[dict]:
    return getattr(report, "kubernetes_attempts", None) or []


def _waiting_preemptors(report) -> list[tuple[str, set[str]]]:
    """kube-scheduler's preempting attempts that other pods' attempts followed before the
    preemptor's next one: (preemptor, the pods tried in between)."""
    attempts = _attempts(report)
    out = []
    for i, a in enumerate(attempts):
        if not a.get("nominatedNode"):
            continue
        j = next((k for k in range(i + 1, len(attempts)) if attempts[k]["pod"] == a["pod"]), len(attempts))
        between = {b["pod"] for b in attempts[i + 1 : j]}
        if between:
            out.append((a["pod"], between))
    return out


def _preemptor_retried_later(d, report) -> bool:
    """kube-scheduler tried a preemptor again only after other pods (its back-off): the preemptor
    itself, or a pod tried while it waited, placed or evicted otherwise. draopt places a preemptor
    at once on its nominated node."""
    if d.kind not in ("node", "pending", "nominated", "eviction"):
        return False
    return any(d.subject == pod or d.subject in between for pod, between in _waiting_preemptors(report))


def _retried_after_events(d, report) -> bool:
    """kube-scheduler tried the pod again after a later event (no preemption of its own): placed
    then where draopt, trying it once, left it pending; or left pending with a message draopt's
    one attempt matches at kube-scheduler's first."""
    tries = [a for a in _attempts(report) if a["pod"] == d.subject]
    if len(tries) < 2 or any(a.get("nominatedNode") for a in tries):
        return False
    if d.kind == "pending":
        return d.draopt == "pending" and bool(tries[-1].get("node"))
    if d.kind == "reason":
        return _message_tail(d.draopt) == _message_tail(tries[0].get("message", ""))
    return False


def _victim_placed_in_this_run(d, report) -> bool:
    """A pod kube-scheduler bound in this run and then evicted for a preemptor; draopt's preemption
    takes its victims from the input's running pods only, so it keeps it."""
    return (
        d.kind == "eviction"
        and d.kubernetes == "evicted"
        and any(a["pod"] == d.subject and a.get("node") for a in _attempts(report))
    )


def _pod_group_claim(d, report) -> str | None:
    """Another device for a claim whose pods are all PodGroup members (placed alike): the pod-group
    cycle's answer, as for its pods' placements (which devices kube-scheduler's 1.36 gang cycle gives
    varies between runs of the oracle, so no list of them holds: 1.36 seed 202)."""
    users = (getattr(report, "claim_users", None) or {}).get(d.subject, [])
    rows = [_row(report, u) for u in users]
    if d.kind == "device" and rows and all(r is not None and r.group for r in rows):
        return "pod-group-cycle"
    return None


_LIVELOCK_PODS = "pods still retried: "


def _starved_in_oracle_livelock(d, report) -> bool:
    """A pod draopt placed that kube-scheduler never tried: the oracle stopped the run as a
    livelock (pods of higher priority failing and retried at once, the oracle's clock stepped past
    every back-off) with the pod still in its queue (its note names it)."""
    if d.kind != "pending" or d.draopt == "pending" or any(a["pod"] == d.subject for a in _attempts(report)):
        return False
    return _still_retried_in_livelock(d.subject, report)


def _still_retried_in_livelock(pod: str, report) -> bool:
    """The oracle stopped the run as a livelock with `pod` still in its queue (its note names it)."""
    for note in getattr(report, "notes", None) or []:
        _, found, pods = note.partition(_LIVELOCK_PODS)
        if found and pod in pods.split(")", 1)[0].split(", "):
            return True
    return False


def _errored_then_starved_in_oracle_livelock(d, report) -> bool:
    """A pod whose one attempt in kube-scheduler ended with a filter error (a Filter plugin's Error
    status: the pod goes to back-off), never tried again before the oracle stopped the run as a
    livelock with the pod still queued (pods cycling in the active queue, which the oracle only
    leaves for its back-off queue once empty); draopt retried it, as a cluster does once its
    back-off of a second is over, and placed it or left it pending with another message."""
    tries = [a for a in _attempts(report) if a["pod"] == d.subject]
    if len(tries) != 1 or tries[0].get("node") or not _is_filter_error(tries[0].get("message", "")):
        return False
    if d.kind == "pending":
        placed_by_draopt_only = d.draopt != "pending" and d.kubernetes == "pending"
        return placed_by_draopt_only and _still_retried_in_livelock(d.subject, report)
    if d.kind == "reason":
        return d.kubernetes == tries[0]["message"] and _still_retried_in_livelock(d.subject, report)
    return False


def _is_filter_error(message: str) -> bool:
    """kube-scheduler's message for a Filter plugin's Error status (`running "X" filter plugin: ...`)."""
    return message.startswith('running "') and '" filter plugin: ' in _message_tail(message)


def _batching_hint(d, report) -> bool:
    """kube-scheduler bound the pod on the node OpportunisticBatching offered it (the next best node
    of the previous pod's scores, within 500 ms of the wall clock); draopt scores every pod."""
    return d.kind == "node" and any(
        a["pod"] == d.subject and a.get("node") == d.kubernetes and a.get("hinted") for a in _attempts(report)
    )


def _victim_claims_kept(d, report) -> bool:
    """Another device for a claim of a pod that preempted in kube-scheduler, or such a pod placed by
    kube-scheduler that draopt's devices left pending: the oracle runs no ResourceClaim controller,
    so its victims' claims stay allocated (a cluster deallocates them)."""
    preemptors = {a["pod"] for a in _attempts(report) if a.get("nominatedNode")}
    if d.kind == "pending" and d.subject in preemptors and d.draopt == "pending":
        row = _row(report, d.subject)
        return row is not None and any(
            words in row.draopt_message for words in ("cannot allocate all claims", "node-allocatable resources")
        )
    if d.kind != "device":
        return False
    users = (getattr(report, "claim_users", None) or {}).get(d.subject, [])
    return any(u in preemptors for u in users) or any(_after_preemption_on_its_node(u, report) for u in users)


def _after_preemption_on_its_node(pod: str, report) -> bool:
    """kube-scheduler placed `pod` on a node where an earlier attempt's preemption evicted pods: their
    claims, kept by the oracle, hold devices draopt frees (1.36 seed 37: `ml/pod-6` after
    `ml/pod-23` evicted `team-a/batch-8-w9khb` from node-4, whose gpu-4 draopt gives it)."""
    nominated: set[str] = set()
    for a in _attempts(report):
        if a["pod"] == pod and a.get("node"):
            return a["node"] in nominated
        if a.get("nominatedNode"):
            nominated.add(a["nominatedNode"])
    return False


# cause (the heading of its section in docs/differences.md) -> does it explain this difference?
# Rules are tried in order; the first that matches names the cause.
EXPLAINED: dict[str, Callable[[Any, Any], Any]] = {
    "pod-group-cycle": _pod_group,
    "pod-group-claim": _pod_group_claim,  # (returns pod-group-cycle, the section it belongs to)
    "extended-resources-prebind": _extended_prebind,
    "victim-claims-kept-by-the-oracle": _victim_claims_kept,
    "opportunistic-batching-hint": _batching_hint,
    "starved-in-an-oracle-livelock": _starved_in_oracle_livelock,
    "errored-then-starved-in-an-oracle-livelock": _errored_then_starved_in_oracle_livelock,
    "preemption-victims-placed-in-this-run": _victim_placed_in_this_run,
    "preemptor-retried-after-the-queue": _preemptor_retried_later,
    "retried-after-cluster-events": _retried_after_events,
    "reason": _reason_cause,  # (returns the cause's name itself)
}


AFTER_A_DIVERGENCE = "after-a-placement-difference"
# A scenario still unexplained after ORACLE_RUNS runs of the oracle, which placed its pods
# differently in two of them: kube-scheduler's own answer is not one answer there.
ORACLE_UNSTEADY = "oracle-unsteady"


def kubernetes_placements(report) -> dict[str, str]:
    """Where kube-scheduler put each pod in one run ("" pending), to compare two runs."""
    return {p.pod: p.kubernetes_node for p in report.pods}


def explained_by(difference, report) -> str | None:
    """The cause of a difference: the first rule of EXPLAINED that matches; else, for the pod of a
    difference tried after the scenario's first divergence, AFTER_A_DIVERGENCE; else None."""
    for cause, rule in EXPLAINED.items():
        got = rule(difference, report)
        if got:
            return got if isinstance(got, str) else cause
    if timeline(report).after_first_divergence(difference, report):
        return AFTER_A_DIVERGENCE
    return None


@dataclass
class Record:
    scenarios: Counter = field(default_factory=Counter)  # (oracle, minor) -> scenarios run
    refusals: Counter = field(default_factory=Counter)  # (oracle, minor) -> inputs draopt or the oracle refused
    differences: Counter = field(default_factory=Counter)  # (oracle, minor, kind) -> differences
    explained: Counter = field(default_factory=Counter)  # (oracle, minor, cause) -> differences
    unexplained: list[str] = field(default_factory=list)
    untraced: Counter = field(default_factory=Counter)  # (oracle, minor) -> differences on UNTRACED
    diverged: Counter = field(default_factory=Counter)  # (oracle, minor) -> scenarios with a first divergence
    oracle_failures: list[str] = field(default_factory=list)  # the oracle did not answer (settling)
    # (oracle, minor) -> scenarios the oracle ran again (an unexplained difference on its first run),
    # and those of them fully explained on a later run (kube-scheduler's answer varies by run)
    reruns: Counter = field(default_factory=Counter)
    explained_on_rerun: Counter = field(default_factory=Counter)
    unsteady_scenarios: list[str] = field(default_factory=list)  # (ORACLE_UNSTEADY)

    def unexplained_in(self, minor: str, source: str, report) -> list[str]:
        """The differences of `report` no rule explains and UNTRACED does not list, as text
        (nothing counted)."""
        return [
            f"{minor} {source}: {d.text()}"
            for d in report.differences
            if explained_by(d, report) is None and (minor, source, d.subject) not in UNTRACED
        ]

    def rerun(self, oracle: str, minor: str, explained: bool) -> None:
        self.reruns[(oracle, minor)] += 1
        if explained:
            self.explained_on_rerun[(oracle, minor)] += 1

    def add(self, oracle: str, minor: str, source: str, report, unsteady: bool = False) -> list[str]:
        """Count one compared scenario; return its unexplained differences as text. `unsteady`: the
        oracle placed the scenario's pods differently in two of its runs (ORACLE_UNSTEADY): its
        differences no rule explains are counted under that cause, listed by scenario."""
        self.scenarios[(oracle, minor)] += 1
        if report.refused:
            self.refusals[(oracle, minor)] += 1
        out = []
        if timeline(report).first_divergence is not None:
            self.diverged[(oracle, minor)] += 1
        for d in report.differences:
            self.differences[(oracle, minor, d.kind)] += 1
            cause = explained_by(d, report)
            if cause is None and (minor, source, d.subject) in UNTRACED:
                self.untraced[(oracle, minor)] += 1
            elif cause is None and unsteady:
                self.explained[(oracle, minor, ORACLE_UNSTEADY)] += 1
                if f"{minor} {source}" not in self.unsteady_scenarios:
                    self.unsteady_scenarios.append(f"{minor} {source}")
            elif cause is None:
                text = f"{minor} {source}: {d.text()}"
                out.append(text)
                self.unexplained.append(text)
            else:
                self.explained[(oracle, minor, cause)] += 1
        self._write()
        return out

    def refused(self, oracle: str, minor: str, source: str) -> None:
        """An input draopt itself refuses (an invalid one, on purpose)."""
        self.refusals[(oracle, minor)] += 1
        self._write()

    def failed(self, oracle: str, minor: str, what: str) -> None:
        self.oracle_failures.append(f"{oracle} {minor} {what}")
        self._write()

    def lines(self) -> list[str]:
        out = []
        for (oracle, minor), n in sorted(self.scenarios.items()):
            diffs = sum(c for (o, m, _), c in self.differences.items() if (o, m) == (oracle, minor))
            kinds = ", ".join(
                f"{k} {c}" for (o, m, k), c in sorted(self.differences.items()) if (o, m) == (oracle, minor)
            )
            causes = ", ".join(
                f"{k}: {c}" for (o, m, k), c in sorted(self.explained.items()) if (o, m) == (oracle, minor)
            )
            out.append(
                f"{oracle} oracle {minor}: {n} scenarios, {self.refusals[(oracle, minor)]} refused, "
                f"{diffs} differences"
                + (f" ({kinds})" if kinds else "")
                + (f"; explained: {causes}" if causes else "")
                + f"; first divergences: {self.diverged[(oracle, minor)]}; untraced: {self.untraced[(oracle, minor)]}"
                + f"; oracle run again on {self.reruns[(oracle, minor)]} scenarios, "
                f"{self.explained_on_rerun[(oracle, minor)]} of them explained then"
            )
        if self.unsteady_scenarios:
            out.append(f"{ORACLE_UNSTEADY}: {', '.join(self.unsteady_scenarios)}")
        if self.oracle_failures:
            out.append(f"oracle did not answer: {len(self.oracle_failures)} ({'; '.join(self.oracle_failures)[:300]})")
        if self.unexplained:
            out.append(f"unexplained differences: {len(self.unexplained)}")
        return out

    def _write(self) -> None:
        path = os.environ.get("DRAOPT_CROSSCHECK_REPORT")
        if path:
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"summary": self.lines(), "unexplained": self.unexplained}, f, indent=2)


RECORD = Record()
