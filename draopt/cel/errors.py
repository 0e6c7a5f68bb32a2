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


def _runtime_message(msg: str, expression: str = "") -> str:
    for new, old in _RENAMED_BACK.items():
        msg = msg.replace(new, old)
    m = _KEY_NOT_FOUND.match(msg)
    if m:
        return f"no such key: {m.group(1)}"
    m = _NO_OVERLOAD.match(msg)
    if m:
        return f"no such overload: {m.group(1)}"
    msg = _STATUS_PREFIX.sub("", msg, count=1)
    if msg == _SELECT_ON_A_VALUE:
        fields = set(_FIELD_OF_AN_ATTRIBUTE.findall(expression))
        if len(fields) == 1:  # (cel-cpp does not say which field: the one the source selects)
            return f"no such key: {fields.pop()}"
    return msg


# cel-cpp's words for a field selected on a value without fields (an attribute's string, int,
# bool or version: `device.attributes["d"].model.x`), where cel-go says "no such key: x"
# (interpreter/attributes.go refQualify: missingKey for a value neither map nor message)
_SELECT_ON_A_VALUE = "Applying SELECT to non-message type"
_FIELD_OF_AN_ATTRIBUTE = re.compile(r"device\.attributes(?:\[[^\]]*\]|\.\w+)\.\w+\.(\w+)\b(?!\s*\()")


def _compile_message(msg: str) -> str:
    msg = msg.strip()
    if msg.startswith("INVALID_ARGUMENT: "):
        msg = msg[len("INVALID_ARGUMENT: ") :]
    if msg.endswith("[INVALID_ARGUMENT]"):
        msg = msg[: -len("[INVALID_ARGUMENT]")].rstrip()
    for new, old in _RENAMED_BACK.items():
        msg = msg.replace(new, old)
    msg = _NOT_SELECTABLE.sub(r"type '\1' does not support field selection", msg)
    msg = _OPAQUE_FIELD.sub(r"unexpected failed resolution of '\1'", msg)
    msg = _ON_AN_ERROR.sub("", msg)
    return "compilation failed: " + _DEVICE_MEMBER.sub(_undefined_field, msg)


# cel-cpp's words for a field selected on a value of a type without fields, in cel-go's
# A field selected on a Quantity or Semver: draopt's messages of those names (draopt/cel/__init__.py)
# stand for Kubernetes' opaque types, which cel-go then fails to resolve by the same name.
_OPAQUE_FIELD = re.compile(r"undefined field '[^']*' not found in struct '(kubernetes\.(?:Quantity|Semver))'")
# cel-cpp also reports a selection on the result of an expression already in error; cel-go does not
_ON_AN_ERROR = re.compile(
    r"\nERROR: <input>:\d+:\d+: (?:type|expression of type) '\*error\*' "
    r"(?:does not support field selection|cannot be the operand of a select operation)\n \| .*\n \| \.*\^"
)
_NOT_SELECTABLE = re.compile(r"expression of type '([^']*)' cannot be the operand of a select operation")


# `device` is declared as qualified variables (draopt/cel/__init__.py), so cel-cpp calls a member
# the device type lacks an undeclared reference to the whole dotted name, its caret at the last
# dot; cel-go (Kubernetes' device object type) says "undefined field" at the dot after `device`.
_DEVICE_FIELDS = frozenset({"driver", "allowMultipleAllocations", "attributes", "capacity"})
_DEVICE_MEMBER = re.compile(
    r"ERROR: <input>:(\d+):(\d+): undeclared reference to '(device\.(\w+)(?:\.\w+)*)' \(in container ''\)"
    r"\n \| (.*)\n \| \.*\^"
)


def _undefined_field(m: re.Match) -> str:
    line, column, name, field, source = m.group(1), int(m.group(2)), m.group(3), m.group(4), m.group(5)
    if field in _DEVICE_FIELDS:
        return m.group(0)
    at = column - name.rindex(".") + len("device")  # the name starts at column - its last dot's offset
    return f"ERROR: <input>:{line}:{at}: undefined field '{field}'\n | {source}\n | {'.' * (at - 1)}^"
