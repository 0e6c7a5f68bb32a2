"""Every notebook in notebooks/ executes (nbclient, a fresh kernel, working directory notebooks/)
without a cell error and within the time limits, and ends with a plot and a printed conclusion;
each uses draopt's public API only (`import draopt`, then draopt.place/plan/simulate/compare/...)
and is committed with its outputs, plots included, so that a reader sees them without running it.
The notebooks are sized to run in seconds; the full studies are `draopt simulate`/benchmarks."""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 240
NOTEBOOK_LIMIT_S = 600  # a whole notebook, on a CI runner (they take seconds to about a minute)


def _code(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_uses_the_public_api_only(path):
    """`import draopt` and its exported names (draopt.__all__), no draopt.* module (the notebooks
    imported private helpers: draopt.studies.simulate._object_set and the like)."""
    import draopt

    bad = []
    for source in _code(path):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                bad += [a.name for a in node.names if a.name.startswith("draopt.")]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "draopt":
                bad.append(f"from {node.module} import ...")
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "draopt":
                if node.attr not in draopt.__all__ and node.attr != "__version__":
                    bad.append(f"draopt.{node.attr}")
    assert not bad, f"{path.name} uses draopt beyond its public API: {bad}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_with_its_outputs(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(c.get("execution_count") for c in code), f"{path.name}: a code cell was never run"
    outputs = [o for c in code for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"], f"{path.name}: committed with an error"
    assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.name}: committed without its plot"


def test_there_are_notebooks():
    assert {"first_fit_vs_optimal.ipynb", "gang_placement.ipynb"} <= {p.name for p in NOTEBOOKS}


def execute(path: Path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    t0 = time.monotonic()
    client.execute()  # raises CellExecutionError on any cell error, CellTimeoutError past the limit
    assert time.monotonic() - t0 < NOTEBOOK_LIMIT_S, f"{path.name}: longer than {NOTEBOOK_LIMIT_S} s"
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path):
    nb = execute(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    outputs = [o for c in code for o in c.get("outputs", [])]
    printed = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    skipped = "skipped" in printed
    assert skipped or any("image/png" in o.get("data", {}) for o in outputs), f"{path.name}: no plot"
    last = "".join(o.get("text", "") for o in code[-1].get("outputs", []) if o.get("output_type") == "stream")
    assert last.strip(), f"{path.name}: the last cell prints no conclusion"


def test_openb_notebook_skips_cleanly_without_the_trace(monkeypatch, tmp_path):
    monkeypatch.setenv("DRAOPT_OPENB", str(tmp_path / "no-openb"))
    nb = execute(ROOT / "notebooks" / "first_fit_vs_optimal.ipynb")
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "the study below is skipped" in printed and "No conclusion" in printed
