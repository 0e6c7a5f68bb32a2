"""draopt: Kubernetes DRA device allocation, kube-scheduler's first-fit reproduced exactly, and
optimal placement with CP-SAT.

The Python API (draopt.public), loaded on first use so that `import draopt.kube.loader` and
friends do not load the whole package:

    >>> import draopt
    >>> objects = draopt.load("examples/cluster.yaml")
    >>> [n.name for n in objects.nodes]
    ['gpu-node-1', 'gpu-node-2']
    >>> [c.name for c in draopt.allocate(objects, node="gpu-node-1").claims]
    ['trainer', 'notebook']
    >>> draopt.place("examples/gang-stranding.yaml", policy="optimal")
    <PlaceOutcome optimal: 2 of 2 pods placed on 1 nodes, OPTIMAL>

(The examples run from the repository's root: tests/test_doctests.py runs them.)

load, allocate, place, plan, simulate, compare, validate, explain: see docs/api.md.
`draopt.__version__` is the installed version (`draopt --version`). Notes about the input (kinds
skipped, pods made by controllers) are warnings of category draopt.DraoptNote; the rest goes to
the `logging.getLogger("draopt")` logger (draopt.notes).
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

from draopt.notes import DraoptNote, DraoptWarning

try:  # the installed distribution's version (pyproject.toml [project] version)
    __version__: str = metadata.version("draopt")
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0.1.0+unknown"

_API = ["allocate", "compare", "explain", "load", "place", "plan", "simulate", "validate"]
__all__ = _API + ["DraoptNote", "DraoptWarning"]


def __getattr__(name: str) -> Any:
    if name in _API:
        from draopt import public

        value = getattr(public, name)
        globals()[name] = value  # found once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
