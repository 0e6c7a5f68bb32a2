"""`draopt simulate --policy kube-scheduler`: a profile's node choice on the simulator's arrays."""

from __future__ import annotations

import pytest

from draopt.studies import simulate as sim
from draopt.studies import trace
from draopt.cli import main
from draopt.errors import InputError
from draopt.scheduler import builtin, parse_config
from draopt.scheduler.trace import TraceScheduler
from tests.test_simulate import NODES, TASKS, shape_of, small, write


@pytest.fixture
def files(tmp_path):
    """test_simulate's small trace: the cluster as YAML and the task CSV."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(trace.dump_yaml(trace.import_trace(write(tmp_path, "nodes.csv", NODES), None)))
    return str(cluster), write(tmp_path, "tasks.csv", TASKS)


TWO = "sn,cpu_milli,memory_mib,gpu,model\na,8000,8192,2,T4\nb,8000,8192,2,T4\n"
W = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nw,1000,1024,1,1000\n"


def second_choice(c, cfg, tie_break="name"):
    c.kube_scheduler = TraceScheduler(c, cfg, tie_break=tie_break)
    w = shape_of(c, "w")
    st = sim.State(c)
    got = []
    for _ in range(2):
        node, devs = sim.place_one(st, w, "kube-scheduler", None)
        st.take(w, node, devs)
        got.append(c.nodes[node])
    return got


def test_default_profile_spreads_most_allocated_packs(tmp_path):
    c = small(tmp_path, TWO, W)
    assert second_choice(c, builtin("default")) == ["a", "b"]
    assert second_choice(c, builtin("most-allocated")) == ["a", "a"]
    rtcr = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {
                                "scoringStrategy": {
                                    "type": "RequestedToCapacityRatio",
                                    "requestedToCapacityRatio": {
                                        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                                    },
                                }
                            },
                        }
                    ]
                }
            ],
        },
        "<t>",
    )
    assert second_choice(c, rtcr) == ["a", "a"]


def test_random_ties_are_seeded(tmp_path):
    nodes = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(f"n{i},8000,8192,2,T4\n" for i in range(8))
    c = small(tmp_path, nodes, W)
    w = shape_of(c, "w")

    def run(seed):
        c.kube_scheduler = TraceScheduler(c, builtin("default"), seed=seed)
        st = sim.State(c)
        out = []
        for _ in range(4):
            node, devs = sim.place_one(st, w, "kube-scheduler", None)
            st.take(w, node, devs)
            out.append(node)
        return out

    assert run(0) == run(0)
    assert len({tuple(run(s)) for s in range(5)}) > 1


def test_unsupported_profile_features_are_refused(tmp_path):
    c = small(tmp_path, TWO, W)
    two = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "x"}, {"schedulerName": "y"}],
        },
        "two.yaml",
    )
    with pytest.raises(InputError, match="simulate uses one profile"):
        TraceScheduler(c, two)


def test_cli(files, capsys):
    cluster, tasks_csv = files
    args = [
        "simulate",
        "-f",
        cluster,
        "--trace",
        tasks_csv,
        "--inflation",
        "0.8",
        "--runs",
        "1",
        "--quiet",
        "--policy",
        "first-node,kube-scheduler",
        "--scheduler-config",
        "builtin:most-allocated",
        "-o",
        "csv",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert [ln.split(",")[1] for ln in out.strip().splitlines()[1:]] == ["first-node", "kube-scheduler"]
    assert main(args) == 0 and capsys.readouterr().out == out  # deterministic (seeded ties)
    assert main(args[:-6] + ["--policy", "first-node", "--scheduler-config", "builtin:default"]) == 2
    assert "used by the kube-scheduler policy" in capsys.readouterr().err


@pytest.mark.parametrize("cfg", ["builtin:default", "builtin:most-allocated"])
def test_simulate_matches_place_with_the_same_profile(files, cfg):
    """Arrivals placed one by one by the simulator's kube-scheduler policy land on the nodes
    `draopt place` chooses with the same profile (ties by name on both sides)."""
    import numpy as np

    from draopt.placement import place
    from draopt.scheduler import load_config
    from tests.test_simulate import objects_with

    cluster, tasks_csv = files
    pool = trace.read_tasks(tasks_csv)
    rng = np.random.default_rng(7)
    arrived = [
        trace.Task(f"a-{k:03d}", t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli, t.gpu_spec, k)
        for k, t in enumerate(pool[i] for i in rng.integers(0, len(pool), size=40))
    ]
    objects = objects_with(cluster, arrived)
    c = sim.build(objects)
    c.kube_scheduler = TraceScheduler(c, load_config(cfg), tie_break="name")
    st = sim.State(c)
    ours = {}
    for key, si in zip(c.pod_keys, c.pod_shape):
        got = sim.place_one(st, c.shapes[si], "kube-scheduler", None)
        if got is not None:
            st.take(c.shapes[si], *got)
        ours[key] = c.nodes[got[0]] if got else None
    outcome = place(objects, scheduler_config=cfg, tie_break="name")
    theirs = {pl.pod: pl.node for pl in outcome.result.pods}
    assert ours == theirs
    assert sum(v is not None for v in ours.values()) > 10
