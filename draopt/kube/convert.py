"""Older API versions read as `resource.k8s.io/v1`, as the API server converts them.

The API server stores one internal form and converts every served version to and from it
(kubernetes/kubernetes `pkg/apis/resource/v1beta1/conversion.go` and the generated converters).
draopt's models are the `v1` form, which is field for field the internal one; this module
turns the documents of the other served versions into it before they are parsed:

* `resource.k8s.io/v1beta2` (1.33+) has the same fields as `v1` for every kind: only the
  `apiVersion` changes; so does `resource.k8s.io/v1alpha3` DeviceTaintRule.
* `resource.k8s.io/v1beta1` (1.32+):

  - ResourceSlice: a device's fields are under `basic` (`{name, basic: {attributes, capacity,
    consumesCounters, taints, ...}}`); `v1` has them on the device itself. `spec.nodeName: ""`
    and `spec.allNodes: false` are Go zero values in v1beta1 and become "unset" (`nil`).
  - ResourceClaim / ResourceClaimTemplate: a request's exact fields (`deviceClassName`,
    `selectors`, `allocationMode`, `count`, `adminAccess`, `tolerations`, `capacity`) sit on the
    request itself; if any of them is set (`hasAnyMainRequestFieldsSet`: a non-empty class
    name or mode, a non-zero count, or a present selectors/adminAccess/tolerations/capacity),
    they move into `exactly`. `firstAvailable` stays; sub-requests and the status are the same.
  - DeviceClass: the same fields.

Unknown fields are left where they are (the strict check reports them against the version
they were written in, see :func:`schema_for`). The result always says `resource.k8s.io/v1`,
and draopt's output is `v1`.
"""

from __future__ import annotations

from typing import Any

from draopt.kube.strict import ListOf, Obj, copy_schema, model_schema

GROUP = "resource.k8s.io"
V1 = f"{GROUP}/v1"
V1BETA1 = f"{GROUP}/v1beta1"
V1BETA2 = f"{GROUP}/v1beta2"
V1ALPHA3 = f"{GROUP}/v1alpha3"

# The versions the API server serves each kind in (1.32 .. 1.36 and later).
SERVED_VERSIONS: dict[str, tuple[str, ...]] = {
    "DeviceClass": (V1, V1BETA2, V1BETA1),
    "ResourceSlice": (V1, V1BETA2, V1BETA1),
    "ResourceClaim": (V1, V1BETA2, V1BETA1),
    "ResourceClaimTemplate": (V1, V1BETA2, V1BETA1),
    "DeviceTaintRule": (V1, V1BETA2, V1ALPHA3),
}

# v1beta1 DeviceRequest fields that v1 has in ExactDeviceRequest, in Go field order.
_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations", "capacity")


class ConversionError(ValueError):
    """The document cannot be converted: `path` names the field (its JSON type is wrong)."""

    def __init__(self, path: str, message: str):
        super().__init__(f"field {path}: {message}")
        self.path, self.message = path, message


def _set_in_v1beta1(key: str, value: Any) -> bool:
    """hasAnyMainRequestFieldsSet, field by field (Go zero values are unset)."""
    if value is None:
        return False
    if key in ("deviceClassName", "allocationMode"):
        return value != ""
    if key == "count":
        return value != 0
    return True  # selectors, adminAccess, tolerations, capacity: any non-nil value


def _request_v1beta1(req: Any) -> Any:
    if not isinstance(req, dict):
        return req
    main = {k: req[k] for k in _EXACT_FIELDS if k in req}
    out: dict[str, Any] = {}
    if "name" in req:
        out["name"] = req["name"]
    if any(_set_in_v1beta1(k, v) for k, v in main.items()):
        exactly: dict[str, Any] = {}
        for k in _EXACT_FIELDS:
            v = main.get(k)
            if not _set_in_v1beta1(k, v):
                continue
            if k == "tolerations" and isinstance(v, list) and not v:
                continue  # converted element by element: an empty list stays nil
            exactly[k] = v
        out["exactly"] = exactly
    for k, v in req.items():
        if k not in out and k not in _EXACT_FIELDS:
            out[k] = v  # name, firstAvailable, and unknown fields, in their order
    return out


def _claim_spec_v1beta1(spec: Any) -> Any:
    if not isinstance(spec, dict) or not isinstance(spec.get("devices"), dict):
        return spec
    requests = spec["devices"].get("requests")
    if not isinstance(requests, list):
        return spec
    return {**spec, "devices": {**spec["devices"], "requests": [_request_v1beta1(r) for r in requests]}}


def _device_v1beta1(dev: Any, path: str) -> Any:
    if not isinstance(dev, dict) or "basic" not in dev:
        return dev
    basic = dev["basic"]
    if basic is None:
        basic = {}
    if not isinstance(basic, dict):
        raise ConversionError(f"{path}.basic", f"expected an object, got {type(basic).__name__}")
    out: dict[str, Any] = {}
    if "name" in dev:
        out["name"] = dev["name"]
    out.update(basic)
    for k, v in dev.items():
        if k not in ("name", "basic"):
            out.setdefault(k, v)
    return out


def _slice_v1beta1(doc: dict) -> None:
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return
    spec = doc["spec"] = dict(spec)
    if spec.get("nodeName") == "":
        del spec["nodeName"]
    if spec.get("allNodes") is False:
        del spec["allNodes"]
    devices = spec.get("devices")
    if isinstance(devices, list):
        spec["devices"] = [_device_v1beta1(d, f"spec.devices[{i}]") for i, d in enumerate(devices)]


def to_v1(doc: dict) -> dict:
    """The document in `resource.k8s.io/v1` form (a converted copy; `doc` is not changed: what
    conversion changes is copied, what it does not is shared). Documents of other groups and of
    `v1` are returned as they are."""
    api_version = doc.get("apiVersion")
    kind = doc.get("kind")
    if api_version in (V1BETA2, V1ALPHA3):
        return {**doc, "apiVersion": V1}
    if api_version != V1BETA1:
        return doc
    out = {**doc, "apiVersion": V1}
    if kind == "ResourceSlice":
        _slice_v1beta1(out)
    elif kind == "ResourceClaim" and "spec" in out:
        out["spec"] = _claim_spec_v1beta1(out["spec"])
    elif kind == "ResourceClaimTemplate" and isinstance(out.get("spec"), dict) and "spec" in out["spec"]:
        out["spec"] = {**out["spec"], "spec": _claim_spec_v1beta1(out["spec"]["spec"])}
    return out


# ------------------------------------------------------------------ schemas per version
_SCHEMAS: dict[str, Obj] = {}  # kind -> its v1beta1 schema


def _v1beta1_request_schema() -> Obj:
    from draopt.kube.models.resource import DeviceRequest, ExactDeviceRequest

    v1 = model_schema(DeviceRequest)
    req = Obj(name=None, firstAvailable=copy_schema(v1["firstAvailable"]))
    exact = model_schema(ExactDeviceRequest)
    for k in _EXACT_FIELDS:
        req[k] = copy_schema(exact[k])
    return req


def schema_for(model: type, api_version: Any) -> Obj:
    """The strict-decoding schema of a kind in the version it is written in."""
    if api_version != V1BETA1 or model.__name__ not in ("ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"):
        return model_schema(model)
    cached = _SCHEMAS.get(model.__name__)
    if cached is not None:
        return cached
    schema = copy_schema(model_schema(model))
    if model.__name__ == "ResourceSlice":
        from draopt.kube.models.resource import Device

        basic = copy_schema(model_schema(Device))
        basic.pop("name", None)
        schema["spec"]["devices"] = ListOf(Obj(name=None, basic=basic))
    else:
        spec = schema["spec"] if model.__name__ == "ResourceClaim" else schema["spec"]["spec"]
        spec["devices"]["requests"] = ListOf(_v1beta1_request_schema())
    _SCHEMAS[model.__name__] = schema
    return schema


# ------------------------------------------------------------------ what the served version rejects
def slice_layout_error(slice_obj: Any) -> str | None:
    """Kubernetes 1.35 and later reject a ResourceSlice with both `sharedCounters` and
    `devices` (validation: "only one of `sharedCounters` or `devices` is allowed"); 1.34 (the
    DRAPartitionableDevices alpha) required the counter sets in the slice of the devices that
    consume them, and NVIDIA's driver still publishes that layout for 1.34. draopt models
    1.35+: such a slice is an error, never a slice whose devices are silently ignored."""
    spec = getattr(slice_obj, "spec", None)
    if spec is None or not spec.shared_counters or not spec.devices:
        return None
    return (
        "spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed "
        f"(this slice has {len(spec.shared_counters)} counter set(s) and {len(spec.devices)} device(s): the "
        "Kubernetes 1.34 layout, which the API server of 1.35 and later rejects; publish the counter sets "
        "in a separate ResourceSlice of the same pool and count it in resourceSliceCount)"
    )


__all__ = ["SERVED_VERSIONS", "ConversionError", "schema_for", "slice_layout_error", "to_v1"]
