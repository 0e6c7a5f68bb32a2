"""One pod's scoring cycle plugin by plugin (`draopt explain --scores`): each score plugin's
normalised score (0-100) on each node the scheduler scored, its weight, and the weighted total
kube-scheduler compares (prioritizeNodes: the sum over the plugins of weight x normalised score).

The totals are kube-scheduler's, constants included: `Scheduler.score` leaves out the plugins
that give every node the same score (they cannot change the choice), which the breakdown puts
back with the score they give (draopt.scheduler.plugins.uniform_score), so the chosen node's
total is the `score` the scheduler oracle reports for the bind (draopt/crosscheck)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# Score plugins of the default profile that draopt does not model: they score 0 on every node
# here (ImageLocality: no images in a node's status; VolumeBinding: no volumes, PreScore skips).
NOT_MODELLED = ("ImageLocality", "VolumeBinding")
SHOWN_NODES = 5  # the chosen node and the runners-up `explain --scores` shows


@dataclass(frozen=True)
class ScoreBreakdown:
    pod: str  # namespace/name
    profile: str  # the scheduler profile (spec.schedulerName)
    plugins: tuple[tuple[str, int], ...]  # (score plugin, weight), in the profile's order
    nodes: tuple[str, ...]  # the nodes scored, in the order the filter loop found them
    scores: tuple[tuple[int, ...], ...]  # per node, each plugin's normalised score (plugins' order)
    chosen: str
    # False: one feasible node, which kube-scheduler binds without running the score plugins
    # (the scores are what they would have given)
    scored: bool
    nodes_in_cluster: int  # the nodes the filter loop could try (a pod group's placement: its nodes)
    feasible_wanted: int  # numFeasibleNodesToFind: the search stops once this many are feasible

    @property
    def totals(self) -> tuple[int, ...]:
        """Per node, the weighted sum kube-scheduler picks the highest of."""
        weights = [w for _, w in self.plugins]
        return tuple(sum(w * s for w, s in zip(weights, row)) for row in self.scores)

    @property
    def search_cut(self) -> bool:
        """The filter loop stopped at numFeasibleNodesToFind (percentageOfNodesToScore): nodes it
        did not reach were neither filtered nor scored."""
        return self.feasible_wanted < self.nodes_in_cluster and len(self.nodes) >= self.feasible_wanted

    def ranked(self, top: int = SHOWN_NODES) -> list[int]:
        """Indexes of the chosen node and the best runners-up (highest total, then the order
        scored), `top` in all."""
        totals = self.totals
        chosen = self.nodes.index(self.chosen)
        others = sorted((i for i in range(len(self.nodes)) if i != chosen), key=lambda i: (-totals[i], i))
        return [chosen] + others[: max(top - 1, 0)]

    def scope(self) -> str:
        """Which nodes were scored, in words."""
        n, found = self.nodes_in_cluster, len(self.nodes)
        if not self.scored:
            return (
                f"one feasible node of {n}: kube-scheduler binds it without scoring "
                "(the scores below are what the plugins would give)"
            )
        if self.search_cut:
            return (
                f"{found} of {n} nodes scored: the filter loop stops at {self.feasible_wanted} feasible nodes "
                "(percentageOfNodesToScore), so only those are shown"
            )
        return f"{found} feasible node(s) of {n} scored"

    def to_json(self, top: int = SHOWN_NODES) -> dict[str, Any]:
        totals = self.totals
        return {
            "pod": self.pod,
            "profile": self.profile,
            "scored": self.scored,
            "nodesInCluster": self.nodes_in_cluster,
            "nodesScored": len(self.nodes),
            "feasibleNodesToFind": self.feasible_wanted,
            "searchCut": self.search_cut,
            "weights": {p: w for p, w in self.plugins},
            "nodes": [
                {
                    "node": self.nodes[i],
                    "chosen": self.nodes[i] == self.chosen,
                    "scores": {p: s for (p, _), s in zip(self.plugins, self.scores[i])},
                    "weighted": {p: w * s for (p, w), s in zip(self.plugins, self.scores[i])},
                    "total": totals[i],
                }
                for i in self.ranked(top)
            ],
        }


def breakdown(
    pod: str,
    profile: str,
    rows: list[tuple[str, int, np.ndarray]],
    node_names: list[str],
    chosen: str,
    *,
    scored: bool,
    nodes_in_cluster: int,
    feasible_wanted: int,
) -> ScoreBreakdown:
    """The breakdown from `Scheduler.plugin_scores`' rows (plugin, weight, scores over the nodes)."""
    per_node = [tuple(int(s[j]) for _, _, s in rows) for j in range(len(node_names))]
    return ScoreBreakdown(
        pod,
        profile,
        tuple((p, w) for p, w, _ in rows),
        tuple(node_names),
        tuple(per_node),
        chosen,
        scored,
        nodes_in_cluster,
        feasible_wanted,
    )
