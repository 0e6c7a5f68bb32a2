"""Baselines that are the autoscalers' own loops: what cluster-autoscaler's scale-up loop (with one of
its expanders) would buy for the pending pods, with the node types of `draopt plan` (a template Node
of the input and a cost). Karpenter's provisioning is in draopt.studies.karpenter; both give an
`AutoscalerBaseline`.

Every fit is decided by draopt's kube-scheduler simulation (draopt.cluster.firstfit.simulate:
every node filtered, DRA allocator included), as in draopt.studies.ffd_estimate; where it gives
the same answers, on copies of each type alone (`EstimateRuns`, draopt.studies.type_runs), which
keeps a whole trace's loop to seconds per expander. Sources read
(kubernetes/autoscaler, cluster-autoscaler/):

* the loop, core/scaleup/orchestrator/orchestrator.go @ bdef0a7a752a51e9a739accef4e100b3b01b80d0
  (`ScaleUp`): for the pods the scheduler leaves pending, one option per node group (the binpacking
  estimate of those pods on new nodes of the group); options with no pod or no node are dropped;
  the expander picks one; its node count is capped by the cluster's and the group's limits and
  the group grows. The next loop counts those nodes as upcoming and the pods that fit them as
  handled. Not modelled: balancing across similar node groups, resource limits of the cluster,
  node groups created on demand, all-or-nothing scale-ups;
* estimator/binpacking_estimator.go @ 006685c4641726f573c75e865d015404b8f408ea: first-fit
  decreasing on new nodes; estimator/threshold_based_limiter.go @
  0d0196dbc6b41c145c34cfe91c3e3b769aabd9e9: no node more once the estimate has the node limit
  (`--max-nodes-per-scaleup`, lowered by the group's room) or has run for
  `--max-nodegroup-binpacking-duration`;
* the expanders (expander/), each a filter of the options whose survivors go to a uniform random
  choice (random/random.go @ 01b46d1125a99248c0ec9eb52912c95b5e7d4d31):
  waste/waste.go @ d7b4c2b58abc8d5cf1e981102bb519900dbaa788 (least-waste),
  mostpods/mostpods.go @ 098fe02f579de4dfbe6268b2d817e7a3a6e82634 (most-pods),
  priority/priority.go @ 137161c05fefda5ff720beec9b667be4b7fdef2c (priority),
  price/price.go @ 87198930a05ea3e91f4cc7be3e4cade5ef3d1927 (price).
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.placement import _no_gc_pauses
from draopt.kube.optionfiles import read_yaml_option
from draopt.studies.ffd_estimate import _daemon_pod_of, _ffd_score, daemonset_pods, ffd_estimate, with_copies
from draopt.studies.node_types import NodeType, check_node_types
from draopt.studies.type_runs import NodeFills, Shapes, TypeRun, _reads_other_pods, alone_objects

EXPANDERS = ("least-waste", "most-pods", "price", "priority", "random")


@dataclass
class ScaleUp:
    """One scale-up: `nodes` new nodes of `node_type`, bought for `pods` pending pods.
    `options`: cluster-autoscaler's options of that round, node type -> (nodes, pods)."""

    node_type: str
    nodes: int
    pods: int
    options: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass
class AutoscalerBaseline:
    """What an autoscaler buys for the input's pending pods. `placed`: the input's pending pods the
    kube-scheduler simulation (first-fit) places on the cluster with the bought nodes, the input's
    nodes first and the bought ones after them in the order bought, out of `pods`; `not_placed`:
    pod -> why; `bought`: new node name -> node type, in the order bought; `objects`: the input
    with the bought nodes (copies of the templates with their slices and DaemonSet pods);
    `scale_ups`: cluster-autoscaler's rounds, or Karpenter's new nodes; `notes`: where the model
    departs from the autoscaler on this input."""

    name: str
    cost: Fraction
    nodes: dict[str, int]
    placed: int
    pods: int
    not_placed: dict[str, str]
    rounds: int
    seconds: float
    scale_ups: list[ScaleUp] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    bought: dict[str, str] = field(default_factory=dict)
    objects: ObjectSet | None = field(default=None, repr=False, compare=False)
    # pending pod -> its node in the kube-scheduler simulation of the cluster with the bought nodes
    # (what `draopt plan` starts from as its incumbent); empty where the view did not record it
    placement: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        cost: int | float = int(self.cost) if self.cost.denominator == 1 else float(self.cost)
        return {"cost": cost, "nodes": dict(self.nodes), "placed": self.placed, "pods": self.pods}


def savings(optimal: Fraction, placed: int, baselines: list[AutoscalerBaseline]) -> str:
    """ "optimal saves N (x %) against cluster-autoscaler (least-waste) and M (y %) against Karpenter",
    for a mix of cost `optimal` placing `placed` pods; a baseline placing another number of pods
    says so (the costs are then not of the same thing)."""
    from draopt.studies.node_types import format_cost

    parts = []
    for b in baselines:
        who = "Karpenter" if b.name == "karpenter" else b.name.replace("/", " (") + ")"
        saved = b.cost - optimal
        share = f"{float(saved / b.cost):.1%}" if b.cost else "-"
        text = f"{format_cost(saved)} ({share}) against {who}"
        if b.placed != placed:
            text += f", which places {b.placed} pods, not {placed}"
        parts.append(text)
    if not parts:
        return ""
    return "optimal saves " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])


@dataclass
class SchedulerView:
    """The kube-scheduler simulation of a cluster as it stands: `pending` (every pending pod, queue
    order), `on_cluster` (those it places), pending pod -> its resources, pod -> why not placed."""

    pending: list[str]
    on_cluster: set[str]
    resources: dict[str, dict]
    reasons: dict[str, str]
    nodes: dict[str, str] = field(default_factory=dict)  # placed pod -> its node (a whole simulation's view)

    def first(self):
        """What ffd_estimate takes as `scheduled_first`."""
        return self.pending, self.on_cluster, [self.resources[k] for k in self.pending if k not in self.on_cluster]


def kube_scheduler_view(
    objects: ObjectSet, features: Features, bought: list[str] | tuple[str, ...] = ()
) -> SchedulerView:
    """The simulation with the `bought` nodes last, in that order, after the others (name order): the
    first-fit pass then puts every pod it placed before on the same node as before (pods placed in
    an earlier round stay bound; only pods still pending go to new nodes)."""
    from draopt.cluster.firstfit import simulate
    from draopt.kube.workload import expand
    from draopt.placement import build_cluster

    workload = expand(objects, features)
    cluster = build_cluster(objects, workload, features)
    rank = {name: i for i, name in enumerate(bought)}
    cluster.nodes = sorted(cluster.nodes, key=lambda n: (1, rank[n.name], "") if n.name in rank else (0, 0, n.name))
    for i, n in enumerate(cluster.nodes):
        n.index = i
    n_nodes = len(cluster.nodes)
    result = simulate(cluster, workload, explain_failures=None)
    return SchedulerView(
        [p.pod for p in result.pods],
        {p.pod for p in result.pods if p.placed},
        {d.key: d.resources for d in workload.pending},
        {p.pod: p.reason_text(n_nodes) for p in result.pods if not p.placed},
        {p.pod: p.node for p in result.pods if p.placed and p.node is not None},
    )


def check_free_names(objects: ObjectSet, node_types: list[NodeType], infix: str, shown: str, who: str) -> None:
    """The input has no Node named as the autoscaler's new nodes will be (`{type}{infix}-plan-N`, a
    regular expression; `shown`: the same for people)."""
    for t in node_types:
        pattern = re.compile(re.escape(t.name) + infix + r"-plan-\d+")
        clash = sorted(n.name for n in objects.nodes if pattern.fullmatch(n.name))
        if clash:
            raise InputError(
                f"node type {t.name}: Node {clash[0]} exists already; {who}'s new nodes are named "
                f"{t.name}{shown}-plan-N: rename the type"
            )


def baseline_of(
    name: str,
    objects: ObjectSet,
    wanted: list[str],
    node_types: list[NodeType],
    bought: dict[str, str],
    view: SchedulerView,
    **extra,
) -> AutoscalerBaseline:
    """The baseline of the cluster with the bought nodes (`objects`) as the simulation `view` of it places
    the input's pending pods (`wanted`)."""
    counts = {t.name: 0 for t in node_types}
    for t in bought.values():
        counts[t] += 1
    price = {t.name: t.cost for t in node_types}
    return AutoscalerBaseline(
        name=name,
        cost=sum((price[t] * n for t, n in counts.items()), Fraction(0)),
        nodes=counts,
        placed=sum(1 for k in wanted if k in view.on_cluster),
        pods=len(wanted),
        bought=bought,
        objects=objects,
        placement={k: view.nodes[k] for k in wanted if k in view.nodes},
        **extra,
    )


# ------------------------------------------------------------------ cluster-autoscaler


@dataclass
class Option:
    """A node group's scale-up option: `nodes` new nodes of `node_type` for the pending `pods`."""

    node_type: NodeType
    nodes: int
    pods: list[str]
    seconds: float = 0.0
    capped: bool = False  # the node limit stopped the estimate with pods left that fit the type


# (millions of long-lived objects: the cyclic collector would scan them again and again)
@_no_gc_pauses()
def cluster_autoscaler(
    objects: ObjectSet,
    node_types: list[NodeType],
    *,
    features: Features | None = None,
    expander: str = "least-waste",
    seed: int = 0,
    max_nodes_per_scaleup: int = 1000,
    max_group_size: int | None = None,
    binpacking_seconds: float = 10.0,
    priorities: dict | None = None,
    view: SchedulerView | None = None,
    runs: EstimateRuns | None = None,
) -> AutoscalerBaseline:
    """cluster-autoscaler's scale-up loop, repeated until no option places a pod. Each round: the
    pods the kube-scheduler leaves pending on the cluster as it stands (input nodes and the nodes
    bought so far); per node type (node group) the binpacking estimate of those pods on new nodes
    of the type (`ffd_estimate`, at most `max_nodes_per_scaleup` nodes and what `max_group_size`
    leaves: the most new nodes of one type over the whole loop); the expander picks one option and
    the group grows by its nodes.

    Departures: the estimate cannot stop mid-way, so `binpacking_seconds`
    (--max-nodegroup-binpacking-duration) is not enforced; an estimate that takes longer is noted.
    Least-waste counts the pods' effective requests (draopt's pod totals: init containers and
    overhead included) where cluster-autoscaler sums the containers' requests. Price picks the
    option with the least cost (the node types' costs) per pod it places: cluster-autoscaler's
    price expander divides the nodes' price by the pods' price, both from the cloud provider's
    per-resource prices (which draopt does not have), stabilised by a constant pod and scaled by
    the node's unfitness against a preferred node shape (set very high for GPU nodes) and a
    penalty for groups not yet created; none of that is modelled here.
    Expanders: `least-waste`, `most-pods`, `price`, `priority` (needs `priorities`,
    {priority: [regular expression on node type names]}), `random` (seeded by `seed`); ties
    are broken at random from `seed`, so the same seed gives the same answer.

    `view`: the kube-scheduler's view of the input (`kube_scheduler_view(objects, features)`) and
    `runs`: `EstimateRuns.start(...)` for it, when several loops share them (made here otherwise).
    Where `EstimateRuns.applies`, every estimate is a first-fit run on copies of the type alone
    (the pods that fit it alone, the pods left in the estimate's order, taken back after) and the
    scheduler's view of the grown cluster is the last view plus the pods left, in queue order, on
    the new nodes (the same answers: see EstimateRuns); the whole simulation is run once at the end."""
    t0 = time.perf_counter()
    rules = check_ca_options(expander, max_nodes_per_scaleup, max_group_size, binpacking_seconds, priorities)
    check_node_types(objects, node_types)
    check_free_names(objects, node_types, r"-ca\d+", "-caR", "cluster-autoscaler")
    features = features or Features.from_gates()
    rng = random.Random(seed)
    loop = ScaleUpLoop(
        objects, features, view or kube_scheduler_view(objects, features), {t.name: 0 for t in node_types}
    )
    # (devices not pinned to a node are shared: pods placed elsewhere may take them from new nodes)
    loop.reuse = all(s.spec.node_name for s in objects.resource_slices) and not any(
        _reads_other_pods(p) for p in objects.pods if f"{p.namespace}/{p.name}" in loop.view.pending
    )
    if EstimateRuns.applies(objects, node_types, loop.view):
        loop.runs = runs or EstimateRuns.start(objects, node_types, features, loop.view)
    wanted = list(loop.view.pending)
    while True:
        left = [k for k in wanted if k not in loop.view.on_cluster]
        if not left:
            break
        room = {t.name: _room(t, loop.grown, max_nodes_per_scaleup, max_group_size) for t in node_types}
        options = loop.options(node_types, left, room)
        loop.notes += [
            f"round {len(loop.steps) + 1}: the estimate for {o.node_type.name} took {o.seconds:.1f} s, more than "
            f"--max-nodegroup-binpacking-duration {binpacking_seconds:g} s (cluster-autoscaler stops it there)"
            for o in options
            if o.seconds > binpacking_seconds
        ]
        options = [o for o in options if o.pods]
        if not options or not loop.buy(
            choose(expander, options, rng, rules, loop.view.resources, objects), options, wanted
        ):
            break
    if loop.runs is not None:
        loop.settle(wanted)
    return loop.baseline(f"cluster-autoscaler/{expander}", wanted, node_types, max_group_size, t0)


@dataclass
class ScaleUpLoop:
    """cluster-autoscaler's loop as it goes: the input with the nodes bought so far (`objects`), the
    kube-scheduler's view of it, new nodes per type, new node name -> type, the scale-ups, notes."""

    objects: ObjectSet
    features: Features
    view: SchedulerView
    grown: dict[str, int]
    bought: dict[str, str] = field(default_factory=dict)
    steps: list[ScaleUp] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Last estimate per group: (option, room, capped), reused while none of its pods got placed
    # (see `options`); only where no pending pod's fit depends on other pods (`reuse`).
    memo: dict[str, tuple[Option, int, bool]] = field(default_factory=dict)
    reuse: bool = False
    runs: EstimateRuns | None = None  # the estimates and views on copies of each type alone, where they apply

    def options(self, node_types: list[NodeType], left: list[str], room: dict[str, int]) -> list[Option]:
        """Each node group's option: the binpacking estimate of the pending pods on new nodes of its
        type, named `{type}-ca{round}-plan-N` (as they will be if bought: never a bought node's name).
        A group's estimate of the last round stands when its room is the same, it was not capped and
        none of its pods was placed since: the estimate places every pending pod that fits a new
        node alone, pods that fit nowhere change nothing, and the pods left keep their order."""
        first, pending, out = self.view.first(), set(left), []
        for t in node_types:
            if room[t.name] <= 0:
                continue
            last = self.memo.get(t.name)
            if self.reuse and last and last[1] == room[t.name] and not last[2] and pending.issuperset(last[0].pods):
                out.append(Option(t, last[0].nodes, list(last[0].pods)))
                continue
            if self.runs is not None:
                out.append(self.runs.estimate(t, left, room[t.name]))
                self.memo[t.name] = (out[-1], room[t.name], out[-1].capped)
                continue
            probe = NodeType(f"{t.name}-ca{len(self.steps)}", t.template, t.cost)
            est = ffd_estimate(
                self.objects,
                probe,
                features=self.features,
                max_nodes=room[t.name],
                scheduled_first=first,
                after=list(self.bought),
            )
            prefix = f"{probe.name}-plan-"
            pods = [k for k in left if (est.placement[k].node or "").startswith(prefix)]
            # (the new nodes the pending pods use: a pod the scheduler placed on the cluster as
            # it stands may take a new node in the estimate's order, which buys nothing)
            nodes = len({est.placement[k].node for k in pods})
            out.append(Option(t, nodes, pods, est.seconds))
            self.memo[t.name] = (out[-1], room[t.name], est.capped)
        return out

    def buy(self, pick: Option, options: list[Option], wanted: list[str]) -> bool:
        """Grow the picked group (its new nodes named as in its estimate, `{type}-ca{round}-plan-N`)
        and simulate again; False when the kube-scheduler then places no more of `wanted`."""
        t = pick.node_type
        prefix = f"{t.name}-ca{len(self.steps)}"
        self.objects = with_copies(
            self.objects, t.template, pick.nodes, prefix=prefix, flag=f"node type {t.name}: template"
        )
        self.bought.update({f"{prefix}-plan-{i}": t.name for i in range(pick.nodes)})
        self.grown[t.name] += pick.nodes
        self.steps.append(
            ScaleUp(t.name, pick.nodes, len(pick.pods), {o.node_type.name: (o.nodes, len(o.pods)) for o in options})
        )
        before = sum(1 for k in wanted if k in self.view.on_cluster)
        if self.runs is not None:
            self.view = self.runs.grown_view(self.view, t, pick.nodes)
        else:
            self.view = kube_scheduler_view(self.objects, self.features, list(self.bought))
        if sum(1 for k in wanted if k in self.view.on_cluster) > before:
            return True
        self.notes.append(
            f"round {len(self.steps)}: the kube-scheduler placed no more pods with the {pick.nodes} new "
            f"{t.name} nodes than before (its queue order is not the estimate's); stopped"
        )
        return False

    def baseline(
        self, name: str, wanted: list[str], node_types: list[NodeType], max_group_size: int | None, t0: float
    ) -> AutoscalerBaseline:
        """The loop's answer; each pod left pending with why (groups at their maximum size named)."""
        full = [t.name for t in node_types if max_group_size is not None and self.grown[t.name] >= max_group_size]
        why = "no node group's estimate places it" + (
            f" (groups at their maximum size: {', '.join(full)})" if full else ""
        )
        not_placed = {
            k: f"{why}; {self.view.reasons.get(k) or 'not placed'}" for k in wanted if k not in self.view.on_cluster
        }
        return baseline_of(
            name,
            self.objects,
            wanted,
            node_types,
            self.bought,
            self.view,
            not_placed=not_placed,
            rounds=len(self.steps),
            seconds=time.perf_counter() - t0,
            scale_ups=self.steps,
            notes=self.notes,
        )

    def settle(self, wanted: list[str]) -> None:
        """After a loop on EstimateRuns: the kube-scheduler simulation of the whole cluster with the
        bought nodes, which the baseline reports (its reasons for pods left pending are current);
        a note if it places other pods than the loop's views did."""
        seen = {k for k in wanted if k in self.view.on_cluster}
        self.view = kube_scheduler_view(self.objects, self.features, list(self.bought))
        now = {k for k in wanted if k in self.view.on_cluster}
        if now != seen:
            self.notes.append(
                f"the loop's views placed {len(seen)} pods, the kube-scheduler simulation of the cluster with "
                f"the bought nodes places {len(now)}"
            )


@dataclass
class EstimateRuns:
    """cluster-autoscaler's estimates and views on copies of each type alone (draopt.studies.type_runs),
    where they give the answers of the simulations of the whole cluster (`applies`): every device is
    pinned to its node, no DaemonSet makes pods on the templates, no pending pod's fit depends on other
    pods (affinity, spreading, gangs) and no claim has a prioritized list (so first-fit takes the
    first node that fits: no score tells nodes apart). Then a pod the scheduler left pending was
    refused by every node of the cluster at its turn, and those nodes only fill up: in the estimate
    of a type it goes to the new nodes, in the estimate's order, as on copies of the type alone; and
    when a group grows, the nodes bought last come last, so the pods placed stay where they were
    and the pods left, in queue order, go to the new nodes as on copies alone. `keys`: per type,
    the pods left at the start that an empty node of the type holds (queue order)."""

    objects: ObjectSet
    features: Features
    shapes: Shapes
    keys: dict[str, list[str]]
    score: dict[str, dict[str, float]]  # type -> pod -> the estimator's order score
    fills: dict[str, NodeFills] = field(default_factory=dict)

    @staticmethod
    def applies(objects: ObjectSet, node_types: list[NodeType], view: SchedulerView) -> bool:
        pending = set(view.pending)
        return (
            all(s.spec.node_name for s in objects.resource_slices)
            and not any(_daemon_pod_of(p, t.template) for p in daemonset_pods(objects) for t in node_types)
            and not any(_reads_other_pods(p) for p in objects.pods if f"{p.namespace}/{p.name}" in pending)
            and not any(r.first_available for c in objects.resource_claims for r in c.spec.devices.requests)
            and not any(r.first_available for c in objects.claim_templates for r in c.spec.spec.devices.requests)
        )

    @classmethod
    def start(cls, objects: ObjectSet, node_types: list[NodeType], features: Features, view: SchedulerView):
        from draopt.kube.quantity import Quantity

        left = [k for k in view.pending if k not in view.on_cluster]
        shapes = Shapes.probe(objects, node_types, features, left, ungang=False)
        keys, score = {}, {}
        for t in node_types:
            keys[t.name] = [k for k in left if shapes.holds(k, t.name)]
            template = next(n for n in objects.nodes if n.name == t.template)
            allocatable = {r: Quantity.parse(v).value for r, v in (template.status.allocatable or {}).items()}
            score[t.name] = {k: _ffd_score(view.resources[k], allocatable) for k in keys[t.name]}
        return cls(objects, features, shapes, keys, score)

    def estimate(self, t: NodeType, left: list[str], room: int) -> Option:
        """The binpacking estimate of the pods `left` on at most `room` new nodes of type `t`: by
        decreasing score (equal scores in queue order), each on the first new node that takes it."""
        t0 = time.perf_counter()
        pending = set(left)
        order = sorted((k for k in self.keys[t.name] if k in pending), key=lambda k: -self.score[t.name][k])
        placed, opened = self._first_fit(t, order, room)
        pods = [k for k in left if k in placed]
        return Option(t, opened, pods, time.perf_counter() - t0, capped=opened >= room and len(placed) < len(order))

    def grown_view(self, view: SchedulerView, t: NodeType, nodes: int) -> SchedulerView:
        """The view after `nodes` new nodes of type `t` joined the cluster (last): the pods left, in
        queue order, first-fit on them (reasons are those of the view before)."""
        pending = {k for k in view.pending if k not in view.on_cluster}
        placed, _ = self._first_fit(t, [k for k in self.keys[t.name] if k in pending], nodes)
        return SchedulerView(view.pending, view.on_cluster | set(placed), view.resources, view.reasons)

    def _first_fit(self, t: NodeType, keys: list[str], limit: int) -> tuple[dict[str, int], int]:
        fills = self.fills.get(t.name)
        while True:
            got = fills.first_fit(keys, limit) if fills is not None else None
            if got is not None:
                return got
            size = 2 * len(fills.run.copies) if fills is not None else 64
            alone = alone_objects(self.objects, [t.template], set(self.keys[t.name]), ungang=False)
            run = TypeRun.build(alone, t, size, self.features, tag="ca")
            fills = self.fills[t.name] = NodeFills(run, self.shapes, *((fills.child, fills.answers) if fills else ()))


def _room(t: NodeType, grown: dict[str, int], per_scaleup: int, group_size: int | None) -> int:
    return per_scaleup if group_size is None else min(per_scaleup, group_size - grown[t.name])


# ------------------------------------------------------------------ expanders


def check_ca_options(
    expander: str, max_nodes_per_scaleup: int, max_group_size: int | None, binpacking_seconds: float, priorities
) -> list[tuple[int, list[re.Pattern]]]:
    """The options checked; the priority expander's rules, highest priority first."""
    if expander not in EXPANDERS:
        raise InputError(f"--expander {expander}: unknown expander (known: {', '.join(EXPANDERS)})")
    if (
        isinstance(max_nodes_per_scaleup, bool)
        or not isinstance(max_nodes_per_scaleup, int)
        or max_nodes_per_scaleup < 1
    ):
        raise InputError(f"--max-nodes-per-scaleup {max_nodes_per_scaleup}: must be a whole number of at least 1")
    if max_group_size is not None and (
        isinstance(max_group_size, bool) or not isinstance(max_group_size, int) or max_group_size < 1
    ):
        raise InputError(f"--max-group-size {max_group_size}: must be a whole number of at least 1")
    if not binpacking_seconds > 0:
        raise InputError(f"--max-nodegroup-binpacking-duration {binpacking_seconds}: must be more than 0 seconds")
    if expander != "priority":
        return []
    if not priorities:
        raise InputError(
            "--expander priority needs --expander-priorities (priority -> regular expressions on node type "
            "names, as cluster-autoscaler's priority-expander ConfigMap)"
        )
    return parse_priorities(priorities, "--expander-priorities")


def parse_priorities(priorities: Any, where: str) -> list[tuple[int, list[re.Pattern]]]:
    """{priority: [regular expression on node type names]} as cluster-autoscaler's priority-expander
    ConfigMap's `priorities` key; highest priority first."""
    if not isinstance(priorities, dict) or not priorities:
        raise InputError(f"{where}: expected a mapping of priority (a whole number) to a list of regular expressions")
    out = []
    for prio, rules in priorities.items():
        try:
            level = int(prio)
        except (TypeError, ValueError):
            raise InputError(f"{where}: priority {prio!r}: not a whole number") from None
        if isinstance(rules, str):
            rules = [rules]
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise InputError(f"{where}: priority {level}: expected a list of regular expressions, got {rules!r}")
        compiled = []
        for rule in rules:
            try:
                compiled.append(re.compile(rule))
            except re.error as e:
                raise InputError(
                    f"{where}: priority {level}: {rule!r} is not a valid regular expression: {e}"
                ) from None
        out.append((level, compiled))
    return sorted(out, key=lambda p: -p[0])


def load_priorities(path: str) -> dict:
    """The priorities of a file: the mapping itself, or cluster-autoscaler's ConfigMap
    (data.priorities holds the mapping as YAML text)."""
    import yaml

    data = read_yaml_option("--expander-priorities", path)
    if isinstance(data, dict) and data.get("kind") == "ConfigMap":
        text = (data.get("data") or {}).get("priorities")
        if not isinstance(text, str):
            raise InputError(f"--expander-priorities {path}: the ConfigMap has no data.priorities")
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise InputError(f"--expander-priorities {path}: data.priorities is not valid YAML: {e}") from None
    parse_priorities(data, f"--expander-priorities {path}")
    return data


def choose(
    expander: str,
    options: list[Option],
    rng: random.Random,
    rules: list[tuple[int, list[re.Pattern]]],
    resources: dict[str, dict],
    objects: ObjectSet,
) -> Option:
    """The expander's choice: a filter of the options, then a uniform random choice among those left
    (price: the first of the cheapest, as price.go keeps the first best score)."""
    if expander == "most-pods":
        most = max(len(o.pods) for o in options)
        options = [o for o in options if len(o.pods) == most]
    elif expander == "least-waste":
        waste = {id(o): _waste(o, resources, objects) for o in options}
        least = min(waste.values())
        options = [o for o in options if waste[id(o)] == least]
    elif expander == "priority":
        options = _highest_priority(options, rules)
    elif expander == "price":
        return min(options, key=lambda o: o.node_type.cost * o.nodes / len(o.pods))
    return options[rng.randrange(len(options))]


def _waste(option: Option, resources: dict[str, dict], objects: ObjectSet) -> Fraction:
    """waste.go's score: unused fraction of the new nodes' cpu plus that of their memory (node capacity,
    allocatable when the template gives no capacity); exact, so equal scores tie."""
    from draopt.kube.quantity import Quantity

    node = next(n for n in objects.nodes if n.name == option.node_type.template)
    score = Fraction(0)
    for r in ("cpu", "memory"):
        raw = (node.status.capacity or {}).get(r) or (node.status.allocatable or {}).get(r)
        if raw is None:
            continue
        avail = Fraction(Quantity.parse(raw).value) * option.nodes
        if avail > 0:
            used = sum((Fraction(resources[k].get(r, 0)) for k in option.pods), Fraction(0))
            score += (avail - used) / avail
    return score


def _highest_priority(options: list[Option], rules: list[tuple[int, list[re.Pattern]]]) -> list[Option]:
    """priority.go: the options whose node group (type name) a rule of the highest matching priority
    matches (a regular expression found anywhere in the name); none matched: every option."""
    for _, patterns in rules:
        best = [o for o in options if any(p.search(o.node_type.name) for p in patterns)]
        if best:
            return best
    return options
