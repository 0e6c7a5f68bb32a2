"""The studies' results in a notebook: pandas DataFrames (``to_frame()``) and the small HTML tables
Jupyter shows for a result (``_repr_html_``). pandas is imported only when a frame is asked for
(it is not a dependency of draopt: ``pip install pandas``)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any


def frame(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Any:
    """A pandas DataFrame of `rows` under `columns` (in that order, also when there is no row)."""
    from importlib import import_module

    try:
        pd = import_module("pandas")  # by name: pandas is optional, and mypy has no stubs for it here
    except ImportError:
        raise ImportError("to_frame() needs pandas: pip install pandas") from None
    return pd.DataFrame([list(r) for r in rows], columns=list(columns))


def html_table(caption: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, limit: int = 20) -> str:
    """A small HTML table (at most `limit` rows, then how many more): what Jupyter shows."""
    e = html.escape
    rows = list(rows)
    head = "".join(f"<th>{e(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{e(cell(v))}</td>" for v in r) + "</tr>" for r in rows[:limit])
    more = f"<p>and {len(rows) - limit} more rows (to_frame() has them all)</p>" if len(rows) > limit else ""
    return f"<table><caption>{e(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def cell(v: Any) -> str:
    """A value in a table: None as "-", floats to at most four decimals."""
    if v is None or v == "":
        return "-"
    if isinstance(v, float):
        return f"{v:.4f}".rstrip("0").rstrip(".")
    return str(v)
