"""The input `plan --consolidate` solves, and its CP-SAT model: the running cluster with its movable
pods pending again (their claims deallocated), plus candidate copies of the new node types; the one
placement model (draopt.model.placement) over every node, an "opened" literal per node, and the
consolidation's rules on top of it (draopt.studies.consolidate_rules says which pods move):

- a pod only on an opened node; a node with a pinned pod is opened;
- the DaemonSet pods made for a node (pending, pinned to it) are placed exactly when it is opened;
- per PodDisruptionBudget: the pods it selects that do not stay on their node number at most what
  it allows (the movable pods of one node and one set of budgets are a kind of their own, so a
  kind's pods left on their node are counted by one variable);
- copies of a new type are opened in order (they are alike).

Objectives, each phase holding the one before: the most pods placed (priority-weighted), the least
cost of the opened nodes, the most movable pods left where they run (the fewest moves)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draopt.studies.consolidate_rules import PodRules
from draopt.studies.node_types import NodeType


@dataclass
class ConsolidationInput:
    """The cluster as the model sees it."""

    objects: Any  # ObjectSet: movable pods pending, copies of the new types added
    type_of: dict[str, str]  # copy -> its new type
    daemon_of: dict[str, str]  # pending DaemonSet pod -> the node it is made for
    origin: dict[str, str]  # movable pod -> the node it runs on
    budgets_of: dict[str, tuple[str, ...]]  # movable pod -> its budgets (keys)
    caps: dict[str, int]  # new type -> candidate copies
    notes: list[str] = field(default_factory=list)


def moved_objects(objects, workload, rules: PodRules) -> Any:
    """The objects with every movable pod pending again: no nodeName, its claims (its own, no other
    running pod uses them: consolidate_rules pins the others) without allocation or reservation."""
    movable = set(rules.movable())
    out = copy.copy(objects)
    out.pods = []
    own_claims: set[str] = set()
    by_key = {d.key: d for d in workload.running}
    for pod in objects.pods:
        key = f"{pod.namespace}/{pod.name}"
        if key not in movable:
            out.pods.append(pod)
            continue
        c = pod.model_copy(deep=True)
        c.spec.node_name = None
        c.status.phase = "Pending"
        out.pods.append(c)
        own_claims.update(u.key for u in by_key[key].claims)
    out.resource_claims = []
    for claim in objects.resource_claims:
        if f"{claim.namespace}/{claim.name}" in own_claims:
            claim = claim.model_copy(deep=True)
            claim.status.allocation = None
            claim.status.reserved_for = []
        out.resource_claims.append(claim)
    return out


def with_new_nodes(objs, new_types: list[NodeType], caps: dict[str, int], workload) -> tuple[Any, dict, dict, list]:
    """The objects plus `caps` copies of each new type (draopt.studies.ffd_estimate), each copy with
    the DaemonSet pods that run on its template (running on the copy: they exist with it). DaemonSet
    pods with claims are not copied (said in the notes)."""
    from draopt.studies.ffd_estimate import _with_types

    out, type_of, daemon_of = _with_types(objs, [(t, caps[t.name]) for t in new_types])
    notes: list[str] = []
    daemons_on: dict[str, list] = {}
    for d in workload.running:
        owners = (d.pod.metadata.model_extra or {}).get("ownerReferences") or []
        if any(isinstance(o, dict) and o.get("kind") == "DaemonSet" for o in owners):
            daemons_on.setdefault(d.node_name, []).append(d.pod)
    if not any(daemons_on.get(t.template) for t in new_types):
        return out, type_of, daemon_of, notes
    out = copy.copy(out)
    out.pods = list(out.pods)
    for t in new_types:
        for pod in daemons_on.get(t.template, []):
            if pod.spec.resource_claims:
                notes.append(f"DaemonSet pod {pod.namespace}/{pod.name} has claims: not copied onto new {t.name} nodes")
                continue
            for i in range(caps[t.name]):
                c = pod.model_copy(deep=True)
                c.metadata.name = f"{pod.name}-{t.name}-plan-{i}"
                c.spec.node_name = f"{t.name}-plan-{i}"
                out.pods.append(c)
    return out, type_of, daemon_of, notes


def pending_daemon_pods(objs, workload) -> dict[str, str]:
    """Pending DaemonSet pods made for one existing node (required node affinity to its name)."""
    from draopt.studies.ffd_estimate import _daemon_pod_of

    names = [n.name for n in objs.nodes]
    out = {}
    for d in workload.pending:
        for name in names:
            if _daemon_pod_of(d.pod, name):
                out[d.key] = name
                break
    return out


@dataclass
class Model:
    """The built model and the variables the phases read."""

    prep: Any
    cluster: Any
    workload: Any
    book: Any
    b: Any  # draopt.model.placement.Built
    opened: dict[str, Any]  # node -> literal (1 for a kept node with a pinned pod)
    cost_ints: dict[str, int]  # node -> its cost as the model's integer
    scale: Fraction
    cost_expr: Any
    placed_expr: Any  # placed pods, priority-weighted (DaemonSet pods of a node left out)
    placed_terms: list[tuple[int, Any]]  # its (weight, variable) terms
    placed_count: Any
    stays_expr: Any  # movable pods left on their node
    stay_vars: list[tuple[Any, str, int, str]]  # (var, node, pods, a pod) of each movable kind on its origin
    cheap: int  # weight of every pod with a feasible node
    real: list[Any]  # the pods to place (not the DaemonSet pods made for a node)
    hint_cost: tuple[int, int] | None = None  # the warm start's (placed weight, scaled cost)
    # (stay variable, the kind's count on the node, pods of the kind from that node) of the kinds
    # whose pods run on several nodes: at most both
    stay_caps: list[tuple[Any, Any, int]] = field(default_factory=list)


def build_model(inp: ConsolidationInput, features, costs: dict[str, Fraction], rules: PodRules) -> Model:
    from draopt.cluster.firstfit import ClaimBook
    from draopt.model.encodings.base import scale_to_int
    from draopt.model.placement import build
    from draopt.model.prepare import prepare_cluster
    from draopt.studies.ffd_estimate import _cluster_for

    order = list(inp.caps)
    workload, cluster = _cluster_for(inp.objects, features, inp.type_of, order)
    book = ClaimBook(cluster, workload.claims)

    def tag(pod) -> str:
        # Movable pods alike are one kind whatever node they run on (their budgets alike), so the
        # model has a kind per app and shape, not per node (150 nodes, 514 pods: 482 kinds
        # became 24); a pod with claims keeps its node in its tag (its claims are its own).
        origin = inp.origin.get(pod.key)
        if origin is None:
            return ""
        return f"|consolidate:{origin if pod.claims else ''}:{','.join(inp.budgets_of.get(pod.key, ()))}"

    prep = prepare_cluster(cluster, workload, book, extra_tag=tag)
    names = {n.name for n in cluster.nodes}
    b = build(prep, cluster, workload, book, [k.index for k in prep.kinds], names, patterns=False)
    cp = b.model.cp
    opened = _opened(cp, b, cluster, set(rules.pinned_nodes()) & names, inp)
    _capacity_cuts(cp, b, prep, workload, cluster, opened)
    daemon_of = inp.daemon_of
    for key, node in daemon_of.items():
        var = _placed_var(b, prep, key)
        if var is not None and node in opened:
            cp.add(var == opened[node])
    nodes = [n.name for n in cluster.nodes]
    ints, scale = scale_to_int([costs[n] for n in nodes])
    cost_ints = dict(zip(nodes, ints))
    cost_expr = sum(cost_ints[n] * opened[n] for n in nodes)
    real = [d for d in workload.pending if d.key not in daemon_of]
    placed_terms, placed_count, cheap = _placed(cp, b, prep, workload, real, daemon_of)
    placed_expr = sum(w * v for w, v in placed_terms)
    stay_vars, stay_caps = _stay_vars(cp, b, prep, inp.origin)
    _running_keep_a_place(cp, b, prep, inp.origin)
    _budgets(cp, stay_vars, inp, rules)
    stays_expr = sum(v for v, _, _, _ in stay_vars)
    return Model(
        prep, cluster, workload, book, b, opened, cost_ints, scale, cost_expr, placed_expr, placed_terms, placed_count,
        stays_expr, stay_vars, cheap, real, stay_caps=stay_caps,
    )  # fmt: skip


def _opened(cp, b, cluster, pinned: set[str], inp: ConsolidationInput) -> dict[str, Any]:
    """One literal per node: every placement variable on a node needs it; a node with a pinned pod
    has it set; copies of a type open in order."""
    from draopt.model.encodings.base import upper_bound

    on_node: dict[str, list] = {}
    for (_, n), v in b.k.items():
        on_node.setdefault(n, []).append(v)
    for (_, n), v in b.y.items():
        on_node.setdefault(n, []).append(v)
    opened = {}
    for node in cluster.nodes:
        lit = opened[node.name] = cp.new_bool_var(f"opened[{node.name}]")
        for v in on_node.get(node.name, []):
            cp.add(v <= upper_bound(v) * lit)
        if node.name in pinned:
            cp.add(lit == 1)
    for name, cap in inp.caps.items():
        lits = [opened[f"{name}-plan-{i}"] for i in range(cap) if f"{name}-plan-{i}" in opened]
        for a, c in zip(lits, lits[1:]):
            cp.add(a >= c)
    return opened


def _capacity_cuts(cp, b, prep, workload, cluster, opened) -> None:
    """Per node and for cpu and memory: the requests of the pods placed there, at most its room
    times its literal. Implied by the model's own limits (with the literal), but it ties the
    literal to the room taken, which the bound of the cost phase needs (a fractional node must
    pay for the share it holds)."""
    from draopt.model.encodings.base import scale_to_int

    terms: dict[str, list[tuple[Any, Any]]] = {}  # node -> (pod's demand, variable)
    for (ki, n), v in b.k.items():
        terms.setdefault(n, []).append((prep.kinds[ki].pods[0], v))
    for (pod, n), v in b.y.items():
        terms.setdefault(n, []).append((workload.pod(pod), v))
    for resource in ("cpu", "memory"):
        rows = []
        for node in cluster.nodes:
            cap = node.allocatable.get(resource)
            on = terms.get(node.name, [])
            if cap is None or not on:
                continue
            room = max(Fraction(0), cap - node.used.get(resource, Fraction(0)))
            rows.append((node.name, room, [(d.resources.get(resource, Fraction(0)), v) for d, v in on]))
        values = [room for _, room, _ in rows] + [req for _, _, on in rows for req, _ in on]
        if not values or not any(values):
            continue
        ints, _ = scale_to_int(values)
        it = iter(ints[len(rows) :])
        for (name, _, on), room in zip(rows, ints):
            cp.add(sum(next(it) * v for _, v in on) <= room * opened[name])


def _placed_var(b, prep, key: str):
    """The variable that says pod `key` is placed (a unit pod's, or its counted kind's total)."""
    if key in b.placed:
        return b.placed[key]
    kind = next((k for k in prep.kinds if any(p.key == key for p in k.pods)), None)
    if kind is None:
        return None
    terms = [v for (ki, _), v in b.totals.items() if ki == kind.index]
    return sum(terms) if terms else None


def _placed(cp, b, prep, workload, real, daemon_of):
    from draopt.cluster.result import weight

    daemon_kinds = {k.index for k in prep.kinds if any(p.key in daemon_of for p in k.pods)}
    placed_terms = [(weight(prio), v) for (ki, (prio, _)), v in b.totals.items() if ki not in daemon_kinds] + [
        (weight(workload.pod(p).priority), v) for p, v in b.placed.items() if p not in daemon_of
    ]
    pods_expr = sum(v for (ki, _), v in b.totals.items() if ki not in daemon_kinds) + sum(
        v for p, v in b.placed.items() if p not in daemon_of
    )
    placed_count = cp.new_int_var(0, len(real), "placed_pods")
    cp.add(placed_count == pods_expr)
    cheap = sum(weight(d.priority) for d in real if prep.pod_nodes.get(d.key))
    return placed_terms, placed_count, cheap


def _stay_vars(cp, b, prep, origin: dict[str, str]) -> tuple[list[tuple[Any, str, int, str]], list]:
    """(variable, origin node, pods, a pod of them) per movable kind and node its pods run on (per
    pod of a unit kind): how many of them stay on their node; and the stay variables made for the
    kinds whose pods run on several nodes (Model.stay_caps). A kind's movable pods share one set of
    budgets (the kind's tag has them); alike, any of them on a node may be the one that ran there."""
    out: list[tuple[Any, str, int, str]] = []
    caps: list[tuple[Any, Any, int]] = []
    for kind in prep.kinds:
        first = kind.pods[0].key
        if origin.get(first) is None:
            continue
        if not kind.counted:
            for p in kind.pods:
                node = origin[p.key]
                var = b.y.get((p.key, node))
                out.append((var if var is not None else 0, node, 1, p.key))
            continue
        on: dict[str, list[str]] = {}
        for p in kind.pods:
            on.setdefault(origin[p.key], []).append(p.key)
        for node, keys in on.items():
            var = b.k.get((kind.index, node))
            if var is not None and len(on) > 1:
                stay = cp.new_int_var(0, len(keys), f"stay[{kind.index},{node}]")
                cp.add(stay <= var)
                caps.append((stay, var, len(keys)))
                var = stay
            out.append((var if var is not None else 0, node, len(keys), keys[0]))
    return out, caps


def _running_keep_a_place(cp, b, prep, origin: dict[str, str]) -> None:
    """Every movable pod is placed: a consolidation moves running pods, it never evicts one for good
    (nor for a pending pod of higher priority: that is preemption's)."""
    for kind in prep.kinds:
        if origin.get(kind.pods[0].key) is None:
            continue
        # (a pod without a variable is pinned, and the model built again: unplaceable_where_they_run)
        if kind.counted:
            terms = [v for (ki, _), v in b.totals.items() if ki == kind.index]
            if terms:
                cp.add(sum(terms) == len(kind.pods))
        else:
            for p in kind.pods:
                if p.key in b.placed:
                    cp.add(b.placed[p.key] == 1)


def unplaceable_where_they_run(model: Model, origin: dict[str, str]) -> list[str]:
    """Movable pods the model cannot put back on their own node (a taint, a cordon, their devices
    taken or tainted since they were placed): Kubernetes lets them run there; they are pinned."""
    out: list[str] = []
    for var, node, _, key in model.stay_vars:
        if isinstance(var, int):
            out.extend(k for k in _kind_keys(model.prep, key) if origin.get(k) == node)
    return out


def _kind_keys(prep, key: str) -> list[str]:
    kind = next(k for k in prep.kinds if any(p.key == key for p in k.pods))
    return [p.key for p in kind.pods] if kind.counted else [key]


def _budgets(cp, stay_vars, inp: ConsolidationInput, rules: PodRules) -> None:
    """Per budget: the pods it selects that leave their node, at most what it allows."""
    for budget in rules.budgets:
        terms = [(var, pods) for var, _, pods, key in stay_vars if budget.key in inp.budgets_of.get(key, ())]
        if terms:
            cp.add(sum(pods - var for var, pods in terms) <= budget.allowed)
