"""OwnAcrossNodes: a counted kind whose devices are all reached alike from each of its nodes takes
them through one owner for all its nodes, not one copy per node.
"""

from __future__ import annotations

from typing import Any


class OwnAcrossNodes:
    """apply(kind, its nodes) -> whether one owner may take the kind's devices for all its nodes.

    A counted kind whose candidate columns are the same from each of its nodes and are all
    reached from each of them (pools with `allNodes` or a node selector every such node
    matches) chooses devices independently of the node its pods land on. One owner then counts
    the devices of all its placed pods (its multiplicity is the kind's pods placed), and the
    per-node counts only carry node resources: the same placements, one copy of the device
    terms instead of one per node. `invert`: every placed pod is dealt its devices from that one
    owner, whatever its node (the dealing of `CountIdenticalPods` with all pods on one owner)."""

    @staticmethod
    def accepts(kind) -> bool:
        """Counted pods one by one (not units of several pods)."""
        return kind.counted and kind.unit_size == 1

    @staticmethod
    def apply(kind, nodes: list, refs_of: dict, candidate_columns) -> bool:
        """`refs_of`: node name -> columns; `candidate_columns(node, refs)`: the columns some
        request of the kind may take on that node (None: the kind has no problem there)."""
        if not OwnAcrossNodes.accepts(kind) or len(nodes) < 2:
            return False
        seen: dict[tuple, frozenset] = {}
        first = None
        for node in nodes:
            refs = refs_of.get(node.name, [])
            sig = tuple(map(id, refs))
            got = seen.get(sig)
            if got is None:
                cols = candidate_columns(node, refs)
                if cols is None or any(r.node is not None for r in cols):
                    return False
                got = seen[sig] = frozenset(r.key for r in cols)
            if first is None:
                first = got
            elif got != first:
                return False
        return True

    @staticmethod
    def invert(owners: list, kind: Any) -> dict[str, Any]:
        """Node name -> the owner that deals the kind's devices to its pods placed there: an owner
        across nodes for every node it spans, else each node's own owner (`owners`: the built
        model's, draopt.model.placement.Owner)."""
        return {name: o for o in owners if o.counted and o.kind is kind for name in (o.spans or [o.node.name])}
