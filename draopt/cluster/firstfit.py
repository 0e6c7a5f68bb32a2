"""The kube-scheduler, simulated: pods one at a time in queue order, each node filtered with
the first-fit allocator, the best-scoring node taken, no choice ever revisited.

Node choice: with a `draopt.scheduler.Scheduler` (what `place` passes: a KubeSchedulerConfiguration
profile, Kubernetes 1.36's by default), the scheduler's score plugins over a share of the nodes
(percentageOfNodesToScore, rotating start), ties at random from a seed or by name
(docs/scheduler.md). Without one (`builtin:name-order`): every node is filtered and only DRA's
prioritized-list score differs between nodes (sum over the pod's firstAvailable requests of
8 - chosen sub-request index), ties to the first node in name order. Gangs (PodGroups with a
gang policy) are placed pod by pod, as
Kubernetes does; a gang that ends the queue with fewer than minCount pods placed gives back
what it took (the Permit stage times out), and a second pass offers that room to the others.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from draopt.errors import AllocationError
from draopt.kube.models import AllocationResult, ResourceClaim
from draopt.kube.nodeselect import node_selector_matches
from draopt.dra.problem import ClaimSpec, Problem, prepare
from draopt.dra.reference import Chosen, ReferenceAllocator, SearchLimit
from draopt.cluster.state import DEFAULT_SCHEDULER_NAME, Cluster, NodeState, pod_on
from draopt.cluster.result import PlacementResult, PodPlacement
from draopt.cluster.podgroup_status import never_popped, word_group_members
from draopt.cluster.podgroup_placement import GroupCycle, needs_group_cycles, run_group_cycle

MAX_SUBREQUEST_SCORE = 8
NO_FIT = "cannot allocate all claims"
SHARED_FIT = "fit on shared devices"  # try_node's cache: the current pod's answer on shared devices
SEARCH_LIMIT = 100_000


class ClaimBook:
    """Which claims are allocated, where, and how to undo it."""

    def __init__(self, cluster: Cluster, claims: dict[str, ResourceClaim]):
        self.cluster = cluster
        self.claims = claims
        self.allocations: dict[str, tuple[AllocationResult, str]] = {}
        self._signature: dict[str, str] = {}
        self._allocation_signature: dict[str, str] = {}
        self.freed: set[str] = set()  # allocated in the input, deallocated after its last pod was evicted

    def allocation(self, key: str) -> AllocationResult | None:
        got = self.allocations.get(key)
        if got is not None:
            return got[0]
        if key in self.freed:
            return None
        return self.claims[key].status.allocation

    def signature(self, key: str) -> str:
        sig = self._signature.get(key)
        if sig is None:
            sig = self._signature[key] = json.dumps(self.claims[key].spec.to_k8s(), sort_keys=True)
        return sig

    def allocation_signature(self, key: str) -> str:
        """The claim's spec as the allocator sees it: each deviceClassName replaced by that
        class's selectors (a class matters to the search through its selectors only; its name
        and config only to the result). Claims alike here get the same devices."""
        sig = self._signature.get(key) or self.signature(key)
        got = self._allocation_signature.get(sig)
        if got is None:
            classes = self.cluster.classes

            def unname(entry):
                cls = classes.get(entry.get("deviceClassName")) if isinstance(entry, dict) else None
                if cls is None:
                    return entry
                out = dict(entry)
                out["deviceClassName"] = ["class selectors", [x.to_k8s() for x in cls.spec.selectors]]
                return out

            spec = json.loads(sig)
            for r in (spec.get("devices") or {}).get("requests") or []:
                if "exactly" in r:
                    r["exactly"] = unname(r["exactly"])
                if r.get("firstAvailable"):
                    r["firstAvailable"] = [unname(x) for x in r["firstAvailable"]]
            got = self._allocation_signature[sig] = json.dumps(spec, sort_keys=True)
        return got

    def commit(self, key: str, result: AllocationResult, node: str) -> None:
        """Record the allocation in the shared device state."""
        self.allocations[key] = (result, node)
        for r in result.devices.results:
            did = (r.driver, r.pool, r.device)
            consumed = {n: _q(v) for n, v in (r.consumed_capacity or {}).items()}
            self.cluster.allocated.add_result(
                key, did, admin=bool(r.admin_access), share=bool(r.share_id), consumed=consumed
            )

    def release(self, key: str) -> None:
        result, node = self.allocations.pop(key)
        for r in result.devices.results:
            did = (r.driver, r.pool, r.device)
            consumed = {n: _q(v) for n, v in (r.consumed_capacity or {}).items()}
            self.cluster.allocated.remove_result(
                key, did, admin=bool(r.admin_access), share=bool(r.share_id), consumed=consumed
            )


def _q(v: str):
    from draopt.kube.quantity import Quantity

    return Quantity.parse(v).value


def prioritized_score(problem, selected: dict[tuple[int, int], int]) -> int:
    score = 0
    for claim in problem.claims:
        for ri, group in enumerate(claim.requests):
            if group.has_subrequests:
                score += MAX_SUBREQUEST_SCORE - selected.get((claim.index, ri), 0)
    return score


# Reasons that depend on the node and on what the allocator sees of the pod's claims only (not on
# class names, claim names or texts): the scheduler shares them between pods of alike kinds.
_SHAREABLE = (
    "Insufficient ",
    "Too many pods",
    "node(s) were unschedulable",
    "node(s) didn't match Pod's node affinity/selector",
    "node(s) had untolerated taint(s)",
)


def shareable_reason(reason: str | None) -> bool:
    """try_node's answer `reason` (None: fits) is the same for every pod of an alike kind."""
    if reason is None or reason == NO_FIT:
        return True
    return reason.startswith(_SHAREABLE) and not reason.endswith("(node-allocatable resources of devices)")


def _scheduling_constraints(pod) -> str:
    """A pod's node affinity, tolerations and scheduler, as a key (pods alike in these fail alike)."""
    spec = pod.pod.spec
    extra = spec.__pydantic_extra__
    name = extra.get("schedulerName") if extra else None
    scheduler = "" if name is None or name == DEFAULT_SCHEDULER_NAME else f"\x00scheduler={name}"
    if spec.affinity is None and not spec.tolerations:
        return scheduler
    return (
        json.dumps(
            [spec.affinity.to_k8s() if spec.affinity else None, [t.to_k8s() for t in spec.tolerations]], sort_keys=True
        )
        + scheduler
    )


def _plus(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def device_resources(cluster: Cluster, book: ClaimBook, pod, node: NodeState, new) -> dict:
    """Node-allocatable resources the pod's devices add (DRANodeAllocatableResources): a
    device's mapping counts once, for the claim that allocates it; overhead for every pod;
    nothing for a resource the pod's pod-level requests set (see device_demand)."""
    return device_demand(cluster, book, pod, node, new, filtering=False)[0]


def device_demand(
    cluster: Cluster, book: ClaimBook, pod, node: NodeState, new, *, filtering: bool = True
) -> tuple[dict, str | None]:
    """(device_resources, None), or ({}, why the pod cannot run with these devices at all:
    a mapped claim another pod holds, or pod-level requests below what the devices map).
    Not `filtering` (accounting for a placed pod): never a reason, and the devices' amounts
    counted in full when pod-level requests do not cover them."""
    if not cluster.features.node_allocatable_resources:
        return {}, None
    from draopt.kube.node_allocatable import has_mapping, node_allocatable_demand, pod_level_footprint
    from draopt.kube.workload import containers_referencing

    out: dict = {}
    by_claim = {}
    if new is not None:
        problem, chosen = new
        for claim, picks in zip(problem.claims, chosen):
            by_claim[claim.key] = [
                (c.device.device, {n: q.value for n, q in (c.consumed or {}).items()} or None, True) for c in picks
            ]
    inv = cluster.inventory(node)
    for use in pod.claims:
        if use.key not in by_claim:
            alloc = book.allocation(use.key)
            if alloc is None:
                continue
            devs = []
            for r in alloc.devices.results:
                entry = inv.by_id.get((r.driver, r.pool, r.device))
                if entry is not None:
                    consumed = {n: _q(v) for n, v in (r.consumed_capacity or {}).items()} or None
                    devs.append((entry.device, consumed, False))
            by_claim[use.key] = devs
            if filtering and _held_by_another_pod(book, use.key, pod) and any(has_mapping(d) for d, _, _ in devs):
                # validateNodeAllocatableDRAClaimSharing (DynamicResources, 1.36)
                return {}, (
                    f"node allocatable resource claim {book.claims[use.key].name} has a mapped device "
                    f"and cannot be shared across pods"
                )
        n_containers = containers_referencing(pod.pod, use.name)
        for device, consumed, mapped in by_claim[use.key]:
            if device.node_allocatable_resources:
                for k, v in node_allocatable_demand(device, pod, n_containers, consumed, mapping=mapped).items():
                    out[k] = out.get(k, 0) + v
    covered, why = pod_level_footprint(pod, out)
    if why is not None and not filtering:
        return out, None
    return covered, why


def _device_plugin_serves_any(cluster: Cluster, workload) -> bool:
    """Some node's device plugin serves a pending pod's DRA-backed extended resource."""
    names = {r for d in workload.pending for r in d.extended_resources}
    return bool(names) and any(n.allocatable.get(r, 0) > 0 for n in cluster.nodes for r in names)


def _held_by_another_pod(book: ClaimBook, key: str, pod) -> bool:
    """Allocated in this run (for a pod placed before this one), or reserved for another pod."""
    if key in book.allocations:
        return True
    me = f"pods/{pod.pod.name}"
    return any(f"{r.resource}/{r.name}" != me for r in book.claims[key].status.reserved_for or [])


def _devices_short(node: NodeState, pod, extra: dict, why: str | None) -> str | None:
    if why is not None:
        return why
    short = node.fits(_plus(pod.resources, extra)) if extra else None
    return None if short is None else f"Insufficient {short} (node-allocatable resources of devices)"


def insufficient(short: str) -> str:
    """NodeResourcesFit's reason for a resource the node lacks (the pod count: "Too many pods")."""
    return "Too many pods" if short == "pods" else f"Insufficient {short}"


def node_level_reason(cluster: Cluster, node: NodeState, pod) -> str | None:
    """The reason of the filters kube-scheduler runs first (NodeUnschedulable, TaintToleration,
    NodeAffinity, NodeResourcesFit), or None."""
    pod = pod_on(node, pod)
    rejected = cluster.node_rejects(node, pod)
    if rejected is not None:
        return rejected
    short = node.fits(pod.resources)
    return None if short is None else insufficient(short)


def node_filter(cluster: Cluster, book: ClaimBook, pod, node: NodeState) -> str | None:
    """The node filters that need no device allocation: the scheduler's node filters, node
    resources, and the node selectors of the pod's claims that are allocated already."""
    pod = pod_on(node, pod)
    rejected = node_level_reason(cluster, node, pod)
    if rejected is not None:
        return rejected
    for use in pod.claims:
        alloc = book.allocation(use.key)
        if (
            alloc is not None
            and alloc.node_selector is not None
            and not node_selector_matches(alloc.node_selector, node.node)
        ):
            return "node(s) did not match the allocation of a resource claim"
    return None


def pending_claims(book: ClaimBook, pod) -> list[str]:
    """The pod's claims that still need an allocation, each once, in the pod's order."""
    todo: list[str] = []
    for use in pod.claims:
        if book.allocation(use.key) is None and use.key not in todo:
            todo.append(use.key)
    return todo


# Nodes before a kind's frontier (each rejected a pod of the kind, and nodes only fill up until a
# release) are not filtered again for later pods of the kind, except for their reasons when a pod
# fits nowhere (frontier_reasons). Off: every node is filtered for every pod (tests compare).
KIND_FRONTIERS = True


def frontier_reasons(skipped: dict | None, nodes, below: int, try_fn, generic, keys, keep=None) -> Counter:
    """Why the nodes before a kind's frontier (index < `below`) reject a pod of the kind now, for
    a pod that fits nowhere. They rejected the kind when the frontier passed them and still do
    (nodes only fill up until something is released, which resets the frontiers), but the filter
    that rejects first may have changed: a node whose devices ran out may be short of cpu now,
    and Kubernetes filters every node again for each pod. A node that changed since its reason
    was kept is filtered again (`try_fn`, reasons made generic by `generic(reason, keys)`); its
    new reason is kept when `keep(reason)` allows (default: always). `skipped`: node index ->
    (node version, generic reason), as the filter loops keep them."""
    out: Counter = Counter()
    if not skipped:
        return out
    for idx, (version, reason) in skipped.items():
        if idx >= below:
            continue  # passed during this cycle: the loop counted it
        node = nodes[idx]
        if node.version != version:
            now, _ = try_fn(node)
            if now is not None:  # (None cannot happen while nodes only fill up: kept as it was)
                now = generic(now, keys)
                if keep is None or keep(now):
                    skipped[idx] = (node.version, now)
                reason = now
        out[reason] += 1
    return out


def filter_reason(cluster: Cluster, book: ClaimBook, pod, node: NodeState) -> str | None:
    """Why the scheduler's filters reject the pod on the node, or None (explain's node check)."""
    return try_node(cluster, book, pod, node, {}, None)[0]


def try_node(cluster: Cluster, book: ClaimBook, pod, node: NodeState, cache: dict, share_id) -> tuple[str | None, Any]:
    """Filter one node for one pod. Returns (None, (problem, chosen, selected, score)) when the
    pod fits, else (reason, None)."""
    # node_filter and pending_claims in one pass over the pod's claims (this runs for every node
    # a pod is filtered on): the same answers, each claim's allocation looked up once.
    pod = pod_on(node, pod)
    rejected = cluster.node_rejects(node, pod)
    if rejected is not None:
        return rejected, None
    short = node.fits(pod.resources)
    if short is not None:
        return insufficient(short), None
    todo: list[str] = []
    for use in pod.claims:
        alloc = book.allocation(use.key)
        if alloc is None:
            if use.key not in todo:
                todo.append(use.key)
        elif alloc.node_selector is not None and not node_selector_matches(alloc.node_selector, node.node):
            return "node(s) did not match the allocation of a resource claim", None
    if not todo:
        reason = _devices_short(node, pod, *device_demand(cluster, book, pod, node, None))
        if reason is not None:
            return reason, None
        return None, (None, None, {}, 0)
    quick = cluster.incremental and not cluster.features.node_allocatable_resources
    if quick:
        # This pod was just found to fit on a node sharing this node's devices, and nothing was
        # allocated since: the same devices (the answer names no node; see _reuse).
        got = cache.get(SHARED_FIT)
        if (
            got is not None
            and got[0] is pod
            and got[1] == cluster.allocated.version
            and got[2] is cluster.inventory(node).memo
        ):
            return None, got[3]
    known = book._signature
    sig = (tuple([known.get(k) or book.signature(k) for k in todo]), node.name)
    if cluster.features.node_allocatable_resources:
        sig += (tuple(sorted(pod.resources.items())),)
    hit = cache.get(sig)
    if hit is not None and hit[0] == node.version:
        reason, fit = hit[1]
        return (_specific(reason, todo) if reason is not None else None), fit
    inventory = cluster.inventory(node)
    if cluster.incremental:
        # A success for claims the allocator sees alike (same specs, classes by their selectors),
        # with nothing changed on the node since - or found on another node sharing this node's
        # inventory, with the allocated state unchanged: the allocator would choose the same
        # devices again.
        alike = tuple([book.allocation_signature(k) for k in todo])
        own = ("ok", alike, node.name) + sig[2:]
        group = ("shared", alike, id(inventory.memo)) + sig[2:]
        hit = cache.get(("full",) + own[1:])
        if hit is not None and hit[0] == node.version:
            return NO_FIT, None  # alike claims found no devices here, and nothing changed since
        for key, version in ((own, node.version), (group, cluster.allocated.version)):
            hit = cache.get(key)
            if hit is not None and hit[0] == version:
                got = _reuse(cluster, book, pod, node, todo, hit[2], hit[1], cache, sig, inventory)
                if got is not None:
                    return got
    try:
        claims = [book.claims[k] for k in todo]
        prepared = cache.get(("prepared", sig[0], id(inventory))) if cluster.incremental else None
        if prepared is not None and prepared[0] is inventory:
            # Claims with these specs were prepared on this inventory before: the same requests
            # (and what the problem learnt of its devices), rebound to this pod's claims.
            problem = _rebind(prepared[1], claims)
        else:
            problem = prepare(claims, inventory, cluster.classes, cluster.features, cluster.cel_env, cluster.expr_cache)
            if cluster.incremental:
                cache[("prepared", sig[0], id(inventory))] = (inventory, problem)
        ref = ReferenceAllocator(
            problem, kubernetes_defects=True, node_limit=SEARCH_LIMIT, shape=sig[0] if cluster.incremental else None
        )
        chosen = ref.allocate()
    except AllocationError as e:
        answer = (f"resource claim error: {e}", None)
    except SearchLimit:
        answer = ("device allocation timed out", None)
    else:
        if chosen is None:
            answer = (NO_FIT, None)
        else:
            reason = _devices_short(node, pod, *device_demand(cluster, book, pod, node, (problem, chosen)))
            if reason is not None:
                answer = (reason, None)
            else:
                answer = (None, (problem, chosen, ref.selected_sub, prioritized_score(problem, ref.selected_sub)))
    if answer[0] is not None:
        cache[sig] = (node.version, (_generic(answer[0], todo), None))
        if answer[0] is NO_FIT and cluster.incremental:
            cache[("full",) + own[1:]] = (node.version,)
    elif cluster.incremental:
        cache[own] = (node.version, sig[0], answer[1])
        cache[group] = (cluster.allocated.version, sig[0], answer[1])
        if quick and _names_no_node(answer[1][1]):
            cache[SHARED_FIT] = (pod, cluster.allocated.version, inventory.memo, answer[1])
    return answer


class SharedDevices:
    """What the scheduler's filter loop may know of try_node's cache (draopt.scheduler.scan):
    a node's device group (its inventory's memo: nodes sharing one inventory reach the
    same devices) and, for a pod, the fit try_node gives it on every node of a group without a
    search (SHARED_FIT: found with the allocated devices as they are, naming no node)."""

    def __init__(self, cluster: Cluster, cache: dict):
        self.cluster = cluster
        self.cache = cache

    def memo(self, node: NodeState):
        return self.cluster.inventory(node).memo

    def current(self, pod):
        """(group memo, fit) for `pod` now, or None."""
        got = self.cache.get(SHARED_FIT)
        if got is None or got[0] is not pod or got[1] != self.cluster.allocated.version:
            return None
        return got[2], got[3]


def _names_no_node(chosen) -> bool:
    """Decoding reads the node only for node-local or node-binding devices."""
    return not any(c.device.slice.spec.node_name or c.device.device.binds_to_node for cl in chosen for c in cl)


def _reuse(
    cluster: Cluster,
    book: ClaimBook,
    pod,
    node: NodeState,
    todo: list[str],
    fit,
    specs: tuple,
    cache: dict,
    sig,
    inventory,
) -> tuple[str | None, Any] | None:
    """A cached successful allocation (found for claims with the specs `specs`, maybe on another
    node sharing this node's devices) for this pod on this node, with the checks a fresh search
    makes after the allocator; None if it does not apply after all (then search)."""
    problem, chosen, selected, score = fit
    claims = [book.claims[k] for k in todo]
    # What is prepared for this pod lives while its nodes are filtered (the next pod replaces it).
    slot = cache.get("this pod")
    if slot is None or slot[0] != todo:
        slot = cache["this pod"] = (list(todo), {})
    mine = slot[1]
    if specs == sig[0]:
        if inventory is not problem.inventory and _names_no_node(chosen):
            # Found on another node sharing these devices: the result names no node, so one
            # rebinding per pod does.
            got = mine.get(id(problem))
            if got is None or got[0] is not problem:
                got = mine[id(problem)] = (problem, _rebind(problem, claims))
                if not cluster.features.node_allocatable_resources:
                    cache[SHARED_FIT] = (
                        pod,
                        cluster.allocated.version,
                        inventory.memo,
                        (got[1], chosen, selected, score),
                    )
            problem = got[1]
        else:
            problem = _rebind(problem, claims, inventory)
    else:
        # Alike for the allocator only (other class names): the same devices, under this pod's
        # own requests (classes, config), prepared once per pod (again per node only for
        # requests of all devices, which prepare() lists from the node's inventory).
        got = mine.get("prepared")
        fresh = by_key = None
        if got is not None:
            fresh, by_key, lists_devices = got
            if fresh.inventory is not inventory:
                fresh = None if lists_devices else _rebind(fresh, claims, inventory)
        if fresh is None:
            # Claims with these specs were prepared before, for an earlier pod (requests without
            # a device list: what prepare() gives depends on the specs only): the same requests,
            # rebound to this pod's claims and this node's view of the devices.
            earlier = cache.get(("alike prepared", sig[0]))
            if earlier is not None:
                fresh = _rebind(earlier[0], claims, inventory)
                by_key = earlier[1]
            else:
                try:
                    fresh = prepare(
                        claims, inventory, cluster.classes, cluster.features, cluster.cel_env, cluster.expr_cache
                    )
                except AllocationError:
                    return None
                by_key = {r.key: r for c in fresh.claims for g in c.requests for r in g.alternatives}
                if not any(r.mode == "All" for r in by_key.values()):
                    cache[("alike prepared", sig[0])] = (fresh, by_key)
            mine["prepared"] = (fresh, by_key, any(r.mode == "All" for r in by_key.values()))
        chosen = [[Chosen(by_key[c.request.key], c.device, c.consumed) for c in picks] for picks in chosen]
        problem = fresh
    reason = _devices_short(node, pod, *device_demand(cluster, book, pod, node, (problem, chosen)))
    if reason is not None:
        cache[sig] = (node.version, (_generic(reason, todo), None))  # as a fresh search would
        return reason, None
    return None, (problem, chosen, selected, score)


def reuse_fit(cluster: Cluster, book: ClaimBook, pod, node: NodeState, fit):
    """The fit try_node gives `pod` on `node` when it gave `fit` there to a pod whose pending
    claims have the same specs (in the same order, each once), and the node has not changed
    since (the scheduler's table says so): `fit`'s devices under this pod's claims, as _reuse
    rebinds them. Only without node-allocatable resources (no further check after the search)."""
    problem, chosen, selected, score = fit
    if problem is None:
        return fit  # no claims to allocate: nothing of the pod's own in it
    claims = [book.claims[u.key] for u in pod.claims]
    inventory = cluster.inventory(node)
    if inventory is not problem.inventory and _names_no_node(chosen):
        problem = _rebind(problem, claims)
    else:
        problem = _rebind(problem, claims, inventory)
    return problem, chosen, selected, score


def _rebind(problem, claims, inventory=None):
    """The solved problem with another pod's claims (same specs) in place of its own, on
    `inventory` (another node's view of the same devices) if given: decoding and node-allocatable
    resources then name the new claims and node; requests and devices are shared."""
    same_inventory = inventory is None or inventory is problem.inventory
    if same_inventory and all(c.claim is new for c, new in zip(problem.claims, claims)):
        return problem
    out = Problem.__new__(Problem)
    out.__dict__.update(problem.__dict__)
    out.claims = [ClaimSpec(c.index, new, c.requests, c.constraints) for c, new in zip(problem.claims, claims)]
    if not same_inventory:
        out.inventory = inventory
        if inventory.devices is not problem.inventory.devices:
            # (nothing searches a rebound problem today; a search on it must not read them)
            out.forget_device_answers()
    return out


def _generic(text: str, keys: list[str]) -> str:
    """`text` with the claim keys replaced by their positions: cached answers are shared by pods
    whose claims look alike, and each pod's message must name its own claims."""
    for i, k in enumerate(keys):
        if k in text:  # (most reasons name no claim: no regex for them)
            text = re.sub(rf"(?<![\w./-]){re.escape(k)}(?![\w.-])", f"\x00{i}\x00", text)
    return text


def _specific(text: str, keys: list[str]) -> str:
    """The inverse of :func:`_generic` for another pod's claims (in the same positions)."""
    if "\x00" not in text:
        return text
    for i, k in enumerate(keys):
        text = text.replace(f"\x00{i}\x00", k)
    return text


EXPLAIN_NODES = 5  # nodes a failed pod's device-side explanation covers

# (cluster, book, pod, the reasons the pod failed with) -> the explanation's text
FailureExplainer = Callable[[Cluster, "ClaimBook", Any, list], str]


def simulate(
    cluster: Cluster,
    workload,
    *,
    share_id=None,
    explain_failures: FailureExplainer | None = None,
    scheduler=None,
    preemption=None,
) -> PlacementResult:
    """Place workload.pending in queue order; returns what Kubernetes would do.

    `explain_failures(cluster, book, pod, reasons)`: the device-side explanation of a pod that
    did not fit, in the state that made it fail (draopt.allocation.explain.explain_failed_pod,
    passed in by the layers above); None: the reasons alone.

    `scheduler` (a draopt.scheduler.Scheduler): kube-scheduler's node choice with a profile
    (score plugins, percentageOfNodesToScore, random ties); None: every node is filtered and
    the node with the best DRA score is taken, the first by name on ties.

    `preemption` (draopt.scheduler.preemption.Preemption, passed in by the layers above): the
    PostFilter that evicts lower-priority running pods for a pod, or for a PodGroup once its
    last pod was tried, that fits nowhere; None: no preemption."""
    from draopt.dra.decode import decode, deterministic_share_id

    share_id = share_id or deterministic_share_id
    t0 = time.perf_counter()
    book = ClaimBook(cluster, workload.claims)
    # Generated claims' signatures, computed once per ResourceClaimTemplate by the expansion.
    book._signature.update(getattr(workload, "spec_texts", None) or {})
    cache: dict = {}
    # try_node's shared-devices answers, for the scheduler's filter loop (quick path only)
    # (not where a device plugin serves some pod's extended resources on some nodes: nodes that
    # share devices may then differ in what they ask of them)
    shared = (
        SharedDevices(cluster, cache)
        if cluster.incremental
        and not cluster.features.node_allocatable_resources
        and not _device_plugin_serves_any(cluster, workload)
        else None
    )
    explained: dict[tuple, str] = {}
    by_pod: dict[str, PodPlacement] = {}
    demand_of = {p.key: p for p in workload.pending}

    def kind(pod):
        """Pods of one kind fail on the same nodes; None when the pod uses an allocated claim."""
        if any(book.allocation(u.key) is not None for u in pod.claims):
            return None
        return (
            tuple([book.signature(u.key) for u in pod.claims]),
            # amounts as (numerator, denominator): the same kinds, and the key, looked up several
            # times per cycle, hashes without Fraction.__hash__
            tuple(sorted([(r, (v.numerator, v.denominator)) for r, v in pod.resources.items()])),
            tuple(sorted(pod.node_selector.items())),
            _scheduling_constraints(pod),
            # (which names a device plugin may serve instead: DRA's claim alone does not say)
            tuple(sorted(pod.extended_resources)),
        )

    # While nodes only fill up, a node that rejected a kind of pod rejects it again: each kind
    # remembers the first node still worth trying (reset whenever something is released).
    first_open: dict = {}
    skipped_reasons: dict = {}
    taken: dict = {}  # pod -> node resources it holds (requests plus device-derived)
    shared_of: set = set()  # placed pods whose devices other nodes reach too
    group_domain: dict[str, frozenset] = {}  # PodGroup -> the nodes of the placement it was bound to
    indexes_of: dict[frozenset, list[int]] = {}
    users_of: dict[str, list[str]] = {}  # claim -> pending pods using it (retract's heirs)

    def placement_indexes(allowed: frozenset) -> list[int]:
        got = indexes_of.get(allowed)
        if got is None:
            got = indexes_of[allowed] = sorted(cluster.by_name[n].index for n in allowed)
        return got

    # The scheduler reuses a kept fit for the node it chose (see Scheduler.select) only where
    # try_node's cached successes apply: incremental, and no node-allocatable check to redo.
    reuse = cluster.incremental and not cluster.features.node_allocatable_resources

    def place(pod, only: NodeState | None = None, allowed: frozenset | None = None) -> PodPlacement:
        """`only`: the one node to try (the node preemption nominated, which the scheduler's next
        cycle tries first and takes when it passes the filters). `allowed`: the nodes of the pod
        group's placement (podgroup_placement); default: the placement its group was bound to."""
        pl = PodPlacement(pod.key, None, pod.priority, pod.group)
        best = None
        max_score = None
        if allowed is None and pod.group in group_domain:
            allowed = group_domain[pod.group]
        sig = kind(pod) if only is None and allowed is None else None
        alike = None
        if (
            sig is not None
            and scheduler is not None
            and cluster.incremental
            and not cluster.features.node_allocatable_resources
        ):
            # The kind as the allocator sees it (classes by their selectors): alike kinds get the
            # same answer from a node (try_node's cache says so for the devices).
            alike = (tuple([book.allocation_signature(u.key) for u in pod.claims]),) + sig[1:]
        keys = [u.key for u in pod.claims]
        start = first_open.get(sig, 0) if sig is not None and KIND_FRONTIERS else 0
        if only is not None:
            start = len(cluster.nodes)
        elif scheduler is not None:
            if allowed is not None:  # a pod group's placement: its nodes only
                found = scheduler.select_within(
                    pod,
                    placement_indexes(allowed),
                    lambda node: try_node(cluster, book, pod, node, cache, share_id),
                    pl,
                )
            else:
                refit = (lambda node, fit: reuse_fit(cluster, book, pod, node, fit)) if reuse else None
                found = scheduler.select(
                    pod,
                    lambda node: try_node(cluster, book, pod, node, cache, share_id),
                    pl,
                    sig,
                    first_open,
                    skipped_reasons,
                    _generic,
                    _specific,
                    alike,
                    shared,
                    refit,
                )
            if found is not None:
                node, (problem, chosen, selected, score) = found
                best = (node, score, problem, chosen, selected)
            start = len(cluster.nodes)  # the loop below is draopt's own node choice
        skipped_below = start if start and scheduler is None and only is None else 0  # (read on failure)
        contiguous = True
        if only is not None:
            candidates = [only]
        elif allowed is not None:
            candidates = [cluster.nodes[i] for i in placement_indexes(allowed)] if start < len(cluster.nodes) else []
        else:
            candidates = cluster.nodes[start:]
        for node in candidates:
            if allowed is not None and node.name not in allowed:
                continue
            reason, fit = try_node(cluster, book, pod, node, cache, share_id)
            if reason is not None:
                pl.reasons[reason] += 1
                if contiguous and sig is not None:
                    first_open[sig] = node.index + 1
                    skipped_reasons.setdefault(sig, {})[node.index] = (node.version, _generic(reason, keys))
                continue
            contiguous = False
            problem, chosen, selected, score = fit
            if max_score is None:
                max_score = MAX_SUBREQUEST_SCORE * sum(
                    1 for c in (problem.claims if problem else []) for g in c.requests if g.has_subrequests
                )
            if best is None or score > best[1]:
                best = (node, score, problem, chosen, selected)
            if score >= max_score:
                break
        if best is None:
            if skipped_below:
                fresh = frontier_reasons(
                    skipped_reasons.get(sig),
                    cluster.nodes,
                    skipped_below,
                    lambda node: try_node(cluster, book, pod, node, cache, share_id),
                    _generic,
                    keys,
                )
                pl.reasons.update({_specific(r, keys): n for r, n in fresh.items()})
            if not cluster.nodes:
                pl.reasons["no Node objects in the input"] += 1
            if explain_failures is not None and any(
                r.startswith(("cannot allocate", "resource claim error")) for r in pl.reasons
            ):
                # Explain the device side now, in the state that made it fail; once per kind of
                # pod (same claims), which keeps large simulations fast.
                sig = tuple(book.signature(u.key) for u in pod.claims)
                if sig not in explained:
                    explained[sig] = (pod.key, _generic(explain_failures(cluster, book, pod, list(pl.reasons)), keys))
                first, text = explained[sig]
                text = _specific(text, keys)
                pl.explanation = (
                    text
                    if first == pod.key or not text
                    else f"(as for {first}, the first pod like it that failed)\n{text}"
                )
            return pl
        node, score, problem, chosen, selected = best
        pl.node, pl.prioritized_score = node.name, score
        pl.reasons.clear()
        touched_shared = False
        if problem is not None:
            results = decode(problem, chosen, selected, share_id)
            for claim, result in zip(problem.claims, results):
                pl.new_claims[claim.key] = result
                book.commit(claim.key, result, node.name)
            # Devices other nodes can reach too (allNodes, node selectors) change their answers.
            touched_shared = any(c.device.slice.spec.node_name != node.name for cl in chosen for c in cl)
        on_node = pod_on(node, pod)
        taken[pod.key] = _plus(
            on_node.resources,
            device_resources(cluster, book, on_node, node, (problem, chosen))
            if problem is not None
            else device_resources(cluster, book, on_node, node, None),
        )
        node.take(taken[pod.key])
        if scheduler is not None:
            scheduler.placed(pod, node, taken[pod.key])
        if touched_shared:
            cluster.bump_all()
            shared_of.add(pod.key)
        return pl

    def _changed(devices: bool) -> None:
        """Preemption took pods off or put them back: what first-fit remembers is stale."""
        if devices:
            cluster.bump_all()
        first_open.clear()
        skipped_reasons.clear()
        explained.clear()  # explanations of earlier failures describe the state before

    def retract(pl: PodPlacement) -> None:
        """Take a placed pod back, exactly (a pod-group cycle's trial of one placement)."""
        pod = demand_of[pl.pod]
        node = cluster.by_name[pl.node]
        if not users_of:
            for d in workload.pending:
                for u in d.claims:
                    users_of.setdefault(u.key, []).append(d.key)
        for key, result in pl.new_claims.items():
            heir = next(
                (by_pod[u] for u in users_of.get(key, ()) if u in by_pod and by_pod[u] is not pl and by_pod[u].placed),
                None,
            )
            if heir is not None:
                heir.new_claims[key] = result
            else:
                book.release(key)
        if scheduler is not None:
            scheduler.placed(pod, node, taken[pod.key], -1)
        node.take(taken.pop(pod.key), -1)
        if pod.key in shared_of:
            shared_of.discard(pod.key)
            cluster.bump_all()
        first_open.clear()
        skipped_reasons.clear()
        pl.node, pl.new_claims = None, {}

    def unplace(pl: PodPlacement) -> None:
        pod = demand_of[pl.pod]
        node = cluster.by_name[pl.node]
        pl_node = pl.node
        for key, result in pl.new_claims.items():
            # A claim that another placed pod uses stays allocated (its reservation remains);
            # that pod now holds the allocation.
            heir = next(
                (
                    other
                    for other in by_pod.values()
                    if other is not pl and other.placed and any(u.key == key for u in demand_of[other.pod].claims)
                ),
                None,
            )
            if heir is not None:
                heir.new_claims[key] = result
            else:
                book.release(key)
        if scheduler is not None:
            scheduler.placed(pod, node, taken[pod.key], -1)
        node.take(taken.pop(pod.key), -1)
        cluster.bump_all()
        first_open.clear()
        skipped_reasons.clear()
        pl.node, pl.new_claims = None, {}
        pl.reasons = Counter({"pod group could not be placed whole (minCount not reached)": len(cluster.nodes)})
        pl.explanation = (
            f"placed on {pl_node} first, then released: its PodGroup {pod.group} did not reach minCount "
            f"{workload.groups[pod.group].min_count}"
        )

    preempting = (
        preemption.start(cluster, workload, book, scheduler, place, unplace, by_pod, _changed)
        if preemption is not None
        else None
    )

    def skipped(pods: int, results: int) -> None:
        """A pod-group trial of `pods` pods that the TrialMemo answered: what placing and retracting
        them leaves besides (retract's resets, the counters that date the caches)."""
        first_open.clear()
        skipped_reasons.clear()
        if scheduler is not None:
            scheduler.epoch += 2 * pods
        cluster.allocated.version += 2 * results
        cluster.allocated.releases += results

    cycles = (
        GroupCycle(
            workload,
            cluster,
            lambda pod, allowed: place(pod, allowed=allowed),
            retract,
            set(demand_of),
            lambda key: book.allocation(key) is not None,
            skipped=skipped,
        )
        if needs_group_cycles(workload)
        else None
    )
    if cycles is not None and scheduler is not None and cluster.incremental and scheduler.prefer_nodes is None:
        cycles.memo = scheduler.trial_memo(book, cycles._shared_claims())
    cycle_failed: set[str] = set()  # groups a pod-group cycle left unscheduled (not tried again)
    released: set[str] = set()  # pods that fitted in their gang's trial, taken back with it

    def release_short_gang(key: str) -> bool:
        """A gang short of minCount (its running pods count) gives back what its pods took."""
        gang = workload.groups[key]
        placed = [by_pod[p] for p in gang.pods if p in by_pod and by_pod[p].placed]
        running = sum(1 for p in gang.pods if p not in demand_of)
        if gang.policy != "gang" or running + len(placed) >= gang.min_count:
            return False
        for pl in placed:
            released.add(pl.pod)
            unplace(pl)
        return True

    refused_groups: set[str] = set()
    members_of: dict[str, list] = {}
    for pod in workload.pending:
        if pod.group is not None:
            members_of.setdefault(pod.group, []).append(pod)

    def held_or_refused(group: str) -> bool:
        """A gang never popped for want of this scheduler's pods (draopt.cluster.podgroup_status)."""
        members = members_of[group]
        outside = [m.key for m in members if scheduler is not None and scheduler.profile(m) is None]
        why = never_popped(workload.groups[group], outside)
        if not why:
            return False
        refused_groups.add(group)
        for m in members:  # (another scheduler's pod: place() gives its reason)
            quiet = PodPlacement(m.key, None, m.priority, m.group, message="", explanation=why)
            by_pod[m.key] = place(m) if m.key in outside else quiet
        return True

    for pod in workload.pending:
        root = cycles.root_of(pod.group) if cycles is not None else None
        if root is not None:
            if pod.key not in by_pod:  # the root's first pod in queue order starts its cycle
                if root[0] == "pg" and held_or_refused(root[1]):
                    continue
                by_pod.update(run_group_cycle(cycles, root, group_domain, cycle_failed, len(cluster.nodes)))
            continue
        if pod.group is not None and pod.group in workload.groups:
            # The pod-group cycle (schedule_one_podgroup.go): the group's first pod in queue order
            # brings all its pending pods, tried one after the other; then the group's PostFilter;
            # a gang short of minCount is taken back at once, before any other pod is tried.
            if pod.key in by_pod or held_or_refused(pod.group):
                continue
            members = members_of[pod.group]
            for m in members:
                by_pod[m.key] = place(m)
            if preempting is not None:
                preempting.after(members[-1])
            release_short_gang(pod.group)
            continue
        by_pod[pod.key] = place(pod)
        if preempting is not None:
            preempting.after(pod)  # PostFilter: the pod, or its PodGroup once its last pod was tried
    # Gangs short of minCount hold nothing now; the others get a second chance.
    failed_gangs = set()
    for key, gang in workload.groups.items():
        if key in group_domain or key in refused_groups:  # (a cycle bound it: its running pods count)
            continue
        if release_short_gang(key):
            failed_gangs.add(key)
    failed_gangs |= cycle_failed
    if failed_gangs:
        for pod in workload.pending:
            pl = by_pod[pod.key]
            if not pl.placed and pod.group not in failed_gangs and pod.group not in refused_groups:
                by_pod[pod.key] = place(pod)
                if not by_pod[pod.key].placed:
                    by_pod[pod.key].preemption = pl.preemption  # what preemption said stays said
    word_group_members(
        workload,
        by_pod,
        released,
        failed_gangs - cycle_failed,
        lambda pod: (
            pod.group not in refused_groups
            and (cycles is None or cycles.root_of(pod.group) is None)
            and (scheduler is None or scheduler.profile(pod) is not None)  # (no profile: never tried)
        ),
        preempting.group_post_filter if preempting is not None else None,
        cluster,
    )
    elapsed = time.perf_counter() - t0
    pods = [by_pod[p.key] for p in workload.pending]
    stats = {
        "solve_s": round(elapsed, 3),
        "pods_per_s": round(len(pods) / elapsed, 1) if elapsed else None,
        "scheduler": scheduler.config.source if scheduler is not None else "builtin:name-order",
    }
    result = PlacementResult("first-fit", pods, dict(book.allocations), stats)
    if preempting is not None:
        preempting.finish(result)
    return result
