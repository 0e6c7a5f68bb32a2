"""What every first-fit search on one problem finds the same, worked out once per problem.

draopt.dra.reference runs Kubernetes' search device by device. Much of what it checks for a
device does not depend on the search's own choices, only on the problem (its requests, the
node's devices) and on what the claims already allocated hold:

  * which devices a request can never take: held by an allocated claim, refused by a selector,
    too small as a dedicated device, drawing counters with the gate off, or tainted (those the
    search would try, and fail, at every visit);
  * how much of a multi-allocatable device's capacity is left for one more share of a request,
    once the request's own consumption and the allocated claims' shares are taken off.

A SearchPlan keeps those answers for every search on its problem while the allocated state is
the same (AllocatedState.version): the searches of repeated allocate calls on one input, and
the searches of one call. It never keeps a search's answer, only facts about the devices.

Where an answer is not known yet (a selector never evaluated on the device: it may raise a CEL
runtime error where the search reaches it), the device stays a candidate, and the search
evaluates it in its turn as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from draopt.dra.counter_room import Amount, CounterRoom, exact

if TYPE_CHECKING:
    from draopt.dra.inventory import DeviceEntry
    from draopt.dra.problem import Problem, RequestSpec

# (a capacity left over or consumed is kept as counter_room keeps counters: an int where the
# Fraction is whole, most quantities; the same sums and comparisons, exactly, for less)
_MISSING: Any = object()


class SearchPlan:
    """The static answers of the searches on one problem (see the module docstring)."""

    def __init__(self, problem: "Problem") -> None:
        self.problem = problem
        self.inventory = problem.inventory
        self.version = problem.inventory.allocated.version
        # (request key, leak) -> (the positions of the devices that may still be taken, ascending;
        # None, or how many answers the problem knew when some were missing: see candidates)
        self._candidates: dict[tuple[Any, bool], tuple[list[int], tuple[int, ...] | None]] = {}
        # (request key, device index) -> per capacity, (name, room left for one more share), or
        # None: the request cannot take a share of the device at all
        self._share_room: dict[tuple[Any, int], tuple[tuple[str, Amount], ...] | None] = {}
        # (request key, device index) -> per capacity, (name, what one share consumes)
        self._share_use: dict[tuple[Any, int], tuple[tuple[str, Amount], ...]] = {}
        # (request key, device index) -> Problem.taint_blocks' answer
        self._taint: dict[tuple[Any, int], bool] = {}
        # attribute -> what a constraint on it sees of a device (draopt.dra.reference's)
        self.constraint_values: dict[str, Any] = {}
        # pool id -> its counters left by the allocated claims (each search takes a copy)
        self.rooms: dict[int, CounterRoom] = {}
        # (pool id, counter set) -> the compatibility groups the allocated claims leave on it
        self.compat_in_use: dict[tuple[int, str], frozenset[str] | None] = {}

    def current(self, problem: "Problem") -> bool:
        """Whether the plan still holds for `problem` (a copy may be rebound to other devices,
        and the allocated claims may change between searches)."""
        return self.inventory is problem.inventory and self.version == problem.inventory.allocated.version

    # ------------------------------------------------------------------ candidates
    def candidates(self, req: "RequestSpec", leak: bool) -> list[int]:
        """The positions, in search order, of the devices that `req` may take: every device but
        those the search's loop would try and refuse whatever it chose before (with no trace:
        `leak`, 1.35's counter leak, keeps a tainted device's counters, so it stays). A device
        whose selectors or capacity were never worked out stays (they may raise there)."""
        key = (req.key, leak)
        got = self._candidates.get(key)
        if got is not None and (got[1] is None or got[1] == self._known()):
            return got[0]
        p = self.problem
        f = p.features
        match, dedicated = p._match_cache, p._dedicated_fit
        held = () if req.admin_access else p.inventory.allocated.devices
        consumable, partitionable = f.consumable_capacity, f.partitionable_devices
        rk = req.key
        out: list[int] = []
        complete = True
        for dev in p.inventory.devices:
            if dev.id in held:
                continue  # (in use for the whole search)
            ok = match.get((rk, dev.index))
            if ok is None:
                complete = False  # (never evaluated: the search does it in its turn)
                out.append(dev.index)
                continue
            if not ok:
                continue
            if consumable:
                if dev.multi_allocatable:
                    room = self.share_room(req, dev)
                    fits = None if room is _MISSING else room is not None
                else:
                    fits = dedicated.get((rk, dev.index))
                if fits is None:
                    complete = False  # (not worked out, or raises: the search does it in its turn)
                    out.append(dev.index)
                    continue
                if not fits:
                    continue
            consumes = dev.device.consumes_counters
            if consumes and not partitionable:
                continue  # (refused before anything is taken)
            if (
                not leak
                and dev.taints
                and (not consumes or dev.pool.counter_layout is not None)  # (else its counters may not parse)
                and self.taint_blocks(req, dev)
            ):
                continue  # (what it took before the taint check is given back)
            out.append(dev.index)
        # (most searches stop before the last devices, whose answers stay unknown: such a list is
        # made again once the problem knows more)
        self._candidates[key] = (out, None if complete else self._known())
        return out

    def _known(self) -> tuple[int, ...]:
        """How many device answers the problem and the plan hold (they only ever grow)."""
        p = self.problem
        return len(p._match_cache), len(p._dedicated_fit), len(self._share_room)

    def taint_blocks(self, req: "RequestSpec", dev: "DeviceEntry") -> bool:
        """Problem.taint_blocks (a taint the request does not tolerate), kept."""
        key = (req.key, dev.index)
        got = self._taint.get(key)
        if got is None:
            got = self._taint[key] = self.problem.taint_blocks(req, dev)
        return got

    # ------------------------------------------------------------------ shares
    def share_room(self, req: "RequestSpec", dev: "DeviceEntry") -> tuple[tuple[str, Amount], ...] | None | Any:
        """Per capacity of a multi-allocatable device, what the search may already be allocating
        of it for a share of `req` to still fit (Problem.capacity_ok's test: consumed + in use +
        allocating <= capacity), or None when no share of it fits the request; _MISSING when
        working it out raises (the caller asks Problem.capacity_ok, which raises as it does)."""
        key = (req.key, dev.index)
        got = self._share_room.get(key, _MISSING)
        if got is not _MISSING:
            return got
        p = self.problem
        try:
            used = p.consumption(req, dev)
            if used is None:
                got = None
            else:
                already = p.inventory.allocated.capacity.get(dev.id) or {}
                got = tuple(
                    (name, exact(p.counter_value(cap.value) - used[name].value - already.get(name, 0)))
                    for name, cap in dev.device.capacity.items()
                )
        except Exception:  # noqa: BLE001 - left to capacity_ok, which raises it where the search does
            return _MISSING
        self._share_room[key] = got
        return got

    def share_fits(self, req: "RequestSpec", dev: "DeviceEntry", allocating: Mapping[str, Amount] | None) -> bool:
        """Problem.capacity_ok for a multi-allocatable device (the same answers and errors)."""
        room = self.share_room(req, dev)
        if room is _MISSING:
            return self.problem.capacity_ok(req, dev, allocating)
        if room is None:
            return False
        if allocating:
            for name, left in room:
                if allocating.get(name, 0) > left:
                    return False
            return True
        for _, left in room:
            if left < 0:
                return False
        return True

    def share_use(self, req: "RequestSpec", dev: "DeviceEntry", consumed: dict) -> tuple[tuple[str, Amount], ...]:
        """What one share of `dev` for `req` adds to the search's allocating capacity (`consumed`:
        Problem.consumption's answer)."""
        key = (req.key, dev.index)
        got = self._share_use.get(key)
        if got is None:
            got = self._share_use[key] = tuple((n, exact(v.value)) for n, v in consumed.items())
        return got


def search_plan(problem: "Problem") -> SearchPlan:
    """The problem's SearchPlan (a new one once the allocated claims changed)."""
    plan = problem.search_plan
    if plan is None or not plan.current(problem):
        plan = problem.search_plan = SearchPlan(problem)
    return plan
