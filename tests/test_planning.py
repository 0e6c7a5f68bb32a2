"""Capacity planning: nodes needed for the pending pods, and what-if sweeps."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from draopt.errors import InputError
from draopt.loader import load_files
from draopt.planning import nodes_needed, sweep, with_copies

ROOT = Path(__file__).resolve().parents[1]
GANG = ROOT / "examples" / "gang-stranding.yaml"


def test_copies_get_their_own_node_and_pool():
    objs = with_copies(load_files([str(GANG)]), "node-1", 2)
    assert [n.name for n in objs.nodes] == ["node-1", "node-1-plan-0", "node-1-plan-1"]
    copies = [s for s in objs.resource_slices if s.spec.node_name == "node-1-plan-1"]
    assert {s.spec.pool.name for s in copies} == {"node-1-gpu-0-plan-1"}
    assert len(copies) == 2   # the counter slice and the device slice


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


def test_cli_plan():
    p = subprocess.run([sys.executable, "-m", "draopt", "plan", "-f", str(GANG), "--node-template", "node-1",
                        "-o", "json"], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["extra_nodes"] == 1


def test_sweep_on_dask_or_a_clear_message():
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        with pytest.raises(InputError, match=r"pip install 'draopt\[sweep\]'"):
            sweep([1], abs, engine="dask")
    else:
        assert sweep([-1, -2], abs, engine="dask") == [1, 2]
