"""kube-scheduler's node choice as users configure it: KubeSchedulerConfiguration profiles,
score plugins with Kubernetes' formulas, percentageOfNodesToScore and random tie-breaking
(see docs/scheduler.md)."""
from __future__ import annotations

from .config import BUILTIN, DEFAULT_SCHEDULER, Profile, SchedulerConfig, builtin, load_config, parse_config
from .cycle import TIE_BREAKS, Scheduler, num_feasible_nodes_to_find

__all__ = ["BUILTIN", "DEFAULT_SCHEDULER", "Profile", "SchedulerConfig", "Scheduler", "TIE_BREAKS", "builtin",
           "load_config", "num_feasible_nodes_to_find", "parse_config"]
