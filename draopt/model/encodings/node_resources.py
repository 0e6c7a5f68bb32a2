"""Node resources: on every node, what the pods placed there request (cpu, memory, pods,
extended resources, and what their devices map to node resources) fits in what is left of its
allocatable, less what evicted victims free (`draopt.model.victims`). Each node touched is a
packing term."""

from __future__ import annotations

from fractions import Fraction

from draopt.model.encodings.base import scale_to_int, upper_bound
from draopt.model.encodings.context import ModelContext


def device_node_resources(ctx: ModelContext) -> None:
    """DRANodeAllocatableResources: a device that maps to node resources adds them to the node
    of the pod that uses it (mapping once per claim; overhead per pod). Units only: counted
    kinds never have them."""
    from draopt.kube.node_allocatable import node_allocatable_demand
    from draopt.kube.workload import containers_referencing

    m, cluster, workload, y = ctx.m, ctx.cluster, ctx.workload, ctx.y
    cp = m.cp
    for o in ctx.owners:
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
                        ctx.node_demand[n].append((demand, both))


def limit_nodes(ctx: ModelContext) -> None:
    """Each node's resources, in node order; and (packing) whether the node is touched."""
    m, cp, cluster, enc = ctx.m, ctx.cp, ctx.cluster, ctx.enc
    for node in sorted((cluster.by_name[n] for n in ctx.node_demand), key=lambda n: n.index):
        terms = ctx.node_demand[node.name]
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
        if not ctx.packing_terms:
            continue  # touched nodes are a packing term only
        t = cp.new_bool_var(f"node_used[{node.name}]")
        for _, v in terms:
            m.add(cp.add(v <= upper_bound(v) * t))
        ctx.touched_nodes.append(t)
