"""What draopt says beside its answer: notes (a kind skipped, a controller expanded, an input read
in an older API version) and warnings (fields draopt does not know).

From the Python API they go through :mod:`warnings`, in the :class:`DraoptNote` and
:class:`DraoptWarning` categories, attributed to the caller's line, so that a notebook shows
them once and a program can filter them (``warnings.simplefilter("ignore", draopt.DraoptNote)``)
or turn them into errors. Everything else draopt says while it works (a simulation's rounds, the
studies' steps) goes to the ``logging.getLogger("draopt")`` logger, silent unless configured.

The command line prints both on stderr as ``note: TEXT`` and ``warning: TEXT``
(:func:`on_stderr`, for the command's duration). The choice travels in the environment
(``DRAOPT_NOTES``) so that the worker processes a command starts print as it does.

This module is the lowest layer: it imports nothing of draopt.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["DraoptNote", "DraoptWarning", "logger", "note", "on_stderr", "warn"]

logger = logging.getLogger("draopt")

_ENV = "DRAOPT_NOTES"  # "stderr": the command line's choice, inherited by its worker processes
_PACKAGE = str(Path(__file__).resolve().parent) + os.sep
_STDLIB = str(Path(os.__file__).resolve().parent) + os.sep


class DraoptWarning(UserWarning):
    """Something in the input draopt read but may not have understood (a field it does not know)."""


class DraoptNote(DraoptWarning):
    """A fact about the run the answer depends on (kinds skipped, pods created by controllers,
    the clock's pending actions applied): not a fault, but worth knowing."""


@contextmanager
def on_stderr() -> Iterator[None]:
    """Notes and warnings printed on stderr (`note: TEXT`) inside the block, as the command line
    shows them, in this process and the worker processes it starts."""
    before = os.environ.get(_ENV)
    os.environ[_ENV] = "stderr"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(_ENV, None)
        else:
            os.environ[_ENV] = before


def printed() -> bool:
    """Notes go to stderr (the command line), not through :mod:`warnings` (the Python API)."""
    return os.environ.get(_ENV) == "stderr"


def note(text: str) -> None:
    """Say a note: `note: TEXT` on stderr from the command line, a DraoptNote from the API."""
    _say(text, "note", DraoptNote)


def warn(text: str) -> None:
    """Say a warning: `warning: TEXT` on stderr from the command line, a DraoptWarning from the API."""
    _say(text, "warning", DraoptWarning)


def _say(text: str, label: str, category: type[Warning]) -> None:
    logger.debug("%s: %s", label, text)
    if printed():
        print(f"{label}: {text}", file=sys.stderr)
    else:
        warnings.warn(text, category, stacklevel=_caller_level())


def _caller_level() -> int:
    """The stacklevel, for warnings.warn in _say, of the first frame outside draopt (and the
    standard library's wrappers), so that the warning names the user's line."""
    frame = sys._getframe(2)  # note() or warn(): level 2 from _say
    level = 2
    while frame.f_back is not None and _inside(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level


def _inside(filename: str) -> bool:
    """A frame of draopt's, or of the standard library's (contextlib, functools) but not of a
    package installed beside it (site-packages is under the standard library's directory on a
    system Python)."""
    if filename.startswith(_PACKAGE):
        return True
    return filename.startswith(_STDLIB) and "site-packages" not in filename and "dist-packages" not in filename
