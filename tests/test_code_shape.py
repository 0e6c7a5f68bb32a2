"""The shape of the code, checked (issue 32): no function over 80 lines except those listed with
their measured reason in docs/architecture.md, no module over 1,000 lines, and no code that
writes into another object's ``__dict__`` (caches are declared where they live)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "draopt"
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 1000
_WRITERS = {"setdefault", "update", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _sources() -> list[tuple[str, ast.Module, int]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        out.append((path.relative_to(ROOT).as_posix(), ast.parse(text), text.count("\n") + 1))
    return out


SOURCES = _sources()


def _listed_exceptions() -> set[str]:
    """`path:function` names in the exceptions table of docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    return set(re.findall(r"`(draopt/[\w/]+\.py:\w+)`", text))


def _long_functions() -> set[str]:
    found = set()
    for path, tree, _ in SOURCES:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.end_lineno is not None and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
                    found.add(f"{path}:{node.name}")
    return found


def test_no_long_function_unless_listed():
    extra = sorted(_long_functions() - _listed_exceptions())
    assert not extra, f"functions over {MAX_FUNCTION_LINES} lines, not listed in docs/architecture.md: {extra}"


def test_listed_exceptions_are_still_long():
    stale = sorted(_listed_exceptions() - _long_functions())
    assert not stale, (
        f"docs/architecture.md lists functions that are no longer over {MAX_FUNCTION_LINES} lines: {stale}"
    )


def test_no_module_over_the_limit():
    big = [(path, n) for path, _, n in SOURCES if n > MAX_MODULE_LINES]
    assert not big, f"modules over {MAX_MODULE_LINES} lines: {big}"


def _foreign_dict(node: ast.AST) -> bool:
    """`X.__dict__` where X is not `self`."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "__dict__"
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    )


# A class's own copy protocol fills the fresh object it has just made (no __init__ run).
_COPY_PROTOCOL = {"__copy__", "__deepcopy__"}


def _walk_outside_copies(tree: ast.AST):
    """ast.walk, without the bodies of __copy__ / __deepcopy__ methods."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef) and child.name in _COPY_PROTOCOL:
                continue
            todo.append(child)


def _dict_writes(tree: ast.Module) -> list[int]:
    lines = []
    for node in _walk_outside_copies(tree):
        targets: list[ast.AST] = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for t in targets:
            if isinstance(t, ast.Subscript) and _foreign_dict(t.value):
                lines.append(t.lineno)
            if _foreign_dict(t):
                lines.append(t.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _WRITERS and _foreign_dict(node.func.value):
                lines.append(node.lineno)
        if isinstance(node, ast.Call) and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and name.value == "__dict__":
                first = node.args[0]
                if not (isinstance(first, ast.Name) and first.id in ("self", "cls")):
                    lines.append(node.lineno)
    return sorted(lines)


# Fresh objects filled by the code that makes them (a decoder or a copier building a model
# without running its validators): the object is not anyone else's yet.
_CONSTRUCTORS = {"draopt/dra/decode.py", "draopt/kube/models/clone.py"}


def test_no_write_into_another_objects_dict():
    found = {path: lines for path, tree, _ in SOURCES if path not in _CONSTRUCTORS if (lines := _dict_writes(tree))}
    assert not found, f"writes into another object's __dict__ (declare the cache on its owner): {found}"


def test_the_checks_catch_what_they_look_for():
    bad = ast.parse(
        "def f(o, p):\n"
        "    o.__dict__['x'] = 1\n"
        "    o.__dict__.setdefault('y', {})\n"
        "    object.__setattr__(p, '__dict__', {})\n"
        "    self.__dict__['z'] = 2\n"
        "class C:\n"
        "    def __copy__(self):\n"
        "        new = C.__new__(C)\n"
        "        new.__dict__.update(self.__dict__)\n"
        "        return new\n"
    )
    assert _dict_writes(bad) == [2, 3, 4]


def test_mypy_covers_every_module():
    """[tool.mypy] files name every module of draopt (a folder covers what is under it), so that a
    new module is type-checked in CI without anyone remembering to list it."""
    import tomllib

    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    left = [
        path for path, _, _ in SOURCES if not any(path == f or (f.endswith("/") and path.startswith(f)) for f in files)
    ]
    assert not left, f"modules mypy does not check (add them to [tool.mypy] files): {left}"
