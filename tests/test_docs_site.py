"""The documentation site as a reader gets it: ``mkdocs build --strict`` (once for this file,
into a temporary folder), then the pages of the notebooks whose widgets promise "a static
picture" (02 and 04) show the widgets' saved snapshots and load no script from outside the
site, so they read the same offline; and no page of the site fetches anything from outside it
(scripts, styles, fonts, images, the theme's repository widget)."""

from __future__ import annotations

import html
import json
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


OUTSIDE = re.compile(r"^(https?:)?//")
LOADED = re.compile(
    r"<(?:script|img|iframe|source|audio|video)\b[^>]*\bsrc\s*=\s*[\"']([^\"']*)[\"']"
    r"|<link\b[^>]*\bhref\s*=\s*[\"']([^\"']*)[\"'][^>]*>"
    r"|@import\s+(?:url\()?[\"']?([^\"')\s;]+)",
    re.IGNORECASE,
)
"""What a browser fetches by itself when it shows a page: scripts, images, frames, media,
``<link>`` targets (stylesheets, icons, preloads) and CSS imports. A plain ``<a href>`` is not
fetched until a reader follows it."""
REPOSITORY_WIDGET = 'data-md-component="source"'
"""Material's repository widget: its script calls GitHub's API to show stars and forks."""


def outside_scripts(page: str) -> list[str]:
    """The scripts a page loads from another site (an absolute or protocol-relative URL)."""
    return [src for src in SCRIPT_SRC.findall(page) if OUTSIDE.match(src)]


def outside_requests(page: str) -> list[str]:
    """Everything a page makes the browser fetch from another site, the repository widget's
    call to GitHub's API included."""
    found = [url for groups in LOADED.findall(page) for url in groups if OUTSIDE.match(url)]
    link_tags = re.findall(r"<link\b[^>]*>", page, re.IGNORECASE)
    canonical = {t for t in link_tags if re.search(r"rel\s*=\s*[\"']canonical", t)}
    found = [u for u in found if not any(u in t for t in canonical)]  # a name, not a fetch
    if REPOSITORY_WIDGET in page:
        found.append("https://api.github.com (the theme's repository widget)")
    return found


def test_the_script_check_tells_outside_from_inside():
    page = (
        '<script src="../../assets/bundle.js"></script><script src=""></script>'
        '<script type="module" src="https://cdn.example/x.js"></script><script src="//cdn.example/y.js">'
    )
    assert outside_scripts(page) == ["https://cdn.example/x.js", "//cdn.example/y.js"]


def test_the_request_check_finds_each_kind_of_outside_fetch():
    page = (
        '<link rel="stylesheet" href="https://fonts.example/css"><img src="//cdn.example/i.png">'
        '<style>@import url("https://cdn.example/a.css");</style><a href="https://github.com/x">'
        '<link rel="canonical" href="https://agentnb.example/page/"><img src="../assets/i.png">'
        f'<a class="md-source" {REPOSITORY_WIDGET} href="https://github.com/x">'
    )
    assert outside_requests(page) == [
        "https://fonts.example/css",
        "//cdn.example/i.png",
        "https://cdn.example/a.css",
        "https://api.github.com (the theme's repository widget)",
    ]


def test_no_page_of_the_site_fetches_anything_from_outside_it(site: Path):
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    fetched = {
        str(p.relative_to(site)): outside_requests(p.read_text(encoding="utf-8")) for p in pages
    }
    assert {page: urls for page, urls in fetched.items() if urls} == {}


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


def test_each_notebook_page_is_titled_by_its_first_heading(site: Path):
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        heading = next(
            line[2:].strip()
            for cell in cells
            if cell["cell_type"] == "markdown"
            for line in "".join(cell["source"]).splitlines()
            if line.startswith("# ")
        )
        page = (site / "notebooks" / path.stem / "index.html").read_text(encoding="utf-8")
        title = re.search(r"<title>(.*?) - agentnb</title>", page)
        assert title is not None and html.unescape(title.group(1)) == heading, path.name
