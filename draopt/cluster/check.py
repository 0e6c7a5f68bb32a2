"""Independent validation of a placement: every rule checked from the output alone.

Per node, the claims allocated there are re-checked with the solver-independent allocation
checker (selectors, counts, taints, constraints, capacity, counters, node selectors) against
the devices that were in use before; then, across the cluster: no device given twice, every
counter set within its values, node resources respected, pods on nodes their claims allow,
gangs whole.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

from draopt.cluster.state import pod_on
from draopt.dra.checker import check
from draopt.dra.inventory import allocated_state, available_counters, build_inventory
from draopt.kube.nodeselect import node_selector_matches
from draopt.dra.problem import prepare


def check_placement(outcome) -> list[str]:
    result, workload, cluster = outcome.result, outcome.workload, outcome.cluster
    errors: list[str] = []
    evicted = {e.pod: e for e in result.evictions}
    deallocated = set(result.deallocated)
    initial = [c for k, c in workload.claims.items() if c.status.allocation is not None and k not in deallocated]
    nodes = {n.name: n for n in cluster.nodes}
    errors += _check_evictions(result, workload, evicted, deallocated)
    errors += _check_preemptors(result, workload, cluster.objects.pod_groups, evicted)
    errors += _check_claims_per_node(result, workload, cluster, initial, nodes)
    errors += _check_devices_and_counters(result, cluster, initial)
    errors += _check_pods(result, workload, cluster, nodes, evicted, deallocated)
    errors += _check_groups(workload, nodes, {pl.pod: pl.node for pl in result.pods if pl.placed}, evicted)
    return errors


def _check_claims_per_node(result, workload, cluster, initial: list, nodes: dict) -> list[str]:
    """Per node: the new claims obey the allocation rules."""
    features = cluster.features
    errors: list[str] = []
    by_node: dict[str, list[str]] = defaultdict(list)
    for key, (_, node) in sorted(result.claims.items()):
        by_node[node].append(key)
    for node_name, keys in by_node.items():
        node = nodes[node_name].node
        inv = build_inventory(
            cluster.objects.resource_slices,
            node,
            initial,
            features,
            cluster.objects.taint_rules,
            index=cluster.index,
        )
        problem = prepare([workload.claims[k] for k in keys], inv, cluster.classes, features, cluster.cel_env)
        for e in check(problem, [result.claims[k][0] for k in keys]):
            errors.append(f"node {node_name}: {e}")
    return errors


def _check_devices_and_counters(result, cluster, initial: list) -> list[str]:
    """Across nodes: devices and counters, with everything allocated in the end."""
    features = cluster.features
    errors: list[str] = []
    final = allocated_state(initial, features)
    owners: dict[tuple, list[str]] = defaultdict(list)
    for key, (alloc, _) in result.claims.items():
        for r in alloc.devices.results:
            did = (r.driver, r.pool, r.device)
            consumed = {n: _q(v) for n, v in (r.consumed_capacity or {}).items()}
            share = bool(r.share_id) and features.consumable_capacity
            if not r.admin_access and not share:
                if did in final.devices:
                    errors.append(f"device {'/'.join(did)}: given to {key} but already in use")
                owners[did].append(key)
            final.add_result(key, did, admin=bool(r.admin_access), share=share, consumed=consumed)
    for did, keys in owners.items():
        if len(keys) > 1:
            errors.append(f"device {'/'.join(did)}: allocated to several claims: {', '.join(keys)}")
    seen_pools = set()
    for n in cluster.nodes:
        for pool in cluster.inventory(n).pools:
            if id(pool) in seen_pools or pool.incomplete or pool.invalid:
                continue
            seen_pools.add(id(pool))
            for set_name, counters in available_counters(pool, final).items():
                for name, left in counters.items():
                    if left < 0:
                        errors.append(f"pool {pool.id}: counter {set_name}/{name} over-committed by {-left}")
    return errors


def _check_pods(result, workload, cluster, nodes: dict, evicted: dict, deallocated: set) -> list[str]:
    """Pods: node resources, selectors, claims' node selectors."""
    errors: list[str] = []
    used: dict[str, dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for pod in workload.running:
        if pod.key in evicted:
            continue
        on_node = nodes.get(pod.node_name)
        for r, v in (pod_on(on_node, pod) if on_node is not None else pod).resources.items():
            used[pod.node_name][r] += v
    from draopt.cluster.firstfit_node import ClaimBook, device_resources

    book = ClaimBook(cluster, workload.claims)
    book.allocations.update(result.claims)
    book.freed.update(deallocated)
    for pl in result.pods:
        if not pl.placed:
            continue
        pod = workload.pod(pl.pod)
        if pod.hold is not None:
            errors.append(f"pod {pl.pod}: placed, but kube-scheduler keeps it out of its queue: {pod.hold.message}")
        node = nodes.get(pl.node)
        if node is None:
            errors.append(f"pod {pl.pod}: placed on unknown node {pl.node}")
            continue
        rejected = cluster.node_rejects(node, pod)
        if rejected is not None:
            errors.append(f"pod {pl.pod}: node {pl.node}: {rejected}")
        errors += _check_device_plugin_served(pod, node, result)
        pod = pod_on(node, pod)  # its extended resources as the node serves them
        for r, v in pod.resources.items():
            used[pl.node][r] += v
        for r, v in device_resources(cluster, book, pod, node, None).items():  # DRANodeAllocatableResources
            used[pl.node][r] += v
        for use in pod.claims:
            alloc = (
                result.claims[use.key][0] if use.key in result.claims else workload.claims[use.key].status.allocation
            )
            if alloc is None:
                errors.append(f"pod {pl.pod}: claim {use.key} is not allocated")
            elif alloc.node_selector is not None and not node_selector_matches(alloc.node_selector, node.node):
                errors.append(f"pod {pl.pod}: claim {use.key} is allocated for another node")
    for name, per in used.items():
        node = nodes.get(name)
        if node is None:
            continue
        for r, v in per.items():
            cap = node.allocatable.get(r)
            if cap is not None and v > cap:
                errors.append(f"node {name}: {r} over-committed ({v} > {cap})")
    return errors


def _check_device_plugin_served(pod, node, result) -> list[str]:
    """A node's device plugin serves the pod's extended resources: no claim allocated for them."""
    asked = {u.key for u in pod_on(node, pod).claims}
    return [
        f"pod {pod.key}: claim {u.key} is allocated but node {node.name}'s device plugin serves its extended resources"
        for u in pod.claims
        if u.key not in asked and u.key in result.claims
    ]


def _check_groups(workload, nodes, placed: dict[str, str], evicted) -> list[str]:
    """Gangs: at least minCount pods, counting the group's running pods that stay (kube-scheduler's
    PlacementFeasible counts scheduled pods), or none placed. Topology constraints (KEP-5732):
    the placed and running pods of a group, and of every constrained CompositePodGroup above it,
    on nodes of one value of the label."""
    from draopt.cluster.podgroup_placement import chain_of

    errors: list[str] = []
    pending = {p.key for p in workload.pending}
    node_of = dict(placed)
    for d in workload.running:
        if d.key not in evicted:
            node_of[d.key] = d.node_name
    members: dict[tuple[str, str], list[str]] = {}
    for key, gang in workload.groups.items():
        new = sum(1 for p in gang.pods if p in placed)
        if not new:
            continue
        if gang.policy == "gang":
            n = new + sum(1 for p in gang.pods if p not in pending and p in node_of)
            if n < gang.min_count:
                errors.append(f"PodGroup {key}: {n} pods placed, minCount {gang.min_count}")
        for entity in chain_of(workload, key):
            members.setdefault(entity, []).extend(p for p in gang.pods if p in node_of)
    for (kind, key), pods in sorted(members.items()):
        obj = workload.groups[key] if kind == "pg" else workload.composites[key]
        if obj.topology_key is None:
            continue
        values = set()
        for p in pods:
            node = nodes.get(node_of[p])
            labels = (node.node.metadata.labels or {}) if node is not None else {}
            values.add(labels.get(obj.topology_key))
        if len(values) > 1 or None in values:
            what = "PodGroup" if kind == "pg" else "CompositePodGroup"
            shown = ", ".join(sorted(str(v) if v is not None else "(no label)" for v in values))
            errors.append(f"{what} {key}: pods in more than one {obj.topology_key} domain ({shown})")
    return errors


def _check_evictions(result, workload, evicted: dict, deallocated: set[str]) -> list[str]:
    """Preemption's evictions: running pods only, each of lower priority than the pod or PodGroup that
    evicted it (a PodGroup placed; a pod may be left pending: its next cycle, once its back-off
    ended, failed); a deallocated claim has no user left (not evicted, placed)."""
    errors: list[str] = []
    running = {p.key: p for p in workload.running}
    placed = {pl.pod for pl in result.pods if pl.placed}
    # pod preemptors left pending after their back-off (nominated, tried again, not placed)
    waited = {pl.pod for pl in result.pods if not pl.placed and (pl.nominated_node or pl.nominated_before)}
    for key, e in evicted.items():
        if key not in running:
            errors.append(f"pod {key}: evicted but not running in the input")
        if e.priority >= e.preemptor_priority:
            errors.append(
                f"pod {key}: evicted (priority {e.priority}) for {e.preemptor_kind} {e.preemptor} "
                f"of priority {e.preemptor_priority}, not higher"
            )
        if e.preemptor_kind == "pod" and e.preemptor not in placed and e.preemptor not in waited:
            errors.append(f"pod {key}: evicted for pod {e.preemptor}, which is not placed")
        if e.preemptor_kind == "podgroup" and not any(p in placed for p in workload.groups[e.preemptor].pods):
            errors.append(f"pod {key}: evicted for PodGroup {e.preemptor}, which has no placed pod")
        if key in placed:
            errors.append(f"pod {key}: evicted and placed")
    for ck in sorted(deallocated):
        if ck in result.claims:
            continue  # deallocated, then allocated again for a pending pod
        users = [p.key for p in workload.running if p.key not in evicted and any(u.key == ck for u in p.claims)]
        users += [k for k in placed if any(u.key == ck for u in workload.pod(k).claims)]
        if users:
            errors.append(f"claim {ck}: deallocated but still used by {', '.join(sorted(users))}")
    return errors


def _check_preemptors(result, workload, pod_groups, evicted: dict) -> list[str]:
    """Each eviction against the input, not the record's own numbers: the victim's priority as
    preemption compares it (its PodGroup's when the group sets one, kube-scheduler's GetPodPriority)
    below the preemptor's (the pod's, or the PodGroup's); and the preemptor where its victims were:
    a pod preemptor placed on the node of one of its victims, every other victim of it a member of a
    PodGroup evicted whole (disruptionMode all) with a fellow member on that node; a PodGroup
    preemptor with a placed pod on the node of one of its victims; a disruptionMode-all PodGroup
    evicted with all its running pods or none."""
    from draopt.cluster.evictions import disrupts_whole_group

    errors: list[str] = []
    running = {p.key: p for p in workload.running}
    group_objs = {f"{g.namespace}/{g.name}": g for g in pod_groups}
    node_of = {pl.pod: pl.node for pl in result.pods if pl.placed}

    whole = {g for g, obj in group_objs.items() if disrupts_whole_group(obj) and g in workload.groups}

    def victim_priority(pod) -> int:
        return _victim_priority(pod, group_objs, workload)

    by_preemptor: dict[tuple[str, str], list] = defaultdict(list)
    for key, e in sorted(evicted.items()):
        pod = running.get(key)
        if pod is None:
            continue  # said by _check_evictions
        by_preemptor[(e.preemptor_kind, e.preemptor)].append(pod)
        prio = victim_priority(pod)
        if e.preemptor_kind == "pod":
            try:
                preemptor_prio = workload.pod(e.preemptor).priority
            except KeyError:
                errors.append(f"pod {key}: evicted for pod {e.preemptor}, which is not in the input")
                continue
        elif e.preemptor in workload.groups:
            preemptor_prio = workload.groups[e.preemptor].priority
        else:
            errors.append(f"pod {key}: evicted for PodGroup {e.preemptor}, which is not in the input")
            continue
        if prio >= preemptor_prio:
            errors.append(
                f"pod {key}: evicted (priority {prio} in the input) for {e.preemptor_kind} {e.preemptor} "
                f"of priority {preemptor_prio}, not higher"
            )
        # A PodGroup evicted whole may be recorded with one of its members' priorities (its pods'
        # own, when the group sets none: first-fit takes the first pod's, optimal the highest).
        said = {prio}
        if pod.group in whole:
            said |= {victim_priority(running[k]) for k in workload.groups[pod.group].pods if k in running}
        if e.priority not in said or e.preemptor_priority != preemptor_prio:
            errors.append(
                f"pod {key}: the eviction says priority {e.priority} for {e.preemptor_priority}, "
                f"the input {prio} for {preemptor_prio}"
            )
    for g in sorted(whole):
        members = [k for k in workload.groups[g].pods if k in running]
        gone = [k for k in members if k in evicted]
        if gone and len(gone) < len(members):
            errors.append(
                f"PodGroup {g} (disruptionMode all): {len(gone)} of its {len(members)} running pods evicted, not all"
            )
    nominated = {pl.pod: (pl.nominated_node, pl.nominated_before) for pl in result.pods}
    errors += _check_preemptors_where(by_preemptor, workload, node_of, whole, nominated)
    return errors


def _victim_priority(pod, group_objs: dict, workload) -> int:
    """A victim's priority as preemption compares it: its PodGroup's when the group sets one."""
    obj = group_objs.get(pod.group) if pod.group else None
    if obj is not None and (obj.spec.priority is not None or obj.spec.priority_class_name):
        return workload.groups[pod.group].priority
    return pod.priority


def _check_preemptors_where(by_preemptor: dict, workload, node_of: dict, whole: set, nominated: dict) -> list[str]:
    """Each preemptor where its victims were (see _check_preemptors). A pod preemptor is nominated
    to the node of its victims and placed there when it passes the filters after its back-off;
    else (its nominations before) it is placed elsewhere, preempts again on another node, or stays
    pending: victims on the nodes it was nominated to are its."""
    errors: list[str] = []
    for (kind, who), victims in sorted(by_preemptor.items()):
        nodes = {v.node_name for v in victims}
        if kind == "pod":
            node = node_of.get(who)
            last, before = nominated.get(who, (None, ()))
            if node is not None and last is not None and node not in nodes:
                errors.append(
                    f"pod {who}: preempted {len(victims)} pod(s) on {', '.join(sorted(nodes))} but is placed on {node}"
                )
                continue
            here = {v.group for v in victims if v.node_name in (node, last) and v.group in whole}
            for v in victims:
                if v.node_name not in (node, last, *before) and v.group not in here:
                    errors.append(
                        f"pod {v.key}: evicted from {v.node_name} for pod {who} placed on {node}, "
                        "not as part of a PodGroup evicted whole from that node"
                    )
        elif who in workload.groups:
            landed = {node_of[k] for k in workload.groups[who].pods if k in node_of}
            if landed and not landed & nodes:
                errors.append(
                    f"PodGroup {who}: preempted {len(victims)} pod(s) on {', '.join(sorted(nodes))}, "
                    "none of its pods placed on any of those nodes"
                )
    return errors


def _q(v: str) -> Fraction:
    from draopt.kube.quantity import Quantity

    return Quantity.parse(v).value
