"""draopt: Kubernetes DRA device allocation, kube-scheduler's first-fit reproduced exactly, and
optimal placement with CP-SAT.

The Python API (draopt.public), loaded on first use so that `import draopt.kube.loader` and
friends do not load the whole package:

    import draopt
    objects = draopt.load("examples/cluster.yaml")
    draopt.allocate(objects, node="node-1").claims
    draopt.place("examples/gang-stranding.yaml", policy="optimal").result.summary()

load, allocate, place, plan, simulate, compare, validate, explain: see docs/api.md.
`draopt.__version__` is the installed version (`draopt --version`).
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

try:  # the installed distribution's version (pyproject.toml [project] version)
    __version__: str = metadata.version("draopt")
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0.1.0+unknown"

__all__ = ["allocate", "compare", "explain", "load", "place", "plan", "simulate", "validate"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from draopt import public

        value = getattr(public, name)
        globals()[name] = value  # found once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
