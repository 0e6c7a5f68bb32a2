"""Capacity planning: how many more nodes like this one do the pending pods need?

`nodes_needed` copies a template node (its Node object and every ResourceSlice pinned to it
by nodeName, pools renamed after the copy) and searches for the smallest number of copies
with which a placement policy places every pending pod: doubling first, then bisection.
Placement need not be monotone in the number of nodes (first-fit is a heuristic), so the
answer is checked: `k` places everything, and `k - 1` was tried and did not.

`sweep` (now in `draopt.sweep`, re-exported here) runs many what-if studies.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .errors import InputError
from .features import Features
from .loader import ObjectSet


def with_copies(objects: ObjectSet, template: str, count: int) -> ObjectSet:
    """The objects plus `count` copies of node `template` and of the slices pinned to it."""
    node = next((n for n in objects.nodes if n.name == template), None)
    if node is None:
        raise InputError(f"--node-template {template}: no Node {template} in the input")
    out = copy.copy(objects)
    out.nodes = list(objects.nodes)
    out.resource_slices = list(objects.resource_slices)
    own = [s for s in objects.resource_slices if s.spec.node_name == template]
    daemons = [p for p in objects.pods if _daemon_pod_of(p, template)]
    if daemons:
        out.pods = list(objects.pods)
        out.creation_order = dict(objects.creation_order)
    for i in range(count):
        name = f"{template}-plan-{i}"
        n = node.model_copy(deep=True)
        n.metadata.name = name
        if "kubernetes.io/hostname" in n.metadata.labels:
            n.metadata.labels["kubernetes.io/hostname"] = name
        out.nodes.append(n)
        for s in own:
            c = s.model_copy(deep=True)
            c.metadata.name = f"{s.name}-plan-{i}"
            c.spec.node_name = name
            # Pools are per driver and name: a copied node's pool must not merge with the original.
            c.spec.pool.name = f"{s.spec.pool.name}-plan-{i}"
            out.resource_slices.append(c)
        for p in daemons:     # the DaemonSet controller makes its pod on the new node too
            out.pods.append(_daemon_pod_copy(p, template, name, out))
    return out


def _daemon_pod_of(pod, node: str) -> bool:
    """A pending pod a DaemonSet made for `node` (pinned to it by required node affinity)."""
    owners = (pod.metadata.model_extra or {}).get("ownerReferences") or []
    if pod.spec.node_name or not any(isinstance(o, dict) and o.get("kind") == "DaemonSet" for o in owners):
        return False
    na = pod.spec.affinity.node_affinity if pod.spec.affinity is not None else None
    req = na.required_during_scheduling_ignored_during_execution if na is not None else None
    return req is not None and any(f.key == "metadata.name" and f.values == [node]
                                   for t in req.node_selector_terms for f in t.match_fields)


def _daemon_pod_copy(pod, template: str, node: str, out: ObjectSet):
    from .controllers import generate_name
    owner = next(o for o in pod.metadata.model_extra["ownerReferences"] if o.get("kind") == "DaemonSet")
    c = pod.model_copy(deep=True)
    c.metadata.name = generate_name(f"{owner.get('name')}-", pod.namespace, str(owner.get("name")), hash_node(node))
    for t in c.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms:
        for f in t.match_fields:
            if f.key == "metadata.name" and f.values == [template]:
                f.values = [node]
    order = out.creation_order.get(f"{pod.namespace}/{pod.name}")
    if order is not None:
        out.creation_order[f"{c.namespace}/{c.name}"] = (order[0], order[1] + hash_node(node))
    return c


def hash_node(name: str) -> int:
    """A stable index for a node made by planning (DaemonSet pod names and order)."""
    import hashlib
    return 1_000_000 + int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)


@dataclass
class PlanResult:
    template: str
    policy: str
    extra_nodes: int | None                 # None: not enough within max_extra
    tried: dict[int, tuple[int, int]] = field(default_factory=dict)   # copies -> (placed, pods)
    # Pods no number of copies can place (pod -> why): every node, the template included,
    # rejects them for a reason a copy of the template repeats (a resource claim error such as
    # a CEL runtime error or a missing DeviceClass, an untolerated taint, an unschedulable node).
    blocked: dict[str, str] = field(default_factory=dict)

    def table(self) -> str:
        lines = [f"{'extra nodes':>12s}  {'placed':>8s}  {'pods':>6s}"]
        for k in sorted(self.tried):
            placed, pods = self.tried[k]
            lines.append(f"{k:12d}  {placed:8d}  {pods:6d}")
        out = lines
        if self.blocked:
            out.append(f"no number of nodes like {self.template} can place {len(self.blocked)} pod(s):")
            out.extend(f"  {pod}: {why}" for pod, why in sorted(self.blocked.items()))
        others = max(self.tried[0][1] - len(self.blocked), 0) if 0 in self.tried else None
        if self.extra_nodes is None:
            out.append(f"more than {max(self.tried)} nodes like {self.template} would be needed ({self.policy})")
        elif not self.blocked:
            out.append(f"{self.extra_nodes} more node(s) like {self.template} place every pending pod ({self.policy})")
        elif others and self.extra_nodes == 0:
            out.append(f"the {others} other pending pod(s) need no extra node ({self.policy})")
        elif others:
            out.append(f"{self.extra_nodes} more node(s) like {self.template} place the {others} other pending "
                       f"pod(s) ({self.policy})")
        return "\n".join(out)


# Reasons a copy of the template node gives again, whatever the state of the cluster.
_NODE_COUNT_CANNOT_HELP = ("resource claim error", "node is unschedulable", "node(s) had untolerated taint")


def _blocked(pods) -> dict[str, str]:
    out = {}
    for p in pods:
        if p.placed or not p.reasons:
            continue
        if all(r.startswith(_NODE_COUNT_CANNOT_HELP) for r in p.reasons):
            out[p.pod] = "; ".join(sorted(p.reasons))
    return out


def nodes_needed(objects: ObjectSet, template: str, *, policy: str = "first-fit",
                 features: Features | None = None, max_extra: int = 256, time_limit: float = 60.0) -> PlanResult:
    from .placement import place
    if max_extra < 0:
        raise InputError(f"--max-nodes: must be 0 or more, got {max_extra}")
    result = PlanResult(template, policy, None)

    def placed_all(k: int) -> bool:
        if k not in result.tried:
            out = place(with_copies(objects, template, k), policy=policy, features=features, time_limit=time_limit)
            pods = out.result.pods
            result.tried[k] = (sum(p.placed for p in pods), len(pods))
            if k == 0:
                result.blocked = _blocked(pods)
        placed, pods = result.tried[k]
        return placed >= pods - len(result.blocked)

    if placed_all(0):
        result.extra_nodes = 0
        return result
    lo, hi = 0, 1                       # lo fails, hi to be tried
    while not placed_all(min(hi, max_extra)):
        if hi >= max_extra:
            return result
        lo, hi = hi, hi * 2
    hi = min(hi, max_extra)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if placed_all(mid):
            hi = mid
        else:
            lo = mid
    placed_all(hi - 1)                  # recorded, so the table shows the step
    result.extra_nodes = hi
    return result


from .sweep import sweep  # noqa: E402,F401  (moved to draopt.sweep; kept importable from here)
