"""`agentnb.plot.tool_specs`: what attached tools add to every call, against their number,
from what agent spans record (``attrs["tool_sources"]``, as `agentnb.tool_sources` reads it)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

import agentnb
from agentnb.errors import UserError


def run(tools: int, calls: int = 2) -> SimpleNamespace:
    """A run whose agent had one server of ``tools`` tools of 100 characters (25 tokens) each."""
    weight = {"tools": tools, "chars": 100 * tools, "tokens": 25 * tools, "tokens_method": "t"}
    span = SimpleNamespace(kind="agent", span_id="a", attrs={"tool_sources": {"mcp:s": weight}})
    frame = pd.DataFrame(
        {
            "parent_id": ["a"] * calls,
            "chars_in": [100 * tools + 500] * calls,
            "tokens_in": [25 * tools + 120] * calls,
        }
    )
    return SimpleNamespace(spans=[span], calls=frame)


def test_tool_specs_draws_the_specs_part_its_fit_and_everything_sent():
    fig = agentnb.plot.tool_specs({n: run(n) for n in (0, 5, 10, 20)})
    (ax,) = fig.axes
    lines = {line.get_gid(): line for line in ax.get_lines()}
    assert list(lines["specs"].get_xdata()) == [0, 5, 10, 20]
    assert list(lines["specs"].get_ydata()) == [0.0, 500.0, 1000.0, 2000.0]
    assert list(lines["sent"].get_ydata()) == [500.0, 1000.0, 1500.0, 2500.0]
    assert lines["fit"].get_label() == "fit: +100 characters per tool"
    assert ax.get_ylabel() == "characters per model call"


def test_tool_specs_in_tokens_and_by_server():
    fig = agentnb.plot.tool_specs({n: run(n) for n in (1, 3)}, unit="tokens")
    lines = {line.get_gid(): line for line in fig.axes[0].get_lines()}
    assert list(lines["specs"].get_ydata()) == [25.0, 75.0]
    assert lines["fit"].get_label() == "fit: +25 tokens per tool"
    by_server = agentnb.plot.tool_specs({"one": run(4)}, x="servers")
    lines = {line.get_gid(): line for line in by_server.axes[0].get_lines()}
    assert list(lines["specs"].get_xdata()) == [1] and "fit" not in lines


def test_tool_specs_says_what_it_takes():
    with pytest.raises(UserError, match="unit='chars' or 'tokens'"):
        agentnb.plot.tool_specs({1: run(1)}, unit="words")
    with pytest.raises(UserError, match="dict label -> RunResult"):
        agentnb.plot.tool_specs([run(1)])
