"""DRA's ``includes`` (k8s.io/dynamic-resource-allocation/cel, DRAListTypeAttributes).

Kubernetes declares one overload ``dra_includes_dyn_dyn``; cel-cpp never matches ``dyn``
parameters at runtime, so draopt.cel.functions declares one overload per concrete kind.
"""

from __future__ import annotations

from draopt.cel.values import _cel_equal


# resourceapi.ResourceSliceMaxAttributeValuesPerDevice ("includes" limit)
MAX_INCLUDES_LIST = 48


def _fn_includes_list(target, arg):
    for i, item in enumerate(target):
        if i >= MAX_INCLUDES_LIST:
            raise ValueError(f"'includes' function cannot be applied to lists longer than {MAX_INCLUDES_LIST} values")
        if _cel_equal(item, arg):
            return True
    return False


def _fn_includes_scalar(target, arg):
    return _cel_equal(target, arg)
