"""Conformance scenarios run through the CLI contract exactly as shared/conformance/run.py
runs them: the public sample (tests/conformance/cases, copied from shared/conformance) in
real subprocesses, and further cases transcribed from Kubernetes' allocator test table
(tests/conformance/extra*) in-process, through the same runner, for speed."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "conformance"
CASES = sorted((HERE / "cases").glob("*.yaml"))
EXTRA = sorted(p for d in sorted(HERE.glob("extra*")) for p in d.glob("*.yaml"))

_spec = importlib.util.spec_from_file_location("conformance_run", HERE / "run.py")
runner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runner)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_scenario(path):
    _, err = runner.run_case(str(path), [sys.executable, "-m", "draopt.cli"], 60)
    assert err is None, err


def _in_process(cmd, capture_output=True, text=True, timeout=None):
    """subprocess.run stand-in: `draopt ...` run through draopt.cli.main in this process."""
    from draopt.cli import main

    argv = cmd[cmd.index("allocate") :]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse
            code = e.code
    return subprocess.CompletedProcess(cmd, code, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("path", EXTRA, ids=[p.stem for p in EXTRA])
def test_transcribed_scenario(path, monkeypatch):
    monkeypatch.setattr(runner.subprocess, "run", _in_process)
    _, err = runner.run_case(str(path), ["draopt"], 60)
    assert err is None, err
