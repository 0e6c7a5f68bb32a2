"""`draopt crosscheck`: draopt's first-fit and Kubernetes' own code on the same input.

`place` mode (default): kube-scheduler (the scheduler oracle) and draopt's first-fit placement,
compared pod by pod and claim by claim (draopt.crosscheck.scheduler_diff). `allocate` mode (a
node given): the DRA allocator of k8s.io/dynamic-resource-allocation (the allocator oracle) and
draopt's first-fit allocate on that node, compared claim by claim.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from draopt.errors import InputError
from draopt.kube.features import Features

DEFAULT_TIMEOUT = 300.0


@dataclass
class CrosscheckReport:
    """Both answers and their differences; `refused`: the oracle refused the input (the API server
    would reject it), which is not a difference."""

    mode: str  # place | allocate
    kubernetes_version: str  # the minor compared against, e.g. "1.37"
    oracle_version: str  # the module version the oracle ran, e.g. "v1.37.2"
    pods: list[Any] = field(default_factory=list)  # scheduler_diff.PodComparison (place)
    claims: list[dict[str, Any]] = field(default_factory=list)  # allocate: per claim, both results
    differences: list[Any] = field(default_factory=list)  # scheduler_diff.Difference
    refused: str = ""
    notes: list[str] = field(default_factory=list)
    # place: kube-scheduler's scheduling attempts in order (pod, node or "", nominatedNode, message,
    # hinted: bound on OpportunisticBatching's hint), which `pods` (input order) does not show: a pod
    # tried again, a preemptor's later attempt
    kubernetes_attempts: list[dict[str, Any]] = field(default_factory=list)
    claim_users: dict[str, list[str]] = field(default_factory=dict)  # place: claim -> the pending pods using it
    # place: victim -> the pods (or PodGroups) whose preemption evicted it, draopt's then kube-scheduler's
    evicted_by: dict[str, list[str]] = field(default_factory=dict)

    @property
    def identical(self) -> bool:
        return not self.differences and not self.refused

    def to_json(self) -> str:
        return json.dumps(
            {
                "mode": self.mode,
                "kubernetesVersion": self.kubernetes_version,
                "oracleVersion": self.oracle_version,
                "identical": self.identical,
                "refused": self.refused,
                "differences": [asdict(d) for d in self.differences],
                "pods": [dict(asdict(p), same=p.same) for p in self.pods],
                "claims": self.claims,
                "notes": self.notes,
                "kubernetesAttempts": self.kubernetes_attempts,
            },
            indent=2,
            sort_keys=False,
        )

    def table(self) -> str:
        head = f"kubernetes {self.oracle_version or self.kubernetes_version} ({self.mode}): "
        if self.refused:
            return head + f"the oracle refused the input: {self.refused}"
        lines = []
        for p in self.pods:
            mark = "=" if p.same else "!"
            lines.append(
                f"{mark} {p.pod:<40} draopt {p.draopt_node or 'pending':<20} kubernetes {p.kubernetes_node or 'pending'}"
            )
        for c in self.claims:
            mark = "=" if c["same"] else "!"
            lines.append(f"{mark} {c['claim']:<40} draopt {c['draopt']}; kubernetes {c['kubernetes']}")
        if self.identical:
            lines.append(head + "identical")
        else:
            lines.append(head + f"{len(self.differences)} difference(s)")
            lines += ["  " + d.text() for d in self.differences]
        return "\n".join(lines)


def crosscheck(
    objects,
    *,
    kubernetes_version: str,
    features: Features,
    scheduler_config_path: str | None = None,
    node: str | None = None,
    claims: list[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> CrosscheckReport:
    """Run draopt and the oracle of `kubernetes_version` (a minor: "1.36", "1.37") on `objects` (an
    ObjectSet). With `node`: allocate mode, else place mode. draopt allocates as that release
    does (its release-dependent allocator behaviour), under the gates of `features`."""
    from draopt.crosscheck import gobuild

    if kubernetes_version not in gobuild.SUPPORTED:
        raise InputError(
            f"--kubernetes-version {kubernetes_version}: crosscheck has oracles for "
            f"{', '.join(gobuild.SUPPORTED)} (the k8s.io modules this project pins)"
        )
    features = replace(features, kubernetes_version=kubernetes_version)
    if node is not None:
        return _crosscheck_allocate(objects, kubernetes_version, features, node, claims, timeout)
    if claims:
        raise InputError("--claim: give --node too (allocate mode); place mode compares every pod and claim")
    return _crosscheck_place(objects, kubernetes_version, features, scheduler_config_path, timeout)


def _crosscheck_place(objects, minor: str, features: Features, config_path: str | None, timeout: float):
    from draopt.crosscheck.scheduler_diff import compare_placement
    from draopt.crosscheck.allocator_oracle import OracleFailed
    from draopt.crosscheck.scheduler_oracle import OracleError, oracle_objects, run_scheduler_oracle
    from draopt.placement import place
    from draopt.scheduler import load_config

    config = load_config(config_path) if config_path else None
    config_text = _read_text(config_path) if config_path else None
    gates, notes = oracle_gates(features, objects, minor)
    try:
        answer = run_scheduler_oracle(
            oracle_objects(objects, features),
            minor=minor,
            scheduler_config_text=config_text,
            gates=gates,
            timeout=timeout,
        )
    except OracleError as e:
        raise OracleFailed(f"the scheduler oracle could not answer: {e}") from None
    oracle = _as_dict(answer)
    report = CrosscheckReport("place", minor, oracle.get("version", ""), notes=notes)
    if oracle.get("error"):
        report.refused = oracle["error"]
        return report
    chosen = {f"{p['namespace']}/{p['name']}": p["node"] for p in oracle.get("pods") or [] if p.get("node")}
    outcome = place(objects, policy="first-fit", features=features, scheduler_config=config, prefer_nodes=chosen)
    cmp = compare_placement(outcome, oracle)
    report.pods, report.differences = cmp.pods, cmp.differences
    report.kubernetes_attempts = [
        {k: a[k] for k in ("pod", "node", "nominatedNode", "message", "hinted") if a.get(k)}
        for a in oracle.get("attempts") or []
    ]
    for demand in outcome.workload.pending:
        for use in demand.claims:
            report.claim_users.setdefault(use.key, []).append(demand.key)
    evictions = [(e.pod, e.preemptor) for e in outcome.result.evictions]
    evictions += [(e["pod"], e.get("preemptor", "")) for e in oracle.get("evictions") or []]
    for victim, preemptor in evictions:
        if preemptor and preemptor not in report.evicted_by.get(victim, []):
            report.evicted_by.setdefault(victim, []).append(preemptor)
    report.notes = notes + _livelock_notes(oracle) + list(outcome.notes)
    return report


def _livelock_notes(oracle: dict[str, Any]) -> list[str]:
    """A run the oracle stopped because pods kept being retried without progress (1.36's gang plugin
    does this with a gang that cannot fit): the placements made meanwhile can depend on goroutine
    timing inside kube-scheduler, so a difference there is weaker evidence."""
    if not oracle.get("livelock"):
        return []
    return [
        f"kube-scheduler kept retrying pods without progress and the oracle stopped it ({oracle['livelock']}); "
        "placements made while those pods cycled can vary between runs of kube-scheduler itself"
    ]


def oracle_gates(features: Features, objects, minor: str) -> tuple[dict[str, bool], list[str]]:
    """The gates to set in the oracle, and notes. draopt's gates that the release has
    (kube-scheduler refuses an unknown gate; Features.from_gates refused those set on already). draopt schedules PodGroups as gangs whatever the gates say (docs/versions.md);
    kube-scheduler does so only with the Workload API's gates on, so they are turned on for an
    input with PodGroups, and said."""
    from draopt.kube.releases import RELEASES

    has = RELEASES[minor].gates
    gates = {g: on for g, on in features.gates.items() if g in has}
    notes = []
    if getattr(objects, "pod_groups", None) or getattr(objects, "workloads", None):
        gang = _GANG_GATES[minor]
        gates.update(dict.fromkeys(gang, True))
        notes.append(
            f"the input has PodGroups: the oracle runs with {', '.join(g + '=true' for g in gang)} "
            "(off by default), as draopt schedules PodGroups as gangs"
        )
    return gates, notes


# The gates under which kube-scheduler schedules PodGroups as gangs, with workload-aware preemption
# (pkg/features/kube_features.go and apis/config/v1/default_plugins.go at v1.36.3 and v1.37.2).
_GANG_GATES = {
    "1.36": ("GenericWorkload", "GangScheduling", "WorkloadAwarePreemption"),
    "1.37": ("GenericWorkload",),
}


def _crosscheck_allocate(objects, minor: str, features: Features, node: str, claims, timeout: float):
    from draopt.allocation.allocate import select_claims
    from draopt.crosscheck.allocator_oracle import (
        compare_allocation,
        draopt_allocation,
        run_allocator_oracle,
        scenario_from_objects,
    )
    from draopt.crosscheck.scheduler_diff import Difference, device_list

    target = next((n for n in objects.nodes if n.name == node), None)
    if target is None:
        raise InputError(f"--node {node}: no such Node in the input")
    todo, in_use = select_claims(objects, claims)
    if not todo:
        raise InputError("nothing to allocate: every claim has status.allocation (give --claim)")
    shared = [*objects.device_classes, *objects.resource_slices, *objects.taint_rules, *in_use]
    scenario = scenario_from_objects(target, shared, todo, features, name=node, timeout_seconds=timeout)
    (theirs,) = run_allocator_oracle([scenario], minor, timeout=timeout)
    report = CrosscheckReport("allocate", minor, theirs.allocator and f"{minor} ({theirs.allocator} allocator)")
    if theirs.outcome == "invalid":
        report.refused = theirs.error
        return report
    ours = draopt_allocation(scenario, minor=minor)
    for text in compare_allocation(ours, theirs):
        report.differences.append(Difference("device", node, text, ""))
    for i, claim in enumerate(todo):
        mine = ", ".join(device_list(ours.results[i])) if ours.outcome == "allocated" else ours.outcome
        other = ", ".join(device_list(theirs.results[i])) if theirs.outcome == "allocated" else theirs.outcome
        report.claims.append(
            {"claim": f"{claim.namespace}/{claim.name}", "draopt": mine, "kubernetes": other, "same": mine == other}
        )
    return report


def _as_dict(result: Any) -> dict[str, Any]:
    """The scheduler oracle's answer as its JSON protocol has it."""
    if isinstance(result, dict):
        return result
    raw = getattr(result, "raw", None)
    if isinstance(raw, dict):
        return raw
    return asdict(result)


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"--scheduler-config: {path}: {e.strerror}") from None
