"""The placement reductions that work inside the model's preparation, builder and decoding, as
the instances one placement problem uses: `draopt.model.prepare.prepare_cluster` applies
`count_pods` (its pending pods) and `group_devices` (each node's devices), the builder
`own_across` (each counted kind's nodes, draopt.model.encodings.pods), and the decoding
(draopt.model.solution) inverts all three with the same instances, which the prepared problem
carries (`Prepared.reductions`). `draopt.placement.chain` assembles them with the rest of the
placement chain."""

from __future__ import annotations

from dataclasses import dataclass, field

from draopt.model.reductions.count_identical_pods import CountIdenticalPods
from draopt.model.reductions.group_devices import GroupDevices
from draopt.model.reductions.own_across_nodes import OwnAcrossNodes


@dataclass(frozen=True)
class ModelReductions:
    """CountIdenticalPods, GroupDevices and OwnAcrossNodes, in the order they are applied."""

    count_pods: CountIdenticalPods = field(default_factory=CountIdenticalPods)
    group_devices: GroupDevices = field(default_factory=GroupDevices)
    own_across: OwnAcrossNodes = field(default_factory=OwnAcrossNodes)
