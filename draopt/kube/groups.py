"""API groups: the API server routes an object by group, version and kind, so a custom resource may
share its kind name with a Kubernetes kind (Kueue's Workload, Volcano's Job and PodGroup,
scheduler-plugins' PodGroup). draopt reads a kind only in the groups it serves that kind in; the
same kind name in a group outside Kubernetes is another object, skipped as any unused kind is."""

from __future__ import annotations

from typing import Any


def api_group(api_version: Any) -> str | None:
    """The group of an apiVersion (``""``: the core group of ``v1``); None when it is not a string."""
    if not isinstance(api_version, str):
        return None
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def is_kubernetes_group(group: str) -> bool:
    """A group Kubernetes itself serves: the core group, the unqualified ones (apps, batch,
    policy...) and ``*.k8s.io`` (resource.k8s.io, scheduling.k8s.io...). A custom resource's group
    must contain a dot (apiextensions validation) and ``*.k8s.io`` is reserved for Kubernetes;
    ``x-k8s.io`` groups (SIG projects: Kueue, JobSet) are custom resources."""
    return "." not in group or group.endswith(".k8s.io")


def of_another_group(api_version: Any, served: tuple[str, ...]) -> str | None:
    """The group of `api_version` when it names a custom resource's group, none of the groups of
    `served` (the apiVersions draopt reads the kind in); else None (the same group, a Kubernetes
    group, or no apiVersion: the kind's own checks say what is wrong)."""
    group = api_group(api_version)
    if group is None or is_kubernetes_group(group) or group in {api_group(v) for v in served}:
        return None
    return group


__all__ = ["api_group", "is_kubernetes_group", "of_another_group"]
