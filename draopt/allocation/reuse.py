"""What allocate() builds from its input, kept for the next call on the same input.

A call on an ObjectSet selects the claims, notes the refused ones, indexes the slices, works
out the devices in use, builds each node's inventory and prepares the problem (requests,
classes, selector answers) before any search. Called again on the same objects, with the same
gates, policy and engine, all of that comes out the same: it is kept here and the search alone
runs again (an allocator in a scheduler keeps the same things between pods). "The same
objects" means the same Python objects in the same lists: a loaded object is never changed in
place (draopt copies an object before it edits it, as draopt.dra.device_views already assumes),
so an object's identity stands for its content while it is held here, and an entry holds its
objects (an id is never taken for another object's)."""

from __future__ import annotations

import operator
import threading
from itertools import chain
from typing import Any

from draopt.kube.features import Features
from draopt.kube.object_set import ObjectSet

# The lists allocate() reads (the claims, the devices, the classes, the nodes, the namespaces
# the admission check reads, and the kinds whose served versions give notes), in input_key's order.
_READ = (
    "resource_claims",
    "resource_slices",
    "device_classes",
    "taint_rules",
    "nodes",
    "namespaces",
    "pod_groups",
    "workloads",
    "composite_pod_groups",
)


_LISTS_READ = operator.attrgetter(*_READ)


def input_key(objects: ObjectSet, features: Features, policy: str, engine: str) -> tuple:
    """The identity of what a call reads: the objects of each list read, in order (the lists'
    lengths, then every object's id, list after list), the PodGroups draopt made, the gates,
    the policy and engine, and the thread (a search fills the caches of the problem it runs on)."""
    lists = _LISTS_READ(objects)
    # (two C-level passes: read on every call, a tuple per list cost more than the search of a
    # one-device problem's parts)
    return (
        threading.get_ident(),
        policy,
        engine,
        features,
        frozenset(objects.simulated_groups) if objects.simulated_groups else None,
        tuple(map(len, lists)),
        tuple(map(id, chain.from_iterable(lists))),
    )


class CallReuse:
    """The `shared` dict of the last `limit` inputs (draopt.allocation.allocate._allocate says
    what it holds), each with the objects its key names, least recently used dropped first."""

    def __init__(self, limit: int = 4) -> None:
        self.limit = limit
        self._entries: dict[tuple, tuple[tuple, dict[Any, Any]]] = {}
        # The most recently used entry's key and `shared`: a call on the same input as the last
        # compares its key with this one (element by element, by identity first) instead of
        # hashing it (the gates' hash is most of a key's).
        self._last: tuple[tuple, dict[Any, Any]] | None = None

    def shared_for(self, objects: ObjectSet, features: Features, policy: str, engine: str) -> dict[Any, Any]:
        key = input_key(objects, features, policy, engine)
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        got = self._entries.pop(key, None)
        if got is None:
            held = tuple(tuple(getattr(objects, name)) for name in _READ)
            got = (held, {})
            while len(self._entries) >= self.limit:
                del self._entries[next(iter(self._entries))]
        self._entries[key] = got  # (last: the most recently used)
        self._last = (key, got[1])
        return got[1]

    def clear(self) -> None:
        self._entries.clear()
        self._last = None


CALL_REUSE = CallReuse()  # the process's: allocate() reads and fills it
