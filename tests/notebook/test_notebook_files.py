"""What the committed notebooks hold: every widget output carries its static snapshot (so a
saved notebook shows it without a kernel), every teaching notebook ends with an exercise whose
check prints a hint while unset, and each has a solved version under notebooks/solutions/ (run
under nbval like the rest)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
TEACHING = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
VIEW = "application/vnd.jupyter.widget-view+json"


def cells(path: Path) -> list[dict]:
    return list(json.loads(path.read_text(encoding="utf-8"))["cells"])


def source(cell: dict) -> str:
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


def test_the_teaching_notebooks_are_found() -> None:
    assert len(TEACHING) >= 8


@pytest.mark.parametrize("path", TEACHING, ids=lambda p: p.stem)
def test_every_widget_output_carries_a_static_snapshot(path: Path) -> None:
    for cell in cells(path):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if VIEW in data:
                html = data.get("text/html", "")
                html = html if isinstance(html, str) else "".join(html)
                assert html.startswith("<!-- agentnb snapshot -->"), (
                    f"{path.name}: a widget output without its snapshot: {source(cell)[:60]!r}"
                )


@pytest.mark.parametrize("path", TEACHING, ids=lambda p: p.stem)
def test_each_teaching_notebook_ends_with_an_exercise_and_has_its_solution(path: Path) -> None:
    *_, answer, check = cells(path)
    assert re.match(r"answer = (\w+ = )*None", source(answer))
    assert "if answer is None:" in source(check) and "assert " in source(check)
    # Unset, the check prints its hint (so nbval and the browser test run clean).
    printed = "".join("".join(o.get("text", "")) for o in check["outputs"])
    assert printed.startswith("Hint: ")
    assert not [o for c in cells(path) for o in c.get("outputs", []) if o["output_type"] == "error"]

    solved = NOTEBOOKS / "solutions" / path.name
    assert solved.is_file(), f"no solved version of {path.name} in notebooks/solutions/"
    *_, solved_check = cells(solved)
    assert source(solved_check) == source(check)  # the same check, now passing
    printed = "".join("".join(o.get("text", "")) for o in solved_check["outputs"])
    assert printed.startswith("Right: ")


EVERY_NOTEBOOK = sorted(NOTEBOOKS.rglob("*.ipynb")) + sorted(
    (NOTEBOOKS.parent / "tests").rglob("*.ipynb")
)
DOLLAR_AMOUNT = re.compile(r"(?<!\\)\$(?=\s?\d)")
"""A ``$`` before a number that is not escaped: JupyterLab reads ``$18 ... $17`` as mathematics
(italic letters in between); ``\\$18`` or "USD 18" reads as money everywhere."""


def _unescaped_dollars(text: str) -> list[str]:
    text = re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.DOTALL)  # code shows as written
    return [text[max(0, m.start() - 30) : m.end() + 10] for m in DOLLAR_AMOUNT.finditer(text)]


def test_the_dollar_check_finds_amounts_and_only_them() -> None:
    assert len(_unescaped_dollars("That is $18.256 instead of $ 17.412")) == 2
    assert _unescaped_dollars(r"\$18.25, USD 17, $x$, `$5` and ```\n$6\n```") == []


@pytest.mark.parametrize("path", EVERY_NOTEBOOK, ids=lambda p: str(p.relative_to(NOTEBOOKS.parent)))
def test_no_markdown_cell_has_an_unescaped_dollar_before_a_number(path: Path) -> None:
    found = [
        (n, hit)
        for n, cell in enumerate(cells(path))
        if cell["cell_type"] == "markdown"
        for hit in _unescaped_dollars(source(cell))
    ]
    assert found == [], f"{path.name}: write \\$ or USD in cells (index, text) {found}"


SOLUTIONS = sorted((NOTEBOOKS / "solutions").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("path", TEACHING + SOLUTIONS, ids=lambda p: p.parent.name + "/" + p.stem)
def test_nbval_directives_are_cell_tags_a_reader_does_not_see(path: Path) -> None:
    for cell in cells(path):
        if cell["cell_type"] == "code":
            marked = re.findall(r"^\s*#\s*NBVAL_\w+", source(cell), re.MULTILINE)
            assert marked == [], (
                f"{path.name}: {marked[0].strip()} in a cell's code; use the cell tag "
                f"{marked[0].strip('# ').lower().replace('_', '-')!r} (metadata) instead"
            )
