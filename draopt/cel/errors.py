"""CEL errors, and cel-cpp's messages in Kubernetes' words."""

from __future__ import annotations

import re

from draopt.cel.internal import _RENAMED_BACK


class CelError(Exception):
    """Base class of all CEL errors."""


class CelCompileError(CelError):
    """The expression does not compile (syntax, undeclared reference, type)."""


class CelRuntimeError(CelError):
    """The expression failed at runtime (e.g. ``no such key: memory``)."""


_KEY_NOT_FOUND = re.compile(r'^(?:NOT_FOUND: )?Key not found in map : "?(.*?)"?$', re.S)
_NO_OVERLOAD = re.compile(r"^(?:[A-Z_]+: )?No matching overloads found : (.*)$", re.S)
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")


def _runtime_message(msg: str) -> str:
    for new, old in _RENAMED_BACK.items():
        msg = msg.replace(new, old)
    m = _KEY_NOT_FOUND.match(msg)
    if m:
        return f"no such key: {m.group(1)}"
    m = _NO_OVERLOAD.match(msg)
    if m:
        return f"no such overload: {m.group(1)}"
    return _STATUS_PREFIX.sub("", msg, count=1)


def _compile_message(msg: str) -> str:
    msg = msg.strip()
    if msg.startswith("INVALID_ARGUMENT: "):
        msg = msg[len("INVALID_ARGUMENT: ") :]
    if msg.endswith("[INVALID_ARGUMENT]"):
        msg = msg[: -len("[INVALID_ARGUMENT]")].rstrip()
    for new, old in _RENAMED_BACK.items():
        msg = msg.replace(new, old)
    return "compilation failed: " + msg
