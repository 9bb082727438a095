"""The repository URL is written once, in pyproject.toml's ``[project.urls] Repository``; the
README's binder badge and the docs site's footer link must agree with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def repository() -> str:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    url: str = config["project"]["urls"]["Repository"]
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url), url
    return url


def test_the_binder_badge_launches_the_repository_of_pyproject() -> None:
    owner_repo = repository().removeprefix("https://github.com/")
    badges = re.findall(
        r"https://mybinder\.org/v2/gh/([\w.-]+/[\w.-]+)/", (ROOT / "README.md").read_text()
    )
    assert badges, "the README has no binder badge"
    assert set(badges) == {owner_repo}


def test_the_docs_site_links_the_same_repository() -> None:
    site = (ROOT / "mkdocs.yml").read_text()
    assert f"      link: {repository()}\n" in site
    assert "\nrepo_url:" not in site  # the theme's widget for it calls GitHub's API from every page


def test_the_layers_are_described_in_the_project_and_everything_points_there() -> None:
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    for layer in ("models", "trace", "runtime", "patterns", "measure", "notebook", "integrations"):
        assert f"**{layer}**" in architecture, layer
    assert "  - Architecture: architecture.md\n" in (ROOT / "mkdocs.yml").read_text()
    for path in ("pyproject.toml", ".ci/run", "tests/test_layers.py"):
        text = (ROOT / path).read_text()
        assert "docs/architecture.md" in text and "DESIGN.md" not in text, path


def test_the_docs_open_the_notebooks_from_a_working_copy_that_git_ignores() -> None:
    assert "/my-notebooks/" in (ROOT / ".gitignore").read_text().splitlines()
    for path in ("README.md", "docs/index.md", "docs/quickstart.md"):
        text = (ROOT / path).read_text()
        assert "agentnb notebooks ./my-notebooks" in text and "jupyter lab my-notebooks" in text
        assert "jupyter lab notebooks" not in text, path  # running them in place dirties the repo
