"""The driver-only selector shortcut (draopt.cel.device.driver_test / converts_cleanly, used by
draopt.dra.problem): the answer it gives is the CEL evaluation's, and it steps aside whenever the
evaluation would fail on the device (its CEL input does not convert)."""

from __future__ import annotations

import pytest

from draopt.cel import CelEnvironment, CelRuntimeError, make_cel_device
from draopt.cel.device import converts_cleanly, driver_test
from draopt.dra.device_views import cel_input
from draopt.kube.models import Device
from draopt.kube.models.resource import DeviceAttribute

ENV = CelEnvironment()


@pytest.mark.parametrize(
    "expression, expected",
    [
        ('device.driver == "gpu.example.com"', ("gpu.example.com", True)),
        ("device.driver=='gpu.example.com'", ("gpu.example.com", True)),
        (' "gpu.example.com" != device.driver ', ("gpu.example.com", False)),
        ('device.driver == "a" || true', None),
        ('device.driver == "a\\u0062"', None),  # escapes: left to CEL
        ('device.drivers == "a"', None),
        ('device.attributes["x"].y == "a"', None),
        ("device.driver == 'a' && device.driver == 'a'", None),
    ],
)
def test_driver_test_recognises_only_plain_comparisons(expression, expected):
    assert driver_test(expression) == expected


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
        test = driver_test(expression)
        assert test is not None
        try:
            want = ENV.compile(expression).matches(cel)
        except CelRuntimeError:
            assert not clean
            continue
        if clean:
            assert ((driver == test[0]) == test[1]) == want


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
