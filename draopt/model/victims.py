"""Preemption's victims as decisions of the placement model (issue 17, item 3).

The model is built on the cluster without the victim candidates (their node resources free, the
claims only they use deallocated); this module adds what keeps it exact:

* a count per victim unit: `evicted` in [0, pods]. A unit is one running pod, a PodGroup with
  `disruptionMode: all` (its pods on every node, 0 or 1), or a class of identical pods on one
  node (same priority, requests, PodGroup membership, claims their own on devices of the same
  columns): counted, the least important evicted first (MoreImportantVictim's order);
* node resources: the kept pods' requests go back into every node constraint (`node_terms`);
* devices: a column holds, next to the pending pods' terms, the devices of kept claims (a claim
  comes free only when every unit using it is evicted);
* justification, as Kubernetes evicts: a unit may be evicted only if a pending pod allowed to
  preempt (`preemptionPolicy` not Never, not in a PodGroup) of strictly higher priority is placed
  on one of the unit's nodes, or a pending PodGroup allowed to preempt of strictly higher
  priority places pods (workload-aware preemption: the whole cluster is its domain, within the
  part, which holds every node its room could come from);
* the victims' cost, minimised right after the placed pods (`cost`): fewest evicted pods first,
  then the least sum of their priorities. Fewest first, because an eviction is a disruption
  whatever the victim's priority and the issue asks for "no placement evicts fewer"; among
  equally many, lower priorities go (as pickOneNodeForPreemption prefers the smallest priority
  sum). One weighted sum: each evicted pod weighs M + (priority - lowest), M above any priority
  sum, so one more victim always costs more than any priority difference.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

# Above this, priority ranks replace priorities in the cost (the sum stays in CP-SAT's range).
_COST_LIMIT = 2**52


@dataclass(eq=False)
class VictimUnit:
    """Pods that go together or not at all (or, counted, identical pods of one node)."""

    key: str  # "pod ns/name" | "podgroup ns/name"
    pods: list[Any]  # running PodDemand, most important first
    priority: int  # as preemption compares it (a PodGroup's, when it sets one)
    is_group: bool  # a pod of a PodGroup, or a whole PodGroup
    rank: tuple  # MoreImportantVictim's order (smaller: more important)
    claims: list[str] = field(default_factory=list)  # deallocatable claims its pods use

    @property
    def nodes(self) -> list[str]:
        return sorted({p.node_name for p in self.pods})


@dataclass
class VictimSet:
    """What the model decides about running pods: the units, the claims that come free with them,
    the pending pods and PodGroups that may preempt."""

    units: list[VictimUnit]
    claim_users: dict[str, list[int]]  # deallocatable claim -> units using it
    claim_devices: dict[str, list[tuple[str, tuple]]]  # deallocatable claim -> [(node, device id)]
    pod_preemptors: dict[str, int]  # pending pod (no PodGroup) allowed to preempt -> priority
    group_preemptors: dict[str, int]  # pending PodGroup allowed to preempt -> priority
    decided: dict[int, int] = field(default_factory=dict)  # unit -> pods evicted (after solving)
    first_fit_evicted: set[str] = field(default_factory=set)  # pods first-fit evicted (the hint)
    cost_note: str = ""

    def nodes(self) -> set[str]:
        return {n for u in self.units for n in u.nodes}

    def preempts(self, pod) -> bool:
        """Whether a pending pod may preempt (itself, or its PodGroup): evictions serve only such pods."""
        return pod.key in self.pod_preemptors or (pod.group is not None and pod.group in self.group_preemptors)

    def links(self) -> list[tuple[str, str]]:
        """Nodes decided together: a unit's nodes, the nodes of the users of one claim."""
        out: list[tuple[str, str]] = []
        for u in self.units:
            ns = u.nodes
            out.extend(zip(ns, ns[1:]))
        for users in self.claim_users.values():
            ns = sorted({n for i in users for n in self.units[i].nodes})
            out.extend(zip(ns, ns[1:]))
        return out

    def kind_tag(self, pod) -> str:
        """Added to the scheduling key of counted kinds: their pods have one priority and preempt
        alike (a per-node count of a kind then says which priority is placed there)."""
        return f"\x00priority={pod.priority}" + ("\x00preempts" if pod.key in self.pod_preemptors else "")


@dataclass
class Encoded:
    """The victims' variables in one part's model."""

    classes: list[tuple[list[int], Any]]  # (units, most important first; pods evicted)
    variables: list[Any]  # every variable this module made (hints between phases)
    cost: Any  # None: no victim in the part
    node_evicted: dict[str, list[tuple[dict, Any]]]  # node -> [(requests of one pod, pods evicted)]
    node_total: dict[str, dict[str, Fraction]]  # node -> requests of every candidate there
    prep: Any = None
    kept_in: dict = field(default_factory=dict)  # column key -> [(devices per pod, pods, pods evicted)]
    weights: list[tuple[int, Any]] = field(default_factory=list)  # `cost` as (coefficient, variable)


def encode(m, vs: VictimSet, prep, node_names: set[str]) -> Encoded:
    """The victim variables of the part over `node_names` (units with a node outside stay kept)."""
    cp = m.cp
    classes: dict[tuple, list[int]] = {}
    singles: list[int] = []
    shared_claims = {c for c, users in vs.claim_users.items() if len(users) > 1}
    node_total: dict[str, dict[str, Fraction]] = defaultdict(dict)
    for i, u in enumerate(vs.units):
        for p in u.pods:
            tot = node_total[p.node_name]
            for r, v in p.resources.items():
                tot[r] = tot.get(r, Fraction(0)) + v
        if not set(u.nodes) <= node_names:
            continue
        if len(u.pods) == 1 and not any(c in shared_claims for c in u.claims):
            pod = u.pods[0]
            cols = tuple(sorted(_columns(vs, prep, u.claims).items(), key=repr))
            key = (pod.node_name, u.priority, u.is_group, tuple(sorted(pod.resources.items())), cols)
            classes.setdefault(key, []).append(i)
        else:
            singles.append(i)
    groups = [sorted(members, key=lambda i: vs.units[i].rank) for members in classes.values()]
    groups += [[i] for i in singles]
    lowest = min((u.priority for u in vs.units), default=0)
    out = Encoded([], [], None, defaultdict(list), node_total, prep)
    if not groups:
        return out
    n_pods = sum(len(vs.units[i].pods) for g in groups for i in g)
    spread = sum((vs.units[i].priority - lowest) * len(vs.units[i].pods) for g in groups for i in g)
    if (spread + 1) * (n_pods + 1) > _COST_LIMIT:
        ranks = {p: r for r, p in enumerate(sorted({u.priority for u in vs.units}))}
        level = {i: ranks[u.priority] for i, u in enumerate(vs.units)}
        spread = sum(level[i] * len(vs.units[i].pods) for g in groups for i in g)
        vs.cost_note = "priorities too far apart for one exact sum: the priority ranks are summed"
    else:
        level = {i: u.priority - lowest for i, u in enumerate(vs.units)}
    big = spread + 1
    cost_terms = []
    evicted_of_unit: dict[int, Any] = {}
    for g in groups:
        u0 = vs.units[g[0]]
        size = len(g) if len(u0.pods) == 1 else 1
        var = cp.new_int_var(0, size, f"evicted[{u0.key}{'+' if size > 1 else ''}]")
        out.classes.append((g, var))
        out.variables.append(var)
        cost_terms.append((big + level[g[0]]) * len(u0.pods) * var)
        out.weights.append(((big + level[g[0]]) * len(u0.pods), var))
        for i in g:
            evicted_of_unit[i] = var
        for p in u0.pods:
            out.node_evicted[p.node_name].append((p.resources, var))
    out.cost = sum(cost_terms)
    # Devices: what kept claims hold, per column.
    kept_in: dict[Any, list] = defaultdict(list)  # column key -> [(devices, total, evicted expr)]
    for g, var in out.classes:
        u0 = vs.units[g[0]]
        if u0.claims and not any(c in shared_claims for c in u0.claims):
            for ref_key, n in _columns(vs, prep, u0.claims).items():
                kept_in[ref_key].append((n, len(g) if len(u0.pods) == 1 else 1, var))
    for c in sorted(shared_claims):
        users = vs.claim_users[c]
        held = _columns(vs, prep, [c])
        if not held:
            continue
        if all(i in evicted_of_unit for i in users):
            freed = cp.new_bool_var(f"freed[{c}]")
            out.variables.append(freed)
            for i in users:
                m.add(cp.add(freed <= evicted_of_unit[i]))
        else:
            freed = 0  # a user outside the part stays: the claim stays
        for ref_key, n in held.items():
            kept_in[ref_key].append((n, 1, freed))
    out.kept_in = kept_in
    return out


def limit_columns(m, enc: Encoded, by_ref: dict, refs: dict) -> None:
    """A column's devices: the pending pods' terms (admin access aside) plus what kept claims hold."""
    cp = m.cp
    for key, held in enc.kept_in.items():
        ts = [t for t in by_ref.get(key, []) if not t.spec.admin_access]
        if not ts:
            continue
        kept = sum(n * (total - e) for n, total, e in held)
        m.add(cp.add(sum(t.var for t in ts) + kept <= refs[key].size))


def justify(m, enc: Encoded, vs: VictimSet, workload, kinds, k: dict, y: dict, gang_terms: dict) -> None:
    """An eviction only where a preemptor of higher priority is placed (see the module docstring)."""
    cp = m.cp
    on_node: dict[str, list[tuple[int, Any]]] = defaultdict(list)  # node -> [(priority, var)]
    for (pod_key, node), v in y.items():
        prio = vs.pod_preemptors.get(pod_key)
        if prio is not None:
            on_node[node].append((prio, v))
    for kind in kinds:
        if kind.counted:
            prio = vs.pod_preemptors.get(kind.pods[0].key)
            if prio is not None:
                for (ki, node), v in k.items():
                    if ki == kind.index:
                        on_node[node].append((prio, v))
    groups = [(vs.group_preemptors[g], vars_) for g, vars_ in gang_terms.items() if g in vs.group_preemptors]
    room: dict[tuple, Any] = {}

    def room_for(where: str | None, prio: int):
        """A literal: some preemptor above `prio` placed on node `where` (None: some PodGroup)."""
        key = (where, prio)
        got = room.get(key)
        if got is None:
            if where is None:
                terms = [v for p, vars_ in groups if p > prio for v in vars_]
            else:
                terms = [v for p, v in on_node.get(where, ()) if p > prio]
            if not terms:
                got = 0
            else:
                got = cp.new_bool_var(f"preempts[{where or 'podgroup'},{prio}]")
                m.add(cp.add(got <= sum(terms)))
                enc.variables.append(got)
            room[key] = got
        return got

    for g, var in enc.classes:
        u0 = vs.units[g[0]]
        lits = [room_for(n, u0.priority) for n in u0.nodes] + [room_for(None, u0.priority)]
        lits = [x for x in lits if not isinstance(x, int)]
        size = len(g) if len(u0.pods) == 1 else 1
        if not lits:
            m.add(cp.add(var == 0))
        else:
            m.add(cp.add(var <= size * sum(lits)))


def first_fit_hint(vs: VictimSet, enc: Encoded) -> dict:
    """First-fit's evictions in the victim variables."""
    return {var: sum(1 for i in g if vs.units[i].pods[0].key in vs.first_fit_evicted) for g, var in enc.classes}


def decide(vs: VictimSet, enc: Encoded | None, value) -> dict[str, int]:
    """The units the solution evicts (`vs.decided`; none of a part without `enc`); returns the
    devices kept victims still hold (device id -> 1), for the decoder not to give them away."""
    for g, var in enc.classes if enc is not None else []:
        n = int(value(var))
        # Counted pods alike: the least important go (the list is most important first).
        for j, i in enumerate(g):
            vs.decided[i] = 1 if j >= len(g) - n else 0
    held: dict = {}
    for c, users in vs.claim_users.items():
        if all(vs.decided.get(i, 0) for i in users):
            continue
        for _, did in vs.claim_devices.get(c, ()):
            held[did] = 1
    return held


def _columns(vs: VictimSet, prep, claims: list[str]) -> dict:
    """Column key -> devices the claims hold in it (devices no pending pod may take: none)."""
    out: dict = defaultdict(int)
    for c in claims:
        for node, did in vs.claim_devices.get(c, ()):
            ref = prep.column(node, did)
            if ref is not None:
                out[ref.key] += 1
    return dict(out)


def necessary(m, enc: Encoded, vs: VictimSet, cluster, node_demand: dict, prio_of: dict, by_ref, refs) -> None:
    """Kubernetes' reprieve: a victim is evicted only if putting it back (the others as decided)
    leaves no room for the pending pods of higher priority placed on its node that may preempt: some
    node resource or some column of its devices would be over-full. Without it the model could evict
    for pods of the victim's own priority or lower, or for a pod with preemptionPolicy Never (room
    the preemptors do not need), which preemption never does."""
    from draopt.model.encodings.base import scale_to_int

    cp = m.cp
    kept_in = enc.kept_in
    lits: dict[tuple, Any] = {}

    def over(key: tuple, terms: list[tuple[Fraction, Any]], rhs: Fraction):
        """A literal that implies sum(terms) > rhs (0 when no term can make it true)."""
        got = lits.get(key)
        if got is None:
            if not any(a > 0 for a, _ in terms):
                got = 0
            else:
                ints, _ = scale_to_int([a for a, _ in terms] + [rhs])
                got = cp.new_bool_var(f"needed[{key}]")
                m.add(cp.add(sum(a * v for a, (_, v) in zip(ints, terms)) >= ints[-1] + 1).only_enforce_if(got))
                enc.variables.append(got)
            lits[key] = got
        return got

    for g, var in enc.classes:
        u0 = vs.units[g[0]]
        prio = u0.priority
        options = []
        for n in u0.nodes:
            node = cluster.by_name[n]
            mine: dict[str, Fraction] = {}
            for p in u0.pods:
                if p.node_name == n:
                    for r, v in p.resources.items():
                        mine[r] = mine.get(r, Fraction(0)) + v
            higher = [(res, v) for res, v in node_demand.get(n, ()) if prio_of.get(v.index, prio) > prio]
            for r, mine_r in sorted(mine.items()):
                if mine_r <= 0 or r not in node.allocatable or not higher:
                    continue
                # placed higher + (running left, kept candidates, this one back) > allocatable
                terms = [(Fraction(res.get(r, 0)), v) for res, v in higher]
                terms += [(-Fraction(res.get(r, 0)), e) for res, e in enc.node_evicted.get(n, ())]
                rhs = node.allocatable[r] - node.used.get(r, 0) - enc.node_total[n].get(r, 0) - mine_r
                options.append(over(("node", n, r, prio, mine_r), terms, rhs))
        for ref_key, count in _columns(vs, enc.prep, u0.claims).items():
            ts = [
                t
                for t in by_ref.get(ref_key, [])
                if not t.spec.admin_access and _owner_preempts(t.owner, vs) and _owner_priority(t.owner) > prio
            ]
            if not ts:
                continue
            held = kept_in.get(ref_key, [])
            terms = [(Fraction(1), t.var) for t in ts] + [
                (Fraction(-n), e) for n, _, e in held if not isinstance(e, int)
            ]
            const = sum(n * total for n, total, e in held) - sum(n for n, _, e in held if isinstance(e, int) and e)
            rhs = Fraction(refs[ref_key].size - const - count)
            options.append(over(("col", ref_key, prio, count), terms, rhs))
        options = [x for x in options if not isinstance(x, int)]
        if not options:
            m.add(cp.add(var == 0))
        else:
            m.add(cp.add(sum(options) >= 1).only_enforce_if(m.positive(var)))


def _owner_preempts(owner, vs: VictimSet) -> bool:
    """Whether every pod an owner's devices serve may preempt (a claim shared with a pod that may
    not is no reason to evict)."""
    if owner.counted:
        return vs.preempts(owner.kind.pods[0])
    users = owner.kind.users.get(owner.claim_key) or [p.key for p in owner.kind.pods]
    return all(vs.preempts(p) for p in owner.kind.pods if p.key in users)


def _owner_priority(owner) -> int:
    """The priority of the pods an owner's devices serve (a claim several pods share: the lowest)."""
    if owner.counted:
        return owner.kind.pods[0].priority
    users = owner.kind.users.get(owner.claim_key) or [p.key for p in owner.kind.pods]
    by_key = {p.key: p for p in owner.kind.pods}
    return min(by_key[u].priority for u in users if u in by_key)
