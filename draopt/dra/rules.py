"""Small, solver-independent DRA rules shared by the reference search, the CP-SAT encodings
and the checker: taints and tolerations, attribute lookup, consumable capacity."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable, Mapping

from draopt.errors import InputError
from draopt.kube.models import DeviceTaint, DeviceToleration
from draopt.kube.models.resource import DeviceCapacity
from draopt.kube.nodeselect import tolerates
from draopt.kube.quantity import Quantity

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def parse_quantity(value: str, where: str) -> Fraction:
    """A quantity's exact value; InputError naming `where` if it does not parse."""
    try:
        return Quantity.parse(value).value
    except ValueError as e:
        raise InputError(f"{where}: {e}") from None


# ------------------------------------------------------------------ taints
def taint_blocks(taints: list[DeviceTaint], tolerations: list[DeviceToleration]) -> bool:
    """True if some NoSchedule/NoExecute taint is not tolerated. Other effects (None) never block."""
    return any(t.effect in BLOCKING_EFFECTS and not any(tolerates(tol, t) for tol in tolerations) for t in taints)


# ------------------------------------------------------------------ attributes
def lookup_attribute(attributes: dict[str, Any], driver: str, name: str) -> Any:
    """Kubernetes' lookupAttribute: the fully-qualified name, else the short name when the
    domain is the device's driver. Returns the DeviceAttribute (or derived value) or None."""
    if name in attributes:
        return attributes[name]
    domain, sep, short = name.partition("/")
    if not sep or domain != driver:
        return None
    return attributes.get(short)


# ------------------------------------------------------------------ consumable capacity
def q(value: str) -> Quantity:
    return Quantity.parse(value)


def consumed_quantity(requested: Quantity | None, cap: DeviceCapacity) -> tuple[Quantity, bool]:
    """What one allocation consumes of one capacity (calculateConsumedCapacity), and whether
    the value is the policy's default taken as is (which never violates the policy)."""
    policy = cap.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return q(policy.default), True
        return q(cap.value), False
    if policy is None:
        return requested, False
    vr = policy.valid_range
    if vr is not None and vr.min is not None:
        lo = q(vr.min)
        if requested.value < lo.value:
            return lo, False
        if vr.step is None:
            return requested, False
        req_i, step, mn = _ceil(requested), _ceil(q(vr.step)), _ceil(lo)
        n, mod = divmod(req_i - mn, step) if step else (0, 0)
        # Go's integer division truncates toward zero; req >= min here, so floor == trunc.
        if mod:
            n += 1
        return Quantity.from_fraction(Fraction(mn + step * n), "BinarySI"), False
    if policy.valid_values is not None:
        for v in policy.valid_values:
            vq = q(v)
            if requested.value <= vq.value:
                return vq, False
        return requested, False
    return requested, False


def _ceil(x: Quantity) -> int:
    return math.ceil(x.value)


def violates_policy(value: Quantity, is_default: bool, cap: DeviceCapacity, requested_raw: str | None) -> bool:
    policy = cap.request_policy
    if policy is None:
        return False
    if is_default or (policy.default is not None and requested_raw is not None and requested_raw == policy.default):
        return False
    vr = policy.valid_range
    if vr is not None:
        if vr.max is not None and value.value > q(vr.max).value:
            return True
        if vr.step is not None:
            step = _ceil(q(vr.step))
            mn = _ceil(q(vr.min)) if vr.min is not None else 0
            diff = _ceil(value) - mn
            # Go's % keeps the sign of the dividend.
            mod = int(math.fmod(diff, step)) if step else 0
            if mod != 0:
                return True
        return False
    if policy.valid_values:
        return not any(value.value == q(v).value for v in policy.valid_values)
    return False


def consumption(capacity: dict[str, DeviceCapacity], requests: dict[str, str] | None) -> dict[str, Quantity] | None:
    """Per-capacity consumption of one allocation (GetConsumedCapacityFromRequest), or None if
    the request names a capacity the device lacks or the consumption violates a policy."""
    requests = requests or {}
    if any(name not in capacity for name in requests):
        return None
    out: dict[str, Quantity] = {}
    for name, cap in capacity.items():
        raw = requests.get(name)
        value, is_default = consumed_quantity(q(raw) if raw is not None else None, cap)
        if violates_policy(value, is_default, cap, raw):
            return None
        out[name] = value
    return out


def fits_capacity(
    capacity: dict[str, DeviceCapacity],
    consumed: dict[str, Quantity],
    already: dict[str, Fraction] | None,
    allocating: Mapping[str, Fraction | int] | None,
    value_of: Callable[[str], Fraction] | None = None,
) -> bool:
    """Whether `consumed` fits in each capacity beside what is `already` in use and what the search
    is `allocating`. `value_of`: a capacity's value (a cache of Quantity.parse's, the same answers
    and errors; default: parsed here)."""
    for name, cap in capacity.items():
        total = consumed[name].value
        # (what nothing holds adds nothing: adding 0 to a Fraction makes a new one, on every
        # device the search tries)
        if already and name in already:
            total = total + already[name]
        if allocating and name in allocating:
            total = total + allocating[name]
        if total > (q(cap.value).value if value_of is None else value_of(cap.value)):
            return False
    return True
