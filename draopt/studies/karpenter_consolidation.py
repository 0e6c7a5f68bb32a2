"""What Karpenter's consolidation would remove from a running cluster, beside `plan --consolidate`'s
optimum: its loop of disruption commands, each simulated with draopt's kube-scheduler first-fit.

As Karpenter does it (kubernetes-sigs/karpenter pkg/controllers/disruption/: emptiness.go,
multinodeconsolidation.go, singlenodeconsolidation.go, consolidation.go computeConsolidation,
pdblimits.go; facts, no code):
- candidates are sorted by disruption cost, lowest first (the sum over a node's reschedulable pods
  of 1 + priority / 2^25, clamped to [-10, 10]; ties here by node name);
- emptiness: a candidate with no reschedulable pod (DaemonSet and mirror pods only) is deleted;
- multi-node: a binary search for the longest prefix of the candidates (at least 2, at most 100)
  whose pods all schedule on the rest of the cluster plus at most one new node: deleted, or
  replaced by that one node when it costs less than the prefix (and, when its type is one of the
  prefix's, less than the prefix's cheapest node of that type);
- single-node: the first candidate (with pods) that can be deleted, or replaced by one cheaper node;
- a replacement is the cheapest type that holds the pods; a command needing two new nodes is none;
- a node with a pod whose PodDisruptionBudget allows no disruption, or with a do-not-disrupt pod,
  is no candidate;
- a command must leave every pod of the nodes it removes scheduled (pending pods are Karpenter's
  provisioning's: here a command must also place as many of the input's pending pods as the
  cluster did before it, so that both answers hold the same pods).

Deviations, so that the comparison with the optimum is of the search only: the candidates and the
pod rules are the optimum's (draopt.studies.consolidate_rules: local storage and pods without a
controller keep their node too; every existing node is a candidate, not only those of a NodePool);
a budget that allows n > 0 disruptions caps the pods moved over the whole loop at n; the scheduling
simulation is draopt's first-fit (kube-scheduler's default profile), the pods of every node removed
so far placed again together; replacements are the given new node types; one command at a time,
until none is found."""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draopt import interrupt
from draopt.studies.consolidate_rules import PodRules, cost_text
from draopt.studies.node_types import NodeType

MULTI_NODE_MAX = 100  # multi-node consolidation looks at this many candidates at most


@dataclass
class KarpenterCommand:
    method: str  # "emptiness", "multi-node", "single-node"
    nodes: list[str]  # removed
    replacement: str | None  # new node type, or None (deletion)


@dataclass
class KarpenterConsolidation:
    commands: list[KarpenterCommand]
    cost_before: Fraction
    cost_after: Fraction
    removed: list[str] = field(default_factory=list)
    bought: list[str] = field(default_factory=list)  # new nodes' types, one entry per node
    simulations: int = 0
    placement: dict[str, str] = field(default_factory=dict)  # pods it placed (pending, evicted) -> node
    cut_short: bool = False  # the time limit stopped its loop before it found no more commands

    @property
    def saved(self) -> Fraction:
        return self.cost_before - self.cost_after

    def to_json(self) -> dict[str, Any]:
        from draopt.studies.planning import _num

        return {
            "commands": [{"method": c.method, "nodes": c.nodes, "replacement": c.replacement} for c in self.commands],
            "removed": self.removed,
            "new_nodes": self.bought,
            "cost_after": _num(self.cost_after),
            "saved": _num(self.saved),
            "simulations": self.simulations,
            "cut_short": self.cut_short,
        }

    def lines(self, optimal_cost: Fraction) -> list[str]:
        out = [
            f"Karpenter's consolidation (simulated): removes {len(self.removed)} node(s)"
            + (f" ({', '.join(self.removed)})" if self.removed else "")
            + (f", buys {len(self.bought)} ({', '.join(self.bought)})" if self.bought else "")
            + f": cost {cost_text(self.cost_before)} -> {cost_text(self.cost_after)}, saves {cost_text(self.saved)}"
        ]
        if self.cut_short:
            why = "by Ctrl-C" if interrupt.requested() else "at the time limit"
            out.append(f"  (stopped {why}: more commands may follow)")
        for c in self.commands:
            what = f"replaced by one {c.replacement}" if c.replacement else "deleted"
            out.append(f"  {c.method}: {', '.join(c.nodes)} {what}")
        more = self.cost_after - optimal_cost
        if more > 0:
            share = f" ({float(more / self.cost_after):.1%} of Karpenter's)" if self.cost_after else ""
            out.append(f"the optimum saves {cost_text(more)} more than Karpenter's consolidation{share}")
        elif more == 0:
            out.append("Karpenter's consolidation reaches the optimum's cost here")
        else:  # the model's answer was cut short and did not start from Karpenter's
            out.append(f"Karpenter's consolidation is {cost_text(-more)} cheaper than the best found in the time limit")
        return out


@dataclass
class _Loop:
    """The state of the loop: what is removed and bought so far, and how each is simulated."""

    objects: Any
    workload: Any  # the input's, expanded
    rules: PodRules
    prices: dict[str, tuple[str, Fraction]]
    new_types: list[NodeType]
    features: Any
    removed: list[str] = field(default_factory=list)
    bought: list[NodeType] = field(default_factory=list)
    simulations: int = 0
    pending_floor: int | None = None  # pending pods placed with nothing removed
    daemon_pods: set[str] = field(default_factory=set)  # pending DaemonSet pods made for one node (go with it)
    last: dict[str, str] = field(default_factory=dict)  # the last simulation's placed pods -> nodes
    deadline: float | None = None  # perf_counter: past it, no more commands are looked for
    cut_short: bool = False  # the deadline stopped the loop

    def past_deadline(self) -> bool:
        """Past the deadline, or Ctrl-C on the command line (draopt.interrupt): no more commands."""
        return (self.deadline is not None and time.perf_counter() > self.deadline) or interrupt.requested()

    def fits(self, nodes: list[str], replacement: NodeType | None) -> bool:
        """Whether the movable pods of every node removed so far and of `nodes` all schedule
        (first-fit) on the nodes left plus the bought ones (and `replacement`), within the budgets."""
        from draopt.cluster.firstfit import simulate
        from draopt.studies.ffd_estimate import _cluster_for

        gone = set(self.removed) | set(nodes)
        evicted = [p for p, n in self.rules.node_of.items() if n in gone and self.rules.kind_of[p] == "movable"]
        for budget in self.rules.budgets:
            if sum(1 for p in evicted if p in budget.pods) > budget.allowed:
                return False
        objs, type_of = self._objects(gone, set(evicted), self.bought + ([replacement] if replacement else []))
        self.simulations += 1
        workload, cluster = _cluster_for(objs, self.features, type_of, [t.name for t in self.new_types])
        self.last = {p.pod: p.node for p in simulate(cluster, workload, explain_failures=None).pods if p.node}
        placed = set(self.last)
        pending = sum(1 for d in self.workload.pending if d.key in placed and d.key not in self.daemon_pods)
        if self.pending_floor is None:
            self.pending_floor = pending if not gone and replacement is None else self._floor()
        return all(p in placed for p in evicted) and pending >= self.pending_floor

    def _floor(self) -> int:
        """The pending pods first-fit places on the cluster as it is (a command must not place fewer)."""
        saved, self.removed, self.bought = (self.removed, self.bought), [], []
        self.pending_floor = None
        try:
            self.fits([], None)
        finally:
            self.removed, self.bought = saved
        assert self.pending_floor is not None
        return self.pending_floor

    def _objects(self, gone: set[str], evicted: set[str], bought: list[NodeType]):
        """The cluster of a simulation: the evicted pods pending, the bought copies (with their
        templates' DaemonSet pods, as the optimum's), then the removed nodes gone with their slices
        and the pods that go with them."""
        from draopt.studies.consolidate_model import moved_objects, with_new_nodes

        only = PodRules(
            {p: ("movable" if p in evicted else "kept") for p in self.rules.kind_of}, node_of=self.rules.node_of
        )
        counts = {t.name: sum(1 for b in bought if b.name == t.name) for t in self.new_types}
        objs, type_of, _, _ = with_new_nodes(
            moved_objects(self.objects, self.workload, only), self.new_types, counts, self.workload
        )
        objs = copy.copy(objs)
        objs.nodes = [n for n in objs.nodes if n.name not in gone]
        objs.resource_slices = [s for s in objs.resource_slices if s.spec.node_name not in gone]
        objs.pods = [p for p in objs.pods if p.spec.node_name not in gone]
        return objs, type_of


def karpenter_consolidation(
    objects,
    workload,
    rules: PodRules,
    prices: dict[str, tuple[str, Fraction]],
    new_types: list[NodeType],
    features,
    deadline: float | None = None,
) -> KarpenterConsolidation:
    """Karpenter's consolidation loop on the cluster (see the module docstring). Past `deadline`
    (perf_counter) no command is looked for: the loop stops with the commands found (cut_short)."""
    from draopt.studies.consolidate_model import pending_daemon_pods

    loop = _Loop(objects, workload, rules, prices, list(new_types), features, deadline=deadline)
    loop.daemon_pods = set(pending_daemon_pods(objects, workload))
    commands: list[KarpenterCommand] = []
    for _ in range(len(prices) + 1):
        if loop.past_deadline():
            loop.cut_short = True
            break
        command = _next_command(loop)
        if command is None:
            break
        commands.append(command)
        loop.removed.extend(command.nodes)
        if command.replacement is not None:
            loop.bought.append(next(t for t in new_types if t.name == command.replacement))
    loop.fits([], None)  # the final state's placement (the optimum's warm start may use it)
    placement = dict(loop.last)
    before = sum((c for _, c in prices.values()), Fraction(0))
    after = (
        before
        - sum((prices[n][1] for n in loop.removed), Fraction(0))
        + sum((t.cost for t in loop.bought), Fraction(0))
    )
    return KarpenterConsolidation(
        commands,
        before,
        after,
        list(loop.removed),
        [t.name for t in loop.bought],
        loop.simulations,
        placement,
        cut_short=loop.cut_short,
    )


def _candidates(loop: _Loop) -> list[str]:
    """The nodes left that may be disrupted, by disruption cost (lowest first), then name."""
    pinned = set(loop.rules.pinned_nodes())
    left = [n for n in loop.prices if n not in loop.removed and n not in pinned]
    cost = {n: 0.0 for n in left}
    priority = {d.key: d.priority for d in loop.workload.running}
    for pod, node in loop.rules.node_of.items():
        if node in cost and loop.rules.kind_of[pod] == "movable":
            cost[node] += min(10.0, max(-10.0, 1.0 + priority.get(pod, 0) / 2**25))
    return sorted(left, key=lambda n: (cost[n], n))


def _movable_on(loop: _Loop, node: str) -> int:
    return sum(1 for p, n in loop.rules.node_of.items() if n == node and loop.rules.kind_of[p] == "movable")


def _next_command(loop: _Loop) -> KarpenterCommand | None:
    """The next command: emptiness, then multi-node, then single-node consolidation."""
    candidates = _candidates(loop)
    empty: list[str] = []
    for node in candidates:  # (a node a pending pod needs is kept: Karpenter skips nominated nodes)
        if _movable_on(loop, node) == 0 and loop.fits(empty + [node], None):
            empty.append(node)
    if empty:
        return KarpenterCommand("emptiness", empty, None)
    found = _multi_node(loop, candidates[:MULTI_NODE_MAX])
    if found is not None:
        return found
    for node in candidates:
        if loop.past_deadline():
            loop.cut_short = True
            return None
        replacement = _compute(loop, [node])
        if replacement is not None:
            return KarpenterCommand("single-node", [node], replacement or None)
    return None


def _multi_node(loop: _Loop, candidates: list[str]) -> KarpenterCommand | None:
    """The longest prefix (binary search, 2 nodes at least) that can go with one new node at most."""
    if len(candidates) < 2:
        return None
    low, high = 1, len(candidates) - 1
    best = None
    while low <= high and not loop.past_deadline():
        mid = (low + high) // 2
        prefix = candidates[: mid + 1]
        replacement = _compute(loop, prefix)
        if replacement is not None:
            best = KarpenterCommand("multi-node", prefix, replacement or None)
            low = mid + 1
        else:
            high = mid - 1
    return best


def _compute(loop: _Loop, nodes: list[str]) -> str | None:
    """computeConsolidation: "" (delete: the pods fit on the rest), a type (replace with one node of
    it, the cheapest that holds the pods and costs less), or None (nothing)."""
    if loop.fits(nodes, None):
        return ""
    limit = sum((loop.prices[n][1] for n in nodes), Fraction(0))
    for t in sorted(loop.new_types, key=lambda t: (t.cost, t.name)):
        same = [loop.prices[n][1] for n in nodes if loop.prices[n][0] == loop.prices[t.template][0]]
        if t.cost >= limit or (same and t.cost >= min(same)):
            continue
        if loop.fits(nodes, t):
            return t.name
    return None
