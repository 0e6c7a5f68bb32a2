"""Batch placement of pods and PodGroups: kube-scheduler simulation (first-fit) and one
optimal CP-SAT model, on the same input and with the same output."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import marshal

from draopt.allocation.allocate import _cel_env
from draopt.errors import InputError
from draopt.progress import format_gap
from draopt.kube.controllers import stable_uid
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.kube.models import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    DeviceToleration,
    NodeSelector,
    ResourceClaim,
)
from draopt.kube.models.base import K8S_DUMP
from draopt.kube.models.resource import ResourceClaimSpec
from draopt.cluster.state import Cluster, pod_on
from draopt.allocation.explain import explain_failed_pod
from draopt.cluster.firstfit import simulate
from draopt.cluster.result import FirstFitStats, PlacementResult, PodPlacement, waiting_placements  # noqa: F401  (re-exported)
from draopt.scheduler.preemption import Preemption

PLACE_POLICIES = ("first-fit", "optimal")


@dataclass
class PlaceOutcome:
    result: PlacementResult
    workload: Any
    cluster: Cluster
    objects: list[dict[str, Any]]  # Pods and ResourceClaims as Kubernetes would hold them
    # `place --expect`: how much of the forecast fits after each policy (draopt.studies.forecast)
    forecast: Any = None

    @property
    def notes(self) -> list[str]:
        """What the input has that this placement does not honour (a field dropped because its
        gate is off, or one draopt does not model): every call gives them, not only the first."""
        return list(getattr(self.workload, "notes", []))

    # The columns of to_frame(), one row per pending pod.
    FRAME_COLUMNS = ("pod", "node", "placed", "priority", "group", "claims_allocated", "reasons")

    def __repr__(self) -> str:
        s = self.result.summary()
        status = s.stats.get("status") or ("heuristic" if s.policy == "first-fit" else "")
        gap = s.stats.get("gap")
        gap_text = f", gap {format_gap(gap)}" if isinstance(gap, (int, float)) and gap else ""
        return (
            f"<PlaceOutcome {s.policy}: {s.placed} of {s.pods} pods placed on {s.nodes_used} nodes"
            f"{', ' + str(status) if status else ''}{gap_text}>"
        )

    def rows(self) -> list[list[Any]]:
        """One row per pending pod, in FRAME_COLUMNS order (`reasons`: why nodes refused it)."""
        return [
            [
                p.pod,
                p.node,
                p.placed,
                p.priority,
                p.group,
                len(p.new_claims),
                "; ".join(f"{n} {r}" for r, n in p.reasons.most_common()),
            ]
            for p in self.result.pods
        ]

    def to_frame(self) -> Any:
        """A pandas DataFrame of `rows()` (pandas is imported only here)."""
        import pandas

        return pandas.DataFrame(self.rows(), columns=list(self.FRAME_COLUMNS))

    def _repr_html_(self) -> str:
        """A notebook's view: the summary line and the first 20 pods."""
        from html import escape

        head = "".join(f"<th>{escape(c)}</th>" for c in self.FRAME_COLUMNS)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape('' if v is None else str(v))}</td>" for v in row) + "</tr>"
            for row in self.rows()[:20]
        )
        more = len(self.result.pods) - 20
        tail = f"<p>... {more} more pods (to_frame() has them all)</p>" if more > 0 else ""
        return f"<p>{escape(repr(self))}</p><table><tr>{head}</tr>{body}</table>{tail}"


def build_cluster(objects: ObjectSet, workload, features: Features) -> Cluster:
    in_use = [c for c in workload.claims.values() if c.status.allocation is not None]
    cluster = Cluster(objects, features, _cel_env(features), in_use)
    # Running pods use node resources.
    for pod in workload.running:
        node = cluster.by_name.get(pod.node_name)
        if node is not None:
            node.take(pod_on(node, pod).resources)
    return cluster


@contextmanager
def _no_gc_pauses():
    """Placement builds millions of long-lived objects: Python's cyclic collector would scan
    them again and again (half the run time on 40,000 pods). Objects that exist already are
    frozen out of collection and automatic collection waits until the end. At the end, what
    placement made joins the oldest generation too (freeze, then unfreeze): left in the youngest,
    the first collection after re-enabling would scan all of it at once (0.2 s on 5,000 pods)."""
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()


def place(
    objects: ObjectSet,
    *,
    policy: str = "first-fit",
    features: Features | None = None,
    time_limit: float = 60.0,
    scheduler_config=None,
    seed: int = 0,
    tie_break: str = "random",
    prefer_nodes: dict[str, str] | None = None,
    watch_scores=None,
) -> PlaceOutcome:
    """`scheduler_config` (first-fit): a draopt.scheduler.SchedulerConfig, a file path or
    `builtin:<name>`; None: Kubernetes' default profile. `seed`: the random tie-break's
    seed; `tie_break`: random (as kube-scheduler) or name (the first node by name);
    `prefer_nodes` (first-fit with a profile): pod key -> the node a tie goes to when it is among
    the tied nodes (others by name), as draopt.crosscheck follows kube-scheduler's own draws;
    `watch_scores` (first-fit with a profile): a draopt.cluster.firstfit.ScoreWatch, given the
    scoring cycles of its pods."""
    with _no_gc_pauses():
        return _place(
            objects,
            policy=policy,
            features=features,
            time_limit=time_limit,
            scheduler_config=scheduler_config,
            seed=seed,
            tie_break=tie_break,
            prefer_nodes=prefer_nodes,
            watch_scores=watch_scores,
        )


def scheduler_for(scheduler_config, cluster: Cluster, workload, *, seed: int = 0, tie_break: str = "random"):
    """The draopt.scheduler.Scheduler first-fit runs with (None for the built-in name-order)."""
    from draopt.scheduler import Scheduler

    cfg = scheduler_configuration(scheduler_config)
    if cfg.name_order:
        return None
    return Scheduler(cfg, cluster, workload, seed=seed, tie_break=tie_break)


def scheduler_configuration(scheduler_config):
    """The draopt.scheduler.SchedulerConfig of a `scheduler_config` argument (None: the default)."""
    from draopt.scheduler import SchedulerConfig, load_config

    if scheduler_config is None:
        return SchedulerConfig.default()
    if isinstance(scheduler_config, str):
        return load_config(scheduler_config)
    return scheduler_config


def leave_other_schedulers_pods(cluster: Cluster, workload, scheduler_config) -> None:
    """Pods whose spec.schedulerName no profile serves are another scheduler's (kai-scheduler,
    Volcano, ...): kube-scheduler never places them, and neither does any policy here (no node
    takes them: Cluster.node_rejects); said in the notes."""
    from draopt.cluster.state import scheduler_name
    from draopt.kube.field_notes import say_note

    served = frozenset(scheduler_configuration(scheduler_config).profiles)
    cluster.served_schedulers = served
    others: dict[str, list[str]] = {}
    for pod in workload.pending:
        name = scheduler_name(pod)
        if name not in served:
            others.setdefault(name, []).append(pod.key)
    notes = getattr(workload, "notes", None)
    if notes is None:
        notes = workload.notes = []
    for name, keys in sorted(others.items()):
        shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        note = (
            f"{len(keys)} pending pod(s) name spec.schedulerName {name!r}, which no scheduler profile serves "
            f"({shown}): left pending for that scheduler, by every policy"
        )
        if note not in notes:
            notes.append(note)
        say_note(note)


def preemption_for(sched) -> Preemption | None:
    """DefaultPreemption with the profile's arguments (minCandidateNodesPercentage/Absolute), or
    None when the profile disables it at postFilter; one setting for the run: profiles that differ
    in it are refused, not averaged."""
    if sched is None:
        return Preemption()
    settings = {(p.preemption, p.preemption_candidates) for p in sched.config.profiles.values()}
    if len(settings) > 1:
        raise InputError(
            "--scheduler-config: DefaultPreemption (enabled, args) differs between profiles "
            f"({sorted(settings)}): draopt runs one preemption configuration"
        )
    enabled, (share, absolute) = settings.pop()
    return Preemption(share, absolute) if enabled else None


def _place(
    objects: ObjectSet,
    *,
    policy: str,
    features: Features | None,
    time_limit: float,
    scheduler_config=None,
    seed: int = 0,
    tie_break: str = "random",
    prefer_nodes: dict[str, str] | None = None,
    watch_scores=None,
) -> PlaceOutcome:
    import time
    from draopt.errors import InputError

    started = time.perf_counter()
    from draopt.kube.workload import expand

    if policy not in PLACE_POLICIES:
        raise InputError(f"--policy: unknown placement policy {policy!r} (known: {', '.join(PLACE_POLICIES)})")
    features = features or Features.from_gates()
    workload = expand(objects, features)
    deleting = _skip_deleting(workload)
    cluster = build_cluster(objects, workload, features)
    leave_other_schedulers_pods(cluster, workload, scheduler_config)
    if policy == "first-fit":
        result = _place_first_fit(cluster, workload, scheduler_config, seed, tie_break, prefer_nodes, watch_scores)
    else:
        result = _place_optimal(
            objects, workload, cluster, features, scheduler_config, seed, tie_break, time_limit, started
        )
    if isinstance(result.stats, FirstFitStats):
        result.stats.nodes = len(cluster.nodes)
    else:
        result.stats["nodes"] = len(cluster.nodes)
    result.pods += deleting
    result.pods.extend(waiting_placements(workload))  # (every policy: they never entered the queue)
    group_uids = {f"{g.namespace}/{g.name}": g.metadata.uid for g in objects.pod_groups if g.metadata.uid}
    written = output_objects(result, workload, group_uids)
    if policy != "first-fit":
        from draopt.placement.optimal_reasons import reason_in_final_state

        def scheduler(cluster, workload):
            return scheduler_for(scheduler_config, cluster, workload, tie_break="name")

        if reason_in_final_state(objects, features, result, written, build_cluster, scheduler):
            written = output_objects(result, workload, group_uids)  # (the pending pods' conditions)
    return PlaceOutcome(result, workload, cluster, written)


def _place_first_fit(
    cluster: Cluster, workload, scheduler_config, seed, tie_break, prefer_nodes, watch_scores=None
) -> PlacementResult:
    """kube-scheduler's placement, with the profile's preemption; its tie break said."""
    sched = scheduler_for(scheduler_config, cluster, workload, seed=seed, tie_break=tie_break)
    if sched is not None and prefer_nodes is not None:
        sched.prefer_nodes = dict(prefer_nodes)
    result = simulate(
        cluster,
        workload,
        scheduler=sched,
        explain_failures=explain_failed_pod,
        preemption=preemption_for(sched),
        watch_scores=watch_scores,
    )
    if sched is not None:
        assert isinstance(result.stats, FirstFitStats)  # (simulate's)
        result.stats.tie_break = (
            "the given nodes, else name"
            if prefer_nodes is not None
            else tie_break
            if tie_break == "name"
            else f"random (seed {seed})"
        )
    return result


def _place_optimal(
    objects: ObjectSet,
    workload,
    cluster: Cluster,
    features: Features,
    scheduler_config,
    seed,
    tie_break,
    time_limit,
    started,
) -> PlacementResult:
    """The optimal model from the best first-fit: with victims as its decisions where it may evict,
    else after first-fit's evictions, else without preemption (said)."""
    from draopt.placement.optimal import optimize

    from draopt.cluster.check import check_placement
    from draopt.placement.optimal_victims import optimal_with_victims, victim_set

    first_fit, preempts = _best_first_fit(cluster, workload, scheduler_config, seed, tie_break)

    def build_served(objs: ObjectSet, wl, feats: Features) -> Cluster:
        # Clusters built again (without victims, for the checker) serve the same schedulers.
        built = build_cluster(objs, wl, feats)
        built.served_schedulers = cluster.served_schedulers
        return built

    result: PlacementResult | None = None
    vs, why_not = victim_set(workload, cluster, objects) if preempts else (None, "")
    if vs is not None:
        result, why_not = optimal_with_victims(
            objects,
            workload,
            features,
            first_fit,
            vs,
            time_limit,
            started,
            build_served,
            check_placement,
            lambda r, w, c: PlaceOutcome(r, w, c, []),
        )
    if result is not None:
        pass  # the victims were the model's decisions
    elif first_fit.evictions:
        from draopt.placement.optimal_preemption import optimal_after_evictions

        result = optimal_after_evictions(
            objects,
            workload,
            features,
            first_fit,
            time_limit,
            started,
            build_served,
            check_placement,
            lambda r, w, c: PlaceOutcome(r, w, c, []),
        )
    else:
        from draopt.placement.optimal_preemption import note_unsearched_preemption

        result = optimize(cluster, workload, time_limit=time_limit, started=started, first_fit=first_fit)
        note_unsearched_preemption(result, workload, objects.priority_classes)
    _lower_for_unmodelled_filters(result, workload)
    if why_not:
        # Victims could not be decisions of the model: said, with the path taken instead.
        result.optimal_stats["victims_model"] = f"not used: {why_not}"
        said = result.optimal_stats.get("preemption")
        result.optimal_stats["preemption"] = f"{said} (victim model not used: {why_not})" if said else why_not
    return result


def _skip_deleting(workload) -> list[PodPlacement]:
    """Pending pods being deleted (metadata.deletionTimestamp), taken out of the queue: the
    scheduler does not schedule them (pkg/scheduler/schedule_one.go skipPodSchedule) and writes
    no PodScheduled condition; they stay pending, said in their explanation."""
    from draopt.kube.settle import terminating

    skipped = [d for d in workload.pending if terminating(d.pod)]
    if not skipped:
        return []
    workload.set_aside(skipped)
    return [
        PodPlacement(
            d.key,
            None,
            d.priority,
            d.group,
            explanation="not scheduled: the pod is being deleted (metadata.deletionTimestamp)",
            skipped=True,
        )
        for d in skipped
    ]


def _lower_for_unmodelled_filters(result: PlacementResult, workload) -> None:
    """Pods whose host ports or volumes kube-scheduler filters on, which draopt does not model
    (draopt.kube.field_notes): optimal's proofs hold for the rules draopt models only, so never
    OPTIMAL, the filters named in the summary."""
    from draopt.kube.field_notes import unmodelled_filter_rules
    from draopt.placement.optimal import restate_summary

    rules = unmodelled_filter_rules(workload.pending)
    if not rules:
        return
    stats = result.optimal_stats
    stats["not_modelled"] = rules
    if stats.get("status") == "OPTIMAL":
        stats["status"] = "FEASIBLE"
        if isinstance(stats.get("summary"), str):
            restate_summary(stats, " for the filters draopt models")
    if isinstance(stats.get("summary"), str):
        stats["summary"] += f" ({'; '.join(rules)})"


def _best_first_fit(
    cluster: Cluster, workload, scheduler_config, seed: int, tie_break: str
) -> tuple[PlacementResult, bool]:
    """The optimal policy's floor and warm start: first-fit with the scheduler profile it is
    compared against (the one `place --policy first-fit` would use with the same flags), and the
    name-order first-fit when that places more (priority-weighted), so optimal is never below either;
    but not when the pods use a rule that the name-order search and the model leave to the scheduler's
    plugins (inter-pod affinity, topology spread): that first-fit could break it."""
    from draopt.placement.optimal import _fresh, unmodelled_rule

    fresh = _fresh(cluster)  # the scheduler reads the state of the cluster it runs on
    sched = scheduler_for(scheduler_config, fresh, workload, seed=seed, tie_break=tie_break)
    preemption = preemption_for(sched)  # the name-order floor preempts as the profile does
    runs = [simulate(fresh, workload, scheduler=sched, explain_failures=explain_failed_pod, preemption=preemption)]
    if sched is not None and unmodelled_rule(cluster, workload) is None:
        runs.append(simulate(_fresh(cluster), workload, explain_failures=explain_failed_pod, preemption=preemption))
    # first wins ties: the compared profile; and whether the profile preempts at all
    return max(runs, key=lambda r: r.weighted_placed()), preemption is not None


def output_objects(result: PlacementResult, workload, group_uids: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Pods (placed: spec.nodeName; not placed: a PodScheduled=False condition with the
    reason) and every claim the placement allocated, with status.allocation and reservedFor
    (`group_uids`: the PodGroups' uids by namespace/name, for the entries naming them)."""
    out: list[dict[str, Any]] = []
    n_nodes = result.stats.get("nodes")
    consumers: dict[str, list[dict[str, Any]]] = {}
    dumps = _Dumps(getattr(workload, "claim_copies", None))
    for pl in result.pods:
        pod = workload.pod(pl.pod)
        d = pod.pod.to_k8s()
        uid = _object_uid(pod.pod, "Pod")
        d["metadata"]["uid"] = uid  # (the reservedFor entries below name it)
        if pl.nominated_node and not pl.placed:
            # set by preemption; the binding clears it (ClearingNominatedNodeNameAfterBinding, on
            # since 1.35): a placed preemptor keeps it in PodPlacement.nominated_node only
            d.setdefault("status", {})["nominatedNodeName"] = pl.nominated_node
        if pl.placed:
            d.setdefault("spec", {})["nodeName"] = pl.node
        elif pl.skipped:
            pass  # never tried: the scheduler writes no PodScheduled condition (_skip_deleting)
        elif pl.hold is not None:
            _waiting_status(d, pl.hold)
        else:
            message = pl.condition_message(n_nodes or sum(pl.reasons.values()))
            if pl.message == "":  # (kube-scheduler writes no condition on a pod it never tries)
                message = pl.reason_text(n_nodes or sum(pl.reasons.values()))
            if pl.explanation:
                message = (message + "\n" if message else "") + pl.explanation
            d.setdefault("status", {})["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    # (a filter error: handleSchedulingFailure's reason for an Error status)
                    "reason": "SchedulerError" if pl.error else "Unschedulable",
                    "message": message,
                }
            ]
        out.append(d)
        if pl.placed:
            for use in pod.claims:
                ref = (
                    _group_reference(use.for_group, group_uids or {})
                    if use.for_group
                    else {"resource": "pods", "name": pod.pod.name, "uid": uid}
                )
                lst = consumers.setdefault(use.key, [])
                if ref not in lst:
                    lst.append(ref)
    for key, (allocation, node) in sorted(result.claims.items()):
        claim = workload.claims[key]
        d = dumps.claim(claim)
        status = d.setdefault("status", {})
        status["allocation"] = dumps.allocation(allocation)
        reserved = [_with_uid(r, claim.namespace, workload) for r in status.get("reservedFor") or []]
        for ref in consumers.get(key, []):
            if ref not in reserved:
                reserved.append(ref)
        status["reservedFor"] = reserved
        out.append(d)
    out += _eviction_objects(result, workload)
    return out


def _waiting_status(pod: dict[str, Any], hold) -> None:
    """A pod outside the scheduling queue: the PodScheduled condition Kubernetes writes for it (the
    API server on a gated pod), none when it writes none (a DynamicResources PreEnqueue hold)."""
    if not hold.condition_reason:
        return
    conditions = [c for c in pod.setdefault("status", {}).get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {"type": "PodScheduled", "status": "False", "reason": hold.condition_reason, "message": hold.message}
    )
    pod["status"]["conditions"] = conditions


def _object_uid(obj: Any, kind: str) -> str:
    """The object's uid; one derived from its namespace and name when the input gave none (a
    manifest: the API server would give one), since a claim's reservedFor entry must name it
    (pkg/apis/resource/validation/validation.go validateResourceClaimUserReference)."""
    return obj.metadata.uid or stable_uid(kind, obj.namespace, obj.name)


def _with_uid(ref: dict[str, Any], namespace: str, workload) -> dict[str, Any]:
    """A reservedFor entry of the input without a uid, with its pod's uid, or the one draopt gives
    a pod or PodGroup without one."""
    if ref.get("uid") or not isinstance(ref.get("name"), str):
        return ref
    if ref.get("resource") == "pods":
        try:
            return dict(ref, uid=_object_uid(workload.pod(f"{namespace}/{ref['name']}").pod, "Pod"))
        except KeyError:
            pass  # (a pod not in the input)
    kind = {"pods": "Pod", "podgroups": "PodGroup"}.get(str(ref.get("resource")), str(ref.get("resource")))
    return dict(ref, uid=stable_uid(kind, namespace, ref["name"]))


def _group_reference(group_key: str, group_uids: dict[str, str]) -> dict[str, Any]:
    namespace, name = group_key.split("/", 1)
    uid = group_uids.get(group_key) or stable_uid("PodGroup", namespace, name)
    return {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": name, "uid": uid}


class _NotPlain(Exception):
    """A value _Dumps does not write itself: pydantic dumps the object."""


def _aliases(cls) -> tuple[tuple[str, str], ...]:
    return tuple((name, f.serialization_alias or f.alias or name) for name, f in cls.model_fields.items())


_CLAIM_SPEC_AT = tuple(a for _, a in _aliases(ResourceClaim)).index("spec")
_CLAIM_BEFORE_SPEC = frozenset(a for _, a in _aliases(ResourceClaim)[:_CLAIM_SPEC_AT])
_RESULT_FIELDS = _aliases(DeviceRequestAllocationResult)


class _Dumps:
    """to_k8s() of the claims and allocations output_objects writes (the same dicts, keys in the
    same order), faster: what many claims share (a node's selector, the spec of a template's
    claims) is dumped once and copied for each (one dict in two places would be a YAML alias);
    the device results decode makes (strings, booleans, lists of them) are written directly.
    Anything else is pydantic's dump."""

    def __init__(self, copies=None) -> None:
        self._once: dict[int, tuple[Any, bytes]] = {}
        self._copies = copies  # draopt.kube.models.clone.ClaimCopier: claims dumped from their first's dump

    def shared(self, model) -> dict[str, Any]:
        """model.to_k8s(), dumped once per object (kept while this lives, so ids are not reused);
        marshal copies a dump (a tree of JSON values) faster than pydantic dumps it again."""
        got = self._once.get(id(model))
        if got is None:
            got = self._once[id(model)] = (model, marshal.dumps(model.to_k8s()))
        return marshal.loads(got[1])

    def claim(self, claim: ResourceClaim) -> dict[str, Any]:
        copied = self._copies.dump(claim) if self._copies is not None else None
        if copied is not None:
            return copied
        spec = claim.__dict__.get("spec")
        if type(claim) is not ResourceClaim or type(spec) is not ResourceClaimSpec:
            return claim.to_k8s()
        if "spec" not in claim.__pydantic_fields_set__:
            return claim.to_k8s()
        rest = claim.model_dump(exclude=_SPEC, **K8S_DUMP)
        out: dict[str, Any] = {}
        for k, v in rest.items():  # the fields in declaration order, then the unknown ones
            if "spec" not in out and k not in _CLAIM_BEFORE_SPEC:
                out["spec"] = self.shared(spec)
            out[k] = v
        if "spec" not in out:
            out["spec"] = self.shared(spec)
        return out

    def allocation(self, allocation: AllocationResult) -> dict[str, Any]:
        try:
            return self._allocation(allocation)
        except _NotPlain:
            return allocation.to_k8s()

    def _allocation(self, a: AllocationResult) -> dict[str, Any]:
        if type(a) is not AllocationResult or a.__pydantic_extra__:
            raise _NotPlain
        values, given = a.__dict__, a.__pydantic_fields_set__
        out: dict[str, Any] = {}
        devices = values["devices"]
        if "devices" in given and devices is not None:
            out["devices"] = self._devices(devices)
        selector = values["node_selector"]
        if "node_selector" in given and selector is not None:
            if type(selector) is not NodeSelector:
                raise _NotPlain
            out["nodeSelector"] = self.shared(selector)
        stamp = values["allocation_timestamp"]
        if "allocation_timestamp" in given and stamp is not None:
            if type(stamp) is not str:
                raise _NotPlain
            out["allocationTimestamp"] = stamp
        return out

    def _devices(self, d: DeviceAllocationResult) -> dict[str, Any]:
        if type(d) is not DeviceAllocationResult or d.__pydantic_extra__:
            raise _NotPlain
        values, given = d.__dict__, d.__pydantic_fields_set__
        out: dict[str, Any] = {}
        results, config = values["results"], values["config"]
        if "results" in given and results is not None:
            if type(results) is not list:
                raise _NotPlain
            out["results"] = [_result(r) for r in results]
        if "config" in given and config is not None:
            if type(config) is not list or any(type(c) is not DeviceAllocationConfiguration for c in config):
                raise _NotPlain
            out["config"] = [c.to_k8s() for c in config]
        return out


_SPEC = {"spec": True}


def _result(r: DeviceRequestAllocationResult) -> dict[str, Any]:
    if type(r) is not DeviceRequestAllocationResult or r.__pydantic_extra__:
        raise _NotPlain
    values, given = r.__dict__, r.__pydantic_fields_set__
    out: dict[str, Any] = {}
    for name, alias in _RESULT_FIELDS:
        v = values[name]
        if v is None or name not in given:
            continue
        kind = type(v)
        if kind is str or kind is bool:
            out[alias] = v
        elif kind is list:
            if all(type(x) is str for x in v):
                out[alias] = list(v)
            elif all(type(x) is DeviceToleration for x in v):
                out[alias] = [x.to_k8s() for x in v]
            else:
                raise _NotPlain
        elif kind is dict and all(type(k) is str and type(x) is str for k, x in v.items()):
            out[alias] = dict(v)
        else:
            raise _NotPlain
    return out


def _eviction_objects(result: PlacementResult, workload) -> list[dict[str, Any]]:
    """Pods preemption evicted, with the DisruptionTarget condition the scheduler writes before it
    deletes them (pkg/scheduler/framework/preemption executor.go), and the claims deallocated because
    their last pod went: no status.allocation, the evicted pods out of status.reservedFor."""
    out: list[dict[str, Any]] = []
    evicted = {e.pod for e in result.evictions}
    for e in result.evictions:
        d = workload.pod(e.pod).pod.to_k8s()
        conditions = [
            c for c in (d.setdefault("status", {}).get("conditions") or []) if c.get("type") != "DisruptionTarget"
        ]
        d["status"]["conditions"] = conditions + [e.condition()]
        out.append(d)
    for key in result.deallocated:
        if key in result.claims:
            continue
        d = workload.claims[key].to_k8s()
        status = d.setdefault("status", {})
        status.pop("allocation", None)
        ns = workload.claims[key].namespace
        status["reservedFor"] = [
            _with_uid(r, ns, workload)
            for r in status.get("reservedFor") or []
            if not (r.get("resource") == "pods" and f"{ns}/{r.get('name')}" in evicted)
        ]
        status.pop("devices", None)
        out.append(d)
    return out


def _summary_cell(summary: dict, column: str) -> str:
    value = summary.get(column, "")
    if column == "gap" and isinstance(value, (int, float)):
        return format_gap(value)  # a percentage, as the progress line shows it
    return str(value)


def summary_table(results: list[PlacementResult]) -> str:
    cols = ["policy", "placed", "pods", "weighted_placed", "devices_used", "nodes_used", "solve_s", "gap", "status"]
    if any(r.evictions for r in results):
        cols.insert(4, "evicted")
    rows = [[_summary_cell(r.summary().to_dict(), c) for c in cols] for r in results]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]
    line = "  ".join(c.ljust(w) for c, w in zip(cols, widths))
    body = "\n".join("  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in rows)
    return line + "\n" + body


def pod_table(result: PlacementResult, n_nodes: int, devices: dict[str, str] | None = None) -> str:
    """One line per pod: its node, or why none. `devices` (`-o wide`): pod key -> the devices its
    claims hold, a column after the node."""
    lines = []
    for pl in result.pods:
        where = pl.node or "-"
        why = "" if pl.placed else pl.reason_text(n_nodes)
        held = "" if devices is None else f"{devices.get(pl.pod) or '-':30s} "
        lines.append(f"{pl.pod:40s} {where:20s} {held}{why}")
        if not pl.placed and pl.explanation:
            lines.extend("    " + line for line in pl.explanation.splitlines())
        if pl.preemption:
            lines.append("    " + pl.preemption)
    if result.evictions:
        lines.append("")
        lines.append(f"evicted by preemption ({len(result.evictions)}):")
        for e in result.evictions:
            lines.append(f"{e.pod:40s} {e.node:20s} {e.condition()['reason']}: {e.message}")
            lines.append(f"    {e.why}")
        if result.deallocated:
            lines.append("claims deallocated (their last pod was evicted): " + ", ".join(result.deallocated))
    return "\n".join(lines)
