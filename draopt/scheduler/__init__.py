"""kube-scheduler's node choice as users configure it: KubeSchedulerConfiguration profiles,
score plugins with Kubernetes' formulas, percentageOfNodesToScore and random tie-breaking
(see docs/scheduler.md)."""

from __future__ import annotations

from draopt.scheduler.config import (
    BUILTIN,
    DEFAULT_SCHEDULER,
    Profile,
    SchedulerConfig,
    builtin,
    load_config,
    parse_config,
)
from draopt.scheduler.cycle import TIE_BREAKS, Scheduler, num_feasible_nodes_to_find

__all__ = [
    "BUILTIN",
    "DEFAULT_SCHEDULER",
    "TIE_BREAKS",
    "Profile",
    "Scheduler",
    "SchedulerConfig",
    "builtin",
    "load_config",
    "num_feasible_nodes_to_find",
    "parse_config",
]


def add_scheduler_flags(parser, *, seed: bool = True) -> None:
    """--scheduler-config, --seed, --tie-break (draopt place / simulate)."""
    parser.add_argument(
        "--scheduler-config",
        metavar="FILE",
        help="a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) for first-fit's node "
        "choice, or builtin:default|most-allocated|name-order (default: Kubernetes 1.36's "
        "default profile, also 1.37's; name-order: every node, first by name)",
    )
    if seed:
        parser.add_argument(
            "--seed",
            type=int,
            default=0,
            metavar="N",
            help="seed of the random choice among equally scored nodes (default 0)",
        )
    parser.add_argument(
        "--tie-break",
        default="random",
        choices=TIE_BREAKS,
        help="among equally scored nodes: random (as kube-scheduler, seeded) or name (the first in node "
        "order: by name, one node of each zone in turn)",
    )
