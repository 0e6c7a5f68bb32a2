"""Why claims cannot be allocated, or a pod not placed, in terms a person can act on.

Two views, per node:
* device rejections: for every request, each device's first reason for being unusable, in
  the order Kubernetes checks them (in use, selectors, capacity, counters, taints, constraint
  attribute), counted;
* the smallest set of requirements that cannot be met together: the CP-SAT model is built
  with every requirement (a request's device count, a matchAttribute/distinctAttribute
  constraint, a counter, a device's capacity, compatibility groups) behind an assumption
  literal; an infeasible core is taken from the solver and shrunk until each requirement in
  it is needed (deletion filter), so dropping any one of them would make the rest feasible.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from draopt import interrupt
from draopt.errors import AllocationError, DeviceCelError
from draopt.dra.inventory import available_counters
from draopt.dra.problem import Problem, prepare
from draopt.dra.rules import consumed_quantity, q, taint_blocks, violates_policy


@dataclass
class NodeExplanation:
    node: str | None
    fits: bool = False
    reason: str = ""  # first reason outside devices, if any
    rejections: dict[str, Counter] = field(default_factory=dict)
    conflict: list[str] = field(default_factory=list)
    error: str = ""
    pools: list[str] = field(default_factory=list)  # pools and slices left out, and why

    def lines(self) -> list[str]:
        head = f"node {self.node}:" if self.node else "cluster-wide devices:"
        if self.fits:
            return [f"{head} fits"]
        if self.reason:
            return [f"{head} {self.reason}"]
        out = [head]
        if self.error:
            out.append(f"  error: {self.error}")
        out.extend(f"  {p}" for p in self.pools)
        for req, reasons in self.rejections.items():
            parts = ", ".join(_count(n, r) for r, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
            out.append(f"  request {req}: {parts}")
        if self.conflict:
            out.append("  cannot be met together: " + "; ".join(self.conflict))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "fits": self.fits,
            "reason": self.reason,
            "error": self.error,
            "rejections": {k: dict(v) for k, v in self.rejections.items()},
            "conflict": self.conflict,
            "pools": self.pools,
        }


CEL_RUNTIME = "CEL runtime error of "


def _count(n: int, reason: str) -> str:
    """`6 in use`; a CEL runtime error, counted once per distinct cause:
    `CEL runtime error on 6 devices of class X selector #0: no such key: index`."""
    if reason.startswith(CEL_RUNTIME):
        return f"CEL runtime error on {n} device{'s' if n != 1 else ''} of {reason[len(CEL_RUNTIME) :]}"
    return f"{n} {reason}"


def device_rejection(problem: Problem, spec, dev) -> str | None:
    """The first reason the device cannot serve the request on its own, None if it can."""
    f = problem.features
    inv = problem.inventory
    # Devices the request could never take (the selectors) first, so that "in use" counts only
    # devices it could take (a GPU request must not count an allocated IMEX channel); a device
    # in use is not evaluated by Kubernetes, so its CEL errors are not reported.
    in_use = not spec.admin_access and dev.id in inv.allocated.devices
    try:
        if not problem.selectable(spec, dev):
            return "not matching class/request selectors"
    except DeviceCelError as e:
        return "in use" if in_use else f"{CEL_RUNTIME}{e.owner}: {e.cause}"  # one line per cause
    except AllocationError as e:
        return "in use" if in_use else f"CEL error: {e}"
    if in_use:
        return "in use"
    if not f.device_binding_and_status and dev.device.binding_conditions:
        return "has binding conditions (DRADeviceBindingConditions off)"
    if f.consumable_capacity and not problem.capacity_ok(spec, dev, None):
        return capacity_rejection(problem, spec, dev)
    if dev.device.consumes_counters:
        if not f.partitionable_devices:
            return "consumes counters (DRAPartitionableDevices off)"
        avail = available_counters(dev.pool, inv.allocated)
        for c in dev.device.consumes_counters:
            for n, v in c.counters.items():
                if problem.counter_value(v.value) > avail.get(c.counter_set, {}).get(n, 0):
                    return f"counter set {c.counter_set} exhausted ({n})"
    if f.device_taints and taint_blocks(dev.taints, spec.tolerations):
        t = next(t for t in dev.taints if t.effect in ("NoSchedule", "NoExecute"))
        return f"taint {t.key}{'=' + t.value if t.value else ''}:{t.effect} not tolerated"
    claim = problem.claims[spec.claim_index]
    from draopt.dra.constraints import constraint_applies

    for c in claim.constraints:
        name = c.match_attribute or c.distinct_attribute
        if (
            constraint_applies(list(c.requests), spec.request_name, spec.sub_name)
            and problem.attribute_for_constraint(spec, dev, name) is None
        ):
            return f"lacks attribute {name}"
    return None


def capacity_rejection(problem: Problem, spec, dev) -> str:
    """Why the device's capacities cannot take the request, naming them: a capacity the request
    names that the device lacks, a request outside a capacity's requestPolicy, or capacities the
    in-use claims leave too little of (the checks of rules.consumption and rules.fits_capacity)."""
    capacity = dev.device.capacity
    requests = spec.capacity_requests or {}
    missing = sorted(name for name in requests if name not in capacity)
    if missing:
        return f"lacks capacity {', '.join(missing)}"
    in_use = problem.inventory.allocated.capacity.get(dev.id) or {}
    outside, short = [], []
    for name, cap in capacity.items():
        raw = requests.get(name)
        value, is_default = consumed_quantity(q(raw) if raw is not None else None, cap)
        if violates_policy(value, is_default, cap, raw):
            outside.append(name)
        elif value.value + in_use.get(name, 0) > q(cap.value).value:
            short.append(name)
    if outside:
        return f"request outside the requestPolicy of capacity {', '.join(sorted(outside))}"
    return f"capacity too small ({', '.join(sorted(short))})"


def minimal_conflict(problem: Problem, time_limit: float = 10.0) -> list[str] | None:
    """None if the claims fit; else the requirements that cannot hold together (deletion-minimal)."""
    from draopt.model.single_node import build_one_node

    m = build_one_node(problem, kubernetes_quirks=False, explain=True)[0].model
    names = sorted(m.guards)
    lits = [m.guards[n] for n in names]
    cores: dict[str, list[int]] = {}  # "first": the first infeasible core found

    def feasible(active: list[int]) -> bool | None:
        model = m.cp.clone()
        model.clear_assumptions()
        model.add_assumptions([lits[i] for i in active])
        s = cp_model.CpSolver()
        s.parameters.num_workers = 1
        s.parameters.max_time_in_seconds = time_limit
        st = interrupt.watch(s).solve(model)
        if st == cp_model.INFEASIBLE:
            core = set(s.sufficient_assumptions_for_infeasibility())
            cores["first"] = [i for i in active if lits[i].index in core]
            return False
        return st in (cp_model.OPTIMAL, cp_model.FEASIBLE) or None

    everything = list(range(len(lits)))
    if feasible(everything) is not False:
        return None if feasible(everything) else ["(solver time limit reached)"]
    core = cores.get("first", everything) or everything
    # Deletion filter: drop each requirement in turn; keep it only if the rest become feasible.
    i = 0
    while i < len(core):
        trial = core[:i] + core[i + 1 :]
        if trial and feasible(trial) is False:
            core = trial
        else:
            i += 1
    return [names[i] for i in core]


def pool_notes(inventory, all_slices, features) -> list[str]:
    """Why pools (and slices) that reach the node give no devices: incomplete (not every slice of
    the pool's generation is in the input), invalid, or left out by a feature gate."""
    notes = []
    for pool in inventory.pools:
        if pool.invalid:
            notes.append(f"pool {pool.id} is invalid, none of its devices is used: {pool.invalid_reason}")
        if not pool.incomplete:
            continue
        same = [
            s
            for s in all_slices
            if s.spec.driver == pool.driver
            and s.spec.pool.name == pool.name
            and s.spec.pool.generation == pool.generation
        ]
        want = same[0].spec.pool.resource_slice_count if same else 0
        if len(same) != want:
            notes.append(
                f"pool {pool.id} is incomplete, none of its devices is used: {len(same)} of its "
                f"{want} ResourceSlices (generation {pool.generation}) are in the input"
            )
        else:
            notes.append(
                f"pool {pool.id} is treated as incomplete: its devices have compatibilityGroups "
                f"and DRADeviceCompatibilityGroups is off"
            )
    if not features.partitionable_devices:
        node = inventory.node.name if inventory.node is not None else None
        for s in all_slices:
            if (s.spec.shared_counters or s.spec.per_device_node_selection is not None) and (
                s.spec.node_name in (None, "", node)
            ):
                notes.append(
                    f"ResourceSlice {s.name} is left out: it uses sharedCounters or "
                    f"perDeviceNodeSelection and DRAPartitionableDevices is off"
                )
    return notes


def explain_problem(problem: Problem, node_name: str | None) -> NodeExplanation:
    ex = NodeExplanation(node_name)
    for claim in problem.claims:
        for group in claim.requests:
            for spec in group.alternatives:
                counts: Counter[str] = Counter()
                for dev in problem.devices:
                    why = device_rejection(problem, spec, dev)
                    counts[why or "usable"] += 1
                if not problem.devices:
                    counts["no devices on this node"] += 1
                ex.rejections[f"{claim.key} {spec.full_name}"] = counts
    try:
        conflict = minimal_conflict(problem)
    except AllocationError as e:
        ex.error = str(e)
        return ex
    ex.fits = conflict is None
    ex.conflict = conflict or []
    return ex


def explain_claims(objects, claims, features, node: str | None = None) -> list[NodeExplanation]:
    """Explain allocating the claims together on the node (or on every node)."""
    from draopt.allocation import allocate as api
    from draopt.dra.inventory import build_inventory

    todo, in_use = api.select_claims(objects, claims)
    classes = {c.name: c for c in objects.device_classes}
    cel_env = api._cel_env(features)
    out = []
    for candidate in api._candidate_nodes(objects, node):
        inv = build_inventory(objects.resource_slices, candidate, in_use, features, objects.taint_rules)
        name = candidate.name if candidate is not None else None
        notes = pool_notes(inv, objects.resource_slices, features)
        try:
            problem = prepare(todo, inv, classes, features, cel_env)
        except AllocationError as e:
            out.append(NodeExplanation(name, error=str(e), pools=notes))
            continue
        out.append(explain_problem(problem, name))
        out[-1].pools = notes if not out[-1].fits else []
    return out


def explain_failed_pod(cluster, book, pod, reasons: list[str]) -> str:
    """The device side of why `pod` did not fit, on the first EXPLAIN_NODES nodes that could take
    it (the first-fit placement's FailureExplainer); what the headline `reasons` already say is not
    repeated per node."""
    from draopt.cluster.firstfit import EXPLAIN_NODES, filter_reason

    exps = [e for e in explain_pod(cluster, book, pod, EXPLAIN_NODES, node_check=filter_reason) if not e.reason]
    for e in exps:
        # (a filter error's message gives the error without draopt's request and expression)
        if e.error and any(e.error.split(" (request ", 1)[0] in r for r in reasons):
            e.error = ""
    return render([e for e in exps if len(e.lines()) > 1])


def explain_pod(cluster, book, pod, max_device_nodes: int | None = None, *, node_check=None) -> list[NodeExplanation]:
    """Explain a pod against the cluster's current state, node by node (device-level
    explanations for at most `max_device_nodes` nodes). `node_check(cluster, book, pod, node)`:
    the scheduler's filter for one node (a reason, or None); the placement layer passes its own,
    since this layer sits below it."""
    from draopt.cluster.state import pod_on
    from draopt.kube.nodeselect import node_selector_matches

    out = []
    deep = 0
    whole = pod
    for node in cluster.nodes:
        ex = NodeExplanation(node.name)
        pod = pod_on(node, whole)  # (a device plugin may serve its extended resources here)
        rejected = cluster.node_rejects(node, pod)
        if rejected is not None:
            ex.reason = rejected
        elif node.fits(pod.resources) is not None:
            r = node.fits(pod.resources)
            ex.reason = (
                f"insufficient {r} ({pod.resources[r]} requested, "
                f"{node.allocatable.get(r, 0) - node.used.get(r, 0)} free)"
            )
        out.append(ex)
        if ex.reason:
            continue
        todo = []
        for use in pod.claims:
            alloc = book.allocation(use.key)
            if alloc is not None:
                if alloc.node_selector is not None and not node_selector_matches(alloc.node_selector, node.node):
                    ex.reason = f"claim {use.key} is allocated for another node"
            elif use.key not in todo:
                todo.append(use.key)
        if ex.reason:
            continue
        if not todo:
            ex.fits = True
            _node_allocatable_check(cluster, book, pod, node, ex, node_check)
            continue
        if max_device_nodes is not None and deep >= max_device_nodes:
            ex.reason = "(devices not analysed: node limit)"
            continue
        deep += 1
        notes = pool_notes(cluster.inventory(node), cluster.objects.resource_slices, cluster.features)
        try:
            problem = prepare(
                [book.claims[k] for k in todo],
                cluster.inventory(node),
                cluster.classes,
                cluster.features,
                cluster.cel_env,
                cluster.expr_cache,
            )
        except AllocationError as e:
            ex.error, ex.pools = str(e), notes
            continue
        got = explain_problem(problem, node.name)
        ex.rejections, ex.conflict, ex.fits, ex.error = got.rejections, got.conflict, got.fits, got.error
        ex.pools = notes if not ex.fits else []
        if ex.fits:
            _node_allocatable_check(cluster, book, pod, node, ex, node_check)
    return out


def _node_allocatable_check(cluster, book, pod, node, ex: NodeExplanation, node_check) -> None:
    """Devices found: with DRANodeAllocatableResources the devices the allocator picks add node
    resources (or break a pod-level or sharing rule), so the node fits only if the first-fit
    filter says so too (it would otherwise read "fits" after "Insufficient memory")."""
    if not cluster.features.node_allocatable_resources or node_check is None:
        return
    reason = node_check(cluster, book, pod, node)
    if reason is not None:
        ex.fits, ex.reason = False, reason


def group_nodes(explanations: list[NodeExplanation]) -> list[tuple[list[str], NodeExplanation]]:
    """Nodes with the same explanation, together (a 500-node answer stays readable)."""
    groups: dict[str, tuple[list[str], NodeExplanation]] = {}
    for ex in explanations:
        key = "\n".join(ex.lines()[1:]) + f"|{ex.fits}|{ex.reason}"
        if key not in groups:
            groups[key] = ([], ex)
        groups[key][0].append(str(ex.node))
    return list(groups.values())


def render(explanations: list[NodeExplanation]) -> str:
    lines = []
    for nodes, ex in group_nodes(explanations):
        first = ex.lines()
        label = (
            nodes[0]
            if len(nodes) == 1
            else f"{nodes[0]} (and {len(nodes) - 1} more: {', '.join(nodes[1:6])}{', ...' if len(nodes) > 6 else ''})"
        )
        head = first[0].replace(f"node {ex.node}:", f"node {label}:")
        lines.append(head)
        lines.extend(first[1:])
    return "\n".join(lines)


_NODE_HEADER = re.compile(r"^node (\S+)(?: \(and \d+ more: ([^)]*)\))?:(.*)$")


def narrow_to_node(text: str, node: str) -> tuple[str, bool]:
    """A rendered explanation (:func:`render`: nodes with the same explanation share one
    ``node A (and 2 more: B, C):`` block) cut down to `node`'s block, headed by `node` alone;
    lines before the first block (what the explanation is of) are kept. Returns the text and
    whether `node` had a block (a group of more than 6 nodes names only its first 6: a node
    beyond them is not found)."""
    out: list[str] = []
    keep, found, seen_block = True, False, False
    for line in text.splitlines():
        m = _NODE_HEADER.match(line)
        if m:
            seen_block = True
            names = [m.group(1)] + [n for n in (m.group(2) or "").split(", ") if n and n != "..."]
            keep = node in names
            if keep:
                found = True
                out.append(f"node {node}:{m.group(3)}")
            continue
        if keep and (not seen_block or line.startswith(" ")):
            out.append(line)
        elif not line.startswith(" "):
            keep = False
    return "\n".join(out), found


@dataclass
class Section:
    """One part of `draopt explain`'s answer about one subject: a pod (``pod default/p``) or the
    claims asked about (``claims default/a, default/b``)."""

    subject: str
    title: str  # "first-fit could not place it", "when it failed", "in the state after first-fit"...
    message: str = ""  # the answer: on the title's line, or (`block`) below it
    nodes: list[NodeExplanation] = field(default_factory=list)
    block: bool = False
    # the headline's reasons (filter reason -> how many nodes gave it), for a pod that failed
    reasons: dict[str, int] | None = None
    explained: bool = False  # `message` is a rendered device explanation (render): its nodes go to JSON
    scores: dict[str, Any] | None = None  # `explain --scores`: the ScoreBreakdown's JSON

    def heading(self) -> str:
        head = f"{self.subject}: {self.title}" if self.title else self.subject
        if not self.message:
            return head
        return f"{head}\n{self.message}" if self.block else f"{head}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"subject": self.subject, "section": self.title, "message": self.message}
        if self.reasons is not None:
            out["reasons"] = self.reasons
        nodes = [e.to_json() for e in self.nodes]
        out["nodes"] = nodes + (node_blocks(self.message) if self.explained else [])
        if self.scores is not None:
            out["scores"] = self.scores
        return out


def node_blocks(text: str) -> list[dict[str, Any]]:
    """The node blocks of a rendered explanation (:func:`render`) as JSON: per block its first node,
    the others with the same explanation (``also``, and ``unnamed``: how many more it does not
    name), and its lines (the head's remainder first)."""
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        m = _NODE_HEADER.match(line)
        if m:
            block: dict[str, Any] = {"node": m.group(1)}
            if m.group(2) is not None:
                named = [n for n in m.group(2).split(", ") if n and n != "..."]
                total = int(re.search(r"\(and (\d+) more", line).group(1))  # type: ignore[union-attr]
                block["also"] = named
                block["unnamed"] = total - len(named)
            block["lines"] = [m.group(3).strip()] if m.group(3).strip() else []
            out.append(block)
        elif out and line.startswith(" "):
            out[-1]["lines"].append(line.strip())
    return out
