"""`place --expect FORECAST` and `--policy lp-guided` (draopt.studies.forecast): hand-made clusters
where first-fit (and optimal) leave no room for a forecast job and lp-guided keeps it, every
placement and every forecast count passing the checker, bad forecasts refused (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

import draopt
from draopt.cli import main
from draopt.cluster.check import check_placement
from draopt.kube.features import Features
from draopt.kube.loader import load_files
from draopt.studies.forecast import count_forecast, place_expecting
from draopt.studies.forecast_input import read_forecast, shapes_that_fit
from draopt.studies.forecast_merge import placed_state


def _node(name: str, cpu: int) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "32Gi", "pods": "110"}},
    }


def _pod(name: str, cpu: int) -> dict:
    resources = {"requests": {"cpu": str(cpu), "memory": "1Gi"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]},
    }


def _deployment(name: str, replicas: int, cpu: int) -> dict:
    template = _pod(name, cpu)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": template["spec"]},
        },
    }


def _job(name: str, parallelism: int, cpu: int) -> dict:
    spec = dict(_pod(name, cpu)["spec"], restartPolicy="Never")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"parallelism": parallelism, "completions": parallelism, "template": {"spec": spec}},
    }


def _write(path: Path, docs: list[dict]) -> str:
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


@pytest.fixture
def spread(tmp_path):
    """Two 8-cpu nodes, two 4-cpu pods today, an 8-cpu job expected: the default profile spreads
    today's pods (LeastAllocated), one on each node, and the job fits nowhere."""
    cluster = _write(tmp_path / "cluster.yaml", [_node("node-a", 8), _node("node-b", 8), _deployment("web", 2, 4)])
    forecast = _write(tmp_path / "train.yaml", [_job("train", 1, 8)])
    return cluster, forecast


@pytest.fixture
def packed(tmp_path):
    """An 8-cpu node and two 4-cpu nodes: optimal packs today's two 4-cpu pods on the 8-cpu node
    (fewest nodes), first-fit puts the first there too: the 8-cpu job fits only after lp-guided."""
    docs = [_node("node-a", 8), _node("node-b", 4), _node("node-c", 4), _deployment("web", 2, 4)]
    cluster = _write(tmp_path / "cluster.yaml", docs)
    forecast = _write(tmp_path / "train.yaml", [_job("train", 1, 8)])
    return cluster, forecast


def _fits(report) -> dict[str, int]:
    return {f.policy: f.fits for f in report.fits}


def test_first_fit_spreads_and_kills_the_forecast_lp_guided_keeps_it(spread):
    cluster, forecast = spread
    out = draopt.place(cluster, policy="lp-guided", expect=forecast, time_limit=10)
    assert _fits(out.forecast) == {"first-fit": 0, "optimal": 1, "lp-guided": 1}
    assert out.forecast.forecast_pods == 1
    assert all(f.status == "OPTIMAL" and f.bound == f.fits and f.today_placed == 2 for f in out.forecast.fits)
    assert out.result.policy == "lp-guided"
    assert len({p.node for p in out.result.pods}) == 1 and all(p.placed for p in out.result.pods)
    assert check_placement(out) == []


def test_optimal_packs_onto_the_big_node_lp_guided_keeps_it_free(packed):
    cluster, forecast = packed
    out = draopt.place(cluster, policy="lp-guided", expect=forecast, time_limit=10)
    assert _fits(out.forecast) == {"first-fit": 0, "optimal": 0, "lp-guided": 1}
    assert sorted(p.node for p in out.result.pods) == ["node-b", "node-c"]
    assert check_placement(out) == []
    assert out.result.stats["joint_forecast_placed"] == 1 and out.result.stats["status"] == "OPTIMAL"
    # the other policies' placements are the ones `place` makes, with the report
    ff = draopt.place(cluster, policy="first-fit", expect=forecast, time_limit=10)
    assert ff.result.policy == "first-fit" and _fits(ff.forecast) == _fits(out.forecast)


def test_every_forecast_count_passes_the_checker(packed):
    cluster, forecast = packed
    objects = load_files([cluster])
    features = Features.from_gates()
    fc = read_forecast(forecast)
    for policy in ("first-fit", "optimal", "lp-guided"):
        outcome = place_expecting(objects, fc, policy=policy, features=features, time_limit=10)
        counted = count_forecast(placed_state(objects, outcome), fc, features, 10)
        assert check_placement(counted) == []
        assert sum(p.placed for p in counted.result.pods) == outcome.forecast.fit(policy).fits


def test_counts_come_from_replicas_and_parallelism(tmp_path):
    cluster = _write(tmp_path / "c.yaml", [_node("node-a", 16), _pod("today", 4)])
    forecast = _write(tmp_path / "f.yaml", [_deployment("svc", 3, 2), _job("batch", 4, 1)])
    out = draopt.place(cluster, policy="lp-guided", expect=forecast, time_limit=10)
    assert out.forecast.forecast_pods == 7
    assert _fits(out.forecast) == {"first-fit": 7, "optimal": 7, "lp-guided": 7}


def _gpu_cluster(tmp_path) -> str:
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,32000,131072,8,V100M32\nn2,32000,131072,8,V100M32\n")
    today = tmp_path / "today.csv"
    today.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nt1,4000,8192,4,1000\nt2,4000,8192,4,1000\n")
    out = tmp_path / "cluster.yaml"
    assert main(["trace", "import", "--nodes", str(nodes), "--pods", str(today), "--output-file", str(out)]) == 0
    return str(out)


def test_trace_forecast_with_an_impossible_shape_left_out(tmp_path, capsys):
    cluster = _gpu_cluster(tmp_path)
    forecast = tmp_path / "forecast.csv"
    forecast.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
        "big,8000,16384,8,1000\nhuge,8000,16384,16,1000\nhuge2,8000,16384,16,1000\n"
    )
    code = main(["place", "-f", cluster, "--policy", "lp-guided", "--expect", str(forecast), "--time-limit", "10"])
    captured = capsys.readouterr()
    assert code == 0
    assert "forecast pod openb/huge and 1 more of its shape fits no node" in captured.err
    assert "left out of the forecast" in captured.err
    rows = {line.split()[0]: line.split() for line in captured.out.splitlines() if line.split()[:1]}
    assert rows["first-fit"][4:7] == ["0", "of", "1"]  # today's 4-GPU pods spread: no node has 8 GPUs free
    assert rows["lp-guided"][4:7] == ["1", "of", "1"]
    out = draopt.place(cluster, policy="lp-guided", expect=str(forecast), time_limit=10)
    assert [x.to_json() for x in out.forecast.left_out][0]["pods"] == 2
    assert check_placement(out) == []


def test_a_forecast_that_fits_nowhere_keeps_optimal_placement(tmp_path):
    cluster = _write(tmp_path / "c.yaml", [_node("node-a", 8), _pod("today", 4)])
    forecast = _write(tmp_path / "f.yaml", [_job("too-big", 2, 16)])
    out = draopt.place(cluster, policy="lp-guided", expect=forecast, time_limit=10)
    assert out.forecast.forecast_pods == 0 and len(out.forecast.left_out) == 1
    assert any("no forecast pod left" in n for n in out.forecast.notes)
    assert [p.node for p in out.result.pods] == ["node-a"]


def test_json_output_reads_back_and_reports_on_stderr(spread, capsys, tmp_path):
    cluster, forecast = spread
    args = ["place", "-f", cluster, "--policy", "lp-guided", "--expect", forecast, "--time-limit", "10", "-o", "json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    listed = json.loads(captured.out)
    placed = [d for d in listed["items"] if d["kind"] == "Pod"]
    assert len(placed) == 2 and len({d["spec"]["nodeName"] for d in placed}) == 1
    report = json.loads(captured.err.strip().splitlines()[-1])["forecast"]
    assert [p["fits"] for p in report["policies"]] == [0, 1, 1]
    assert main(args[:-1] + ["yaml"]) == 0
    doc = yaml.safe_load(capsys.readouterr().err.split("\n", 1)[1])
    assert doc["forecast"]["policies"][2]["policy"] == "lp-guided"


def test_deterministic(packed):
    cluster, forecast = packed
    runs = [draopt.place(cluster, policy="lp-guided", expect=forecast, time_limit=10) for _ in range(2)]
    assert runs[0].objects == runs[1].objects
    strip = [[{k: v for k, v in f.to_json().items() if k != "solve_s"} for f in r.forecast.fits] for r in runs]
    assert strip[0] == strip[1]


BAD = [
    ("bad.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nbad,abc,1,0,0\n", "line 2: column cpu_milli"),
    ("foo.yaml", "apiVersion: v1\nkind: Foo\nmetadata: {name: x, namespace: ns}\n", "Foo ns/x: field kind: 'Foo'"),
    ("node.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n", "Node n: field kind: 'Node' is not a workload"),
    ("nokind.yaml", "apiVersion: v1\nmetadata: {name: n}\n", "field kind: missing"),
    (
        "dep.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 2}\n",
        "field spec.template",
    ),
    ("broken.yaml", "kind: [\n", "invalid YAML"),
    ("empty.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n", "nothing is expected"),
]


@pytest.mark.parametrize("name,text,message", BAD, ids=[b[0] for b in BAD])
def test_bad_forecast_exits_2_naming_the_object_and_field(spread, tmp_path, capsys, name, text, message):
    cluster, _ = spread
    path = tmp_path / name
    path.write_text(text)
    assert main(["place", "-f", cluster, "--policy", "lp-guided", "--expect", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"--expect {path}" in err and message in err


def test_lp_guided_needs_a_forecast(spread, capsys):
    cluster, forecast = spread
    assert main(["place", "-f", cluster, "--policy", "lp-guided"]) == 2
    assert "--expect FORECAST" in capsys.readouterr().err
    assert main(["place", "-f", cluster, "--expect", forecast, "--compare"]) == 2
    with pytest.raises(draopt.errors.InputError, match="expect="):
        draopt.place(cluster, policy="lp-guided")


def test_shapes_counted_once_per_shape(packed):
    cluster, _ = packed
    objects = load_files([cluster])
    kept, left = shapes_that_fit(objects, read_forecast(cluster.replace("cluster", "train")), Features.from_gates())
    assert len(kept.pods) == 1 and left == []
    assert kept.pods[0].name == "forecast-" + kept.pods[0].name.removeprefix("forecast-")


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(st.integers(2, 8), min_size=1, max_size=3),
    today=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    expected=st.lists(st.integers(1, 6), min_size=1, max_size=3),
)
def test_lp_guided_places_today_as_optimal_and_fits_at_least_as_much(tmp_path_factory, nodes, today, expected):
    tmp = tmp_path_factory.mktemp("random")
    docs = [_node(f"node-{i}", cpu) for i, cpu in enumerate(nodes)] + [_pod(f"p{i}", c) for i, c in enumerate(today)]
    cluster = _write(tmp / "c.yaml", docs)
    forecast = _write(tmp / "f.yaml", [_pod(f"f{i}", c) for i, c in enumerate(expected)])
    out = draopt.place(cluster, policy="lp-guided", expect=forecast, time_limit=10)
    fits = {f.policy: f for f in out.forecast.fits}
    assert check_placement(out) == []
    assert fits["lp-guided"].today_placed == fits["optimal"].today_placed
    for f in fits.values():
        assert f.fits <= f.bound and (f.status != "OPTIMAL" or f.fits == f.bound)
    if all(f.status == "OPTIMAL" for f in fits.values()):
        assert fits["lp-guided"].fits >= max(fits["optimal"].fits, 0)


def test_a_forecast_template_that_clashes_with_today_is_refused(tmp_path, capsys):
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "a"}}]}}},
    }
    other = json.loads(json.dumps(template))
    other["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "b"
    cluster = _write(tmp_path / "c.yaml", [_node("node-a", 8), template])
    forecast = _write(tmp_path / "f.yaml", [other, _pod("p", 1)])
    assert main(["place", "-f", cluster, "--expect", forecast]) == 2
    assert "ResourceClaimTemplate default/gpu: metadata.name: today's input has" in capsys.readouterr().err
    same = _write(tmp_path / "same.yaml", [template, _pod("p", 1)])
    assert main(["place", "-f", cluster, "--expect", same]) == 0  # the same template: shared


def test_an_unproven_count_keeps_its_bound_and_gap(packed, monkeypatch):
    """A count the solver did not prove (time limit): FEASIBLE, its bound and gap, never OPTIMAL."""
    from draopt.placement import optimal

    real = optimal.optimize

    def unproven(cluster, workload, **kwargs):
        result = real(cluster, workload, **kwargs)
        if all(d.key.split("/")[1].startswith("forecast-") for d in workload.pending):
            result.stats.update(status="FEASIBLE", bound=sum(p.placed for p in result.pods) + 3)
        return result

    monkeypatch.setattr(optimal, "optimize", unproven)
    cluster, forecast = packed
    report = draopt.place(cluster, policy="lp-guided", expect=forecast, time_limit=10).forecast
    for fit in report.fits:
        assert fit.status == "FEASIBLE" and fit.bound == fit.fits + 3 and fit.gap > 0
    assert "FEASIBLE" in report.table() and "OPTIMAL" not in report.table()


def test_a_joint_model_short_of_optimal_keeps_optimal_placement(packed, monkeypatch):
    """Should the joint model place less of today's pods than optimal (time ran out), optimal's
    placement is lp-guided's, said in a note."""
    from draopt.cluster.result import PlacementResult, PodPlacement
    from draopt.placement import optimal

    real = optimal.optimize

    def short(cluster, workload, **kwargs):
        if kwargs.get("first_fit") is not None and kwargs["first_fit"].policy == "hint":
            pods = [PodPlacement(d.key, None, d.priority, d.group) for d in workload.pending]
            return PlacementResult("optimal", pods, {}, {"status": "UNKNOWN", "bound": 0, "objective": 0})
        return real(cluster, workload, **kwargs)

    monkeypatch.setattr(optimal, "optimize", short)
    cluster, forecast = packed
    out = draopt.place(cluster, policy="lp-guided", expect=forecast, time_limit=10)
    opt = draopt.place(cluster, policy="optimal", time_limit=10)
    assert any("optimal's placement is kept" in n for n in out.forecast.notes)
    assert [p.node for p in out.result.pods] == [p.node for p in opt.result.pods]
    assert out.result.policy == "lp-guided" and check_placement(out) == []


def test_forecast_from_stdin(packed, monkeypatch, capsys):
    import io

    cluster, forecast = packed
    monkeypatch.setattr("sys.stdin", io.StringIO(Path(forecast).read_text()))
    assert main(["place", "-f", cluster, "--policy", "lp-guided", "--expect", "-", "--time-limit", "10"]) == 0
    assert "lp-guided  2 of 2        1 of 1" in capsys.readouterr().out


def test_a_pod_of_today_named_forecast_is_today(tmp_path):
    """Forecast pods are told apart by their keys, not by the `forecast-` prefix."""
    cluster = _write(
        tmp_path / "c.yaml",
        [_node("node-a", 8), _node("node-b", 4), _node("node-c", 4)] + [_pod("forecast-a", 4), _pod("forecast-b", 4)],
    )
    forecast = _write(tmp_path / "f.yaml", [_job("train", 1, 8)])
    out = draopt.place(cluster, policy="lp-guided", expect=forecast, time_limit=10)
    assert sorted(p.node for p in out.result.pods) == ["node-b", "node-c"]
    assert out.forecast.fit("lp-guided").fits == 1
    clash = _write(tmp_path / "clash.yaml", [_node("node-a", 8), _pod("forecast-x", 1)])
    with pytest.raises(draopt.errors.InputError, match="Pod default/forecast-x: metadata.name"):
        draopt.place(clash, expect=_write(tmp_path / "x.yaml", [_pod("x", 1)]))
