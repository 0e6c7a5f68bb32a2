"""A pool of devices as one node sees it, and its shared counters laid out once per pool.

draopt.dra.inventory gathers the pools (and lays out their counters in the same pass); the
first-fit search (draopt.dra.reference) makes each layout's CounterRoom (draopt.dra.counter_room)
per search. Imports run one way: allocated state and counter rooms below, the inventory above.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from draopt.kube.models import ResourceSlice
from draopt.dra.allocated import AllocatedState, DeviceID
from draopt.dra.counter_room import Amount, CounterRoom, Draws, exact
from draopt.dra.rules import parse_quantity


@dataclass
class Pool:
    driver: str
    name: str
    generation: int = 0
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    slices: list[ResourceSlice] = field(default_factory=list)  # device slices targeting the node
    other_slices: list[ResourceSlice] = field(default_factory=list)  # device slices for other nodes
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    has_binding_conditions: bool = False
    # PoolLayout of the pool, built while gathering (its slices' objects
    # are in the CPU's caches then, not when a search first reaches the pool); None: not built
    counter_layout: PoolLayout | None = field(default=None, compare=False, repr=False)

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"


_USES: dict[str, Amount] = {}  # counter amounts parsed by PoolLayout, by text (parsed once)
# (counter positions of a layout, id(DeviceCounterConsumption)) -> (the entry, its draws): validated
# entries, read once (the entry kept: its id stays its own)
_ENTRY_DRAWS: dict[tuple, tuple] = {}


class PoolLayout:
    """What a pool's counters are, once per pool: every counter of its sets at a position, the
    totals, and per device drawing on them (all its slices, as available_counters walks them)
    the positions and amounts, parsed as available_counters parses them.

    `validate` (gathering the pool, in the same pass): raise the ValueError of the first counter
    set or counter a device names that the pool's sets lack (in device order, as Kubernetes
    validates a pool's consumption), and leave `unparsable` set, instead of raising, when an
    amount does not parse (the layout is then not to be used: the search that reaches the pool
    raises the error), so that a later device's ValueError is still the one raised."""

    __slots__ = ("pool", "position", "totals", "uses", "by_device", "unparsable")

    def __init__(self, pool: Pool, validate: bool = False):
        self.pool = pool
        position, totals = _counter_positions(pool.counter_sets)
        self.position = position  # counter set -> counter -> position
        self.totals = totals
        uses: list[tuple[DeviceID, Draws]] = []
        self.uses = uses
        # id(Device) -> what it draws (counters outside the pool's sets take part in no comparison)
        by_device: dict[int, Draws] = {}
        self.by_device = by_device
        unparsable = False
        no_set: dict[str, int] = {}
        driver, pool_name = pool.driver, pool.name
        # An entry's draws depend on the counters' positions and its own fields: kept per entry
        # object (the loader makes entries written alike one object) for pools laid out alike.
        layout_key = tuple((name, tuple(at)) for name, at in position.items()) if validate else None
        for s in pool.slices + pool.other_slices:
            for d in s.spec.devices:
                consumes = d.consumes_counters
                if not consumes:
                    continue
                consumed = []
                for c in consumes:
                    if layout_key is not None and not unparsable:
                        known = _ENTRY_DRAWS.get((layout_key, id(c)))
                        if known is not None and known[0] is c:
                            consumed += known[1]
                            continue
                        start = len(consumed)
                    at = position.get(c.counter_set, no_set)
                    if validate and at is no_set:
                        raise ValueError(f"counter set {c.counter_set} not found")
                    for n, v in c.counters.items():
                        i = at.get(n)
                        if i is None:
                            if validate:
                                raise ValueError(f"counter {n} not found in counter set {c.counter_set}")
                            continue
                        if unparsable:
                            continue
                        value = v.value
                        amount = _USES.get(value)
                        if amount is None:
                            where = f"ResourceSlice {s.name}: device {d.name}: consumesCounters"
                            if validate:
                                try:
                                    amount = exact(parse_quantity(value, where))
                                except Exception:  # noqa: BLE001 - raised when a search reaches the pool
                                    unparsable = True
                                    continue
                            else:
                                amount = exact(parse_quantity(value, where))
                            if len(_USES) < 4096:
                                _USES[value] = amount
                        consumed.append((i, amount))
                    if layout_key is not None and not unparsable and len(_ENTRY_DRAWS) < 65536:
                        _ENTRY_DRAWS[(layout_key, id(c))] = (c, consumed[start:])
                if consumed and not unparsable:
                    if len(consumes) > 1 and len({i for i, _ in consumed}) < len(consumed):
                        consumed = _merge_repeated(consumed)
                    draws = tuple(consumed)
                    uses.append(((driver, pool_name, d.name), draws))
                    by_device[id(d)] = draws
        self.unparsable = unparsable

    def room(self, allocated: AllocatedState) -> CounterRoom:
        """The counters left by allocated claims' devices (which may leave some negative)."""
        room = list(self.totals)
        # (AllocatedState.holds, inline: this runs for every device of every pool a search tries)
        devices, shared, capacity = allocated.devices, allocated.shared, allocated.capacity
        for did, consumed in self.uses:
            if did in devices or did in shared or did in capacity:
                for i, amount in consumed:
                    room[i] -= amount
        return CounterRoom(room, self.by_device)


def _counter_positions(counter_sets: dict[str, dict[str, Fraction]]) -> tuple[dict[str, dict[str, int]], list[Amount]]:
    """Every counter of the pool's sets at a position: (counter set -> counter -> position, totals)."""
    position: dict[str, dict[str, int]] = {}
    totals: list[Amount] = []
    for set_name, counters in counter_sets.items():
        at = position[set_name] = {}
        for n, total in counters.items():
            at[n] = len(totals)
            totals.append(total.numerator if total.denominator == 1 else total)
    return position, totals


def _merge_repeated(consumed: list[tuple[int, Amount]]) -> list[tuple[int, Amount]]:
    """A counter named twice (in two entries for one set: one entry's counters are a map): one
    draw of the sum (the same room after it, and a draw whose positions differ can be checked
    without taking it)."""
    merged: dict[int, Amount] = {}
    for i, amount in consumed:
        merged[i] = merged.get(i, 0) + amount
    return list(merged.items())
