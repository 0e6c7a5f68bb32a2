"""A selector's unknown-domain guards (draopt.cel.rewrite: a lookup of a domain the device lacks
reads an empty map) left out of the program that runs on devices with every domain it names:
the same answers, errors and costs as the guarded program on every device, and the guarded
program compiled only for a device that lacks a domain (issue 30 item 7, the cold call)."""

from __future__ import annotations

import pytest

from draopt.cel import CelEnvironment, CelRuntimeError, core, make_cel_device
from draopt.cel.rewrite import _rewrite, guarded_domains

GPU = "gpu.example.com"


def _devices():
    """Devices with both domains, with one of them, with neither, with the domains empty-ish."""
    full = {
        "name": "full",
        "attributes": {
            "numa": {"int": 1},
            "model": {"string": "a"},
            "v": {"version": "1.2.3"},
            "nic.example.com/numa": {"int": 2},
        },
        "capacity": {"memory": {"value": "4Gi"}, "nic.example.com/bw": {"value": "10G"}},
    }
    gpu_only = {"name": "gpu-only", "attributes": {"numa": {"int": 0}}, "capacity": {"memory": {"value": "1Gi"}}}
    bare = {"name": "bare"}
    other = {"name": "other", "attributes": {"x.example.com/numa": {"int": 1}}}
    return [make_cel_device(GPU, d) for d in (full, gpu_only, bare, other)] + [make_cel_device("nic.example.com", full)]


EXPRESSIONS = [
    f'device.attributes["{GPU}"].numa == 1',
    f"device.attributes['{GPU}'].model != 'c' && \"model\" in device.attributes[\"{GPU}\"]",
    'device.attributes["nic.example.com"].numa > device.attributes["gpu.example.com"].numa',
    f'device.capacity["{GPU}"].memory.compareTo(quantity("2Gi")) >= 0',
    'device.capacity["nic.example.com"].bw.isGreaterThan(quantity("1G")) || device.driver == "x"',
    f'device.attributes["{GPU}"].v.isGreaterThan(semver("1.0.0"))',
    f'has(device.attributes["{GPU}"].numa) && device.attributes["{GPU}"].numa % 2 == 1',
    f'device.attributes[?"{GPU}"].hasValue() && "{GPU}" in device.attributes',
    f'device.attributes[?"{GPU}"].numa.orValue(7) == 7',
    f'device.attributes["{GPU}"].size() == 0',
    'device.attributes["x.example.com"].numa == 1 || device.attributes["nic.example.com"].numa == 2',
]


def _outcome(compiled, device):
    try:
        return ("value", compiled.evaluate(device))
    except CelRuntimeError as e:
        return ("error", str(e))


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_the_unguarded_program_answers_as_the_guarded_one_on_every_device(expression, monkeypatch):
    # (compiled now: compile() of draopt.cel.simple's shapes waits until CEL is needed)
    fast = CelEnvironment()._compile_now(expression, False)
    assert fast._domains is not None  # (the unguarded program runs where it can)
    monkeypatch.setattr(core, "guarded_domains", lambda guards: None)
    guarded = CelEnvironment()._compile_now(expression, False)
    assert guarded._domains is None
    assert fast.output_type == guarded.output_type
    assert fast.estimated_cost() == guarded.estimated_cost()
    for device in _devices():
        assert _outcome(fast, device) == _outcome(guarded, device), device
        assert fast.cost(device) == guarded.cost(device)


def test_the_guarded_program_is_compiled_only_for_a_device_lacking_a_domain():
    env = CelEnvironment()
    compiled = env.compile(f'device.attributes["{GPU}"].numa == 1')
    full, gpu_only, bare = _devices()[:3]
    assert compiled.matches(full) is True
    assert compiled.matches(gpu_only) is False
    assert isinstance(compiled._guarded, str)  # not compiled: both devices have the domain
    with pytest.raises(CelRuntimeError, match="no such key: numa"):
        compiled.matches(bare)  # the guarded program: an empty map, then the missing name
    assert not isinstance(compiled._guarded, str)


@pytest.mark.parametrize(
    "expression",
    [
        'device.attributes[device.driver].numa == 1',  # a key that is not a literal
        'device.attributes["gpu" + ".example.com"].numa == 1',
        'device.attributes["gpu\\x2eexample.com"].numa == 1',  # an escape: the key's value is not its text
        f'cel.bind(device, {{"attributes": {{"{GPU}": {{"numa": 1}}}}}}, device.attributes["{GPU}"].numa == 1)',
        'device.driver == "gpu.example.com"',  # nothing guarded
    ],
)
def test_the_guards_stay_where_the_unguarded_program_could_differ(expression):
    guards: list = []
    _rewrite(expression, guards)
    assert guarded_domains(guards) is None


def test_the_domains_named_are_read_from_each_form_of_lookup():
    expression = (
        f'device.attributes["{GPU}"].a == 1 && device.attributes.vendor.b == 2 && '
        "device.capacity['nic.example.com'].c.isZero() && device.attributes[?\"x.io\"].hasValue()"
    )
    guards: list = []
    _rewrite(expression, guards)
    assert guarded_domains(guards) == ((GPU, "vendor", "x.io"), ("nic.example.com",))
