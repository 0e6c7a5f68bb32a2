"""Build the Go oracles under draopt/crosscheck/oracles/<kind>/, one binary per Kubernetes minor.

An oracle is a Go main package linking Kubernetes' released modules; `go_<minor>.mod` pins a
minor (else `go.mod`), and files with the build tag `k8s_<major>_<minor>` hold what differs
between releases. Binaries are cached under `$DRAOPT_CACHE_DIR` (or ~/.cache/draopt), keyed by
a hash of the oracle's sources, so a changed source builds anew and an unchanged one never.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from draopt.errors import InputError

SUPPORTED = ("1.36", "1.37")
ORACLES_DIR = Path(__file__).resolve().parent / "oracles"
GO_HELP = "Go >= 1.26 is needed (https://go.dev/dl/, or the distribution's package, e.g. apt-get install golang-go)"
BUILD_TIMEOUT = 1800.0  # seconds; a first build downloads and compiles client-go

# Output of a build that failed for want of the module proxy, not for the sources.
_DOWNLOAD_FAILURE = re.compile(
    r"dial tcp|no such host|connection refused|i/o timeout|TLS handshake|network is unreachable"
    r"|reading https?://|Get \"https?://|proxyconnect"
)
_GO_TOO_OLD = re.compile(r"requires go >= |toolchain not available")


class OracleUnavailable(InputError):
    """The oracle cannot be built here. `cause`: "no-go" (no go command), "go-too-old",
    "download" (modules could not be fetched) or "compile" (the sources do not build: a bug)."""

    def __init__(self, message: str, cause: str):
        super().__init__(message)
        self.cause = cause


def go_path() -> str | None:
    """The go command on PATH (or in /usr/local/go/bin, where Go's tarball installs it)."""
    found = shutil.which("go")
    if found:
        return found
    fallback = Path("/usr/local/go/bin/go")
    return str(fallback) if fallback.exists() else None


def cache_dir() -> Path:
    root = os.environ.get("DRAOPT_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "draopt")
    return Path(root) / "oracles"


def _build_inputs(source: Path) -> list[Path]:
    """The files `go build` reads: sources and module files, not the README, tests or testdata
    (a documentation edit must not cost CI a rebuild)."""
    return sorted(
        p
        for p in source.rglob("*")
        if p.is_file()
        and p.suffix in (".go", ".mod", ".sum")
        and not p.name.endswith("_test.go")
        and "testdata" not in p.relative_to(source).parts
    )


def source_hash(source: Path) -> str:
    """A short hash of the oracle's build inputs (names and contents)."""
    digest = hashlib.sha256()
    for path in _build_inputs(source):
        digest.update(path.relative_to(source).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def build_command(go: str, source: Path, minor: str, output: Path) -> list[str]:
    modfile = source / f"go_{minor}.mod"
    cmd = [go, "build"]
    if modfile.exists():
        cmd.append(f"-modfile={modfile.name}")
    return cmd + ["-tags", "k8s_" + minor.replace(".", "_"), "-o", str(output), "."]


def oracle_binary(kind: str, minor: str) -> Path:
    """The built oracle `kind` for Kubernetes `minor` ("1.36", "1.37"), built now if needed."""
    if minor not in SUPPORTED:
        raise InputError(f"oracle {kind}: Kubernetes {minor} is not supported (supported: {', '.join(SUPPORTED)})")
    source = ORACLES_DIR / kind
    if not (source / "go.mod").exists():
        raise InputError(f"oracle {kind}: no Go module at {source}")
    if minor != SUPPORTED[-1] and not (source / f"go_{minor}.mod").exists():  # go.mod pins the newest
        raise InputError(f"oracle {kind}: not built for Kubernetes {minor} (no go_{minor}.mod)")
    target_dir = cache_dir() / f"{kind}-{minor}-{source_hash(source)}"
    binary = target_dir / "oracle"
    if binary.exists():
        return binary
    go = go_path()
    if go is None:
        raise OracleUnavailable(f"oracle {kind} {minor}: no go command found. {GO_HELP}", "no-go")
    target_dir.mkdir(parents=True, exist_ok=True)
    # One build at a time per binary: parallel test workers wait for the first one's result.
    with open(target_dir / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.exists():
            return binary
        _build(go, source, minor, kind, binary)
    return binary


def _build(go: str, source: Path, minor: str, kind: str, binary: Path) -> None:
    env = dict(os.environ, CGO_ENABLED="0", GOTOOLCHAIN="local", GOFLAGS="-mod=readonly")
    # Written beside the target, then renamed: a binary present is always a complete one.
    fd, partial = tempfile.mkstemp(prefix="oracle-", dir=binary.parent)
    os.close(fd)
    try:
        try:
            proc = subprocess.run(
                build_command(go, source, minor, Path(partial)),
                cwd=source,
                env=env,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            raise OracleUnavailable(f"oracle {kind} {minor}: go build ran over {BUILD_TIMEOUT:.0f}s", "download")
        if proc.returncode != 0:
            output = (proc.stdout + proc.stderr).strip()
            tail = "\n".join(output.splitlines()[-15:])
            if _GO_TOO_OLD.search(output):
                cause = "go-too-old"
            elif _DOWNLOAD_FAILURE.search(output):
                cause = "download"
            else:
                cause = "compile"
            raise OracleUnavailable(f"oracle {kind} {minor}: go build failed ({cause}). {GO_HELP}\n{tail}", cause)
        os.chmod(partial, 0o755)
        os.replace(partial, binary)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


__all__ = ["SUPPORTED", "OracleUnavailable", "go_path", "oracle_binary", "source_hash", "cache_dir"]
