"""Gangs: a pod group with the gang policy places at least minCount of its pods, or none.
(Groups of pod-group cycles, with topology domains or composites, are encoded by
`draopt.model.topology_domains`, which reads the same terms.)"""

from __future__ import annotations

from draopt.model.encodings.context import ModelContext


def collect_terms(ctx: ModelContext) -> None:
    """Per pod group, the variables of its pods placed (counted classes, then unit pods)."""
    for (ki, (prio, group)), var in ctx.totals.items():
        if group is not None:
            ctx.gang_terms[group].append(var)
    for pod_key, var in ctx.placed.items():
        group = ctx.workload.pod(pod_key).group
        if group is not None:
            ctx.gang_terms[group].append(var)


def all_or_nothing(ctx: ModelContext, handled: set) -> None:
    """minCount pods or none, for each gang not `handled` by the topology domains' encoding."""
    m, cp = ctx.m, ctx.cp
    for g, vs in ctx.gang_terms.items():
        gang = ctx.workload.groups.get(g)
        if gang is None or gang.policy != "gang" or g in handled:
            continue
        on = cp.new_bool_var(f"gang[{g}]")
        m.add(cp.add(sum(vs) >= gang.min_count * on))
        m.add(cp.add(sum(vs) <= len(gang.pods) * on))
