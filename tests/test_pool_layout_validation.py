"""A pool's counter consumption is validated in the pass that lays its counters out
(draopt.dra.pools.PoolLayout(validate=True)): the same answers as validating first and laying
out after. Kubernetes' own cases (unknown counter set, unknown counter, a slice for other nodes) are
in tests/conformance/extra2 (k8s-y-partitionable-devices-*); these add the order between an amount
that does not parse (raised only when a search reaches the pool) and a later device's unknown
counter (the pool is invalid), and compatibility groups noted past such an amount."""

from __future__ import annotations

import io

import pytest
import yaml

from draopt.errors import InputError
from draopt.kube.features import Features
from draopt.kube.loader import load_text
from draopt.dra.inventory import gather_pools
from draopt.dra.pools import PoolLayout


def _pool(devices: list[dict], counters: dict | None = None, unparsable: str | None = None):
    """The pool gathered for node n1; `unparsable`: this device's amount is set to a text that
    does not parse after reading (the loader refuses one: objects built in code can have one)."""
    counters = counters or {"mem": {"value": "8Gi"}}
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "s-counters"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "n1",
                "pool": {"name": "p", "resourceSliceCount": 2},
                "sharedCounters": [{"name": "gpu-0", "counters": counters}],
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "s-devices"},
            "spec": {
                "driver": "gpu.example.com",
                "nodeName": "n1",
                "pool": {"name": "p", "resourceSliceCount": 2},
                "devices": devices,
            },
        },
    ]
    objects = load_text(yaml.safe_dump_all(docs), "pool.yaml", notes=io.StringIO())
    for s in objects.resource_slices:
        for d in s.spec.devices:
            if d.name == unparsable:
                d.consumes_counters[0].counters["mem"].value = "lots"
    features = Features.from_gates({"DRAPartitionableDevices": True, "DRADeviceCompatibilityGroups": True})
    (pool,) = gather_pools(objects.resource_slices, objects.nodes[0], features)
    return pool


def _dev(name: str, counter_set: str = "gpu-0", counters: dict | None = None, groups=None) -> dict:
    consumption: dict = {"counterSet": counter_set, "counters": counters or {"mem": {"value": "1Gi"}}}
    if groups is not None:
        consumption["compatibilityGroups"] = groups
    return {"name": name, "consumesCounters": [consumption]}


def test_an_unknown_counter_after_an_amount_that_does_not_parse_makes_the_pool_invalid():
    pool = _pool([_dev("a"), _dev("b", counters={"cores": {"value": "1"}})], unparsable="a")
    assert pool.invalid and pool.invalid_reason == "counter cores not found in counter set gpu-0"
    assert pool.slices == [] and pool.counter_layout is None


def test_the_first_device_in_order_names_the_error():
    pool = _pool([_dev("a", counter_set="gpu-9"), _dev("b", counters={"cores": {"value": "1"}})])
    assert pool.invalid and pool.invalid_reason == "counter set gpu-9 not found"


def test_an_amount_that_does_not_parse_is_raised_when_the_layout_is_built():
    pool = _pool([_dev("a"), _dev("b", groups=["x"])], unparsable="b")
    assert not pool.invalid and pool.counter_layout is None  # the search builds it and raises
    with pytest.raises(InputError, match="device b: consumesCounters"):
        PoolLayout(pool)


def test_a_valid_pool_is_laid_out_as_without_validation():
    pool = _pool([_dev("a"), _dev("b", counters={"mem": {"value": "2Gi"}}), {"name": "c"}])
    assert not pool.invalid
    layout, plain = pool.counter_layout, PoolLayout(pool)
    assert layout is not None and not layout.unparsable
    assert (layout.position, layout.totals, layout.uses) == (plain.position, plain.totals, plain.uses)
    assert layout.by_device == plain.by_device and len(layout.uses) == 2


def test_entries_shared_by_pools_laid_out_differently_draw_at_each_pools_positions():
    # Two pools in one read, their devices drawing the same entry (one object: the loader shares
    # it); the second pool lists its counters in the other order, so the positions differ.
    def pool_docs(name: str, counters: dict) -> list[dict]:
        spec = {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": name, "resourceSliceCount": 2}}
        entry = {"counterSet": "gpu-0", "counters": {"mem": {"value": "1Gi"}, "cores": {"value": "2"}}}
        return [
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-counters"},
                "spec": {**spec, "sharedCounters": [{"name": "gpu-0", "counters": counters}]},
            },
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-devices"},
                "spec": {**spec, "devices": [{"name": f"d{i}", "consumesCounters": [dict(entry)]} for i in range(3)]},
            },
        ]

    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    docs = [node] + pool_docs("p", {"mem": {"value": "8Gi"}, "cores": {"value": "8"}})
    docs += pool_docs("q", {"cores": {"value": "8"}, "mem": {"value": "8Gi"}})
    objects = load_text(yaml.safe_dump_all(docs, sort_keys=False), "pools.yaml", notes=io.StringIO())
    entries = {id(d.consumes_counters[0]) for s in objects.resource_slices for d in s.spec.devices}
    assert len(entries) == 1  # (what makes the kept draws apply)
    pools = gather_pools(objects.resource_slices, objects.nodes[0], Features.from_gates())
    assert [p.name for p in pools] == ["p", "q"]
    for pool in pools:
        layout, plain = pool.counter_layout, PoolLayout(pool)
        assert layout is not None
        assert (layout.position, layout.totals, layout.uses) == (plain.position, plain.totals, plain.uses)
    p, q = (pool.counter_layout for pool in pools)
    assert p.uses[0][1] != q.uses[0][1]  # the same entry, other positions
