"""One CP-SAT model that chooses nodes and devices for all pending pods at once.

Pods with the same requirements are interchangeable, so they are grouped into classes and
the model counts them: k[c, n] pods of class c on node n. Devices on a node that every class
sees alike (same candidacy, node-local, no counters, not multi-allocatable) are grouped too:
z[c, r, n, e] devices of group e serve request r of class c's pods on n. Devices that draw on
counters, serve multiple allocations or sit in pools several nodes reach stay single. This
keeps the model about linear in (pod classes x candidate nodes x device groups) instead of
pods x nodes x devices.

Scope: pods whose claims are private and made of plain ExactCount requests (any class,
selectors, tolerations, consumable-capacity requests) are optimised, with one choice dimension
per pod: a prioritized list (pods counted per node and sub-request) or a scalar matchAttribute
(pods counted per node and attribute value; device groups never mix values). Pods with more
than one of those, distinctAttribute, admin access, derived attributes, All, list-type
matching, device-derived node resources, or claims shared with other pods keep the placement
first-fit gave them (together with their whole gang); the model packs everything else around
them.

Objective, lexicographic: (1) priority-weighted placed pods, gangs whole; then, with (1) held
at its best, (2) the most preferred sub-requests and (3) the fewest touched nodes and counter
sets. The model is warm-started from the first-fit placement and required to be at least as
good, so the answer is never worse than first-fit; the proven bound and gap of (1) are reported.
"""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ortools.sat.python import cp_model

from ..decode import decode, deterministic_share_id
from ..encodings.base import scale_to_int
from ..errors import AllocationError
from ..inventory import DeviceEntry, available_counters
from ..problem import prepare
from ..reference import Chosen
from .cluster import Cluster, NodeState
from .firstfit import ClaimBook, _scheduling_constraints, simulate, try_node
from .result import PlacementResult, PodPlacement, weight


@dataclass
class PodClass:
    key: tuple
    pods: list[Any]                       # PodDemand, queue order
    group: str | None
    priority: int
    resources: dict[str, Fraction]
    slots: list[tuple[int, int, int]] = field(default_factory=list)   # (claim index, request index, count)
    slot_alt: list[int | None] = field(default_factory=list)         # the sub-request a slot belongs to
    alts: int = 0                                                     # sub-requests of its prioritized list
    list_request: tuple[int, int] | None = None                       # (claim index, request index) of it
    match: str | None = None                                          # matchAttribute name, if any
    match_slots: set[int] = field(default_factory=set)                # the slots it covers
    nodes: list[NodeState] = field(default_factory=list)
    rep_problem: dict[str, Any] = field(default_factory=dict)          # node name -> representative Problem


def _plain(fields, admin_ok: bool = False) -> bool:
    if (fields.allocation_mode or "ExactCount") != "ExactCount" or fields.derived_attributes:
        return False
    return admin_ok or not getattr(fields, "admin_access", None)


def _simple_claim(claim) -> tuple[int, int] | None:
    """(firstAvailable requests, matchAttribute constraints) of the claim if the model can take
    it (plain ExactCount requests and sub-requests, constraints only matchAttribute), else None."""
    d = claim.spec.devices
    if any(c.match_attribute is None for c in d.constraints):
        return None
    lists = 0
    for r in d.requests:
        if r.first_available:
            if r.exactly is not None or not all(_plain(sub) for sub in r.first_available):
                return None
            lists += 1
        elif r.exactly is None or not _plain(r.exactly):
            return None
    return lists, len(d.constraints)


def classify(workload, book: ClaimBook, ff: PlacementResult):
    """(classes, fixed pod keys): which pods the model optimises, which keep first-fit's answer."""
    users = defaultdict(list)
    for pod in workload.pending:
        for use in pod.claims:
            users[use.key].append(pod.key)
    complex_groups = set()
    simple: dict[str, bool] = {}
    # Device-derived node resources are not in the aggregated model: those pods keep first-fit's answer.
    derived_node_resources = book.cluster.features.node_allocatable_resources and any(
        d.node_allocatable_resources for s in book.cluster.objects.resource_slices for d in s.spec.devices)
    for pod in workload.pending:
        ok = not (derived_node_resources and pod.claims)
        lists = matches = 0
        for use in pod.claims:
            claim = book.claims[use.key]
            n = _simple_claim(claim)
            if claim.status.allocation is not None or len(set(users[use.key])) > 1 or n is None:
                ok = False
            else:
                lists += n[0]
                matches += n[1]
        # One choice dimension per pod is modelled: a prioritized list (which sub-request) or a
        # matchAttribute (which value), each counted per node.
        if lists + matches > 1 or (matches and book.cluster.features.list_type_attributes):
            ok = False
        simple[pod.key] = ok
        if not ok and pod.group:
            complex_groups.add(pod.group)
    classes: dict[tuple, PodClass] = {}
    fixed = []
    for pod in workload.pending:
        if not simple[pod.key] or pod.group in complex_groups:
            fixed.append(pod.key)
            continue
        sig = tuple(book.signature(u.key) for u in pod.claims)
        res = tuple(sorted((k, v) for k, v in pod.resources.items()))
        key = (sig, res, tuple(sorted(pod.node_selector.items())) + (("", _scheduling_constraints(pod)),),
               pod.priority, pod.group)
        c = classes.get(key)
        if c is None:
            c = classes[key] = PodClass(key, [], pod.group, pod.priority, dict(pod.resources))
            # Slots in the order of Problem's flattened specs: claims, requests, sub-requests.
            for ci, use in enumerate(pod.claims):
                for ri, r in enumerate(book.claims[use.key].spec.devices.requests):
                    if r.first_available:
                        for a, sub in enumerate(r.first_available):
                            c.slots.append((ci, ri, sub.count or 1))
                            c.slot_alt.append(a)
                        c.alts = len(r.first_available)
                        c.list_request = (ci, ri)
                    else:
                        c.slots.append((ci, ri, r.exactly.count or 1))
                        c.slot_alt.append(None)
                for con in book.claims[use.key].spec.devices.constraints:
                    names = set(con.requests)
                    requests = book.claims[use.key].spec.devices.requests
                    c.match = con.match_attribute
                    c.match_slots = {si for si, (sci, sri, _) in enumerate(c.slots)
                                     if sci == ci and (not names or requests[sri].name in names)}
        c.pods.append(pod)
    return list(classes.values()), fixed


def optimize(cluster: Cluster, workload, *, time_limit: float = 60.0, first_fit: PlacementResult | None = None,
             share_id=None) -> PlacementResult:
    t0 = time.perf_counter()
    share_id = share_id or deterministic_share_id
    # First-fit on a copy of the state gives the warm start and the floor.
    if first_fit is None:
        first_fit = simulate(_fresh(cluster), workload, share_id=share_id)
    ff_by_pod = {p.pod: p for p in first_fit.pods}
    book = ClaimBook(cluster, workload.claims)
    classes, fixed = classify(workload, book, first_fit)
    fixed_set = set(fixed)
    # Fixed pods: commit first-fit's decisions into the state the model packs around.
    by_key = {p.key: p for p in workload.pending}
    for key in fixed:
        pl = ff_by_pod[key]
        if pl.placed:
            for ck, result in pl.new_claims.items():
                book.commit(ck, result, pl.node)
            cluster.by_name[pl.node].take(by_key[key].resources)
    cluster.bump_all()

    groups_by_node: dict[str, list[list[DeviceEntry]]] = {}
    device_of_group: dict[tuple[str, int], list[DeviceEntry]] = {}
    cand: dict[tuple[int, int, str], list[int]] = {}        # (class, slot, node) -> group indexes
    # Candidate nodes and devices per class. Classes that differ only in priority or gang fit
    # the same nodes and devices: the work is done once per kind (claims, resources, selector).
    fit_kind: dict[tuple, int] = {}
    for ci, c in enumerate(classes):
        kind = c.key[:3]
        first = fit_kind.setdefault(kind, ci)
        if first != ci:
            c.nodes, c.rep_problem = classes[first].nodes, classes[first].rep_problem
            c.node_names = classes[first].node_names
            continue
        rep = c.pods[0]
        for node in cluster.nodes:
            reason, fit = try_node(cluster, book, rep, node, {}, share_id)
            if reason is None:
                c.nodes.append(node)
                if fit[0] is not None:
                    c.rep_problem[node.name] = fit[0]
        c.node_names = {n.name for n in c.nodes}
    match_names = sorted({c.match for c in classes if c.match})
    for node in cluster.nodes:
        users = [(ci, c) for ci, c in enumerate(classes) if node.name in c.node_names]
        if not users:
            continue
        inv = cluster.inventory(node)
        pattern: dict[int, list[tuple[int, int]]] = defaultdict(list)
        by_kind: dict[tuple, list[tuple[int, list[bool]]]] = {}
        for ci, c in users:
            problem = c.rep_problem.get(node.name)
            if problem is None:
                continue
            kind = c.key[:3]
            if kind not in by_kind:
                specs = [s for claim in problem.claims for g in claim.requests for s in g.alternatives]
                by_kind[kind] = [(si, [_candidate(problem, spec, dev) for dev in inv.devices])
                                 for si, spec in enumerate(specs)]
            for si, usable in by_kind[kind]:
                for dev, ok in zip(inv.devices, usable):
                    if ok and (si not in c.match_slots or match_value(dev, c.match) is not None):
                        pattern[dev.index].append((ci, si))
        groups: dict[tuple, list[DeviceEntry]] = {}
        for dev in inv.devices:
            pat = tuple(pattern.get(dev.index, ()))
            if not pat:
                continue
            single = bool(dev.device.consumes_counters) or dev.multi_allocatable or \
                dev.slice.spec.node_name != node.name
            # Devices with different values of a matched attribute must not share a group.
            values = tuple(match_value(dev, name) for name in match_names)
            gkey = (pat, values, dev.index) if single else (pat, values)
            groups.setdefault(gkey, []).append(dev)
        glist = list(groups.values())
        groups_by_node[node.name] = glist
        for gi, devs in enumerate(glist):
            device_of_group[(node.name, gi)] = devs
            for ci, si in pattern[devs[0].index]:
                cand.setdefault((ci, si, node.name), []).append(gi)

    prepare_s = time.perf_counter() - t0
    ff_value = sum(weight(ff_by_pod[p.key].priority) for c in classes for p in c.pods if ff_by_pod[p.key].placed)
    stats: dict[str, Any] = {"classes": len(classes), "fixed_pods": len(fixed), "first_fit_objective": ff_value}
    # A cheap bound first: each class alone, on every node it fits, cannot place more.
    bound = _class_bound(classes)
    stats["cheap_bound"] = bound
    values: dict = {}
    proven = bound <= ff_value
    if proven:
        stats["proof"] = "first-fit reaches the per-kind capacity bound"
    components = _components(cluster, classes, workload)
    stats["components"] = len(components)
    total = sum(len(cs) * max(1, len(ns)) for cs, ns in components)
    agg = {"objective": 0, "bound": 0, "variables": 0, "constraints": 0, "status": "OPTIMAL"}
    for comp_classes, comp_nodes in components:
        left = max(0.2, time_limit - (time.perf_counter() - t0))
        budget = left * len(comp_classes) * max(1, len(comp_nodes)) / max(1, total)
        total -= len(comp_classes) * max(1, len(comp_nodes))
        vals, st = _solve_component(cluster, workload, classes, comp_classes, comp_nodes, ff_by_pod,
                                    groups_by_node, device_of_group, cand, budget, proven_optimal=proven)
        if vals is None:
            vals = _first_fit_values(classes, ff_by_pod, groups_by_node, cand, only=set(comp_classes),
                                     book_claims=book.claims)
            st["fallback"] = "no solution within the time limit: first-fit kept"
        values.update(vals)
        for key in ("objective", "bound", "variables", "constraints", "touched", "subrequest_index_sum",
                    "count_s", "packing_s"):
            if key in st:
                agg[key] = agg.get(key, 0) + st[key]
        if st.get("status") != "OPTIMAL":
            agg["status"] = st.get("status", "UNKNOWN")
        if "fallback" in st:
            agg["fallback"] = st["fallback"]
    stats.update(agg)
    stats["gap"] = round((agg["bound"] - agg["objective"]) / agg["bound"], 4) if agg["bound"] else 0.0
    stats["prepare_s"] = round(prepare_s, 3)
    result = _decode(cluster, workload, book, classes, values, groups_by_node, cand, first_fit, fixed_set, share_id)
    stats["solve_s"] = round(time.perf_counter() - t0, 3)
    result.stats.update(stats)
    return result


def kind_of(classes, ci: int) -> int:
    """The first class of the same kind (claims, resources, selector): it indexes k and z."""
    kinds = classes[ci].__dict__.setdefault("_kind_rep", None)
    if kinds is None:
        first = {}
        for i, c in enumerate(classes):
            c._kind_rep = first.setdefault(c.key[:3], i)
    return classes[ci]._kind_rep


def _class_bound(classes) -> int:
    """Priority-weighted pods each kind of pod could place if it had the cluster to itself: its
    highest-priority pods, as many as fit on its nodes' free resources."""
    by_kind: dict[tuple, list] = defaultdict(list)
    for c in classes:
        by_kind[c.key[:3]].append(c)
    total = 0
    for members in by_kind.values():
        c = members[0]
        pods = sorted((weight(m.priority) for m in members for _ in m.pods), reverse=True)
        alone = 0
        for node in c.nodes:
            cap = len(pods)
            for r, v in c.resources.items():
                if v > 0 and r in node.allocatable:
                    cap = min(cap, int((node.allocatable[r] - node.used.get(r, 0)) // v))
            alone += max(0, cap)
        total += sum(pods[:alone])
    return total

def _components(cluster, classes, workload) -> list[tuple[list[int], list]]:
    """Independent parts: classes linked to the nodes they fit on, gangs linking their classes,
    nodes linked through pools they share (networkx connected components)."""
    import networkx as nx
    g = nx.Graph()
    for ci, c in enumerate(classes):
        g.add_node(("class", ci))
        for node in c.nodes:
            g.add_edge(("class", ci), ("node", node.name))
    by_group = defaultdict(list)
    for ci, c in enumerate(classes):
        if c.group:
            by_group[c.group].append(ci)
    for members in by_group.values():
        for a, b in zip(members, members[1:]):
            g.add_edge(("class", a), ("class", b))
    shared = defaultdict(list)
    for node in cluster.nodes:
        if not g.has_node(("node", node.name)):
            continue
        for pool in cluster.inventory(node).pools:
            if any(sl.spec.node_name != node.name for sl in pool.slices):
                shared[(pool.driver, pool.name)].append(node.name)
    for names in shared.values():
        for a, b in zip(names, names[1:]):
            g.add_edge(("node", a), ("node", b))
    out = []
    for comp in nx.connected_components(g):
        cs = sorted(i for kind, i in comp if kind == "class")
        ns = [cluster.by_name[n] for kind, n in sorted(comp, key=str) if kind == "node"]
        ns.sort(key=lambda n: n.index)
        if cs:
            out.append((cs, ns))
    out.sort(key=lambda cn: cn[0][0])
    return out


def pod_list_names(c: PodClass, pod, claims) -> list[str]:
    """Sub-request names of the pod's prioritized list, in order."""
    ci, ri = c.list_request
    return [sub.name for sub in claims[pod.claims[ci].key].spec.devices.requests[ri].first_available]


def _first_fit_values(classes, ff_by_pod, groups_by_node, cand, only: set[int] | None = None,
                      book_claims=None) -> dict:
    """First-fit's placement expressed in the model's variables (k and z counts per kind,
    placed pods per class)."""
    values: dict = defaultdict(int)
    for ci, c in enumerate(classes):
        if only is not None and ci not in only:
            continue
        f = kind_of(classes, ci)
        values[("total", ci)] += 0
        for pod in c.pods:
            pl = ff_by_pod[pod.key]
            if not pl.placed:
                continue
            values[("total", ci)] += 1
            values[(f, pl.node)] += 1
            if not all(u.key in pl.new_claims for u in pod.claims):
                continue
            results = [r for u in pod.claims for r in pl.new_claims[u.key].devices.results]
            alt = None
            if c.alts:
                subs = [r.request.split("/", 1)[1] for r in results if "/" in r.request]
                lst = pod_list_names(c, pod, book_claims)
                alt = lst.index(subs[0]) if subs and subs[0] in lst else 0
                values[("alt", f, pl.node, alt)] += 1
            at = 0
            matched = None
            for si, (_, _, n) in enumerate(c.slots):
                if c.slot_alt[si] is not None and c.slot_alt[si] != alt:
                    continue
                for r in results[at:at + n]:
                    for gi in cand.get((f, si, pl.node), []):
                        if any(d.id == (r.driver, r.pool, r.device) for d in groups_by_node[pl.node][gi]):
                            values[(f, si, pl.node, gi)] += 1
                            if si in c.match_slots:
                                matched = match_value(groups_by_node[pl.node][gi][0], c.match)
                            break
                at += n
            if c.match and matched is not None:
                values[("val", f, pl.node, matched)] += 1
    return dict(values)


def match_value(dev: DeviceEntry, name: str) -> str | None:
    """The device's scalar value of a matched attribute (as a stable string), None without it."""
    from ..constraints import normalise
    from ..rules import lookup_attribute
    v = normalise(lookup_attribute(dev.device.attributes, dev.driver, name), False)
    return None if v is None else repr((v[0], next(iter(v[1]))))


def _limit(solver: cp_model.CpSolver, seconds: float, wall_left: float) -> None:
    """A budget in deterministic time (reproducible answers), and the wall-clock time left as
    a hard stop (the time limit is a promise; a search cut by it may differ between runs)."""
    solver.parameters.max_deterministic_time = seconds
    solver.parameters.max_time_in_seconds = max(0.1, min(3 * seconds, wall_left))


def _qv(value: str) -> Fraction:
    from ..quantity import Quantity
    return Quantity.parse(value).value


def _candidate(problem, spec, dev: DeviceEntry) -> bool:
    if not problem.usable_alone(spec, dev):
        return False
    if problem.features.compatibility_groups and any(c.compatibility_groups for c in dev.device.consumes_counters):
        return False   # not modelled in the aggregated model: left to first-fit
    return True

def _fresh(cluster: Cluster) -> Cluster:
    import copy
    fresh = Cluster.__new__(Cluster)
    fresh.__dict__.update(cluster.__dict__)
    fresh.allocated = copy.deepcopy(cluster.allocated)
    fresh.nodes = [copy.copy(n) for n in cluster.nodes]
    for n in fresh.nodes:
        n.used = dict(n.used)
    fresh.by_name = {n.name: n for n in fresh.nodes}
    fresh._inventories = {}
    return fresh


def _hint(m, classes, k, z, ff_by_pod, groups_by_node, cand, cluster, mine=None, workload=None) -> None:
    """Warm start: first-fit's placement as a solution hint."""
    values = _first_fit_values(classes, ff_by_pod, groups_by_node, cand, only=mine, book_claims=workload.claims)
    for key, v in list(k.items()) + list(z.items()):
        m.add_hint(v, values.get(key, 0))
    for ci in (mine if mine is not None else range(len(classes))):
        m.add_hint(classes[ci].total, values.get(("total", ci), 0))


def _decode(cluster, workload, book, classes, values, groups_by_node, cand, first_fit, fixed_set, share_id):
    ff_by_pod = {p.pod: p for p in first_fit.pods}
    placements: dict[str, PodPlacement] = {}
    for key in fixed_set:
        pl = ff_by_pod[key]
        placements[key] = PodPlacement(key, pl.node, pl.priority, pl.group, dict(pl.new_claims), pl.reasons,
                                       pl.prioritized_score)
    taken: dict[tuple, int] = defaultdict(int)   # device id -> shares taken in decode
    kinds: dict[int, list[int]] = defaultdict(list)
    for ci in range(len(classes)):
        kinds[kind_of(classes, ci)].append(ci)
    for f, members in kinds.items():
        c = classes[f]
        # Which pods of the kind are placed: each class's share, first in queue order.
        chosen_pods = []
        for ci in members:
            n = values.get(("total", ci), 0)
            chosen_pods.extend(classes[ci].pods[:n])
            for pod in classes[ci].pods[n:]:
                ffp = ff_by_pod[pod.key]
                reasons = ffp.reasons if ffp.reasons else {"not placed by the optimal model (capacity used elsewhere)": 1}
                placements[pod.key] = PodPlacement(pod.key, None, pod.priority, pod.group,
                                                   reasons=type(ffp.reasons)(reasons))
        chosen_pods.sort(key=lambda p: p.queue_key)
        for node in c.nodes:
            n_here = values.get((f, node.name), 0)
            if not n_here:
                continue
            remaining = {si: {gi: values.get((f, si, node.name, gi), 0) for gi in cand.get((f, si, node.name), [])}
                         for si in range(len(c.slots))}
            alt_left = {a: values.get(("alt", f, node.name, a), 0) for a in range(c.alts)}
            value_left = {key[3]: n for key, n in values.items()
                          if isinstance(key[0], str) and key[0] == "val" and key[1] == f and key[2] == node.name}
            for _ in range(n_here):
                pod = chosen_pods.pop(0)
                problem = prepare([book.claims[u.key] for u in pod.claims], cluster.inventory(node), cluster.classes,
                                  cluster.features, cluster.cel_env, cluster.expr_cache)
                specs = [s for cl in problem.claims for g in cl.requests for s in g.alternatives]
                chosen = [[] for _ in problem.claims]
                selected = {}
                alt = None
                if c.alts:
                    alt = next(a for a in range(c.alts) if alt_left[a] > 0)
                    alt_left[alt] -= 1
                    selected[c.list_request] = alt
                value = None
                if c.match:
                    value = next(v for v, left in value_left.items() if left > 0)
                    value_left[value] -= 1
                for si, (claim_i, _, count) in enumerate(c.slots):
                    if c.slot_alt[si] is not None and c.slot_alt[si] != alt:
                        continue
                    for _ in range(count):
                        gi = next(g for g, left in remaining[si].items() if left > 0 and (
                            si not in c.match_slots or
                            match_value(groups_by_node[node.name][g][0], c.match) == value))
                        remaining[si][gi] -= 1
                        dev = _free_device(groups_by_node[node.name][gi], taken, cluster)
                        inv_dev = problem.inventory.by_id[dev.id]
                        consumed = problem.consumption(specs[si], inv_dev) \
                            if inv_dev.multi_allocatable and cluster.features.consumable_capacity else None
                        chosen[claim_i].append(Chosen(specs[si], inv_dev, consumed))
                results = decode(problem, chosen, selected, share_id)
                pl = PodPlacement(pod.key, node.name, pod.priority, pod.group)
                for claim, result in zip(problem.claims, results):
                    pl.new_claims[claim.key] = result
                    book.commit(claim.key, result, node.name)
                node.take(pod.resources)
                placements[pod.key] = pl
        if chosen_pods:
            raise AllocationError(f"internal: {len(chosen_pods)} pods chosen by the model but not given a node")
    pods = [placements[p.key] for p in workload.pending]
    claims = {}
    for pl in pods:
        for ck, res in pl.new_claims.items():
            claims[ck] = (res, pl.node)
    return PlacementResult("optimal", pods, claims, {})


def _free_device(devs: list[DeviceEntry], taken: dict, cluster: Cluster) -> DeviceEntry:
    for d in devs:
        if d.multi_allocatable and cluster.features.consumable_capacity:
            taken[d.id] += 1
            return d
        if taken[d.id] == 0 and d.id not in cluster.allocated.devices:
            taken[d.id] = 1
            return d
    raise AllocationError(f"internal: no free device left in a group of {len(devs)} on decode")


def _solve_component(cluster, workload, classes, comp_classes, comp_nodes, ff_by_pod, groups_by_node,
                     device_of_group, cand, time_limit, proven_optimal: bool = False):
    """Build and solve the model of one independent part; returns (values, stats)."""
    t0 = time.perf_counter()
    m = cp_model.CpModel()
    k: dict[tuple[int, str], Any] = {}
    z: dict[tuple[int, int, str, int], Any] = {}
    usage_terms: dict[tuple, list] = defaultdict(list)
    mine = set(comp_classes)
    node_names = {n.name for n in comp_nodes}
    preference = []   # prioritized lists: sub-request index x pods using it (less is better)
    # Classes of one kind (same claims, resources, selector) differ only in priority or gang:
    # nodes and devices are modelled once per kind (k, z indexed by the kind's first class),
    # and each class only gets its share of the kind's placed pods.
    kinds: dict[int, list[int]] = defaultdict(list)
    for ci in comp_classes:
        kinds[kind_of(classes, ci)].append(ci)
    for f, members in kinds.items():
        c = classes[f]
        n_pods = sum(len(classes[ci].pods) for ci in members)
        per_node = []
        for node in c.nodes:
            if node.name not in node_names:
                continue
            if c.slots and node.name not in c.rep_problem:
                continue
            # Sub-requests usable here (all their slots have candidates); plain slots must all have.
            usable_alts = [a for a in range(c.alts)
                           if all(cand.get((f, si, node.name)) for si, sa in enumerate(c.slot_alt) if sa == a)]
            if any(not cand.get((f, si, node.name)) for si, sa in enumerate(c.slot_alt) if sa is None):
                continue
            if c.alts and not usable_alts:
                continue
            cap = n_pods
            for r, v in c.resources.items():
                if v > 0 and r in node.allocatable:
                    cap = min(cap, int((node.allocatable[r] - node.used.get(r, 0)) // v))
            if cap <= 0:
                continue
            var = m.new_int_var(0, cap, f"k[{f},{node.name}]")
            k[(f, node.name)] = var
            per_node.append(var)
            alt_var = {}
            for a in usable_alts:
                alt_var[a] = m.new_int_var(0, cap, f"k[{f},{node.name},alt{a}]")
                k[("alt", f, node.name, a)] = alt_var[a]
                if a:
                    preference.append(a * alt_var[a])
            if c.alts:
                m.add(sum(alt_var.values()) == var)
            val_var = {}
            if c.match:
                # matchAttribute: each pod takes one value; its covered slots use devices with it.
                present = sorted({match_value(device_of_group[(node.name, gi)][0], c.match)
                                  for si in c.match_slots for gi in cand[(f, si, node.name)]})
                for v in present:
                    val_var[v] = m.new_int_var(0, cap, f"k[{f},{node.name},{v}]")
                    k[("val", f, node.name, v)] = val_var[v]
                m.add(sum(val_var.values()) == var)
            for si, (_, _, count) in enumerate(c.slots):
                a = c.slot_alt[si]
                if a is not None and a not in alt_var:
                    continue
                per = var if a is None else alt_var[a]
                if si in c.match_slots:
                    by_value = defaultdict(list)
                    for gi in cand[(f, si, node.name)]:
                        devs = device_of_group[(node.name, gi)]
                        hi = min(len(devs), cap * count)
                        zv = m.new_int_var(0, hi, f"z[{f},{si},{node.name},{gi}]")
                        z[(f, si, node.name, gi)] = zv
                        by_value[match_value(devs[0], c.match)].append(zv)
                    for v, zs in by_value.items():
                        m.add(sum(zs) == count * val_var[v])
                    continue
                zs = []
                for gi in cand[(f, si, node.name)]:
                    devs = device_of_group[(node.name, gi)]
                    hi = cap * count if devs[0].multi_allocatable and cluster.features.consumable_capacity else len(devs)
                    hi = min(hi, cap * count)
                    zv = m.new_int_var(0, hi, f"z[{f},{si},{node.name},{gi}]")
                    z[(f, si, node.name, gi)] = zv
                    zs.append(zv)
                m.add(sum(zs) == count * per)
        for ci in members:
            classes[ci].total = m.new_int_var(0, len(classes[ci].pods), f"placed[{ci}]")
        m.add(sum(classes[ci].total for ci in members) == sum(per_node))

    # Device groups: usage, multi-allocation capacity, counters.
    z_by_group: dict[tuple[str, int], list] = defaultdict(list)
    for key, v in z.items():
        z_by_group[(key[2], key[3])].append((key, v))
    k_by_node: dict[str, list] = defaultdict(list)
    for key, v in k.items():
        if not isinstance(key[0], str):   # ("alt", ...) and ("val", ...) split a kind's count
            k_by_node[key[1]].append((key[0], v))
    used_lit: dict[tuple, Any] = {}
    for node in comp_nodes:
        for gi, devs in enumerate(groups_by_node.get(node.name, [])):
            terms = z_by_group.get((node.name, gi), [])
            if not terms:
                continue
            dev = devs[0]
            if dev.multi_allocatable and cluster.features.consumable_capacity:
                problem_of = {ci: classes[ci].rep_problem[node.name] for (ci, _, _, _), _ in terms}
                already = cluster.allocated.capacity.get(dev.id, {})
                for cap_name, cap in dev.device.capacity.items():
                    limit = problem_of[terms[0][0][0]].counter_value(cap.value) - already.get(cap_name, 0)
                    amounts = []
                    for (ci, si, _, _), v in terms:
                        problem = problem_of[ci]
                        specs = [s for cl in problem.claims for g in cl.requests for s in g.alternatives]
                        used = problem.consumption(specs[si], dev)
                        amounts.append(used[cap_name].value)
                    ints, _ = scale_to_int(amounts + [limit])
                    m.add(sum(a * v for a, (_, v) in zip(ints, terms)) <= ints[-1])
                lit = m.new_bool_var(f"used[{dev.id}]")
                m.add(sum(v for _, v in terms) >= 1).only_enforce_if(lit)
                m.add(sum(v for _, v in terms) == 0).only_enforce_if(lit.negated())
                used_lit[dev.id] = lit
            else:
                if len(devs) == 1:
                    usage_terms[dev.id].extend(v for _, v in terms)
                else:
                    m.add(sum(v for _, v in terms) <= len(devs))
    for did, vs in usage_terms.items():
        m.add(sum(vs) <= 1)
        if len(vs) == 1:
            used_lit[did] = vs[0]
        else:
            lit = m.new_bool_var(f"used[{did}]")
            m.add(sum(vs) == lit)
            used_lit[did] = lit
    touched_sets = []
    if cluster.features.partitionable_devices:
        seen_pools = {}
        for node in comp_nodes:
            for devs in groups_by_node.get(node.name, []):
                for dev in devs:
                    if dev.device.consumes_counters and dev.id in used_lit:
                        seen_pools.setdefault(id(dev.pool), (dev.pool, {}))[1][dev.id] = dev
        for pool, devs in seen_pools.values():
            avail = available_counters(pool, cluster.allocated)
            per_counter: dict[tuple[str, str], list] = defaultdict(list)
            per_set: dict[str, list] = defaultdict(list)
            for did, dev in devs.items():
                if dev.multi_allocatable and did in cluster.allocated.capacity:
                    continue
                for cc in dev.device.consumes_counters:
                    per_set[cc.counter_set].append(used_lit[did])
                    for name, val in cc.counters.items():
                        per_counter[(cc.counter_set, name)].append((Fraction(_qv(val.value)), used_lit[did]))
            for (set_name, name), items in per_counter.items():
                cap = avail.get(set_name, {}).get(name)
                if cap is None:
                    continue
                ints, _ = scale_to_int([a for a, _ in items] + [cap])
                m.add(sum(a * lit for a, (_, lit) in zip(ints, items)) <= ints[-1])
            for set_name, lits in per_set.items():
                t = m.new_bool_var(f"touched[{pool.id},{set_name}]")
                m.add_max_equality(t, lits)
                touched_sets.append(t)

    # Node resources.
    touched_nodes = []
    for node in comp_nodes:
        ks = k_by_node.get(node.name, [])
        if not ks:
            continue
        for r in {r for ci, _ in ks for r in classes[ci].resources}:
            if r not in node.allocatable:
                continue
            free = node.allocatable[r] - node.used.get(r, 0)
            amounts = [classes[ci].resources.get(r, Fraction(0)) for ci, _ in ks]
            if sum(amounts) == 0:
                continue
            ints, _ = scale_to_int(amounts + [free])
            m.add(sum(a * v for a, (_, v) in zip(ints, ks)) <= ints[-1])
        t = m.new_bool_var(f"node_used[{node.name}]")
        for _, v in ks:
            m.add(v == 0).only_enforce_if(t.negated())
        touched_nodes.append(t)

    # Gangs: all or nothing (at least minCount pods, or none).
    by_group = defaultdict(list)
    for ci, c in enumerate(classes):
        if ci in mine and c.group is not None and workload.groups[c.group].policy == "gang":
            by_group[c.group].append(c.total)
    for g, totals in by_group.items():
        gang = workload.groups[g]
        on = m.new_bool_var(f"gang[{g}]")
        size = sum(len(c.pods) for c in classes if c.group == g)
        m.add(sum(totals) >= gang.min_count * on)
        m.add(sum(totals) <= size * on)

    objective = sum(weight(classes[ci].priority) * classes[ci].total for ci in comp_classes)
    ff_value = sum(weight(ff_by_pod[p.key].priority) for ci in comp_classes for p in classes[ci].pods
                   if ff_by_pod[p.key].placed)
    m.add(objective >= ff_value)
    _hint(m, classes, k, z, ff_by_pod, groups_by_node, cand, cluster, mine, workload)
    build_s = time.perf_counter() - t0
    solver = cp_model.CpSolver()
    # Same input, same placement: workers interleaved deterministically, and limits counted in
    # CP-SAT's deterministic time (wall time only as a hard stop at the time limit).
    solver.parameters.num_workers = 2
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = 0
    stats: dict[str, Any] = {"variables": len(m.proto.variables), "constraints": len(m.proto.constraints)}
    if proven_optimal:
        # The cheap bound already proves first-fit's count optimal: only phases 2 and 3 remain.
        status, best, bound = cp_model.OPTIMAL, ff_value, ff_value
        values = _first_fit_values(classes, ff_by_pod, groups_by_node, cand, only=mine, book_claims=workload.claims)
        values = {key: values.get(key, 0) for key in list(k) + list(z)} | \
            {("total", ci): values.get(("total", ci), 0) for ci in comp_classes}
    else:
        m.maximize(objective)
        _limit(solver, max(0.1, time_limit * 0.8 - build_s), time_limit - (time.perf_counter() - t0))
        status = solver.solve(m)
        stats["count_s"] = round(solver.wall_time, 3)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            stats.update({"status": solver.status_name(status), "objective": ff_value,
                          "bound": _class_bound([classes[ci] for ci in comp_classes])})  # nothing better proven
            return None, stats
        best, bound = solver.objective_value, solver.best_objective_bound
        values = {key: solver.value(v) for key, v in list(k.items()) + list(z.items())}
        values.update({("total", ci): solver.value(classes[ci].total) for ci in comp_classes})
    stats.update({"status": "OPTIMAL" if status == cp_model.OPTIMAL else solver.status_name(status),
                  "objective": int(best), "bound": int(bound)})
    # Phase 2: hold the weighted count, touch as few nodes and counter sets as possible.
    remaining = time_limit - (time.perf_counter() - t0)
    if status == cp_model.OPTIMAL and remaining > 1 and (touched_nodes or touched_sets or preference):
        m.add(objective >= int(best))
        m.clear_hints()
        for key, v in list(k.items()) + list(z.items()):
            m.add_hint(v, values[key])
        for ci in comp_classes:
            m.add_hint(classes[ci].total, values[("total", ci)])
        # Then the most preferred sub-requests, then the fewest touched nodes and counter sets.
        m.minimize((len(touched_nodes) + len(touched_sets) + 1) * sum(preference) + sum(touched_nodes) + sum(touched_sets))
        # Packing is a secondary goal: a bounded share of what is left.
        _limit(solver, min(remaining * 0.5, 2.0 + (time.perf_counter() - t0)), remaining * 0.9)
        s2 = solver.solve(m)
        stats["packing_s"] = round(solver.wall_time, 3)
        if s2 in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            values = {key: solver.value(v) for key, v in list(k.items()) + list(z.items())}
            values.update({("total", ci): solver.value(classes[ci].total) for ci in comp_classes})
            stats["packing_status"] = solver.status_name(s2)
            stats["touched"] = sum(solver.value(t) for t in touched_nodes + touched_sets)
            stats["subrequest_index_sum"] = int(solver.value(sum(preference))) if preference else 0
    return values, stats
