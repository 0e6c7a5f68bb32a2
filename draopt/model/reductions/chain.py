"""The chain of reductions for a problem, assembled in one place (in the style of cvxpy's
`reductions/chain.py`): `apply` runs each reduction in turn, keeping what its `invert` needs;
`invert` runs back through them, last first.

* allocate (claims on one node): `ClaimsOnOneNode` makes the problem an instance of the one
  placement model (one pod, one candidate node, one column per device).
* place (assembled in `draopt.placement.chain`): `CountIdenticalPods` (pods -> kinds),
  `GroupDevices` (devices -> columns), `OwnAcrossNodes` (one owner for a kind's nodes) and
  `SplitComponents` (independent parts); `placement_reductions` names the four and their order.
  The first three (`model_reductions`, a `ModelReductions`) are applied inside the model's
  preparation and builder (draopt.model.prepare, draopt.model.encodings.pods), on the objects
  those hold at each step, and inverted in the decoding (draopt.model.solution), all with the
  same instances. `SplitComponents` is applied and inverted through the `Chain` `place_chain`
  assembles.
"""

from __future__ import annotations

from typing import Any, Protocol

from draopt.model.reductions.claims_on_one_node import ClaimsOnOneNode
from draopt.model.reductions.count_identical_pods import CountIdenticalPods
from draopt.model.reductions.group_devices import GroupDevices
from draopt.model.reductions.own_across_nodes import OwnAcrossNodes
from draopt.model.reductions.split_components import SplitComponents


class Reduction(Protocol):
    """A reduction, in cvxpy's shape."""

    def accepts(self, problem: Any) -> bool:
        """Whether `apply` is exact on the problem."""
        ...

    def apply(self, problem: Any) -> tuple[Any, Any]:
        """(the reduced problem, what `invert` needs)."""
        ...

    def invert(self, solution: Any, inverse_data: Any) -> Any:
        """A solution of the reduced problem -> a solution of the problem `apply` took."""
        ...


class Chain:
    """Reductions applied in order; each has `accepts(problem)`, `apply(problem) -> (reduced,
    inverse data)` and `invert(solution, inverse data) -> solution of its input problem`."""

    def __init__(self, reductions: list[Reduction]):
        self.reductions = list(reductions)

    def accepts(self, problem) -> bool:
        """Whether the first reduction takes the problem (each next one takes what the one before
        it returns, checked as the chain is applied)."""
        return not self.reductions or self.reductions[0].accepts(problem)

    def apply(self, problem: Any) -> tuple[Any, list]:
        inverse_data: list = []
        for r in self.reductions:
            if not r.accepts(problem):
                raise ValueError(f"internal: {type(r).__name__} does not accept {type(problem).__name__}")
            problem, data = r.apply(problem)
            inverse_data.append(data)
        return problem, inverse_data

    def invert(self, solution: Any, inverse_data: list) -> Any:
        for r, data in reversed(list(zip(self.reductions, inverse_data))):
            solution = r.invert(solution, data)
        return solution


def allocation_chain(problem) -> Chain:
    """allocate's chain: its claims on its one node, as an instance of the placement model."""
    return Chain([ClaimsOnOneNode()])


def placement_reductions() -> list[type]:
    """place's reductions, in the order the builder applies them (pods, devices, owners, parts)."""
    return [CountIdenticalPods, GroupDevices, OwnAcrossNodes, SplitComponents]
