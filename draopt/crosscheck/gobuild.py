"""Minimal stand-in: builds and caches the Go oracles under draopt/crosscheck/oracles/<kind>/.

The real module (same contract) replaces this one at merge.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from draopt.errors import InputError

SUPPORTED = ("1.36", "1.37")
ORACLES = Path(__file__).parent / "oracles"


class OracleUnavailable(InputError):
    """An oracle cannot be built or run here (no Go, unsupported version)."""


def go_path() -> str | None:
    return shutil.which("go")


def oracle_binary(kind: str, minor: str) -> Path:
    """The oracle `kind` built for Kubernetes `minor`, built once per source state."""
    if minor not in SUPPORTED:
        raise OracleUnavailable(f"no oracle for Kubernetes {minor}: supported are {', '.join(SUPPORTED)}")
    go = go_path()
    if go is None:
        raise OracleUnavailable("the Go toolchain (go) is not on PATH")
    src = ORACLES / kind
    modfile = f"go_{minor}.mod" if (src / f"go_{minor}.mod").exists() else "go.mod"
    digest = hashlib.sha256()
    for f in sorted(src.rglob("*")):
        if f.is_file() and (f.suffix in (".go", ".mod", ".sum")):
            digest.update(f.relative_to(src).as_posix().encode() + b"\0" + f.read_bytes())
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "draopt" / "oracles"
    out = cache / f"{kind}-{minor}-{digest.hexdigest()[:16]}"
    if out.exists():
        return out
    cache.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    env = dict(os.environ, CGO_ENABLED="0", GOTOOLCHAIN="local", GOFLAGS="-mod=readonly")
    cmd = [go, "build", f"-modfile={modfile}", "-tags", "k8s_" + minor.replace(".", "_"), "-o", str(tmp), "."]
    proc = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the {kind} oracle for {minor} failed:\n{proc.stderr}")
    tmp.replace(out)
    return out
