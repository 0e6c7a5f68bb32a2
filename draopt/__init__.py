"""draopt: Kubernetes DRA device allocation, kube-scheduler's first-fit reproduced exactly, and
optimal placement with CP-SAT.

The Python API (draopt.public), loaded on first use so that `import draopt.loader` and friends
do not load the whole package:

    import draopt
    objects = draopt.load("examples/cluster.yaml")
    draopt.allocate(objects, node="node-1").claims
    draopt.place("examples/gang-stranding.yaml", policy="optimal").result.summary()

load, allocate, place, plan, simulate, compare, validate, explain: see docs/api.md.
"""
from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["allocate", "compare", "explain", "load", "place", "plan", "simulate", "validate"]

# Three functions share their name with a submodule (draopt.simulate, draopt.validate,
# draopt.explain), which existing code imports as `from draopt import simulate as sim`. Importing
# a submodule binds it on the package, so `draopt.simulate` is the module either way; to make
# `draopt.simulate(...)` the API's function all the same, such a submodule is made callable (it
# calls draopt.public's function) when it is bound here. Nothing of the module changes otherwise.
_SHARED_NAMES = frozenset({"simulate", "validate", "explain"})


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from . import public
        return getattr(public, self.__name__.rpartition(".")[2])(*args, **kwargs)


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHARED_NAMES and type(value) is types.ModuleType and value.__name__ == f"{__name__}.{name}":
            value.__class__ = _CallableModule
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import public
        if name in _SHARED_NAMES:
            import importlib
            return importlib.import_module(f"{__name__}.{name}")   # bound (and made callable) on import
        value = getattr(public, name)
        globals()[name] = value     # found once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
