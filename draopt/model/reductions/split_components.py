"""SplitComponents: owners linked to the nodes they may use, gangs and shared pools linking them,
split into independent parts (networkx connected components), solved apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable


@dataclass
class LinkedItems:
    """What is split: the items (kinds, nodes, columns) and the links between them (a kind and a
    node it may use, kinds of one gang, nodes that reach one column, nodes of one victim)."""

    items: list[Hashable]
    links: list[tuple[Hashable, Hashable]]


class SplitComponents:
    """accepts(LinkedItems); apply(LinkedItems) -> (parts, parts); invert(the parts' solutions,
    parts) -> one solution."""

    @staticmethod
    def accepts(problem: Any) -> bool:
        """Always exact: parts share no node, device, gang or pool."""
        return isinstance(problem, LinkedItems)

    @staticmethod
    def apply(problem: LinkedItems) -> tuple[list[list[Hashable]], list[list[Hashable]]]:
        """The connected components, each in the items' order, in the order of their first item."""
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(problem.items)
        g.add_edges_from(problem.links)
        order = {x: i for i, x in enumerate(problem.items)}
        parts = [sorted(c, key=order.__getitem__) for c in nx.connected_components(g)]
        parts.sort(key=lambda c: order[c[0]])
        return parts, parts

    @staticmethod
    def invert(solutions: list[dict], parts: Any = None) -> dict:
        """One solution for the whole: the parts' solutions (a dict each, keyed by what the part
        owns: disjoint; parts without a solution, e.g. without pods, give none) merged."""
        out: dict = {}
        for s in solutions:
            out.update(s)
        return out
