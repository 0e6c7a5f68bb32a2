"""The one placement model: every pending pod, candidate node and device of the cluster in one
CP-SAT model, built by the steps of `draopt.model.encodings` (pods, claims, node_classes,
usage, counters, node_resources, gangs, packing) over one `ModelContext`, with their rules
(usage, counters, compatibility, capacity, attributes). `allocate` is this model with one pod
and one candidate node (`draopt.model.single_node`, `reductions.claims_on_one_node`).

Owners take devices. An owner is either
* a counted kind on one node (`CountIdenticalPods`): `k` identical pods of the kind go there,
  its variables count devices over all of them; or
* one pending claim of a unit (a pod, or pods that share claims), over every node its pods
  may use: `active` if the claim is allocated, its devices tied to its pods' nodes by the reach
  rule (a chosen device must be reachable from the node of every placed pod that uses it).
Columns are devices, or groups of identical node-local devices (`GroupDevices`). Every rule
holds across owners: a device is given once (pools several nodes reach are counted once),
counter sets and shared capacity are respected cluster-wide, node cpu/memory/pods and
device-derived node resources per node, gangs all or nothing.

The objective is lexicographic and solved in phases (see `draopt/placement/objective.py`):
(1) priority-weighted placed pods, (2) most preferred sub-requests, (3) packing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from draopt.cluster.firstfit import ClaimBook
from draopt.cluster.result import weight
from draopt.cluster.state import Cluster
from draopt.model import topology_domains
from draopt.model.encodings import claims, counters, gangs, node_classes, node_resources, packing, pods, usage
from draopt.model.encodings.context import ModelContext, Owner, PlacementModel, Term
from draopt.model.prepare import Prepared, _check_time
from draopt.model.reductions import Kind

__all__ = [
    "Built",
    "Owner",
    "PlacementModel",
    "Term",
    "build",
    "one_node_model",
    "packing_objective",
    "representative_owners",
]


@dataclass
class Built:
    model: PlacementModel
    owners: list[Owner]
    kinds: list[Kind]
    k: dict[tuple[int, str], Any]  # counted kind, node -> pods there
    y: dict[tuple[str, str], Any]  # unit pod, node -> placed there
    placed: dict[str, Any]  # unit pod -> placed
    totals: dict[tuple[int, tuple], Any]  # counted kind, (priority, group) -> pods placed
    class_pods: dict[tuple[int, tuple], list]
    objective: Any
    preference: list
    packing: dict[str, list]
    node_classes: list = field(default_factory=list)  # interchangeable nodes (patterns.NodeClass)
    unit_parts: dict = field(default_factory=dict)  # counted units: (kind, node) -> [(pods placed, count var)]
    victims: Any = None  # draopt.model.victims.Encoded: running pods the model may evict


def build(
    prep: Prepared,
    cluster: Cluster,
    workload,
    book: ClaimBook | None,
    kind_ids: list[int],
    node_names: set[str],
    *,
    one_node: bool = False,
    patterns: bool = True,
    pattern_seconds: float = 5.0,
    across: bool = True,
    deadline: float | None = None,
    kubernetes_quirks: bool = False,
    explain: bool = False,
    allocation: bool = False,
    packing_terms: bool = True,
    victims=None,
) -> Built:
    """The model of one independent part: the kinds `kind_ids` over the nodes `node_names`.
    `one_node`: the model of one node alone (no gangs, no interchangeable-node reduction),
    used to enumerate that reduction's configurations, and allocate's model. `across`: apply
    OwnAcrossNodes. `deadline` (perf_counter): past it, `OutOfTime` is raised (the time limit
    bounds the build). `kubernetes_quirks`: the allocator's static defects (allocate's
    first-fit: admin access blocks later requests, admin access draws counters). `explain`:
    named requirements behind guard literals (`PlacementModel.guards`). `allocation`: allocate's
    model (its one pod on one node): constraints that hold by themselves there are left out.
    `packing_terms`: make the packing objective's terms (`Built.packing`; allocate's first-fit
    and explain have no use for them). `victims` (draopt.model.victims.VictimSet): running pods
    the model may evict (the cluster is the one without them). The steps: `_encode`."""
    m = PlacementModel(explain)
    ctx = ModelContext(
        m,
        prep,
        cluster,
        workload,
        book,
        [prep.kinds[i] for i in kind_ids],
        node_names,
        check_time=lambda: _check_time(deadline),
        one_node=one_node,
        across=across,
        kubernetes_quirks=kubernetes_quirks,
        allocation=allocation,
        packing_terms=packing_terms,
        victims=victims,
    )
    _encode(ctx, patterns, pattern_seconds, deadline)
    return _built(ctx)


def _encode(ctx: ModelContext, patterns: bool, pattern_seconds: float, deadline: float | None) -> None:
    """The steps, each in its module of `draopt.model.encodings`, in the order they add variables
    and constraints (the order is the model: CP-SAT's answers and times depend on it)."""
    m, prep, cluster, workload = ctx.m, ctx.prep, ctx.cluster, ctx.workload
    victims, one_node = ctx.victims, ctx.one_node
    if victims is not None and not one_node:
        from draopt.model import victims as victim_rules

        ctx.enc = victim_rules.encode(m, victims, prep, ctx.node_names)
    # Interchangeable nodes lose which node is where: not with topology domains.
    if patterns and not one_node and not topology_domains.applies(workload, ctx.kinds):
        node_classes.count_interchangeable_nodes(ctx, pattern_seconds, deadline, one_node_model)
    for kind in ctx.kinds:
        if kind.counted:
            pods.add_counted_kind(ctx, kind)
        else:
            # A unit: pods with their own node variables, one owner per pending claim.
            pods.add_unit_pods(ctx, kind)
            claims.add_unit_claims(ctx, kind)
    # Global rules over every owner: who may share a device, shared capacity, counters.
    usage.index_columns(ctx)
    if ctx.enc is not None:
        victim_rules.limit_columns(m, ctx.enc, ctx.by_ref, ctx.refs)
    usage.limit_every_device(ctx)
    if cluster.features.partitionable_devices:
        counters.limit_every_pool(ctx)
    if prep.node_resources_of_devices:
        node_resources.device_node_resources(ctx)
    node_resources.limit_nodes(ctx)
    if ctx.enc is not None:
        victim_rules.necessary(m, ctx.enc, victims, cluster, ctx.node_demand, ctx.prio_of, ctx.by_ref, ctx.refs)
    gangs.collect_terms(ctx)
    # Groups of pod-group cycles: their domains, whole groups and composites (topology_domains).
    handled = (
        set()
        if one_node
        else topology_domains.encode(m, workload, cluster, ctx.kinds, ctx.k, ctx.y, ctx.totals, ctx.gang_terms)
    )
    if ctx.enc is not None:
        victim_rules.justify(m, ctx.enc, victims, workload, ctx.kinds, ctx.k, ctx.y, ctx.gang_terms)
    if not one_node:
        gangs.all_or_nothing(ctx, handled)


def _built(ctx: ModelContext) -> Built:
    return Built(
        ctx.m,
        ctx.owners,
        ctx.kinds,
        ctx.k,
        ctx.y,
        ctx.placed,
        ctx.totals,
        ctx.class_pods,
        _placed_weight(ctx),
        ctx.preference,
        packing.packing_terms(ctx),
        ctx.node_classes.used,
        ctx.unit_parts,
        ctx.enc,
    )


def _placed_weight(ctx: ModelContext):
    """Phase 1's objective: priority-weighted placed pods."""
    return sum(weight(prio) * var for (ki, (prio, _)), var in ctx.totals.items()) + sum(
        weight(ctx.workload.pod(p).priority) * var for p, var in ctx.placed.items()
    )


def packing_objective(b: Built):
    """Phase 3: the packing levels of `draopt.model.objective` (one definition for place and allocate)."""
    from draopt.model.objective import lexicographic, packing_levels

    p = b.packing
    if not p["nodes"] and not p["counter_sets"] and not p["devices"]:
        return None
    return lexicographic(
        packing_levels(
            nodes=p["nodes"],
            counter_sets=p["counter_sets"],
            amounts=p["amounts"],
            devices=p["devices"],
            order=p["order"],
        )
    )


def one_node_model(nc, prep, cluster, workload, book, packed: bool = True):
    """The one model on node class nc's representative node, for its configuration checks
    (draopt.model.patterns); `packed`: checks minimise the packing objective."""
    from draopt.model.patterns import OneNodeModel

    b = build(prep, cluster, workload, book, nc.kinds, {nc.nodes[0].name}, one_node=True)
    return OneNodeModel(nc, b, packing_objective(b) if packed else None)


def representative_owners(nc, prep, cluster, workload, book) -> dict:
    """Owners built on the representative node (their terms give positions to map)."""
    if not nc.rep_owners:
        b = build(prep, cluster, workload, book, nc.kinds, {nc.nodes[0].name}, one_node=True)
        nc.rep_owners = {o.kind.index: o for o in b.owners}
    return nc.rep_owners
