"""JobSet's and LeaderWorkerSet's exclusive-topology annotations, as their webhooks apply them:
required pod (anti-)affinity that keeps a Job (JobSet) or a group (LWS) alone in one topology
domain (jobset pkg/webhooks/pod_mutating_webhook.go setExclusiveAffinities; lws
SetExclusiveAffinities).  `r` is the controller's reader of the object (draopt.kube.controllers)."""

from __future__ import annotations

import copy
from typing import Any

JOB_INDEX_KEY = "batch.kubernetes.io/job-completion-index"  # the Job controller's index label


JOBSET_EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
JOBSET_NODE_SELECTOR_STRATEGY = "alpha.jobset.sigs.k8s.io/node-selector-strategy"
LWS_EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"


def exclusive_topology(r, key: str, *templates: Any) -> str | None:
    """The exclusive-topology annotation's topology key, on the object or one of its (job or pod)
    templates (the controllers copy the object's onto the pods), unless the JobSet uses the
    node-selector strategy (nodes labelled beforehand: no affinity injected)."""
    found = None
    for meta in [r.doc.get("metadata")] + [t.get("metadata") for t in templates if isinstance(t, dict)]:
        notes = meta.get("annotations") if isinstance(meta, dict) else None
        if isinstance(notes, dict):
            if key == JOBSET_EXCLUSIVE and JOBSET_NODE_SELECTOR_STRATEGY in notes:
                return None
            if found is None and notes.get(key) is not None:
                if not isinstance(notes[key], str) or not notes[key]:
                    raise r.error(f"metadata.annotations[{key}]", "expected a topology label key")
                found = notes[key]
    return found


def _required_terms(doc: dict[str, Any], part: str) -> list:
    affinity = doc["spec"].setdefault("affinity", {})
    return affinity.setdefault(part, {}).setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])


def exclusive_terms(
    doc: dict[str, Any], label: str, value: str, topology: str, namespace_selector: dict | None = None
) -> None:
    """Required podAffinity to the pods of `label` = `value` and podAntiAffinity to every other
    value of `label`, on `topology`: one group per topology domain (JobSet's
    setExclusiveAffinities, pkg/webhooks/pod_mutating_webhook.go; LWS's SetExclusiveAffinities)."""
    doc["spec"] = copy.deepcopy(doc["spec"])
    extra = {} if namespace_selector is None else {"namespaceSelector": namespace_selector}
    _required_terms(doc, "podAffinity").append(
        dict(
            {
                "labelSelector": {"matchExpressions": [{"key": label, "operator": "In", "values": [value]}]},
                "topologyKey": topology,
            },
            **extra,
        )
    )
    _required_terms(doc, "podAntiAffinity").append(
        dict(
            {
                "labelSelector": {
                    "matchExpressions": [
                        {"key": label, "operator": "Exists"},
                        {"key": label, "operator": "NotIn", "values": [value]},
                    ]
                },
                "topologyKey": topology,
            },
            **extra,
        )
    )


def jobset_exclusive(doc: dict[str, Any], topology: str) -> None:
    """JobSet's pod webhook: a Job's leader (completion index 0) gets the exclusive terms (every
    namespace: an empty namespaceSelector); a follower, created only once its leader is
    scheduled, a nodeSelector for the leader's domain: here a required podAffinity to the
    leader on `topology` (the leader's domain; pending while the leader is)."""
    labels = doc["metadata"].get("labels") or {}
    job_key = labels["jobset.sigs.k8s.io/job-key"]
    if labels.get(JOB_INDEX_KEY, "0") == "0":
        exclusive_terms(doc, "jobset.sigs.k8s.io/job-key", job_key, topology, {})
        return
    doc["spec"] = copy.deepcopy(doc["spec"])
    _required_terms(doc, "podAffinity").append(
        {
            "labelSelector": {
                "matchExpressions": [
                    {"key": "jobset.sigs.k8s.io/job-key", "operator": "In", "values": [job_key]},
                    {"key": JOB_INDEX_KEY, "operator": "In", "values": ["0"]},
                ]
            },
            "topologyKey": topology,
        }
    )
