"""A place() outcome in a notebook: a one-line repr (it was the whole dataclass: 748,317
characters on a large dump), a small HTML table, and a DataFrame with one row per pod."""

from __future__ import annotations

import pytest

import draopt


def test_repr_is_one_short_line():
    out = draopt.place("examples/gang-stranding.yaml")
    assert repr(out) == "<PlaceOutcome first-fit: 0 of 2 pods placed on 0 nodes, heuristic>"


def test_frame_and_html_list_every_pod():
    pandas = pytest.importorskip("pandas")
    out = draopt.place("examples/gang-stranding.yaml", policy="optimal", time_limit=10)
    frame = out.to_frame()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns) == list(out.FRAME_COLUMNS)
    assert frame["pod"].tolist() == ["ml/trainer-0", "ml/trainer-1"]
    assert frame["placed"].all() and set(frame["node"]) == {"node-1"}
    html = out._repr_html_()
    assert html.count("<tr>") == 3 and "ml/trainer-1" in html and "OPTIMAL" in html


def test_refusal_reasons_are_in_the_row():
    out = draopt.place("examples/gang-stranding.yaml")
    rows = {r[0]: r for r in out.rows()}
    assert rows["ml/trainer-1"][2] is False
    assert "cannot allocate all claims" in rows["ml/trainer-1"][6]
