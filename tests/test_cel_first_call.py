"""What a first compile and a first device conversion skip or share (issue 30 item 7, the cold
call): the cost instrumentation of a source without a comprehension, the literal check of a
source without a comma, a version attribute's parse per text."""

from __future__ import annotations

import pytest

from draopt.cel import CelCompileError, CelEnvironment, CelRuntimeError, core, make_cel_device

LONG = "a" * 1000


@pytest.fixture()
def env():
    return CelEnvironment()


def _device(version: str = "1.2.3"):
    return make_cel_device("gpu.example.com", {"name": "g", "attributes": {"v": {"version": version}}})


def test_a_source_without_a_comprehension_is_not_instrumented_when_compiled(env, monkeypatch):
    calls = []
    real = core._instrument
    monkeypatch.setattr(core, "_instrument", lambda src, *a, **k: calls.append(src) or real(src, *a, **k))
    compiled = env.compile(f'device.driver == "gpu.example.com" && "{LONG}".contains("zz")')
    assert calls == []
    assert compiled.matches(_device()) is False
    # its cost is worked out when asked: cel-go's count (ceil(1000 * 0.1) for contains, 1 per operator and select)
    assert compiled.cost(_device()) == env.compile(f'"{LONG}".contains("zz")', selector=False).cost(_device()) + 3
    assert compiled.estimated_cost() == compiled.cost(_device())
    assert len(calls) == 2


def test_a_source_naming_a_comprehension_macro_is_instrumented(env, monkeypatch):
    calls = []
    real = core._instrument
    monkeypatch.setattr(core, "_instrument", lambda src, *a, **k: calls.append(src) or real(src, *a, **k))
    env.compile("[1, 2, 3].all(x, x > 0)")
    assert calls
    assert env.compile("[1, 2, 3, 4, 5].map(x, x).exists(x, x == 5) == true", selector=False).cost(_device()) == 118


@pytest.mark.parametrize("expression", ['[1, "a"].size() == 2', '{"a": 1, "b": "x"}.size() == 2'])
def test_mixed_literals_are_still_refused(env, expression):
    with pytest.raises(CelCompileError, match="expected type"):
        env.compile(expression)


def test_a_version_attribute_is_parsed_once_per_text_and_a_bad_one_fails_every_device(env):
    a, b = _device("1.2.3"), _device("1.2.3")
    check = env.compile('device.attributes["gpu.example.com"].v.isGreaterThan(semver("1.0.0"))')
    assert check.matches(a) and check.matches(b)
    assert not env.compile('device.attributes["gpu.example.com"].v == semver("1.2.4")').matches(b)
    for _ in range(2):
        with pytest.raises(CelRuntimeError, match="semantic version"):
            check.matches(_device("1.2"))


def test_a_driver_comparison_is_compiled_when_first_evaluated(env, monkeypatch):
    compiled = []
    real = env._compile_now
    monkeypatch.setattr(env, "_compile_now", lambda src, selector: compiled.append(src) or real(src, selector))
    for expression, on_gpu in [
        ('device.driver == "gpu.example.com"', True),
        ("'nic.example.com' != device.driver", True),
        ('device.driver=="nic.example.com"', False),
    ]:
        c = env.compile(expression)
        assert (c.output_type, c.estimated_cost()) == ("BOOL", 3)
        assert compiled == []
        assert c.matches(_device()) is on_gpu
        assert compiled == [expression]
        compiled.clear()
    # a device whose CEL input has an error: the error, as the compiled program gives it
    with pytest.raises(CelRuntimeError, match="semantic version"):
        env.compile('device.driver == "other.example.com"').matches(_device("1.2"))
    # what CEL refuses is refused when compiled: a carriage return in the literal
    with pytest.raises(CelCompileError):
        env.compile('device.driver == "a\rb"')


def test_prime_parses_the_lexer_primer_whole_and_caches_nothing(env):
    env.prime()
    assert env._cache == {}
    with pytest.raises(RuntimeError) as refused:
        env._env.compile(core._LEXER_PRIMER)
    # refused by the type checker, so parsed to its end (a syntax error would stop the lexer early)
    assert "no matching overload" in str(refused.value)
    assert "Syntax error" not in str(refused.value) and "recursion" not in str(refused.value)
