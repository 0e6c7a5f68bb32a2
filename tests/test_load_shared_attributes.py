"""Device attributes shared within one read (draopt.kube.shared_attributes): the same slices, field
for field, as validating each alone; identical simple attributes one object per read; everything
else validated in its place, with the same errors."""

from __future__ import annotations

import copy
import io
import sys
from pathlib import Path

import pytest
import yaml

from draopt.errors import InputError
from draopt.kube import loader
from draopt.kube.convert import to_v1
from draopt.kube.models import ResourceSlice
from draopt.kube.shared_attributes import share_attributes

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from load_dumps import as_list, cluster_dump  # noqa: E402


def _slice(attributes: dict) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "d",
            "pool": {"name": "p"},
            "nodeName": "n",
            "devices": [{"name": f"dev{i}", "attributes": dict(attributes)} for i in range(3)],
        },
    }


def _same(a, b) -> None:
    assert repr(a) == repr(b) and a == b
    assert a.model_fields_set == b.model_fields_set and a.model_extra == b.model_extra
    for da, db in zip(a.spec.devices, b.spec.devices):
        for k in da.attributes:
            x, y = da.attributes[k], db.attributes[k]
            assert repr(x) == repr(y) and x.model_fields_set == y.model_fields_set and x.model_extra == y.model_extra


ODD = {
    "i": {"int": 7},
    "b": {"bool": True},
    "one": {"int": 1},  # not the boolean true, though 1 == True
    "s": {"string": "0000:18:00.0"},
    "v": {"version": "1.2.3"},
    "f": {"int": 2.0},  # pydantic makes it 2: validated in place, not shared
    "q": {"int": "3"},
    "l": {"ints": [1, 2]},
    "two": {"int": 1, "string": "x"},
    "x": {"int": 1, "zz": 2},
    "snake": {"int_": 4},
    "none": {"string": None},
    "empty": {},
}


def test_slices_read_with_shared_attributes_are_the_slices_validated_alone():
    docs = [d for d in as_list(cluster_dump(nodes=6, pods=4))["items"] if d["kind"] == "ResourceSlice"]
    docs.append(_slice(ODD))
    cache: dict = {}
    for doc in docs:
        before = copy.deepcopy(doc)
        shared = ResourceSlice.model_validate(share_attributes(to_v1(doc), cache))
        assert doc == before  # the document read is not changed
        _same(shared, ResourceSlice.model_validate(to_v1(doc)))
    assert cache


def test_identical_simple_attributes_are_one_object_per_read():
    text = yaml.safe_dump(as_list([_slice(ODD), {**_slice(ODD), "metadata": {"name": "t"}}]))
    first, second = (loader.load_text(text, "x", notes=io.StringIO()).resource_slices for _ in range(2))
    devices = [d for s in first for d in s.spec.devices]
    for k in ("i", "b", "one", "s", "v"):
        assert len({id(d.attributes[k]) for d in devices}) == 1, k
    for k in ("f", "q", "l", "two", "x", "snake", "none", "empty"):
        assert len({id(d.attributes[k]) for d in devices}) == len(devices), k
    assert devices[0].attributes["one"].typed() == ("int", 1) and devices[0].attributes["b"].typed() == ("bool", True)
    assert first[0].spec.devices[0].attributes["i"] is not second[0].spec.devices[0].attributes["i"]  # per read


def test_an_attribute_pydantic_refuses_gives_the_same_error():
    doc = _slice({"ok": {"int": 1}, "bad": {"int": "x"}})
    with pytest.raises(InputError) as shared:
        loader.load_text(yaml.safe_dump(doc), "x")
    with pytest.raises(InputError) as alone:
        loader.parse_object(doc, "x document 1")
    assert str(shared.value) == str(alone.value) and "attributes.bad.int" in str(shared.value)


def _selector_slice(name: str, selector: dict) -> dict:
    doc = _slice({"i": {"int": 1}})
    doc["metadata"] = {"name": name}
    del doc["spec"]["nodeName"]
    doc["spec"]["nodeSelector"] = selector
    return doc


# Shaped as Kubernetes' scheduler_perf partitionable slices (resourceslice-partitionable-*.yaml):
# thousands of slices, one nodeSelector written alike in each.
_RACK = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}


def test_slices_selecting_nodes_alike_share_one_node_selector_per_read():
    other = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r2"]}]}]}
    docs = [_selector_slice(f"s{i}", copy.deepcopy(_RACK)) for i in range(3)] + [_selector_slice("t", other)]
    text = yaml.safe_dump(as_list(docs))
    first, second = (loader.load_text(text, "x", notes=io.StringIO()).resource_slices for _ in range(2))
    by_name = {s.name: s for s in first}
    assert len({id(by_name[f"s{i}"].spec.node_selector) for i in range(3)}) == 1
    assert by_name["t"].spec.node_selector is not by_name["s0"].spec.node_selector
    assert first[0].spec.node_selector is not second[0].spec.node_selector  # per read
    for doc, s in zip(docs, first):
        _same(s, ResourceSlice.model_validate(to_v1(doc)))  # field for field what validating alone gives


def test_a_node_selector_pydantic_refuses_gives_the_same_error():
    bad = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": "r1"}]}]}
    doc = _selector_slice("s", bad)
    with pytest.raises(InputError) as shared:
        loader.load_text(yaml.safe_dump(as_list([_selector_slice("ok", _RACK), doc])), "x")
    with pytest.raises(InputError) as alone:
        loader.parse_object(doc, "x document 1 items[1]")
    assert str(shared.value) == str(alone.value)
    assert "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values" in str(shared.value)


def test_consumption_entries_written_alike_are_one_object_per_read():
    # As in Kubernetes' scheduler_perf resourceslice-partitionable-devices.yaml: every pool's
    # devices draw the same counters of their pool's counter set.
    entry = {"counterSet": "counter-set", "counters": {"counter1": {"value": "1"}}}
    docs = []
    for i in range(3):
        doc = _slice({"i": {"int": i}})
        doc["metadata"] = {"name": f"s{i}"}
        for d in doc["spec"]["devices"]:
            d["consumesCounters"] = [copy.deepcopy(entry)]
        doc["spec"]["devices"][0]["consumesCounters"].append({"counterSet": "other", "counters": {}})
        docs.append(doc)
    text = yaml.safe_dump(as_list(docs))
    first, second = (loader.load_text(text, "x", notes=io.StringIO()).resource_slices for _ in range(2))
    entries = [d.consumes_counters[0] for s in first for d in s.spec.devices]
    assert len({id(e) for e in entries}) == 1 and len(entries) == 9
    assert len({id(s.spec.devices[0].consumes_counters[1]) for s in first}) == 1
    assert entries[0] is not second[0].spec.devices[0].consumes_counters[0]  # per read
    for doc, s in zip(docs, first):
        _same(s, ResourceSlice.model_validate(to_v1(doc)))


def test_a_consumption_entry_pydantic_refuses_gives_the_same_error():
    doc = _slice({"i": {"int": 1}})
    doc["spec"]["devices"][1]["consumesCounters"] = [{"counterSet": "c", "counters": {"a": {"value": "x1"}}}]
    with pytest.raises(InputError) as shared:
        loader.load_text(yaml.safe_dump(doc), "x")
    with pytest.raises(InputError) as alone:
        loader.parse_object(doc, "x document 1")
    assert str(shared.value) == str(alone.value) and "consumesCounters[0].counters.a.value" in str(shared.value)
