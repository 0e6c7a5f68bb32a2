"""Shared counters of one pool as flat lists of exact numbers, for the first-fit search.

The search reserves and releases a device's counters for every device it tries: kept as
"room" per counter (what is available minus what the search reserved), with the number of
counters whose room is negative, a device fits exactly when that number is zero after its
amounts are taken - the same answer as comparing every counter of the pool's sets, as
Kubernetes' allocator does, without walking them.

A pool's layout (draopt.dra.pools.PoolLayout: positions, totals, each device's draws) makes
the room; this module needs nothing of the pools but those numbers.

Amounts are exact: whole numbers as ints (their sums and comparisons are the Fractions'
values, several times faster), the rest as Fractions.
"""

from __future__ import annotations

from fractions import Fraction

Amount = Fraction | int
# (counter's position in the pool's layout, amount) per counter a device draws on
Draws = tuple[tuple[int, Amount], ...]


def exact(v: Fraction | int) -> Amount:
    return v.numerator if v.denominator == 1 else v


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

    def copy(self) -> "CounterRoom":
        """Another room with the same counters left (taken from and given back to on its own)."""
        out = CounterRoom.__new__(CounterRoom)
        out.room, out.by_device, out.negative = list(self.room), self.by_device, self.negative
        return out

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
