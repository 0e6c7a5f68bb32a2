"""The `kube-scheduler` policy of `draopt simulate`: a KubeSchedulerConfiguration profile's node
choice on the simulator's arrays.

What is modelled (the same formulas as `draopt place`, draopt.scheduler.cycle):
NodeResourcesFit (LeastAllocated / MostAllocated / RequestedToCapacityRatio over the profile's
resources that are node resources in the simulation; cpu and memory with the scheduler's
100m / 200Mi default for a pod that requests none), NodeResourcesBalancedAllocation,
percentageOfNodesToScore with the rotating start index, ties at random (seeded) or by name.
The trace's pods use ExactCount requests only (DynamicResources scores 0 everywhere), no
images or volumes (ImageLocality, VolumeBinding: 0), no inter-pod affinity or topology spread
and no controller owner (PodTopologySpread's system defaults do not apply).
Refused with an error naming what is not simulated: nodes with PreferNoSchedule taints while
TaintToleration scores, pods with preferred node affinity while NodeAffinity scores, pods with
inter-pod affinity or topology spread constraints, several profiles or a pod's schedulerName
other than the profile's. The device capacity the study measures is a DRA consumable capacity,
which the scheduler's resource scores do not see (as in a real cluster).
"""

from __future__ import annotations

import numpy as np

from draopt.errors import InputError
from draopt.scheduler.plugins import balanced_allocation, node_resources_fit
from draopt.scheduler.config import SchedulerConfig
from draopt.scheduler.cycle import (
    DEFAULT_MEMORY,
    DEFAULT_MILLI_CPU,
    TIE_BREAKS,
    num_feasible_nodes_to_find,
)
from draopt.scheduler.podinfo import _extra

_SKIPPED = {"ImageLocality", "VolumeBinding", "DynamicResources", "InterPodAffinity", "PodTopologySpread"}


class TraceScheduler:
    def __init__(self, c, config: SchedulerConfig, *, seed: int = 0, tie_break: str = "random"):
        if tie_break not in TIE_BREAKS:
            raise InputError(f"--tie-break: {tie_break!r}: must be random or name")
        if len(config.profiles) != 1:
            raise InputError(
                f"--scheduler-config {config.source}: simulate uses one profile; this configuration "
                f"has {len(config.profiles)} ({', '.join(sorted(config.profiles))})"
            )
        self.c = c
        self.profile = prof = next(iter(config.profiles.values()))
        self.percentage = (
            prof.percentage_of_nodes_to_score
            if prof.percentage_of_nodes_to_score is not None
            else config.percentage_of_nodes_to_score
        )
        self.seed, self.tie_break = seed, tie_break
        self._check(config)
        # Allocatable in the scheduler's units (milli-cpu, bytes, counts); 0 where not published.
        self.alloc = {}
        for j, r in enumerate(c.resources):
            col = c.alloc[:, j]
            scale = (1000 if r == "cpu" else 1) / c.res_scale[j]
            self.alloc[r] = np.where(np.isfinite(col), np.ceil(col * scale), 0).astype(np.int64)

    def _check(self, config: SchedulerConfig) -> None:
        prof, c = self.profile, self.c
        where = f"--scheduler-config {config.source}"
        if prof.score_weights.get("TaintToleration"):
            for node in c.node_objects:
                if any(t.effect == "PreferNoSchedule" for t in node.spec.taints):
                    raise InputError(
                        f"{where}: TaintToleration scoring of PreferNoSchedule taints (Node {node.name}) "
                        f"is not simulated; disable its score or use draopt place"
                    )
        for s in c.shapes:
            aff = s.placement.get("affinity") or {}
            if prof.score_weights.get("NodeAffinity") and (aff.get("nodeAffinity") or {}).get(
                "preferredDuringSchedulingIgnoredDuringExecution"
            ):
                raise InputError(
                    f"{where}: preferred node affinity (Pod {s.pods[0] if s.pods else '?'}) is not "
                    f"simulated; use draopt place"
                )
            if aff.get("podAffinity") or aff.get("podAntiAffinity"):
                raise InputError(f"{where}: inter-pod affinity (Pod {s.pods[0] if s.pods else '?'}) is not simulated")
        objs = getattr(c.objects, "pods", None) or []
        for p in objs:
            if _extra(p.spec, "topologySpreadConstraints"):
                raise InputError(f"{where}: topology spread constraints (Pod {p.namespace}/{p.name}) are not simulated")
            name = _extra(p.spec, "schedulerName") or "default-scheduler"
            if name != prof.name:
                raise InputError(
                    f"{where}: Pod {p.namespace}/{p.name} has schedulerName {name!r}, the profile is {prof.name!r}"
                )

    def state(self, st) -> dict:
        """Per-run state, kept on the simulator's State: the start index and the random stream."""
        got = getattr(st, "kube_scheduler", None)
        if got is None:
            got = st.kube_scheduler = {"start": 0, "rng": np.random.default_rng(self.seed)}
        return got

    def _request(self, s, r: str) -> int:
        v = s.resources.get(r)
        if r == "cpu":
            return int(np.ceil(float(v) * 1000)) if v else DEFAULT_MILLI_CPU
        if r == "memory":
            return int(np.ceil(float(v))) if v else DEFAULT_MEMORY
        return int(np.ceil(float(v))) if v else 0

    def _used(self, st, r: str, fe: np.ndarray) -> np.ndarray:
        j = self.c.resources.index(r)
        col = self.c.alloc[fe, j] - st.free[fe, j]
        scale = (1000 if r == "cpu" else 1) / self.c.res_scale[j]
        return np.where(np.isfinite(col), np.ceil(col * scale), 0).astype(np.int64)

    def _columns(self, st, s, resources, fe: np.ndarray, nonzero: bool):
        out = []
        for r, w in resources:
            if r not in self.c.resources:
                out.append(
                    (np.zeros(len(fe), np.int64), np.zeros(len(fe), np.int64), np.zeros(len(fe), np.int64), 0, w)
                )
                continue
            used = self._used(st, r, fe)
            if nonzero and r in ("cpu", "memory"):
                req = self._request(s, r)
                # every placed pod of the trace requests cpu/memory or gets the default alike
                used = used + self._defaults_on(st, r, fe)
            else:
                v = s.resources.get(r)
                req = int(np.ceil(float(v) * (1000 if r == "cpu" else 1))) if v else 0
            alloc = self.alloc[r][fe]
            if r not in ("cpu", "memory", "ephemeral-storage") and req == 0:
                alloc = np.zeros(len(fe), np.int64)
            out.append((used + req, used, alloc, req, w))
        return out

    def _defaults_on(self, st, r: str, fe: np.ndarray) -> np.ndarray:
        extra = getattr(st, "kube_defaults", None)
        if extra is None:
            return np.zeros(len(fe), np.int64)
        return extra[r][fe]

    def choose(self, st, s, cand: np.ndarray) -> int:
        """The node for shape `s` among the feasible nodes `cand` (sorted indexes)."""
        n = self.c.n
        state = self.state(st)
        start = state["start"]
        prof = self.profile
        to_find = num_feasible_nodes_to_find(self.percentage, n) if prof.score_weights else 1
        rotated = np.concatenate([cand[cand >= start], cand[cand < start]])
        fe = rotated[:to_find]
        if len(rotated) > to_find:  # the filter loop stops at the feasible node after those kept
            processed = int((rotated[to_find] - start) % n)
        else:
            processed = n
        state["start"] = (start + processed) % n
        if len(fe) == 1:
            node = int(fe[0])
        else:
            total = np.zeros(len(fe), np.int64)
            for plugin, weight in prof.score_weights.items():
                sc = self._score(plugin, st, s, fe)
                if sc is not None:
                    total += weight * sc
            tied = np.flatnonzero(total == total.max())
            if len(tied) == 1:
                node = int(fe[tied[0]])
            elif self.tie_break == "name":
                node = int(fe[tied].min())
            else:
                node = int(fe[tied[int(state["rng"].integers(len(tied)))]])
        self._record(st, s, node)
        return node

    def _record(self, st, s, node: int) -> None:
        """Default requests of pods placed without cpu/memory requests (NonZeroRequested)."""
        missing = {
            r: self._request(s, r) for r in ("cpu", "memory") if r in self.c.resources and not s.resources.get(r)
        }
        if not missing:
            return
        extra = getattr(st, "kube_defaults", None)
        if extra is None:
            extra = st.kube_defaults = {r: np.zeros(self.c.n, np.int64) for r in ("cpu", "memory")}
        for r, v in missing.items():
            extra[r][node] += v

    def _score(self, plugin: str, st, s, fe: np.ndarray):
        prof = self.profile
        if plugin == node_resources_fit.NAME:
            return node_resources_fit.score_columns(
                self._columns(st, s, prof.fit.resources, fe, nonzero=True), prof.fit
            )
        if plugin == balanced_allocation.NAME:
            return balanced_allocation.score_columns(self._columns(st, s, prof.balanced_resources, fe, nonzero=False))
        return None  # TaintToleration / NodeAffinity: checked constant in _check; the rest: 0 (see module doc)
