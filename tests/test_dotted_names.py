"""Every dotted ``agentnb.x.y`` named in a docstring, a comment of the package, or a doc page
resolves: a module, or a name inside one (pydantic-ai tests its docs the same way). A name that
moved or no longer exists is a failing test, not a stale sentence."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOTTED = re.compile(r"(?<![\w./-])agentnb(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
SOURCES = [
    *sorted((ROOT / "agentnb").rglob("*.py")),
    *sorted((ROOT / "docs").rglob("*.md")),
    ROOT / "README.md",
]


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(value, name):
                return False
            value = getattr(value, name)
        return True
    return False


def _named() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in SOURCES:
        if "notebooks" in path.parts:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in DOTTED.finditer(line):
                name = match.group(0).rstrip(".")
                if name.endswith(("_py", ".py", ".md", ".ipynb", ".jsonl", ".toml")):
                    continue
                found.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{number}")
    return found


NOT_PYTHON = {
    # OpenTelemetry attribute keys agentnb writes on its spans (integrations/_otel_out.py)
    *(f"agentnb.{key}" for key in ("run_id", "span_id", "path", "depth", "status")),
    *(f"agentnb.{key}" for key in ("chars_in", "chars_in_system", "tokens_in")),
    "agentnb.db",  # the experiment store's default file name
}
NAMED = {name: where for name, where in _named().items() if name not in NOT_PYTHON}


def test_the_scan_finds_the_names_it_should():
    assert "agentnb.runtime" in NAMED and len(NAMED) > 20


@pytest.mark.parametrize("dotted", sorted(NAMED))
def test_a_dotted_name_in_the_docs_resolves(dotted):
    assert _resolves(dotted), f"{dotted} (named at {', '.join(NAMED[dotted][:3])}) does not resolve"
