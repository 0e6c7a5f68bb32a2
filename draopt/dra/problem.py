"""The allocation problem for one node, independent of how it is solved.

`prepare()` validates the claims as Kubernetes' allocator does before its search (feature
gates, classes, allocation modes, the 32-results limit, `All` requests over incomplete or
invalid pools) and gives both solvers the same view: requests and sub-requests with their
compiled selectors, the node's devices in search order, and a cached selector oracle.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from functools import cached_property
from fractions import Fraction
from typing import Any, Mapping

from draopt.errors import AllocationError, DeviceCelError
from draopt.kube.features import Features
from draopt.dra.inventory import DeviceEntry, Inventory, device_id_str
from draopt.kube.models import DeviceClass, ResourceClaim
from draopt.kube.models.resource import DeviceConstraint, DeviceToleration, _RequestFields
from draopt.kube.nodeselect import node_matches
from draopt.kube.quantity import Quantity
from draopt.dra.constraints import constraint_applies
from draopt.dra.rules import consumption, fits_capacity, lookup_attribute, taint_blocks

MAX_RESULTS = 32  # resourceapi.AllocationResultsMaxSize
MAX_SUBREQUESTS = 8
_PARSED: set[str] = set()  # capacity values that parse as quantities


_SIMPLE_SELECTOR: Any = None


def _simple_selector(text: str):
    """draopt.cel.simple.simple_selector (imported on first use: preparing needs no CEL)."""
    global _SIMPLE_SELECTOR
    if _SIMPLE_SELECTOR is None:
        from draopt.cel.simple import simple_selector

        _SIMPLE_SELECTOR = simple_selector
    return _SIMPLE_SELECTOR(text)


def _all_of(tests: tuple[Any, ...], dev: DeviceEntry) -> bool | None:
    """The selectors (draopt.cel.simple) in order on a device whose CEL input converts cleanly:
    False at the first false one, None where one needs CEL (its error would come first)."""
    for test in tests:
        ok = test.answer(dev.driver, dev.device, dev.list_type_attributes)
        if ok is None:
            return None
        if not ok:
            return False
    return True


def claim_key(claim: ResourceClaim) -> str:
    return f"{claim.namespace}/{claim.name}"


@dataclass(eq=False)
class RequestSpec:
    """One request without sub-requests, or one sub-request."""

    claim_index: int
    request_index: int
    sub_index: int  # -1 for a plain request
    request_name: str
    sub_name: str  # "" for a plain request
    fields: _RequestFields
    device_class: DeviceClass
    mode: str  # ExactCount | All
    count: int  # devices needed (for All: the matching devices)
    admin_access: bool
    all_devices: list[DeviceEntry] = field(default_factory=list)
    # (claim, request, sub-request) indexes: the key of every per-request cache
    key: tuple[int, int, int] = field(init=False)
    # What draopt.dra.decode writes of a device allocated for this request (the same for every
    # allocation of it): (id(entry.device), pool driver, pool name, binding fields written) -> (the
    # entry's Device, the result's fields, the names of those fields whose values are lists).
    decoded: dict[tuple[int, str, str, bool], tuple[Any, dict[str, Any], tuple[str, ...]]] = field(
        init=False, default_factory=dict, repr=False
    )

    def __post_init__(self) -> None:
        self.key = (self.claim_index, self.request_index, self.sub_index)

    @property
    def full_name(self) -> str:
        return f"{self.request_name}/{self.sub_name}" if self.sub_name else self.request_name

    @property
    def own_name(self) -> str:
        return self.sub_name or self.request_name

    @property
    def tolerations(self) -> list[DeviceToleration]:
        return self.fields.tolerations

    @property
    def capacity_requests(self) -> dict[str, str] | None:
        return self.fields.capacity.requests if self.fields.capacity is not None else None


@dataclass(eq=False)
class RequestGroup:
    """A claim's request: one RequestSpec, or its firstAvailable sub-requests in order."""

    name: str
    alternatives: list[RequestSpec]
    has_subrequests: bool


@dataclass(eq=False)
class ClaimSpec:
    index: int
    claim: ResourceClaim
    requests: list[RequestGroup]
    constraints: list[DeviceConstraint]

    @property
    def key(self) -> str:
        return claim_key(self.claim)

    @cached_property
    def classes_have_config(self) -> bool:
        """Whether the class of some request or sub-request has a configuration (read by each
        decoding of the claim's allocation)."""
        return any(spec.device_class.spec.config for group in self.requests for spec in group.alternatives)


class Problem:
    """Claims to allocate together on one node, with everything needed to solve and decode."""

    def __init__(
        self,
        claims: list[ClaimSpec],
        inventory: Inventory,
        features: Features,
        cel_env: Any,
        classes: dict[str, DeviceClass] | None = None,
        expr_cache: dict | None = None,
    ):
        self.claims = claims
        self.classes = classes or {}
        self.inventory = inventory
        self.features = features
        self.cel_env = cel_env
        self._match_cache: dict[tuple[tuple[int, int, int], int], bool] = {}
        # One evaluation per expression and device; may be shared by many problems (placement).
        self._expr_cache: dict[tuple[str | None, int], bool] = expr_cache if expr_cache is not None else {}
        self._consumption_cache: dict = {}
        self._dedicated_fit: dict[tuple[tuple[int, int, int], int], bool] = {}
        self._derived_cache: dict[tuple[tuple[int, int, int], int], dict[str, Any]] = {}
        self._quantity_cache: dict[str, Fraction] = {}
        self._selectors: dict[tuple[int, int, int], list[tuple[bool, int, str | None]]] = {}
        self._compiled: dict[str, tuple[Any, Any]] = {}  # expression -> (compiled, its draopt.cel.simple parse or None)
        # One text per claim (its spec), set by draopt.dra.reference's fast paths: answers that depend
        # only on the request and the device are then shared through inventory.memo.
        self.shape_keys: tuple | None = None
        self.search_plan: Any = None  # draopt.dra.search_plan's, for the searches on this problem
        # (request key, device id) -> the CEL runtime error that made the device no candidate
        # (the placement model skips such devices and counts them: draopt.model.prepare).
        self.cel_skipped: dict[tuple, str] = {}

    def __copy__(self) -> "Problem":
        """A shallow copy (requests, caches and device answers shared), made without __init__:
        first-fit rebinds a solved problem to another pod's claims for most node answers."""
        new = Problem.__new__(Problem)
        new.__dict__.update(self.__dict__)
        return new

    def forget_device_answers(self) -> None:
        """Drop the answers kept per device position (request key, device index): for a copy of
        the problem on another node's devices, where a position is another device."""
        self._match_cache, self._dedicated_fit, self._derived_cache, self._consumption_cache = {}, {}, {}, {}

    # ---------------------------------------------------------------- selectors
    def selectable(self, req: RequestSpec, dev: DeviceEntry) -> bool:
        """isSelectable: binding-condition gate, class then request CEL selectors, per-device
        node selection. Cached. CEL errors raise AllocationError, as Kubernetes aborts."""
        key = (req.key, dev.index)
        hit = self._match_cache.get(key)
        if hit is not None:
            return hit
        shared = None
        if self.shape_keys is not None:
            shared = self.inventory.memo.setdefault(("selectable", self.shape_keys[req.claim_index], req.key), {})
            hit = shared.get(dev.index)
            if hit is not None:
                self._match_cache[key] = hit
                return hit
        result = self._selectable(req, dev)
        self._match_cache[key] = result
        if shared is not None:
            shared[dev.index] = result
        return result

    def _selectable(self, req: RequestSpec, dev: DeviceEntry) -> bool:
        if not self.features.device_binding_and_status and dev.device.binding_conditions:
            return False
        selectors = self._selectors.get(req.key)
        if selectors is None:
            selectors = self._selectors[req.key] = [
                (of_class, i, sel.cel.expression if sel.cel else None)
                for of_class, listed in ((True, req.device_class.spec.selectors), (False, req.fields.selectors))
                for i, sel in enumerate(listed)
            ]
        device_id = id(dev.device)
        for of_class, i, text in selectors:
            ok = self._expr_cache.get((text, device_id))
            if ok is None:
                ok = self._evaluate(of_class, i, text, req, dev)
            if not ok:
                return False
        if dev.slice.spec.per_device_node_selection:
            d = dev.device
            if not node_matches(
                self.inventory.node, d.node_name, d.all_nodes, d.node_selector, f"{dev.where}: nodeSelector"
            ):
                return False
        if self.features.derived_attributes and req.fields.derived_attributes:
            # Evaluated once per candidate, after the selectors; a runtime error aborts.
            self.derived_attributes(req, dev)
        return True

    def selector_errors(self, req: RequestSpec) -> list[int]:
        """Cumulative count, over the devices in search order, of those on which selectable()
        raises (out[i]: among the first i). Every device's answer is computed, as selectable()
        would compute it, and kept."""
        out = [0]
        append = out.append
        fast = self._simple_selectors(req)
        if fast is None:
            failed = 0
            for dev in self.devices:
                try:
                    self.selectable(req, dev)
                except Exception:  # noqa: BLE001 - the search raises it when (and if) it gets there
                    failed += 1
                append(failed)
            return out
        # Every selector has draopt.cel.simple's shape: on a device whose CEL input converts
        # cleanly that mostly answers (no CEL, no error); driver comparisons alone give one
        # answer per driver.
        by_driver: dict[str, bool | None] | None = {} if all(test.driver_only for test in fast) else None
        binding_gate = not self.features.device_binding_and_status
        derived = bool(self.features.derived_attributes and req.fields.derived_attributes)
        match_cache = self._match_cache
        shared = None
        if self.shape_keys is not None:
            shared = self.inventory.memo.setdefault(("selectable", self.shape_keys[req.claim_index], req.key), {})
        rk = req.key
        failed = 0
        for dev in self.devices:
            key = (rk, dev.index)
            if key not in match_cache:
                ok: bool | None
                if binding_gate and dev.device.binding_conditions:
                    ok = False
                elif not dev.cel_clean:
                    ok = None
                else:
                    if by_driver is None:
                        ok = _all_of(fast, dev)
                    elif dev.driver in by_driver:
                        ok = by_driver[dev.driver]
                    else:
                        ok = by_driver[dev.driver] = _all_of(fast, dev)
                    if ok and (derived or dev.slice.spec.per_device_node_selection):
                        ok = None  # (evaluated after the selectors, and may raise)
                if ok is None:
                    try:
                        self.selectable(req, dev)
                    except Exception:  # noqa: BLE001 - the search raises it when (and if) it gets there
                        failed += 1
                else:
                    match_cache[key] = ok
                    if shared is not None:
                        shared[dev.index] = ok
            append(failed)
        return out

    def _simple_selectors(self, req: RequestSpec) -> tuple[Any, ...] | None:
        """The request's selectors (its class's, then its own) parsed by draopt.cel.simple when
        each has that shape (and so compiles), else None."""
        tests = []
        for listed in (req.device_class.spec.selectors, req.fields.selectors):
            for sel in listed:
                text = sel.cel.expression if sel.cel else None
                test = _simple_selector(text) if text is not None else None
                if test is None:
                    return None
                tests.append(test)
        return tuple(tests)

    def _evaluate(self, of_class: bool, i: int, text: str | None, req: RequestSpec, dev: DeviceEntry) -> bool:
        """One selector on one device (not evaluated before): its answer, kept in _expr_cache."""
        compiled = self._compiled.get(text) if text is not None else None
        if compiled is None:
            # (the owner's name only for an error message: built when there is one)
            expr = None
            if text is not None:
                try:
                    expr = self.cel_env.compile(text)
                except Exception:  # noqa: BLE001 - _compile below raises it with its message
                    expr = None
            if expr is None:
                expr = self._compile(text, self._owner(of_class, req), i, req)
            compiled = (expr, _simple_selector(text) if text is not None else None)
            if text is not None:
                self._compiled[text] = compiled  # (compiling again gives the same expression)
        expr, test = compiled
        if test is not None and dev.cel_clean:
            # draopt.cel.simple's shape: the CEL evaluation's answer where it gives one, without
            # building the device's CEL input.
            ok = test.answer(dev.driver, dev.device, dev.list_type_attributes)
            if ok is not None:
                self._expr_cache[(text, id(dev.device))] = ok
                return ok
        try:
            ok = expr.matches(dev.cel)
        except Exception as e:  # CelRuntimeError (or a library error on odd input)
            owner = self._owner(of_class, req)
            raise DeviceCelError(
                f"{owner}: selector #{i} on device {device_id_str(dev.id)}: CEL runtime error: {e} "
                f"(request {req.full_name}, expression {expr.expression!r})",
                owner=f"{owner} selector #{i}",
                cause=str(e),
                device=device_id_str(dev.id),
            ) from None
        self._expr_cache[(text, id(dev.device))] = ok
        return ok

    def _owner(self, of_class: bool, req: RequestSpec) -> str:
        """Who a selector belongs to, in error messages."""
        if of_class:
            return f"class {req.device_class.name}"
        return f"claim {claim_key(self.claims[req.claim_index].claim)}"

    def _compile(self, expression: str | None, owner: str, i: int, req: RequestSpec):
        from draopt.cel import CelCompileError

        if expression is None:
            raise AllocationError(
                f"{owner}, request {req.full_name}, selector #{i}: CEL expression empty (unsupported selector type?)"
            )
        try:
            return self.cel_env.compile(expression)
        except CelCompileError as e:
            raise AllocationError(
                f"{owner}: selector #{i}: CEL compile error: {e} (request {req.full_name}, expression {expression!r})"
            ) from None

    # ---------------------------------------------------------------- capacity
    def consumption(self, req: RequestSpec, dev: DeviceEntry):
        """Capacity one allocation of `dev` for `req` consumes, or None if it cannot (policy,
        unknown capacity name). Only meaningful with DRAConsumableCapacity."""
        key = (req.key, dev.index)
        if key not in self._consumption_cache:
            self._consumption_cache[key] = consumption(dev.device.capacity, req.capacity_requests)
        return self._consumption_cache[key]

    def capacity_ok(self, req: RequestSpec, dev: DeviceEntry, allocating: Mapping[str, Fraction | int] | None) -> bool:
        """CmpRequestOverCapacity (every device, multi-allocatable or not)."""
        if not dev.multi_allocatable:
            # Only shares of multi-allocatable devices accumulate: the answer is fixed.
            key = (req.key, dev.index)
            hit = self._dedicated_fit.get(key)
            if hit is None:
                hit = self._dedicated_fit[key] = self._dedicated_fits(req, dev)
            return hit
        used = self.consumption(req, dev)
        if used is None:
            return False
        return fits_capacity(
            dev.device.capacity, used, self.inventory.allocated.capacity.get(dev.id), allocating, self.counter_value
        )

    def capacity_fits_alone(self, req: RequestSpec, dev: DeviceEntry) -> bool:
        """Whether `dev` belongs among an All request's devices as far as capacity goes: up to
        1.36 its capacity left by the in-use claims (capacity_ok), from 1.37 its static capacity
        (Features.all_mode_static_capacity: a shared device an in-use claim fills stays among
        "all", and the request then fails when it comes to that device)."""
        if not self.features.all_mode_static_capacity:
            return self.capacity_ok(req, dev, None)
        used = self.consumption(req, dev)
        return used is not None and fits_capacity(dev.device.capacity, used, None, None)

    def _dedicated_fits(self, req: RequestSpec, dev: DeviceEntry) -> bool:
        in_use = self.inventory.allocated.capacity.get(dev.id)
        if in_use is None and not req.capacity_requests:
            if dev.plain_capacity:
                return True  # (what the loops below find, known from the inventory)
            caps = dev.device.capacity
            for c in caps.values():
                if c.request_policy is not None:
                    break
            else:
                # Each capacity consumed whole, nothing else using it: it fits (the quantities
                # parsed as consumption() parses them, errors included).
                for c in caps.values():
                    v = c.value
                    if v not in _PARSED:
                        Quantity.parse(v)
                        if type(v) is str and len(_PARSED) < 4096:
                            _PARSED.add(v)
                return True
        shared = None
        if self.shape_keys is not None and in_use is None:
            # Nothing of the device's capacity in use: the answer is the request's and the device's.
            shared = self.inventory.memo.setdefault(("dedicated fit", self.shape_keys[req.claim_index], req.key), {})
            hit = shared.get(dev.index)
            if hit is not None:
                return hit
        used = self.consumption(req, dev)
        hit = used is not None and fits_capacity(dev.device.capacity, used, in_use, None, self.counter_value)
        if shared is not None:
            shared[dev.index] = hit
        return hit

    def usable_alone(self, req: RequestSpec, dev: DeviceEntry) -> bool:
        """Everything that does not depend on other choices: not held by an allocated claim
        (unless admin access), selectors, capacity on its own, counters allowed by the gate,
        taints tolerated."""
        f = self.features
        if not req.admin_access and dev.id in self.inventory.allocated.devices:
            return False
        if not self.selectable(req, dev):
            return False
        if f.consumable_capacity and not self.capacity_ok(req, dev, None):
            return False
        if not f.partitionable_devices and dev.device.consumes_counters:
            return False
        return not self.taint_blocks(req, dev)

    def taint_blocks(self, req: RequestSpec, dev: DeviceEntry) -> bool:
        # (no taints, the common case: no generator to build)
        return bool(dev.taints) and self.features.device_taints and taint_blocks(dev.taints, req.tolerations)

    @property
    def devices(self) -> list[DeviceEntry]:
        return self.inventory.devices

    # ---------------------------------------------------------------- attributes
    def attribute_for_constraint(self, req: RequestSpec, dev: DeviceEntry, name: str) -> Any:
        """The value a constraint sees: a derived attribute of the request (which shadows a
        driver attribute of the same name), else the device's attribute (lookupAttribute)."""
        if self.features.derived_attributes and req.fields.derived_attributes:
            derived = self.derived_attributes(req, dev)
            if name in derived:
                return derived[name]
        return lookup_attribute(dev.device.attributes, dev.driver, name)

    def derived_attributes(self, req: RequestSpec, dev: DeviceEntry) -> dict[str, Any]:
        key = (req.key, dev.index)
        hit = self._derived_cache.get(key)
        if hit is not None:
            return hit
        from draopt.cel import CelCompileError

        out: dict[str, Any] = {}
        claim = self.claims[req.claim_index].claim
        for i, da in enumerate(req.fields.derived_attributes):
            try:
                expr = self.cel_env.compile(da.expression, selector=False)
            except CelCompileError as e:
                raise AllocationError(
                    f"claim {claim_key(claim)}, request {req.full_name}: derivedAttributes[{i}] "
                    f"({da.name}): CEL compile error: {e}"
                ) from None
            try:
                value = expr.evaluate(dev.cel)
                if not _derived_value_ok(value, self.features.list_type_attributes):
                    raise ValueError(
                        f"must evaluate to a string, int, bool or semantic version"
                        f"{' (or a list of them)' if self.features.list_type_attributes else ''}, "
                        f"got {type(value).__name__}"
                    )
                out[da.name] = value
            except Exception as e:  # noqa: BLE001
                raise DeviceCelError(
                    f"claim {claim_key(claim)}, request {req.full_name}: derivedAttributes[{i}] "
                    f"({da.name}) on device {device_id_str(dev.id)}: CEL runtime error: {e} "
                    f"(expression {da.expression!r})",
                    owner=f"claim {claim_key(claim)} derivedAttributes[{i}]",
                    cause=str(e),
                    device=device_id_str(dev.id),
                ) from None
        self._derived_cache[key] = out
        return out

    def counter_value(self, value: str) -> Fraction:
        got = self._quantity_cache.get(value)
        if got is None:
            got = self._quantity_cache[value] = Quantity.parse(value).value
        return got


# ---------------------------------------------------------------------- preparation
DERIVED_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z_][A-Za-z0-9_]*$")
MAX_DERIVED = 32


def _derived_value_ok(value: Any, list_types: bool) -> bool:
    import semver

    scalar = (bool, int, str, semver.Version)
    if isinstance(value, scalar):
        return True
    if list_types and isinstance(value, (list, tuple)) and value:
        kinds = {type(v) for v in value}
        return len(kinds) == 1 and isinstance(value[0], scalar)
    return False


def _validate_derived(
    claim: ResourceClaim,
    fields: _RequestFields,
    request_name: str,
    sub_name: str,
    constraints: list[DeviceConstraint],
    where: str,
) -> None:
    derived = fields.derived_attributes
    full = f"{request_name}/{sub_name}" if sub_name else request_name
    if len(derived) > MAX_DERIVED:
        raise _request_error(
            claim,
            f"{where}.derivedAttributes",
            f"request {full}: {len(derived)} derived attributes, at most {MAX_DERIVED}",
        )
    seen = set()
    for i, da in enumerate(derived):
        w = f"{where}.derivedAttributes[{i}].name"
        if len(da.name) > 253 + 1 + 32 or not DERIVED_NAME.match(da.name):
            raise _request_error(
                claim, w, f"request {full}: {da.name!r} is not a DNS subdomain, '/' and a C identifier"
            )
        if da.name in seen:
            raise _request_error(claim, w, f"request {full}: duplicate derived attribute {da.name!r}")
        seen.add(da.name)
        used = any(
            (c.match_attribute == da.name or c.distinct_attribute == da.name)
            and constraint_applies(list(c.requests), request_name, sub_name)
            for c in constraints
        )
        if not used:
            raise _request_error(
                claim,
                w,
                f"request {full}: derived attribute {da.name!r} is not used by any "
                "matchAttribute/distinctAttribute constraint of this request",
            )


def _request_error(claim: ResourceClaim, what: str, msg: str) -> AllocationError:
    return AllocationError(f"ResourceClaim {claim_key(claim)}: {what}: {msg}")


def prepare(
    claims: list[ResourceClaim],
    inventory: Inventory,
    classes: dict[str, DeviceClass],
    features: Features,
    cel_env: Any,
    expr_cache: dict | None = None,
) -> Problem:
    problem = Problem([], inventory, features, cel_env, classes, expr_cache)
    for ci, claim in enumerate(claims):
        spec = claim.spec.devices
        groups: list[RequestGroup] = []
        min_devices = 0
        problem.claims.append(ClaimSpec(ci, claim, groups, list(spec.constraints)))
        for ri, request in enumerate(spec.requests):
            where = f"spec.devices.requests[{ri}] ({request.name})"
            if request.first_available:
                group, fewest = _prioritized_group(problem, features, claim, ci, ri, request, where)
            else:
                group, fewest = _exact_group(problem, features, claim, ci, ri, request, where)
            min_devices += fewest
            groups.append(group)
        _check_claim_totals(claim, min_devices)
    return problem


def _prioritized_group(
    problem: Problem, features: Features, claim: ResourceClaim, ci: int, ri: int, request, where: str
) -> tuple[RequestGroup, int]:
    """A request with firstAvailable: its group of sub-requests, and the fewest devices it takes."""
    if request.exactly is not None:
        raise _request_error(claim, where, "exactly and firstAvailable are mutually exclusive")
    if not features.prioritized_list:
        raise _request_error(
            claim,
            where,
            f"request {request.name}: has subrequests, but the DRAPrioritizedList feature is disabled",
        )
    if len(request.first_available) > MAX_SUBREQUESTS:
        raise _request_error(
            claim,
            where,
            f"firstAvailable has {len(request.first_available)} sub-requests, at most {MAX_SUBREQUESTS} are allowed",
        )
    if not features.consumable_capacity:
        for sub in request.first_available:
            if sub.capacity is not None:
                raise _request_error(
                    claim,
                    f"{where}.firstAvailable ({sub.name})",
                    f"subrequest {sub.name}: has capacity requests, but the DRAConsumableCapacity feature is disabled",
                )
    alts = [
        _make_request(problem, claim, ci, ri, si, request.name, sub.name, sub, False, f"{where}.firstAvailable[{si}]")
        for si, sub in enumerate(request.first_available)
    ]
    fewest = min(a.count for a in alts)
    # A sub-request of more devices than a claim can hold can never be chosen; its count
    # is capped just above the limit, as infeasible as before, so no model needs
    # coefficients beyond 64 bits (all of them too large fails below).
    for a in alts:
        a.count = min(a.count, MAX_RESULTS + 1)
    return RequestGroup(request.name, alts, True), fewest


def _exact_group(
    problem: Problem, features: Features, claim: ResourceClaim, ci: int, ri: int, request, where: str
) -> tuple[RequestGroup, int]:
    """A request of exactly one kind of device: its group, and the devices it takes."""
    if request.exactly is None:
        raise _request_error(claim, where, "missing device class name (unsupported request type?)")
    if not features.consumable_capacity and request.exactly.capacity is not None:
        raise _request_error(
            claim,
            where,
            f"request {request.name}: has capacity requests, but the DRAConsumableCapacity feature is disabled",
        )
    r = _make_request(
        problem,
        claim,
        ci,
        ri,
        -1,
        request.name,
        "",
        request.exactly,
        request.exactly.admin_access is not None,
        f"{where}.exactly",
    )
    return RequestGroup(request.name, [r], False), r.count


def _check_claim_totals(claim: ResourceClaim, min_devices: int) -> None:
    """The claim's fewest devices within the limit, and every constraint of a known type."""
    spec = claim.spec.devices
    if min_devices > MAX_RESULTS:
        raise AllocationError(
            f"ResourceClaim {claim_key(claim)}: number of requested devices {min_devices} "
            f"exceeds the claim limit of {MAX_RESULTS}"
        )
    for i, c in enumerate(spec.constraints):
        if c.match_attribute is None and c.distinct_attribute is None:
            raise _request_error(
                claim, f"spec.devices.constraints[{i}]", "empty constraint (unsupported constraint type?)"
            )


def _make_request(
    problem: Problem,
    claim: ResourceClaim,
    ci: int,
    ri: int,
    si: int,
    name: str,
    sub: str,
    fields: _RequestFields,
    has_admin_field: bool,
    where: str,
) -> RequestSpec:
    full = f"{name}/{sub}" if sub else name
    if (
        fields.derived_attributes
        and not problem.features.derived_attributes
        and problem.features.has_derived_attributes
    ):
        # The release's allocator refuses the request rather than ignore constraints on attributes it
        # cannot derive (a claim stored while the gate was on); a release without the field drops it.
        raise _request_error(
            claim,
            f"{where}.derivedAttributes",
            f"request {full}: cannot handle request with derived attributes, the feature is disabled",
        )
    for i, sel in enumerate(fields.selectors):
        if sel.cel is None:
            raise _request_error(
                claim, f"{where}.selectors[{i}]", f"request {full}: CEL expression empty (unsupported selector type?)"
            )
    admin = bool(getattr(fields, "admin_access", None)) if has_admin_field else False
    if problem.features.derived_attributes and fields.derived_attributes:
        _validate_derived(claim, fields, name, sub, claim.spec.devices.constraints, where)
    if has_admin_field and not problem.features.admin_access:
        raise _request_error(
            claim, f"{where}.adminAccess", f"request {full}: admin access is requested, but the feature is disabled"
        )
    if not fields.device_class_name:
        raise _request_error(
            claim, f"{where}.deviceClassName", f"request {full}: missing device class name (unsupported request type?)"
        )
    cls = problem.classes.get(fields.device_class_name)
    if cls is None:
        raise _request_error(
            claim,
            f"{where}.deviceClassName",
            f"request {full}: could not retrieve device class {fields.device_class_name}: not found",
        )
    mode = fields.allocation_mode or "ExactCount"
    req = RequestSpec(ci, ri, si, name, sub, fields, cls, mode, 0, admin)
    if mode == "ExactCount":
        # API defaulting: an unset (or zero) count in ExactCount mode means 1.
        count = 1 if not fields.count else fields.count
        if count < 1:
            raise _request_error(claim, f"{where}.count", f"request {full}: count must be at least 1, got {count}")
        req.count = count
    elif mode == "All":
        for pool in problem.inventory.pools:
            if pool.incomplete:
                raise _request_error(
                    claim,
                    where,
                    f"request {full}: asks for all devices, but resource pool {pool.id} is currently being updated",
                )
            if pool.invalid:
                raise _request_error(
                    claim,
                    where,
                    f"request {full}: asks for all devices, but resource pool {pool.id} is currently invalid",
                )
        for dev in problem.devices:
            if not problem.selectable(req, dev):
                continue
            if problem.features.consumable_capacity and not problem.capacity_fits_alone(req, dev):
                continue
            req.all_devices.append(dev)
        req.count = len(req.all_devices)
    else:
        raise _request_error(claim, f"{where}.allocationMode", f"request {full}: unsupported count mode {mode}")
    return req
