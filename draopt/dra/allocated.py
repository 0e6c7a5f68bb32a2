"""What claims that already carry status.allocation hold, by device (Kubernetes' allocated state).

Below the pools and their counters (draopt.dra.pools, draopt.dra.counter_room) and the inventory
(draopt.dra.inventory), which all read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable

from draopt.kube.features import Features
from draopt.kube.models import ResourceClaim
from draopt.dra.rules import parse_quantity

DeviceID = tuple[str, str, str]  # (driver, pool, device)


@dataclass
class AllocatedState:
    """What claims that already carry status.allocation hold (Kubernetes' AllocatedState)."""

    devices: set[DeviceID] = field(default_factory=set)  # dedicated, non-admin
    shared: set[DeviceID] = field(default_factory=set)  # multi-allocation shares
    capacity: dict[DeviceID, dict[str, Fraction]] = field(default_factory=dict)
    claims_by_device: dict[DeviceID, list[str]] = field(default_factory=dict)
    shared_count: dict[DeviceID, int] = field(default_factory=dict)
    # Bumped whenever a result is removed: while it stays the same, devices only ever become
    # more used (what the allocator's remembered dead prefixes rely on).
    releases: int = 0
    version: int = 0  # bumped on every change (results added or removed)

    def holds(self, did: DeviceID) -> bool:
        """IsDeviceAllocated: the device consumes its counters."""
        return did in self.devices or did in self.shared or did in self.capacity

    def add_result(
        self, claim_key: str, did: DeviceID, *, admin: bool, share: bool, consumed: dict[str, Fraction] | None
    ) -> None:
        """Record one allocation result of a claim (as the scheduler's allocated-state tracker)."""
        self.version += 1
        self.claims_by_device.setdefault(did, []).append(claim_key)
        if admin:
            return
        if share:
            self.shared_count[did] = self.shared_count.get(did, 0) + 1
            self.shared.add(did)
            per = self.capacity.setdefault(did, {})
            for n, v in (consumed or {}).items():
                per[n] = per.get(n, Fraction(0)) + v
        else:
            self.devices.add(did)

    def remove_result(
        self, claim_key: str, did: DeviceID, *, admin: bool, share: bool, consumed: dict[str, Fraction] | None
    ) -> None:
        """Undo add_result (a gang that could not be placed whole gives its devices back)."""
        self.releases += 1
        self.version += 1
        users = self.claims_by_device.get(did, [])
        if claim_key in users:
            users.remove(claim_key)
        if admin:
            return
        if share:
            self.shared_count[did] -= 1
            per = self.capacity[did]
            for n, v in (consumed or {}).items():
                per[n] -= v
            if self.shared_count[did] == 0:
                del self.shared_count[did]
                self.shared.discard(did)
                del self.capacity[did]
        else:
            self.devices.discard(did)


def allocated_state(claims: Iterable[ResourceClaim], features: Features) -> AllocatedState:
    state = AllocatedState()
    for claim in claims:
        alloc = claim.status.allocation
        if alloc is None:
            continue
        for i, r in enumerate(alloc.devices.results):
            did = (r.driver, r.pool, r.device)
            state.claims_by_device.setdefault(did, []).append(f"{claim.namespace}/{claim.name}")
            if r.admin_access:
                continue  # admin access never marks a device in use
            if features.consumable_capacity and r.share_id:
                state.shared.add(did)
                state.shared_count[did] = state.shared_count.get(did, 0) + 1
                per = state.capacity.setdefault(did, {})
                for name, q in (r.consumed_capacity or {}).items():
                    v = parse_quantity(
                        q,
                        f"ResourceClaim {claim.namespace}/{claim.name}: "
                        f"status.allocation.devices.results[{i}].consumedCapacity.{name}",
                    )
                    per[name] = per.get(name, Fraction(0)) + v
            else:
                state.devices.add(did)
    return state
