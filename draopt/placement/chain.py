"""The placement problem's chain of reductions, assembled here (in the style of cvxpy's
`Problem._construct_chain`). In the order `draopt.model.reductions.chain.placement_reductions`
names them:

1. `CountIdenticalPods`, pods -> kinds. Applied by `draopt.model.prepare.prepare_cluster` and
   inverted in the decoding (`draopt.model.solution.decode_part`, `_decode_counted`).
2. `GroupDevices`, a node's devices -> columns. Applied by `prepare_cluster` and inverted in
   the decoding, device by device.
3. `OwnAcrossNodes`, one owner for a counted kind's nodes. Applied by `draopt.model.placement.build`;
   its inverse, node -> the owner that deals there, is `OwnAcrossNodes.invert`.
4. `SplitComponents`, the prepared problem -> independent parts. Applied and inverted through
   `place_chain` (`draopt.placement.optimal`: the parts are solved one after the other, each
   decoded as it is solved).

The first three work on what the preparation and the builder hold at each step (pods while
preparing, a node's devices while making its columns, a kind's nodes while building its
owners), so they run where that is; `place_chain` holds the steps that run on the whole problem.
"""

from __future__ import annotations

from draopt.model.reductions.chain import Chain
from draopt.model.reductions.split_components import SplitComponents


def place_chain() -> Chain:
    """The chain `optimize` applies to the prepared problem (its links: `LinkedItems`) and
    inverts on the parts' decoded placements."""
    return Chain([SplitComponents()])
