"""What CEL sees of a loaded device, built once per device and shared by every inventory made
from the same objects: the nodes a scheduler pass visits, and repeated allocate calls on one
ObjectSet. A loaded Device is never changed in place (draopt copies objects it edits), so its
CEL input holds for as long as the object lives; the entry keeps the device it was built from,
so an id is never taken for another object's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from draopt.kube.models import Device

if TYPE_CHECKING:
    from draopt.cel.device import CelDevice

_ATTRIBUTE_FIELDS = (
    ("bool_", "bool"),
    ("int_", "int"),
    ("string", "string"),
    ("version", "version"),
    ("bools", "bools"),
    ("ints", "ints"),
    ("strings", "strings"),
    ("versions", "versions"),
)


def cel_input(device: Device) -> dict:
    """The parts of a device CEL sees, as Kubernetes JSON (cheaper than a full model dump)."""
    attributes = {}
    for name, a in device.attributes.items():
        fields = a.__dict__  # the model's field values (one dict read each, not two getattr)
        attributes[name] = {key: v for f, key in _ATTRIBUTE_FIELDS if (v := fields.get(f)) is not None}
    return {
        "name": device.name,
        "attributes": attributes,
        "capacity": {name: {"value": c.value} for name, c in device.capacity.items()},
        "allowMultipleAllocations": bool(device.allow_multiple_allocations),
    }


class CelDevices:
    """CelDevice per (device object, driver, list-type gate); cleared when `limit` entries are
    held, so a long run over many inputs stays bounded."""

    def __init__(self, limit: int = 65536) -> None:
        self.limit = limit
        self._by_device: dict[tuple[int, str, bool], tuple[Device, CelDevice]] = {}

    def of(self, device: Device, driver: str, list_type_attributes: bool) -> CelDevice:
        key = (id(device), driver, list_type_attributes)
        got = self._by_device.get(key)
        if got is not None and got[0] is device:
            return got[1]
        from draopt.cel import make_cel_device

        cel = make_cel_device(driver, cel_input(device), list_type_attributes=list_type_attributes)
        if len(self._by_device) >= self.limit:
            self._by_device.clear()
        self._by_device[key] = (device, cel)
        return cel


CEL_DEVICES = CelDevices()  # the process's: every inventory reads its devices' CEL input here
