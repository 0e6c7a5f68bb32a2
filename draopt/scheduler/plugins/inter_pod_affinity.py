"""InterPodAffinity's Score (kubernetes/kubernetes,
pkg/scheduler/framework/plugins/interpodaffinity/scoring.go)."""

from __future__ import annotations

import numpy as np

from draopt.scheduler.plugins.helper import MAX

NAME = "InterPodAffinity"


def score(sched, demand, info, prof, fe: np.ndarray, dra: np.ndarray):
    """InterPodAffinity Score (interpodaffinity/scoring.go): per topology domain, + weight for
    each existing pod matching one of the pod's preferred affinity terms (- for anti-affinity),
    and, symmetrically, for each existing pod whose preferred (anti-)affinity terms match this
    pod (unless ignorePreferredTermsOfExistingPods), and hardPodAffinityWeight for existing
    pods' required affinity terms matching it; normalised 100 * (s - min) / (max - min)."""
    if not (info.preferred_affinity or info.preferred_anti or sched.affinity_groups):
        return None  # no term on either side: every node scores 0
    ns = sched.ns_labels
    raw = np.zeros(len(fe), dtype=np.int64)
    touched = False
    for sign, terms in ((1, info.preferred_affinity), (-1, info.preferred_anti)):
        for w, t in terms:
            sums = sched.domain_sums(t.topology_key, sched.term_counts(t))
            if sums.any():
                ids = sched.domains(t.topology_key)[0][fe]
                raw += np.where(ids >= 0, sign * w * sums[np.maximum(ids, 0)], 0)
                touched = True
    for (kind, weight, _), (term, where) in sched.affinity_groups.items():
        if kind == "anti" or not where:
            continue
        if kind == "req":
            weight = prof.hard_pod_affinity_weight
        elif prof.ignore_preferred_terms_of_existing_pods:
            continue
        if not weight or not term.matches(info, ns):
            continue
        ids, values = sched.domains(term.topology_key)
        per = np.zeros(len(values), dtype=np.int64)
        for idx, c in where.items():
            if ids[idx] >= 0:
                per[ids[idx]] += c
        if per.any():
            sel = ids[fe]
            raw += np.where(sel >= 0, weight * per[np.maximum(sel, 0)], 0)
            touched = True
    if not touched:
        return None
    lo, hi = int(raw.min()), int(raw.max())
    if hi == lo:
        return None
    # Go: int64(float64(MaxNodeScore) * (float64(s - min) / float64(max - min)))
    return (float(MAX) * ((raw - lo).astype(np.float64) / float(hi - lo))).astype(np.int64)
