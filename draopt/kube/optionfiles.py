"""Files the commands' options name (not Kubernetes objects): YAML option files read, and output
files checked before long runs and written, with errors that name the flag and the path."""

from __future__ import annotations

import os
from typing import Any

from draopt.errors import InputError


def read_yaml_option(flag: str, path: str) -> Any:
    """The YAML document of an option file (--grid, --node-types, --scheduler-config)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{flag} {path}: cannot read: {e.strerror or e}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InputError(f"{flag} {path}: not valid YAML: {e}") from None


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
