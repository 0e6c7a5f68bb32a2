"""draopt's imports run one way: no cycle among draopt's modules, lazy imports (inside functions)
included, and the CEL / validation layers keep their direction (see the docstrings of draopt.cel
and draopt.validation).

The graph is read from the source with ``ast``: every ``import`` / ``from ... import`` anywhere
in a module, resolved to draopt modules. Importing ``a.b.c`` runs ``a/__init__`` and
``a/b/__init__`` first, so those are edges too. Two graphs: GRAPH, what runs (not under
``if TYPE_CHECKING:``, which never runs), and TYPED_GRAPH, with the type-only imports too: two
modules that name each other's types depend on each other even when one of them hides the import
from the interpreter, so the cycle and layer contracts are checked on TYPED_GRAPH as well.
"""

from __future__ import annotations

import ast
from pathlib import Path


PACKAGE_DIR = Path(__file__).resolve().parent.parent / "draopt"


def _module_names() -> dict[str, Path]:
    names = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


MODULES = _module_names()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, type_only: bool = False):
        self.module = module
        self.type_only = type_only  # also read the imports under `if TYPE_CHECKING:`
        self.found: set[str] = set()

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if not self.type_only and (
            (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
        ):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            package = self.module if _is_package(self.module) else self.module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{node.module}" if node.module else package
        else:
            base = node.module or ""
        submodules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
        # `from pkg import sub` imports the submodule pkg.sub; other names are read from pkg itself
        self._add(base, final=len(submodules) < len(node.names))
        for sub in submodules:
            self._add(sub)

    def _add(self, name: str, final: bool = True) -> None:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if prefix not in MODULES or prefix == self.module:
                continue
            # the parent packages run first, unless they are the importer's own (already running)
            if (i < len(parts) or not final) and self.module.startswith(prefix + "."):
                continue
            self.found.add(prefix)


def import_graph(type_only: bool = False) -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        visitor = _Imports(name, type_only)
        visitor.visit(ast.parse(path.read_text(), filename=str(path)))
        graph[name] = visitor.found
    return graph


GRAPH = import_graph()
TYPED_GRAPH = import_graph(type_only=True)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def _reachable(graph: dict[str, set[str]], start: str) -> dict[str, str]:
    """Every module start imports, directly or not, with the module that imports it."""
    seen: dict[str, str] = {}
    todo = [start]
    while todo:
        v = todo.pop()
        for w in sorted(graph[v]):
            if w not in seen and w != start:
                seen[w] = v
                todo.append(w)
    return seen


def _path(graph: dict[str, set[str]], start: str, target: str) -> str:
    via = _reachable(graph, start)
    chain = [target]
    while chain[-1] != start:
        chain.append(via[chain[-1]])
    return " -> ".join(reversed(chain))


def test_the_graph_is_read():
    # guards the reader itself: a lazy import, a relative import of a submodule, a parent package
    assert "draopt.kube.quantity" in GRAPH["draopt.cel.values"]
    assert "draopt.kube.names" in GRAPH["draopt.cel.format"]
    assert "draopt.kube" in GRAPH["draopt.cel.format"]  # the parent package runs first
    assert "draopt.validation" in GRAPH["draopt.cli"]
    assert "draopt.cel" in GRAPH["draopt.dra.problem"]  # imported inside a function


def test_no_import_cycle():
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles among draopt's modules:\n" + "\n".join("  " + ", ".join(c) for c in cycles)


# Cycles that only type-only imports close, left to their layers' owners (issue 32): remove an
# entry when its cycle is gone. Any other cycle, type-only imports included, fails the test.
KNOWN_TYPE_ONLY_CYCLES: list[list[str]] = []


def test_the_typed_graph_is_read():
    # an import under `if TYPE_CHECKING:` is an edge of TYPED_GRAPH only
    assert "draopt.studies.sim_cluster" in TYPED_GRAPH["draopt.studies.online_batch"]
    assert "draopt.studies.sim_cluster" not in GRAPH["draopt.studies.online_batch"]
    assert GRAPH["draopt.cli"] <= TYPED_GRAPH["draopt.cli"]


def test_no_import_cycle_type_only_imports_included():
    cycles = [c for c in _cycles(TYPED_GRAPH) if c not in KNOWN_TYPE_ONLY_CYCLES]
    assert not cycles, "import cycles among draopt's modules, type-only imports included:\n" + "\n".join(
        "  " + ", ".join(c) for c in cycles
    )


# The layers, bottom up: a module may import its own layer's modules (without a cycle) and the
# layers below it, never one above.  Listed by the dotted prefix each layer's modules share.
LAYERS: list[tuple[str, ...]] = [
    (
        "draopt.errors",
        "draopt.notes",
        "draopt.progress",
        "draopt.provenance",
        "draopt.interrupt",
    ),  # error types; notes; progress; provenance; Ctrl-C
    ("draopt.kube",),  # Kubernetes objects in and out
    ("draopt.cel",),  # CEL, as Kubernetes' device selectors evaluate it
    ("draopt.validation",),  # what the API server would reject
    ("draopt.dra",),  # the DRA rules on one node
    ("draopt.cluster",),  # nodes, and first-fit over them
    ("draopt.model",),  # the CP-SAT model: encodings, reductions
    ("draopt.allocation",),  # allocate and explain
    ("draopt.scheduler",),  # kube-scheduler simulated
    ("draopt.placement",),  # place: first-fit and optimal policies
    ("draopt.studies",),  # simulate, plan, sweep, compare
    ("draopt.crosscheck",),  # draopt against Kubernetes' own code (the Go oracles)
    ("draopt.testing",),  # test-instance generators (not the product), the crosscheck's scenarios too
    ("draopt.public", "draopt.cli", "draopt.launch", "draopt.__main__"),  # the Python API and the command line
]


def _layer(module: str) -> int:
    if module == "draopt":
        return len(LAYERS) - 1
    for rank, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS")


def test_every_module_has_a_layer():
    for module in GRAPH:
        _layer(module)


def test_imports_run_down_the_layers():
    upward = sorted(
        f"{m} (layer {LAYERS[_layer(m)][0]}) imports {t} (layer {LAYERS[_layer(t)][0]})"
        for m, ts in TYPED_GRAPH.items()
        for t in ts
        if t != "draopt" and _layer(t) > _layer(m)
    )
    assert not upward, "imports that run up the layers:\n  " + "\n  ".join(upward)


def test_the_product_does_not_import_the_test_generators():
    product = [m for m in GRAPH if not m.startswith("draopt.testing")]
    wrong = sorted((m, t) for m in product for t in GRAPH[m] if t.startswith("draopt.testing"))
    assert not wrong, f"the product imports draopt.testing: {wrong}"


def test_cel_loads_no_validation():
    # the CEL layer reads quantities and name formats from the objects layer, nothing above it
    for m in [m for m in GRAPH if m == "draopt.cel" or m.startswith("draopt.cel.")]:
        assert not any(t.startswith("draopt.validation") for t in GRAPH[m]), m
