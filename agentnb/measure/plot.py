"""Figures of the measurements (matplotlib). Each function returns a `Figure` and draws nothing else.

Figures are built with ``matplotlib.figure.Figure`` rather than pyplot, so they work headless
(Agg), hold no global state, and show once when a notebook cell returns them. Save one with
``fig.savefig("cost.png")``. Available as ``agentnb.plot.<name>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from .tables import COMPONENT_COLUMNS, breakdown, linear_fit
from .tool_sources import tool_sources

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

COMPONENT_LABELS = {
    "chars_in_system": "system prompts",
    "chars_in_tools": "tool specs (resent every turn)",
    "chars_in_user": "user input (sub-agents' input)",
    "chars_in_assistant": "earlier assistant text",
    "chars_in_tool_args": "tool arguments reread",
    "chars_in_tool_results": "tool results reread",
    "chars_in_framing": "JSON framing",
}
"""What each ``chars_in_<component>`` is, in words (legends and printed tables)."""

OUTCOME_COLORS = {"approved": "tab:green", "redo": "tab:orange"}


WIDTH = 8.5
"""Inches. At the 100 dpi a notebook shows a figure at, 850 px: JupyterLab (about 900 px wide)
shows it at its own size, so text is as large as the font sizes below say, never scaled down."""

TITLE_SIZE, LABEL_SIZE, TEXT_SIZE = 13.0, 11.0, 10.0
"""Points: titles, axis labels, and everything else (ticks, legends, notes); 10 pt is 14 px."""


def _figure(height: float = 4.2, rows: int = 1, width: float = WIDTH) -> tuple[Figure, list[Axes]]:
    from matplotlib.figure import Figure

    show_in_ipython()
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    for ax in axes:
        ax.tick_params(labelsize=TEXT_SIZE)
    return fig, list(axes)


def _labels(ax: Axes, x: str | None, y: str | None, title: str | None = None) -> None:
    if x is not None:
        ax.set_xlabel(x, fontsize=LABEL_SIZE)
    if y is not None:
        ax.set_ylabel(y, fontsize=LABEL_SIZE)
    if title:
        ax.set_title(title, fontsize=TITLE_SIZE)


def _legend_beside(ax: Axes, handles: Sequence[Any] | None = None, **kwargs: Any) -> None:
    """The legend outside the axes, on the right, so it never covers what is drawn."""
    if handles is not None:
        kwargs["handles"] = handles
    ax.legend(
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
        fontsize=TEXT_SIZE,
        **kwargs,
    )


def show_in_ipython(shell: Any = None) -> None:
    """Let IPython show a `Figure` a cell returns as an image.

    pyplot's inline backend registers that formatter when pyplot is imported; these figures are
    built without pyplot, so in a fresh kernel a returned figure would show only as
    ``<Figure size ...>``. Does nothing outside IPython or when a formatter is already there.
    """
    import sys

    if shell is None:
        if "IPython" not in sys.modules:
            return
        from IPython import get_ipython

        shell = get_ipython()
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None)
    if not formatters or "image/png" not in formatters:
        return
    from matplotlib.figure import Figure

    png = formatters["image/png"]
    if Figure in png.type_printers:
        return
    from IPython.core.pylabtools import print_figure

    png.for_type(
        Figure,
        lambda fig: print_figure(  # type: ignore[no-untyped-call]
            fig, "png", bbox_inches="tight"
        ),
    )


def _integer_ticks(ax: Axes) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def config_labels(table: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """A short label per configuration row: ``generalist``, ``inline k=3``."""
    import pandas as pd

    labels = []
    for _, row in table.iterrows():
        parts = []
        for key in keys:
            value = row[key]
            if value is None or (not isinstance(value, str) and pd.isna(value)):
                continue
            if isinstance(value, str):
                parts.append(value)
            else:
                shown = int(value) if float(value).is_integer() else value
                parts.append(f"{key}={shown}")
        labels.append(" ".join(parts) or "baseline")
    return labels


def multiplier(
    table: pd.DataFrame,
    x: str = "k",
    y: str = "multiplier",
    by: Sequence[str] | None = None,
    *,
    title: str | None = "Characters sent against the baseline",
) -> Figure:
    """``y`` (a `cost_table`'s multiplier) against ``x`` (sub-agents), one series per group of
    the other configuration columns, each with its least-squares line; the baseline at 1x."""
    import pandas as pd

    if x not in table.columns or y not in table.columns:
        raise UserError(f"multiplier() needs columns {x!r} and {y!r}: pass a cost_table(...)")
    keys = list(by) if by is not None else [k for k in table.attrs.get("params", []) if k != x]
    fits = linear_fit(table, x, [y], keys)
    # The fit is labelled in characters, as the printed tables say it, when the table has them.
    in_chars = y == "multiplier" and "chars_in" in table.columns
    slopes = linear_fit(table, x, ["chars_in"], keys)["slope"] if in_chars else fits["slope"]
    fig, (ax,) = _figure()
    points = table.assign(_x=pd.to_numeric(table[x], errors="coerce"))
    points = points[points["_x"].notna()]
    groups = points.groupby(keys, sort=False, dropna=False) if keys else [((), points)]
    for (name, part), (_, fit), slope in zip(groups, fits.iterrows(), slopes):
        label = " ".join(str(v) for v in (name if isinstance(name, tuple) else (name,))) or y
        (dots,) = ax.plot(part["_x"], part[y], "o", label=label, gid=f"points:{label}")
        xs = [float(part["_x"].min()), float(part["_x"].max())]
        line = [fit["slope"] * v + fit["intercept"] for v in xs]
        ax.plot(
            xs,
            line,
            "-",
            color=dots.get_color(),
            alpha=0.6,
            gid=f"fit:{label}",
            label=_fit_label(slope, in_chars, y, x),
        )
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1, gid="baseline", label="baseline")
    _integer_ticks(ax)
    _labels(
        ax,
        "sub-agents (k)" if x == "k" else x,
        "characters sent (× the baseline)" if y == "multiplier" else y,
        title,
    )
    _legend_beside(ax)
    return fig


def _fit_label(slope: float, in_chars: bool, y: str, x: str) -> str:
    per = "sub-agent" if x == "k" else x
    if in_chars:
        return f"fit: {slope:+,.0f} characters per {per}"
    return f"fit: {slope:+.2f} {y} per {per}"


AGENT_ALPHA = 0.15
"""The timeline's light shade: an agent's whole run, behind its solid model calls."""


def timeline(
    *runs: Any,
    labels: Sequence[str] | None = None,
    title: str | None = "When each agent worked and called its model",
) -> Figure:
    """A Gantt chart of each run's spans: one row per agent (path), a bar per model call,
    a light bar for each agent's whole run (the key under the chart says which is which).
    Several runs (e.g. a parallel and a serial review) are drawn one above the other on a
    shared time axis, each titled by its label.

    A run is a `RunResult`, a fan-out (``.results``: branches drawn together, on one clock),
    a `verify_loop` result (its rounds) or a list of results (one after another).
    """
    if not runs:
        raise UserError("timeline() needs at least one run")
    if labels is not None and len(labels) != len(runs):
        raise UserError(f"{len(labels)} labels for {len(runs)} runs")
    fig, axes = _figure(1.9 + 1.7 * len(runs), rows=len(runs))
    for n, (run, ax) in enumerate(zip(runs, axes)):
        placed = _placed(run)
        rows = list(dict.fromkeys(s.path for s, _ in placed if s.kind in ("agent", "model_call")))
        colors = {p: f"C{i % 10}" for i, p in enumerate(rows)}
        for kind, height, alpha in (("agent", 0.8, AGENT_ALPHA), ("model_call", 0.5, 1.0)):
            for span, start in placed:
                if span.kind == kind:
                    ax.barh(
                        rows.index(span.path),
                        span.duration or 0.0,
                        left=start,
                        height=height,
                        color=colors[span.path],
                        alpha=alpha,
                        gid=f"{kind}:{span.path}",
                    )
        ax.set_yticks(range(len(rows)), rows)
        ax.invert_yaxis()
        ax.set_ylabel("agent", fontsize=LABEL_SIZE)
        ax.set_title(labels[n] if labels is not None else _run_label(run), fontsize=LABEL_SIZE)
    axes[-1].set_xlabel("time since the start (s)", fontsize=LABEL_SIZE)
    if title:
        fig.suptitle(title, fontsize=TITLE_SIZE)
    fig.legend(
        handles=_timeline_key(),
        loc="outside lower center",
        ncols=2,
        fontsize=TEXT_SIZE,
        frameon=False,
    )
    return fig


def _timeline_key() -> list[Any]:
    from matplotlib.patches import Patch

    return [
        Patch(facecolor="grey", alpha=AGENT_ALPHA, label="agent at work (its whole run)"),
        Patch(facecolor="grey", alpha=1.0, label="model call (one bar per call)"),
    ]


def _placed(run: Any) -> list[tuple[Any, float]]:
    """(span, start) pairs, every trace of ``run`` placed on one clock (the earliest is zero)."""
    traces = list({id(t): t for t in _traces(run)}.values())
    if not traces:
        raise UserError(f"Nothing to draw: {type(run).__name__} has no trace")
    zero = min(_t0(t) for t in traces)
    return [(s, s.started + _t0(t) - zero) for t in traces for s in t.spans]


def _traces(run: Any) -> list[Any]:
    if isinstance(run, (list, tuple)):  # one after another: their clocks keep them apart
        return [t for item in run for t in _traces(item)]
    trace = getattr(run, "trace", None)
    if trace is not None:
        return [trace]
    branches = getattr(run, "results", None)
    if isinstance(branches, dict):
        return [t for r in branches.values() for t in _traces(r)]
    rounds = getattr(run, "rounds", None)  # a verify_loop: writer and verifier, round by round
    if isinstance(rounds, list):
        runs = [
            x for r in rounds for x in (getattr(r, "writer", None), getattr(r, "verifier", None))
        ]
        return [t for x in runs if x is not None for t in _traces(x)]
    return []


def _t0(trace: Any) -> float:
    t0 = getattr(trace, "t0", None)
    return float(t0) if t0 is not None else trace.started_at.timestamp()


def _run_label(run: Any) -> str:
    if isinstance(run, (list, tuple)):
        return f"{_count(len(run), 'run', 'runs')} in sequence"
    if hasattr(run, "results") and not hasattr(run, "trace"):
        return f"{_count(len(run.results), 'branch', 'branches')} in parallel"
    return f"run {getattr(run, 'run_id', '')}".strip()


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def verifier_rounds(rounds: Any, *, title: str | None = "Verifier rounds") -> Figure:
    """Characters sent per round, coloured by outcome, with the problems written above each bar."""
    import pandas as pd

    from .rounds import verifier_table

    table = rounds if isinstance(rounds, pd.DataFrame) else verifier_table(rounds)
    fig, (ax,) = _figure()
    for _, row in table.iterrows():
        color = OUTCOME_COLORS.get(str(row["outcome"]), "tab:grey")
        height = 0.0 if pd.isna(row["chars_in"]) else float(row["chars_in"])
        ax.bar(
            int(row["round"]),
            height,
            color=color,
            gid=f"round:{int(row['round'])}",
            label=str(row["outcome"]),
        )
        note = "; ".join(row["problems"]) if row["problems"] else str(row["outcome"])
        ax.annotate(note, (int(row["round"]), height), ha="center", va="bottom", fontsize=TEXT_SIZE)
    ax.set_xticks(list(table["round"]), [f"round {int(r)}" for r in table["round"]])
    _labels(ax, "round of the writer–verifier cycle", "characters sent in the round", title)
    handles, names = ax.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    _legend_beside(ax, list(unique.values()), labels=list(unique.keys()), title="verdict")
    ax.margins(y=0.15)
    return fig


def cost_breakdown(
    data: Any,
    by: str | Sequence[str] | None = None,
    *,
    title: str | None = "Why it costs: characters sent, by component",
) -> Figure:
    """Stacked bars: characters sent per configuration, split by component (`breakdown`)."""
    import pandas as pd

    table = data if _is_breakdown(data) else breakdown(data, by)
    keys = (
        list(table.attrs.get("params", []))
        if by is None
        else ([by] if isinstance(by, str) else list(by))
    )
    labels = config_labels(table, keys)
    fig, (ax,) = _figure(4.8)
    bottom = pd.Series(0.0, index=table.index)
    positions = list(range(len(table)))
    for i, column in enumerate(COMPONENT_COLUMNS):
        values = table[column].astype(float)
        if not values.any():  # a component no configuration sent is left out of the legend too
            continue
        ax.bar(
            positions,
            values,
            bottom=bottom,
            color=f"C{i}",
            gid=f"component:{column}",
            label=COMPONENT_LABELS[column],
        )
        bottom = bottom + values
    ax.set_xticks(positions, labels, rotation=35, ha="right", rotation_mode="anchor")
    _labels(ax, "configuration", "characters sent per run", title)
    # Listed top to bottom as the components are stacked.
    handles, names = ax.get_legend_handles_labels()
    _legend_beside(ax, handles[::-1], labels=names[::-1], title="component")
    return fig


def tool_specs(
    results: Mapping[Any, Any],
    x: str = "tools",
    unit: str = "chars",
    *,
    title: str | None = "What attached tools add to every model call",
) -> Figure:
    """What each model call carries against the tools attached to the agent (``x="tools"``) or
    the MCP servers (``x="servers"``): the tool specs' part, with its least-squares line, and
    everything sent. ``results``: a dict ``label -> RunResult``, one run per configuration;
    ``unit``: ``"chars"`` or ``"tokens"`` (counted by the calls' tokenizer, see `tool_sources`)."""
    import pandas as pd

    if x not in ("tools", "servers") or unit not in ("chars", "tokens"):
        raise UserError(
            f"tool_specs() takes x='tools' or 'servers' and unit='chars' or 'tokens', "
            f"got x={x!r}, unit={unit!r}"
        )
    if not isinstance(results, Mapping) or not results:
        raise UserError(
            "tool_specs() takes a dict label -> RunResult (one run per number of tools), "
            f"got {type(results).__name__}"
        )
    sources = tool_sources(results)
    column, sent = f"{unit}_per_call", f"{unit}_in"
    rows = []
    for label, result in results.items():
        mine = sources[sources["label"] == label]
        calls = result.calls
        rows.append(
            {
                "x": int(mine["tools"].sum()) if x == "tools" else len(mine),
                "specs": float(pd.to_numeric(mine[column]).sum()),
                "sent": float(pd.to_numeric(calls[sent]).mean()) if len(calls) else 0.0,
            }
        )
    points = pd.DataFrame.from_records(rows).sort_values("x")
    fig, (ax,) = _figure()
    ax.plot(points["x"], points["sent"], "s-", color="grey", gid="sent", label="everything sent")
    (dots,) = ax.plot(points["x"], points["specs"], "o", gid="specs", label="tool specs")
    if points["x"].nunique() > 1:
        fit = linear_fit(points, "x", ["specs"]).iloc[0]
        xs = [float(points["x"].min()), float(points["x"].max())]
        ax.plot(
            xs,
            [fit["slope"] * v + fit["intercept"] for v in xs],
            "-",
            color=dots.get_color(),
            alpha=0.6,
            gid="fit",
            label=f"fit: {fit['slope']:+,.0f} {_UNITS[unit]} per {x[:-1]}",
        )
    _integer_ticks(ax)
    _labels(ax, f"{x} attached", f"{_UNITS[unit]} per model call", title)
    _legend_beside(ax)
    return fig


_UNITS = {"chars": "characters", "tokens": "tokens"}


def _is_breakdown(data: Any) -> bool:
    import pandas as pd

    return (
        isinstance(data, pd.DataFrame)
        and "span_id" not in data.columns
        and all(c in data.columns for c in COMPONENT_COLUMNS)
    )


def latency(
    series: pd.DataFrame,
    x: str = "n",
    mode: str | None = "mode",
    *,
    title: str | None = "Wall time against branches",
    bounds: Mapping[str, str] | None = None,
) -> Figure:
    """Wall time per mode against ``x`` (a `latency_series`), each with its critical-path bound
    dashed and, for streamed runs, the mean time to a call's first token dotted.

    ``bounds`` names a mode's dashed line when "critical path" would mislead the reader: a run
    whose calls wait on one another has the sum of its calls as its critical path, and a table
    beside the figure may call it that (``{"serial": "sum of calls"}``). Each line's label is
    the quantity it draws, in the words of the table it goes with."""
    fig, (ax,) = _figure()
    groups = series.groupby(mode, sort=False) if mode else [("runs", series)]
    named = dict(bounds or {})
    for name, part in groups:
        (line,) = ax.plot(
            part[x], part["wall_s"], "o-", label=f"{name}: wall time", gid=f"wall:{name}"
        )
        ax.plot(
            part[x],
            part["critical_s"],
            "--",
            color=line.get_color(),
            alpha=0.7,
            label=f"{name}: {named.get(str(name), 'critical path')}",
            gid=f"critical:{name}",
        )
        if "ttft_s" in part and part["ttft_s"].notna().any():
            ax.plot(
                part[x],
                part["ttft_s"],
                ":",
                color=line.get_color(),
                alpha=0.7,
                label=f"{name}: first token (mean per call)",
                gid=f"ttft:{name}",
            )
    _integer_ticks(ax)
    _labels(ax, "branches (n)" if x == "n" else x, "wall time (s)", title)
    ax.set_ylim(bottom=0)
    _legend_beside(ax)
    return fig
