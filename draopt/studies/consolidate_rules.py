"""The rules `plan --consolidate` keeps when it moves running pods: which pods may move, which stay
with their node, which pin their node, what each PodDisruptionBudget allows; and what each existing
node costs.

A running pod is, as the autoscalers' drain rules say:
- `daemon`: made by a DaemonSet: not moved, it goes with its node (a drained node loses it, a
  kept one keeps it); it does not keep its node (cluster-autoscaler's drainability rule
  `rules/daemonset`, Karpenter's reschedulable pods leave DaemonSet pods out);
- `static`: a mirror pod (annotation `kubernetes.io/config.mirror`, the kubelet's static pod):
  not moved, goes with its node (cluster-autoscaler `rules/mirror` skips it);
- `pinned`: not moved, and its node is kept: the annotation `karpenter.sh/do-not-disrupt: "true"`;
  cluster-autoscaler's `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`; local storage
  (a hostPath volume, or an emptyDir not in memory, unless named in
  `cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes`: cluster-autoscaler
  `utils/drain/drain.go` HasBlockingLocalStorage, used by `rules/localstorage`); no controller
  (no ownerReference with `controller: true`: nothing would make it again, cluster-autoscaler
  `rules/replicated`); a PodDisruptionBudget that allows no disruption (Karpenter's
  `pkg/controllers/disruption/pdblimits.go`: a node with such a pod is no candidate); a claim it
  shares with another running pod (draopt moves a pod with its own claims only);
- `movable`: evicted and placed again where the model chooses (its node included).

A PodDisruptionBudget that allows `n > 0` disruptions: at most `n` of the running pods it selects
are moved (evicted) by the answer. That is one round of evictions, as the eviction API checks
them against `status.disruptionsAllowed` (or, without a status, the spec's minAvailable /
maxUnavailable against the selected running pods, each taken as healthy); a drain that waits for
the moved pods to be ready again could evict more over time, which the model does not count on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draopt.errors import InputError
from draopt.kube.adoption import selector_matches
from draopt.studies.node_types import NodeType, format_cost, parse_cost

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
MIRROR = "kubernetes.io/config.mirror"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


@dataclass(frozen=True)
class Budget:
    """A PodDisruptionBudget: the running pods it selects and how many of them may be evicted."""

    key: str  # namespace/name
    allowed: int
    pods: tuple[str, ...]  # running pods it selects (keys)


@dataclass
class PodRules:
    """Every running pod's class (`daemon`, `static`, `pinned`, `movable`), why a pinned pod is,
    and the budgets."""

    kind_of: dict[str, str] = field(default_factory=dict)  # running pod -> class
    why: dict[str, str] = field(default_factory=dict)  # pinned pod -> why
    node_of: dict[str, str] = field(default_factory=dict)  # running pod -> its node
    budgets: list[Budget] = field(default_factory=list)  # budgets that allow some, with movable pods

    def movable(self) -> list[str]:
        return [k for k, c in self.kind_of.items() if c == "movable"]

    def pinned_nodes(self) -> dict[str, str]:
        """Node -> why it is kept (its first pinned pod, and why)."""
        out: dict[str, str] = {}
        for pod, c in sorted(self.kind_of.items()):
            if c == "pinned":
                out.setdefault(self.node_of[pod], f"{pod}: {self.why[pod]}")
        return out

    def budgets_of(self, pod: str) -> tuple[str, ...]:
        return tuple(b.key for b in self.budgets if pod in b.pods)


def _annotations(pod) -> dict[str, str]:
    return dict(pod.metadata.annotations or {})


def _owners(pod) -> list[dict[str, Any]]:
    return [o for o in (pod.metadata.model_extra or {}).get("ownerReferences") or [] if isinstance(o, dict)]


def local_storage(pod) -> str | None:
    """The first volume that keeps the pod on its node (hostPath; emptyDir not in memory), unless
    the pod names it safe to evict; None when there is none."""
    safe = {v.strip() for v in _annotations(pod).get(SAFE_LOCAL_VOLUMES, "").split(",") if v.strip()}
    for vol in (pod.spec.model_extra or {}).get("volumes") or []:
        if not isinstance(vol, dict) or vol.get("name") in safe:
            continue
        if "hostPath" in vol:
            return f"hostPath volume {vol.get('name')}"
        empty = vol.get("emptyDir")
        if "emptyDir" in vol and not (isinstance(empty, dict) and empty.get("medium") == "Memory"):
            return f"emptyDir volume {vol.get('name')} (local storage)"
    return None


def pod_class(pod, shared_claims: dict[str, list[str]], key: str) -> tuple[str, str]:
    """(class, why) of one running pod, without budgets (see the module docstring)."""
    ann = _annotations(pod)
    owners = _owners(pod)
    if any(o.get("kind") == "DaemonSet" and o.get("controller") for o in owners):
        return "daemon", ""
    if MIRROR in ann:
        return "static", ""
    if ann.get(DO_NOT_DISRUPT) == "true":
        return "pinned", f"annotation {DO_NOT_DISRUPT}: true"
    if ann.get(SAFE_TO_EVICT) == "false":
        return "pinned", f"annotation {SAFE_TO_EVICT}: false"
    storage = local_storage(pod)
    if storage:
        return "pinned", f"local storage ({storage})"
    if not any(o.get("controller") for o in owners):
        return "pinned", "no controller (no ownerReference with controller: true) would make it again"
    if key in shared_claims:
        return "pinned", f"shares allocated ResourceClaim(s) {', '.join(shared_claims[key])} with other running pods"
    return "movable", ""


def _shared_claims(workload) -> dict[str, list[str]]:
    """Running pod -> its allocated claims that other running pods use too."""
    users: dict[str, list[str]] = {}
    for d in workload.running:
        for use in d.claims:
            users.setdefault(use.key, []).append(d.key)
    out: dict[str, list[str]] = {}
    for ck, pods in users.items():
        claim = workload.claims.get(ck)
        if len(pods) > 1 and claim is not None and claim.status.allocation is not None:
            for p in pods:
                out.setdefault(p, []).append(ck)
    return out


def classify(objects, workload) -> PodRules:
    """Every running pod's class, and the budgets (PodDisruptionBudgets read from the input)."""
    rules = PodRules()
    shared = _shared_claims(workload)
    nodes = {n.name for n in objects.nodes}
    for d in workload.running:
        if d.node_name not in nodes:  # on a node the dump does not have: not the cluster's to move
            continue
        rules.node_of[d.key] = d.node_name
        rules.kind_of[d.key], why = pod_class(d.pod, shared, d.key)
        if why:
            rules.why[d.key] = why
    for doc in objects.extra.get("PodDisruptionBudget", []):
        budget = _budget(doc, workload, rules)
        if budget is None:
            continue
        if budget.allowed <= 0:
            for p in budget.pods:
                if rules.kind_of[p] == "movable":
                    rules.kind_of[p] = "pinned"
                    rules.why[p] = f"PodDisruptionBudget {budget.key} allows no disruption"
        else:
            rules.budgets.append(budget)
    moving = set(rules.movable())
    rules.budgets = [
        Budget(b.key, b.allowed, tuple(p for p in b.pods if p in moving))
        for b in rules.budgets
        if any(p in moving for p in b.pods)
    ]
    return rules


def _budget(doc: dict[str, Any], workload, rules: PodRules) -> Budget | None:
    meta = doc.get("metadata") or {}
    ns, name = meta.get("namespace") or "default", meta.get("name") or ""
    key = f"{ns}/{name}"
    spec = doc.get("spec") or {}
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        return None  # policy/v1: a null selector selects no pod
    pods = tuple(
        d.key
        for d in workload.running
        if d.key in rules.node_of
        and d.pod.namespace == ns
        and selector_matches(selector, dict(d.pod.metadata.labels or {}))
    )
    status = doc.get("status") or {}
    if isinstance(status.get("disruptionsAllowed"), int):
        return Budget(key, status["disruptionsAllowed"], pods)
    healthy = len(pods)
    if "minAvailable" in spec:
        return Budget(key, healthy - _count(spec["minAvailable"], healthy, key, "minAvailable", up=True), pods)
    if "maxUnavailable" in spec:
        return Budget(key, _count(spec["maxUnavailable"], healthy, key, "maxUnavailable", up=True), pods)
    return Budget(key, healthy, pods)


def _count(value: Any, total: int, key: str, what: str, *, up: bool) -> int:
    """An int-or-percent of a PodDisruptionBudget, of `total` pods (percentages rounded up, as the
    disruption controller does)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].strip().isdigit():
        share = int(value[:-1]) * total / 100
        return math.ceil(share) if up else math.floor(share)
    raise InputError(f"PodDisruptionBudget {key}: spec.{what}: expected an integer or a percentage, got {value!r}")


# ----------------------------------------------------------------------------- node costs
@dataclass(frozen=True)
class CostSource:
    """Where the existing nodes' costs come from (the first that gives one wins): a label on the
    node holding its cost; a file of costs per node type; the --node-type entries (a node of the
    same type as a template costs what the template's type does)."""

    cost_label: str | None = None
    type_costs: dict[str, Fraction] = field(default_factory=dict)
    type_label: str = INSTANCE_TYPE_LABEL


def node_type_of(node, type_label: str) -> str:
    """A node's type: its `type_label` label (node.kubernetes.io/instance-type by default), else its
    own name (a node of a type of its own)."""
    return (node.metadata.labels or {}).get(type_label) or node.name


def load_type_costs(path: str) -> dict[str, Fraction]:
    """`--node-costs FILE`: a mapping node type -> cost (YAML)."""
    from draopt.kube.optionfiles import read_yaml_option

    data = read_yaml_option("--node-costs", path)
    if not isinstance(data, dict) or not data:
        raise InputError(f"--node-costs {path}: expected a mapping of node type to cost, e.g. {{g5.xlarge: 1.006}}")
    return {str(t): parse_cost(v, f"--node-costs {path}: node type {t}") for t, v in data.items()}


def existing_costs(objects, source: CostSource, node_types: list[NodeType]) -> dict[str, tuple[str, Fraction]]:
    """Node -> (its type, its cost). A node no source prices, or priced at zero or less: an
    InputError naming its type (and the node)."""
    nodes = {n.name: n for n in objects.nodes}
    costs = dict(source.type_costs)
    for t in node_types:
        template = nodes.get(t.template)
        if template is not None:
            costs.setdefault(node_type_of(template, source.type_label), t.cost)
    out: dict[str, tuple[str, Fraction]] = {}
    for node in objects.nodes:
        kind = node_type_of(node, source.type_label)
        label = (node.metadata.labels or {}).get(source.cost_label) if source.cost_label else None
        if label is not None:
            cost = parse_cost(label, f"node type {kind} (node {node.name}): label {source.cost_label}")
        elif kind in costs:
            cost = costs[kind]
        else:
            raise InputError(
                f"node type {kind} (node {node.name}): no cost: give it with --node-costs FILE (type: cost)"
                + (f", a label {source.cost_label} on the node" if source.cost_label else ", --cost-label LABEL")
                + " or --node-type TEMPLATE=COST for a template of that type"
            )
        out[node.name] = (kind, cost)
    return out


def cost_text(v: Fraction) -> str:
    return format_cost(v)
