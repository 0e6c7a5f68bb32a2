"""Per-node scores kept between scheduling cycles, for the score plugins whose score of a node
depends on that node alone: NodeResourcesFit and NodeResourcesBalancedAllocation read the
node's requested and allocatable amounts and the pod's requests, and normalise nothing over
the feasible nodes. Pods with the same requests get the same score from a node whose amounts
have not changed since, so a cycle recomputes only the nodes a pod was bound to or released
from since the last pod like it (kube-scheduler scores every feasible node each cycle; the
numbers are the same).

A few changed nodes are scored in plain Python (numpy's per-call cost is most of the work on
a handful of nodes): LeastAllocated and the two-resource balance, in the same integer and
float64 arithmetic as the plugins' numpy code (tests/test_node_scores.py compares them)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from draopt.scheduler.plugins import SCORE_PLUGINS, balanced_allocation, node_resources_fit
from draopt.scheduler.plugins.helper import MAX

PER_NODE = (node_resources_fit.NAME, balanced_allocation.NAME)
MAX_ENTRIES = 1024  # kinds of requests kept (one int64 per node each)
SCALAR_NODES = 8  # at most this many changed nodes are scored in plain Python


class NodeScores:
    def __init__(self, n_nodes: int, is_scalar: Callable[[str], bool], native: tuple[str, ...]):
        # Bumped for a node whenever its requested amounts change (Scheduler.placed).
        self.changes = np.zeros(n_nodes, dtype=np.int64)
        self._cache: dict[tuple, Any] = {}
        self._plugins: dict[tuple, tuple] = {}  # (plugin, profile) -> (profile, fit?, resources, backed by DRA)
        self._is_scalar = is_scalar
        self._native = native  # resources always scored (cpu, memory, ephemeral-storage)

    def touched(self, idx: int) -> None:
        self.changes[idx] += 1

    def score(self, sched, plugin: str, demand, info, prof, fe: np.ndarray):
        """The plugin's scores over `fe`, as SCORE_PLUGINS[plugin] gives them; None when it
        scores every node alike (for these plugins: it depends on the requests only)."""
        got = self._plugins.get((plugin, prof.name))
        if got is None or got[0] is not prof:
            fit = plugin == node_resources_fit.NAME
            resources = prof.fit.resources if fit else prof.balanced_resources
            got = self._plugins[(plugin, prof.name)] = (
                prof,
                fit,
                resources,
                any(r in sched.ext_classes for r, _ in resources),
                # (the defaults: the requests are the pod's non-zero cpu and memory, as a pair)
                fit and [r for r, _ in resources] == ["cpu", "memory"],
            )
        _, fit, resources, backed_by_dra, nonzero_pair = got
        scorer = SCORE_PLUGINS[plugin]
        if backed_by_dra:
            # A resource backed by DRA scores from the allocated devices too: not kept.
            return scorer(sched, demand, info, prof, fe, None)
        if nonzero_pair:
            requests = tuple(sched.nonzero(demand))
        else:
            requests = tuple([sched._pod_request(demand, r, fit) for r, _ in resources])
        key = (plugin, prof.name, requests)
        got = self._cache.get(key, self._cache)
        if got is self._cache:
            if len(self._cache) >= MAX_ENTRIES:
                del self._cache[next(iter(self._cache))]
            every = np.arange(len(self.changes), dtype=np.int64)
            s = scorer(sched, demand, info, prof, every, None)
            got = self._cache[key] = None if s is None else (np.array(s, dtype=np.int64), self.changes.copy())
        if got is None:
            return None
        scores, seen = got
        dirty = (seen != self.changes).nonzero()[0]
        if dirty.size:
            one = None
            if dirty.size <= SCALAR_NODES:
                if fit and prof.fit.type == "LeastAllocated":
                    one = least_allocated_one
                elif not fit and len(resources) <= 2:
                    one = balanced_one_node
            if one is not None:
                for i in dirty.tolist():
                    scores[i] = one(self._columns(sched, resources, requests, i, fit))
            else:
                scores[dirty] = scorer(sched, demand, info, prof, dirty, None)
            seen[dirty] = self.changes[dirty]
        return scores[fe]

    def _columns(self, sched, resources, requests, i: int, nonzero: bool) -> list[tuple[int, int, int, int, int]]:
        """Scheduler.resource_columns for node `i`, as Python ints (resources not backed by DRA)."""
        out = []
        for (r, w), pod_req in zip(resources, requests):
            if nonzero and r in ("cpu", "memory"):
                node_req = int((sched.nz_cpu if r == "cpu" else sched.nz_mem)[i])
            else:
                node_req = int(sched.used[r][i])
            if r not in self._native and (not self._is_scalar(r) or pod_req == 0):
                cap = 0
            else:
                cap = int(sched.alloc[r][i])
            out.append((node_req + pod_req, node_req, cap, pod_req, w))
        return out


def least_allocated_one(cols) -> int:
    """node_resources_fit.weighted_resource_score(least_requested(...)) for one node."""
    total = wsum = 0
    for req, _, cap, _, w in cols:
        if cap != 0:
            s = 0 if req > cap else (cap - req) * MAX // cap
            total += s * w
            wsum += w
    return total // wsum if wsum > 0 else 0


def _fraction(r: int, cap: int) -> float:
    # numpy's int64 / int64: both as float64, then divided
    return min(float(r) / float(cap), 1.0) if cap != 0 else 0.0


def balanced_one_node(cols) -> int:
    """balanced_allocation.balanced_allocation for one node, one or two resources."""
    present = [c[2] != 0 for c in cols]
    if len(cols) == 2:
        both = present[0] and present[1]

        def balance(k: int) -> int:
            std = abs((_fraction(cols[0][k], cols[0][2]) - _fraction(cols[1][k], cols[1][2])) / 2) if both else 0.0
            return int((1.0 - std) * MAX)

        with_pod, without = balance(0), balance(1)
    else:
        with_pod = without = int((1.0 - 0.0) * MAX)
    return MAX // 2 + (MAX // 2 + with_pod - without) // 2
