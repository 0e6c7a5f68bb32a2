"""Kubernetes' lists library (k8s.io/apiserver/pkg/cel/library/lists.go).

``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``, ``lastIndexOf`` (the string forms of the
last two are in draopt.cel.strings).
"""

from __future__ import annotations

from draopt.cel.values import _cel_equal


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _cel_compare(a, b) -> int:
    """traits.Comparer.Compare for the comparable kinds (numbers compare across types)."""
    ta, tb = type(a), type(b)
    num = (int, float)
    if (ta in num and tb in num) or ta is tb:
        try:
            return (a > b) - (a < b)
        except TypeError:
            pass
    raise ValueError("no such overload")


def _fn_list_is_sorted(lst):
    for i in range(1, len(lst)):
        if _cel_compare(lst[i - 1], lst[i]) == 1:
            return False
    return True


def _fn_list_sum(lst):
    acc = None
    for x in lst:
        acc = x if acc is None else acc + x
        if type(acc) is int and not _INT64_MIN <= acc <= _INT64_MAX:
            raise ValueError("integer overflow")
    return 0 if acc is None else acc


def _list_extreme(name, prefer):
    def impl(lst):
        if not lst:
            raise ValueError(f"{name} called on empty list")
        best = lst[0]
        for x in lst[1:]:
            if _cel_compare(best, x) == prefer:
                best = x
        return best

    return impl


_fn_list_min = _list_extreme("min", 1)
_fn_list_max = _list_extreme("max", -1)


def _fn_list_index_of(lst, item):
    for i, x in enumerate(lst):
        if _cel_equal(x, item):
            return i
    return -1


def _fn_list_last_index_of(lst, item):
    for i in range(len(lst) - 1, -1, -1):
        if _cel_equal(lst[i], item):
            return i
    return -1
