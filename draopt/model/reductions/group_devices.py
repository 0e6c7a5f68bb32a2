"""GroupDevices: devices of one node that every request of the model sees alike (same candidacy,
same values of every constrained attribute, no counters, not shared with other nodes, not
multi-allocatable) become one column with a count; `invert` deals out the first free ones in
Kubernetes' search order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Hashable

from draopt.dra.constraints import normalise
from draopt.dra.problem import Problem


@dataclass(eq=False)
class DeviceRef:
    """A device, or a group of identical node-local devices, as one column of the model."""

    key: Hashable
    entries: list[Any]  # DeviceEntry, search order (any node's entry for a shared device)
    node: str | None  # the node of a node-local device (group); None if several nodes reach it

    @property
    def size(self) -> int:
        return len(self.entries)

    @property
    def first(self):
        return self.entries[0]


def groupable(entry, node_name: str, features) -> bool:
    d = entry.device
    if d.consumes_counters and features.partitionable_devices:
        return False
    if entry.multi_allocatable and features.consumable_capacity:
        return False
    if d.node_allocatable_resources and features.node_allocatable_resources:
        return False  # what it adds to the node is counted per device and pod
    return entry.slice.spec.node_name == node_name and not entry.slice.spec.per_device_node_selection


class GroupDevices:
    """accepts(device, node); apply(node, devices with their pattern) -> DeviceRefs;
    invert(ref, count, taken) -> devices."""

    @staticmethod
    def accepts(entry, node_name: str, features) -> bool:
        """Whether the device may join a group (`groupable`); others stay single columns."""
        return groupable(entry, node_name, features)

    def apply(self, node_name: str, patterns: list[tuple[Any, tuple]], features) -> list[DeviceRef]:
        """`patterns`: [(DeviceEntry, pattern)] in search order; devices with equal patterns that
        may be grouped become one DeviceRef, others stay single."""
        groups: dict[tuple, DeviceRef] = {}
        out: list[DeviceRef] = []
        for entry, pattern in patterns:
            if groupable(entry, node_name, features):
                ref = groups.get(pattern)
                if ref is None:
                    ref = groups[pattern] = DeviceRef(("group", node_name, len(groups)), [], node_name)
                    out.append(ref)
                ref.entries.append(entry)
            else:
                out.append(DeviceRef(entry.id, [entry], node_name if entry.slice.spec.node_name == node_name else None))
        return out

    @staticmethod
    def invert(ref: DeviceRef, count: int, taken: dict, reusable: bool = False, exclude=()) -> list[Any]:
        """`count` devices of the group, the first free ones in search order (`taken` records
        them; `reusable`: admin access or shares, which may take a device others took)."""
        out: list[Any] = []
        for e in ref.entries:
            if len(out) == count:
                break
            if e.id in exclude:
                continue  # never the same device twice in one claim
            if reusable:
                out.append(e)  # admin access and shares neither need nor block a free device
            elif not taken.get(e.id):
                out.append(e)
                taken[e.id] = 1
        if len(out) < count:
            raise RuntimeError(f"internal: {count} devices wanted from a group of {ref.size}, {len(out)} free")
        return out


def attribute_pattern(problem: Problem, spec, entry, names: list[str]) -> tuple:
    """The values of the constrained attributes a request sees on a device (derived included)."""
    out = []
    for name in names:
        raw = problem.attribute_for_constraint(spec, entry, name)
        v = normalise(raw, problem.features.list_type_attributes) if raw is not None else None
        out.append(None if v is None else (v[0], tuple(sorted(map(repr, v[1])))))
    return tuple(out)


def device_pattern_extra(entry) -> str:
    """What else must be equal for devices to be interchangeable in the model."""
    nar = entry.device.node_allocatable_resources
    return json.dumps(nar, sort_keys=True, default=str) if nar else ""
