"""`plan`'s incumbent (issue 34): the autoscalers' baselines run first, and the cheapest that places
every pod is where the search starts; the answer is never dearer than it."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import openb_cut

ROOT = Path(__file__).resolve().parents[1]
OPENB = ROOT.parent / "shared" / "data" / "openb"


def _openb_cut(tmp_path, step: int):
    return openb_cut(OPENB, tmp_path, step)


@pytest.mark.skipif(not OPENB.is_dir(), reason="openb trace not in ../shared/data/openb")
def test_the_columns_start_from_the_cheapest_baseline(tmp_path, monkeypatch):
    """Column generation on an openb cut with Karpenter's and the price expander's mixes as
    incumbents: their nodes' contents are columns, and when the integer counts find nothing (here
    made to) the cheapest baseline's own counts are the answer (status WARM), never dearer than it."""
    from draopt.model import colgen_plan
    from draopt.studies import planning
    from draopt.studies.baselines import run_baselines

    objs, types = _openb_cut(tmp_path, 100)
    monkeypatch.setattr(planning, "COLUMNS_MIN_PODS", 0)
    done = run_baselines(objs, types, ["karpenter", "cluster-autoscaler/price"])
    assert all(b.placed == b.pods and len(b.placement) == b.pods for b in done)
    cheapest = min(done, key=lambda b: (b.cost, b.name))
    p = planning.plan(objs, types, time_limit=25, incumbents=done)
    assert p.placed == p.pods and p.cost <= cheapest.cost and p.stats.incumbent == cheapest.name

    monkeypatch.setattr(colgen_plan, "dive", lambda *a, **k: None)
    monkeypatch.setattr(colgen_plan, "_integer_cover", lambda *a, **k: None)
    p = planning.plan(objs, types, time_limit=25, incumbents=done)
    assert p.stats.columns["colgen_integer_status"] == "WARM" and p.stats.incumbent_kept
    assert p.placed == p.pods and p.cost <= cheapest.cost
    assert cheapest.name in p.table() and "the search found none cheaper" in p.table()
