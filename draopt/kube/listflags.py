"""Flags that name several values (`--policy`): each may be repeated, and each value may be a
comma-separated list; both forms give one list, in order (docs/cli.md documents the repeated form)."""

from __future__ import annotations

import argparse
from typing import Any


class CommaList(argparse.Action):
    """Each occurrence adds its comma-separated items to the list (duplicates kept: the command
    says what they mean)."""

    def __init__(self, option_strings, dest, **kwargs):
        kwargs.setdefault("default", None)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values: Any, option_string=None):
        items = list(getattr(namespace, self.dest, None) or [])
        items += [item.strip() for item in str(values).split(",") if item.strip()]
        setattr(namespace, self.dest, items)


def joined(values: list[str] | str | None) -> str | None:
    """A list flag's values as the comma-separated text older callers read (None: not given)."""
    if values is None or isinstance(values, str):
        return values
    return ",".join(values)
