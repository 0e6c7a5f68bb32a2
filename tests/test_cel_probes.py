"""Three CEL behaviours as Kubernetes' allocator answers them (issue 19, item 5).

* ``format()`` with a list of mixed-type arguments: Kubernetes' base environment
  (apiserver/pkg/cel/environment/base.go) pins ``ext.Strings(ext.StringsVersion(2))``, whose
  formatter is cel-go's ext/formatting.go (stringFormatter, parseFormatString); its validator
  exempts every literal inside ``format()`` from cel.HomogeneousAggregateLiterals
  (ext/formatting.go stringFormatValidator.Configure, cel/validator.go inExemptFunction).
* A repeated key in a map literal: cel-go's interpreter/interpretable.go (evalMap.Eval,
  ``entries[keyVal] = valVal``) keeps the last entry, with no error.
* The runtime cost of nested comprehensions over long strings: interpreter/runtimecost.go
  charges ``contains`` ceil(len(s) * 0.1) * ceil(len(sub) * 0.1), and every iteration of
  ``all`` its loop condition and step; past resourceapi.CELSelectorExpressionMaxCost
  (1,000,000; dynamic-resource-allocation/cel/compile.go passes it as cel.CostLimit) the
  evaluation stops with "operation cancelled: actual cost limit exceeded".
"""

from __future__ import annotations

import json

import pytest

from draopt.allocation import allocate as api
from draopt.cel import CelCompileError, CelEnvironment, CelRuntimeError, make_cel_device
from draopt.errors import AllocationError
from draopt.kube.loader import load_text

DRIVER = "gpu.example.com"
LONG = "a" * 1000


@pytest.fixture(scope="module")
def env():
    return CelEnvironment()


@pytest.fixture(scope="module")
def dev():
    return make_cel_device(DRIVER, {"name": "gpu-0", "attributes": {"model": {"string": "a100"}, "index": {"int": 0}}})


def evaluate(env, dev, expression):
    return env.compile(expression, selector=False).evaluate(dev)


# ----------------------------------------------------------------------------- format()
@pytest.mark.parametrize(
    "expression, want",
    [
        # cel-go ext/formatting_test.go: "list element: %s".format([[[1, 2, [3.0, 4]]][0]])
        ('"list element: %s".format([[[1, 2, [3.0, 4]]][0]])', "list element: [1, 2, [3.000000, 4]]"),
        ('"%s-%d".format(["a", 1])', "a-1"),
        ('"%s %s %s".format([1, "x", 2.5])', "1 x 2.5"),
        ('"%s".format([[1, "x", 2.5, true, null, b"a"]])', '[1, "x", 2.500000, true, null, b"a"]'),
        ('"%s".format([{"b": 1, "a": 2.0}])', '{"a":2.000000, "b":1}'),
        (
            '"%s".format([[duration("90s"), timestamp("2023-02-03T23:31:20Z")]])',
            '[duration("90s"), timestamp("2023-02-03T23:31:20Z")]',
        ),
        ('"%s %s %s".format([1e6, 123456.0, 0.000000002])', "1e+06 123456 2e-09"),  # Go's %g
        ('"%x %X %o %b".format([255, "hi", 8, true])', "ff 6869 10 1"),
        # x/text en_US printer: "2.718280 × 10⁰⁰" with narrow no-break spaces (formatting_test.go)
        ('"%e".format([2.71828])', "2.718280\u202f\u00d7\u202f10\u2070\u2070"),
        ('"%f %f".format(["Infinity", 2.5])', "\u221e 2.500000"),
        (
            '"%s-%d".format([device.attributes["gpu.example.com"].model, device.attributes["gpu.example.com"].index])',
            "a100-0",
        ),
    ],
)
def test_format_with_mixed_type_arguments(env, dev, expression, want):
    assert evaluate(env, dev, expression) == want


def test_format_checks_at_compile_time_and_at_runtime(env, dev):
    # a literal format string with a literal list: cel-go's validator (compile errors)
    for expression, message in [
        (
            '"%d".format([2.5])',
            "error during formatting: decimal clause can only be used on integers, was given double",
        ),
        ('"%s".format([1, "x"])', "too many arguments supplied to string.format (expected 1, got 2)"),
        ('"%a".format([1])', 'could not parse formatting clause: unrecognized formatting clause "a"'),
        ('"filler %".format([])', "unexpected end of string"),
    ]:
        with pytest.raises(CelCompileError) as e:
            env.compile(expression, selector=False)
        assert message in str(e.value), expression
    # a value known only at runtime: the same message at runtime
    with pytest.raises(CelRuntimeError) as e:
        evaluate(env, dev, '"%d".format([device.attributes["gpu.example.com"].model])')
    assert str(e.value) == "error during formatting: decimal clause can only be used on integers, was given string"
    # outside format() a mixed list literal stays a compile error (cel.HomogeneousAggregateLiterals)
    with pytest.raises(CelCompileError, match="expected type 'int' but found 'string'"):
        env.compile('[1, "a"].size() == 2')


# ----------------------------------------------------------------------------- map literals
@pytest.mark.parametrize(
    "expression, want",
    [
        ('{"a": 1, "a": 2}["a"]', 2),
        ('size({"a": 1, "a": 2})', 1),
        ('{"a": 1, "b": 2, "a": 3}', {"a": 3, "b": 2}),
        ('{"a": {"x": 1, "x": 2}, "b": {"y": 0}}["a"]["x"]', 2),
        # keys known only at runtime collide too: the last entry wins
        ('{device.attributes["gpu.example.com"].model: 1, "a100": 2}["a100"]', 2),
        ('[1, 1].all(k, {k: 1, 1: 2}[1] == 2)', True),
    ],
)
def test_repeated_map_keys_last_entry_wins(env, dev, expression, want):
    assert evaluate(env, dev, expression) == want


def test_repeated_map_keys_keep_the_literal_checks(env):
    # cel.HomogeneousAggregateLiterals still sees the literal as written
    for expression, message in [
        ('{"a": 1, "a": "x"}', "expected type 'int' but found 'string'"),
        ('{1: "x", 1u: "y"}', "expected type 'int' but found 'uint'"),
    ]:
        with pytest.raises(CelCompileError, match=message):
            env.compile(expression, selector=False)


# ----------------------------------------------------------------------------- runtime cost
def test_nested_comprehensions_over_a_long_string_stop_at_the_cost_limit(env, dev):
    # per inner iteration: loop condition and step 3 + contains ceil(1000 * 0.1) * ceil(2 * 0.1)
    # 100 + == 1: past 1,000,000 after about 9,600 of the 90,000 inner iterations
    nested = f'lists.range(300).all(i, lists.range(300).all(j, "{LONG}".contains("zz") == false))'
    with pytest.raises(CelRuntimeError) as e:
        env.compile(nested).matches(dev)
    assert str(e.value) == "operation cancelled: actual cost limit exceeded"
    bound = f'cel.bind(s, "{LONG}", lists.range(300).all(i, lists.range(300).all(j, !s.contains("zz"))))'
    with pytest.raises(CelRuntimeError, match="actual cost limit exceeded"):
        env.compile(bound).matches(dev)
    # the same loops over a short string cost about 5 per inner iteration: they run to the end
    assert env.compile('lists.range(30).all(i, lists.range(30).all(j, "abc".contains("zz") == false))').matches(dev)


def test_strings_known_only_at_runtime_are_charged_by_their_size(env, dev):
    # a string built by the expression (5,000 characters), and one reached as an iteration
    # variable: each contains() costs ceil(5000 * 0.1) * 1 = 500 per inner iteration
    built = (
        'cel.bind(s, lists.range(500).map(i, "aaaaaaaaaa").join(""), '
        'lists.range(100).all(i, lists.range(100).all(j, !s.contains("zz"))))'
    )
    each = f'["{"a" * 5000}"].all(s, lists.range(100).all(i, lists.range(100).all(j, !s.contains("zz"))))'
    for expression in (built, each):
        with pytest.raises(CelRuntimeError, match="actual cost limit exceeded"):
            env.compile(expression).matches(dev)
    # short strings: far under the limit
    assert env.compile('lists.range(30).all(i, ["abc", "def"].all(s, !s.contains("zz")))').matches(dev)


@pytest.mark.parametrize(
    "expression, want",
    [
        # cel-go interpreter/runtimecost_test.go
        ("[1,2,3,4,5].filter(x, x % 2 == 0)", 62),
        ("[1,2,3,4,5].map(x, x)", 86),
        ("[1,2,3,4,5].map(x, x).map(x, x)", 162),
        ("[1,2,3,4,5].map(x, x).exists(x, x == 5) == true", 118),
        ("[1,2,3,4,5].map(x, [x, x]).filter(z, z.size() == 2)", 232),
        ("[1,2,3,4,5].map(x, x).map(x, x) + [1]", 173),
        (f'"{LONG}".contains("zz")', 100),
        (f'"{LONG}".startsWith("a")', 100),
    ],
)
def test_runtime_costs_as_cel_go_counts_them(env, dev, expression, want):
    assert env.compile(expression, selector=False).cost(dev) == want


# ----------------------------------------------------------------------------- the allocator
def objects(selector: str):
    return load_text(_objects_text(selector), "probe.yaml")


def _objects_text(selector: str) -> str:
    return f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu}}
spec:
  selectors: [{{cel: {{expression: 'device.driver == "{DRIVER}"'}}}}]
---
apiVersion: v1
kind: Node
metadata: {{name: node-1}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: node-1-gpus}}
spec:
  driver: {DRIVER}
  nodeName: node-1
  pool: {{name: node-1, generation: 1, resourceSliceCount: 1}}
  devices:
  - {{name: gpu-0, attributes: {{model: {{string: a100}}, index: {{int: 0}}}}}}
  - {{name: gpu-1, attributes: {{model: {{string: a100}}, index: {{int: 1}}}}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: c, namespace: default}}
spec:
  devices:
    requests:
    - name: r
      exactly:
        deviceClassName: gpu
        selectors: [{{cel: {{expression: {json.dumps(selector)}}}}}]
"""


@pytest.mark.parametrize(
    "selector, device",
    [
        (
            '"%s-%d".format([device.attributes["gpu.example.com"].model, device.attributes["gpu.example.com"].index])'
            ' == "a100-1"',
            "gpu-1",
        ),
        ('{"gpu": 0, "gpu": device.attributes["gpu.example.com"].index}["gpu"] == 1', "gpu-1"),
    ],
)
def test_the_allocator_selects_as_kubernetes(selector, device):
    out = api.allocate(objects(selector), node="node-1")
    assert out.allocated and [r.device for r in out.results[0].devices.results] == [device]


def test_the_allocator_stops_at_the_cost_limit():
    selector = f'lists.range(300).all(i, lists.range(300).all(j, "{LONG}".contains("zz") == false))'
    with pytest.raises(AllocationError) as e:
        api.allocate(objects(selector), node="node-1")
    # structured/allocator.go: "claim %s: selector #%d: CEL runtime error: %w"
    assert "claim default/c: selector #0" in str(e.value)
    assert "CEL runtime error: operation cancelled: actual cost limit exceeded" in str(e.value)
    assert e.value.stats["allocate_ms"] > 0  # errors are timed like allocations (--stats)


def test_cli_stats_time_the_error_path(tmp_path, capsys):
    """`draopt allocate --stats` on an allocation error prints the fields of a success
    (allocate_ms, build_ms, solve_ms, ...) with the error's name."""
    from draopt import cli

    f = tmp_path / "probe.yaml"
    selector = f'lists.range(300).all(i, lists.range(300).all(j, "{LONG}".contains("zz") == false))'
    f.write_text(_objects_text(selector))
    assert cli.main(["allocate", "-f", str(f), "--node", "node-1", "--stats"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "actual cost limit exceeded" in err[0]
    stats = json.loads(err[-1])
    assert stats["error"] == "DeviceCelError"
    assert {"load_ms", "allocate_ms", "build_ms", "solve_ms", "total_ms"} <= set(stats)
    assert 0 < stats["allocate_ms"] <= stats["total_ms"]
