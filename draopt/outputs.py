"""Output files of the commands: checked before long runs, written with errors that name the flag."""
from __future__ import annotations

import os

from .errors import InputError


def check_writable(flag: str, path: str, *, directory_hint: str = "") -> None:
    """Fail early (before a placement or a sweep that may take minutes) when `path` could not be
    written: a directory, a missing directory, no permission."""
    if os.path.isdir(path):
        raise InputError(f"{flag} {path}: cannot write: is a directory{directory_hint}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputError(f"{flag} {path}: cannot write: no directory {parent}")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise InputError(f"{flag} {path}: cannot write: permission denied")


def save_figure(fig, flag: str, path: str, *, dpi: int) -> None:
    """Write a matplotlib figure as PNG (no software stamp: the same plot, the same bytes) and close it."""
    import matplotlib.pyplot as plt
    try:
        fig.savefig(path, dpi=dpi, metadata={"Software": None})
    except OSError as e:
        raise InputError(f"{flag} {path}: cannot write: {e.strerror or e}") from None
    finally:
        plt.close(fig)
