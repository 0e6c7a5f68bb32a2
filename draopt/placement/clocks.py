"""The two clocks side by side, for `draopt explain`: a pod that is pending at the moment of the
dump but placed once the controllers have acted (or the other way round), and what it waits for.

The clocks are draopt.kube.settle's: `now` (the scheduler's view of the dump) and `settled`
(terminal pods' claims released, deletions and NoExecute evictions finished, replacements made).
Both are placed with first-fit, the default profile and the name tie-break (one answer per input).
"""

from __future__ import annotations

from dataclasses import dataclass

from draopt.kube import settle
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.kube.models import ResourceClaim


@dataclass(frozen=True)
class Holder:
    """A pod on a node that holds what it has only on the `now` clock."""

    pod: str
    who: str  # "terminating pod ns/x", "Succeeded pod ns/x", "pod ns/x (NoExecute eviction)"
    devices: tuple[str, ...]  # driver/pool/device of its allocated claims
    counted: bool  # whether the scheduler counts its cpu/memory (not for terminal pods)

    def text(self) -> str:
        held = list(self.devices) + (["its cpu/memory"] if self.counted and not self.devices else [])
        return f"{', '.join(held)} held by {self.who}"


def _key(obj) -> str:
    return f"{obj.metadata.namespace or 'default'}/{obj.metadata.name}"


def _devices(claims: list[ResourceClaim]) -> tuple[str, ...]:
    return tuple(
        f"{r.driver}/{r.pool}/{r.device}"
        for c in claims
        if c.status.allocation
        for r in c.status.allocation.devices.results
    )


def holders(objects: ObjectSet) -> dict[str, list[Holder]]:
    """node -> the pods holding resources there only until the controllers act (input order)."""
    leaving = {d.pod: d for d in settle.departures_of(objects)}
    index = settle.allocated_by_pod(objects.resource_claims)
    out: dict[str, list[Holder]] = {}
    for pod in objects.pods:
        key, node = _key(pod), pod.spec.node_name
        if not node:
            continue
        if key in leaving:
            who = f"terminating pod {key}" if settle.terminating(pod) else f"pod {key} (NoExecute eviction)"
            counted = True
        elif settle.terminal(pod):
            who, counted = f"{pod.status.phase} pod {key}", False
        else:
            continue
        devices = _devices(settle.claims_of(pod, index))
        if devices or counted:
            out.setdefault(node, []).append(Holder(key, who, devices, counted))
    return out


def differences(raw: ObjectSet, features: Features) -> list[str]:
    """One line per pod whose first-fit answer differs between the clocks (queue order of the
    `now` clock, then pods only the settled clock has)."""
    from draopt.placement import place

    later = settle.apply(raw)
    if not later.clock_notes:
        return []
    now = settle.apply(raw, settle=False)
    before = place(now, policy="first-fit", features=features, tie_break="name").result
    after = place(later, policy="first-fit", features=features, tie_break="name").result
    settled_node = {p.pod: p.node for p in after.pods}
    now_node = {p.pod: p.node for p in before.pods}
    held = holders(raw)
    n_nodes = len(raw.nodes)
    lines = []
    for p in before.pods:
        target = settled_node.get(p.pod)
        if p.placed or not target:
            continue
        there = held.get(target, [])
        what = "; ".join(h.text() for h in there) or "nothing draopt can name"
        lines.append(
            f"pod {p.pod}: pending now ({p.reason_text(n_nodes)}); on node {target}: {what}; "
            f"fits once {'they are' if len(there) > 1 else 'it is'} gone (settled: placed on {target})"
        )
    for p in after.pods:
        if p.pod not in now_node and not p.placed:
            lines.append(f"pod {p.pod}: created on the settled clock only, pending: {p.reason_text(n_nodes)}")
        elif now_node.get(p.pod) and not p.placed:
            lines.append(f"pod {p.pod}: placed now on {now_node[p.pod]}, pending settled: {p.reason_text(n_nodes)}")
    return lines
