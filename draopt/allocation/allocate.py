"""The Python API: objects in, allocated ResourceClaims out.

objects = load_files(["cluster.yaml"])
outcome = allocate(objects, node="node-1")
outcome.claims   # ResourceClaims with status.allocation set
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

from draopt.cel import CelEnvironment  # (at import, not in the first call: every allocation evaluates CEL)
from draopt.dra.decode import decode, deterministic_share_id, random_share_id
from draopt.errors import AllocationError, DraoptError, InputError
from draopt.kube.admission import refused_objects, served_notes
from draopt.kube.features import Features
from draopt.dra.inventory import allocated_state, build_inventory, slices_by_node
from draopt.kube.loader import ObjectSet
from draopt.kube.models import AllocationResult, Node, ObjectMeta, ResourceClaim
from draopt.dra.problem import claim_key, prepare
from draopt.dra.reference import quick_first_fit
from draopt.model.single_node import solve_problem
from draopt.allocation.reuse import CALL_REUSE

POLICIES = ("first-fit", "first-fit-documented", "optimal")
MAX_PROBED = 16  # pending claims tried one by one to name the failing ones
ENGINES = ("cp-sat", "reference")


@dataclass
class AllocateOutcome:
    node: str | None
    # The claims allocated (status.allocation set): see `claims`. Given as the pending claims
    # and their results, the copies are made when `claims` is first read (the scheduler's
    # allocator returns the results alone; a caller reading only `results` makes no copies).
    pending: list[ResourceClaim]
    # The AllocationResults (see `results`), or the function that makes them from the devices
    # the search chose (draopt.dra.decode): they are made when `results` is first read, as the
    # claims' copies are when `claims` is (a caller that reads `allocated` alone, as a filter
    # does, makes none). None: unschedulable.
    found: list[AllocationResult] | Callable[[], list[AllocationResult]] | None
    reason_text: str = ""  # `reason` as far as it is worked out (see explain_together)
    stats: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # for the user (the CLI prints them on stderr)
    # The end of `reason` for claims allocated together: which fail alone. Worked out when
    # `reason` is first read, as it runs the search again per claim and Kubernetes' allocator
    # answers "unschedulable" alone.
    explain_together: Callable[[], str] | None = field(default=None, repr=False, compare=False)

    _claims: list[ResourceClaim] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def results(self) -> list[AllocationResult] | None:
        """The claims' AllocationResults, in the order of `pending` (None: unschedulable)."""
        found = self.found
        if callable(found):
            found = self.found = found()
        return found

    @property
    def claims(self) -> list[ResourceClaim]:
        """The claims allocated, each a copy of the pending claim with its allocation in its
        status ([] when nothing was allocated)."""
        if self._claims is None:
            results = self.results
            self._claims = _with_allocations(self.pending, results) if results else []
        return self._claims

    @property
    def reason(self) -> str:
        """Why nothing was allocated ("" when allocated)."""
        if self.explain_together is not None:
            self.reason_text += self.explain_together()
            self.explain_together = None
        return self.reason_text

    @property
    def allocated(self) -> bool:
        return self.found is not None


_CEL_ENVIRONMENTS: dict[bool, Any] = {}


def _cel_env(features: Features):
    """One CEL environment per process and list-type setting: compiled expressions are cached
    across allocations, as the scheduler's CEL cache does. It is primed when made (the
    library's first-use costs paid at set-up, as Kubernetes builds its CEL environment at
    start-up: not in the allocation that compiles the first expression)."""
    env = _CEL_ENVIRONMENTS.get(features.list_type_attributes)
    if env is None:
        env = CelEnvironment(list_type_attributes=features.list_type_attributes)
        env.prime()
        _CEL_ENVIRONMENTS[features.list_type_attributes] = env
    return env


_WARM_UP = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: draopt-warm-up}
spec:
  selectors: [{cel: {expression: 'device.driver == "warm-up.draopt.invalid"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: draopt-warm-up}
spec:
  driver: warm-up.draopt.invalid
  nodeName: draopt-warm-up
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices: [{name: d, attributes: {a: {int: 1}}, capacity: {c: {value: 1Gi}}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: draopt-warm-up, namespace: draopt-warm-up}
spec:
  devices:
    requests: [{name: r, exactly: {deviceClassName: draopt-warm-up}}]
"""


def warm_up() -> None:
    """One-time library set-up, outside any allocation's timing, as Kubernetes builds its CEL
    environment at start-up: the CEL environments, CP-SAT's and pydantic's first-call costs,
    exercised on a tiny built-in allocation (its own names; nothing of the input is compiled
    or cached). Compiling the input's CEL expressions stays part of each allocation."""
    from draopt.kube.loader import load_text

    for lists in (False, True):
        _cel_env(Features.from_gates({"DRAListTypeAttributes": lists}))
    allocate(load_text(_WARM_UP, "<warm-up>"), node="draopt-warm-up", features=Features.from_gates())


def select_claims(objects: ObjectSet, refs: list[str] | None) -> tuple[list[ResourceClaim], list[ResourceClaim]]:
    """(claims to allocate, claims in use). Default: every claim without status.allocation.

    A claim given again with status.allocation (draopt's own output read back) replaces the
    pending claim of the same namespace/name, wherever either comes in the input."""
    by_key: dict[str, ResourceClaim] = {}
    for c in objects.resource_claims:
        key = claim_key(c)
        prev = by_key.get(key)
        if prev is not None:
            if (prev.status.allocation is None) == (c.status.allocation is None):
                state = "pending" if c.status.allocation is None else "with status.allocation"
                raise InputError(
                    f"ResourceClaim {key}: given twice, both {state} (an allocated copy may "
                    f"replace a pending one, nothing else)"
                )
            if prev.status.allocation is not None:
                continue  # the allocated copy stays
        by_key[key] = c
    claims = list(by_key.values())
    if not refs:
        todo = [c for c in claims if c.status.allocation is None]
    else:
        todo = []
        named: set[str] = set()  # (by key: a claim compared by value is a deep comparison of its models)
        for ref in refs:
            key = ref if "/" in ref else f"default/{ref}"
            claim = by_key.get(key)
            if claim is None:
                raise InputError(f"--claim {ref}: no ResourceClaim {key} in the input")
            if claim.status.allocation is not None:
                raise InputError(f"--claim {ref}: ResourceClaim {key} already has status.allocation")
            if key in named:
                raise InputError(f"--claim {ref}: named twice")
            named.add(key)
            todo.append(claim)
    in_use = [c for c in claims if c.status.allocation is not None]
    return todo, in_use


def _candidate_nodes(objects: ObjectSet, node: str | None) -> list[Node | None]:
    if node:
        for n in objects.nodes:
            if n.name == node:
                return [n]
        if objects.nodes:
            raise InputError(
                f"--node {node}: no Node {node} in the input (nodes: {', '.join(n.name for n in objects.nodes)})"
            )
        return [Node(api_version="v1", kind="Node", metadata=ObjectMeta(name=node))]
    if not objects.nodes:
        return [None]
    ordered: list[Node] = sorted(objects.nodes, key=lambda n: n.name)
    return list[Node | None](ordered)


def allocate(
    objects: ObjectSet,
    *,
    node: str | None = None,
    claims: list[str] | None = None,
    features: Features | None = None,
    policy: str = "first-fit",
    engine: str = "cp-sat",
    deterministic_share_ids: bool = False,
    time_limit: float | None = None,
) -> AllocateOutcome:
    """Allocate the claims together on the node (or on the first node, by name, where they fit).

    A DraoptError raised here carries the timings an outcome has (`allocate_ms` included) in
    its `stats` attribute, so errors are timed like allocations (the CLI's --stats).

    What the call builds before its search (claims selected, inventories, prepared problems) is
    kept for the next call on the same objects (draopt.allocation.reuse): the objects read are
    not to be changed in place between calls (copy them, as draopt does, to edit them)."""
    start = time.perf_counter()
    stats: dict[str, Any] = {"build_ms": 0.0, "solve_ms": 0.0, "variables": 0, "constraints": 0}
    try:
        if policy not in POLICIES:
            raise InputError(f"--policy: unknown policy {policy!r} (known: {', '.join(POLICIES)})")
        if engine not in ENGINES:
            raise InputError(f"--engine: unknown engine {engine!r} (known: {', '.join(ENGINES)})")
        features = features or Features.from_gates()
        shared = CALL_REUSE.shared_for(objects, features, policy, engine)
        return _allocate(
            objects, node, claims, features, policy, engine, deterministic_share_ids, time_limit, stats, start, shared
        )
    except DraoptError as e:
        stats["allocate_ms"] = (time.perf_counter() - start) * 1000
        e.stats = stats
        raise


def _allocate(
    objects: ObjectSet,
    node: str | None,
    claims: list[str] | None,
    features: Features | None,
    policy: str,
    engine: str,
    deterministic_share_ids: bool,
    time_limit: float | None,
    stats: dict[str, Any],
    start: float,
    shared: dict,
) -> AllocateOutcome:
    """`shared`: what searches on the same input (this call's, the calls of _failing_claims,
    later calls on the same objects: draopt.allocation.reuse) can reuse: the claims selected
    (per list of claims and --claim names), each node's inventory (the claims in use are the
    same for every search on a `shared`), the prepared problem per node and claims, the
    selector results per expression and device, and the notes on objects the release does not
    serve."""
    features = features or Features.from_gates()
    plan = _call_plan(objects, node, claims, features, shared)
    todo, in_use = plan.todo, plan.in_use
    notes = list(plan.notes)
    if not todo:
        return _nothing_left(objects, node, notes, stats, start)
    reasons = []
    invalid_pools = False
    inventories, problems = shared["inventories"], shared["problems"]
    for candidate in plan.candidates:
        name = candidate.name if candidate is not None else None
        inventory = inventories.get(name)
        if inventory is None:
            inventory = inventories[name] = build_inventory(
                objects.resource_slices,
                candidate,
                in_use,
                features,
                objects.taint_rules,
                index=plan.index,  # (the same for every node tried, as plan.allocated)
                allocated=plan.allocated,
            )
        problem = problems.get((name, plan.todo_key))
        if problem is None:
            problem = _prepared(objects, todo, inventory, features, shared, (name, plan.todo_key))
        chosen, selected, run_stats = _solve(problem, policy, engine, time_limit)
        _add_run_stats(stats, run_stats)
        if chosen is None:
            invalid_pools = invalid_pools or bool(inventory.invalid_pools)
            reasons.append(_why_not_on(inventory, name))
            continue
        share = deterministic_share_id if deterministic_share_ids else random_share_id
        stats["allocate_ms"] = (time.perf_counter() - start) * 1000
        return AllocateOutcome(name, todo, partial(decode, problem, chosen, selected, share), stats=stats, notes=notes)
    reason = "; ".join(reasons)
    if invalid_pools:
        # Kubernetes reports this as an error when no node could take the claims.
        raise AllocationError(reason)
    if not objects.nodes and not node:
        reason += (
            " (no Node objects in the input: only devices of allNodes slices were tried; "
            "give the Nodes, e.g. `kubectl get nodes -o yaml`, or --node NAME)"
        )
    together = None
    if len(todo) > 1:
        given = copy.copy(objects)  # (the input as it is now, should the caller change it before reading)

        def together() -> str:
            return _failing_claims(given, todo, in_use, node, features, policy, engine, time_limit, shared)

    stats["allocate_ms"] = (time.perf_counter() - start) * 1000
    return AllocateOutcome(node, [], None, reason_text=reason, stats=stats, notes=notes, explain_together=together)


@dataclass
class _CallPlan:
    """What a call works out before its node loop, the same for every call with the same
    claims, --claim names and --node on a `shared` (kept there): the claims to allocate and in
    use, the notes, the slices by node, the devices in use, the nodes to try."""

    todo: list[ResourceClaim]
    in_use: list[ResourceClaim]
    notes: list[str]  # (a copy goes to each outcome)
    todo_key: tuple = ()
    index: dict[str, list[Any]] = field(default_factory=dict)
    allocated: Any = None
    candidates: list[Node | None] = field(default_factory=list)


def _call_plan(
    objects: ObjectSet, node: str | None, claims: list[str] | None, features: Features, shared: dict
) -> _CallPlan:
    """The call's _CallPlan, kept in `shared` (an InputError is raised again by the next call:
    nothing is kept for it). With no claim to allocate, the rest is not worked out (--node is
    not checked), as the call returns before it."""
    key = ("plan", tuple(map(id, objects.resource_claims)), tuple(claims) if claims else None, node)
    plan = shared.get(key)
    if plan is not None:
        return plan
    todo, in_use, notes = _claims_to_allocate(objects, claims, features, shared)
    plan = _CallPlan(todo, in_use, _served_notes(objects, features, shared) + notes)
    if todo:
        _device_classes(objects, shared)
        _cel_env(features)
        plan.index, plan.allocated = _slices_and_in_use(objects, in_use, features, shared)
        shared.setdefault("inventories", {})
        shared.setdefault("selector results", {})
        shared.setdefault("problems", {})
        shared.setdefault("refused problems", {})
        plan.todo_key = tuple(map(id, todo))
        plan.candidates = _candidates(objects, node, shared)
    shared[key] = plan
    return plan


def _prepared(
    objects: ObjectSet, todo: list[ResourceClaim], inventory: Any, features: Features, shared: dict, key: tuple
) -> Any:
    """The claims' problem on the node (draopt.dra.problem.prepare), kept in `shared` under `key`. A
    claim refused there (an AllocationError: a request, class or count Kubernetes' allocator
    refuses before its search) is refused again by the next call with the same message, without
    preparing again (the reasons depend on the claims, classes and gates alone)."""
    refused = shared["refused problems"]
    message = refused.get(key)
    if message is not None:
        raise AllocationError(message)
    try:
        problem = prepare(
            todo, inventory, _device_classes(objects, shared), features, _cel_env(features), shared["selector results"]
        )
    except AllocationError as e:
        if type(e) is AllocationError and len(e.args) == 1:  # (a subclass carries more than its message)
            refused[key] = e.args[0]
        raise
    shared["problems"][key] = problem
    return problem


def _claims_to_allocate(
    objects: ObjectSet, claims: list[str] | None, features: Features, shared: dict
) -> tuple[list[ResourceClaim], list[ResourceClaim], list[str]]:
    """(claims to allocate, claims in use, notes on the refused ones): select_claims, then
    _without_refused, kept in `shared` per list of claims and --claim names (an InputError is
    raised again by the next call: nothing is kept for it). The lists returned are not to be
    changed."""
    key = ("claims", tuple(map(id, objects.resource_claims)), tuple(claims) if claims else None)
    got = shared.get(key)
    if got is None:
        todo, in_use = select_claims(objects, claims)
        todo, notes = _without_refused(objects, todo, features, named=bool(claims))
        got = shared[key] = (todo, in_use, notes)
    return got


def _device_classes(objects: ObjectSet, shared: dict) -> dict[str, Any]:
    """The DeviceClasses by name (kept in `shared`)."""
    got = shared.get("classes")
    if got is None:
        got = shared["classes"] = {c.name: c for c in objects.device_classes}
    return got


def _candidates(objects: ObjectSet, node: str | None, shared: dict) -> list[Node | None]:
    """_candidate_nodes, kept in `shared` per --node (an InputError is raised again)."""
    got = shared.get(("candidates", node))
    if got is None:
        got = shared[("candidates", node)] = _candidate_nodes(objects, node)
    return got


def _slices_and_in_use(
    objects: ObjectSet, in_use: list[ResourceClaim], features: Features, shared: dict
) -> tuple[dict[str, list[Any]], Any]:
    """(the slices by node, the devices the claims in use hold), kept in `shared`."""
    index = shared.get("slice index")
    if index is None:
        index = shared["slice index"] = slices_by_node(objects.resource_slices)
    key = ("allocated", tuple(map(id, in_use)))
    allocated = shared.get(key)
    if allocated is None:
        allocated = shared[key] = allocated_state(in_use, features)
    return index, allocated


def _served_notes(objects: ObjectSet, features: Features, shared: dict) -> list[str]:
    """draopt.kube.admission.served_notes, once per call tree (kept in the call's `shared`: the
    recursive calls of _failing_claims read the same objects)."""
    got = shared.get("served notes")
    if got is None:
        got = shared["served notes"] = served_notes(objects, features.kubernetes_version)
    return got


_SUMMED_RUN_KEYS = frozenset(("build_ms", "solve_ms", "variables", "constraints"))
_LAST_RUN_KEYS = ("status", "replay", "replay_truncated")
_LAST_RUN_KEY_SET = frozenset(_LAST_RUN_KEYS)


def _add_run_stats(stats: dict[str, Any], run_stats: dict[str, Any]) -> None:
    """One node's search added to the call's figures (sizes and times summed, the last status)."""
    # (over the keys the run gives: Kubernetes' search, most runs, gives one of them; a figure it
    # does not give adds nothing)
    for k in _SUMMED_RUN_KEYS.intersection(run_stats):
        stats[k] += run_stats[k]
    if not _LAST_RUN_KEY_SET.isdisjoint(run_stats):
        for k in _LAST_RUN_KEYS:
            if k in run_stats:
                stats[k] = run_stats[k]


def _why_not_on(inventory, name: str | None) -> str:
    """Why the claims could not be allocated on the node."""
    if inventory.invalid_pools:
        return f"node {name}: invalid resource pools were encountered: " + "; ".join(
            f"{p.id}: {p.invalid_reason}" for p in inventory.invalid_pools
        )
    return f"node {name}: cannot allocate all claims" if name else "cannot allocate all claims"


def _nothing_left(objects: ObjectSet, node, notes: list[str], stats: dict[str, Any], start: float) -> AllocateOutcome:
    """No claim to allocate (none pending, or every pending one refused): said in the notes."""
    if not notes:
        _nothing_to_allocate(objects)
    stats["allocate_ms"] = (time.perf_counter() - start) * 1000
    return AllocateOutcome(
        node,
        [],
        [],
        stats=stats,
        notes=notes
        + [
            "nothing else to allocate"
            if notes
            else "nothing to allocate: every ResourceClaim in the input has status.allocation"
            if objects.resource_claims
            else "nothing to allocate: no ResourceClaim in the input"
        ],
    )


def _with_allocations(todo: list[ResourceClaim], results: list) -> list[ResourceClaim]:
    """The claims with their allocations in their status."""
    out = []
    for claim, result in zip(todo, results):
        # Shallow copies: the input claim is left as it was, its spec is shared.
        status = claim.status.model_copy(update={"allocation": result})
        status.model_fields_set.add("allocation")
        c = claim.model_copy(update={"status": status})
        c.model_fields_set.add("status")
        out.append(c)
    return out


def _without_refused(
    objects: ObjectSet, todo: list[ResourceClaim], features: Features, *, named: bool
) -> tuple[list[ResourceClaim], list[str]]:
    """The claims to allocate without those the API server refuses (admin access in a namespace
    without its label, draopt.kube.admission): they do not exist, so nothing allocates them. A claim
    named with --claim is an error; otherwise each is a note."""
    refused = refused_objects(objects, features.admin_access)
    notes = []
    for c in todo:
        why = refused.get(id(c))
        if why is not None:
            if named:
                raise InputError(f"--claim {c.namespace}/{c.name}: {why}; it cannot be allocated")
            notes.append(f"{why}: not allocated")
    return [c for c in todo if id(c) not in refused], notes


def _nothing_to_allocate(objects: ObjectSet) -> None:
    """No pending claim: an input of templates (and pods) is for `draopt place`."""
    if objects.resource_claims or not objects.claim_templates:
        return
    n = len(objects.claim_templates)
    raise InputError(
        f"nothing to allocate: the input has no ResourceClaim, only {n} ResourceClaimTemplate(s) "
        f"({', '.join(f'{t.namespace}/{t.name}' for t in objects.claim_templates[:3])}"
        f"{', ...' if n > 3 else ''}): templates become claims for Pods; use `draopt place` "
        f"with the Pods (or a Deployment, Job, ...) that reference them"
    )


def _failing_claims(
    objects: ObjectSet,
    todo: list[ResourceClaim],
    in_use: list[ResourceClaim],
    node: str | None,
    features: Features,
    policy: str,
    engine: str,
    time_limit: float | None,
    shared: dict,
) -> str:
    """Which of the claims allocated together fail: each tried alone (the others not in use);
    at most MAX_PROBED of them, so a failing run over many claims stays quick."""
    alone_fails = []
    for c in todo[:MAX_PROBED]:
        one = copy.copy(objects)
        one.resource_claims = [c] + in_use
        try:
            out = _allocate(
                one,
                node,
                None,
                features,
                policy,
                engine,
                False,
                time_limit,
                {"build_ms": 0.0, "solve_ms": 0.0, "variables": 0, "constraints": 0},
                time.perf_counter(),
                shared,
            )
        except AllocationError as e:
            alone_fails.append(f"{claim_key(c)} ({e})")
            continue
        if not out.allocated:
            alone_fails.append(claim_key(c))
    keys = ", ".join(claim_key(c) for c in todo[:MAX_PROBED]) + (
        f", ... ({len(todo) - MAX_PROBED} more, not tried alone)" if len(todo) > MAX_PROBED else ""
    )
    if alone_fails:
        return (
            f"; the {len(todo)} pending claims are allocated together, as one pod's ({keys}); "
            f"alone, these fit on no node: {', '.join(alone_fails)}; "
            f"allocate one with --claim NAMESPACE/NAME"
        )
    each = "each fits" if len(todo) <= MAX_PROBED else f"the first {MAX_PROBED} fit"
    return (
        f"; the {len(todo)} pending claims are allocated together, as one pod's ({keys}); {each} "
        f"alone, not all together; allocate them one at a time with --claim NAMESPACE/NAME"
    )


def _solve(problem, policy: str, engine: str, time_limit: float | None):
    if engine == "reference":
        from draopt.dra.reference import ReferenceAllocator

        t = time.perf_counter()
        ref = ReferenceAllocator(problem, kubernetes_defects=(policy == "first-fit"))
        chosen = ref.allocate()
        return chosen, ref.selected_sub, {"solve_ms": (time.perf_counter() - t) * 1000}
    if policy == "first-fit":
        # Kubernetes' own search first: the same answer, without a model on the easy problems.
        t = time.perf_counter()
        quick = quick_first_fit(problem)
        if quick is not None:
            chosen, selected, tried = quick
            return (
                chosen,
                selected,
                {"solve_ms": (time.perf_counter() - t) * 1000, "search": "kubernetes", "devices_tried": tried},
            )
    return solve_problem(problem, policy=policy, time_limit=time_limit)
