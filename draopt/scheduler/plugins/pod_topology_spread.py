"""PodTopologySpread's Score (kubernetes/kubernetes,
pkg/scheduler/framework/plugins/podtopologyspread/scoring.go): log(size + 2) weights,
cnt * weight + maxSkew - 1, normalised 100 * (max + min - s) / max."""

from __future__ import annotations

import math

import numpy as np

from draopt.scheduler.config import HOSTNAME
from draopt.scheduler.plugins.helper import MAX

NAME = "PodTopologySpread"


def spread_normalize(scores: np.ndarray, ignored: np.ndarray) -> np.ndarray:
    """PodTopologySpread.NormalizeScore: ignored nodes 0; else 100 * (max + min - s) / max."""
    valid = ~ignored
    if not valid.any():
        return np.zeros(len(scores), dtype=np.int64)
    lo = int(scores[valid].min())
    hi = int(scores[valid].max())
    if hi == 0:
        return np.where(valid, MAX, 0).astype(np.int64)
    return np.where(valid, MAX * (hi + lo - scores) // hi, 0).astype(np.int64)


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def score(sched, demand, info, prof, fe: np.ndarray, dra: np.ndarray):
    """PodTopologySpread Score (podtopologyspread/scoring.go)."""
    if info.spread:
        rules = [r for r in info.spread if r.when_unsatisfiable == "ScheduleAnyway"]
        require_all = True
    else:
        rules = sched.default_rules(info, prof, "ScheduleAnyway")
        require_all = prof.spread_defaulting != "System"
    if not rules:
        return None
    all_keys = sched.has_keys([r.topology_key for r in rules])
    ignored = ~all_keys[fe] if require_all else np.zeros(len(fe), dtype=bool)
    valid = fe[~ignored]
    raw = np.zeros(len(fe), dtype=np.float64)
    for r in rules:
        counts = sched.rule_counts(r, info)
        ids, values = sched.domains(r.topology_key)
        has = ids[fe] >= 0
        if r.topology_key == HOSTNAME:
            weight = topology_normalizing_weight(len(valid))
            cnt = counts[fe]
        else:
            # a node without the label is in the domain "" (node.Labels[key] in Go)
            empty = values.index("") if "" in values else len(values)
            full = np.where(ids >= 0, ids, empty)
            weight = topology_normalizing_weight(len(np.unique(full[valid])))
            elig = sched.eligible(demand, r)
            mask = all_keys if require_all else np.ones(len(sched.nodes), dtype=bool)
            if elig is not None:
                mask = mask & elig
            known = np.zeros(len(values) + 1, dtype=bool)
            known[np.unique(full[valid])] = True  # domains of the candidate nodes only
            sums = np.bincount(full[mask], weights=counts[mask], minlength=len(values) + 1)
            sums = np.where(known, sums, 0)
            cnt = sums[full[fe]]
        raw += np.where(has, cnt * weight + (r.max_skew - 1), 0.0)
    scores = np.floor(raw + 0.5).astype(np.int64)
    scores[ignored] = 0
    return spread_normalize(scores, ignored)
