"""The documentation site builds as CI builds it (`mkdocs build --strict`: a broken link, anchor
or API reference fails), and its front page renders in headless Chromium. Skipped where the
site's tools are not installed (`pip install -e '.[docs]'`) or no Chromium is."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.test_report_html import _browser, _run_browser

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    mkdocs = shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    p = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(out)], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return out


def test_site_has_the_tutorial_guides_and_reference(site):
    for page in ("index.html", "tutorial/index.html", "cluster-dump/index.html", "cli/index.html"):
        assert (site / page).is_file(), page
    reference = (site / "reference" / "index.html").read_text()
    for function in ("load", "allocate", "place", "plan", "simulate", "compare", "validate", "explain"):
        assert f'id="draopt.public.{function}"' in reference, function


def test_every_markdown_page_is_in_the_site(site):
    for page in (ROOT / "docs").rglob("*.md"):
        built = site / page.relative_to(ROOT / "docs").with_suffix("") / "index.html"
        if page.name == "index.md":
            built = site / page.relative_to(ROOT / "docs").parent / "index.html"
        assert built.is_file(), page


@pytest.mark.skipif(_browser() is None, reason="no Chromium installed (apt-get install chromium)")
def test_chromium_renders_the_front_page(site):
    dom = _run_browser(_browser(), "--dump-dom", (site / "index.html").as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", dom.stdout)).split())
    for expected in ("draopt places Kubernetes pods", "Where will these pods land?", "Start here"):
        assert expected in text, expected
    # the document Chromium built has the site's title, and the page draws (a screenshot with content)
    assert re.search(r"<title>draopt</title>", dom.stdout)
    shot = site.parent / "front.png"
    drawn = _run_browser(_browser(), f"--screenshot={shot}", "--window-size=1200,900", (site / "index.html").as_uri())
    assert drawn.returncode == 0 and shot.stat().st_size > 10_000, drawn.stderr[-2000:]
