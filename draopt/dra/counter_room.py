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

from draopt.dra.inventory import AllocatedState, DeviceEntry, DeviceID, Pool, parse_quantity

Amount = Fraction | int
# (counter's position in the pool's layout, amount) per counter a device draws on
Draws = tuple[tuple[int, Amount], ...]


def exact(v: Fraction | int) -> Amount:
    return v.numerator if v.denominator == 1 else v


_USES: dict[str, Amount] = {}  # counter amounts parsed by counter_uses, by text (parsed once)
_AMOUNTS: dict[str, Amount] = {}  # counter amounts of the devices the search tries, by text


def counter_uses(pool: Pool) -> list[tuple[DeviceID, list[tuple[str, str, Amount]]]]:
    """Per device of the pool (as available_counters walks them): its id and the counters it
    draws from the pool's counter sets, exact; parsed as available_counters parses them."""
    out = []
    for s in pool.slices + pool.other_slices:
        for d in s.spec.devices:
            consumed = []
            for c in d.consumes_counters:
                cs = pool.counter_sets.get(c.counter_set)
                for n, v in c.counters.items():
                    if cs is not None and n in cs:
                        amount = _USES.get(v.value)
                        if amount is None:
                            where = f"ResourceSlice {s.name}: device {d.name}: consumesCounters"
                            amount = exact(parse_quantity(v.value, where))
                            if len(_USES) < 4096:
                                _USES[v.value] = amount
                        consumed.append((c.counter_set, n, amount))
            if consumed:
                out.append(((pool.driver, pool.name, d.name), consumed))
    return out


class PoolLayout:
    """What a pool's counters are, once per pool: every counter of its sets at a position, the
    totals, and per device drawing on them (all its slices) the positions and amounts."""

    __slots__ = ("pool", "position", "totals", "uses", "draws")

    def __init__(self, pool: Pool):
        self.pool = pool
        self.position: dict[tuple[str, str], int] = {}
        self.totals: list[Amount] = []
        for set_name, counters in pool.counter_sets.items():
            for n, v in counters.items():
                self.position[(set_name, n)] = len(self.totals)
                self.totals.append(exact(v))
        position = self.position
        self.uses = [(did, [(position[(s, n)], a) for s, n, a in consumed]) for did, consumed in counter_uses(pool)]
        self.draws: dict[int, Draws] = {}  # DeviceEntry.index -> what it draws

    def room(self, allocated: AllocatedState) -> CounterRoom:
        """The counters left by allocated claims' devices (which may leave some negative)."""
        room = list(self.totals)
        holds = allocated.holds
        for did, consumed in self.uses:
            if holds(did):
                for i, amount in consumed:
                    room[i] -= amount
        return CounterRoom(room)

    def device_draws(self, dev: DeviceEntry, counter_value) -> Draws:
        """What `dev` draws, as the search adds it up: each counter of its consumesCounters
        (counters outside the pool's sets take part in no comparison: left out)."""
        got = self.draws.get(dev.index)
        if got is None:
            out = []
            for c in dev.device.consumes_counters:
                for n, v in c.counters.items():
                    amount = _AMOUNTS.get(v.value)
                    if amount is None:
                        amount = exact(counter_value(v.value))
                        if len(_AMOUNTS) < 4096:
                            _AMOUNTS[v.value] = amount
                    i = self.position.get((c.counter_set, n))
                    if i is not None:
                        out.append((i, amount))
            got = self.draws[dev.index] = tuple(out)
        return got


class CounterRoom:
    """One search's counters of one pool: room per position and how many are negative."""

    __slots__ = ("room", "negative")

    def __init__(self, room: list[Amount]):
        self.room = room
        self.negative = sum(1 for r in room if r < 0)

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

    def give_back(self, draws: Draws) -> None:
        room = self.room
        negative = self.negative
        for i, amount in draws:
            before = room[i]
            after = room[i] = before + amount
            if (after < 0) != (before < 0):
                negative += 1 if after < 0 else -1
        self.negative = negative
