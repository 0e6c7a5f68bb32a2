"""`import draopt`: the public API (draopt.public) gives what the module functions and the command
line give on the bundled examples, loads lazily, and names the file/field of bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import draopt
import draopt.public
from draopt.allocation import allocate as api
from draopt.studies import trace
from draopt.errors import InputError
from draopt.allocation.explain import explain_claims
from draopt.kube.features import Features
from draopt.kube.loader import ObjectSet, load_files
from draopt.placement import place
from draopt.studies.report import compare
from draopt.validation import validate_files

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = str(ROOT / "examples" / "cluster.yaml")
GANGS = str(ROOT / "examples" / "gang-stranding.yaml")
MIG = str(ROOT / "examples" / "mig-gangs.yaml")


def test_import_draopt_is_lazy():
    code = (
        "import sys, draopt; assert 'ortools' not in sys.modules and 'draopt.public' not in sys.modules; "
        "import draopt.kube.loader; assert 'ortools' not in sys.modules and 'draopt.placement' not in sys.modules; "
        "print(sorted(draopt.__all__) == sorted(n for n in dir(draopt) if n in draopt.__all__))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "True"


def test_every_function_is_documented():
    assert set(draopt.__all__) == set(draopt.public.__all__) | {"DraoptNote", "DraoptWarning"}
    for name in draopt.public.__all__:
        fn = getattr(draopt, name)
        assert callable(fn)
        doc = getattr(draopt.public, name).__doc__
        assert doc and f"draopt.{name}(" in doc, name  # a short example


def test_load_is_load_files():
    objects = draopt.load(CLUSTER)
    assert isinstance(objects, ObjectSet)
    assert [n.name for n in objects.nodes] == [n.name for n in load_files([CLUSTER]).nodes]
    assert len(draopt.load([CLUSTER, GANGS]).nodes) == len(objects.nodes) + len(load_files([GANGS]).nodes)


def _claims(outcome):
    return [c.to_k8s() for c in outcome.claims]


def test_allocate_from_files_or_objects():
    api.warm_up()
    want = api.allocate(load_files([CLUSTER]), deterministic_share_ids=True)
    assert want.allocated
    for inputs in (CLUSTER, [CLUSTER], draopt.load(CLUSTER)):
        got = draopt.allocate(inputs, deterministic_share_ids=True)
        assert (got.node, _claims(got)) == (want.node, _claims(want))


def test_allocate_as_the_command_line(capsys):
    from draopt.cli import main

    assert main(["allocate", "-f", CLUSTER, "--deterministic-share-ids", "-o", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)["items"]
    assert printed == _claims(draopt.allocate(CLUSTER, deterministic_share_ids=True))


@pytest.mark.parametrize("policy", ["first-fit", "optimal"])
def test_place(policy):
    got = draopt.place(GANGS, policy=policy, time_limit=10)
    want = place(load_files([GANGS]), policy=policy, time_limit=10)
    assert [(p.pod, p.node) for p in got.result.pods] == [(p.pod, p.node) for p in want.result.pods]
    assert got.objects == want.objects
    assert len(got.result.placed_pods()) == (2 if policy == "optimal" else 0)


def test_place_mig_gangs_with_gates_text():
    got = draopt.place(MIG, features="DRAPartitionableDevices=true")
    want = place(load_files([MIG]), features=Features.from_gates({"DRAPartitionableDevices": True}))
    assert [(p.pod, p.node) for p in got.result.pods] == [(p.pod, p.node) for p in want.result.pods]


def test_plan_takes_node_type_text():
    from fractions import Fraction

    from draopt.studies.planning import NodeType, plan

    got = draopt.plan(GANGS, ["node-1=1"], time_limit=10)
    want = plan(load_files([GANGS]), [NodeType("node-1", "node-1", Fraction(1))], time_limit=10)

    def figures(mix):  # phase times differ from run to run
        return {k: v for k, v in mix.to_json().items() if k != "stats"}

    assert figures(got) == figures(want)
    assert got.placed == got.pods


def test_compare():
    got = draopt.compare(GANGS, time_limit=10)
    want = compare(load_files([GANGS]), ["first-fit", "optimal"], time_limit=10)

    def figures(r):  # the solve time differs from run to run
        return {k: v for k, v in r.to_json().items() if not k.endswith("_s")}

    assert [figures(r) for r in got] == [figures(r) for r in want]
    assert [(r.policy, r.placed) for r in got] == [("first-fit", 0), ("optimal", 2)]


def test_validate():
    got = draopt.validate(CLUSTER)
    assert got.to_dict() == validate_files([CLUSTER]).to_dict()
    assert got.findings == [] and got.objects > 0
    with pytest.raises(InputError, match="already parsed"):
        draopt.validate(draopt.load(CLUSTER))


def test_explain():
    api.warm_up()
    got = draopt.explain(CLUSTER, node="gpu-node-1")
    want = explain_claims(load_files([CLUSTER]), None, Features.from_gates(), "gpu-node-1")
    assert [e.to_json() for e in got] == [e.to_json() for e in want]
    assert [e.node for e in got] == ["gpu-node-1"]


def test_api_names_are_functions():
    # the API's names are its functions; the modules behind them live in their layers
    import types
    from draopt.studies import simulate as sim

    for name in ("simulate", "validate", "explain", "place", "allocate"):
        assert isinstance(getattr(draopt, name), types.FunctionType), name
    assert draopt.simulate is not sim and sim.build


NODES = "sn,cpu_milli,memory_mib,gpu,model\nn-0,16000,65536,2,T4\nn-1,64000,262144,8,G2\n"
TASKS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\nt-00,4000,8192,1,1000,\n"
    "t-01,2000,4096,1,300,\nt-02,2000,4096,1,700,\nt-03,8000,16384,2,1000,\n"
)


def test_simulate_as_the_module(tmp_path):
    from draopt.studies import simulate as sim

    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "tasks.csv").write_text(TASKS)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(trace.dump_yaml(trace.import_trace(str(tmp_path / "nodes.csv"), None)))
    tasks = str(tmp_path / "tasks.csv")
    got = draopt.simulate(str(cluster), tasks, levels="0.5,1.0", policies="first-node,fgd", runs=2, seed=3)
    objects = load_files([str(cluster)])
    objects.extend(sim._object_set(trace.workload_objects(trace.read_tasks(tasks, what="--trace")), tasks))
    c = sim.build(objects)
    want = [
        r.to_dict()
        for r in sim.aggregate(
            sim.simulate(c, levels=[0.5, 1.0], policies=["first-node", "fgd"], runs=2, seed=3),
            ["first-node", "fgd", sim.OFFLINE],
        )
    ]
    # SimRow records (the dicts they were: to_dict, row["column"]; a DataFrame: to_frame)
    assert isinstance(got, sim.SimRows) and [r.to_dict() for r in got] == want and len(got) == 4
    assert got[0]["policy"] == got[0].policy
    objects_without_trace = load_files([str(cluster)])
    assert [
        r.to_dict()
        for r in draopt.simulate(
            objects_without_trace,
            tasks,
            levels=[0.5, 1.0],
            policies=["first-node", "fgd"],
            runs=2,
            seed=3,
        )
    ] == want
    assert objects_without_trace.pods == []
    from draopt.studies import paper_protocol

    paper = draopt.simulate(str(cluster), tasks, levels=[0.3, 0.5], policies=["fgd"], runs=2, protocol="fgd-paper")
    assert [r.to_dict() for r in paper] == [
        r.to_dict()
        for r in paper_protocol.simulate_paper(
            c, seeds=[0, 1], policies=[paper_protocol.make_policy("fgd")], bins=[30, 50]
        )[0]
    ]
    assert paper and {r["policy"] for r in paper} == {"fgd"}
    with pytest.raises(InputError, match="--policy"):
        draopt.simulate(str(cluster), tasks, levels=[0.5], policies="nope")


def test_bad_input_names_the_file_and_field(tmp_path):
    with pytest.raises(InputError, match="nope.yaml: no such file"):
        draopt.place(str(tmp_path / "nope.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: [1]}}\n")
    with pytest.raises(InputError, match=r"bad.yaml.*Node n.*allocatable"):
        draopt.load(str(bad))
    with pytest.raises(InputError, match="expected file paths"):
        draopt.load([CLUSTER, 3])
    with pytest.raises(InputError, match="--policy"):
        draopt.place(GANGS, policy="best")
    with pytest.raises(InputError, match="node_types"):
        draopt.plan(GANGS, [3])
