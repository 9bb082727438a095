"""agentnb.plot: each function returns a Figure; check its axes, labels and the data drawn."""

from __future__ import annotations

import subprocess
import sys

import pytest
from matplotlib.figure import Figure

import agentnb as a
from agentnb.measure.sweeps import sweep
from agentnb.measure.tables import (
    COMPONENT_COLUMNS,
    breakdown,
    cost_fit,
    cost_table,
    latency_series,
)
from agentnb.patterns import parallel
from agentnb.plot import (
    COMPONENT_LABELS,
    cost_breakdown,
    latency,
    multiplier,
    timeline,
    verifier_rounds,
)

NOTEBOOK_WIDTH_PX = 900
"""What JupyterLab gives an output at a usual window size; a wider image is scaled down."""

SMALLEST_POINTS = 10.0
"""Smallest text agentnb draws: 14 px at the 100 dpi a notebook shows figures at."""


def assert_readable(fig: Figure) -> None:
    """Checks on matplotlib's own artists (not pixels), after a real draw: the figure fits a
    notebook without being scaled down, every text is at least 10 pt, each axes has labels and
    the figure a title, every legend lies inside the figure and covers no axes (so no data)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    assert fig.dpi == 100
    assert fig.get_figwidth() * fig.dpi <= NOTEBOOK_WIDTH_PX
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    small = {t.get_text(): t.get_fontsize() for t in texts if t.get_fontsize() < SMALLEST_POINTS}
    assert not small, f"text smaller than {SMALLEST_POINTS} pt: {small}"
    titles = [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
    assert any(titles)
    for ax in fig.axes:
        assert ax.get_ylabel()
    assert fig.axes[-1].get_xlabel()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    assert legends, "no legend"
    whole = fig.bbox
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert (
            whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0 and box.y1 <= whole.y1
        )
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), "the legend covers the data"


async def hierarchy(mode: str, k: int | None = None) -> a.RunResult:
    if k is None:
        return await a.run(
            a.Agent("generalist", "Assess.", a.ScriptedModel(["ok"])), "clause " * 50
        )
    subs = [a.Agent(f"r{i}", "Review.", a.ScriptedModel(["opinion"])) for i in range(k)]
    if mode == "inline":
        plan = [a.tool_call(f"r{i}", input="clause " * 50) for i in range(k)]
    else:
        plan = [a.tool_call(f"r{i}", input="Review.", artifacts=["input"]) for i in range(k)]
    coordinator = a.Agent("c", "Consult.", a.ScriptedModel([plan, "done"]), subs)
    return await a.run(coordinator, "clause " * 50)


@pytest.fixture
async def calls():
    grid = [{"mode": "generalist"}] + [
        {"mode": m, "k": k} for m in ("inline", "handle") for k in (1, 2, 3)
    ]
    return await sweep(hierarchy, grid, progress=False)


def _gids(ax, prefix):
    return [x for x in [*ax.lines, *ax.patches] if (x.get_gid() or "").startswith(prefix)]


async def test_multiplier_draws_points_and_the_fit_for_each_mode(calls):
    table = cost_table(calls)
    fig = multiplier(table)

    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_xlabel() == "sub-agents (k)"
    assert ax.get_ylabel() == "characters sent (× the baseline)"
    inline = table[table["mode"] == "inline"]
    (points,) = _gids(ax, "points:inline")
    assert list(points.get_xdata()) == [1, 2, 3]
    assert list(points.get_ydata()) == inline["multiplier"].tolist()
    (fit,) = _gids(ax, "fit:inline")
    # scripted runs grow exactly linearly: the fit passes through the first and last points
    assert fit.get_ydata() == pytest.approx(
        [inline["multiplier"].iloc[0], inline["multiplier"].iloc[-1]]
    )
    assert len(_gids(ax, "points:")) == len(_gids(ax, "fit:")) == 2
    (baseline,) = _gids(ax, "baseline")
    assert list(baseline.get_ydata()) == [1.0, 1.0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0] == "inline" and labels[-1] == "baseline"
    # The fit is said in characters, as the printed tables say it, not in multiplier units.
    slope = cost_fit(table).set_index("mode").loc["inline", "slope"]
    assert labels[1] == f"fit: {slope:+,.0f} characters per sub-agent"
    assert_readable(fig)


async def test_cost_breakdown_stacks_the_components_per_configuration(calls):
    fig = cost_breakdown(calls)
    (ax,) = fig.axes
    table = breakdown(calls)

    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == [
        "generalist",
        "inline k=1",
        "inline k=2",
        "inline k=3",
        "handle k=1",
        "handle k=2",
        "handle k=3",
    ]
    assert ax.get_ylabel() == "characters sent per run"
    assert ax.get_xlabel() == "configuration"
    drawn = [c for c in COMPONENT_COLUMNS if table[c].any()]
    assert "chars_in_assistant" not in drawn  # nothing was sent in it: neither drawn nor listed
    for column in COMPONENT_COLUMNS:
        bars = _gids(ax, f"component:{column}")
        expected = table[column].tolist() if column in drawn else []
        assert [b.get_height() for b in bars] == expected
    tops = [
        max(
            b.get_y() + b.get_height()
            for b in ax.patches
            if b.get_x() < x < b.get_x() + b.get_width()
        )
        for x in range(len(table))
    ]
    assert tops == table["chars_in"].tolist()  # the stack's top is the total sent
    # The legend lists what is drawn, top to bottom as the stack.
    listed = [t.get_text() for t in ax.get_legend().get_texts()]
    assert listed == [COMPONENT_LABELS[c] for c in reversed(drawn)]
    assert_readable(fig)


async def test_cost_breakdown_of_many_configurations_stays_readable(calls):
    """Notebook 04 compares 13 configurations: the figure keeps its width, so a notebook
    shows it at its own size rather than shrinking its text."""
    many = await sweep(
        hierarchy,
        [{"mode": "generalist"}]
        + [{"mode": m, "k": k} for m in ("inline", "handle") for k in (1, 2, 3, 4, 5, 6)],
        progress=False,
    )
    fig = cost_breakdown(many)
    assert len(fig.axes[0].get_xticklabels()) == 13
    assert_readable(fig)


async def test_timeline_shows_a_parallel_and_a_serial_run_side_by_side():
    def team():
        return {
            n: a.Agent(n, "Review.", a.ScriptedModel(["ok"], latency=0.01))
            for n in ("legal", "tax")
        }

    together = await parallel(team(), "clause")
    one_by_one = await parallel(team(), "clause", max_concurrency=1)
    fig = timeline(together, one_by_one, labels=["parallel", "serial"])

    top, bottom = fig.axes
    assert [top.get_title(), bottom.get_title()] == ["parallel", "serial"]
    assert fig.get_suptitle() == "When each agent worked and called its model"
    assert bottom.get_xlabel() == "time since the start (s)" and top.get_ylabel() == "agent"
    # The key names the two shades: the light bar of an agent's run, the solid model call.
    (key,) = fig.legends
    assert [t.get_text() for t in key.get_texts()] == [
        "agent at work (its whole run)",
        "model call (one bar per call)",
    ]
    (shade, solid) = key.legend_handles
    (agent_bar, *_) = _gids(top, "agent:")
    (call_bar, *_) = _gids(top, "model_call:")
    assert shade.get_alpha() == agent_bar.get_alpha() and solid.get_alpha() == call_bar.get_alpha()
    assert_readable(fig)
    assert [t.get_text() for t in top.get_yticklabels()] == ["legal", "tax"]
    for ax, run in ((top, together), (bottom, one_by_one)):
        bars = _gids(ax, "model_call:")
        spans = [s for r in run.results.values() for s in r.spans if s.kind == "model_call"]
        assert sorted(b.get_width() for b in bars) == sorted(s.duration for s in spans)
        assert len(_gids(ax, "agent:")) == 2

    # serial: tax's call starts after legal's ends; parallel: they overlap
    def starts_ends(ax):
        (legal,), (tax,) = _gids(ax, "model_call:legal"), _gids(ax, "model_call:tax")
        return legal.get_x() + legal.get_width(), tax.get_x()

    legal_end, tax_start = starts_ends(bottom)
    assert tax_start >= legal_end
    legal_end, tax_start = starts_ends(top)
    assert tax_start < legal_end


async def test_timeline_of_a_hierarchy_has_a_row_per_agent_path():
    result = await hierarchy("inline", 2)
    (ax,) = timeline(result).axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["c", "c/r0", "c/r1"]
    assert len(_gids(ax, "model_call:c")) == 4  # two coordinator turns + two reviewers (prefix c)
    assert len(_gids(ax, "model_call:c/")) == 2
    with pytest.raises(a.UserError, match="labels"):
        timeline(result, labels=["a", "b"])


def test_verifier_rounds_colours_by_outcome_and_names_the_problems():
    rounds = [
        {
            "draft": "long",
            "outcome": "redo",
            "problems": ["15 words, the limit is 12"],
            "chars_in": 900,
        },
        {"draft": "short", "outcome": "approved", "problems": [], "chars_in": 1_000},
    ]
    (ax,) = verifier_rounds(rounds).axes
    first, second = _gids(ax, "round:")
    assert (first.get_height(), second.get_height()) == (900, 1_000)
    assert first.get_facecolor() != second.get_facecolor()
    assert [t.get_text() for t in ax.texts] == ["15 words, the limit is 12", "approved"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["round 1", "round 2"]
    assert ax.get_ylabel() == "characters sent in the round"
    assert ax.get_xlabel() == "round of the writer–verifier cycle"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["redo", "approved"]
    assert_readable(ax.figure)


async def test_latency_draws_wall_time_and_bound_per_mode():
    async def fn(mode: str, n: int):
        team = {
            f"r{i}": a.Agent(f"r{i}", "R.", a.ScriptedModel(["ok"], latency=0.005))
            for i in range(n)
        }
        return await parallel(team, "x", max_concurrency=None if mode == "parallel" else 1)

    series = latency_series(
        await sweep(fn, {"mode": ["parallel", "serial"], "n": [1, 2, 3]}, progress=False)
    )
    fig = latency(series)
    (ax,) = fig.axes

    assert ax.get_xlabel() == "branches (n)" and ax.get_ylabel() == "wall time (s)"
    assert_readable(fig)
    (wall,) = _gids(ax, "wall:serial")
    assert list(wall.get_xdata()) == [1, 2, 3]
    assert list(wall.get_ydata()) == series.loc[series["mode"] == "serial", "wall_s"].tolist()
    (bound,) = _gids(ax, "critical:parallel")
    assert (
        list(bound.get_ydata()) == series.loc[series["mode"] == "parallel", "critical_s"].tolist()
    )
    assert len(ax.lines) == 4
    assert [line.get_label() for line in ax.lines] == [
        "parallel: wall time",
        "parallel: critical path",
        "serial: wall time",
        "serial: critical path",
    ]
    # Named as the table beside it names them: serial calls' critical path is their sum.
    named = latency(series, bounds={"serial": "sum of calls"}).axes[0]
    assert [line.get_label() for line in named.lines][1::2] == [
        "parallel: critical path",
        "serial: sum of calls",
    ]


def test_import_agentnb_does_not_load_matplotlib():
    code = (
        "import sys, agentnb; assert 'matplotlib' not in sys.modules; "
        "agentnb.plot.multiplier; assert 'matplotlib' not in sys.modules; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr
