"""The console scripts' entry points: `draopt` and `kubectl-draopt`.

Loading the command line takes a second or two (OR-Tools, pydantic, the CEL binding). A Ctrl-C in
that time would land inside a C extension's initialisation, which turns it into an ImportError and
a traceback. So the signal is only recorded while the modules load; once they have, a recorded
Ctrl-C ends the command with 130 and nothing printed, as a Ctrl-C does later (draopt.interrupt).
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

INTERRUPTED_EXIT = 130


def _load_entry(name: str) -> Callable[..., int] | None:
    """The named function of draopt.cli, or None when Ctrl-C was pressed while it loaded."""
    pressed: list[int] = []

    def record(signum: int, frame: FrameType | None) -> None:
        pressed.append(signum)

    previous: Any = signal.signal(signal.SIGINT, record)
    try:
        from draopt import cli
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        return None
    entry: Callable[..., int] = getattr(cli, name)
    return entry


def _run(name: str) -> int:
    entry = _load_entry(name)
    if entry is None:
        return INTERRUPTED_EXIT
    try:
        return entry()
    except KeyboardInterrupt:
        # A Ctrl-C before the command installs its own handler (draopt.interrupt), e.g. while
        # building the parser imports a layer: the same exit, nothing printed (seen in CI at 0.8 s).
        return INTERRUPTED_EXIT


def main() -> int:
    return _run("main")


def kubectl_main() -> int:
    return _run("kubectl_main")
