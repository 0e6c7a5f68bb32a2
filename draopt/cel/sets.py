"""cel-go's sets extension (ext/sets.go): ``sets.contains``, ``sets.equivalent``, ``sets.intersects``."""

from __future__ import annotations

from draopt.cel.values import _cel_equal


def _fn_sets_contains(a, b):
    return all(any(_cel_equal(x, y) for x in a) for y in b)


def _fn_sets_equivalent(a, b):
    return _fn_sets_contains(a, b) and _fn_sets_contains(b, a)


def _fn_sets_intersects(a, b):
    return any(any(_cel_equal(x, y) for x in a) for y in b)
