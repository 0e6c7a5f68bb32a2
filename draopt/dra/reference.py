"""Plain-Python first-fit: a direct backtracking search in Kubernetes' order.

This is the small, obviously-correct reference the CP-SAT encodings are tested against. It
follows the kube-scheduler's allocator (`structured`, incubating/experimental variants) step
by step: claims in order, requests in order, sub-requests tried in order, each device of a
request after the previous one in search order, backtracking on failure, first full solution
wins. CEL selectors are evaluated lazily, in the same order, so runtime errors surface exactly
when Kubernetes' would.

`kubernetes_defects=True` (the default, what `first-fit` means) reproduces the allocator's
known defects, those of the problem's release (`Features.kubernetes_version`; where each
changed: draopt.kube.releases); `False` gives the documented semantics (see docs/semantics.md):
  * DEFECT distinct-last-only (up to 1.36): distinctAttribute keeps one stored value per
    request name, and a backtrack deletes it, so devices of one request are not all compared
    with each other. 1.37 compares every device's value, as the documented semantics do.
  * DEFECT counter-leak (1.35; fixed in 1.36.3 and 1.37): counters are reserved before the
    taint, constraint and capacity checks and not released when those reject the device (nor
    on backtrack of a multi-allocatable device). Without it a refused device is rolled back
    whole, and a multi-allocatable device's counters are given back with the share that drew
    them (still drawn only by a share while no capacity of the device is in use).
  * DEFECT admin-counters: admin-access allocations consume counters.
  * QUIRK admin-blocks-batch: inside one run, a device an admin-access request took counts as
    "allocating" and blocks non-admin requests searched later.
  * DEFECT match-intersection (list-type attributes): the running intersection is not
    restored on backtrack.
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Sequence, cast

from draopt.dra.counter_room import Amount, CounterRoom
from draopt.dra.pools import PoolLayout
from draopt.dra.constraints import normalise
from draopt.dra.rules import lookup_attribute
from draopt.errors import AllocationError
from draopt.dra.inventory import (
    DeviceEntry,
    DeviceID,
    Pool,
    compatibility_groups,
    device_id_str,
    in_use_groups,
)
from draopt.dra.problem import MAX_RESULTS, ClaimSpec, Problem, RequestSpec
from draopt.dra.search_constraints import (
    NO_ATTRIBUTE,
    UNSET,
    DistinctConstraint,
    MatchConstraint,
    SearchConstraint,
)
from draopt.dra.search_plan import SearchPlan, search_plan
from draopt.kube.quantity import Quantity


# Skips that give the same search with less work (first-fit at cluster scale, issue 11); False
# runs the plain search (tests compare both).
FAST_PATHS = True


@dataclass
class Chosen:
    """One device picked for one (sub-)request: a future DeviceRequestAllocationResult."""

    request: RequestSpec
    device: DeviceEntry
    consumed: dict[str, Quantity] | None = None  # only for multi-allocatable devices


class _MaxSize(Exception):
    """errAllocationResultMaxSizeExceeded: a claim would need more than 32 results."""


class SearchLimit(Exception):
    """The search visited more nodes than allowed (Kubernetes has a 10 s filter timeout)."""


NO_TRY_LIMIT = sys.maxsize


# ----------------------------------------------------------------------------- search
class ReferenceAllocator:
    """`shape` (one text per claim, equal for claims whose specs are equal; e.g. the claims'
    JSON) lets searches on the same node share what they learn through `inventory.memo`:
    devices that fail for reasons that only get worse while nothing is released (a dead prefix
    per request) and, under a matchAttribute constraint that has its value, runs of devices
    that cannot match, skipped in one step. The search visits and returns exactly what it
    would without them (FAST_PATHS=False, or no shape)."""

    # (one allocator per search, hundreds of thousands in a simulation: slots make it and every
    # attribute read in the search loop cheaper)
    __slots__ = (
        "p",
        "f",
        "defects",
        "leak",
        "last_only",
        "node_limit",
        "nodes_visited",
        "try_limit",
        "devices_tried",
        "allocating",
        "allocating_admin",
        "allocating_capacity",
        "rooms",
        "results",
        "selected_sub",
        "compat",
        "compat_in_use",
        "counted_multi",
        "shape",
        "memo",
        "held",
        "consumable",
        "counters_first",
        "plan",
        "skip_static",
        "constraints",
        "_cands",
        "dirty",
        "_fail_clean",
        "_undo_pending",
        "lazy",
        "lazy_seen",
        "__weakref__",
    )

    def __init__(
        self,
        problem: Problem,
        *,
        kubernetes_defects: bool = True,
        node_limit: int | None = None,
        shape: tuple | None = None,
        try_limit: int = NO_TRY_LIMIT,
    ):
        self.p = problem
        self.f = problem.features
        self.defects = kubernetes_defects
        # The release-dependent defects (Features: counter_leak, distinct_last_only).
        self.leak = kubernetes_defects and self.f.counter_leak
        self.last_only = kubernetes_defects and self.f.distinct_last_only
        self.node_limit = node_limit
        self.nodes_visited = 0
        # Devices tried (the search loop's unit of work, unlike nodes, which may each try many
        # devices), those the plan leaves out included (the count, and the budget, are then the
        # same whatever the caches know); past the limit: SearchLimit.
        self.try_limit = try_limit
        self.devices_tried = 0
        self.allocating: dict[DeviceID, set[int]] = {}  # claims using a device (non-admin)
        self.allocating_admin: dict[DeviceID, set[int]] = {}  # claims using it with admin access
        self.allocating_capacity: dict[DeviceID, dict[str, Amount]] = {}  # (whole amounts as ints)
        self.rooms: dict[int, CounterRoom] = {}  # pool id() -> its counters left
        self.results: list[list[Chosen]] = [[] for _ in problem.claims]
        self.selected_sub: dict[tuple[int, int], int] = {}
        self.compat: dict[tuple[int, str], frozenset[str] | None] = {}  # None: put back unset
        # The groups the claims already allocated leave on each (pool, counter set): fixed for
        # the whole search, so worked out once per key.
        self.compat_in_use: dict[tuple[int, str], frozenset[str] | None] = {}
        self.counted_multi: dict[
            DeviceID, bool
        ] = {}  # documented mode: multi device drew its counters   # running intersection per counter set
        self.shape = shape if FAST_PATHS and shape is not None and len(shape) == len(problem.claims) else None
        self.memo = problem.inventory.memo
        self.held = problem.inventory.allocated.devices  # dedicated devices of allocated claims
        self.consumable = self.f.consumable_capacity
        self.counters_first = self.f.partitionable_devices  # (gate off: such devices fail otherwise)
        # What every search on the problem finds the same (draopt.dra.search_plan): its devices
        # that can never be taken are skipped where no dead prefix is kept (no `shape`).
        self.plan: SearchPlan | None = search_plan(problem) if FAST_PATHS else None
        if self.plan is not None:
            self.compat_in_use = self.plan.compat_in_use
        self.skip_static = self.plan is not None and self.shape is None
        # (claims without constraints, most: one empty tuple each, nothing is added to it)
        self.constraints: list[Sequence[SearchConstraint]] = [
            self._make_constraints(c) if c.constraints else () for c in problem.claims
        ]
        if self.shape is not None:
            problem.shape_keys = self.shape
        self._cands: dict[Any, list[int]] = {}  # request key -> the plan's candidates (for this search)
        self.dirty = False  # something of this search's state changed (counters, results, ...)
        self._fail_clean = False  # the last _allocate_device failed before changing anything
        self._undo_pending: Callable[[], None] | None = None  # the undo function of the device _try_one just allocated
        # Device runs skipped under a matchAttribute constraint, (start, stop, request), in order;
        # with the allocator's counter leak they would have reserved counters: replayed per pool
        # when the search comes back to that pool (lazy_seen: how many runs a pool has seen).
        self.lazy: list[tuple[int, int, RequestSpec]] = []
        self.lazy_seen: dict[int, int] = {}

    def _make_constraints(self, claim: ClaimSpec) -> list[SearchConstraint]:
        out: list[SearchConstraint] = []
        for c in claim.constraints:
            match = c.match_attribute is not None
            cls = MatchConstraint if match else DistinctConstraint
            name = c.match_attribute if match else c.distinct_attribute
            out.append(
                cls(
                    list(c.requests),
                    name,
                    self.f.list_type_attributes,
                    self.defects if match else self.last_only,
                    self._constraint_values(name),
                )
            )
        return out

    def _constraint_values(self, constraint_name: str | None):
        """What a constraint on attribute `name` sees of a device, normalised: NO_ATTRIBUTE when
        there is none. A driver attribute's is kept per device (in inventory.memo: devices and
        their attributes do not change); a request's derived attributes are evaluated."""
        name = cast(str, constraint_name)  # (prepare() rejects a constraint without one)
        p, list_types = self.p, self.f.list_type_attributes
        derived_on = self.f.derived_attributes
        if self.plan is not None:
            got = self.plan.constraint_values.get(name)
            if got is not None:
                return got
        by_device = self.memo.setdefault(("constraint values", name, list_types), {})

        def values(req: RequestSpec, dev: DeviceEntry):
            if derived_on and req.fields.derived_attributes:
                raw = p.attribute_for_constraint(req, dev, name)
                return NO_ATTRIBUTE if raw is None else normalise(raw, list_types)
            got = by_device.get(dev.index, UNSET)
            if got is UNSET:
                raw = lookup_attribute(dev.device.attributes, dev.driver, name)
                got = by_device[dev.index] = NO_ATTRIBUTE if raw is None else normalise(raw, list_types)
            return got

        if self.plan is not None:
            self.plan.constraint_values[name] = values
        return values

    # ------------------------------------------------------------------ public
    def allocate(self) -> list[list[Chosen]] | None:
        """The first-fit allocation, None if there is none. Raises AllocationError."""
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 20000))
        try:
            done = self._claim(0)
        except _MaxSize:
            done = False
        finally:
            sys.setrecursionlimit(old)
            # (the last undo function holds this allocator: without it, the allocator is freed
            # as soon as it is dropped, not by a later cycle collection)
            self._undo_pending = None
        if not done:
            return None
        return self.results

    # ------------------------------------------------------------------ recursion
    def _claim(self, ci: int) -> bool:
        if ci >= len(self.p.claims):
            return True
        return self._request(ci, 0)

    def _next_request(self, ci: int, ri: int) -> bool:
        if ri >= len(self.p.claims[ci].requests):
            try:
                return self._claim(ci + 1)
            except _MaxSize:
                return False  # not fatal: an earlier claim's other choice may need fewer devices
        return self._request(ci, ri)

    def _request(self, ci: int, ri: int) -> bool:
        if ri >= len(self.p.claims[ci].requests):
            return self._next_request(ci, ri)
        group = self.p.claims[ci].requests[ri]
        if not group.has_subrequests:
            return self._device(group.alternatives[0], 0, 0)
        all_exceeded = True
        for si, alt in enumerate(group.alternatives):
            try:
                ok = self._device(alt, 0, 0)
            except _MaxSize:
                continue
            all_exceeded = False
            if ok:
                self.selected_sub[(ci, ri)] = si
                return True
        if all_exceeded:
            raise _MaxSize()
        return False

    def _device(self, req: RequestSpec, k: int, start: int) -> bool:
        # (a search step: past node_limit, SearchLimit)
        self.nodes_visited += 1
        if self.node_limit is not None and self.nodes_visited > self.node_limit:
            raise SearchLimit(f"search stopped after {self.node_limit} steps")
        ci = req.claim_index
        if req.mode == "All" and not req.all_devices:
            return False
        if k >= req.count:
            return self._next_request(ci, req.request_index + 1)
        if len(self.results[ci]) + req.count - k > MAX_RESULTS:
            raise _MaxSize()
        if req.mode == "All":
            dev = req.all_devices[k]
            undo = self._allocate_device(req, dev, must=True)
            if undo is None:
                return False
            try:
                done = self._device(req, k + 1, 0)
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        if self.skip_static:
            return self._candidates(req, k, start, ci)
        devices = self.p.inventory.devices
        n = len(devices)
        i = start
        # Dead prefix: at the start of a search nothing is taken yet, so devices that failed
        # then (in use, not selectable, no capacity, no counters left) fail again as long as
        # nothing was released since.
        prefix_key = None
        if self.shape is not None and k == 0 and start == 0 and not self.dirty:
            prefix_key = ("prefix", self.shape[ci], req.key, self.defects, self.leak, self.last_only)
            got = self.memo.get(prefix_key)
            if got is not None and got[0] == self.p.inventory.allocated.releases:
                i = got[1]
        skip = self._mismatch_runs(req, ci) if self.shape is not None else None
        next_match = -1
        while i < n:
            if skip is not None:
                matches, errors = skip
                if i > next_match:
                    pos = bisect_left(matches, i)
                    next_match = matches[pos] if pos < len(matches) else n
                if next_match > i:
                    if errors[next_match] == errors[i]:
                        if self.leak:
                            self.lazy.append((i, next_match, req))
                        i = next_match
                        continue
                    skip = None  # a selector fails with an error in the run: search it device by device
            dev = devices[i]
            clean = self._try_one(req, dev, ci)
            if clean is None:
                self.dirty = True
                if prefix_key is not None:
                    self._remember_prefix(prefix_key, i)
                    prefix_key = None
                undo = self._undo_pending
                assert undo is not None  # _try_one allocated the device (returned None)
                try:
                    done = self._device(req, k + 1, i + 1)
                except BaseException:
                    undo()
                    raise
                if done:
                    return True
                undo()
            elif not clean and prefix_key is not None:
                self._remember_prefix(prefix_key, i)
                prefix_key = None
            i += 1
        if prefix_key is not None:
            self._remember_prefix(prefix_key, n)
        return False

    def _candidates(self, req: RequestSpec, k: int, start: int, ci: int) -> bool:
        """_device's loop over the devices from `start` that `req` may still take (SearchPlan's
        candidates): what the loop over every device does, the devices left out counted as
        tried (the loop refuses each, and the budget counts it)."""
        cands = self._cands.get(req.key)
        if cands is None:
            assert self.plan is not None
            cands = self._cands[req.key] = self.plan.candidates(req, self.leak)
        devices = self.p.inventory.devices
        counted = start  # the devices before this one are counted as tried
        for j in range(bisect_left(cands, start), len(cands)):
            i = cands[j]
            if i > counted:
                self._count_left_out(i - counted)
            counted = i + 1
            if self._try_one(req, devices[i], ci) is None:
                undo = self._undo_pending
                assert undo is not None  # _try_one allocated the device (returned None)
                try:
                    done = self._device(req, k + 1, i + 1)
                except BaseException:
                    undo()
                    raise
                if done:
                    return True
                undo()
        if len(devices) > counted:
            self._count_left_out(len(devices) - counted)
        return False

    def _count_left_out(self, n: int) -> None:
        """`n` devices SearchPlan left out, counted as tried (as _try_one counts one, which it
        does inline: it runs once per device tried)."""
        self.devices_tried += n
        if self.devices_tried > self.try_limit:
            raise SearchLimit(f"search stopped after trying {self.try_limit} devices")

    def _try_one(self, req: RequestSpec, dev: DeviceEntry, ci: int) -> bool | None:
        """One device of the search loop: None when it was allocated (its undo function in
        _undo_pending), else whether it failed in a way that a later search starting clean
        would repeat (True) or not (False)."""
        self.devices_tried += 1
        if self.devices_tried > self.try_limit:
            raise SearchLimit(f"search stopped after trying {self.try_limit} devices")
        pool = dev.pool
        if pool.incomplete or pool.invalid:
            return True
        did = dev.id
        if req.admin_access:
            if self._used_by_claim(did, ci):
                return False
        elif did in self.held or self.allocating.get(did) or (self.allocating_admin and self._in_use(did, ci)):
            return not self.dirty
        p = self.p
        # (the problem's caches read here first: most devices were looked at before)
        key = (req.key, dev.index)
        ok = p._match_cache.get(key)
        if ok is None:
            ok = p.selectable(req, dev)
        if not ok:
            return True
        if self.consumable:
            if dev.multi_allocatable:
                ok = self._capacity_ok(req, dev)
            else:
                ok = p._dedicated_fit.get(key)
                if ok is None:
                    ok = p.capacity_ok(req, dev, None)  # (a dedicated device's fit ignores the rest)
            if not ok:
                return not self.dirty
        if (
            FAST_PATHS
            and not dev.device.consumes_counters
            and not dev.taints
            and not (self.consumable and dev.multi_allocatable)
            and not self.constraints[ci]
            and not self.lazy
        ):
            # (most devices: no counters, share, taint nor constraint to check or take; what
            # _allocate_device does with such a device, without its steps)
            self.dirty = True
            slot = (self.allocating_admin if req.admin_access else self.allocating).setdefault(did, set())
            slot.add(ci)
            results = self.results[ci]
            results.append(Chosen(req, dev, None))
            self._undo_pending = partial(self._undo_plain, dev, slot, ci, len(results) - 1)
            return None
        if (
            self.counters_first
            and not dev.multi_allocatable
            and dev.device.consumes_counters  # (_counts_counters' first test, inline: most devices draw none)
            and self._counts_counters(req, dev, False)
        ):
            # What _allocate_device would find first, checked without taking them: a dedicated
            # device whose counters are short fails before anything changes.
            if self.lazy:
                self._materialize(pool)
            room = self.rooms.get(id(pool))
            if room is None:
                room = self._room(pool)
            if not room.fits(room.by_device.get(id(dev.device), ())):
                return not self.dirty
        undo = self._allocate_device(req, dev, must=False, checked=True)
        if undo is None:
            return self._fail_clean and not self.dirty
        self._undo_pending = undo
        return None

    def _remember_prefix(self, key, stop: int) -> None:
        releases = self.p.inventory.allocated.releases
        got = self.memo.get(key)
        if got is None or got[0] != releases or got[1] < stop:
            self.memo[key] = (releases, stop)

    def _mismatch_runs(self, req: RequestSpec, ci: int):
        """When the first constraint of the claim that applies to `req` is a scalar
        matchAttribute that holds a value: (sorted positions of the devices with that value,
        cumulative count of devices whose selectors fail with an error). Every other device
        fails that constraint, after the checks before it."""
        if self.f.derived_attributes and req.fields.derived_attributes:
            return None
        target = None
        for c in self.constraints[ci]:
            if c.names and not c.applies(req):
                continue
            if isinstance(c, MatchConstraint) and not c.list_types and c.num > 0:
                target = c
            break
        if target is None:
            return None
        by_value = self.memo.get(("values", target.attribute))
        if by_value is None:
            by_value = {}
            # (what the constraint sees of each device too: see _constraint_values)
            by_device = self.memo.setdefault(("constraint values", target.attribute, False), {})
            # (identical values are one object: each normalised once here)
            name = target.attribute
            seen: dict[int, Any] = {}
            for dev in self.p.devices:
                raw = lookup_attribute(dev.device.attributes, dev.pool.driver, name)
                if raw is None:
                    by_device[dev.index] = NO_ATTRIBUTE
                    continue
                got = seen.get(id(raw))
                if got is None or got[0] is not raw:
                    got = seen[id(raw)] = (raw, normalise(raw, False))
                v = by_device[dev.index] = got[1]
                if v is not None:
                    at = by_value.get(v)
                    if at is None:
                        by_value[v] = [dev.index]
                    else:
                        at.append(dev.index)
            self.memo[("values", target.attribute)] = by_value
        assert self.shape is not None  # called only on the fast path
        errors = self.memo.get(("errors", self.shape[ci], req.key))
        if errors is None:
            errors = self.memo[("errors", self.shape[ci], req.key)] = self.p.selector_errors(req)
        matches = by_value.get(target.first, ()) if target.first is not None else ()
        return matches, errors

    def _materialize(self, pool: Pool) -> None:
        """Replay, on this pool, the skipped runs it has not seen yet (their counter leaks)."""
        total = len(self.lazy)
        seen = self.lazy_seen.get(id(pool), 0)
        if seen == total:
            return
        self.lazy_seen[id(pool)] = total
        ranges = self.memo.get("pool_ranges")
        if ranges is None:
            # Per pool: its first device's index, and its last one's + 1 (walked in runs of
            # one pool's devices, as the inventory lists them)
            ranges = {}
            devices = self.p.devices
            start, n = 0, len(devices)
            while start < n:
                first = devices[start]
                run_pool = first.pool
                stop = start + 1
                while stop < n and devices[stop].pool is run_pool:
                    stop += 1
                lo, _ = ranges.get(id(run_pool), (first.index, 0))
                ranges[id(run_pool)] = (lo, devices[stop - 1].index + 1)
                start = stop
            self.memo["pool_ranges"] = ranges
        lo, hi = ranges[id(pool)]
        devices = self.p.devices
        for a, b, req in self.lazy[seen:total]:
            for x in range(max(a, lo), min(b, hi)):
                self._replay(req, devices[x])

    def _replay(self, req: RequestSpec, dev: DeviceEntry) -> None:
        """What the search loop did with a device that could not match: the same checks, then
        _allocate_device up to the constraint, which rejects it."""
        ci = req.claim_index
        if dev.pool.incomplete or dev.pool.invalid:
            return
        if req.admin_access:
            if self._used_by_claim(dev.id, ci):
                return
        elif self._in_use(dev.id, ci):
            return
        if not self.p.selectable(req, dev):
            return
        if self.f.consumable_capacity and not self._capacity_ok(req, dev):
            return
        self._allocate_device(req, dev, must=False, reject=True)

    # ------------------------------------------------------------------ one device
    def _in_use(self, did: DeviceID, ci: int) -> bool:
        """In use for a non-admin request of claim `ci`."""
        admin = self.allocating_admin.get(did)
        return (
            did in self.held
            or bool(self.allocating.get(did))
            or admin is not None
            and len(admin) > 0
            and (self.defects or ci in admin)
        )

    def _capacity_ok(self, req: RequestSpec, dev: DeviceEntry) -> bool:
        """Problem.capacity_ok beside what the search is allocating (a share's room through the plan)."""
        if self.plan is not None and dev.multi_allocatable:
            return self.plan.share_fits(req, dev, self.allocating_capacity.get(dev.id))
        return self.p.capacity_ok(req, dev, self.allocating_capacity.get(dev.id))

    def _used_by_claim(self, did: DeviceID, ci: int) -> bool:
        return ci in self.allocating.get(did, ()) or ci in self.allocating_admin.get(did, ())

    def _allocate_device(
        self, req: RequestSpec, dev: DeviceEntry, must: bool, reject: bool = False, checked: bool = False
    ):
        """Allocate one device (an undo function) or None. `reject`: replaying a skipped device that the
        claim's constraint rejects (draopt's fast path): stop there, as the search did. `checked`: _try_one
        has just found the device not in use and its capacity enough (nothing since changes the answers)."""
        if self.lazy:
            self._materialize(dev.pool)
        self._fail_clean = True
        ci = req.claim_index
        multi = self.f.consumable_capacity and dev.multi_allocatable
        if not checked:
            if not multi and req.admin_access and self._used_by_claim(dev.id, ci):
                return None
            if not req.admin_access and self._in_use(dev.id, ci):
                return None
        consumes = dev.device.consumes_counters
        if not self.f.partitionable_devices and consumes:
            return None
        if multi:
            self._fail_clean = False  # whether its counters count changes once its capacity is in use
        counts_counters = bool(consumes) and self._counts_counters(req, dev, multi)
        if counts_counters:
            pool = dev.pool
            room = self.rooms.get(id(pool))
            if room is None:
                room = self._room(pool)  # (first: the pool's counters parse, or their error is raised)
            if not room.take(room.by_device.get(id(dev.device), ())):
                return None
        self._fail_clean = False
        if not reject:
            self.dirty = True
        if counts_counters and multi and not self.defects:
            self.counted_multi[dev.id] = True
        compat_undo = self._take_compatibility(dev) if consumes else _no_undo  # (no counter set: no group)
        if compat_undo is None:
            if counts_counters:
                self._release_counters(dev)
                self.counted_multi.pop(dev.id, None)
            return None

        release_counters_if_clean: Callable[[], None] = _no_undo  # (nothing to give back: most devices)
        if counts_counters or compat_undo is not _no_undo:

            def release_counters_if_clean():
                compat_undo()
                # Kubernetes 1.35 never releases here (DEFECT counter-leak).
                if counts_counters and not self.leak:
                    self._release_counters(dev)
                    self.counted_multi.pop(dev.id, None)

        if dev.taints and (self.p.taint_blocks(req, dev) if self.plan is None else self.plan.taint_blocks(req, dev)):
            release_counters_if_clean()
            return None
        if reject:
            release_counters_if_clean()
            return None
        added: list[SearchConstraint] = []
        if self.constraints[ci] and not self._add_to_constraints(req, dev, must, added):
            release_counters_if_clean()
            return None
        slot = (self.allocating_admin if req.admin_access else self.allocating).setdefault(dev.id, set())
        if not multi:
            slot.add(ci)
        consumed, existed = None, False  # existed: a share of this multi-allocatable device was there before
        if self.f.consumable_capacity and (multi or not checked):  # (else it takes nothing: (None, False))
            taken = self._take_capacity(req, dev, slot, multi, checked, added, release_counters_if_clean, compat_undo)
            if taken is None:
                return None
            consumed, existed = taken
        self.results[ci].append(Chosen(req, dev, consumed))
        n_before = len(self.results[ci]) - 1
        if not FAST_PATHS or multi or counts_counters or compat_undo is not _no_undo or self.constraints[ci]:
            return self._undo_device(req, dev, slot, multi, consumed, existed, counts_counters, compat_undo, n_before)
        # (most devices: no share, counters, groups nor constraints to give back; what
        # _undo_device's function does then, without its closure)
        return partial(self._undo_plain, dev, slot, ci, n_before)

    def _undo_plain(self, dev: DeviceEntry, slot: set[int], ci: int, n_before: int) -> None:
        """_undo_device's undo for a device that is not shared and took no counters nor groups,
        of a claim without constraints: the in-use mark and the result taken back."""
        if self.lazy:
            self._materialize(dev.pool)
        slot.discard(ci)
        del self.results[ci][n_before:]

    def _add_to_constraints(
        self, req: RequestSpec, dev: DeviceEntry, must: bool, added: list[SearchConstraint]
    ) -> bool:
        """The device added to each constraint of its claim (those it was added to, in `added`);
        False when one refuses it (nothing added then). `must` (All): a refusal is an error."""
        ci = req.claim_index
        for c in self.constraints[ci]:
            if not c.add(req, dev):
                if must:
                    raise AllocationError(
                        f"claim {self.p.claims[ci].key}, request {req.own_name}: cannot add device "
                        f"{device_id_str(dev.id)} because a claim constraint would not be satisfied"
                    )
                for prev in added:
                    prev.remove(req, dev)
                added.clear()
                return False
            added.append(c)
        return True

    def _take_capacity(
        self,
        req: RequestSpec,
        dev: DeviceEntry,
        slot: set[int],
        multi: bool,
        checked: bool,
        added: list[SearchConstraint],
        release_counters_if_clean: Callable[[], None],
        compat_undo: Callable[[], None],
    ) -> tuple[Any, bool] | None:
        """_allocate_device's capacity step, the device marked for the claim: (what the request
        consumes of a multi-allocatable device, else None; whether an earlier share was there),
        or None when the capacity left is short."""
        ci = req.claim_index
        if not checked and not self._capacity_ok(req, dev):
            if not self.leak:
                # 1.36.3 and later roll the device back (its in-use mark, constraints,
                # counters); 1.35 leaves that state as is here (DEFECT counter-leak).
                if not multi:
                    slot.discard(ci)
                for c in reversed(added):
                    c.remove(req, dev)
                release_counters_if_clean()
                return None
            compat_undo()
            return None
        consumed = None
        existed = False
        if multi:
            consumed = self.p.consumption(req, dev)
            existed = dev.id in self.allocating_capacity
            per = self.allocating_capacity.setdefault(dev.id, {})
            for n, v in self._amounts(req, dev, consumed):
                per[n] = per.get(n, 0) + v
        return consumed, existed

    def _amounts(self, req: RequestSpec, dev: DeviceEntry, consumed: dict[str, Quantity]) -> Any:
        """(capacity, amount) of one share `consumed` (whole amounts as ints with the plan)."""
        if self.plan is not None:
            return self.plan.share_use(req, dev, consumed)
        return [(n, v.value) for n, v in consumed.items()]

    def _undo_device(
        self,
        req: RequestSpec,
        dev: DeviceEntry,
        slot: set[int],
        multi: bool,
        consumed: Any,
        existed: bool,
        counts_counters: bool,
        compat_undo: Callable[[], None],
        n_before: int,
    ) -> Callable[[], None]:
        """The undo function of a device _allocate_device has just allocated (result n_before of
        its claim)."""
        ci = req.claim_index

        def undo():
            if self.lazy:
                self._materialize(dev.pool)
            compat_undo()
            for c in self.constraints[ci]:
                c.remove(req, dev)
            slot.discard(ci)
            if multi:
                if consumed or (not self.leak and consumed is not None):
                    per = self.allocating_capacity[dev.id]
                    for n, v in self._amounts(req, dev, consumed):
                        per[n] -= v
                    if not any(per.values()):  # (every amount back to 0)
                        del self.allocating_capacity[dev.id]
                        if existed and not self.leak:
                            # An earlier share still holds the device: its (empty) entry stays,
                            # the mark that a further share draws no counters.
                            self.allocating_capacity[dev.id] = {}
                if counts_counters and not self.leak:
                    self._release_counters(dev)
                    self.counted_multi.pop(dev.id, None)
            elif counts_counters:
                self._release_counters(dev)
            del self.results[ci][n_before:]

        return undo

    # ------------------------------------------------------------------ compatibility groups
    def _take_compatibility(self, dev: DeviceEntry):
        """Record the device's groups on each counter set it draws on if every device on the
        set (allocated or chosen) still shares a group; returns an undo function or None.
        Kubernetes has no implementation yet: this follows the documented semantics."""
        f = self.f
        if not (f.partitionable_devices and f.compatibility_groups and dev.device.consumes_counters):
            return _no_undo
        added: list[tuple[tuple[int, str], frozenset[str] | None]] = []
        for c in dev.device.consumes_counters:
            key = (id(dev.pool), c.counter_set)
            current = self.compat.get(key)
            if current is None:
                if key in self.compat_in_use:
                    current = self.compat_in_use[key]
                else:
                    fixed = in_use_groups(self.p.inventory.allocated, dev.pool, c.counter_set)
                    current = self.compat_in_use[key] = frozenset.intersection(*fixed) if fixed else None
            mine = compatibility_groups(dev.device, c.counter_set)
            assert mine is not None  # c is one of the device's own counter sets
            new = mine if current is None else current & mine
            if not new:
                for k, old in reversed(added):
                    self.compat[k] = old
                return None
            added.append((key, self.compat.get(key)))
            self.compat[key] = new

        def undo():
            for k, old in reversed(added):
                if old is None:
                    self.compat.pop(k, None)
                else:
                    self.compat[k] = old
            added.clear()

        return undo

    # ------------------------------------------------------------------ counters
    def _counts_counters(self, req: RequestSpec, dev: DeviceEntry, multi: bool) -> bool:
        """Whether allocating `dev` for `req` draws on its counters now (`multi`: a
        multi-allocatable device, consumable capacity on)."""
        if not dev.device.consumes_counters:
            return False
        if self.defects:
            # Kubernetes: a multi-allocatable device's counters are skipped once capacity is in use.
            return not (multi and (dev.id in self.p.inventory.allocated.capacity or dev.id in self.allocating_capacity))
        if multi:
            # Documented: drawn once, by the first non-admin allocation.
            return (
                not req.admin_access
                and dev.id not in self.p.inventory.allocated.capacity
                and not self.counted_multi.get(dev.id)
            )
        return not req.admin_access

    def _room(self, pool: Pool) -> CounterRoom:
        """available_counters(pool, allocated) less what this search reserved."""
        got = self.rooms.get(id(pool))
        if got is None and self.plan is not None:
            start = self.plan.rooms.get(id(pool))  # (the same for every search on the problem)
            if start is not None:
                got = self.rooms[id(pool)] = start.copy()
                return got
        if got is None:
            layout = pool.counter_layout  # (built with the pool, unless its counters do not parse)
            if layout is None:
                layout = self.memo.get(("counter layout", id(pool)))
                if layout is None or layout.pool is not pool:
                    layout = self.memo[("counter layout", id(pool))] = PoolLayout(pool)
            got = self.rooms[id(pool)] = layout.room(self.p.inventory.allocated)
            if self.plan is not None:
                self.plan.rooms[id(pool)] = got.copy()
        return got

    def _release_counters(self, dev: DeviceEntry) -> None:
        room = self.rooms[id(dev.pool)]
        room.give_back(room.by_device.get(id(dev.device), ()))


def _no_undo() -> None:
    pass


def reference_first_fit(
    problem: Problem, *, kubernetes_defects: bool = True, node_limit: int | None = None
) -> list[list[Chosen]] | None:
    return ReferenceAllocator(problem, kubernetes_defects=kubernetes_defects, node_limit=node_limit).allocate()


# Kubernetes' own search runs first for allocate's first-fit: most problems take a few dozen
# device tries, far less than building and solving a CP-SAT model. Past these budgets the
# search may be exponential (Kubernetes times out at 10 s there): the model answers instead.
# The steps bound the search; the devices tried (those SearchPlan leaves out included, which
# cost next to nothing once the problem's answers are known) bound the steps' loops: unschedulable
# problems that take a few hundred steps try a few thousand devices, and the search ends them
# in less time than the model takes. The budgets are about what the model costs at its smallest
# (1-2 ms: a thousand steps of the search), so a search stopped at them costs at most about as
# much again as the model: searches of 300-1,000 steps (the generated scenarios have several)
# ended in 0.4-2 ms where, stopped at 300 steps, the model answered in 1-3 ms more.
QUICK_NODE_LIMIT = 1000
QUICK_TRY_LIMIT = 10000


def quick_first_fit(problem: Problem) -> tuple[list[list[Chosen]] | None, dict[tuple[int, int], int], int] | None:
    """Kubernetes' search (defects included) within the quick budgets: (chosen per claim or
    None when nothing fits, selected sub-requests, devices tried), or None when it did not
    finish. A CEL runtime error or a failed constraint of an All request (AllocationError) is
    raised as the allocator raises it: where its search reaches it."""
    ref = ReferenceAllocator(problem, kubernetes_defects=True, node_limit=QUICK_NODE_LIMIT, try_limit=QUICK_TRY_LIMIT)
    try:
        chosen = ref.allocate()
    except SearchLimit:
        return None
    return chosen, ref.selected_sub, ref.devices_tried
