"""Shared counters of one pool as flat lists of exact numbers, for the first-fit search.

The search reserves and releases a device's counters for every device it tries: kept as
"room" per counter (what is available minus what the search reserved), with the number of
counters whose room is negative, a device fits exactly when that number is zero after its
amounts are taken - the same answer as comparing every counter of the pool's sets, as
Kubernetes' allocator does, without walking them.

Amounts are exact: whole numbers as ints (their sums and comparisons are the Fractions'
values, several times faster), the rest as Fractions.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from draopt.dra.rules import parse_quantity

if TYPE_CHECKING:  # (draopt.dra.inventory builds pools' layouts: it imports this module)
    from draopt.dra.inventory import AllocatedState, DeviceID, Pool

Amount = Fraction | int
# (counter's position in the pool's layout, amount) per counter a device draws on
Draws = tuple[tuple[int, Amount], ...]


def exact(v: Fraction | int) -> Amount:
    return v.numerator if v.denominator == 1 else v


_USES: dict[str, Amount] = {}  # counter amounts parsed by PoolLayout, by text (parsed once)
# (counter positions of a layout, id(DeviceCounterConsumption)) -> (the entry, its draws, whether
# it names compatibility groups): validated entries, read once (the entry kept: its id stays its own)
_ENTRY_DRAWS: dict[tuple, tuple] = {}


class PoolLayout:
    """What a pool's counters are, once per pool: every counter of its sets at a position, the
    totals, and per device drawing on them (all its slices, as available_counters walks them)
    the positions and amounts, parsed as available_counters parses them.

    `validate` (gathering the pool, in the same pass): raise the ValueError of the first counter
    set or counter a device names that the pool's sets lack (in device order, as Kubernetes
    validates a pool's consumption), note in `grouped` whether a device names compatibility
    groups, and leave `unparsable` set, instead of raising, when an amount does not parse (the
    layout is then not to be used: the search that reaches the pool raises the error), so that a
    later device's ValueError is still the one raised."""

    __slots__ = ("pool", "position", "totals", "uses", "by_device", "grouped", "unparsable")

    def __init__(self, pool: Pool, validate: bool = False):
        self.pool = pool
        # counter set -> counter -> position
        position: dict[str, dict[str, int]] = {}
        self.position = position
        totals: list[Amount] = []
        self.totals = totals
        for set_name, counters in pool.counter_sets.items():
            at = position[set_name] = {}
            for n, total in counters.items():
                at[n] = len(totals)
                totals.append(total.numerator if total.denominator == 1 else total)
        uses: list[tuple[DeviceID, Draws]] = []
        self.uses = uses
        # id(Device) -> what it draws (counters outside the pool's sets take part in no comparison)
        by_device: dict[int, Draws] = {}
        self.by_device = by_device
        grouped = unparsable = False
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
                            grouped = grouped or known[2]
                            continue
                        start = len(consumed)
                    at = position.get(c.counter_set, no_set)
                    if validate:
                        if c.compatibility_groups:
                            grouped = True
                        if at is no_set:
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
                        _ENTRY_DRAWS[(layout_key, id(c))] = (c, consumed[start:], bool(c.compatibility_groups))
                if consumed and not unparsable:
                    if len(consumes) > 1 and len({i for i, _ in consumed}) < len(consumed):
                        # A counter named twice (in two entries for one set: one entry's counters
                        # are a map): one draw of the sum (the same room after it, and a draw
                        # whose positions differ can be checked without taking it).
                        merged: dict[int, Amount] = {}
                        for i, amount in consumed:
                            merged[i] = merged.get(i, 0) + amount
                        consumed = list(merged.items())
                    draws = tuple(consumed)
                    uses.append(((driver, pool_name, d.name), draws))
                    by_device[id(d)] = draws
        self.grouped = grouped
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


class CounterRoom:
    """One search's counters of one pool: room per position and how many are negative."""

    __slots__ = ("room", "negative", "by_device")

    def __init__(self, room: list[Amount], by_device: dict[int, Draws]):
        self.room = room
        self.by_device = by_device  # the layout's: id(Device) -> what it draws
        negative = 0
        for r in room:
            if r < 0:
                negative += 1
        self.negative = negative

    def take(self, draws: Draws) -> bool:
        """Reserve; False (and nothing reserved) when some counter of the pool is then short."""
        room = self.room
        negative = self.negative
        for i, amount in draws:
            before = room[i]
            after = room[i] = before - amount
            if (after < 0) != (before < 0):
                negative += 1 if after < 0 else -1
        self.negative = negative
        if negative:
            self.give_back(draws)
            return False
        return True

    def fits(self, draws: Draws) -> bool:
        """Whether take(draws) would succeed, changing nothing (draws name each position once)."""
        room = self.room
        negative = self.negative
        for i, amount in draws:
            before = room[i]
            if (before - amount < 0) != (before < 0):
                negative += 1 if before >= 0 else -1
        return not negative

    def give_back(self, draws: Draws) -> None:
        room = self.room
        negative = self.negative
        for i, amount in draws:
            before = room[i]
            after = room[i] = before + amount
            if (after < 0) != (before < 0):
                negative += 1 if after < 0 else -1
        self.negative = negative
