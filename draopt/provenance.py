"""Where a result came from: the record written into every report and data file the studies
produce (HTML, JSON, CSV, Parquet), so that a file found later says which draopt made it, from
which inputs (by content: their sha256), with which seed, time limit and Kubernetes version, and
when.

The date is `SOURCE_DATE_EPOCH` when it is set (the reproducible-builds convention: the same
inputs and the same epoch give byte-identical files), else the current time; always UTC.

This module is the lowest layer: it reads files and the environment, and imports nothing of
draopt but its version.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import html
import json
import os
import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PARQUET_KEY = b"draopt.provenance"  # the Parquet schema metadata key holding to_dict() as JSON
SIDECAR_SUFFIX = ".provenance.json"  # FILE.csv -> FILE.csv.provenance.json
_CHUNK = 1 << 20


def draopt_version() -> str:
    """draopt.__version__, else the installed distribution's version, else "unknown"."""
    # The package is loaded already (this module is inside it); read from sys.modules, not
    # imported: the package's __init__ loads the public API, which imports the studies and this.
    version = getattr(sys.modules.get("draopt"), "__version__", None)
    if version:
        return str(version)
    from importlib import metadata

    try:
        return metadata.version("draopt")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_date() -> str:
    """ISO 8601 UTC, to the second: SOURCE_DATE_EPOCH when set (and a whole number), else now."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch.isdigit():
        when = _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc)
    else:
        when = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def digest(path: str) -> str:
    """The sha256 of a file's bytes; of a directory, the sha256 of its files' `DIGEST  RELATIVE
    PATH` lines in path order (what `sha256sum` lists); "stdin" for `-` (read once, not kept);
    "unreadable: REASON" when it cannot be read."""
    if path == "-":
        return "stdin"
    p = Path(path)
    try:
        if p.is_dir():
            lines = [f"{sha256_file(f)}  {f.relative_to(p).as_posix()}\n" for f in sorted(p.rglob("*")) if f.is_file()]
            return hashlib.sha256("".join(lines).encode()).hexdigest()
        return sha256_file(p)
    except OSError as e:
        return f"unreadable: {e.strerror or e}"


@dataclass(frozen=True)
class Provenance:
    """Which draopt made a file, from what, and when (module docstring). `inputs`: each input
    path as given -> its sha256 (digest())."""

    version: str
    command: list[str]
    inputs: dict[str, str] = field(default_factory=dict)
    seed: int | None = None
    time_limit: float | None = None  # seconds
    kubernetes_version: str | None = None
    date: str = ""  # ISO 8601 UTC (SOURCE_DATE_EPOCH when set)
    tool: str = "draopt"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def parquet_metadata(self) -> dict[bytes, bytes]:
        """For a pyarrow schema's metadata (read back: json.loads(schema.metadata[PARQUET_KEY]))."""
        return {PARQUET_KEY: json.dumps(self.to_dict(), sort_keys=True).encode()}

    def html_footer(self) -> str:
        """A <footer> block listing the record, for the end of an HTML report's body."""
        e = html.escape
        items = [
            ("draopt", self.version),
            ("command", shlex.join(self.command)),
            ("seed", "-" if self.seed is None else str(self.seed)),
            ("time limit", "-" if self.time_limit is None else f"{self.time_limit:g} s"),
            ("Kubernetes", self.kubernetes_version or "-"),
            ("date (UTC)", self.date),
        ]
        inputs = "".join(f"<li><code>{e(d)}</code> {e(p)}</li>" for p, d in self.inputs.items())
        rows = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in items)
        return (
            f'<footer class="provenance"><h2>Provenance</h2><dl>{rows}'
            f"<dt>inputs (sha256)</dt><dd><ul>{inputs}</ul></dd></dl></footer>"
        )

    def write_sidecar(self, path: str | Path) -> Path:
        """FILE + SIDECAR_SUFFIX, holding to_json(): for formats whose readers take no comment."""
        side = Path(f"{path}{SIDECAR_SUFFIX}")
        side.write_text(self.to_json(), encoding="utf-8")
        return side


def _command_line() -> list[str]:
    """sys.argv as the user typed it: `python -m draopt` leaves the path of draopt/__main__.py in
    argv[0], which says less than the command's name and differs between installs."""
    argv = list(sys.argv)
    if argv and Path(argv[0]).name == "__main__.py" and Path(argv[0]).parent.name == "draopt":
        argv[0] = "draopt"
    return argv


def record(
    inputs: Iterable[str] = (),
    *,
    seed: int | None = None,
    time_limit: float | None = None,
    kubernetes_version: str | None = None,
    command: Sequence[str] | None = None,
) -> Provenance:
    """The record of a run now: `command` defaults to sys.argv, inputs are digested as they are."""
    return Provenance(
        version=draopt_version(),
        command=list(_command_line() if command is None else command),
        inputs={p: digest(p) for p in dict.fromkeys(inputs)},
        seed=seed,
        time_limit=None if time_limit is None else float(time_limit),
        kubernetes_version=kubernetes_version,
        date=build_date(),
    )
