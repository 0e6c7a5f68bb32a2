"""The selector shortcut (draopt.cel.simple, with converts_cleanly of draopt.cel.device, used
by draopt.dra.problem and draopt.cel.core): it recognises only its shape, every source of that
shape compiles in Kubernetes' environment, and the answer it gives is the CEL evaluation's; it
steps aside (None) wherever the evaluation could fail or needs CEL's rules.

Shapes drawn: the selectors of the drivers' DeviceClasses and claims in ../shared/realworld/
(`device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'`,
NVIDIA's k8s-dra-driver classes; `device.driver == "dra.net"`; `device.allowMultipleAllocations
== true`, the DRA consumable-capacity demo) and the allocator generator's."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draopt.cel import CelEnvironment, CelRuntimeError, make_cel_device
from draopt.cel.device import converts_cleanly
from draopt.cel.simple import simple_selector
from draopt.dra.device_views import cel_input
from draopt.kube.models import Device
from draopt.kube.models.resource import DeviceAttribute

ENV = CelEnvironment()
LIST_ENV = CelEnvironment(list_type_attributes=True)


def driver_test(expression: str):
    """(driver, equal) of a selector that is one driver comparison, else None."""
    got = simple_selector(expression)
    if got is None or len(got.terms) != 1 or not got.driver_only:
        return None
    return got.terms[0].literal, got.terms[0].equal


@pytest.mark.parametrize(
    "expression, expected",
    [
        ('device.driver == "gpu.example.com"', ("gpu.example.com", True)),
        ("device.driver=='gpu.example.com'", ("gpu.example.com", True)),
        (' "gpu.example.com" != device.driver ', ("gpu.example.com", False)),
        ('device.driver == "a" || true', None),
        ('device.driver == "a\\u0062"', None),  # escapes: left to CEL
        ('device.drivers == "a"', None),
        ('device.driver == "a"\r', None),
        ('device.driver == "a"\u00a0', None),  # (not CEL's white space)
    ],
)
def test_driver_comparisons(expression, expected):
    assert driver_test(expression) == expected


@pytest.mark.parametrize(
    "expression",
    [
        'device.driver == 1',  # a compile error in Kubernetes: CEL's to report
        'device.allowMultipleAllocations == "true"',
        'device.attributes["d"].in == 1',  # a reserved word
        'device.attributes["d"].x == 1.5',
        'device.attributes["d"].x == 1u',
        'device.attributes["d"].x == 12345678901234567890',  # past int64: a compile error
        'device.attributes["d"].x == b"a"',
        'device.attributes["d"] .x == 1',
        'device.attributes["a/b"].x == 1',  # the CEL input splits a name at its first "/"
        '"x/y" in device.attributes["d"]',
        'device.attributes[""].x == 1',
        'device.attributes["d"].x == 1 // a comment',
        'device.attributes["d"].x == 1 &&',
        '(device.attributes["d"].x == 1)',
        '!(device.attributes["d"].x == 1)',
        'device.attributes["d"].x == 1 || device.driver == "a"',
        '"x" in device.capacity["d"]',
        'device.attributes["d"].x == "a" ? true : false',
        '',
    ],
)
def test_other_shapes_are_left_to_cel(expression):
    assert simple_selector(expression) is None


DEVICES = [
    {"name": "d0", "attributes": {"model": {"string": "a100"}, "index": {"int": 3}, "ok": {"bool": True}}},
    {"name": "d1", "attributes": {"v": {"version": "1.2.3"}}, "capacity": {"memory": {"value": "1Gi"}}},
    {"name": "d2", "attributes": {"v": {"version": "not-a-version"}}},
    {"name": "d3", "attributes": {"list": {"ints": [1, 2]}}},
    {"name": "d4", "attributes": {"empty": {}}},
    {"name": "d5", "attributes": {"two": {"string": "a", "int": 1}}},
    {"name": "d6", "attributes": {"vs": {"versions": ["1.0.0", "2.1.0"]}, "bs": {"bools": [True]}}},
    {"name": "d7", "attributes": {"vs": {"versions": ["1.0.0", "nope"]}}},
    {"name": "d8", "attributes": {"ss": {"strings": ["a", "b"]}, "is": {"ints": []}}},
]


@pytest.mark.parametrize("raw", DEVICES, ids=lambda d: d["name"])
@pytest.mark.parametrize("list_types", [False, True])
@pytest.mark.parametrize("driver", ["gpu.example.com", "other.example.com"])
def test_shortcut_agrees_with_cel(raw, list_types, driver):
    device = Device.model_validate(raw)
    cel = make_cel_device(driver, cel_input(device), list_type_attributes=list_types)
    clean = converts_cleanly(device, list_types)
    if clean:
        assert cel.error is None  # never claims clean where the evaluation would fail
    for expression in ('device.driver == "gpu.example.com"', 'device.driver != "gpu.example.com"'):
        test = simple_selector(expression)
        assert test is not None
        try:
            want = ENV.compile(expression).matches(cel)
        except CelRuntimeError:
            assert not clean
            continue
        if clean:
            assert test.answer(driver, device, list_types) is want


@pytest.mark.parametrize("name", ["d3", "d6", "d8"])
def test_list_attributes_that_convert_are_clean_with_list_types_on(name):
    """With DRAListTypeAttributes on, list values are in the CEL input: well-formed ones convert
    (the driver shortcut applies), a version that does not parse does not (d7)."""
    device = Device.model_validate(next(d for d in DEVICES if d["name"] == name))
    assert converts_cleanly(device, True)
    assert make_cel_device("gpu.example.com", cel_input(device), list_type_attributes=True).error is None
    bad = Device.model_validate(next(d for d in DEVICES if d["name"] == "d7"))
    assert not converts_cleanly(bad, True) and converts_cleanly(bad, False)
    # a value the model did not validate (built without validation): unsure, not clean
    odd = Device.model_validate({"name": "d9", "attributes": {"is": {"ints": [1]}}})
    odd.attributes["is"] = DeviceAttribute.model_construct(_fields_set={"ints"}, ints=["x"])
    assert not converts_cleanly(odd, True)


# ------------------------------------------------------------- drawn: the shortcut against CEL
DOMAINS = ["gpu.example.com", "nic.example.com", "resource.kubernetes.io"]
QUANTITIES = ["1Gi", "2Gi", "2048Mi", "1.5Gi", "2147483648", "0", "500m", "1e3", "1k"]
VERSIONS = ["1.0.0", "1.1.0", "2.1.0-rc.1", "2.1.0-rc.2", "2.1.0", "1.1.0+build.7", "10.0.0-alpha"]
NAMES = ["model", "numa", "type", "ok", "v", "links"]
_string = st.sampled_from(["a", "b", "a100", "mig", "", "x y", "ü", "1"])
_value = st.one_of(
    st.builds(lambda v: {"string": v}, _string),
    st.builds(lambda v: {"int": v}, st.sampled_from([0, 1, -1, 2, 7, 2**40])),
    st.builds(lambda v: {"bool": v}, st.booleans()),
    st.builds(lambda v: {"version": v}, st.sampled_from(VERSIONS + ["nope"])),
    st.builds(lambda v: {"strings": v}, st.lists(_string, max_size=2)),
    st.builds(lambda v: {"ints": v}, st.lists(st.integers(-2, 2), max_size=2)),
)


@st.composite
def devices(draw):
    """A device of one of the drivers: attributes written with and without their domain (the
    driver's own), of every value type, some of them unparsable."""
    attributes = {}
    for _ in range(draw(st.integers(0, 5))):
        name = draw(st.sampled_from(NAMES))
        if draw(st.booleans()):
            name = draw(st.sampled_from(DOMAINS)) + "/" + name
        attributes[name] = draw(_value)
    if draw(st.booleans()):  # (a version attribute, as the semver comparisons read)
        attributes[draw(st.sampled_from(["v", "gpu.example.com/v", "nic.example.com/v"]))] = {
            "version": draw(st.sampled_from(VERSIONS))
        }
    capacity = {}
    for _ in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(["memory", "cores"]))
        if draw(st.booleans()):
            name = draw(st.sampled_from(DOMAINS)) + "/" + name
        capacity[name] = {"value": draw(st.sampled_from(QUANTITIES))}
    raw = {"name": "d", "attributes": attributes, "capacity": capacity}
    if draw(st.booleans()):
        raw["allowMultipleAllocations"] = draw(st.booleans())
    return raw


def _quoted(draw, text: str) -> str:
    return draw(st.sampled_from(['"{}"', "'{}'"])).format(text)


@st.composite
def literals(draw):
    kind = draw(st.sampled_from(["string", "int", "bool"]))
    if kind == "string":
        return _quoted(draw, draw(_string))
    if kind == "int":
        return str(draw(st.sampled_from([0, 1, -1, 2, 7, 2**40])))
    return draw(st.sampled_from(["true", "false"]))


@st.composite
def terms(draw):
    space = st.sampled_from(["", " ", "  ", "\n", "\t"])
    op = draw(space) + draw(st.sampled_from(["==", "!="])) + draw(space)
    kind = draw(st.sampled_from(["driver", "multiple", "value", "value", "value", "has", "ordered", "ordered"]))
    if kind == "ordered":
        return draw(ordered_terms())
    if kind == "driver":
        field, literal = "device.driver", _quoted(draw, draw(st.sampled_from(DOMAINS)))
    elif kind == "multiple":
        field, literal = "device.allowMultipleAllocations", draw(st.sampled_from(["true", "false"]))
    elif kind == "value":
        field = f"device.attributes[{_quoted(draw, draw(st.sampled_from(DOMAINS)))}].{draw(st.sampled_from(NAMES))}"
        literal = draw(literals())
    else:
        return (
            _quoted(draw, draw(st.sampled_from(NAMES)))
            + draw(space)
            + "in"
            + draw(st.sampled_from([" ", "\n"]))
            + f"device.attributes[{_quoted(draw, draw(st.sampled_from(DOMAINS)))}]"
        )
    return f"{literal}{op}{field}" if draw(st.booleans()) else f"{field}{op}{literal}"


@st.composite
def ordered_terms(draw):
    """A capacity against a quantity, or an attribute against a semver (the DRA documentation's
    `device.capacity['gpu.example.com'].memory.compareTo(quantity('1Ti')) >= 0`)."""
    capacity = draw(st.booleans())
    domain = _quoted(draw, draw(st.sampled_from(DOMAINS)))
    name = draw(st.sampled_from(["memory", "cores"] if capacity else ["v", "v", "model"]))
    literal = draw(st.sampled_from(QUANTITIES if capacity else VERSIONS))
    call = f'{"quantity" if capacity else "semver"}({_quoted(draw, literal)})'
    method = draw(st.sampled_from(["isGreaterThan", "isLessThan", "compareTo"]))
    text = f'device.{"capacity" if capacity else "attributes"}[{domain}].{name}.{method}({call})'
    if method == "compareTo":
        text += draw(st.sampled_from([" >= 0", " < 0", "==1", " != -1", " > -1", " <= 0"]))
    return text


@st.composite
def selectors(draw):
    parts = draw(st.lists(terms(), min_size=1, max_size=3))
    return draw(st.sampled_from(["", " "])) + " && ".join(parts) + draw(st.sampled_from(["", " ", "\n"]))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=devices(), expression=selectors(), driver=st.sampled_from(DOMAINS), list_types=st.booleans())
def test_drawn_selectors_answer_as_cel(raw, expression, driver, list_types):
    parsed = simple_selector(expression)
    assert parsed is not None, expression
    env = LIST_ENV if list_types else ENV
    compiled = env._compile_now(expression, True)  # the full compile: the shape always compiles
    device = Device.model_validate(raw)
    cel = make_cel_device(driver, cel_input(device), list_type_attributes=list_types)
    try:
        want = compiled.matches(cel)
    except CelRuntimeError:
        want = None
    if not converts_cleanly(device, list_types):
        return  # (the caller evaluates with CEL: the device's error comes first)
    got = parsed.answer(driver, device, list_types)
    if got is not None:
        assert got is want, (expression, raw, driver, list_types)
    if parsed.driver_only:
        assert got is not None  # a driver comparison always answers


@pytest.mark.parametrize(
    "expression",
    [
        'device.driver == "gpu.example.com"',
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
        '"model" in device.attributes["gpu.example.com"] && device.attributes["gpu.example.com"].model != "c"',
        'device.attributes["gpu.example.com"].numa == 0',
    ],
)
def test_compiled_later_as_compiled_now(expression):
    """compile() of the shape waits for cel-cpp until CEL is needed; then the expression, its
    costs and its answers are the full compile's."""
    env = CelEnvironment()
    lazy, full = env.compile(expression), env._compile_now(expression, True)
    assert lazy._expr is None  # (nothing compiled yet)
    assert lazy.output_type.upper() == full.output_type.upper() == "BOOL"
    assert lazy.estimated_cost() == full.estimated_cost()
    device = make_cel_device(
        "gpu.example.com", {"name": "d", "attributes": {"model": {"string": "a"}, "numa": {"int": 0}}}
    )
    assert lazy.cost(device) == full.cost(device)
    assert lazy.matches(device) == full.matches(device)
    other = make_cel_device("gpu.example.com", {"name": "e", "attributes": {}})
    for compiled in (lazy, full):
        try:
            compiled.matches(other)
        except CelRuntimeError as e:
            assert "no such key" in str(e)


def test_a_missing_or_other_typed_attribute_is_left_to_cel():
    device = Device.model_validate(
        {"name": "d", "attributes": {"numa": {"int": 1}, "v": {"version": "1.0.0"}, "l": {"ints": [1]}}}
    )
    on = "gpu.example.com"
    assert simple_selector('device.attributes["gpu.example.com"].model == "a"').answer(on, device, False) is None
    assert simple_selector('device.attributes["gpu.example.com"].numa == "1"').answer(on, device, False) is None
    assert simple_selector('device.attributes["gpu.example.com"].v == "1.0.0"').answer(on, device, False) is None
    assert simple_selector('device.attributes["gpu.example.com"].l == 1').answer(on, device, True) is None
    assert simple_selector('"l" in device.attributes["gpu.example.com"]').answer(on, device, False) is False
    assert simple_selector('"l" in device.attributes["gpu.example.com"]').answer(on, device, True) is True
    # false beside an unsure term: false, as CEL's && (the error absorbed)
    both = 'device.attributes["gpu.example.com"].model == "a" && device.attributes["gpu.example.com"].numa == 2'
    assert simple_selector(both).answer(on, device, False) is False
    assert simple_selector('device.attributes["gpu.example.com"].numa == 1').answer(on, device, False) is True


@pytest.mark.parametrize(
    "text",
    [
        "1.2.3",
        "0.0.0",
        "1.0.0-rc.1",
        "1.0.0-0.3.7",
        "1.0.0+build.1",
        "1.0.0-alpha+001",
        "99999999999999999999.0.0",
        "1.2",
        "v1.2.3",
        "01.2.3",
        "1.2.3-",
        "1.2.3+",
        "1.2.3\n",
        " 1.2.3",
        "1.2.3-01",
        "",
        "1.2.3.4",
        "1.0.0-a..b",
    ],
)
def test_version_syntax_is_the_libraries_parse(text):
    """converts_cleanly checks a version by the semver library's own syntax (without building a
    Version): the same verdict as Version.parse, on awkward strings."""
    import semver

    from draopt.cel import device

    try:
        semver.Version.parse(text)
        parses = True
    except ValueError:
        parses = False
    device._GOOD_VERSIONS.clear()
    assert device._version_parses(text) is parses
