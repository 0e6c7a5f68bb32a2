"""Kubernetes' verdicts on CEL expressions (tests/cel_cases.yaml), each taken from
the Kubernetes or cel-go sources it cites: a value, a compile error or a runtime error."""

import math
from pathlib import Path

import pytest
import yaml

from draopt.cel import CelCompileError, CelEnvironment, CelRuntimeError, make_cel_device

CASES = yaml.safe_load((Path(__file__).parent / "cel_cases.yaml").read_text(encoding="utf-8"))
DRIVER = "dra.example.com"


@pytest.fixture(scope="module")
def env():
    return CelEnvironment(list_type_attributes=True)


def test_table_is_large_and_cited():
    assert len(CASES) >= 150
    for case in CASES:
        assert case.get("source"), case
        assert sum(k in case for k in ("value", "compile_error", "runtime_error")) == 1, case
    kinds = {k for case in CASES for k in ("value", "compile_error", "runtime_error") if k in case}
    assert kinds == {"value", "compile_error", "runtime_error"}


def _same(got, want):
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, float):
        return isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-9)
    return got == want


@pytest.mark.parametrize("case", CASES, ids=[f"{i}:{c['expr'][:60]}" for i, c in enumerate(CASES)])
def test_kubernetes_verdict(env, case):
    device = make_cel_device(DRIVER, dict({"name": "dev"}, **(case.get("device") or {})), list_type_attributes=True)
    selector = bool(case.get("selector"))
    if "compile_error" in case:
        with pytest.raises(CelCompileError) as ei:
            env.compile(case["expr"], selector=selector)
        assert case["compile_error"] in str(ei.value)
        return
    compiled = env.compile(case["expr"], selector=selector)
    if "runtime_error" in case:
        with pytest.raises(CelRuntimeError) as ei:
            compiled.matches(device) if selector else compiled.evaluate(device)
        assert case["runtime_error"] in str(ei.value)
        return
    got = compiled.evaluate(device)
    assert _same(got, case["value"]), f"{case['expr']}: got {got!r}, Kubernetes: {case['value']!r} ({case['source']})"
