"""The one placement model: every pending pod, candidate node and device of the cluster in one
CP-SAT model, built from the rule functions of `draopt.model.encodings` (usage, counters,
compatibility, capacity, attributes). `allocate` is this model with one pod and one candidate
node (`draopt.model.single_node`, `reductions.claims_on_one_node`).

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

import time
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ortools.sat.python import cp_model

from draopt.dra.constraints import constraint_applies, normalise
from draopt.model.encodings import attributes, capacity, compatibility, counters, usage
from draopt.model.encodings.attributes import AttributeTerm, constraint_name
from draopt.model.encodings.base import LiteralHelpers, scale_to_int, upper_bound
from draopt.dra.inventory import counter_sets_in_use, in_use_groups
from draopt.dra.problem import MAX_RESULTS, Problem
from draopt.kube.quantity import Quantity
from draopt.cluster.state import Cluster, NodeState, pod_on
from draopt.cluster.firstfit import ClaimBook
from draopt.model.reductions import DeviceRef, Kind, OwnAcrossNodes
from draopt.cluster.result import weight
from draopt.model import topology_domains
from draopt.model.prepare import Prepared, _check_time, _usable


@dataclass(eq=False)
class Term:
    """Devices of one column taken by one (sub-)request of one owner."""

    owner: "Owner"
    spec: Any  # RequestSpec of `problem`
    problem: Problem  # the node problem the candidacy was decided in
    ref: DeviceRef
    var: Any
    reach: set[str] = field(default_factory=set)  # nodes from which the request may use it
    entry: Any = None  # the DeviceEntry of `problem` (first device of the column)


@dataclass(eq=False)
class Owner:
    index: int
    kind: Kind
    node: NodeState | None  # counted kinds: the node; units: None (spans nodes)
    mult: Any  # counted: pods of the kind there (int var); unit claim: active (bool)
    problem: Problem  # representative problem (its claims give specs and constraints)
    claim_index: int | None  # units: the one claim of `problem` this owner allocates
    claim_key: str = ""  # units: that claim (problems are shared by claims alike)
    spans: list[str] | None = None  # counted kinds owned across nodes (OwnAcrossNodes): their nodes
    sel: dict = field(default_factory=dict)  # spec key -> selection variable (count or bool)
    witness: dict = field(default_factory=dict)  # (claim index, constraint index) -> {element: var}
    terms: dict = field(default_factory=dict)  # spec key -> [Term]

    @property
    def counted(self) -> bool:
        return self.node is not None

    def claims(self):
        if self.claim_index is None:
            return self.problem.claims
        return [self.problem.claims[self.claim_index]]


class _CpModel(cp_model.CpModel):
    """CpModel without the pre-PEP8 method aliases ortools adds to every instance (about a
    hundred wrappers, 0.2-0.4 ms per model); nothing calls them."""

    def _add_pre_pep8_methods(self) -> None:
        pass


class PlacementModel(LiteralHelpers):
    """The CP-SAT model plus what the encodings' rule functions need (`add`, `at_most_one`,
    `any_of`, `positive`, `counter_value`)."""

    def __init__(self, explain: bool = False):
        self.cp = _CpModel()
        self.n_constraints = 0
        # explain: every named requirement holds only under its guard literal, so that an
        # infeasible model yields the requirements that clash (draopt.allocation.explain).
        self.explain = explain
        self.guards: dict[str, Any] = {}  # requirement text -> guard literal
        self._positive: dict[int, Any] = {}
        self._quantities: dict[str, Fraction] = {}

    def add(self, ct, requirement: str | None = None):
        self.n_constraints += 1
        if self.explain and requirement is not None:
            guard = self.guards.get(requirement)
            if guard is None:
                guard = self.guards[requirement] = self.cp.new_bool_var(f"guard[{requirement}]")
            ct.only_enforce_if(guard)
        return ct

    def at_most_one(self, lits, requirement: str | None = None):
        """AtMostOne, as a linear constraint when it may need a guard (CP-SAT's AtMostOne
        takes no enforcement literal)."""
        if self.explain and requirement is not None:
            return self.add(self.cp.add(sum(lits) <= 1), requirement)
        return self.add(self.cp.add_at_most_one(lits))

    def counter_value(self, value: str) -> Fraction:
        got = self._quantities.get(value)
        if got is None:
            got = self._quantities[value] = Quantity.parse(value).value
        return got


# ====================================================================== building
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
    book: ClaimBook,
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
    the model may evict (the cluster is the one without them)."""
    features = cluster.features
    m = PlacementModel(explain)
    cp = m.cp
    owners: list[Owner] = []
    k: dict = {}
    y: dict = {}
    placed: dict = {}
    totals: dict = {}
    class_pods: dict = {}
    node_demand: dict[str, list] = defaultdict(list)  # node -> [(resources, var)]
    # Demand variable (index) -> priority of its pods, for the victims' reprieve: only pods that may
    # preempt (an eviction never serves a pod with preemptionPolicy Never).
    prio_of: dict[int, int] = {}
    unit_parts: dict[tuple[int, str], list] = {}  # counted units: (kind, node) -> [(pods, count)]
    preference = []
    kinds = [prep.kinds[i] for i in kind_ids]
    enc = None
    if victims is not None and not one_node:
        from draopt.model import victims as victim_rules

        enc = victim_rules.encode(m, victims, prep, node_names)

    room: dict[tuple[int, int], int] = {}  # (node, id of the demand) -> pods that fit (demands outlive the build)

    def free(node: NodeState, resources: dict) -> int:
        key = (node.index, id(resources))
        cap = room.get(key)
        if cap is None:
            cap = 10**9
            for r, v in resources.items():
                if v > 0 and r in node.allocatable:
                    cap = min(cap, int((node.allocatable[r] - node.used.get(r, 0)) // v))
            room[key] = cap
        return cap

    # Interchangeable nodes: counted per configuration (patterns.py), not one by one.
    node_classes_used = []
    pattern_sum: dict[int, list] = defaultdict(list)  # kind -> [(pods per node, count var)]
    pattern_nodes: set[str] = set()
    node_count_terms: list = []
    pattern_devices: list = []
    pattern_sets: list = []
    if patterns and not one_node and not topology_domains.applies(workload, kinds):
        # (Interchangeable nodes lose which node is where: not with topology domains.)
        from draopt.model.patterns import enumerate_configurations, node_classes

        # One budget for every class, the largest classes first (they save the most).
        # (Nodes with victim candidates keep their own variables: evictions are per node.)
        classes = node_classes(prep, kinds, node_names - victims.nodes() if enc else node_names, cluster)
        stop = time.perf_counter() + pattern_seconds
        enumerated = set()
        for nc in sorted(classes, key=lambda nc: -len(nc.nodes)):
            left = min(stop, deadline if deadline is not None else stop) - time.perf_counter()
            if left <= 0:
                break
            rep_node = nc.nodes[0]
            caps = [
                min(len(prep.kinds[ki].pods), free(rep_node, pod_on(rep_node, prep.kinds[ki].pods[0]).resources))
                for ki in nc.kinds
            ]
            if enumerate_configurations(
                nc, prep, cluster, workload, book, caps, left, one_node_model(nc, prep, cluster, workload, book)
            ):
                enumerated.add(id(nc))
        for nc in classes:
            if id(nc) not in enumerated:
                continue
            rep_node = nc.nodes[0]
            node_classes_used.append(nc)
            pattern_nodes.update(n.name for n in nc.nodes)
            nc.vars = []
            for ci, conf in enumerate(nc.configurations):
                v = cp.new_int_var(0, len(nc.nodes), f"nodes_with[{rep_node.name},{conf.counts}]")
                nc.vars.append(v)
                for ki, n in zip(nc.kinds, conf.counts):
                    if n:
                        pattern_sum[ki].append((n, v))
                node_count_terms.append(v)
                if conf.devices:
                    pattern_devices.append((conf.devices, v))
                if conf.fresh_sets:
                    pattern_sets.append((conf.fresh_sets, v))
            if nc.vars:
                m.add(cp.add(sum(nc.vars) <= len(nc.nodes)))
    for kind in kinds:
        if kind.counted:
            rep = kind.pods[0]
            per_node = [n * v for n, v in pattern_sum.get(kind.index, [])]
            kind_nodes = [
                n
                for n in _nodes_within(prep, rep.key, node_names, cluster)
                if n.name not in pattern_nodes and free(n, pod_on(n, rep).resources) > 0
            ]
            # Devices every node of the kind reaches alike: one owner for all of them.
            _check_time(deadline)
            across = (
                across
                and not one_node
                and not per_node
                and OwnAcrossNodes.apply(
                    kind, kind_nodes, prep.refs, lambda node, refs: _candidate_columns(prep, kind, node, refs)
                )
            )
            spanned = []
            for node in _nodes_within(prep, rep.key, node_names, cluster):
                if node.name in pattern_nodes:
                    continue
                _check_time(deadline)
                size = kind.unit_size
                # (the pod as the node serves it: a device plugin's extended resources are node resources)
                rep_resources = pod_on(node, rep).resources
                cap = min(len(kind.units) if size > 1 else len(kind.pods), free(node, rep_resources))
                if cap <= 0:
                    continue
                var = cp.new_int_var(0, cap, f"k[{kind.index},{node.name}]")
                k[(kind.index, node.name)] = var
                if victims is None or victims.preempts(rep):
                    prio_of[var.index] = rep.priority
                if size == 1:
                    per_node.append(var)
                    node_demand[node.name].append((rep_resources, var))
                else:
                    # Units alike: k[j] units with j of their pods placed here (their claims once each).
                    parts = []
                    for j in range(1, size + 1):
                        cap_j = min(len(kind.units), free(node, rep_resources) // j)
                        if cap_j <= 0:
                            continue
                        kj = cp.new_int_var(0, cap_j, f"k[{kind.index},{node.name},{j}]")
                        if victims is None or victims.preempts(rep):
                            prio_of[kj.index] = rep.priority
                        parts.append((j, kj))
                        node_demand[node.name].append(({r: v * j for r, v in rep_resources.items()}, kj))
                    m.add(cp.add(var == sum(kj for _, kj in parts)))
                    per_node.append(sum(j * kj for j, kj in parts))
                    unit_parts[(kind.index, node.name)] = parts
                p = prep.problems.get((kind.index, node.name))
                if p is not None and across:
                    spanned.append((node, var, p))
                elif p is not None:
                    owner = Owner(len(owners), kind, node, var, p, None)
                    owners.append(owner)
                    _add_requests(m, prep, owner, cap, preference)
            if spanned:
                node0, _, p0 = spanned[0]
                total = cp.new_int_var(0, len(kind.pods), f"k[{kind.index},*]")
                m.add(cp.add(total == sum(v for _, v, _ in spanned)))
                owner = Owner(len(owners), kind, node0, total, p0, None, spans=[n.name for n, _, _ in spanned])
                owners.append(owner)
                _add_requests(m, prep, owner, len(kind.pods), preference)
            if kind.unit_size > 1:
                # No more units placed than there are (each counts once, whatever pods it places).
                unit_vars = [k[(kind.index, n)] for (ki, n) in unit_parts if ki == kind.index]
                if unit_vars:
                    m.add(cp.add(sum(unit_vars) <= len(kind.units)))
            if one_node:
                continue  # a configuration check: only what one node holds matters
            classes: dict[tuple, list] = defaultdict(list)
            for pod in kind.pods:
                classes[(pod.priority, pod.group)].append(pod)
            for ck, pods in classes.items():
                totals[(kind.index, ck)] = cp.new_int_var(0, len(pods), f"placed[{kind.index},{ck}]")
                class_pods[(kind.index, ck)] = pods
            m.add(cp.add(sum(totals[(kind.index, ck)] for ck in classes) == sum(per_node)))
            continue
        # A unit: pods with their own node variables, one owner per pending claim.
        _check_time(deadline)
        for pod in kind.pods:
            vs = []
            for node in prep.pod_nodes[pod.key]:
                if node.name not in node_names or free(node, pod_on(node, pod).resources) <= 0:
                    continue
                v = y[(pod.key, node.name)] = cp.new_bool_var(f"y[{pod.key},{node.name}]")
                if victims is None or victims.preempts(pod):
                    prio_of[v.index] = pod.priority
                vs.append(v)
                node_demand[node.name].append((pod_on(node, pod).resources, v))
            placed[pod.key] = cp.new_bool_var(f"placed[{pod.key}]")
            m.add(cp.add(sum(vs) == placed[pod.key]))
        if not kind.claim_keys:
            continue
        for ci, key in enumerate(kind.claim_keys):
            users = kind.users[key]
            active = cp.new_bool_var(f"active[{key}]")
            for u in users:
                m.add(cp.add(active >= placed[u]))
            m.add(cp.add(active <= sum(placed[u] for u in users)))
            nodes = sorted(
                {n.name for u in users for n in prep.pod_nodes[u] if n.name in node_names and (u, n.name) in y}
            )
            problems = [(n, prep.problems[(kind.index, n)]) for n in nodes if (kind.index, n) in prep.problems]
            if not problems:
                m.add(cp.add(active == 0))
                continue
            owner = Owner(len(owners), kind, None, active, problems[0][1], ci, claim_key=key)
            owners.append(owner)
            _add_unit_requests(m, prep, owner, problems, users, y, placed, preference, reach_holds=allocation)
    # Global rules over every owner: who may share a device, shared capacity, counters.
    by_ref: dict[Any, list[Term]] = defaultdict(list)
    for o in owners:
        for ts in o.terms.values():
            for t in ts:
                by_ref[t.ref.key].append(t)
    refs = {t.ref.key: t.ref for ts in by_ref.values() for t in ts}
    if enc is not None:
        victim_rules.limit_columns(m, enc, by_ref, refs)
    for key, ts in by_ref.items():
        ref = refs[key]
        multi = features.consumable_capacity and ref.first.multi_allocatable
        usage.limit_device(
            m,
            [
                usage.DeviceUse(
                    t.var,
                    t.spec.admin_access,
                    (t.owner.index, t.spec.claim_index),
                    t.owner.mult if t.owner.counted else None,
                )
                for t in ts
            ],
            size=ref.size,
            multi_allocatable=multi,
        )
        if kubernetes_quirks and not multi:
            usage.admin_blocks_later(m, [(t.var, t.spec.admin_access, t.spec.key) for t in ts])
        if multi:
            capacity.limit_shares(
                m,
                ref.first,
                cluster.allocated.capacity.get(ref.first.id, {}),
                [(t.var, t.problem.consumption(t.spec, t.entry)) for t in ts],
            )
    counter_pools: dict[tuple, list] = defaultdict(list)
    if features.partitionable_devices:
        for key, ts in by_ref.items():
            e = refs[key].first
            if e.device.consumes_counters:
                counter_pools[(e.pool.driver, e.pool.name)].append((e, [(t.var, t.spec.admin_access) for t in ts]))
        for devices in counter_pools.values():
            pool = devices[0][0].pool
            counters.limit_pool(m, pool, cluster.allocated, features, devices, quirks=kubernetes_quirks)
            if features.compatibility_groups:
                from draopt.dra.inventory import compatibility_groups

                for set_name in sorted(pool.counter_sets):
                    fixed = in_use_groups(cluster.allocated, pool, set_name)
                    compatibility.limit_counter_set(
                        m,
                        pool,
                        set_name,
                        fixed,
                        [
                            (e, m.any_of([v for v, _ in users], f"used[{'/'.join(e.id)}]"))
                            for e, users in devices
                            if compatibility_groups(e.device, set_name) is not None
                        ],
                    )
    # Device-derived node resources (units only; counted kinds never have them).
    if prep.node_resources_of_devices:
        _device_node_resources(m, cluster, workload, book, owners, y, node_demand)
    # Node resources.
    touched_nodes = []
    for node in sorted((cluster.by_name[n] for n in node_demand), key=lambda n: n.index):
        terms = node_demand[node.name]
        if not terms:
            continue
        for r in sorted({r for res, _ in terms for r in res}):
            if r not in node.allocatable:
                continue
            amounts = [Fraction(res.get(r, 0)) for res, _ in terms]
            if not any(amounts):
                continue
            left = node.allocatable[r] - node.used.get(r, 0)
            gone = enc.node_evicted.get(node.name, []) if enc is not None else []
            if enc is not None and node.name in enc.node_total:
                # Kept candidates hold their requests: all of them, less what is evicted.
                left -= enc.node_total[node.name].get(r, 0)
            ints, _ = scale_to_int(amounts + [Fraction(res.get(r, 0)) for res, _ in gone] + [left])
            freed = ints[len(terms) : len(terms) + len(gone)]
            m.add(
                cp.add(
                    sum(a * v for a, (_, v) in zip(ints, terms)) - sum(a * v for a, (_, v) in zip(freed, gone))
                    <= ints[-1]
                )
            )
        if not packing_terms:
            continue  # touched nodes are a packing term only
        t = cp.new_bool_var(f"node_used[{node.name}]")
        for _, v in terms:
            m.add(cp.add(v <= upper_bound(v) * t))
        touched_nodes.append(t)
    if enc is not None:
        victim_rules.necessary(m, enc, victims, cluster, node_demand, prio_of, by_ref, refs)
    # Gangs: at least minCount pods placed, or none.
    gang_terms: dict[str, list] = defaultdict(list)
    for (ki, (prio, group)), var in totals.items():
        if group is not None:
            gang_terms[group].append(var)
    for pod_key, var in placed.items():
        group = workload.pod(pod_key).group
        if group is not None:
            gang_terms[group].append(var)
    # Groups of pod-group cycles: their domains, whole groups and composites (topology_domains).
    handled = set() if one_node else topology_domains.encode(m, workload, cluster, kinds, k, y, totals, gang_terms)
    if enc is not None:
        victim_rules.justify(m, enc, victims, workload, kinds, k, y, gang_terms)
    for g, vs in [] if one_node else gang_terms.items():
        gang = workload.groups.get(g)
        if gang is None or gang.policy != "gang" or g in handled:
            continue
        on = cp.new_bool_var(f"gang[{g}]")
        m.add(cp.add(sum(vs) >= gang.min_count * on))
        m.add(cp.add(sum(vs) <= len(gang.pods) * on))
    objective = sum(weight(prio) * var for (ki, (prio, _)), var in totals.items()) + sum(
        weight(workload.pod(p).priority) * var for p, var in placed.items()
    )
    packing = (
        _packing_terms(m, owners, by_ref, refs, cluster, touched_nodes)
        if packing_terms
        else {"nodes": [], "counter_sets": [], "amounts": [], "devices": [], "order": []}
    )
    packing["nodes"] = packing["nodes"] + node_count_terms
    packing["devices"] = packing["devices"] + pattern_devices
    packing["counter_sets"] = packing["counter_sets"] + pattern_sets
    return Built(
        m,
        owners,
        kinds,
        k,
        y,
        placed,
        totals,
        class_pods,
        objective,
        preference,
        packing,
        node_classes_used,
        unit_parts,
        enc,
    )


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


def _specs(problem: Problem, claim_indexes=None):
    for claim in problem.claims:
        if claim_indexes is not None and claim.index not in claim_indexes:
            continue
        for g in claim.requests:
            yield claim, g


def _select(m: PlacementModel, owner: Owner, g, cap: int, preference: list) -> None:
    """A request's selection: its owner's multiplicity for a plain request; for a prioritized
    list, one count per sub-request (how many of the owner's pods take it), summing to it."""
    if not g.has_subrequests:
        owner.sel[g.alternatives[0].key] = owner.mult
        return
    sels = []
    for s in g.alternatives:
        v = m.cp.new_int_var(0, cap, f"sel[{owner.index},{s.key}]")
        owner.sel[s.key] = v
        sels.append(v)
        if s.sub_index:
            preference.append(s.sub_index * v)
    m.add(m.cp.add(sum(sels) == owner.mult))


def _add_requests(m: PlacementModel, prep: Prepared, owner: Owner, cap: int, preference: list) -> None:
    """A counted kind on one node: `cap` pods at most, each with the kind's claims."""
    cp = m.cp
    p = owner.problem
    node = owner.node
    refs = prep.refs.get(node.name, [])
    reach = set(owner.spans) if owner.spans else {node.name}
    claim_terms: dict[int, list] = defaultdict(list)
    for claim, g in _specs(p):
        _select(m, owner, g, cap, preference)
        for s in g.alternatives:
            ts = []
            for ref in refs:
                e = ref.first if ref.node is not None else p.inventory.by_id.get(ref.first.id)
                if e is None or not prep.candidacy(p, s, e):
                    continue
                multi = p.features.consumable_capacity and e.multi_allocatable
                # A shared device serves each pod once; admin access may take a device every pod takes.
                hi = min(cap * s.count, cap if multi else ref.size * (cap if s.admin_access else 1))
                v = cp.new_int_var(0, hi, f"z[{owner.index},{s.key},{ref.key}]")
                if multi:
                    m.add(cp.add(v <= owner.sel[s.key]))  # each pod takes a shared device once per request
                ts.append(Term(owner, s, p, ref, v, set(reach), e))
            owner.terms[s.key] = ts
            claim_terms[claim.index].extend(t.var for t in ts)
            m.add(
                cp.add(sum(t.var for t in ts) == s.count * owner.sel[s.key]),
                f"claim {claim.key} request {s.full_name}: {s.count} device(s)",
            )
    for claim in p.claims:
        if claim_terms[claim.index]:
            m.add(cp.add(sum(claim_terms[claim.index]) <= MAX_RESULTS * owner.mult))
    _add_constraints(m, owner, counted=True)


def _add_unit_requests(
    m: PlacementModel,
    prep: Prepared,
    owner: Owner,
    problems: list[tuple[str, Problem]],
    users: list[str],
    y: dict,
    placed: dict,
    preference: list,
    reach_holds: bool = False,
) -> None:
    """One pending claim of a unit, over the nodes its pods may use. `reach_holds`: the reach
    rule is left out where it holds by itself (a term reached from every node of the pod)."""
    cp = m.cp
    user_nodes = {u: {n.name for n in prep.pod_nodes[u] if (u, n.name) in y} for u in users} if reach_holds else {}
    ci = owner.claim_index
    rep = owner.problem
    claim = rep.claims[ci]
    claim_vars = []
    for ri, g in enumerate(claim.requests):
        _select(m, owner, g, 1, preference)
        for s in g.alternatives:
            by_ref: dict[Any, Term] = {}
            all_nodes: dict[str, list] = {}
            for node_name, p in problems:
                spec = _same_spec(p, s)
                for ref in prep.refs.get(node_name, []):
                    e = ref.first if ref.node is not None else p.inventory.by_id.get(ref.first.id)
                    if e is None or not prep.candidacy(p, spec, e):
                        continue
                    t = by_ref.get(ref.key)
                    if t is None:
                        v = (
                            cp.new_int_var(0, ref.size, f"z[{owner.index},{s.key},{ref.key}]")
                            if ref.size > 1
                            else cp.new_bool_var(f"z[{owner.index},{s.key},{ref.key}]")
                        )
                        t = by_ref[ref.key] = Term(owner, spec, p, ref, v, set(), e)
                    t.reach.add(node_name)
                if spec.mode == "All":
                    all_nodes[node_name] = spec
            ts = list(by_ref.values())
            owner.terms[s.key] = ts
            claim_vars.extend(t.var for t in ts)
            sel = owner.sel[s.key]
            if s.mode == "All":
                _all_request(m, owner, s, ts, problems, all_nodes, users, y, sel)
            else:
                m.add(
                    cp.add(sum(t.var for t in ts) == s.count * sel),
                    f"claim {claim.key} request {s.full_name}: {s.count} device(s)",
                )
            # Reach: a device goes only with pods on nodes that can use it.
            for t in ts:
                for u in users:
                    if reach_holds and user_nodes[u] <= t.reach:
                        continue  # allocate's one pod on its one node: the constraint says t.var <= hi
                    near = [y[(u, n)] for n in sorted(t.reach) if (u, n) in y]
                    hi = upper_bound(t.var)
                    m.add(cp.add(t.var <= hi * (sum(near) + 1 - placed[u])))
    if claim_vars:
        m.add(cp.add(sum(claim_vars) <= MAX_RESULTS), f"claim {claim.key}: at most {MAX_RESULTS} results")
    _add_constraints(m, owner, counted=False)


def _same_spec(problem: Problem, spec):
    claim = problem.claims[spec.claim_index]
    group = claim.requests[spec.request_index]
    return group.alternatives[max(0, spec.sub_index)]


def _all_request(m, owner, s, ts, problems, all_nodes, users, y, sel) -> None:
    """allocationMode All: on the node of a pod that uses the claim, every matching device."""
    cp = m.cp
    for t in ts:
        m.add(cp.add(t.var <= t.ref.size * sel))
    claim_key = owner.problem.claims[owner.claim_index].key
    for node_name, spec in all_nodes.items():
        p = dict(problems)[node_name]
        need = f"claim {claim_key} request {spec.full_name}: all {len(spec.all_devices)} matching devices"
        usable = bool(spec.all_devices) and all(_usable(p, spec, d) for d in spec.all_devices)
        term_of = {}  # device id -> the term whose column holds it (reached from the node)
        for t in ts:
            if node_name in t.reach:
                for x in t.ref.entries:
                    term_of.setdefault(x.id, t)
        for u in users:
            yv = y.get((u, node_name))
            if yv is None:
                continue
            if not usable:
                m.add(cp.add(yv + sel <= 1), need)
                continue
            for d in spec.all_devices:
                t = term_of.get(d.id)
                if t is None:
                    m.add(cp.add(yv + sel <= 1), need)
                    break
                m.add(cp.add(t.var >= t.ref.size * (yv + sel - 1)), need)


def _add_constraints(m: PlacementModel, owner: Owner, counted: bool) -> None:
    """matchAttribute / distinctAttribute of the owner's claims."""
    for claim in owner.claims():
        for ci, c in enumerate(claim.constraints):
            kind, name = constraint_name(c)
            need = f"claim {claim.key} constraints[{ci}]: {kind} {name}" + (
                f" over {', '.join(c.requests)}" if c.requests else ""
            )
            terms = []
            for g in claim.requests:
                for s in g.alternatives:
                    if not constraint_applies(list(c.requests), s.request_name, s.sub_name):
                        continue
                    for t in owner.terms.get(s.key, []):
                        raw = t.problem.attribute_for_constraint(t.spec, t.entry, name)
                        if raw is None:
                            m.add(m.cp.add(t.var == 0), need)
                            continue
                        terms.append(
                            AttributeTerm(
                                t.var,
                                normalise(raw, t.problem.features.list_type_attributes),
                                t.ref.size,
                                s.key,
                                s.count,
                            )
                        )
            if not terms:
                continue
            tag = f"{owner.index},{claim.index},{ci}"
            if c.match_attribute is not None:
                owner.witness[(claim.index, ci)] = attributes.limit_match(
                    m, terms, need, tag, mult=owner.mult if counted else None, counted=counted
                )
            else:
                attributes.limit_distinct(m, terms, need, mult=owner.mult if counted else None)


def _device_node_resources(m, cluster, workload, book, owners, y, node_demand) -> None:
    """DRANodeAllocatableResources: a device that maps to node resources adds them to the node
    of the pod that uses it (mapping once per claim; overhead per pod)."""
    from draopt.kube.node_allocatable import node_allocatable_demand
    from draopt.kube.workload import containers_referencing

    cp = m.cp
    for o in owners:
        if o.counted:
            continue
        key = o.claim_key
        users = o.kind.users[key]
        for ts in o.terms.values():
            for t in ts:
                if not t.entry.device.node_allocatable_resources:
                    continue
                consumed = None
                if t.entry.multi_allocatable and cluster.features.consumable_capacity:
                    got = t.problem.consumption(t.spec, t.entry)
                    consumed = {n: q.value for n, q in (got or {}).items()} or None
                for i, u in enumerate(users):
                    pod = workload.pod(u)
                    use = next(x for x in pod.claims if x.key == key)
                    demand = node_allocatable_demand(
                        t.entry.device, pod, containers_referencing(pod.pod, use.name), consumed, mapping=(i == 0)
                    )
                    if not demand:
                        continue
                    for n in sorted(t.reach):
                        yv = y.get((u, n))
                        if yv is None:
                            continue
                        both = cp.new_bool_var(f"nar[{o.index},{u},{n}]")
                        m.add(cp.add(both >= yv + m.positive(t.var) - 1))
                        node_demand[n].append((demand, both))


def _packing_terms(m: PlacementModel, owners, by_ref, refs, cluster, touched_nodes) -> dict[str, list]:
    """Phase 3's terms, most important first: touched nodes, counter sets newly drawn on,
    counter amounts and shared capacity taken (normalised), devices taken, search order."""
    cp = m.cp
    sets: dict[tuple, list] = defaultdict(list)
    pools: dict[int, Any] = {}
    amounts = []
    devices = []
    order = []
    for key, ts in by_ref.items():
        ref = refs[key]
        e = ref.first
        for t in ts:
            devices.append(t.var)
            order.append((e.index, t.var))
            if t.entry.multi_allocatable and cluster.features.consumable_capacity:
                for q in (t.problem.consumption(t.spec, t.entry) or {}).values():
                    amounts.append((q.value, t.var))
        if e.device.consumes_counters and cluster.features.partitionable_devices:
            used = m.positive(ts[0].var) if len(ts) == 1 else m.any_of([t.var for t in ts], f"taken[{key}]")
            for c in e.device.consumes_counters:
                sets[(id(e.pool), c.counter_set)].append(used)
                pools[id(e.pool)] = e.pool
                for v in c.counters.values():
                    amounts.append((m.counter_value(v.value), used))
    fresh = []
    for (pool_id, set_name), lits in sets.items():
        pool = pools[pool_id]
        if set_name in counter_sets_in_use(cluster.allocated, pool):
            continue  # drawing on a set already in use costs nothing new
        t = cp.new_bool_var(f"set_used[{pool.id}/{set_name}]")
        cp.add_max_equality(t, lits)
        fresh.append(t)
    return {"nodes": touched_nodes, "counter_sets": fresh, "amounts": amounts, "devices": devices, "order": order}


def _nodes_within(prep: Prepared, pod_key: str, node_names: set[str], cluster: Cluster) -> list[NodeState]:
    """The pod's candidate nodes that are in `node_names`, in node order."""
    nodes = prep.pod_nodes[pod_key]
    if len(node_names) * 4 < len(nodes):
        names = prep.__dict__.setdefault("_name_sets", {})
        key = id(nodes)
        if key not in names:
            names[key] = {n.name for n in nodes}
        inside = names[key]
        return sorted((cluster.by_name[n] for n in node_names if n in inside), key=lambda n: n.index)
    return [n for n in nodes if n.name in node_names]


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
