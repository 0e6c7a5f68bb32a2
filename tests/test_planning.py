"""Capacity planning: nodes needed for the pending pods (one template, several node types with costs),
and what-if sweeps."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from draopt.errors import InputError
from draopt.kube.loader import load_files
from draopt.studies.planning import nodes_needed, sweep, with_copies

ROOT = Path(__file__).resolve().parents[1]
GANG = ROOT / "examples" / "gang-stranding.yaml"


def test_copies_get_their_own_node_and_pool():
    objs = with_copies(load_files([str(GANG)]), "node-1", 2)
    assert [n.name for n in objs.nodes] == ["node-1", "node-1-plan-0", "node-1-plan-1"]
    copies = [s for s in objs.resource_slices if s.spec.node_name == "node-1-plan-1"]
    assert {s.spec.pool.name for s in copies} == {"node-1-gpu-0-plan-1"}
    assert len(copies) == 2  # the counter slice and the device slice


def test_first_fit_needs_a_node_more_than_optimal():
    objs = load_files([str(GANG)])
    ff = nodes_needed(objs, "node-1", policy="first-fit")
    opt = nodes_needed(objs, "node-1", policy="optimal", time_limit=10)
    assert ff.extra_nodes == 1 and ff.tried[0] == (0, 2) and ff.tried[1] == (2, 2)
    assert opt.extra_nodes == 0


def test_not_enough_within_the_limit_and_bad_template():
    objs = load_files([str(GANG)])
    plan = nodes_needed(objs, "node-1", policy="first-fit", max_extra=0)
    assert plan.extra_nodes is None
    with pytest.raises(InputError, match="no Node nope"):
        nodes_needed(objs, "nope")


def test_sweep_local_runs_in_order():
    assert sweep([1, 2, 3], lambda x: x * x) == [1, 4, 9]
    with pytest.raises(InputError, match="unknown engine"):
        sweep([1], lambda x: x, engine="slurm")


def test_cli_plan_template_shorthand():
    """--node-template is one node type at cost 1. First-fit would need a node more on this
    example (above); the model places the gang on node-1 itself, and says so next to the
    estimator's answer."""
    p = subprocess.run(
        [sys.executable, "-m", "draopt", "plan", "-f", str(GANG), "--node-template", "node-1", "-o", "json", "--stats"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["mix"] == {"node-1": 0} and out["proven_minimal"] and out["placed"] == out["pods"] == 2
    assert out["ffd"]["node-1"]["nodes"] == 1
    stats = json.loads(p.stderr.strip().splitlines()[-1])
    assert {"load_s", "ffd_s", "build_s", "cost_s", "variables", "constraints", "status"} <= set(stats)


# ------------------------------------------------------------------ several node types
# Hand-computed optima (draopt/testing/plan_scenarios.py, 40 pods, costs gpu-8 32, gpu-2 9, cpu 3):
# * training: 2 GPUs + 24 cpu + 96Gi a pod: a gpu-8 takes 4, a gpu-2 takes 1; the cluster's own
#   two GPU nodes take 5, so 35 are left: min 32a + 9b with 4a + b >= 35 is a=8, b=3: 283
#   (first-fit decreasing with gpu-8 only: 9 nodes, 288);
# * inference: 1 GPU + 12 cpu a pod: a gpu-8 takes 8 (cpu-bound), a gpu-2 takes 2; the cluster
#   takes 10, 30 are left: min 32a + 9b with 8a + 2b >= 30 is a=3, b=3: 123 (estimate: 4 x gpu-8, 128).
EXPECTED_COST = {"training": 283, "inference": 123, "mixed": None}


@pytest.fixture(scope="module")
def plans():
    from draopt.testing.plan_scenarios import MIXES, scenario
    from draopt.studies.planning import plan

    out = {}
    for mix in MIXES:
        objs, types = scenario(mix, 40)
        out[mix] = (objs, types, plan(objs, types, time_limit=30))
    return out


@pytest.mark.parametrize("mix", ["training", "inference", "mixed"])
def test_cheapest_mix_is_proven_and_never_above_the_estimate(plans, mix):
    _, types, p = plans[mix]
    assert p.status == "OPTIMAL" and p.proven_minimal and p.bound == p.cost and p.gap == 0
    assert p.placed == p.pods == 40 and not p.blocked
    assert p.stats.ffd_in_model  # the estimate's placement bounds the cost
    assert sum(1 for n in p.mix.values() if n) >= 2  # a mix of types, not one type
    best = p.ffd_best()
    assert best.placed == 40 and p.cost <= best.cost
    assert all(p.cost <= e.cost for e in p.ffd if e.placed == 40)
    assert p.cost == sum(t.cost * p.mix[t.name] for t in types)
    if EXPECTED_COST[mix] is not None:
        assert p.cost == EXPECTED_COST[mix]
    if mix in ("training", "inference"):
        assert p.cost < best.cost  # the estimator buys more here


@pytest.mark.parametrize("mix", ["training", "inference", "mixed"])
def test_one_fewer_of_each_type_does_not_place_everything(plans, mix):
    """The plan's own check, and independently `place --policy optimal` on the cluster with the
    mix's copies: everything placed with the mix, not with one node fewer of any type used."""
    from draopt.placement import place
    from draopt.studies.planning import _with_types

    objs, types, p = plans[mix]
    used = [t for t in types if p.mix[t.name]]
    assert [o.removed for o in p.one_fewer] == [t.name for t in used]
    assert all(o.verdict == "does not place them all (proven infeasible)" for o in p.one_fewer)
    with_mix, _, _ = _with_types(objs, [(t, p.mix[t.name]) for t in types])
    out = place(with_mix, policy="optimal", time_limit=30).result
    assert len(out.placed_pods()) == 40
    for t in used:
        fewer, _, _ = _with_types(objs, [(s, p.mix[s.name] - (s is t)) for s in types])
        out = place(fewer, policy="optimal", time_limit=30).result
        assert len(out.placed_pods()) < 40 and out.stats["proven"]["placed"]


def test_estimate_follows_the_autoscaler_order():
    """Pods by decreasing cpu/node-cpu + memory/node-memory, each on the first new node that
    takes it. The template node is full (a running pod); 3 pods of 3 cpu and 3 of 5 cpu on
    8-cpu nodes: decreasing order packs 5+3 three times (3 nodes); first fit in the queue order
    (3, 3, 3, 5, 5, 5) would pack 3+3, 3+5, 5, 5 (4 nodes)."""
    from draopt.studies.planning import NodeType, ffd_estimate
    from draopt.testing.audit import objects_of

    def pod(name, cpu, second, node=None):
        d = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "d", "creationTimestamp": f"2026-01-01T00:00:{second:02d}Z"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]},
        }
        if node:
            d["spec"]["nodeName"] = node
            d["status"] = {"phase": "Running"}
        return d

    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n"},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}},
        },
        pod("running", 8, 0, "n"),
    ]
    docs += [pod(f"p{i}", cpu, i + 1) for i, cpu in enumerate([3, 3, 3, 5, 5, 5])]
    objs = objects_of(docs)
    e = ffd_estimate(objs, NodeType("n", "n", Fraction(1)))
    assert e.placed == 6 and e.nodes == 3
    assert {e.placement[f"d/p{i}"].node for i in (3, 0)} == {"n-plan-0"}  # the first 5 and the first 3


def test_plan_input_errors(tmp_path):
    from draopt.studies.planning import NodeType, load_node_types, parse_node_type, plan

    objs = load_files([str(GANG)])
    with pytest.raises(InputError, match="no node types"):
        plan(objs, [])
    with pytest.raises(InputError, match="node type x: template nope: no Node nope in the input"):
        plan(objs, [NodeType("x", "nope", Fraction(1))])
    for text in ("node-1=abc", "node-1=-2", "node-1=0", "node-1", "=3", "node-1=nan"):
        with pytest.raises(InputError, match=r"--node-type"):
            parse_node_type(text)
    assert parse_node_type("node-1=3.06").cost == Fraction(306, 100)
    with pytest.raises(InputError, match="given twice"):
        plan(objs, [NodeType("a", "node-1", Fraction(1)), NodeType("a", "node-1", Fraction(2))])
    bad = {
        "missing.yaml": None,
        "list.yaml": "nodeTypes: {a: 1}\n",
        "field.yaml": "- {template: node-1, cost: 1, price: 2}\n",
        "cost.yaml": "- {template: node-1, cost: true}\n",
        "tmpl.yaml": "- {cost: 1}\n",
        "yaml.yaml": "- [\n",
        "extra.yaml": "nodeTypes: [{template: node-1, cost: 1}]\nnodetypes: []\n",
    }
    for name, text in bad.items():
        f = tmp_path / name
        if text is not None:
            f.write_text(text)
        with pytest.raises(InputError, match=f"--node-types {f}"):
            load_node_types(str(f))
    with pytest.raises(InputError, match="unknown field nodetypes"):  # not read as a bare list
        load_node_types(str(tmp_path / "extra.yaml"))
    good = tmp_path / "types.yaml"
    good.write_text("nodeTypes:\n- {name: spot, template: node-1, cost: 0.5}\n- {template: node-1, cost: 2}\n")
    assert load_node_types(str(good)) == [
        NodeType("spot", "node-1", Fraction(1, 2)),
        NodeType("node-1", "node-1", Fraction(2)),
    ]


@pytest.mark.parametrize(
    "args",
    [
        ["--node-type", "nope=1"],
        ["--node-type", "node-1=cheap"],
        [],
        ["--node-types", "/nonexistent/types.yaml"],
        ["--node-template", "nope"],
        ["--node-type", "node-1=1", "--max-nodes", "0"],
    ],
)
def test_cli_plan_bad_input_exits_2(args, capsys):
    from draopt import cli

    assert cli.main(["plan", "-f", str(GANG)] + args) == 2
    err = capsys.readouterr().err
    assert err.startswith("draopt: error: ") and "Traceback" not in err


def test_sweep_on_dask_or_a_clear_message():
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        with pytest.raises(InputError, match=r"pip install 'draopt\[sweep\]'"):
            sweep([1], abs, engine="dask")
    else:
        assert sweep([-1, -2], abs, engine="dask") == [1, 2]


def test_new_nodes_of_a_type_run_its_daemonset_pods():
    """A DaemonSet takes one of each node's two GPUs (tests/test_controllers.py): every new node
    keeps one GPU for the Deployment's 4 pods, so 3 new nodes, and the DaemonSet's pods on the
    candidate copies are not pods to place (they run exactly on the nodes bought)."""
    from test_controllers import CLASS, DEPLOYMENT, TEMPLATE, docs, node

    from draopt.kube.loader import load_text
    from draopt.studies.planning import NodeType, plan

    ds = (
        DEPLOYMENT.replace("Deployment", "DaemonSet")
        .replace("name: infer", "name: agent")
        .replace("app: infer", "app: agent")
        .replace("  replicas: 4\n", "")
    )
    objs = load_text(docs(CLASS, TEMPLATE, node("a", 2), ds, DEPLOYMENT), "t")
    p = plan(objs, [NodeType("a", "a", Fraction(5))], time_limit=20)
    assert p.mix == {"a": 3} and p.cost == 15 and p.proven_minimal
    assert p.pods == 5 and p.placed == 5  # the Deployment's 4 and the DaemonSet's pod on a
    assert p.ffd[0].nodes == 3
    assert [o.verdict for o in p.one_fewer] == ["does not place them all (proven infeasible)"]


def test_capped_candidates_are_not_called_minimal():
    """With one candidate per type (--max-nodes 1) the 40 inference pods do not all fit: the plan
    places what it can, says it is not proven and why, and the CLI exits 1."""
    from draopt.testing.plan_scenarios import scenario
    from draopt.studies.planning import plan

    objs, types = scenario("inference", 40)
    p = plan(objs, types, max_nodes=1, time_limit=20)
    assert p.placed < p.pods == 40
    assert not p.proven_minimal and not p.placed_proven
    assert "--max-nodes 1" in p.why_not_proven and "not proven minimal" in p.table()
    assert all(n <= 1 for n in p.mix.values())


def test_same_input_same_plan(plans):
    from draopt.studies.planning import plan

    objs, types, first = plans["mixed"]
    assert plan(objs, types, time_limit=30).to_json() == first.to_json()


def test_random_clusters_plan_is_consistent():
    """Random small clusters (draopt.testing.synth: whole and MIG-partitioned GPUs, gangs, priorities,
    node selectors), two node types at random costs: the plan never places fewer pods than the
    cheapest estimate, is never dearer when the estimate places as many, a proven-minimal mix
    has every one-fewer check proven infeasible, and `place --policy optimal` on the cluster with
    the mix places as many pods as the plan says."""
    import random

    from draopt.placement import place
    from draopt.studies.planning import NodeType, _with_types, plan
    from draopt.testing.synth import random_placement_instance
    from draopt.testing.audit import objects_of

    proven = 0
    for seed in range(24):
        rng = random.Random(seed)
        docs = random_placement_instance(rng)
        nodes = [d["metadata"]["name"] for d in docs if d["kind"] == "Node"]
        objs = objects_of(docs)
        types = [NodeType(n, n, Fraction(rng.choice([1, 2, 3, 5]))) for n in nodes[:2]]
        p = plan(objs, types, time_limit=10)
        best = p.ffd_best()
        assert p.placed >= best.placed, seed
        if best.placed >= p.placed:
            assert p.cost <= best.cost, seed
        if p.proven_minimal:
            proven += 1
            assert all(o.verdict == "does not place them all (proven infeasible)" for o in p.one_fewer), seed
        with_mix, _, _ = _with_types(objs, [(t, p.mix[t.name]) for t in types])
        out = place(with_mix, policy="optimal", time_limit=10).result
        if out.stats["proven"]["placed"]:
            assert len(out.placed_pods()) == p.placed, seed
    assert proven >= 20


def test_time_limit_too_short_gives_bound_and_gap_never_above_the_estimate():
    """60 cpu-only pods of 60 different sizes (5-29 cpu; too many kinds for the interchangeable-
    nodes reduction, so every candidate copy is its own node). With 0.001 s of CP-SAT's
    deterministic time (same run, same answer) the cost phase stops before its proof: the answer
    is not called minimal, shows the proven bound and the gap, and is no dearer than the estimate
    (whose placement is a solution of the model). With time, it is proven."""
    import random

    from draopt.testing.plan_scenarios import DEFAULT_COSTS, _pod, cluster_docs
    from draopt.studies.planning import NodeType, plan
    from draopt.testing.audit import objects_of

    rng = random.Random(7)
    objs = objects_of(cluster_docs() + [_pod(f"p{i}", rng.randint(5, 29), "8Gi", None, i) for i in range(60)])
    types = [NodeType(name, name, cost) for name, cost in DEFAULT_COSTS.items()]
    p = plan(objs, types, time_limit=0.001)
    assert not p.proven_minimal and "time limit" in p.why_not_proven
    assert p.bound < p.cost and p.gap > 0 and f"gap {100 * p.gap:.2f}%" in p.table()
    assert p.cost <= p.ffd_best().cost and p.placed == p.pods == 60
    assert p.stats.pattern_classes == 0
    q = plan(objs, types, time_limit=10)
    assert q.proven_minimal and q.cost <= p.cost


def test_cli_plan_with_node_types(tmp_path, capsys):
    """The command line on a scenario written as YAML (python -m draopt.testing.plan_scenarios): types
    from --node-type and from a --node-types file give the same proven plan."""
    import contextlib
    import io

    from draopt import cli
    from draopt.testing.plan_scenarios import main as write_scenario

    cluster = tmp_path / "inference.yaml"
    with contextlib.redirect_stdout(io.StringIO()) as out:
        write_scenario(["inference", "40"])
    cluster.write_text(out.getvalue())
    types = tmp_path / "types.yaml"
    types.write_text(
        "nodeTypes:\n- {template: gpu-8, cost: 32}\n- {template: gpu-2, cost: 9}\n- {template: cpu, cost: 3}\n"
    )
    assert (
        cli.main(
            ["plan", "-f", str(cluster), "--node-type", "gpu-8=32", "--node-type", "gpu-2=9", "--node-type", "cpu=3"]
        )
        == 0
    )
    table = capsys.readouterr().out
    assert "cheapest mix: 3 x gpu-8 + 3 x gpu-2, cost 123; places 40 of 40 pending pod(s)" in table
    assert "one gpu-2 fewer (3 x gpu-8 + 2 x gpu-2): does not place them all (proven infeasible)" in table
    assert "cheapest single type: 4 x gpu-8, cost 128" in table
    assert cli.main(["plan", "-f", str(cluster), "--node-types", str(types), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mix"] == {"gpu-8": 3, "gpu-2": 3, "cpu": 0} and out["cost"] == 123 and out["proven_minimal"]
    assert out["ffd_best"] == {"node_type": "gpu-8", "nodes": 4, "cost": 128, "placed": 40}


def test_estimate_with_a_gap_in_its_copies_stays_a_solution():
    """Shared claims and gangs (draopt.testing.synth_cluster, family shared): a gang short of minCount
    gives its copy back, so the estimate's copies have a gap (plan-1 unused, plan-2 used). The
    model opens copies in an order that puts the estimate's first: its placement is a solution
    (the cost bound and the starting point)."""
    import random

    from draopt.studies.planning import NodeType, plan
    from draopt.testing.synth_cluster import random_cluster
    from draopt.testing.audit import objects_of

    rng = random.Random(6)
    objs = objects_of(random_cluster(rng, "shared", nodes=(1, 3), pods=(4, 14)))
    nodes = sorted(n.name for n in objs.nodes)
    p = plan(objs, [NodeType(nodes[0], nodes[0], Fraction(1))], time_limit=10)
    # (Since a gang short of minCount gives its copy back at once, in its pod-group cycle, later
    # pods reuse it: this seed's estimate no longer leaves a gap, but stays the model's start.)
    assert p.ffd_best().used
    assert p.stats.ffd_in_model and p.proven_minimal
    assert p.placed >= p.ffd_best().placed


def test_costs_too_large_or_too_far_apart_are_input_errors(capsys):
    """Costs the model's 64-bit integers (read back through doubles) cannot hold exactly are bad
    input naming the costs: they were a TypeError traceback from OR-Tools (1e19, 1e400)."""
    from draopt import cli
    from draopt.studies.planning import NodeType, parse_node_type, plan

    with pytest.raises(InputError, match=r"--node-type node-1=1e400: the cost must be at most 2\^53"):
        parse_node_type("node-1=1e400")
    assert parse_node_type(f"node-1={2**53}").cost == 2**53
    objs = load_files([str(GANG)])
    far = [NodeType("dear", "node-1", Fraction(10**12)), NodeType("cheap", "node-1", Fraction(1, 10**6))]
    with pytest.raises(InputError, match=r"costs dear=1000000000000, cheap=1e-06: too large or too far apart"):
        plan(objs, far, time_limit=5)
    assert (
        plan(
            objs,
            [NodeType("dear", "node-1", Fraction(10**9)), NodeType("cheap", "node-1", Fraction(1, 10**3))],
            time_limit=5,
        ).placed
        == 2
    )
    for cost in ("1e19", "1e400"):
        assert cli.main(["plan", "-f", str(GANG), "--node-type", f"node-1={cost}"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("draopt: error: --node-type node-1=") and "Traceback" not in err


def test_bound_with_capped_candidates_holds_beyond_them():
    """Candidates capped by --max-nodes: CP-SAT's bound is only for mixes within the candidates;
    the reported lower bound is at most (candidates + 1) x cost of a capped type (it was CP-SAT's
    bound alone: 'lower bound 283, gap 0.0%' next to 'not proven minimal')."""
    from draopt.testing.plan_scenarios import scenario
    from draopt.studies.planning import plan

    objs, types = scenario("training", 40)  # gpu-8 at 32, gpu-2 at 9, cpu at 3
    p = plan(objs, types, max_nodes=9, time_limit=20)
    assert p.placed == p.pods == 40 and p.cost == 283 and not p.proven_minimal
    assert "gpu-2 may be too few (--max-nodes 9)" in p.why_not_proven
    assert p.bound == 10 * 9 and p.gap > 0.6
    assert "lower bound 90, gap 68.20%" in p.table()


@pytest.mark.parametrize("pods", ["0", "-5"])
def test_plan_scenarios_needs_at_least_one_pod(pods, capsys):
    """`python -m draopt.testing.plan_scenarios mixed -5` printed a cluster without pods; now a usage error."""
    from draopt.testing.plan_scenarios import main

    with pytest.raises(SystemExit) as e:
        main(["mixed", pods])
    assert e.value.code == 2 and f"argument pods: {pods}: at least 1" in capsys.readouterr().err


OPENB = ROOT.parent / "shared" / "data" / "openb"


@pytest.mark.skipif(not OPENB.is_dir(), reason="openb trace not in ../shared/data/openb")
def test_plan_by_columns_on_an_openb_cut(tmp_path, monkeypatch):
    """Column generation (draopt/model/colgen_plan.py) plans every 40th task of the default trace
    on openb's 15 node types (cost = GPUs): the mix is never dearer than the estimate, its bound
    is at most its cost, and the one placement model places every pod on a cluster of that mix."""

    from draopt.placement import place
    from draopt.studies import planning
    from draopt.studies.planning import _with_types, plan

    from helpers import openb_cut

    objs, types = openb_cut(OPENB, tmp_path, 100)
    monkeypatch.setattr(planning, "COLUMNS_MIN_PODS", 0)
    p = plan(objs, types, time_limit=25)
    assert p.stats.columns.get("colgen_rounds", 0) >= 1, p.stats
    # Smaller tasks may take larger ones' places (colgen_substitution.py): the mix below is
    # still placed by the one model, independent of the columns and of those moves.
    assert p.stats.columns["colgen_substitutions"] > 0
    # (that the limit bounds the plan is tested without a wall clock: test_plan_time_limit.py's
    # test_the_deadline_caps_every_cp_sat_solve; a timed assertion failed on a loaded machine)
    best = p.ffd_best()
    assert p.placed == p.pods == len((OPENB / "openb_pod_list_default.csv").read_text().splitlines()[1::100])
    assert 0 <= p.bound <= p.cost <= best.cost
    assert p.proven_minimal == (p.cost <= p.bound)
    # The mix places every pod: the one placement model (independent of the columns) on a cluster
    # of exactly those copies.
    mixed, _, _ = _with_types(objs, [(t, p.mix.get(t.name, 0)) for t in types])
    got = place(mixed, policy="optimal", time_limit=15)
    assert all(pl.placed for pl in got.result.pods)
