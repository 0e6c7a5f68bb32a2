"""Results in a notebook: the plot functions leave matplotlib's backend and pyplot's figures as
they were (they used to switch the process to Agg for good, so a notebook's next plt.show()
drew nothing), and the plots carry human titles with rounded values."""

from __future__ import annotations

import pytest

from draopt.studies import report, simulate
from draopt.studies.report import PolicyReport


def _reports() -> list[PolicyReport]:
    return [
        PolicyReport(
            policy=p,
            pods=2,
            placed=1,
            weighted_pods=2,
            weighted_placed=1,
            devices_total=4,
            devices_used=1,
            free_devices=3,
            stranded_devices=1,
            fragmentation=104.727273,
            shapes=1,
            solve_s=0.1234,
            status="heuristic" if p == "first-fit" else "OPTIMAL",
            gap=None if p == "first-fit" else 0.0,
        )
        for p in ("first-fit", "optimal")
    ]


def _rows() -> list[simulate.SimRow]:
    return [
        simulate.SimRow(lv, pol, 1, 10.0 * lv, 0.0, 10.0 * lv, 10.0 * lv, 100 * lv, 5, 1)
        for lv in (0.8, 1.0)
        for pol in ("first-fit", "fgd")
    ]


def test_plot_functions_leave_the_backend_and_pyplot_alone(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    before = matplotlib.get_backend()
    matplotlib.use("svg")  # a backend a notebook or a user chose, not the Agg the plots draw with
    try:
        figures = plt.get_fignums()
        assert set(report.plots(_reports())) == set(report.PLOTTED)
        report.plot_png(_reports(), str(tmp_path / "compare.png"))
        simulate.plot(_rows(), str(tmp_path / "curve.png"), title="t")
        fig = simulate.figure(_rows())
        assert fig.axes and (tmp_path / "compare.png").stat().st_size and (tmp_path / "curve.png").stat().st_size
        assert matplotlib.get_backend() == "svg"
        assert plt.get_fignums() == figures  # nothing left open in pyplot's list
    finally:
        matplotlib.use(before)


def test_plot_titles_have_units_and_values_are_rounded():
    pytest.importorskip("matplotlib")
    fig = report._png_figure(_reports())
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == [report.TITLES[m] for m in report.PLOTTED]
    assert "placement time (s)" in titles and not any("_" in t for t in titles)
    labels = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "104.73" in labels and "104.727273" not in labels
    assert report.rounded(3) == "3" and report.rounded(2.0) == "2" and report.rounded(None) == "-"


def test_results_show_short_in_a_notebook_and_become_frames():
    pd = pytest.importorskip("pandas")
    import draopt

    reports = draopt.compare("examples/gang-stranding.yaml", time_limit=10)
    assert isinstance(reports, report.PolicyReports) and len(repr(reports)) < 200
    assert all("\n" not in repr(r) and len(repr(r)) < 200 for r in reports)
    assert repr(reports[0]).startswith("<PolicyReport first-fit: ")
    df = reports.to_frame()
    assert list(df.columns) == ["policy", *report.ROWS] and list(df["policy"]) == ["first-fit", "optimal"]
    assert "<table>" in reports._repr_html_() and "<table>" in reports[1]._repr_html_()

    mix = draopt.plan("examples/gang-stranding.yaml", ["node-1=1"], time_limit=10)
    assert repr(mix).startswith("<MixPlan: ") and "\n" not in repr(mix) and len(repr(mix)) < 200
    frame = mix.to_frame()
    assert list(frame.columns) == list(mix.FRAME_COLUMNS) and list(frame["node_type"]) == ["node-1"]
    assert frame["new_nodes"].tolist() == [mix.mix["node-1"]] and "<table>" in mix._repr_html_()

    rows = simulate.aggregate(
        [simulate.Record(lv, "first-fit", run, 0.1, lv, 3, 1, 0.0) for lv in (0.8, 1.0) for run in (0, 1)],
        ["first-fit"],
    )
    assert repr(rows) == "<SimRows: 2 rows, 1 policies (first-fit), 2 levels>"
    assert rows[0]["policy"] == "first-fit" and rows[0]["runs"] == 2
    sf = rows.to_frame()
    assert list(sf.columns) == simulate.COLUMNS and sf["gap"].isna().all()
    assert isinstance(sf, pd.DataFrame) and "<table>" in rows._repr_html_()
    assert len(simulate.records_frame([simulate.Record(1.0, "fgd", 0, 0.1, 1.0, 3, 1, 0.0)])) == 1
