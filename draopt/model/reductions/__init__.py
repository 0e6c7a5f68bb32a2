"""Reductions of the placement problem, in the style of cvxpy's: each `apply` returns the
reduced problem and the data its `invert` needs to turn a solution of the reduced problem back
into a solution of the original. Each is applied only where it is exact.

* `CountIdenticalPods`: pods whose placement requirements are identical (same claims up to
  their names, same resources, node filters) and whose claims only use rules that stay exact
  when pods are counted (see `countable`) become one *kind*: the model counts how many of them
  go to each node, and `invert` hands out nodes and devices to the individual pods.
* `GroupDevices`: devices of one node that every request of the model sees alike (same
  candidacy, same values of every constrained attribute, no counters, not shared with other
  nodes, not multi-allocatable) become one group with a count.
* `OwnAcrossNodes`: a counted kind whose devices are all reached alike from each of its nodes
  takes them through one owner for all its nodes, not one copy per node.
* `SplitComponents`: owners linked to the nodes they may use, gangs and shared pools linking
  them, split into independent parts (networkx connected components), solved apart.
"""

from draopt.model.reductions.count_identical_pods import CountIdenticalPods, Kind, countable, kind_key
from draopt.model.reductions.group_devices import (
    DeviceRef,
    GroupDevices,
    attribute_pattern,
    device_pattern_extra,
    groupable,
)
from draopt.model.reductions.model_reductions import ModelReductions
from draopt.model.reductions.own_across_nodes import OwnAcrossNodes
from draopt.model.reductions.split_components import LinkedItems, SplitComponents

__all__ = [
    "CountIdenticalPods",
    "DeviceRef",
    "GroupDevices",
    "Kind",
    "LinkedItems",
    "ModelReductions",
    "OwnAcrossNodes",
    "SplitComponents",
    "attribute_pattern",
    "countable",
    "device_pattern_extra",
    "groupable",
    "kind_key",
]
