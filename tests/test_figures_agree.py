"""A figure quoted in several places is one figure: the time of the test suite and of building
llama-cpp-python, wherever README, the docs, the notebooks, pyproject.toml, .ci/run or a
docstring states it; and the cost tables README quotes are what `reproduce` prints now."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FACTS = {
    "building llama-cpp-python": (
        re.compile(r"(?i)llama.*\b(buil[dt]|compil)|\b(buil[dt]|compil)\w*\b.*llama"),
        4,
    ),
    "the test suite": (re.compile(r"(?i)test suite|every test|whole suite"), 6),
}
"""Each fact: what a paragraph stating it mentions, and its figure in minutes. Measured on this
project's 2-core machines: the llama.cpp build with LLAVA_BUILD=OFF on quiet cores (.ci/run's
setting), the whole `python -m pytest` under `.ci/run` (README states both)."""
MINUTES = re.compile(r"(\d+)(?:\s*[–-]\s*\d+)?\s*(?:min\b|minutes?\b)")


def paragraphs() -> list[tuple[str, str]]:
    """Every paragraph of prose a reader meets, with where it is."""
    found: list[tuple[str, str]] = []

    def add(where: str, text: str) -> None:
        found.extend((where, p) for p in re.split(r"\n\s*\n|\n\s*#\s*\n", text) if p.strip())

    add("README.md", (ROOT / "README.md").read_text(encoding="utf-8"))
    for path in [ROOT / "pyproject.toml", ROOT / ".ci" / "run"]:  # each run of comment lines
        text = path.read_text(encoding="utf-8")
        for comment in re.findall(r"(?:^[ \t]*#.*\n)+", text, re.MULTILINE):
            add(path.name, comment)
    for path in [
        *ROOT.glob("docs/**/*.md"),
        *ROOT.glob("benchmarks/*.md"),
        *ROOT.glob("agentnb/**/*.py"),
    ]:
        add(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
    for path in ROOT.glob("notebooks/**/*.ipynb"):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                add(str(path.relative_to(ROOT)), "".join(cell["source"]))
    return found


def stated(fact: str) -> list[tuple[str, int]]:
    mentions, figure = FACTS[fact]
    return [
        (where, int(m.group(1)))
        for where, text in paragraphs()
        if mentions.search(text)
        for m in MINUTES.finditer(text)
    ]


@pytest.mark.parametrize("fact", sorted(FACTS))
def test_every_place_that_states_a_figure_states_the_same_one(fact: str):
    figures = stated(fact)
    assert figures, f"nothing states {fact} any more: keep it in README"
    assert any(where == "README.md" for where, _ in figures)
    assert {(w, n) for w, n in figures if n != FACTS[fact][1]} == set()


def test_the_check_finds_a_figure_that_disagrees():
    mentions, figure = FACTS["building llama-cpp-python"]
    text = "Installing it compiles llama.cpp (about 25 minutes on two cores)."
    assert mentions.search(text) and [int(m.group(1)) for m in MINUTES.finditer(text)] == [25]


def readme_tables() -> list[str]:
    """The untagged blocks of README's reproduce section: tables `reproduce` prints."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## Reproduce the reference measurements")
    section = text[start : text.index("\n## ", start + 1)]
    fences = re.findall(r"^```([\w-]*)\n(.*?)^```[ \t]*$", section, re.MULTILINE | re.DOTALL)
    return [body for lang, body in fences if lang == ""]


def test_readmes_cost_tables_are_what_reproduce_prints_now(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-m", "agentnb", "reproduce", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        },
    )
    assert done.returncode == 0, done.stderr[-2000:]
    printed = {line.strip() for line in done.stdout.splitlines()}
    tables = readme_tables()
    assert len(tables) == 2  # the first cost table and the breakdown by component
    for line in "\n".join(tables).splitlines():
        assert line.strip() in printed, f"README quotes a line reproduce no longer prints: {line!r}"
