"""Topology constraints (KEP-5732) and CompositePodGroups (KEP-6012) in the one placement model.

For every group that first-fit places by its pod-group cycle (draopt.cluster.podgroup_placement:
a PodGroup with a topology constraint, or any group of a CompositePodGroup tree):

* **one domain per constrained entity**: a boolean per (entity, value of its topology label),
  at most one true; a pod of the group may use a node only if the node's value is the chosen
  one, for the group's own constraint and every constrained CompositePodGroup above it (nested
  placements). Nodes without the label take no pod of it. Running pods of the entity fix the
  value (GeneratePlacements); running pods in two domains, or on a node without the label,
  leave the entity unplaceable.
* **whole groups**: a gang needs minCount pods placed, its running pods counted (the
  PlacementFeasible progress counts scheduled pods), else none; a basic group is "on" when at
  least one pod is placed.
* **composites**: a gang CompositePodGroup is on with at least minGroupCount children on, else
  no child is; a basic one with at least one; a child is on only if its parent is.

This is what the first-fit cycle's outcome satisfies, so its placement stays a solution (the
floor); the model then chooses domains jointly instead of one group at a time.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from draopt.cluster.podgroup_placement import chain_of, cycle_root
from draopt.model.encodings.base import upper_bound


def handled_groups(workload) -> set[str]:
    """The groups whose pods the pod-group cycle places."""
    return {g for g in workload.groups if cycle_root(workload, g) is not None}


def kind_tag(workload, pod) -> str:
    """Added to a pod's scheduling key so that counted kinds never mix groups of cycles (their
    per-node counts must belong to one group's domain)."""
    group = pod.group
    if group is not None and group in workload.groups and cycle_root(workload, group) is not None:
        return f"\x00group={group}"
    return ""


def applies(workload, kinds) -> bool:
    handled = handled_groups(workload)
    return bool(handled) and any(p.group in handled for kind in kinds for p in kind.pods)


def _leaves(workload, entity: tuple[str, str]) -> list[str]:
    kind, key = entity
    if kind == "pg":
        return [key]
    out: list[str] = []
    for child_kind, child in workload.composites[key].children:
        out.extend(_leaves(workload, ("pg" if child_kind == "PodGroup" else "cpg", child)))
    return out


def _entity_object(workload, entity: tuple[str, str]):
    return workload.groups[entity[1]] if entity[0] == "pg" else workload.composites[entity[1]]


def _pinned(workload, cluster, entity: tuple[str, str], pending: set[str]) -> tuple[set[str] | None, bool]:
    """(the values the entity may take: None for any, broken): running pods of its leaves fix it."""
    key = _entity_object(workload, entity).topology_key
    values: set[str] = set()
    for leaf in _leaves(workload, entity):
        for p in workload.groups[leaf].pods:
            if p in pending:
                continue
            node = cluster.by_name.get(workload.pod(p).node_name)
            labels = (node.node.metadata.labels or {}) if node is not None else None
            if labels is None or key not in labels:
                return set(), True
            values.add(labels[key])
    if len(values) > 1:
        return set(), True
    return (values or None), False


def encode(m, workload, cluster, kinds, k: dict, y: dict, totals: dict, gang_terms: dict) -> set[str]:
    """Add the rules above to the model `m` (a PlacementModel: m.cp, m.add); returns the groups
    handled here (the caller's plain gang rule skips them)."""
    cp = m.cp
    handled = handled_groups(workload)
    if not handled:
        return set()
    pending = {p.key for p in workload.pending}
    kind_of = {kd.index: kd for kd in kinds}
    # The model's variables per group: (node name, var, upper bound).
    by_group: dict[str, list[tuple[str, Any, int]]] = defaultdict(list)
    for (pod_key, node_name), var in y.items():
        g = workload.pod(pod_key).group
        if g in handled:
            by_group[g].append((node_name, var, 1))
    for (ki, node_name), var in k.items():
        kd = kind_of.get(ki)
        if kd is None or not kd.pods:
            continue
        g = kd.pods[0].group
        if g in handled:
            by_group[g].append((node_name, var, len(kd.pods)))
    present = {g for g in handled if g in gang_terms or g in by_group}
    if not present:
        return set()
    # Domains: one boolean per (entity, value), at most one per entity.
    choice: dict[tuple[str, str], dict[str, Any]] = {}

    def domain_var(entity: tuple[str, str], value: str):
        vs = choice.setdefault(entity, {})
        if value not in vs:
            vs[value] = cp.new_bool_var(f"domain[{entity[0]}:{entity[1]}={value}]")
        return vs[value]

    allowed_of: dict[tuple[str, str], tuple[set[str] | None, bool]] = {}
    for g in sorted(present):
        rules = []
        for entity in chain_of(workload, g):
            key = _entity_object(workload, entity).topology_key
            if key is None:
                continue
            if entity not in allowed_of:
                allowed_of[entity] = _pinned(workload, cluster, entity, pending)
            rules.append((entity, key) + allowed_of[entity])
        for node_name, var, _ub in by_group.get(g, ()):
            labels = cluster.by_name[node_name].node.metadata.labels or {}
            for entity, key, allowed, broken in rules:
                value = labels.get(key)
                if broken or value is None or (allowed is not None and value not in allowed):
                    m.add(cp.add(var == 0))
                    break
                m.add(cp.add(var == 0).only_enforce_if(domain_var(entity, value).Not()))
    for vs in choice.values():
        if len(vs) > 1:
            m.add(cp.add(sum(vs.values()) <= 1))
    # Whole groups, then composites bottom-up.
    on: dict[tuple[str, str], Any] = {}
    for g in sorted(present):
        gang = workload.groups[g]
        vs = gang_terms.get(g, [])
        running = sum(1 for p in gang.pods if p not in pending)
        need = gang.min_count if gang.policy == "gang" else 1
        lit = cp.new_bool_var(f"group_on[{g}]")
        total = sum(vs) if vs else 0
        if gang.policy == "gang":
            m.add(cp.add(total + running >= need * lit))
        else:
            m.add(cp.add(total >= lit))
        if vs:
            m.add(cp.add(total <= sum(upper_bound(v) for v in vs) * lit))
        on[("pg", g)] = lit
    if workload.composites:
        roots = {cycle_root(workload, g) for g in present}
        for root in sorted(r for r in roots if r is not None and r[0] == "cpg"):
            _composite_on(m, workload, root, on, pending)
    return present


def _composite_on(m, workload, entity: tuple[str, str], on: dict, pending: set[str]):
    """The on-literal of an entity (created for composites, bottom-up); constants for leaves
    without pending pods in the model (their running pods decide)."""
    cp = m.cp
    if entity in on:
        return on[entity]
    if entity[0] == "pg":
        gang = workload.groups[entity[1]]
        running = sum(1 for p in gang.pods if p not in pending)
        need = gang.min_count if gang.policy == "gang" else 1
        ok = running >= need if gang.policy == "gang" else False
        on[entity] = cp.new_constant(1 if ok else 0)
        return on[entity]
    comp = workload.composites[entity[1]]
    children = [
        _composite_on(m, workload, ("pg" if kind == "PodGroup" else "cpg", key), on, pending)
        for kind, key in comp.children
    ]
    lit = cp.new_bool_var(f"composite_on[{entity[1]}]")
    need = comp.min_group_count if comp.policy == "gang" else 1
    if children:
        m.add(cp.add(sum(children) >= need * lit))
        for child in children:
            m.add(cp.add(child <= lit))
    else:
        m.add(cp.add(lit == 0))
    on[entity] = lit
    return lit


__all__ = ["encode", "applies", "kind_tag", "handled_groups"]
