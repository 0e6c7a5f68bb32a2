"""First-fit's filter of one node for one pod (the scheduler's Filter stage with the first-fit
allocator), with the caches that let alike pods and nodes sharing devices skip the search; and
the claim book, which records what is allocated where (draopt.cluster.firstfit.simulate runs
the queue over these)."""

from __future__ import annotations


import json
import re
from collections import Counter
from typing import Any

from draopt.errors import AllocationError
from draopt.kube.models import AllocationResult, ResourceClaim
from draopt.kube.nodeselect import node_selector_matches
from draopt.dra.problem import ClaimSpec, prepare
from draopt.dra.reference import Chosen, ReferenceAllocator, SearchLimit
from draopt.cluster.state import DEFAULT_SCHEDULER_NAME, Cluster, NodeState, pod_on
from draopt.cluster.filter_error import allocator_error, raised_by_allocate, timed_out

MAX_SUBREQUEST_SCORE = 8
NO_FIT = "cannot allocate all claims"
UNAVAILABLE_CLAIM = "resourceclaim not available on the node"  # (an allocated claim's node selector)
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

    def know_signatures(self, workload) -> None:
        """The generated claims' signatures the workload's expansion computed once per
        ResourceClaimTemplate (`spec_texts`, where it has them): not computed again here."""
        self._signature.update(getattr(workload, "spec_texts", None) or {})

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
    return reason.startswith(_SHAREABLE) and not reason.endswith(_DEVICES_NOTES)


# A node's answer names every resource it lacks, as NodeResourcesFit (and DynamicResources' check
# of the devices' node-allocatable resources) does: one text, the reasons joined by ", " (no
# resource name or note below has a comma), each counted on its own in the FitError (counted_reasons).
_RESOURCE_REASONS = ("Insufficient ", "Too many pods")
# draopt's notes on DynamicResources' check (explain shows them, the pod's reasons do not): the
# second where the pod with its devices needs more than the node has even empty (Unresolvable)
DEVICES_NOTE = " (node-allocatable resources of devices)"
DEVICES_BEYOND_NODE = " (node-allocatable resources of devices: more than the node's allocatable)"
_DEVICES_NOTES = (DEVICES_NOTE, DEVICES_BEYOND_NODE)


def counted_reasons(reason: str) -> list[str]:
    """The reasons one node's answer adds to the pod's FitError histogram, in Kubernetes' words
    (a resource name has no space: what follows " (" is draopt's note)."""
    if not reason.startswith(_RESOURCE_REASONS):
        return [reason]
    return [r.partition(" (")[0] for r in reason.split(", ")]


def count_reason(into: Counter, reason: str, n: int = 1) -> None:
    """A node answer given by `n` nodes added to a pod's reasons (`into`), each of its reasons
    counted (framework.FitError)."""
    if reason.startswith(_RESOURCE_REASONS):
        for r in counted_reasons(reason):
            into[r] += n
    else:
        into[reason] += n


def count_reasons(into: Counter, reasons: dict) -> None:
    """`reasons` (a node answer -> how many nodes gave it) added to a pod's reasons (`into`)."""
    for reason, n in reasons.items():
        count_reason(into, reason, n)


def is_resource_reason(reason: str) -> bool:
    """A rejection of NodeResourcesFit (or of the devices' node-allocatable resources)."""
    return reason.startswith(_RESOURCE_REASONS)


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
    up_to_136 = cluster.features.node_allocatable_136
    if new is not None:
        problem, chosen = new
        for claim, picks in zip(problem.claims, chosen):
            by_claim[claim.key] = [
                (c.device.device, {n: q.value for n, q in (c.consumed or {}).items()} or None, True) for c in picks
            ]
    inv = cluster.inventory(node)
    unlisted: list[str] = []  # claims with a mapped device that no container lists
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
            if up_to_136:
                continue  # (1.36 counts the claims allocated in the pod's cycle only)
        n_containers = containers_referencing(pod.pod, use.name)
        if filtering and up_to_136 and not n_containers and any(has_mapping(d) for d, _, _ in by_claim[use.key]):
            unlisted.append(_claim_name_136(book, use))
        for device, consumed, mapped in by_claim[use.key]:
            if device.node_allocatable_resources:
                demand = node_allocatable_demand(
                    device, pod, n_containers, consumed, mapping=mapped, overhead=not up_to_136
                )
                for k, v in demand.items():
                    out[k] = out.get(k, 0) + v
    if unlisted:  # DynamicResources 1.36 (getPodNodeAllocatableResourceFootprint), the first claim by name
        return (
            {},
            f"claim {min(unlisted)}: node-allocatable resource claim not referenced by any container within the pod",
        )
    covered, why = pod_level_footprint(pod, out)
    if why is not None and not filtering:
        return out, None
    return covered, why


def _claim_name_136(book: ClaimBook, use) -> str:
    """The claim's name in 1.36's DynamicResources messages: the extended-resource claim, made in
    the pod's cycle, has the in-memory name "<extended-resources>"."""
    from draopt.kube.workload import EXTENDED_CLAIM_USE

    if use.name == EXTENDED_CLAIM_USE:
        return "<extended-resources>"
    return book.claims[use.key].name if use.key in book.claims else use.key.split("/", 1)[1]


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
    if not extra:
        return None
    demand = _plus(pod.resources, extra)
    if node.fits(demand) is None:
        return None
    note = DEVICES_BEYOND_NODE if node.exceeds_allocatable(demand) else DEVICES_NOTE
    return ", ".join(f"Insufficient {r}{note}" for r in node.shortfalls(demand))


def insufficient(node: NodeState, demand: dict) -> str | None:
    """NodeResourcesFit's reasons for the resources the node lacks (the pod count: "Too many
    pods"), or None when the demand fits."""
    if node.fits(demand) is None:
        return None
    return ", ".join("Too many pods" if r == "pods" else f"Insufficient {r}" for r in node.shortfalls(demand))


def node_level_reason(cluster: Cluster, node: NodeState, pod) -> str | None:
    """The reason of the filters kube-scheduler runs first (NodeUnschedulable, TaintToleration,
    NodeAffinity, NodeResourcesFit), or None."""
    pod = pod_on(node, pod)
    rejected = cluster.node_rejects(node, pod)
    if rejected is not None:
        return rejected
    return insufficient(node, pod.resources)


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
            return UNAVAILABLE_CLAIM
    return None


def pending_claims(book: ClaimBook, pod) -> list[str]:
    """The pod's claims that still need an allocation, each once, in the pod's order."""
    todo: list[str] = []
    for use in pod.claims:
        if book.allocation(use.key) is None and use.key not in todo:
            todo.append(use.key)
    return todo


def frontier_reasons(skipped: dict | None, nodes, below: int, try_fn, generic, keys, keep=None, first=None) -> Counter:
    """Why the nodes before a kind's frontier (index < `below`) reject a pod of the kind now, for
    a pod that fits nowhere. They rejected the kind when the frontier passed them and still do
    (nodes only fill up until something is released, which resets the frontiers), but the filter
    that rejects first may have changed: a node whose devices ran out may be short of cpu now,
    and Kubernetes filters every node again for each pod. A node that changed since its reason
    was kept is filtered again (`try_fn`, reasons made generic by `generic(reason, keys)`); its
    new reason is kept when `keep(reason)` allows (default: always). `skipped`: node index ->
    (node version, generic reason), as the filter loops keep them. `first(idx)`: the pod's filters
    that run before try_node's devices (PodTopologySpread, InterPodAffinity: the scheduler's), whose
    reason is the node's where they reject it (random scheduler seed 280 of 1.37)."""
    out: Counter = Counter()
    if not skipped:
        return out
    for idx, (version, reason) in skipped.items():
        if idx >= below:
            continue  # passed during this cycle: the loop counted it
        if first is not None and (theirs := first(idx)) is not None:
            out[theirs] += 1
            continue
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
    short = insufficient(node, pod.resources)
    if short is not None:
        return short, None
    todo: list[str] = []
    unavailable = False
    for use in pod.claims:
        alloc = book.allocation(use.key)
        if alloc is None:
            if use.key not in todo:
                todo.append(use.key)
        elif alloc.node_selector is not None and not node_selector_matches(alloc.node_selector, node.node):
            unavailable = True
    answer = _claims_fit(cluster, book, pod, node, cache, todo)
    if unavailable and answer[0] is None:
        # DynamicResources' Filter allocates the other claims (and checks their node-allocatable
        # resources) before it rejects a node an allocated claim is not available on
        return UNAVAILABLE_CLAIM, None
    return answer


def _claims_fit(cluster: Cluster, book: ClaimBook, pod, node: NodeState, cache: dict, todo: list[str]):
    """try_node after the node checks: the claims `todo` allocated on the node (none: the
    node-allocatable resources of the pod's allocated devices only)."""
    if not todo:
        reason = _devices_short(node, pod, *device_demand(cluster, book, pod, node, None))
        if reason is not None:
            return reason, None
        return None, (None, None, {}, 0)
    # The claims `todo` to allocate: a cached answer where one applies, else the allocator's
    # search (its answer cached). (One function with the filters above: it runs for every node
    # a pod is filtered on; bench_instructions counts each call.)
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
    sig: tuple = (tuple([known.get(k) or book.signature(k) for k in todo]), node.name)
    if cluster.features.node_allocatable_resources:
        sig += (tuple(sorted(pod.resources.items())),)
    hit = cache.get(sig)
    if hit is not None and hit[0] == node.version:
        reason, fit = hit[1]
        return (_specific(reason, todo) if reason is not None else None), fit
    inventory = cluster.inventory(node)
    own: tuple = ()
    group: tuple = ()
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
    return _search(cluster, book, pod, node, cache, todo, sig, inventory, own, group, quick)


def _search(
    cluster: Cluster,
    book: ClaimBook,
    pod,
    node: NodeState,
    cache: dict,
    todo: list[str],
    sig,
    inventory,
    own: tuple,
    group: tuple,
    quick: bool,
):
    """The allocator's search for the claims `todo` on the node (and the node-allocatable check
    after it): (reason, None) or (None, (problem, chosen, selected, score)); the answer kept for
    the next pods (see try_node's lookups: `own` and `group` are its keys)."""
    answer: tuple[str | None, Any]
    allocating = False
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
        allocating = True
        chosen = ref.allocate()
    except AllocationError as e:
        # Kubernetes' allocator errors are the Filter's Error status (draopt.cluster.filter_error);
        # the rest (a missing DeviceClass: PreFilter's) stay this node's rejection.
        if allocating or raised_by_allocate(e):
            answer = (allocator_error(e, cluster.features.version), None)
        else:
            answer = (f"resource claim error: {e}", None)
    except SearchLimit:
        answer = (timed_out(node.name), None)
    else:
        if chosen is None:
            answer = (NO_FIT, None)
        else:
            reason = _devices_short(node, pod, *device_demand(cluster, book, pod, node, (problem, chosen)))
            if reason is not None:
                answer = (reason, None)
            else:
                answer = (None, (problem, chosen, ref.selected_sub, prioritized_score(problem, ref.selected_sub)))
    # (kept here, not in a function of its own: this runs for every search)
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
    mine: dict = slot[1]
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
        fresh: Any = None
        by_key: Any = None
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
    # A shallow copy (the requests and device answers stay shared): Problem.__copy__ called
    # directly, as copy.copy's dispatch costs 1 % of first-fit's instructions here (bench_instructions).
    out = problem.__copy__()
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
