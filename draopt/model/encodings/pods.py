"""Where pods go: a counted kind's pods per node (`k`, with units alike split by how many of
their pods a node holds), a unit pod's node (`y`) and whether it is placed (`placed`), and the
demand each puts on its node's resources. A counted kind's owners take devices on each node,
or once for all its nodes when they reach the same devices alike (OwnAcrossNodes)."""

from __future__ import annotations

from collections import defaultdict

from draopt.cluster.state import Cluster, NodeState, pod_on
from draopt.model.encodings.claims import add_requests
from draopt.model.encodings.context import ModelContext, Owner
from draopt.model.prepare import Prepared
from draopt.model.reductions import DeviceRef, Kind


def add_counted_kind(ctx: ModelContext, kind: Kind) -> None:
    """Pods of a counted kind per node, their owners, and (but on one node alone) the pods
    placed per (priority, group)."""
    prep, cluster = ctx.prep, ctx.cluster
    rep = kind.pods[0]
    per_node = [n * v for n, v in ctx.node_classes.pods_of_kind.get(kind.index, [])]
    kind_nodes = [
        n
        for n in _nodes_within(prep, rep.key, ctx.node_names, cluster)
        if n.name not in ctx.node_classes.nodes and ctx.free(n, pod_on(n, rep).resources) > 0
    ]
    # Devices every node of the kind reaches alike: one owner for all of them. (Decided for
    # each kind: a kind refused, e.g. one that fits a single node, leaves the later kinds theirs.)
    ctx.check_time()
    across = (
        ctx.across
        and not ctx.one_node
        and not per_node
        and prep.reductions.own_across.apply(
            kind, kind_nodes, prep.refs, lambda node, refs: _candidate_columns(prep, kind, node, refs)
        )
    )
    spanned = []
    for node in _nodes_within(prep, rep.key, ctx.node_names, cluster):
        if node.name in ctx.node_classes.nodes:
            continue
        ctx.check_time()
        got = _pods_on_node(ctx, kind, node, per_node)
        if got is None:
            continue
        var, cap = got
        p = prep.problems.get((kind.index, node.name))
        if p is not None and across:
            spanned.append((node, var, p))
        elif p is not None:
            owner = Owner(len(ctx.owners), kind, node, var, p, None)
            ctx.owners.append(owner)
            add_requests(ctx, owner, cap)
    if spanned:
        _owner_across_nodes(ctx, kind, spanned)
    if kind.unit_size > 1:
        # No more units placed than there are (each counts once, whatever pods it places).
        unit_vars = [ctx.k[(kind.index, n)] for (ki, n) in ctx.unit_parts if ki == kind.index]
        if unit_vars:
            ctx.m.add(ctx.cp.add(sum(unit_vars) <= len(kind.units)))
    if ctx.one_node:
        return  # a configuration check: only what one node holds matters
    _placed_per_class(ctx, kind, per_node)


def _pods_on_node(ctx: ModelContext, kind: Kind, node: NodeState, per_node: list):
    """The kind's pods (or units) on the node, and their bound; None where none fits."""
    m, cp = ctx.m, ctx.cp
    rep = kind.pods[0]
    size = kind.unit_size
    # (the pod as the node serves it: a device plugin's extended resources are node resources)
    rep_resources = pod_on(node, rep).resources
    cap = min(len(kind.units) if size > 1 else len(kind.pods), ctx.free(node, rep_resources))
    if cap <= 0:
        return None
    var = cp.new_int_var(0, cap, f"k[{kind.index},{node.name}]")
    ctx.k[(kind.index, node.name)] = var
    if ctx.preempts(rep):
        ctx.prio_of[var.index] = rep.priority
    if size == 1:
        per_node.append(var)
        ctx.node_demand[node.name].append((rep_resources, var))
        return var, cap
    # Units alike: k[j] units with j of their pods placed here (their claims once each).
    parts = []
    for j in range(1, size + 1):
        cap_j = min(len(kind.units), ctx.free(node, rep_resources) // j)
        if cap_j <= 0:
            continue
        kj = cp.new_int_var(0, cap_j, f"k[{kind.index},{node.name},{j}]")
        if ctx.preempts(rep):
            ctx.prio_of[kj.index] = rep.priority
        parts.append((j, kj))
        ctx.node_demand[node.name].append(({r: v * j for r, v in rep_resources.items()}, kj))
    m.add(cp.add(var == sum(kj for _, kj in parts)))
    per_node.append(sum(j * kj for j, kj in parts))
    ctx.unit_parts[(kind.index, node.name)] = parts
    return var, cap


def _owner_across_nodes(ctx: ModelContext, kind: Kind, spanned: list) -> None:
    """One owner for the kind's pods on every node that reaches the same devices alike."""
    m, cp = ctx.m, ctx.cp
    node0, _, p0 = spanned[0]
    total = cp.new_int_var(0, len(kind.pods), f"k[{kind.index},*]")
    m.add(cp.add(total == sum(v for _, v, _ in spanned)))
    owner = Owner(len(ctx.owners), kind, node0, total, p0, None, spans=[n.name for n, _, _ in spanned])
    ctx.owners.append(owner)
    add_requests(ctx, owner, len(kind.pods))


def _placed_per_class(ctx: ModelContext, kind: Kind, per_node: list) -> None:
    """The kind's pods placed per (priority, group): the objective's and the gangs' terms."""
    cp = ctx.cp
    classes: dict[tuple, list] = defaultdict(list)
    for pod in kind.pods:
        classes[(pod.priority, pod.group)].append(pod)
    for ck, pods in classes.items():
        ctx.totals[(kind.index, ck)] = cp.new_int_var(0, len(pods), f"placed[{kind.index},{ck}]")
        ctx.class_pods[(kind.index, ck)] = pods
    ctx.m.add(cp.add(sum(ctx.totals[(kind.index, ck)] for ck in classes) == sum(per_node)))


def add_unit_pods(ctx: ModelContext, kind: Kind) -> None:
    """A unit: each pod's node (`y`) and whether it is placed."""
    m, cp, prep = ctx.m, ctx.cp, ctx.prep
    ctx.check_time()
    for pod in kind.pods:
        vs = []
        for node in prep.pod_nodes[pod.key]:
            if node.name not in ctx.node_names or ctx.free(node, pod_on(node, pod).resources) <= 0:
                continue
            v = ctx.y[(pod.key, node.name)] = cp.new_bool_var(f"y[{pod.key},{node.name}]")
            if ctx.preempts(pod):
                ctx.prio_of[v.index] = pod.priority
            vs.append(v)
            ctx.node_demand[node.name].append((pod_on(node, pod).resources, v))
        ctx.placed[pod.key] = cp.new_bool_var(f"placed[{pod.key}]")
        m.add(cp.add(sum(vs) == ctx.placed[pod.key]))


def _candidate_columns(prep: Prepared, kind: Kind, node: NodeState, refs: list[DeviceRef]):
    """The columns some request of the kind may take on the node (None: no problem there)."""
    p = prep.problems.get((kind.index, node.name))
    if p is None:
        return None
    specs = [s for cl in p.claims for g in cl.requests for s in g.alternatives]
    out = []
    for ref in refs:
        e = ref.first if ref.node is not None else p.inventory.by_id.get(ref.first.id)
        if e is not None and any(prep.candidacy(p, s, e) for s in specs):
            out.append(ref)
    return out


def _nodes_within(prep: Prepared, pod_key: str, node_names: set[str], cluster: Cluster) -> list[NodeState]:
    """The pod's candidate nodes that are in `node_names`, in node order."""
    nodes = prep.pod_nodes[pod_key]
    if len(node_names) * 4 < len(nodes):
        names = prep.name_sets
        key = id(nodes)
        if key not in names:
            names[key] = {n.name for n in nodes}
        inside = names[key]
        return sorted((cluster.by_name[n] for n in node_names if n in inside), key=lambda n: n.index)
    return [n for n in nodes if n.name in node_names]
