"""`plan`'s answer checked against what the placement model does not encode (issue 31, item 8).

The placement model (draopt.model.placement) encodes the node filters that need no other pod
(unschedulable, taints, node affinity and selectors, resources, devices, gangs and topology
domains). kube-scheduler also filters against the pods already on the nodes: required inter-pod
affinity and anti-affinity, DoNotSchedule topology spread (draopt.placement.optimal.unmodelled_rules
names them). Where the pending pods use such a rule, the model is a relaxation: its mix may place
fewer pods in Kubernetes than it says. So:

* every plan is checked with draopt's first-fit (kube-scheduler's default profile, no preemption:
  the plan buys nodes, it evicts nothing) on the cluster with the mix; the table says how many
  pods that places, and says so when it is fewer than the plan's. On large inputs (column
  generation) only where a rule is not encoded: elsewhere it would only confirm, and its cost
  grows with pods x nodes;
* where a rule is not encoded, the plan is never called proven minimal (status FEASIBLE, the
  rules named), its `placed` is first-fit's count, and when first-fit places fewer than the
  model, nodes are added one at a time (the type whose extra node lets first-fit place the most
  pods, the cheapest among equals) until first-fit places the model's count, no single node helps,
  `--max-nodes` more nodes were added or the time limit ran out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.studies.node_types import NodeType


@dataclass
class FirstFitCheck:
    """What draopt's first-fit (kube-scheduler's default profile) places with a mix of new nodes."""

    mix: dict[str, int]
    placed: int  # pending pods of the input placed (DaemonSet pods of the copies not counted)
    pods: int

    def to_json(self) -> dict[str, Any]:
        return {"mix": self.mix, "placed": self.placed, "pods": self.pods}


def first_fit_on_mix(
    objects: ObjectSet, node_types: list[NodeType], mix: dict[str, int], features: Features
) -> FirstFitCheck:
    """The cluster with `mix` new nodes of each type, and draopt's first-fit on it: the default
    profile's filters (inter-pod affinity, topology spread and schedulerName included) and node
    choice, seeded ties, no preemption."""
    from draopt.cluster.firstfit import simulate
    from draopt.placement import scheduler_for
    from draopt.studies.ffd_estimate import _cluster_for, _with_types

    objs, type_of, daemon_of = _with_types(objects, [(t, mix.get(t.name, 0)) for t in node_types])
    by_cost = [t.name for t in sorted(node_types, key=lambda t: t.cost)]
    workload, cluster = _cluster_for(objs, features, type_of, by_cost)
    result = simulate(cluster, workload, scheduler=scheduler_for(None, cluster, workload), explain_failures=None)
    real = [p for p in result.pods if p.pod not in daemon_of]
    return FirstFitCheck(dict(mix), sum(1 for p in real if p.placed), len(real))


def check_plan(
    objects: ObjectSet,
    plan,
    features: Features,
    *,
    max_nodes: int,
    deadline: float,
) -> None:
    """`plan` (a MixPlan) checked with first-fit; where the model does not encode a rule the pods
    use, not proven, first-fit's count, and repaired by adding nodes (see the module docstring)."""
    from draopt.placement import build_cluster
    from draopt.placement.optimal import unmodelled_rules
    from draopt.kube.field_notes import unmodelled_filter_rules
    from draopt.kube.workload import expand

    t0 = time.perf_counter()
    if plan.pods == 0:
        return
    workload = expand(objects, features)
    cluster = build_cluster(objects, workload, features)
    rules = unmodelled_rules(cluster, workload) + _shared_mapped_claims(cluster, workload)
    rules += unmodelled_filter_rules(workload.pending)  # first-fit's check cannot catch these
    claimed = plan.placed
    if not rules and plan.stats.columns and plan.stats.columns_not_used is None:
        # Column generation (large inputs) and no rule the model leaves out: the check would
        # confirm only, and the scheduler's scan makes it grow with pods x nodes (benchmarks/
        # bench_plan.py --scale: it took most of the time from 8,000 pods on).
        plan.stats.first_fit_skipped = "the model encodes every rule the pods use (column generation)"
        return
    checked = first_fit_on_mix(objects, plan.node_types, plan.mix, features)
    plan.first_fit = checked
    plan.unencoded_rules = rules
    if rules:
        _not_proven(plan, rules, claimed, checked, max_nodes, deadline, features, objects)
    plan.stats.first_fit_check_s = round(time.perf_counter() - t0, 3)


def _not_proven(plan, rules, claimed: int, checked: FirstFitCheck, max_nodes: int, deadline, features, objects):
    plan.stats.model_status = plan.status
    plan.stats.model_placed = claimed
    plan.proven_minimal = False
    plan.placed_proven = False
    if plan.status == "OPTIMAL":
        plan.status = "FEASIBLE"
    plan.stats.status = plan.status  # the model's own in model_status
    reasons = [f"the placement model does not encode {'; '.join(rules)}"]
    best = checked
    if checked.placed < claimed:
        best = _add_nodes(objects, plan.node_types, checked, claimed, max_nodes, deadline, features)
        said = (
            f"first-fit (kube-scheduler's default profile) places {checked.placed} of {checked.pods} with the "
            f"model's mix ({_mix_text(checked.mix)}), where the model places {claimed}"
        )
        if best.mix != checked.mix:
            said += f"; {_added_text(checked.mix, best.mix)} added one at a time: first-fit places {best.placed}"
            plan.stats.repaired_from = dict(checked.mix)
            plan.one_fewer = []  # those were of the model's mix
            plan.mix = {t.name: best.mix.get(t.name, 0) for t in plan.node_types}
            plan.cost = sum((t.cost * plan.mix[t.name] for t in plan.node_types), Fraction(0))
            plan.first_fit = best
        reasons.append(said)
    plan.placed = best.placed
    for check in plan.one_fewer:
        if check.verdict.startswith("places them all"):
            check.verdict += " (in the model, which does not encode the rules above)"
    if plan.why_not_proven:
        reasons.append(plan.why_not_proven)
    plan.why_not_proven = "; ".join(reasons)


def _shared_mapped_claims(cluster, workload) -> list[str]:
    """A claim several pending pods share next to devices mapped as node resources: Kubernetes
    rejects its second pod on a mapped device (validateNodeAllocatableDRAClaimSharing), which the
    model does not encode (optimal checks its placement afterwards: shared_mapped_claim)."""
    if not cluster.features.node_allocatable_resources:
        return []
    from draopt.kube.node_allocatable import has_mapping

    if not any(
        d.node_allocatable_resources and has_mapping(d)
        for s in cluster.objects.resource_slices
        for d in (s.spec.devices or [])
    ):
        return []
    users: dict[str, int] = {}
    for pod in workload.pending:
        for key in {use.key for use in pod.claims}:
            users[key] = users.get(key, 0) + 1
    shared = sorted(k for k, n in users.items() if n > 1)
    if not shared:
        return []
    return [f"a claim several pods share next to mapped node-allocatable devices ({shared[0]})"]


def _add_nodes(objects, node_types, start: FirstFitCheck, target: int, max_nodes: int, deadline, features):
    """Nodes added one at a time, each time the type whose extra node lets first-fit place the
    most pods (the cheapest among equals, then the given order), while that places more."""
    best = start
    added = 0
    while best.placed < target and added < max_nodes and (added == 0 or time.perf_counter() < deadline):
        trials = []
        for t in node_types:
            mix = dict(best.mix)
            mix[t.name] = mix.get(t.name, 0) + 1
            trials.append((first_fit_on_mix(objects, node_types, mix, features), t))
        trial, _ = max(trials, key=lambda tt: (tt[0].placed, -tt[1].cost))  # max keeps the first of equals
        if trial.placed <= best.placed:
            break
        best = trial
        added += 1
    return best


def _mix_text(mix: dict[str, int]) -> str:
    used = [f"{n} x {t}" for t, n in mix.items() if n]
    return " + ".join(used) if used else "no new node"


def _added_text(before: dict[str, int], after: dict[str, int]) -> str:
    more = {t: after.get(t, 0) - before.get(t, 0) for t in after if after.get(t, 0) > before.get(t, 0)}
    return _mix_text(more)
