"""Provenance in every file the studies write (HTML, JSON, CSV sidecar, Parquet metadata), its
date from SOURCE_DATE_EPOCH (then two runs give byte-identical files), and the sweep's Parquet
schema fixed whatever the rows hold."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from draopt import provenance
from draopt.studies import report, simulate
from tests.test_report_notebook import _reports, _rows

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "examples" / "cluster.yaml")
EPOCH = "1700000000"  # 2023-11-14T22:13:20Z


def _record(**kw):
    return provenance.record([CLUSTER], seed=7, time_limit=20, kubernetes_version="1.36", command=["draopt", "x"], **kw)


def test_record_fields(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    got = _record().to_dict()
    assert got["date"] == "2023-11-14T22:13:20Z"
    assert got["inputs"] == {CLUSTER: hashlib.sha256(Path(CLUSTER).read_bytes()).hexdigest()}
    assert got["seed"] == 7 and got["time_limit"] == 20.0 and got["kubernetes_version"] == "1.36"
    assert got["command"] == ["draopt", "x"] and got["tool"] == "draopt"
    import draopt

    assert got["version"] == draopt.__version__
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert provenance.build_date().endswith("Z") and provenance.build_date() != got["date"]
    assert provenance.digest("-") == "stdin" and provenance.digest("/no/such").startswith("unreadable")
    assert len(provenance.digest(str(ROOT / "examples"))) == 64  # a directory: its files' digests


def test_compare_json_and_html_carry_it(monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    made = _record()
    doc = report.to_json(_reports(), [CLUSTER], made)
    assert doc["provenance"] == made.to_dict()
    assert "provenance" not in report.to_json(_reports(), [CLUSTER])
    page = report.to_html(_reports(), [CLUSTER], made)
    footer = page[page.index('<footer class="provenance">') :]
    assert made.inputs[CLUSTER] in footer and "2023-11-14T22:13:20Z" in footer and "20 s" in footer
    # the same epoch, the same bytes
    assert report.to_html(_reports(), [CLUSTER], _record()) == page


def test_simulate_csv_sidecar_is_reproducible(monkeypatch, tmp_path):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    files = []
    for name in ("a.csv", "b.csv"):
        simulate.write_csv(str(tmp_path / name), _rows(), _record())
        files.append(((tmp_path / name).read_bytes(), (tmp_path / f"{name}.provenance.json").read_bytes()))
    assert files[0] == files[1]
    assert files[0][0].startswith(b"inflation,policy,")  # the CSV itself stays plain: no comment line
    assert json.loads(files[0][1])["seed"] == 7


def _fake_run(s):
    return {
        "unallocated_pct": 1.5,
        "placed": 3,
        "failed": 0,
        "gap": None,
        "bound_unallocated_pct": None,
        "status": "heuristic",
        "elapsed_s": 0.0,
    }


def _scenarios():
    from draopt.studies import sweep as sw

    return [
        {k: None for k in sw.INPUTS} | {"study": "simulate", "cluster": CLUSTER, "policy": "first-node", "seed": s}
        for s in (0, 1)
    ]


def test_sweep_parquet_schema_is_fixed_and_carries_provenance(monkeypatch, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from draopt.studies import sweep as sw

    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    for path in paths:
        sw.run_sweep(_scenarios(), str(path), engine="serial", progress=False, run=_fake_run, provenance=_record())
    assert paths[0].read_bytes() == paths[1].read_bytes()
    schema = pq.read_schema(paths[0])
    assert json.loads(schema.metadata[provenance.PARQUET_KEY]) == _record().to_dict()
    # no optimal row: gap and the bound are still float64, not null; the inputs keep their types
    types = {f.name: str(f.type) for f in schema}
    assert types["gap"] == types["bound_unallocated_pct"] == types["inflation"] == "double"
    assert types["seed"] == types["nodes"] == types["placed"] == "int64" and types["status"] == "string"
    assert all(t != "null" for t in types.values())


def test_plan_json_carries_it(monkeypatch, capsys):
    from draopt import cli

    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    gang = str(Path(__file__).resolve().parents[1] / "examples" / "gang-stranding.yaml")
    argv = ["plan", "-f", gang, "--node-template", "node-1", "--time-limit", "5", "-o", "json"]
    monkeypatch.setattr("sys.argv", ["draopt", *argv])
    assert cli.main(argv) == 0
    made = json.loads(capsys.readouterr().out)["provenance"]
    assert made["command"] == ["draopt", *argv] and made["time_limit"] == 5.0 and made["seed"] is None
    assert made["inputs"] == {gang: hashlib.sha256(Path(gang).read_bytes()).hexdigest()}
    assert made["kubernetes_version"] == "1.37" and made["date"] == "2023-11-14T22:13:20Z"
    assert made["version"] == provenance.draopt_version()


@pytest.mark.parametrize(
    ("argv", "seed"),
    [
        (["explain", "-f", str(ROOT / "examples" / "gang-stranding.yaml"), "-o", "json"], 0),
        (["validate", "-f", str(ROOT / "examples" / "gang-stranding.yaml"), "-o", "json"], None),
        (["taint-impact", "-f", str(ROOT / "tests" / "data" / "taint_impact.yaml"), "-o", "json"], None),
    ],
)
def test_json_of_explain_validate_and_taint_impact_carries_it(monkeypatch, capsys, argv, seed):
    from draopt import cli

    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.setattr("sys.argv", ["draopt", *argv])
    cli.main(argv)
    made = json.loads(capsys.readouterr().out)["provenance"]
    path = argv[2]
    assert made["inputs"] == {path: hashlib.sha256(Path(path).read_bytes()).hexdigest()}
    assert made["command"] == ["draopt", *argv] and made["seed"] == seed and made["time_limit"] is None
    assert made["kubernetes_version"] == "1.37" and made["date"] == "2023-11-14T22:13:20Z"


def test_simulate_csv_on_stdout_is_plain_and_the_file_has_a_sidecar(monkeypatch, capsys, tmp_path):
    """`simulate -o csv`: on stdout a header and rows that pandas and csv read as they are; with
    --output-file, the provenance beside the file."""
    import csv
    import io

    from draopt import cli
    from draopt.studies import trace as openb

    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    nodes, trace, cluster = tmp_path / "nodes.csv", tmp_path / "tasks.csv", tmp_path / "cluster.yaml"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn-0,16000,65536,2,T4\nn-1,64000,262144,8,G2\n")
    trace.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\nt-0,4000,8192,1,1000,\nt-1,2000,4096,1,300,\n"
    )
    cluster.write_text(openb.dump_yaml(openb.import_trace(str(nodes), None)))
    argv = ["simulate", "-f", str(cluster), "--trace", str(trace), "--runs", "1", "--inflation", "0.5", "-o", "csv"]
    assert cli.main([*argv, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("inflation,policy,")
    assert list(csv.DictReader(io.StringIO(out)))
    target = tmp_path / "rows.csv"
    assert cli.main([*argv, "--quiet", "--output-file", str(target)]) == 0
    assert target.read_text() == out
    assert json.loads((tmp_path / "rows.csv.provenance.json").read_text())["inputs"][str(trace)]
