"""``import agentnb`` never imports an integration's framework; the extras are declared."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FRAMEWORKS = ("agents", "opentelemetry", "pydantic_ai")


def test_import_agentnb_imports_no_framework():
    code = (
        "import sys, agentnb, agentnb.integrations\n"
        f"loaded = [m for m in {FRAMEWORKS!r} if m in sys.modules]\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == ""


def test_extras_pin_the_tested_openai_agents_range():
    tomllib = pytest.importorskip("tomllib")
    from agentnb.integrations import _sdk_patch

    project = tomllib.loads(Path(__file__).parents[2].joinpath("pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    assert extras["openai-agents"] == [f"openai-agents{_sdk_patch.TESTED}"]
    assert any(d.startswith("opentelemetry-sdk") for d in extras["otel"])
    dev = extras["dev"]
    for name in ("openai-agents", "opentelemetry-sdk", "pydantic-ai-slim"):
        assert any(d.startswith(name) for d in dev), name


def test_a_captured_row_has_the_call_columns_in_order():
    from agentnb.integrations._rows import call_row
    from agentnb.models.types import Usage
    from agentnb.trace import CALL_COLUMNS, Trace

    trace = Trace("r")
    span = trace.start("model_call", "m", None, agent="a", path="a", depth=0)
    trace.end(span)
    row = call_row(
        "r",
        span,
        model="m",
        turn=1,
        sizes=None,
        chars_out=None,
        tokens=(None, None, "unavailable"),
        usage=Usage(),
        tool_calls=0,
        stop_reason="stop",
        status="ok",
    )
    assert tuple(row.as_dict()) == CALL_COLUMNS
