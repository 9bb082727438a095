"""The documentation site as a reader gets it: ``mkdocs build --strict`` (once for this file,
into a temporary folder), then the pages of the notebooks whose widgets promise "a static
picture" (02 and 04) show the widgets' saved snapshots and load no script from outside the
site, so they read the same offline."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT, END = "<!-- agentnb snapshot -->", "<!-- /agentnb snapshot -->"
WIDGET_PAGES = {
    "02_agent_as_tool": ["agentnb-explorer"],
    "04_cost_multipliers": ["agentnb-dashboard"],
}
SCRIPT_SRC = re.compile(r"<script\b[^>]*\bsrc\s*=\s*[\"']([^\"']*)[\"']", re.IGNORECASE)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs_jupyter")
    out = tmp_path_factory.mktemp("site")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "NO_MKDOCS_2_WARNING": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def outside_scripts(page: str) -> list[str]:
    """The scripts a page loads from another site (an absolute or protocol-relative URL)."""
    return [src for src in SCRIPT_SRC.findall(page) if re.match(r"^(https?:)?//", src)]


def test_the_script_check_tells_outside_from_inside():
    page = (
        '<script src="../../assets/bundle.js"></script><script src=""></script>'
        '<script type="module" src="https://cdn.example/x.js"></script><script src="//cdn.example/y.js">'
    )
    assert outside_scripts(page) == ["https://cdn.example/x.js", "//cdn.example/y.js"]


@pytest.mark.parametrize("name", sorted(WIDGET_PAGES))
def test_a_notebook_page_shows_its_widgets_snapshots_and_loads_nothing_from_outside(
    site: Path, name: str
):
    page = (site / "notebooks" / name / "index.html").read_text(encoding="utf-8")

    shown = re.findall(f"{SNAPSHOT}(.*?){END}", page, re.DOTALL)
    for widget in WIDGET_PAGES[name]:  # each widget's saved picture is on the page
        assert any(f'<div class="{widget}"' in snapshot for snapshot in shown), widget
    # No widget view left for a renderer to draw, and no renderer fetched from a CDN.
    assert "application/vnd.jupyter.widget-view+json" not in page
    assert "html-manager" not in page and "embed-amd" not in page
    assert outside_scripts(page) == []


def test_dollar_amounts_read_as_money_on_the_site(site: Path):
    page = (site / "notebooks" / "04_cost_multipliers" / "index.html").read_text(encoding="utf-8")
    assert "That is $18.256 instead of $17.412" in page
