"""The autoscalers' own loops, by name, as `draopt plan --baseline` runs them beside the optimal
mix: Karpenter's provisioning (draopt.studies.karpenter) and cluster-autoscaler's scale-up loop
with each expander (draopt.studies.autoscalers)."""

from __future__ import annotations

from dataclasses import dataclass

from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.studies.autoscalers import (
    EXPANDERS,
    AutoscalerBaseline,
    EstimateRuns,
    SchedulerView,
    cluster_autoscaler,
    kube_scheduler_view,
)
from draopt.studies.karpenter import karpenter
from draopt.studies.node_types import NodeType

BASELINES = ("karpenter",) + tuple(f"cluster-autoscaler/{e}" for e in EXPANDERS)


def run_baselines(
    objects: ObjectSet,
    node_types: list[NodeType],
    names: list[str],
    *,
    features: Features | None = None,
    priorities: dict | None = None,
    seed: int = 0,
) -> list[AutoscalerBaseline]:
    """The named baselines (`karpenter`, `cluster-autoscaler/EXPANDER`; `cluster-autoscaler` alone
    is least-waste), in the order given, each on the same input. They share the kube-scheduler's
    view of the input and cluster-autoscaler's runs on copies of each type (emptied after each
    estimate): made once."""
    fulls = ["cluster-autoscaler/least-waste" if name == "cluster-autoscaler" else name for name in names]
    for name, full in zip(names, fulls):
        if full not in BASELINES:
            raise InputError(f"--baseline {name}: unknown baseline (known: {', '.join(BASELINES)}, cluster-autoscaler)")
    shared = SharedInput(objects, node_types, features or Features.from_gates())
    return [shared.run(full, priorities, seed) for full in dict.fromkeys(fulls)]


@dataclass
class SharedInput:
    """What every baseline on one input starts from, made when first needed."""

    objects: ObjectSet
    node_types: list[NodeType]
    features: Features
    view: SchedulerView | None = None
    runs: EstimateRuns | None = None

    def run(self, name: str, priorities: dict | None, seed: int) -> AutoscalerBaseline:
        """Baseline `name` (one of BASELINES)."""
        if self.view is None:
            self.view = kube_scheduler_view(self.objects, self.features)
        if name == "karpenter":
            return karpenter(self.objects, self.node_types, features=self.features, view=self.view)
        if self.runs is None and EstimateRuns.applies(self.objects, self.node_types, self.view):
            self.runs = EstimateRuns.start(self.objects, self.node_types, self.features, self.view)
        return cluster_autoscaler(
            self.objects,
            self.node_types,
            features=self.features,
            expander=name.split("/", 1)[1],
            seed=seed,
            priorities=priorities,
            view=self.view,
            runs=self.runs,
        )
