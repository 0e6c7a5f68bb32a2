"""Every quantity decodes (resource.Quantity); the API server rejects the whole request otherwise."""

from __future__ import annotations

import re
from typing import Any

from draopt.kube.quantity import Quantity, QuantityError
from draopt.validation.context import _Ctx


_QUANTITY_PATHS: dict[str, tuple[str, ...]] = {
    "ResourceSlice": (
        "spec.sharedCounters[*].counters{*}.value",
        "spec.devices[*].capacity{*}.value",
        "spec.devices[*].capacity{*}.requestPolicy.default",
        "spec.devices[*].capacity{*}.requestPolicy.validValues[*]",
        "spec.devices[*].capacity{*}.requestPolicy.validRange.min",
        "spec.devices[*].capacity{*}.requestPolicy.validRange.max",
        "spec.devices[*].capacity{*}.requestPolicy.validRange.step",
        "spec.devices[*].consumesCounters[*].counters{*}.value",
    ),
    "ResourceClaim": (
        "spec.devices.requests[*].exactly.capacity.requests{*}",
        "spec.devices.requests[*].firstAvailable[*].capacity.requests{*}",
        "status.allocation.devices.results[*].consumedCapacity{*}",
    ),
    "ResourceClaimTemplate": (
        "spec.spec.devices.requests[*].exactly.capacity.requests{*}",
        "spec.spec.devices.requests[*].firstAvailable[*].capacity.requests{*}",
    ),
    "Node": ("status.capacity{*}", "status.allocatable{*}"),
    "Pod": (
        "spec.containers[*].resources.requests{*}",
        "spec.containers[*].resources.limits{*}",
        "spec.initContainers[*].resources.requests{*}",
        "spec.initContainers[*].resources.limits{*}",
        "spec.overhead{*}",
        "spec.resources.requests{*}",
        "spec.resources.limits{*}",
    ),
}
_QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def _at(data: Any, pattern: str, path: str = ""):
    """(path, value) of every value at `pattern`: `a.b` fields, `[*]` list items, `{*}` map values."""
    if not pattern:
        yield path, data
        return
    if pattern.startswith("[*]"):
        if isinstance(data, list):
            for i, v in enumerate(data):
                yield from _at(v, pattern[3:].lstrip("."), f"{path}[{i}]")
        return
    if pattern.startswith("{*}"):
        if isinstance(data, dict):
            for k, v in data.items():
                yield from _at(v, pattern[3:].lstrip("."), f"{path}[{k}]")
        return
    head = re.match(r"[A-Za-z]+", pattern).group(0)  # type: ignore[union-attr]  # our own patterns, a name first
    if isinstance(data, dict) and data.get(head) is not None:
        yield from _at(data[head], pattern[len(head) :].lstrip("."), f"{path}.{head}" if path else head)


def _quantities(ctx: _Ctx, doc: dict, kind: str) -> None:
    """Every quantity decodes (the API server rejects the whole request otherwise)."""
    for pattern in _QUANTITY_PATHS.get(kind, ()):
        for path, v in _at(doc, pattern):
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                ctx.invalid(path, v, _QUANTITY_MSG)
                continue
            try:
                Quantity.parse(v if isinstance(v, str) else repr(v) if isinstance(v, float) else str(v))
            except QuantityError:
                ctx.invalid(path, v, _QUANTITY_MSG)
