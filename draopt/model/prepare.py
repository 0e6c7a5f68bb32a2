"""The placement model's prepared problem: each pending pod's claims prepared on every node that
can take it (candidate devices, quick rejections, counting identical pods), before any variable
is built (draopt.model.placement.build)."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any


from draopt.model.encodings.attributes import constraint_name
from draopt.errors import AllocationError, DeviceCelError
from draopt.dra.problem import Problem, prepare
from draopt.cluster.state import Cluster, NodeState, pod_on
from draopt.cluster.firstfit import ClaimBook, _scheduling_constraints, node_filter
from draopt.model.reductions import (
    CountIdenticalPods,
    DeviceRef,
    GroupDevices,
    Kind,
    ModelReductions,
    attribute_pattern,
    countable,
    device_pattern_extra,
    groupable,
)
from draopt.model.topology_domains import kind_tag


class ModelTooLarge(Exception):
    pass


class OutOfTime(Exception):
    """The time limit ran out while preparing or building the model."""


def _check_time(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise OutOfTime("the time limit ran out while building the model")


@dataclass
class Prepared:
    """Kinds, their candidate nodes and node problems, device columns per node."""

    kinds: list[Kind]
    pod_nodes: dict[str, list[NodeState]]  # pod -> nodes it may use
    problems: dict[tuple[int, str], Problem]  # (kind, node) -> problem of its pending claims
    refs: dict[str, list[DeviceRef]]  # node -> columns
    ref_of: dict[tuple[str, tuple], DeviceRef]  # (node, node-local device id) -> its column
    node_resources_of_devices: bool
    # Candidacy, or a stand-in with its call and `attributes` (reductions.claims_on_one_node)
    candidacy: Any = None
    shared_ref_of: dict[tuple, DeviceRef] = field(default_factory=dict)  # device several nodes reach -> column
    # Pods of units (pods not counted alike) whose extended resources some node's device plugin
    # serves -> the first such node: the model does not encode them (unmodelled_extended).
    device_plugin_units: dict[str, str] = field(default_factory=dict)
    # id(a pod_nodes list) -> its node names, for parts much smaller than a pod's candidates
    # (draopt.model.encodings.pods); the lists live as long as this record.
    name_sets: dict[int, set[str]] = field(default_factory=dict)
    # The reductions that made this problem (their instances invert it: draopt.model.solution).
    reductions: ModelReductions = field(default_factory=ModelReductions)

    def unmodelled_extended(self) -> str | None:
        """What of the input the model does not encode here, or None."""
        for key, node in self.device_plugin_units.items():
            return (
                f"extended resources a device plugin serves (node {node}) for a pod that is not counted "
                f"with pods alike ({key})"
            )
        return None

    def column(self, node: str, device_id: tuple) -> DeviceRef | None:
        """The column of a device as the node sees it."""
        ref = self.ref_of.get((node, device_id))
        return ref if ref is not None else self.shared_ref_of.get(device_id)


class Candidacy:
    """`_candidate` decided once per (claims, request, device content), not once per (node,
    owner, device): a device that several nodes reach is the same Device from each of them
    (selectors, capacity, taints and the allocated state are cluster-wide), and node-local
    devices alike (driver, name, attributes, capacity, taints, capacity in use; what selectors
    and capacity checks read) are judged alike, e.g. the GPUs of a fleet of identical nodes.
    Whether the device itself is held by an allocated claim is checked per device. Per-device
    node selection and `All` requests are judged per problem."""

    def __init__(self):
        self.sig_of: dict[int, tuple] = {}  # id(problem) -> signature of its claims
        self._cache: dict[tuple, tuple[bool, str | None]] = {}
        self._attrs: dict[tuple, tuple] = {}
        self._content: dict[int, tuple] = {}  # id(entry) -> content key (entries outlive the run)

    def _device_key(self, problem: Problem, entry):
        got: Any = self._content.get(id(entry), self)
        if got is not self:
            return got
        sp = entry.slice.spec
        d = entry.device
        if sp.per_device_node_selection:
            got = None
        elif not sp.node_name:
            got = id(d)
        else:
            got = (
                entry.pool.driver,
                d.name,
                _content_key(d.attributes),
                _content_key(d.capacity),
                bool(d.allow_multiple_allocations),
                repr(d.binding_conditions),
                bool(d.consumes_counters),
                repr(entry.taints),
                bool(entry.list_type_attributes),
                repr(problem.inventory.allocated.capacity.get(entry.id)),
            )
        self._content[id(entry)] = got
        return got

    def _key(self, problem: Problem, spec, entry):
        if spec.mode == "All":
            return None
        sig = self.sig_of.get(id(problem))
        if sig is None:
            return None
        dk = self._device_key(problem, entry)
        return None if dk is None else (sig, spec.key, dk)

    def __call__(self, problem: Problem, spec, entry) -> bool:
        key = self._key(problem, spec, entry)
        if key is None:
            return _candidate(problem, spec, entry)
        if not spec.admin_access and entry.id in problem.inventory.allocated.devices:
            return False
        got = self._cache.get(key)
        if got is None:
            ok = _candidate(problem, spec, entry)
            error = None if ok else problem.cel_skipped.get((spec.key, entry.id))
            got = self._cache[key] = (ok, error)
        elif got[1] is not None:
            # A CEL runtime error on a device alike: this device is no candidate either, counted.
            problem.cel_skipped[(spec.key, entry.id)] = got[1]
        return got[0]

    def attributes(self, problem: Problem, spec, entry, names: list[str]) -> tuple:
        key = self._key(problem, spec, entry)
        if key is None:
            return attribute_pattern(problem, spec, entry, names)
        key = key + (tuple(names),)
        got = self._attrs.get(key)
        if got is None:
            got = self._attrs[key] = attribute_pattern(problem, spec, entry, names)
        return got


def _model_key(m) -> tuple:
    """A device attribute's or capacity's content, exactly (each field has one type; nested
    models and extra fields by repr), without pydantic's repr of the whole model: the slowest
    part of preparing 5,000 nodes."""
    out = []
    for f in type(m).model_fields:
        v = getattr(m, f)
        out.append(tuple(v) if isinstance(v, list) else v if v is None or isinstance(v, (str, int)) else repr(v))
    if m.__pydantic_extra__:
        out.append(repr(sorted(m.__pydantic_extra__.items())))
    return tuple(out)


def _content_key(models: dict) -> tuple:
    return tuple((name, _model_key(m)) for name, m in sorted(models.items(), key=lambda kv: kv[0]))


def _extended_tag(pod) -> str:
    """Which extended resources DRA serves the pod where no device plugin does: pods alike in
    their claims may differ in it (a class's name and its extendedResourceName)."""
    return "|extended:" + ",".join(sorted(pod.extended_resources)) if pod.extended_resources else ""


def node_claim_keys(cluster: Cluster, node: NodeState, pod, keys: list[str]) -> list[str]:
    """`keys` (claims of the pod's kind) without those the node does not ask for: the
    extended-resource claim where the node's device plugin serves the pod's extended resources
    (Cluster.pod_on). `keys` itself when the node asks for all of them."""
    view = pod_on(node, pod)
    if view is pod:
        return keys
    dropped = {u.key for u in pod.claims} - {u.key for u in view.claims}
    return [k for k in keys if k not in dropped] if dropped else keys


def prepare_cluster(
    cluster: Cluster,
    workload,
    book: ClaimBook,
    deadline: float | None = None,
    extra_tag=None,
    reductions: ModelReductions | None = None,
) -> Prepared:
    """`deadline` (perf_counter): past it, `OutOfTime` is raised. `extra_tag(pod)`: more of the
    scheduling key (pods with different tags are never counted together). `reductions`: the
    instances that count the pods and group the devices (draopt.placement.chain assembles
    place's), kept on the result for the builder and the decoding."""
    reductions = reductions if reductions is not None else ModelReductions()
    features = cluster.features
    derived_node_resources = bool(features.node_allocatable_resources) and any(
        d.node_allocatable_resources for s in cluster.objects.resource_slices for d in s.spec.devices
    )
    probes = _NodeProblems(cluster, book)
    kinds = _count_kinds(reductions.count_pods, cluster, workload, book, probes, derived_node_resources, extra_tag)
    nodes = _CandidateNodes()
    for kind in kinds:
        nodes.add_kind(cluster, book, probes, kind, deadline)
    refs, ref_of, shared = _columns(reductions.group_devices, cluster, nodes.problems, probes.candidacy, deadline)
    return Prepared(
        kinds,
        nodes.pod_nodes,
        nodes.problems,
        refs,
        ref_of,
        derived_node_resources,
        probes.candidacy,
        shared,
        nodes.device_plugin_units,
        reductions=reductions,
    )


@dataclass(eq=False)
class _NodeProblems:
    """Node problems of sets of pending claims, prepared once per (claims' signatures, node),
    with the quick rejection's verdict; owned by one `prepare_cluster`."""

    cluster: Cluster
    book: ClaimBook
    candidacy: Candidacy = field(default_factory=Candidacy)
    probe: dict[tuple, tuple[str | None, Problem | None]] = field(default_factory=dict)

    def get(self, keys: list[str], node: NodeState, sig: tuple) -> tuple[str | None, Problem | None]:
        """(why the node cannot take the claims or None, their problem there or None)."""
        hit = self.probe.get((sig, node.name))
        if hit is None:
            cluster = self.cluster
            try:
                p = prepare(
                    [self.book.claims[k] for k in keys],
                    cluster.inventory(node),
                    cluster.classes,
                    cluster.features,
                    cluster.cel_env,
                    cluster.expr_cache,
                )
                self.candidacy.sig_of[id(p)] = sig
                hit = (_quick_reject(p, self.candidacy), p)
            except AllocationError as e:
                hit = (f"resource claim error: {e}", None)
            self.probe[(sig, node.name)] = hit
        return hit

    def of_keys(self, keys: list[str], node: NodeState) -> tuple[str | None, Problem | None]:
        return self.get(keys, node, tuple(self.book.signature(k) for k in keys))


def _count_kinds(
    count_pods: CountIdenticalPods,
    cluster: Cluster,
    workload,
    book: ClaimBook,
    probes: _NodeProblems,
    derived_node_resources: bool,
    extra_tag,
) -> list[Kind]:
    """The pending pods as kinds: pods alike counted together (CountIdenticalPods), the rest units.
    Groups of pod-group cycles (topology constraints, CompositePodGroups) keep kinds of their own."""
    features = cluster.features

    def is_countable(pod) -> str | None:
        keys = [u.key for u in pod.claims if book.allocation(u.key) is None]
        for node in cluster.nodes:
            if node_filter(cluster, book, pod, node) is None:
                reason, p = probes.of_keys(keys, node)
                if p is not None:
                    return countable(p, features, derived_node_resources and bool(keys))
        return None  # fits nowhere: counting is harmless

    node_local_only = all(
        s.spec.node_name and not s.spec.per_device_node_selection
        for s in cluster.objects.resource_slices
        if s.spec.devices
    )
    return count_pods.apply(
        list(workload.pending),
        book,
        lambda pod: (
            _scheduling_constraints(pod)
            + kind_tag(workload, pod)
            + (extra_tag(pod) if extra_tag else "")
            + _extended_tag(pod)
        ),
        is_countable,
        node_local_only,
    )


@dataclass(eq=False)
class _CandidateNodes:
    """Each pending pod's candidate nodes, and each kind's problem per node."""

    problems: dict[tuple[int, str], Problem] = field(default_factory=dict)  # (kind, node) -> problem
    pod_nodes: dict[str, list[NodeState]] = field(default_factory=dict)
    device_plugin_units: dict[str, str] = field(default_factory=dict)  # see Prepared

    def add_kind(self, cluster: Cluster, book: ClaimBook, probes: _NodeProblems, kind: Kind, deadline) -> None:
        # Kinds and units with claims alike share one problem per node (owners name their own claims).
        sig = tuple(book.signature(k) for k in kind.claim_keys)
        # Counted pods are identical: the representative's nodes are everybody's.
        for pod in kind.pods[:1] if kind.counted else kind.pods:
            nodes = []
            own = [u.key for u in pod.claims if book.allocation(u.key) is None]
            _check_time(deadline)
            for node in cluster.nodes:
                if self._judge(cluster, book, probes, kind, sig, pod, own, node) is None:
                    nodes.append(node)
            for member in kind.pods if kind.counted else [pod]:
                self.pod_nodes[member.key] = nodes

    def _judge(self, cluster, book, probes: _NodeProblems, kind: Kind, sig, pod, own, node) -> str | None:
        """Why the pod cannot go to the node (None: it may); records the kind's problem there."""
        key = (kind.index, node.name)
        reason = node_filter(cluster, book, pod, node)
        here = node_claim_keys(cluster, node, pod, kind.claim_keys)
        if reason is None and here is not kind.claim_keys:
            # a device plugin serves the pod's extended resources here (kinds are
            # alike in them): the claims the node asks for; a unit's are not modelled
            if not kind.counted:
                self.device_plugin_units.setdefault(pod.key, node.name)
            if here:
                reason, p = probes.of_keys(here, node)
                if p is not None and reason is None:
                    self.problems[key] = p
        elif reason is None and kind.claim_keys:
            if kind.counted:
                reason, p = probes.get(kind.claim_keys, node, sig)
                if p is not None and reason is None:
                    self.problems[key] = p
            else:
                # A unit: each pod is judged by the claims it uses; the unit's problem on
                # the node only gives the columns (another pod's claim may not fit here).
                if own:
                    reason, _ = probes.of_keys(own, node)
                if reason is None and key not in self.problems:
                    _, p = probes.get(kind.claim_keys, node, sig)
                    if p is not None:
                        self.problems[key] = p
        return reason


def _columns(
    group_devices: GroupDevices,
    cluster: Cluster,
    problems: dict[tuple[int, str], Problem],
    candidacy: Candidacy,
    deadline,
) -> tuple[dict[str, list[DeviceRef]], dict[tuple[str, tuple], DeviceRef], dict[Any, DeviceRef]]:
    """Columns per node: devices alike for every owner that may use the node share a column.
    (refs per node, node-local device -> column, device several nodes reach -> column.)"""
    users_of_node: dict[str, list[Problem]] = defaultdict(list)
    for (ki, name), p in problems.items():
        users_of_node[name].append(p)
    refs: dict[str, list[DeviceRef]] = {}
    ref_of: dict[tuple[str, tuple], DeviceRef] = {}
    shared: dict[Any, DeviceRef] = {}
    same_columns: dict[tuple, list[DeviceRef]] = {}
    for node in cluster.nodes:
        ps = users_of_node.get(node.name)
        if not ps:
            continue
        _check_time(deadline)
        inv = cluster.inventory(node)
        # A node with no device of its own (pools every node reaches) has the columns of any
        # node that reaches the same slices with the same claims: found once, one list.
        reach = None
        if all(
            not s.spec.node_name and not s.spec.per_device_node_selection for pool in inv.pools for s in pool.slices
        ):
            reach = (
                tuple(candidacy.sig_of.get(id(p)) for p in ps),
                tuple(id(s) for pool in inv.pools for s in pool.slices),
            )
            if reach in same_columns:
                refs[node.name] = same_columns[reach]
                continue
        node_refs = []
        for ref in group_devices.apply(
            node.name, _device_patterns(node.name, inv, ps, candidacy, cluster.features), cluster.features
        ):
            if ref.node is None:
                # Reached from several nodes: one column for all of them.
                ref = shared.setdefault(ref.key, ref)
            else:
                for e in ref.entries:
                    ref_of[(node.name, e.id)] = ref
            node_refs.append(ref)
        refs[node.name] = node_refs
        if reach is not None:
            same_columns[reach] = node_refs
    return refs, ref_of, shared


def _device_patterns(node_name: str, inv, ps: list[Problem], candidacy: Candidacy, features) -> list[tuple]:
    """The node's devices some request may take, each with what makes devices alike
    (None: a column of its own)."""
    specs = [
        (p, s, sorted({constraint_name(c)[1] for cl in p.claims for c in cl.constraints}))
        for p in ps
        for cl in p.claims
        for g in cl.requests
        for s in g.alternatives
    ]
    patterns: list[tuple] = []
    for entry in inv.devices:
        if not groupable(entry, node_name, features):
            # A column of its own: only whether some request may take it matters.
            if any(candidacy(p, s, entry) for p, s, _ in specs):
                patterns.append((entry, None))
            continue
        pat: list = []
        for p, s, names in specs:
            ok = candidacy(p, s, entry)
            pat.append(ok)
            if ok and names:
                pat.append(candidacy.attributes(p, s, entry, names))
        if not any(x is True for x in pat):
            continue
        patterns.append((entry, (tuple(map(repr, pat)), device_pattern_extra(entry))))
    return patterns


def _candidate(problem: Problem, spec, entry) -> bool:
    if spec.mode == "All" and entry not in spec.all_devices:
        return False
    return _usable(problem, spec, entry)


def _usable(problem: Problem, spec, entry) -> bool:
    """usable_alone, where a CEL runtime error on the device makes it no candidate: an
    allocator that evaluates every candidate cannot take it (Kubernetes' first-fit fails only
    if its search reaches the device; see docs/placement.md)."""
    try:
        return problem.usable_alone(spec, entry)
    except DeviceCelError as e:
        problem.cel_skipped[(spec.key, entry.id)] = str(e)
        return False


def _quick_reject(problem: Problem, candidacy=None) -> str | None:
    """A cheap necessary check: every plain request has enough candidates on the node."""
    for claim in problem.claims:
        for g in claim.requests:
            if g.has_subrequests:
                if not any(_enough(problem, s, candidacy) for s in g.alternatives):
                    return "cannot allocate all claims"
            elif not _enough(problem, g.alternatives[0], candidacy):
                return "cannot allocate all claims"
    return None


def _enough(problem: Problem, spec, candidacy=None) -> bool:
    if spec.mode == "All":
        return bool(spec.all_devices) and all(_usable(problem, spec, d) for d in spec.all_devices)
    usable = candidacy or (lambda p, s, d: _usable(p, s, d))
    n = 0
    for d in problem.devices:
        if usable(problem, spec, d):
            n += 1
            if n >= spec.count:
                return True
    return False
