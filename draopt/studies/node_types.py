"""The node types `draopt plan` may buy: a template Node of the input (with the slices pinned to
it) and a cost, from `--node-types` (NAME=TEMPLATE:COST, or a file), checked against the input."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from draopt.errors import InputError
from draopt.kube.loader import ObjectSet
from draopt.kube.optionfiles import read_yaml_option


def format_cost(v: Fraction) -> str:
    return str(int(v)) if v.denominator == 1 else f"{float(v):.6g}"


@dataclass(frozen=True)
class NodeType:
    """A node that can be bought: a Node of the input (and the slices pinned to it), at a cost."""

    name: str
    template: str
    cost: Fraction


def parse_cost(value: Any, where: str) -> Fraction:
    """A cost: a number more than 0, read exactly ("3.06" is 306/100)."""
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        raise InputError(f"{where}: the cost must be a number more than 0, got {value!r}")
    try:
        cost = Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise InputError(f"{where}: the cost must be a number more than 0, got {value!r}") from None
    if cost <= 0:
        raise InputError(f"{where}: the cost must be more than 0, got {value!r}")
    if cost > COST_LIMIT:
        raise InputError(f"{where}: the cost must be at most 2^53, got {value!r}")
    return cost


def parse_node_type(text: str) -> NodeType:
    """`NODE=COST` (the command line's --node-type): the Node named NODE is the template."""
    node, sep, cost = text.partition("=")
    node = node.strip()
    if not sep or not node:
        raise InputError(f"--node-type {text}: expected NODE=COST, e.g. gpu-node-1=32.5")
    return NodeType(node, node, parse_cost(cost, f"--node-type {text}"))


def load_node_types(path: str) -> list[NodeType]:
    """Node types from YAML: a list (or `nodeTypes:` holding one) of {template, cost, name}
    entries; `name` defaults to the template's."""
    data = read_yaml_option("--node-types", path)
    if isinstance(data, dict) and "nodeTypes" in data:
        extra = sorted(map(str, set(data) - {"nodeTypes"}))
        if extra:
            raise InputError(f"--node-types {path}: unknown field {extra[0]} (known: nodeTypes)")
        data = data["nodeTypes"]
    if not isinstance(data, list) or not data:
        raise InputError(
            f"--node-types {path}: expected a non-empty list of node types "
            "(entries with template and cost; or nodeTypes: [...])"
        )
    out = []
    for i, entry in enumerate(data):
        where = f"--node-types {path}: entry {i}"
        if not isinstance(entry, dict):
            raise InputError(f"{where}: expected a mapping with template and cost, got {entry!r}")
        unknown = sorted(set(map(str, entry)) - {"name", "template", "cost"})
        if unknown:
            raise InputError(f"{where}: unknown field {unknown[0]} (known: name, template, cost)")
        template = entry.get("template")
        if not isinstance(template, str) or not template:
            raise InputError(f"{where}: field template: the name of a Node in the input is required")
        name = entry.get("name", template)
        if not isinstance(name, str) or not name:
            raise InputError(f"{where}: field name: must be a non-empty string, got {name!r}")
        if "cost" not in entry:
            raise InputError(f"{where}: field cost: required (node type {name})")
        out.append(NodeType(name, template, parse_cost(entry["cost"], f"{where} (node type {name}): field cost")))
    return out


def check_node_types(objects: ObjectSet, node_types: list[NodeType]) -> None:
    if not node_types:
        raise InputError(
            "no node types: give --node-type NODE=COST (repeatable), --node-types FILE or --node-template NODE"
        )
    names = {n.name for n in objects.nodes}
    seen: set[str] = set()
    for t in node_types:
        if t.name in seen:
            raise InputError(f"node type {t.name}: given twice (one entry per name)")
        seen.add(t.name)
        if t.template not in names:
            raise InputError(f"node type {t.name}: template {t.template}: no Node {t.template} in the input")
        if not t.cost > 0:
            raise InputError(f"node type {t.name}: the cost must be more than 0, got {t.cost}")
        clash = sorted(n for n in names if n.startswith(f"{t.name}-plan-"))
        if clash:
            raise InputError(
                f"node type {t.name}: Node {clash[0]} exists already; copies are named {t.name}-plan-N: rename the type"
            )


# CP-SAT reports objective values and bounds as doubles: integer costs up to 2**53 are read back exactly.
COST_LIMIT = 2**53


def check_cost_range(node_types: list[NodeType], ints: list[int], caps: dict[str, int]) -> None:
    """The costs as the model's integers (`ints`, proportional to them): the dearest mix of the
    candidates must stay exact, else costs far apart (1e12 and 1e-6) or too large fail here."""
    if sum(c * caps[t.name] for c, t in zip(ints, node_types)) > COST_LIMIT:
        raise InputError(
            "node types: costs "
            + ", ".join(f"{t.name}={format_cost(t.cost)}" for t in node_types)
            + ": too large or too far apart to be compared exactly (as integers, the candidates "
            "would cost more than 2^53); round them or give them in another unit"
        )
