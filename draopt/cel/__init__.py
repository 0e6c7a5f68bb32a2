"""The Kubernetes DRA CEL environment (device selectors); see draopt.cel.core."""

from .core import (
    CelCompileError,
    CelDevice,
    CelEnvironment,
    CelError,
    CelRuntimeError,
    CompiledExpression,
    make_cel_device,
)

__all__ = [
    "CelError",
    "CelCompileError",
    "CelRuntimeError",
    "CelDevice",
    "CompiledExpression",
    "CelEnvironment",
    "make_cel_device",
]
