"""The public conformance scenarios (copied from shared/conformance), run through the CLI
contract exactly as shared/conformance/run.py runs them."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "conformance"
CASES = sorted((HERE / "cases").glob("*.yaml"))

_spec = importlib.util.spec_from_file_location("conformance_run", HERE / "run.py")
runner = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runner)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_scenario(path):
    _, err = runner.run_case(str(path), [sys.executable, "-m", "draopt.cli"], 60)
    assert err is None, err
