"""Preemption as kube-scheduler runs it after a failed cycle: DefaultPreemption's PostFilter for a
pod, and workload-aware preemption (KEP-5710, PodGroupPostFilter) for a PodGroup.

Sources (kubernetes/kubernetes, 1.36/1.37): pkg/scheduler/framework/plugins/defaultpreemption/
default_preemption.go (SelectVictimsOnNode, PodEligibleToPreemptOthers, MoreImportantVictim,
calculateNumCandidates), pkg/scheduler/framework/preemption/preemption.go (DryRunPreemption,
pickOneNodeForPreemption), executor.go (the victims' DisruptionTarget condition), the pod-group
evaluator (selectVictimsOnDomain); keps/sig-scheduling/5710-workload-aware-preemption/README.md.

What draopt does differently, on purpose or for lack of input (docs/scheduler.md, "Preemption"):
victims are pods running in the input (pods placed in the same run come later in the priority queue
and never have a lower priority than the pod that preempts); candidate nodes are tried in name order
from the first (the scheduler starts at a random offset); no PodDisruptionBudgets. The victims'
claims are deallocated (the ResourceClaim controller's work once they are gone). A pod preemptor
waits out its back-off as kube-scheduler's does: nominated, its requests held on that node for the
pods tried meanwhile, tried again once the queue pass ended (retry, called by first-fit's
Simulation.retry_woken).

Devices in the dry run: kube-scheduler 1.36/1.37's DynamicResources has no PreFilterExtensions, so
removing a victim never frees its claims' devices there, and a pod blocked only by devices cannot
preempt. With the DRAPreemption gate (KEP-5690) a victim pod's devices come free in a pod's dry run
when no remaining pod uses them; a PodGroup victim's never do (the KEP leaves them out).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from draopt.cluster.evictions import (
    NEVER,
    Eviction,
    RunningPods,
    disrupts_whole_group,
    group_preemption_policy,
    preemption_policy,
    start_time,
)
from draopt.cluster.filter_error import group_member_error, is_filter_error
from draopt.cluster.firstfit import DEVICES_BEYOND_NODE, count_reason, is_resource_reason, try_node
from draopt.cluster.podgroup_status import (
    POD_GROUP_UNSCHEDULABLE,
    dynamic_resources_post_filter_136,
    gang_trial,
    placements_status,
    with_dra_pod_group_post_filter,
)
from draopt.cluster.state import pod_on
from draopt.cluster.result import FirstFitStats, reason_histogram
from draopt.kube.releases import at_least

# PodGroupEvaluator.Preempt (v1.37.2): no lower-priority pod in the cluster (UnschedulableAndUnresolvable)
NO_GROUP_VICTIMS = "pod group preemption: No preemption victims found for incoming preemptor"
# draopt's words where a PodGroup with a topology constraint could preempt: not modelled (kube-scheduler
# 1.37.2 runs its placement algorithm again without the victims)
TOPOLOGY_GROUP_PREEMPTION = "pod group preemption: not modelled for a group with topology constraints"

# pkg/scheduler/apis/config/v1/defaults.go SetDefaults_DefaultPreemptionArgs
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
_SHIFT = 2**31  # pickOneNodeForPreemption: priority + MaxInt32 + 1 keeps every term positive

NO_VICTIMS = "No preemption victims found for incoming pod"
# Filter reasons with the status Unschedulable (preemption may help); every other reason of draopt's
# filters is UnschedulableAndUnresolvable (TaintToleration, NodeAffinity, NodeUnschedulable,
# DynamicResources' statusUnschedulable, InterPodAffinity's required affinity), and "Insufficient X"
# is too when the request is above the node's allocatable (noderesources/fit.go, v1.37.2).
RESOLVABLE_REASONS = frozenset(
    (
        "Too many pods",
        "node(s) didn't match pod topology spread constraints",
        "node(s) didn't match pod anti-affinity rules",
        "node(s) didn't satisfy existing pods anti-affinity rules",
    )
)
NOT_HELPFUL = "Preemption is not helpful for scheduling"


@dataclass
class Victim:
    """One unit preemption evicts: a pod, or a PodGroup with disruptionMode all (its running pods on
    every node) - preemption.DomainVictim."""

    key: str
    pods: list[Any]
    priority: int
    is_group: bool  # IsPodGroup(): the (first) pod belongs to a PodGroup
    earliest_start: datetime

    def importance(self) -> tuple:
        """MoreImportantVictim, most important first: higher priority; a PodGroup before a single pod;
        two pods: the earlier started; two groups: more pods, then the earlier started."""
        return (
            -self.priority,
            0 if self.is_group else 1,
            -len(self.pods) if self.is_group else 0,
            self.earliest_start,
            self.key,
        )


@dataclass
class Candidate:
    node: Any
    victims: list[Victim]
    pods: list[Any] = field(default_factory=list)  # the victims' pods, highest priority first
    priorities: list[int] = field(default_factory=list)


def num_candidates(
    num_nodes: int, percentage: int = MIN_CANDIDATE_NODES_PERCENTAGE, absolute: int = MIN_CANDIDATE_NODES_ABSOLUTE
) -> int:
    """calculateNumCandidates: a share of the nodes, at least `absolute`, at most all of them."""
    n = num_nodes * percentage // 100
    return min(max(n, absolute), num_nodes)


def pick_one_node(candidates: list[Candidate]) -> Candidate | None:
    """pickOneNodeForPreemption without PodDisruptionBudgets: lowest highest-priority victim, then the
    smallest sum of (shifted) victim priorities, then the fewest victims, then the latest start time
    of the highest-priority victims; still tied: the first candidate."""
    if not candidates:
        return None
    best = candidates
    for score in (
        lambda c: -max(c.priorities),
        lambda c: -sum(p + _SHIFT for p in c.priorities),
        lambda c: -len(c.pods),
        lambda c: _earliest_of_highest(c).timestamp(),
    ):
        top = max(score(c) for c in best)
        best = [c for c in best if score(c) == top]
        if len(best) == 1:
            break
    return best[0]


def _earliest_of_highest(c: Candidate) -> datetime:
    """util.GetEarliestPodStartTime: the earliest start among the highest-priority victims."""
    high = max(c.priorities)
    return min(start_time(p.pod) for p, prio in zip(c.pods, c.priorities) if prio == high)


def _is_node_rule(reason: str) -> bool:
    """A reason of Cluster.node_rejects (counted node by node in _helpless_from_reasons)."""
    return (
        reason
        in (
            "node(s) were unschedulable",
            "node(s) didn't match Pod's node affinity/selector",
        )
        or reason == "node(s) had untolerated taint(s)"
    )


# Scheduler-plugin reasons that are UnschedulableAndUnresolvable (InterPodAffinity, PodTopologySpread).
_UNRESOLVABLE_PLUGIN_REASONS = frozenset(
    (
        "node(s) didn't match pod affinity rules",
        "node(s) didn't match pod topology spread constraints (missing required label)",
    )
)


def _is_dra_reason(reason: str) -> bool:
    """A rejection of DynamicResources: any reason of draopt's filters that no other plugin gives."""
    return not (
        is_resource_reason(reason)
        or reason.startswith("no scheduler profile")
        or reason in RESOLVABLE_REASONS
        or reason in _UNRESOLVABLE_PLUGIN_REASONS
        or _is_node_rule(reason)
    )


class Preemption:
    """What first-fit's simulate() takes as `preemption`: one run per simulation."""

    def __init__(self, percentage: int = MIN_CANDIDATE_NODES_PERCENTAGE, absolute: int = MIN_CANDIDATE_NODES_ABSOLUTE):
        self.percentage = percentage
        self.absolute = absolute

    def start(self, cluster, workload, book, scheduler, place, unplace, by_pod, changed) -> "PreemptionRun":
        return PreemptionRun(self, cluster, workload, book, scheduler, place, unplace, by_pod, changed)


class PreemptionRun:
    def __init__(self, config: Preemption, cluster, workload, book, scheduler, place, unplace, by_pod, changed):
        self.config = config
        self.cluster = cluster
        self.workload = workload
        self.book = book
        self.scheduler = scheduler
        self.place = place
        self.unplace = unplace
        self.by_pod = by_pod
        self.cache: dict = {}
        self.classes = list(cluster.objects.priority_classes)
        self.group_objs = {f"{g.namespace}/{g.name}": g for g in cluster.objects.pod_groups}
        pending_users: dict[str, list[str]] = {}
        for p in workload.pending:
            for use in p.claims:
                pending_users.setdefault(use.key, []).append(p.key)

        def placed_user(key: str) -> bool:
            return any(by_pod.get(k) is not None and by_pod[k].placed for k in pending_users.get(key, ()))

        self.running = RunningPods(cluster, workload, book, scheduler, placed_user, changed)
        self.changed = changed
        # Preemptors waiting out their back-off: pod -> (nominated node, the requests held there)
        self.held: dict[str, tuple[Any, dict]] = {}
        self.last_of_group: dict[str, str] = {}
        for p in workload.pending:
            if p.group is not None:
                self.last_of_group[p.group] = p.key
        self._started: dict[str, datetime] = {}
        # Failed attempts, by kind of preemptor: while nothing was evicted since, placements only take
        # room, so a preemptor of that kind with no higher priority (a gang: no fewer pods) fails again.
        self._failed: dict[tuple, tuple[int, int, int, str]] = {}
        self._failed_words: dict[tuple, str] = {}  # a gang's failure in kube-scheduler's words
        self.lowest = min((self.victim_priority(p) for p in self.running.live.values()), default=None)
        # PodGroup -> PodGroupPostFilter's message in kube-scheduler's words (podgrouppreemption.go),
        # for the pod-group cycle's messages (draopt.cluster.podgroup_status)
        self.group_post_filter: dict[str, str] = {}

    # ------------------------------------------------------------------ victims
    def victim_priority(self, pod) -> int:
        """GetPodPriority with PodGroups: a pod of a PodGroup that sets a priority has the group's."""
        obj = self.group_objs.get(pod.group) if pod.group else None
        if obj is not None and (obj.spec.priority is not None or obj.spec.priority_class_name):
            return self.workload.groups[pod.group].priority
        return pod.priority

    def unit_of(self, pod) -> Victim:
        obj = self.group_objs.get(pod.group) if pod.group else None
        prio = self.victim_priority(pod)
        if obj is not None and disrupts_whole_group(obj):
            members = [self.running.live[k] for k in self.workload.groups[pod.group].pods if k in self.running.live]
            return Victim(f"podgroup {pod.group}", members, prio, True, min(self.started(m) for m in members))
        return Victim(f"pod {pod.key}", [pod], prio, pod.group is not None, self.started(pod))

    def started(self, pod) -> datetime:
        got = self._started.get(pod.key)
        if got is None:
            got = self._started[pod.key] = start_time(pod.pod)
        return got

    def units(self, pods, below: int) -> list[Victim]:
        """The potential victims among `pods` (and the rest of their whole-group units): priority strictly
        below `below`, each unit once."""
        out: dict[str, Victim] = {}
        for p in pods:
            if self.victim_priority(p) < below:
                u = self.unit_of(p)
                out.setdefault(u.key, u)
        return list(out.values())

    def _take(self, units: list[Victim], *, pod_preemption: bool = False) -> None:
        """Take the units off their nodes for a dry run. Their claims' devices come free only where
        DynamicResources sees the removal: with the DRAPreemption gate (KEP-5690), for a pod's
        preemption and victims outside PodGroups; kube-scheduler 1.36/1.37 never."""
        frees = pod_preemption and self.cluster.features.dra_preemption
        for free in (True, False):
            pods = [p for u in units if (frees and not u.is_group) == free for p in u.pods]
            if pods:
                self.running.remove_many(pods, free_devices=free)

    def _give(self, units: list[Victim]) -> None:
        self.running.restore_many([p for u in units for p in u.pods])

    # ------------------------------------------------------------------ the filters
    def filter_reason(self, pod, node) -> str | None:
        """Why the scheduler's filters reject `pod` on `node` in the current state (devices,
        resources, node rules; with a profile also inter-pod affinity and topology spread), or None.
        In the default filter order, as the cycle checks them: PodTopologySpread and InterPodAffinity
        run after the node filters and NodeResourcesFit (`hard` says theirs first) and before
        DynamicResources, so a node with an existing pod's anti-affinity against the pod and no
        devices for it is rejected by InterPodAffinity (Unschedulable: preemption may help there)."""
        if self.scheduler is not None:
            prof = self.scheduler.profile(pod)
            if prof is None:
                return f"no scheduler profile {self.scheduler.info(pod).scheduler_name!r}"
            hard = self.scheduler._hard_filters(pod, self.scheduler.info(pod), prof)  # the cycle's own checks
            reason = hard(node.index) if hard is not None else None
            if reason is not None:
                return reason
        reason, _ = try_node(self.cluster, self.book, pod, node, self.cache, None)
        return reason

    def fits(self, pod, node) -> bool:
        return self.filter_reason(pod, node) is None

    def select_victims_on_node(self, pod, priority: int, node) -> tuple[list[Victim] | None, str | None]:
        """SelectVictimsOnNode: remove every lower-priority unit on the node; if the pod then fits,
        reprieve units from the most important down while it still fits; the rest are the victims.
        Returns (victims, None), or (None, why the node is no candidate): NO_VICTIMS, or the filter's
        reason with every unit removed. A dry run: the state is as before afterwards."""
        units = self.units(self.running.pods_on(node.name), priority)
        if not units:
            return None, NO_VICTIMS
        self._take(units, pod_preemption=True)
        why = self.filter_reason(pod, node)
        if why is not None:
            self._give(units)
            return None, why
        victims = []
        for u in sorted(units, key=Victim.importance):
            self._give([u])
            if not self.fits(pod, node):
                self._take([u], pod_preemption=True)
                victims.append(u)
        self._give(victims)
        return (victims or None), (None if victims else NO_VICTIMS)

    # ------------------------------------------------------------------ a pod
    def after(self, pod) -> None:
        """PostFilter for the pod just tried; for a PodGroup's last pod, the group's."""
        if pod.group is not None:
            if self.last_of_group.get(pod.group) == pod.key:
                self.preempt_group(pod.group)
            return
        pl = self.by_pod[pod.key]
        if pl.placed or pl.error or (self.scheduler is not None and self.scheduler.profile(pod) is None):
            return  # (a pod no profile schedules never gets a cycle; a filter error: no PostFilter)
        self.preempt_pod(pod, pl)
        final = self.by_pod[pod.key]
        if (
            not final.placed
            and final.preemption.startswith("preemption: ")
            and not is_filter_error(final.preemption.removeprefix("preemption: ").removeprefix("["))
            and not at_least(self.cluster.features.version, "1.37")
        ):
            # (an Error from DefaultPreemption is the PostFilter's whole answer: no words before it)
            # 1.36's DynamicResources has a PostFilter of its own, before DefaultPreemption's: no
            # claim of the pod it could deallocate (dynamicresources.go, v1.36.3)
            final.preemption = dynamic_resources_post_filter_136(bool(pod.claims)) + (final.preemption)

    def _kind(self, pods) -> tuple:
        return tuple(
            sorted(
                {
                    (
                        tuple(
                            self.book.signature(u.key) if self.book.allocation(u.key) is None else u.key
                            for u in p.claims
                        ),
                        tuple(sorted(p.resources.items())),
                        tuple(sorted(p.node_selector.items())),
                        repr(p.pod.spec.affinity),
                        repr(p.pod.spec.tolerations),
                    )
                    for p in pods
                },
                key=repr,
            )
        )

    def _failed_before(self, kind: tuple, priority: int, need: int) -> str | None:
        got = self._failed.get(kind)
        if got is not None and got[0] == len(self.running.evicted) and priority <= got[1] and need >= got[2]:
            return got[3]
        return None

    def _remember_failure(self, kind: tuple, priority: int, need: int, message: str) -> None:
        self._failed[kind] = (len(self.running.evicted), priority, need, message)

    def preempt_pod(self, pod, pl) -> None:
        n = len(self.cluster.nodes)
        if n == 0:
            return  # (no node at all: the cycle fails before any plugin, PostFilter included)
        if preemption_policy(pod.pod, self.classes) == NEVER:
            pl.preemption = "preemption: not eligible due to preemptionPolicy=Never."
            return
        if self.lowest is None or self.lowest >= pod.priority:
            # Nothing of lower priority runs anywhere: every node the cycle left open to preemption
            # says so (SelectVictimsOnNode), the others that preemption cannot help.
            helpless = self._helpless_from_reasons(pod, pl.reasons)
            statuses = Counter({NOT_HELPFUL: helpless, NO_VICTIMS: n - helpless})
            pl.preemption = f"preemption: 0/{n} nodes are available: {reason_histogram(+statuses)}."
            return
        kind = (self._kind([pod]), tuple(sorted(pl.reasons.items())))
        known = self._failed_before(kind, pod.priority, 1)
        if known is not None:
            pl.preemption = known
            return
        wanted = num_candidates(n, self.config.percentage, self.config.absolute)
        candidates: list[Candidate] = []
        errors: list[str] = []  # filter errors on nodes with their victims removed
        statuses = Counter()  # the nodes' statuses in the FitError preemption returns
        for node in self.cluster.nodes:  # DryRunPreemption (from offset 0, see the module docstring)
            if not self._preemption_might_help(pod, node, self.filter_reason(pod, node)):
                statuses[NOT_HELPFUL] += 1
                continue
            victims, why = self.select_victims_on_node(pod, pod.priority, node)
            if victims is None:
                assert why is not None  # (no victims: the reason why)
                if is_filter_error(why):  # (with the victims gone the DRA filter ran, and erred)
                    errors.append(why)
                count_reason(statuses, why)
                continue
            pods = [p for u in victims for p in u.pods]
            prios = [u.priority for u in victims for _ in u.pods]
            order = sorted(range(len(pods)), key=lambda i: -prios[i])
            candidates.append(Candidate(node, victims, [pods[i] for i in order], [prios[i] for i in order]))
            if len(candidates) >= wanted:
                break
        chosen = pick_one_node(candidates)
        if chosen is None:
            # No candidate: DryRunPreemption's errors, if a node's filter erred, are Preempt's
            # answer (an aggregate: distinct messages, bracketed when several), else the FitError.
            if errors:
                distinct = list(dict.fromkeys(errors))
                text = distinct[0] if len(distinct) == 1 else f"[{', '.join(distinct)}]"
                pl.preemption = f"preemption: {text}"
            else:
                pl.preemption = f"preemption: 0/{n} nodes are available: {reason_histogram(statuses)}."
            self._remember_failure(kind, pod.priority, 1, pl.preemption)
            return
        self._evict(chosen.victims, pod.key, "pod", pod.priority, pod, chosen.node.name)
        pl.nominated_node = chosen.node.name
        pl.preemption = f"preempted {len(chosen.pods)} lower-priority pod(s) on node {chosen.node.name}: " + ", ".join(
            f"{p.key} (priority {prio})" for p, prio in zip(chosen.pods, chosen.priorities)
        )
        self._hold(pod, chosen.node)

    def _hold(self, pod, node) -> None:
        """The preemptor waits out its back-off, nominated to `node`, while the queue goes on (it is
        tried again once the active queue is empty: retry). The pods tried meanwhile, of equal or
        lower priority, find its requests held on that node in their filters (the nominated pods a
        cycle adds to their node: RunFilterPluginsWithNominatedPods), not in their scores, and
        not its devices (DynamicResources has no PreFilterExtensions)."""
        held = pod_on(node, pod).resources
        node.take(held)
        self.held[pod.key] = (node, held)

    def retry(self, pod) -> None:
        """A waiting preemptor's next cycle: its nominated node first, taken if it passes the
        filters (evaluateNominatedNode), else every node, else its PostFilter again (another
        preemption, or none: its nomination cleared)."""
        node, held = self.held.pop(pod.key)
        node.take(held, -1)
        self._failed.clear()  # (room came back: earlier failures may not hold)
        if self.scheduler is not None:
            self.scheduler.epoch += 1
        self.changed(False)
        before = self.by_pod[pod.key]
        new = self.place(pod, node) if self.filter_reason(pod, node) is None else None
        if new is None or not new.placed:
            new = self.place(pod)
        self.by_pod[pod.key] = new
        new.preemption = before.preemption
        if new.node == node.name:
            new.nominated_node, new.nominated_before = node.name, before.nominated_before
            return
        new.nominated_before = before.nominated_before + (node.name,)
        if not new.placed:
            new.preemption = ""
            self.after(pod)

    def _preemption_might_help(self, pod, node, reason: str | None) -> bool:
        """nodesWherePreemptionMightHelp: the cycle rejected the node with Unschedulable, not
        UnschedulableAndUnresolvable (node rules, DynamicResources' every rejection unless the
        DRAPreemption gate lets preemption free devices, a request above the node's allocatable,
        required pod affinity, a missing topology label)."""
        if reason is None:
            return True
        if is_resource_reason(reason):  # (Unresolvable when one of the resources is)
            return not reason.endswith(DEVICES_BEYOND_NODE) and not node.exceeds_allocatable(
                pod_on(node, pod).resources
            )
        return reason in RESOLVABLE_REASONS or (self.cluster.features.dra_preemption and _is_dra_reason(reason))

    def _helpless_from_reasons(self, pod, reasons: Counter) -> int:
        """How many nodes the pod's cycle rejected as UnschedulableAndUnresolvable, from its reasons:
        node rules and allocatable overruns node by node (they come first in the filter order), the
        other unresolvable reasons by their count."""
        helpless = 0
        # (the devices' node-allocatable resources: Unresolvable where they overrun the node, which
        # only the node's filter knows)
        devices_check = self.cluster.features.node_allocatable_resources and bool(pod.claims)
        for node in self.cluster.nodes:
            if self.cluster.node_rejects(node, pod) is not None or node.exceeds_allocatable(
                pod_on(node, pod).resources
            ):
                helpless += 1
            elif devices_check and (self.filter_reason(pod, node) or "").endswith(DEVICES_BEYOND_NODE):
                helpless += 1
        dra_helps = self.cluster.features.dra_preemption
        late = sum(
            c
            for r, c in reasons.items()
            if not is_resource_reason(r)
            and r not in RESOLVABLE_REASONS
            and not _is_node_rule(r)
            and not (dra_helps and _is_dra_reason(r))
        )
        return min(len(self.cluster.nodes), helpless + late)

    def _evict(self, victims: list[Victim], preemptor: str, kind: str, priority: int, sample_pod, where: str) -> None:
        scheduler_name = (sample_pod.pod.spec.model_extra or {}).get("schedulerName") or "default-scheduler"
        for u in victims:
            for p in u.pods:
                place = (
                    "on the nodes of its pods (the whole cluster is its domain)"
                    if where == "cluster"
                    else f"on {where}"
                )
                why = (
                    f"evicted from {p.node_name} (priority {u.priority}) to make room for {kind} {preemptor} "
                    f"(priority {priority}) {place}"
                    + (
                        f"; evicted whole with its PodGroup {p.group} (disruptionMode all)"
                        if u.key.startswith("podgroup")
                        else ""
                    )
                )
                self.running.evict(
                    p, Eviction(p.key, p.node_name, u.priority, preemptor, kind, priority, scheduler_name, why)
                )

    # ------------------------------------------------------------------ a PodGroup
    def preempt_group(self, gkey: str) -> None:
        """Workload-aware preemption (KEP-5710) for a PodGroup that did not reach minCount (Gang) or
        placed no pod (Basic): the whole cluster is the domain. Remove every lower-priority unit, run
        the group's pods again; if they fit, reprieve units from the most important down (a unit
        whose pods share no node with the group and free no shared device is reprieved at once), and
        evict the rest."""
        gang = self.workload.groups[gkey]
        members = self._cycled_members(gkey)
        if members is None:
            return
        need = gang.min_count if gang.policy == "gang" else 1
        if sum(1 for m in members if self.by_pod[m.key].placed) >= need:
            self._preempt_for_the_rest(gkey, members)
            return
        self._preempt_for(gkey, members, need, say_it=True)

    def _preempt_for_the_rest(self, gkey: str, members: list) -> None:
        """kube-scheduler 1.37 puts a PodGroup whose cycle scheduled it but left pods unschedulable
        straight back in its queue, its timestamp kept (AddAttemptedPodGroupIfNeeded), so its next
        cycle, of those pods alone, comes at once; a cycle that schedules none of them is
        Unschedulable (runRootSchedulingAlgorithm: a success needs a pod scheduled), and its
        PodGroupPostFilter preempts for them, the scheduled pods counting toward minCount. Those
        pods keep their own FitErrors (a pod-group cycle runs no PostFilter per pod). 1.37 seed 63:
        a basic group's pod evicts a lower-priority pod."""
        if not at_least(self.cluster.features.version, "1.37"):
            return
        for _ in members:  # (bounded: each cycle but the last schedules a pod)
            rest = [m for m in members if not self.by_pod[m.key].placed]
            if not rest or any(self.by_pod[m.key].error for m in rest):
                return
            if not self._run_group(rest):
                break
        else:
            return
        self._preempt_for(gkey, rest, 1, say_it=False)

    def after_cycle(self, gkey: str) -> None:
        """A root PodGroup with a topology constraint whose cycle scheduled it in a placement: the
        pods it left, as for a group without one (_preempt_for_the_rest). They stay in the group's
        placement (first-fit's place keeps a bound group's pods there, as kube-scheduler's
        placements are generated around its scheduled pods): 1.37 seeds 101, 141."""
        members = self._cycled_members(gkey)
        if members is not None:
            self._preempt_for_the_rest(gkey, members)

    def _cycled_members(self, gkey: str) -> list | None:
        """The group's pods this run holds; None when one has no profile to schedule it, as such a
        pod never gets a cycle."""
        members = [self.workload.pod(k) for k in self.workload.groups[gkey].pods if k in self.by_pod]
        if self.scheduler is not None and any(self.scheduler.profile(m) is None for m in members):
            return None
        return members

    def _preempt_for(self, gkey: str, members: list, need: int, *, say_it: bool) -> None:
        """The PodGroupPostFilter for `members`, the group's pods its cycle tried, `need` of them
        to schedule; `say_it`: the pods left unschedulable carry its words."""
        gang = self.workload.groups[gkey]
        pls = [self.by_pod[m.key] for m in members]
        obj = self.group_objs.get(gkey)
        never = group_preemption_policy(obj, [m.pod for m in members], self.classes) == NEVER
        if not never and (self.lowest is None or self.lowest >= gang.priority):
            # (eligibility first, then the victims: PodGroupEvaluator.Preempt)
            if say_it:
                self.group_post_filter[gkey] = NO_GROUP_VICTIMS
            return

        # (1.37: a pod that did not fit keeps its own FitError, the PodGroupPostFilter's words go to
        # the group's status alone: submitPodGroupAlgorithmResult; 1.37 seed 290)
        per_pod = say_it and not at_least(self.cluster.features.version, "1.37")

        def say(text: str, words: str | None = None) -> None:
            if not say_it:
                return
            self.group_post_filter[gkey] = words or text
            for pl in pls:
                if not pl.placed and per_pod:
                    pl.preemption = text

        if never:
            say(self._unschedulable_words("pod group preemption: not eligible due to preemptionPolicy=Never."))
            return
        # the constraint as the workload read it (dropped with its gate, as the API server drops it);
        # the pods a cycle left run in the placement it bound the group to (after_cycle)
        if getattr(gang, "topology_key", None) and say_it:
            say(TOPOLOGY_GROUP_PREEMPTION)
            return
        kind = self._kind(members)
        known = self._failed_before(kind, gang.priority, need)
        if known is not None:
            say(known, self._failed_words.get(kind))
            return
        units = self.units(list(self.running.live.values()), gang.priority)
        if not units:
            say(NO_GROUP_VICTIMS)
            return
        for pl in pls:
            if pl.placed:
                self.unplace(pl)
        self._take(units)  # (DynamicResources frees no PodGroup victim's devices, KEP-5690 neither)
        placed, error = self._tried_in_order(members)
        if error:
            self._group_erred(members, placed, units, error)
            return
        if len(placed) < need:
            self._group_short(gkey, members, placed, units, need, kind, say_it, per_pod)
            return
        assigned = [(m, self.cluster.by_name[self.by_pod[m.key].node]) for m in placed]
        victims = self._reprieve(gkey, units, assigned)
        self._evict(victims, gkey, "podgroup", gang.priority, members[0], "cluster")
        n_pods = sum(len(u.pods) for u in victims)
        for m, node in assigned:
            pl = self.by_pod[m.key]
            pl.nominated_node = node.name
            pl.preemption = f"pod group preemption: {gkey} placed after evicting {n_pods} lower-priority pod(s)"

    def _group_short(
        self, gkey: str, members: list, placed: list, units: list, need: int, kind, say_it: bool, per_pod: bool
    ) -> None:
        """The group does not fit even with every lower-priority unit gone: everything put back as
        it was, and the failure said (`say_it`; to each pod left out: `per_pod`) and remembered for
        groups of its kind."""
        gang = self.workload.groups[gkey]
        # kube-scheduler gives the status of the group's run without victims
        rerun = gang_trial([self.by_pod[m.key].placed for m in members], len(gang.pods) - len(members), need)
        status = rerun.status
        if self.cluster.features.topology_aware_workload_scheduling:
            # (the rerun is the placement algorithm's, its one placement the parent's: podgroup_status)
            status = placements_status(status if rerun.tried else POD_GROUP_UNSCHEDULABLE)
        words = self._unschedulable_words(f"pod group preemption: {status}")
        for m in placed:
            self.unplace(self.by_pod[m.key])
        self._give(units)
        self._run_group(members)  # as before the attempt
        text = (
            "pod group preemption: the pod group does not fit even with every lower-priority pod "
            f"evicted ({len(units)} units)"
        )
        if say_it:
            for m in members:
                if not self.by_pod[m.key].placed and per_pod:
                    self.by_pod[m.key].preemption = text
            self.group_post_filter[gkey] = words
        self._failed_words[kind] = words
        self._remember_failure(kind, gang.priority, need, text)

    def _unschedulable_words(self, words: str) -> str:
        """DefaultPreemption's Unschedulable answer for a PodGroup, as the PodGroupPostFilter
        extension point returns it: after DynamicResources' words in 1.37 (podgroup_status)."""
        if at_least(self.cluster.features.version, "1.37"):
            return with_dra_pod_group_post_filter(words)
        return words

    def _reprieve(self, gkey: str, units: list, assigned: list) -> list:
        """With the group placed (`assigned`: its pods and their nodes), the units given back from
        the most important down where the group still fits; returns those that stay evicted."""
        nodes = {n.name for _, n in assigned}
        victims = []
        ordered = sorted(units, key=Victim.importance)
        apart = [
            u
            for u in ordered
            if not any(p.node_name in nodes for p in u.pods) and not any(self.running.holds_devices(p) for p in u.pods)
        ]
        self._give(apart)  # the group's filters see no change: reprieved at once
        kept = {u.key for u in apart}
        for u in ordered:
            if u.key in kept:
                continue
            # The Filter of each of the group's pods on its node, in order (earlier pods present): only
            # the pods on the unit's nodes can see a change, unless the unit frees devices other nodes reach.
            shared = any(self.running.holds_devices(p) for p in u.pods)
            touched = {p.node_name for p in u.pods}
            affected = [(m, n) for m, n in assigned if shared or n.name in touched]
            for m, _ in affected:
                self.unplace(self.by_pod[m.key])
            self._give([u])
            if not self._on_nodes(affected):
                self._take([u])
                victims.append(u)
                if not self._on_nodes(affected):
                    raise RuntimeError(f"internal: PodGroup {gkey} no longer fits where it fitted")
        return victims

    def _run_group(self, members) -> list[Any]:
        """The group's pending pods tried pod by pod (first-fit's cycle); returns the placed ones."""
        return self._tried_in_order(members)[0]

    def _tried_in_order(self, members) -> tuple[list[Any], str]:
        """The group's pending pods tried pod by pod until one's filter errs, as the pod-group
        cycle stops there (podGroupSchedulingDefaultAlgorithm); (the placed ones, the error)."""
        placed: list[Any] = []
        for m in members:
            pl = self.place(m)
            self.by_pod[m.key] = pl
            if pl.error:
                return placed, pl.error
            if pl.placed:
                placed.append(m)
        return placed, ""

    def _group_erred(self, members: list, placed: list, units: list, error: str) -> None:
        """A pod's filter erred in the group's run without victims: the PodGroupPostFilter's answer
        is that Error, which becomes the status of every pod of the group's cycle (applyPodGroup-
        PostFilterResult; 1.36's cycle takes it as its status); nothing is evicted (seed 182 of both
        releases: a CEL runtime error on a device, met once the victims' room is free)."""
        for m in placed:
            self.unplace(self.by_pod[m.key])
        self._give(units)
        self._run_group(members)  # as before the attempt
        text = group_member_error(error)  # (1.36: runWorkloadAwarePreemption's Error, as it is)
        if at_least(self.cluster.features.version, "1.37"):
            text = f'error in "DefaultPreemption" PodGroupPostFilter plugins: pod group preemption: {text}'
        for m in members:
            pl = self.by_pod[m.key]
            if not pl.placed:
                pl.message, pl.preemption = text, ""

    def _on_nodes(self, assigned) -> bool:
        """Each of the group's pods again on the node it was assigned, in order; False (and nothing
        kept) as soon as one does not fit."""
        done: list[Any] = []
        for m, node in assigned:
            ok = self.fits(m, node)
            pl = self.place(m, node) if ok else None
            if pl is None or not pl.placed:
                for d in done:
                    self.unplace(self.by_pod[d.key])
                return False
            self.by_pod[m.key] = pl
            done.append(m)
        return True

    # ------------------------------------------------------------------ the result
    def finish(self, result) -> None:
        # Groups a pod-group cycle with placements handled (a topology constraint) never got here:
        # draopt does not model their workload-aware preemption (kube-scheduler 1.37.2 runs it, the
        # placement algorithm again without the victims; docs/differences.md, pod-group-cycle).
        release_137 = at_least(self.cluster.features.version, "1.37")
        for pl in result.pods:
            gang = self.workload.groups.get(pl.group) if pl.group else None
            if pl.placed or gang is None or not getattr(gang, "topology_key", None):
                continue
            victims = self.lowest is not None and self.lowest < gang.priority
            if victims and not pl.preemption and not release_137:
                pl.preemption = TOPOLOGY_GROUP_PREEMPTION  # (1.37 runs no PostFilter per pod of a group)
            if pl.group_fitted and pl.message and release_137:  # (1.36: Permit's words alone)
                pl.message += ", " + (TOPOLOGY_GROUP_PREEMPTION if victims else NO_GROUP_VICTIMS)
        result.evictions = sorted(self.running.evicted.values(), key=lambda e: e.pod)
        result.deallocated = sorted(k for k in self.book.freed if k not in self.book.allocations)
        if result.evictions:
            stats = result.stats
            assert isinstance(stats, FirstFitStats)  # (first-fit's run: simulate made it)
            stats.evicted = len(result.evictions)
            stats.evicted_by_priority = dict(sorted(Counter(e.priority for e in result.evictions).items()))


__all__ = ["Candidate", "Preemption", "PreemptionRun", "Victim", "num_candidates", "pick_one_node"]
