"""A new user's path: the README's quick start and the tutorial's commands run as written
(issue 33). The install steps are skipped (this test runs inside an installed draopt); every
`draopt ...` command is run from a scratch directory that sees the repository's examples/."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && "
    "draopt place -f examples/gang-stranding.yaml --compare"
)


def fenced_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def run_draopt(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """`draopt ARGS` (shell syntax, redirections included) with this tree's draopt."""
    assert command.startswith("draopt"), command
    words = shlex.split(command, comments=True)
    p = subprocess.run(
        [sys.executable, "-m", "draopt", *words[1:]], capture_output=True, text=True, cwd=cwd, timeout=300
    )
    assert "Traceback" not in p.stderr, p.stderr
    return p


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    os.symlink(ROOT / "examples", tmp_path / "examples")
    return tmp_path


def test_readme_quick_start_commands_are_the_ones_ci_runs(scratch):
    readme = (ROOT / "README.md").read_text()
    first, second = fenced_blocks(readme, "sh")[:2]
    assert first.strip() == INSTALL
    assert second.strip() == "python -m pytest -q"
    assert "python -m pytest -q\n" in (ROOT / ".ci" / "run").read_text()
    main_job = first.split("&&")[-1].strip()
    p = run_draopt(main_job, scratch)
    assert p.returncode == 1, p.stderr  # first-fit strands the gang: some pod is not placed
    summary = [line.split() for line in p.stdout.splitlines() if line.startswith(("first-fit ", "optimal "))]
    assert summary[0][:2] == ["first-fit", "0"] and summary[1][:2] == ["optimal", "2"]
    assert "OPTIMAL" in p.stdout


def _readme_job_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    blocks = fenced_blocks(readme, "sh")[2:]
    return [line.strip() for block in blocks for line in block.splitlines() if line.startswith("draopt ")]


@pytest.mark.parametrize("command", _readme_job_commands())
def test_readme_jobs_run(command, scratch):
    if "cluster.yaml" in command and "examples/" not in command:
        pytest.skip("needs a cluster dump")
    assert run_draopt(command, scratch).returncode in (0, 1)


def _tutorial_steps() -> list[tuple[str, str]]:
    """(command, the first line of output shown under it) of every `$ draopt` in the tutorial."""
    text = (ROOT / "docs" / "tutorial.md").read_text()
    steps = []
    for block in fenced_blocks(text, "console"):
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("$ draopt "):
                shown = lines[i + 1] if i + 1 < len(lines) else ""
                steps.append((line[2:], "" if shown.startswith(("...", "$ ")) else shown))
    return steps


@pytest.mark.parametrize("command,first_line", _tutorial_steps())
def test_tutorial_commands_run_as_shown(command, first_line, scratch):
    p = run_draopt(command, scratch)
    assert p.returncode in (0, 1), p.stderr
    if first_line:
        assert p.stdout.splitlines()[0].split() == first_line.split()


def test_tutorial_has_every_step():
    commands = " ".join(c for c, _ in _tutorial_steps())
    for verb in ("validate", "place", "explain", "--compare", "compare", "plan"):
        assert f" {verb} " in f" {commands} "
