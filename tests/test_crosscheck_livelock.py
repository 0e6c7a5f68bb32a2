"""crosscheck says when kube-scheduler's run was stopped as a livelock: the placements made while the
pods cycled can vary between runs of kube-scheduler itself (1.36's gang plugin with a gang that cannot
fit, draopt/crosscheck/oracles/scheduler/README.md), so the comparison must not look conclusive.
Needs no Go: the oracle's answer is replaced by one of its shape."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from draopt.crosscheck import run as crosscheck_run
from draopt.kube.features import Features
from draopt.kube.loader import load_files

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "cluster.yaml"


def _oracle_answer(livelock: str) -> Any:
    """An answer in the oracle's JSON protocol: every pod where the input put it, nothing else."""

    def answer(objects: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        pods = [
            {
                "namespace": d["metadata"].get("namespace", "default"),
                "name": d["metadata"]["name"],
                "node": d["spec"].get("nodeName", ""),
                "message": "",
                "reason": "",
            }
            for d in objects
            if d["kind"] == "Pod"
        ]
        return {"version": "v1.36.3", "pods": pods, "livelock": livelock}

    return answer


@pytest.mark.parametrize("livelock", ["", "stopped after 44 scheduling cycles without a bind or eviction"])
def test_a_livelocked_oracle_run_is_named_in_the_notes(monkeypatch, livelock: str) -> None:
    import draopt.crosscheck.scheduler_oracle as oracle_module

    monkeypatch.setattr(oracle_module, "run_scheduler_oracle", _oracle_answer(livelock))
    report = crosscheck_run.crosscheck(
        load_files([str(EXAMPLE)]), kubernetes_version="1.36", features=Features.from_gates()
    )
    named = [n for n in report.notes if "kept retrying pods without progress" in n]
    assert len(named) == (1 if livelock else 0)
    if livelock:
        assert livelock in named[0]
