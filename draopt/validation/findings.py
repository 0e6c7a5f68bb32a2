"""What `draopt validate` reports: findings in Kubernetes' field.Error format, notes, the report."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Finding:
    """One reason the API server would reject an object."""

    object: str  # "Kind namespace/name" or "Kind name"
    field: str  # field path, e.g. spec.devices.requests[0].exactly.count
    type: str  # Invalid, Required, Forbidden, Too many, Duplicate value, Unsupported value, Too long
    message: str  # detail
    value: Any = None
    source: str = ""  # file and document

    def __str__(self) -> str:
        return f"{self.object}: {self.error_string()}"

    def error_string(self) -> str:
        """Kubernetes' field.Error.Error()."""
        t = self.type
        if t == "Unknown field":
            return f'unknown field "{self.field}"'
        if t in ("Required value", "Forbidden", "Too long", "Internal error"):
            return f"{self.field}: {t}" + (f": {self.message}" if self.message else "")
        if t == "Too many":
            return f"{self.field}: Too many: {self.value}: {self.message}"
        if t == "Duplicate value":
            return f"{self.field}: Duplicate value: {_show(self.value)}"
        return f"{self.field}: {t}: {_show(self.value)}" + (f": {self.message}" if self.message else "")


def _show(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(v, sort_keys=True, default=str)


@dataclass
class Note:
    object: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.object}: {self.field}: {self.message}"


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    objects: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": not self.findings,
            "objects": self.objects,
            "errors": [dict(asdict(f), error=f.error_string()) for f in self.findings],
            "notes": [asdict(n) for n in self.notes],
        }
