"""Error types. Every user-facing error names the object and the field."""

from __future__ import annotations

from typing import Any


class DraoptError(Exception):
    """Base class: invalid input or an allocation error (CLI exit code 2)."""

    # The timings an allocation had when it raised (draopt.allocation.allocate sets them, as an
    # outcome's: `allocate_ms` included; the CLI's --stats prints them); None: not an allocation's.
    stats: dict[str, Any] | None = None


class InputError(DraoptError):
    """A file, document or field cannot be read or is not valid."""


class AllocationError(DraoptError):
    """Allocation must stop, as Kubernetes' allocator stops (CEL runtime error, invalid pool under All, ...)."""


class DeviceCelError(AllocationError):
    """A CEL expression failed on one device: `owner` ("class X" or "claim ns/name", with the
    selector), `cause` (the CEL message), `device`; messages can group devices by cause."""

    def __init__(self, message: str, *, owner: str, cause: str, device: str):
        super().__init__(message)
        self.owner, self.cause, self.device = owner, cause, device


class Unschedulable(Exception):
    """No allocation exists on the node (CLI exit code 1). Not an input error."""
