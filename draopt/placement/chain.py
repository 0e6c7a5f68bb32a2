"""The placement problem's chain of reductions, assembled here (in the style of cvxpy's
`Problem._construct_chain`). In the order `draopt.model.reductions.chain.placement_reductions`
names them:

1. `CountIdenticalPods`, pods -> kinds. Applied by `draopt.model.prepare.prepare_cluster` and
   inverted in the decoding (`draopt.model.solution._decode_counted`).
2. `GroupDevices`, a node's devices -> columns. Applied by `prepare_cluster` and inverted in
   the decoding, device by device.
3. `OwnAcrossNodes`, one owner for a counted kind's nodes. Applied while a part's pods are
   encoded (`draopt.model.encodings.pods`) and inverted in the decoding (node -> the owner that
   deals there).
4. `SplitComponents`, the prepared problem -> independent parts. Applied and inverted through
   `place_chain` (`draopt.placement.optimal`: the parts are solved one after the other, each
   decoded as it is solved).

The first three are the instances `model_reductions` assembles: `optimize` hands them to
`prepare_cluster`, the prepared problem carries them (`Prepared.reductions`), and the builder
and the decoding use those same instances. They work on what the preparation and the builder
hold at each step (the pending pods, a node's devices once the kinds' node problems are known,
a kind's nodes while its part is encoded) and are inverted pod by pod and device by device in
one pass over the solution, so they are not links of `Chain`, which passes one whole problem
from link to link; `place_chain` holds the step that runs on the whole prepared problem.
"""

from __future__ import annotations

from draopt.model.reductions import CountIdenticalPods, GroupDevices, ModelReductions, OwnAcrossNodes
from draopt.model.reductions.chain import Chain
from draopt.model.reductions.split_components import SplitComponents


def model_reductions() -> ModelReductions:
    """The reductions `optimize` hands to the model's preparation, builder and decoding."""
    return ModelReductions(CountIdenticalPods(), GroupDevices(), OwnAcrossNodes())


def place_chain() -> Chain:
    """The chain `optimize` applies to the prepared problem (its links: `LinkedItems`) and
    inverts on the parts' decoded placements."""
    return Chain([SplitComponents()])
