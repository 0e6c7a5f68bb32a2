"""The autoscalers' own loops, by name, as `draopt plan --baseline` runs them beside the optimal
mix: Karpenter's provisioning (draopt.studies.karpenter) and cluster-autoscaler's scale-up loop
with each expander (draopt.studies.autoscalers)."""

from __future__ import annotations

from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet
from draopt.studies.autoscalers import EXPANDERS, AutoscalerBaseline, cluster_autoscaler
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
    is least-waste), in the order given, each on the same input."""
    out = []
    for name in dict.fromkeys(names):
        full = "cluster-autoscaler/least-waste" if name == "cluster-autoscaler" else name
        if full not in BASELINES:
            raise InputError(f"--baseline {name}: unknown baseline (known: {', '.join(BASELINES)}, cluster-autoscaler)")
        if full == "karpenter":
            out.append(karpenter(objects, node_types, features=features))
        else:
            expander = full.split("/", 1)[1]
            out.append(
                cluster_autoscaler(
                    objects, node_types, features=features, expander=expander, seed=seed, priorities=priorities
                )
            )
    return out
