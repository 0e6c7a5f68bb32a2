"""An object given again in a later `-f` file, applied over the earlier one as `kubectl apply` does.

``kubectl apply -f a.yaml -f b.yaml`` sends each object in turn; an object of ``b.yaml`` that
``a.yaml`` (or the cluster) already has is patched, not refused: kubectl computes a three-way
patch from the object's last applied configuration (the
``kubectl.kubernetes.io/last-applied-configuration`` annotation), the new manifest and the live
object (``k8s.io/kubectl/pkg/cmd/apply/patcher.go``; strategic merge for built-in kinds,
JSON merge patch for custom resources):

* a field the manifest sets takes the manifest's value (mappings are merged field by field);
* a field the manifest leaves out stays as it is live (``spec.nodeName`` and ``status`` that the
  scheduler and kubelet wrote), unless the last applied configuration had it: then it is deleted;
* lists are replaced, except those strategic merge merges by key in built-in kinds
  (``containers``, ``initContainers``, ``ephemeralContainers``, ``volumes``, ``resourceClaims``,
  ``env``, ``imagePullSecrets`` by ``name``; ``volumeMounts`` by ``mountPath``; ``ports`` by
  ``containerPort``: ``k8s.io/api/core/v1/types.go`` ``patchMergeKey`` tags), element by element.

A Pod's spec is immutable except container images, ``activeDeadlineSeconds``,
``terminationGracePeriodSeconds`` and added tolerations (``ValidatePodUpdate``,
``pkg/apis/core/validation/validation.go``): a later manifest that changes more is refused by
the API server and kubectl goes on with the next object, so the earlier Pod stays as it was (a
note says so). The annotation kubectl writes back is not added (nothing here reads it).
"""

from __future__ import annotations

import copy
import json
from typing import Any

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "resourceClaims": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
}
BUILT_IN_GROUPS = ("v1", "apps/v1", "batch/v1", "scheduling.k8s.io/", "resource.k8s.io/")


def last_applied(live: dict[str, Any]) -> dict[str, Any]:
    notes = (live.get("metadata") or {}).get("annotations") or {}
    text = notes.get(LAST_APPLIED) if isinstance(notes, dict) else None
    if not isinstance(text, str):
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _strategic(api_version: Any) -> bool:
    return isinstance(api_version, str) and any(
        api_version == g or g.endswith("/") and api_version.startswith(g) for g in BUILT_IN_GROUPS
    )


def _merge(live: Any, new: Any, last: Any, strategic: bool, field: str = "") -> Any:
    if isinstance(new, dict) and isinstance(live, dict):
        last = last if isinstance(last, dict) else {}
        out = {k: v for k, v in live.items() if k in new or k not in last}  # dropped from the manifest: deleted
        for k, v in new.items():
            out[k] = _merge(live.get(k), v, last.get(k), strategic, k) if k in live else copy.deepcopy(v)
        return out
    key = MERGE_KEYS.get(field) if strategic else None
    if (
        key
        and isinstance(new, list)
        and isinstance(live, list)
        and all(isinstance(x, dict) and key in x for x in new + live)
    ):
        last_items = {x.get(key): x for x in last if isinstance(x, dict)} if isinstance(last, list) else {}
        new_items = {x[key]: x for x in new}
        out_list = []
        for x in live:  # live order kept; removed when the last applied list had it and the manifest not
            if x[key] in new_items:
                out_list.append(_merge(x, new_items[x[key]], last_items.get(x[key]), strategic))
            elif x[key] not in last_items:
                out_list.append(x)
        have = {x[key] for x in live}
        out_list += [copy.deepcopy(x) for x in new if x[key] not in have]
        return out_list
    return copy.deepcopy(new)


def apply_over(live: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`new` applied over `live` (see the module's doc)."""
    return _merge(live, new, last_applied(live), _strategic(new.get("apiVersion")))


_MUTABLE_POD_FIELDS = ("activeDeadlineSeconds", "terminationGracePeriodSeconds")


def _pod_spec_shape(spec: Any) -> Any:
    if not isinstance(spec, dict):
        return spec
    out = {k: v for k, v in spec.items() if k not in _MUTABLE_POD_FIELDS and k != "tolerations"}
    for part in ("containers", "initContainers"):
        if isinstance(out.get(part), list):
            out[part] = [{k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c for c in out[part]]
    return out


def pod_update_refused(live: dict[str, Any], merged: dict[str, Any]) -> bool:
    """The API server refuses the update: the Pod's spec changed beyond its mutable fields, or a
    toleration was removed (only additions are allowed)."""
    old, new = live.get("spec") or {}, merged.get("spec") or {}
    if _pod_spec_shape(old) != _pod_spec_shape(new):
        return True
    old_tolerations = old.get("tolerations") or [] if isinstance(old, dict) else []
    new_tolerations = new.get("tolerations") or [] if isinstance(new, dict) else []
    return any(t not in new_tolerations for t in old_tolerations)


__all__ = ["LAST_APPLIED", "apply_over", "last_applied", "pod_update_refused"]
