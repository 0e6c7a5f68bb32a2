"""SplitComponents: owners linked to the nodes they may use, gangs and shared pools linking them,
split into independent parts (networkx connected components), solved apart.
"""

from __future__ import annotations

from typing import Hashable


class SplitComponents:
    """accepts(owners); apply(owners, edges) -> parts; invert(part solutions) -> one solution."""

    @staticmethod
    def accepts(items: list) -> bool:
        """Always exact: parts share no node, device, gang or pool."""
        return True

    def apply(self, items: list[Hashable], links: list[tuple[Hashable, Hashable]]) -> list[list[Hashable]]:
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(items)
        g.add_edges_from(links)
        order = {x: i for i, x in enumerate(items)}
        parts = [sorted(c, key=order.__getitem__) for c in nx.connected_components(g)]
        parts.sort(key=lambda c: order[c[0]])
        return parts

    @staticmethod
    def invert(solutions: list[dict]) -> dict:
        out: dict = {}
        for s in solutions:
            out.update(s)
        return out
