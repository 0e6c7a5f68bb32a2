"""`draopt explain --scores`: for each pod asked about, kube-scheduler's score plugins on the node
it chose and the runners-up, in the pod's own scheduling cycle (draopt.scheduler.score_breakdown),
as a table (one column per node, one row per plugin: normalised score x weight = weighted) and
as JSON (the section's `scores`)."""

from __future__ import annotations

from draopt.cluster.firstfit import ScoreWatch
from draopt.scheduler.score_breakdown import NOT_MODELLED, SHOWN_NODES, ScoreBreakdown


def watch(pods: list[str]) -> tuple[ScoreWatch, dict[str, ScoreBreakdown]]:
    """The observer to hand to `place` for `pods`, and where the last cycle of each lands."""
    keys = frozenset(ref if "/" in ref else f"default/{ref}" for ref in pods)
    seen: dict[str, ScoreBreakdown] = {}
    return ScoreWatch(keys, lambda b: seen.__setitem__(b.pod, b)), seen


def section(explain, key: str, got: ScoreBreakdown | None, placement, name_order: bool):
    """The explain.Section of one pod's scores (or why there are none)."""
    title = "scores in its scheduling cycle"
    if got is not None:
        if placement is None or not placement.placed:
            title += f" (its last; bound to {got.chosen}, then given back: it ends unplaced)"
        elif placement.node != got.chosen:
            title += f" (its last that scored; it ends on {placement.node})"
        return explain.Section(f"pod {key}", title, table(got), block=True, scores=got.to_json())
    if name_order:
        why = "builtin:name-order has no score plugins: the first feasible node by name is taken"
    elif placement is None or not placement.placed:
        why = "not placed: no node passed the filters, so none was scored"
    else:
        why = (
            f"bound to {placement.node} without a scoring cycle of its own (the node preemption "
            "nominated for it, or a pod group's placement decided from memory)"
        )
    return explain.Section(f"pod {key}", title, why)


def table(b: ScoreBreakdown, top: int = SHOWN_NODES) -> str:
    """Rows: the plugins (weight, then `score x weight = weighted` per node) and the totals;
    columns: the chosen node (marked *) and the best runners-up."""
    shown = b.ranked(top)
    heads = ["PLUGIN", "WEIGHT"] + [("*" if b.nodes[i] == b.chosen else "") + b.nodes[i] for i in shown]
    rows = [heads]
    for k, (plugin, weight) in enumerate(b.plugins):
        mark = " (not modelled: 0)" if plugin in NOT_MODELLED else ""
        rows.append(
            [plugin + mark, str(weight)] + [f"{b.scores[i][k]}x{weight}={b.scores[i][k] * weight}" for i in shown]
        )
    totals = b.totals
    rows.append(["TOTAL", ""] + [str(totals[i]) for i in shown])
    widths = [max(len(r[c]) for r in rows) for c in range(len(heads))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.append(f"profile {b.profile}: {b.scope()}; * the chosen node")
    tied = sum(1 for t in totals if t == totals[b.nodes.index(b.chosen)])
    if tied > 1 and b.scored:
        lines.append(f"{tied} nodes share the best total: the tie is broken at random (--seed, --tie-break)")
    if len(b.nodes) > len(shown):
        lines.append(f"(the chosen node and the best {len(shown) - 1} of the {len(b.nodes) - 1} others shown)")
    return "\n".join(lines)
