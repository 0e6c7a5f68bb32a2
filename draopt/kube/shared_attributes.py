"""Device attributes read once per value: one `DeviceAttribute` per distinct simple value.

A ResourceSlice dump repeats the same attribute values over and over (every node's CPUs have
the same `coreID`s, every GPU the same `productName`, `numaNode`, `pciBusID`s): round 2's
`gen_big.py` dump has 345,600 attributes, and building their pydantic models was most of the
time of reading it. Within one read (:func:`draopt.kube.loader.load_text`), an attribute of one
simple value (`{int: 3}`, `{bool: true}`, `{string: ...}`, `{version: ...}`, of exactly that
JSON type) is validated by pydantic the first time and the same model is used for every later
attribute with that value (pydantic keeps a model it is given: `revalidate_instances` is
`never`). Every other attribute is validated as before, in its place. The slice's fields, the
models and their values are the same; identical attributes are one object, which nothing
changes after reading.

A device's `consumesCounters` entries are shared the same way (every pool of a partitionable
driver lists the same partitions drawing the same amounts): one `DeviceCounterConsumption` per
entry written, so a pool's counter layout reads each entry's positions once (PoolLayout).

A slice's `spec.nodeSelector` is shared the same way (every slice of a driver usually selects
the same nodes): one `NodeSelector` per distinct selector written, so what is worked out per
selector (which nodes it reaches, its content in an allocation's node selector) is worked out
once. A selector that does not validate on its own stays in place, for the slice's validation
to report as before.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from draopt.kube.models.core import NodeSelector
from draopt.kube.models.resource import DeviceAttribute, DeviceCounterConsumption

# alias -> the one JSON type pydantic keeps as it is (an int field also takes 1.0 or "1"; not here)
_SIMPLE = {"int": int, "bool": bool, "string": str, "version": str}
MAX_CACHED = 200_000  # distinct values kept per read


def share_attributes(doc: dict[str, Any], cache: dict[tuple[str, Any], Any]) -> dict[str, Any]:
    """`doc` (a ResourceSlice in v1 form, not changed) with its devices' simple attributes
    replaced by the models of `cache` (filled as they are first seen)."""
    spec: Any = doc.get("spec")
    if not isinstance(spec, dict):
        return doc
    selector = spec.get("nodeSelector")
    if selector:
        shared_selector = _shared_model(NodeSelector, "nodeSelector", selector, cache)
        if shared_selector is not selector:
            spec = {**spec, "nodeSelector": shared_selector}
            doc = {**doc, "spec": spec}
    devices = spec.get("devices")
    if not isinstance(devices, list):
        return doc
    out = []
    simple, cached, validate = _SIMPLE.get, cache.get, DeviceAttribute.model_validate
    for device in devices:
        if type(device) is dict:
            consumes = device.get("consumesCounters")
            if type(consumes) is list and consumes:
                device = {
                    **device,
                    "consumesCounters": [
                        _shared_model(DeviceCounterConsumption, "consumesCounters", c, cache) for c in consumes
                    ],
                }
        attributes = device.get("attributes") if type(device) is dict else None
        if type(attributes) is not dict or not attributes:
            out.append(device)
            continue
        shared: dict[Any, Any] = {}
        for name, attribute in attributes.items():
            if type(attribute) is dict and len(attribute) == 1:
                ((alias, value),) = attribute.items()
                if type(value) is simple(alias):
                    model = cached((alias, value))
                    if model is None:
                        model = validate(attribute)
                        if len(cache) < MAX_CACHED:
                            cache[(alias, value)] = model
                    attribute = model
            shared[name] = attribute
        out.append({**device, "attributes": shared})
    return {**doc, "spec": {**spec, "devices": out}}


def _shared_model(model_type, field: str, value: Any, cache: dict) -> Any:
    """The one model of `model_type` for `value` as written (a dict) in this read, or `value`
    itself when it is no dict or does not validate alone (the object's validation reports it)."""
    if type(value) is not dict:
        return value
    # (repr tells 1 from "1" and True, and keeps the order written: equal reprs, equal values)
    key = (field, repr(value))
    model = cache.get(key)
    if model is None:
        try:
            model = model_type.model_validate(value)
        except ValidationError:
            return value
        if len(cache) < MAX_CACHED:
            cache[key] = model
    return model


__all__ = ["MAX_CACHED", "share_attributes"]
