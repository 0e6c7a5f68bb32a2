"""The front door: the version, the licence, and kubectl's conventions on every command (issue 33)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import draopt

ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    p = subprocess.run([sys.executable, "-m", "draopt", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def test_version_flag_and_attribute():
    p = run("--version")
    assert p.returncode == 0
    assert p.stdout.strip() == f"draopt {draopt.__version__}"
    assert draopt.__version__[0].isdigit()


def test_licence_is_apache_2():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
