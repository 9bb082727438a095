"""A run as HTML or text: its answer, a collapsible tree of agents and tool calls, what it cost.

Pure string building from the trace (no IPython, no widgets), so a `RunResult` renders itself
in plain Python: `RunResult._repr_html_` and ``_repr_pretty_`` call `result_html` and
`result_text`, and a `FanOut` calls `fanout_html` and `fanout_text`. Both are
deterministic so that nbval can compare them: no run ids, span ids or clock times appear,
and every duration is written ``0.123 s`` (three decimals, in a
``<span class="agentnb-latency">`` in HTML) so that the one rule in `SANITIZE_RULES`
(shipped as ``notebooks/nbval_sanitize.cfg``) makes two runs of the same notebook compare equal.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any, Protocol

from ..words import plural
from .calls import CallRow
from .span_tree import Node, build, count, describe, seconds, walk
from .spans import Span, Trace


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class RenderedRun(Protocol):
    """What rendering reads of a run: `agentnb.RunResult` has it. Declared here so that this
    layer names no type of the runtime above it."""

    @property
    def output(self) -> Any: ...
    @property
    def ok(self) -> bool: ...
    @property
    def error(self) -> BaseException | None: ...
    @property
    def partial(self) -> str | None: ...
    @property
    def path(self) -> str | None: ...
    @property
    def trace(self) -> Trace: ...
    @property
    def last_agent(self) -> _Named | None: ...
    @property
    def model_calls(self) -> int: ...
    @property
    def chars_in(self) -> int: ...
    @property
    def final_text(self) -> str: ...


LATENCY_REGEX = r"\d+\.\d{3} s\b"
"""Every duration agentnb's displays print matches this (and nothing else they print does)."""

SNAPSHOT_REGEX = r"(?s)<!-- agentnb snapshot -->.*?<!-- /agentnb snapshot -->"
"""One static snapshot of a notebook widget's state (`agentnb.notebook`'s widgets put it beside
their view), markers included: nbval sees a widget's first display, the saved notebook its last,
so the sanitize file reduces each to its marker."""

SANITIZE_RULES: tuple[tuple[str, str], ...] = (
    (LATENCY_REGEX, "0.000 s"),
    (SNAPSHOT_REGEX, "<!-- agentnb snapshot -->"),
)
"""``(regex, replacement)`` pairs for nbval's ``--nbval-sanitize-with`` file."""

_CSS = """<style>
.agentnb-result{font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;line-height:1.45}
.agentnb-result .agentnb-head{font-weight:600;margin-bottom:4px}
.agentnb-result .agentnb-ok{color:#1a7f37}.agentnb-result .agentnb-bad{color:#cf222e}
.agentnb-result pre.agentnb-output{white-space:pre-wrap;max-height:24em;overflow:auto;
 background:rgba(127,127,127,.08);padding:6px 8px;margin:4px 0}
.agentnb-result .agentnb-error{border-left:3px solid #cf222e;padding:4px 8px;margin:4px 0;
 background:rgba(207,34,46,.06);white-space:pre-wrap}
.agentnb-result ul{list-style:none;margin:0;padding-left:1.2em}.agentnb-result ul>li{list-style:none}
.agentnb-result summary{cursor:pointer}
.agentnb-result .agentnb-latency{color:#57606a;font-variant-numeric:tabular-nums}
.agentnb-result table{border-collapse:collapse;margin:4px 0}
.agentnb-result th,.agentnb-result td{padding:2px 8px;text-align:right;border-bottom:1px solid rgba(127,127,127,.25)}
.agentnb-result th:first-child,.agentnb-result td:first-child{text-align:left}
</style>"""


def result_html(result: RenderedRun) -> str:
    """A run as HTML: its answer (or its error), the trace tree, and a cost summary."""
    spans = _spans(result)
    parts = [_CSS, '<div class="agentnb-result">', _head_html(result, spans)]
    if result.ok:
        parts.append(f'<pre class="agentnb-output">{_esc(_output_text(result))}</pre>')
    else:
        parts.append(f'<div class="agentnb-error">{_esc(_error_text(result))}</div>')
        if result.partial:
            parts.append("<div>Partial answer before it stopped:</div>")
            parts.append(f'<pre class="agentnb-output">{_esc(result.partial)}</pre>')
    parts.append(tree_html(spans))
    parts.append(cost_html(_rows(result)))
    parts.append("</div>")
    return "\n".join(parts)


def result_text(result: RenderedRun) -> str:
    """A run as plain text for a terminal: the same content as `result_html`."""
    spans = _spans(result)
    lines = [_head_text(result, spans)]
    if result.ok:
        lines.append("output: " + _indent(_output_text(result)))
    else:
        lines.append("error: " + _indent(_error_text(result)))
        if result.partial:
            lines.append("partial: " + _indent(result.partial))
    lines.append("trace:")
    lines.extend(tree_lines(spans, indent=1))
    lines.append("cost:")
    lines.extend("  " + line for line in cost_lines(_rows(result)))
    return "\n".join(lines)


def fanout_html(fanout: Any) -> str:
    """A `FanOut` (``agentnb.parallel``) as HTML: one row per branch — missing ones with why —
    then each branch's answer and trace, collapsed."""
    rows = []
    for name in fanout.names:
        result = fanout.results[name]
        spans = _spans(result)
        why = fanout.missing.get(name)
        status = "ok" if why is None else why
        cls = "agentnb-ok" if why is None else "agentnb-bad"
        rows.append(
            f"<tr><td>{_esc(name)}</td><td class='{cls}'>{_esc(status)}</td>"
            f"<td>{result.model_calls:,}</td><td>{result.chars_in:,}</td>"
            f"<td>{_latency_html(_elapsed(spans))}</td></tr>"
        )
    table = (
        "<table><thead><tr><th>branch</th><th>status</th><th>model calls</th><th>chars in</th>"
        f"<th>took</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    ok, head = _fanout_head(fanout)
    cls = "agentnb-ok" if ok else "agentnb-bad"
    parts = [
        _CSS,
        '<div class="agentnb-result agentnb-fanout">',
        f'<div class="agentnb-head"><span class="{cls}">{_esc(head)}</span> · '
        f"{_latency_html(fanout.wall_s)}</div>",
        table,
    ]
    for name in fanout.names:
        result = fanout.results[name]
        answer = _output_text(result) if result.ok else _error_text(result)
        parts.append(
            f"<details><summary>{_esc(name)}</summary>"
            f'<pre class="agentnb-output">{_esc(answer)}</pre>{tree_html(_spans(result))}</details>'
        )
    parts.append("</div>")
    return "\n".join(parts)


def fanout_text(fanout: Any) -> str:
    """A `FanOut` as plain text: the branch table, then each branch's answer."""
    _, head = _fanout_head(fanout)
    lines = [f"FanOut {head} · {seconds(fanout.wall_s)}"]
    for name in fanout.names:
        result = fanout.results[name]
        why = fanout.missing.get(name)
        took = seconds(_elapsed(_spans(result)))
        state = "ok" if why is None else why
        lines.append(
            f"  {name}: {state} · {plural(result.model_calls, 'model call')} · "
            f"{result.chars_in:,} chars in · {took}"
        )
        if why is None:
            lines.append("    " + _output_text(result).replace("\n", "\n    "))
    return "\n".join(lines)


def _fanout_head(fanout: Any) -> tuple[bool, str]:
    answered = len(fanout.names) - len(fanout.missing)
    ok = not fanout.missing
    return ok, (
        f"{'✔' if ok else '✘'} {answered} of {len(fanout.names)} branches answered · "
        f"{plural(fanout.model_calls, 'model call')} · {fanout.chars_in:,} chars sent"
    )


# -- the trace tree -----------------------------------------------------------------------------


def tree_html(spans: Sequence[Span], *, title: str = "Trace") -> str:
    """Nested ``<details>``: agents open, tool calls that ran a sub-agent collapsible."""
    forest = build(spans)
    if not forest:
        return f"<details><summary>{_esc(title)}: no spans</summary></details>"
    body = "".join(_node_html(n, open_=True) for n in forest)
    return f'<details class="agentnb-tree" open><summary>{_esc(title)}</summary><ul>{body}</ul></details>'


def _node_html(node: Node, *, open_: bool) -> str:
    line = f"{_esc(describe(node))} · {_latency_html(node.span.duration)}"
    if not node.children:
        return f"<li>{line}</li>"
    inner = "".join(_node_html(c, open_=c.span.kind == "agent") for c in node.children)
    attr = " open" if open_ else ""
    return f"<li><details{attr}><summary>{line}</summary><ul>{inner}</ul></details></li>"


def tree_lines(spans: Sequence[Span], *, indent: int = 0) -> list[str]:
    """The trace tree as indented text lines."""
    return [
        "  " * (indent + depth) + f"{describe(node)} · {seconds(node.span.duration)}"
        for depth, node in walk(build(spans))
    ]


def _latency_html(value: float | None) -> str:
    return f'<span class="agentnb-latency">{seconds(value)}</span>'


# -- the cost summary ---------------------------------------------------------------------------

_COST_COLUMNS = ("agent", "model calls", "chars in", "chars out", "tokens in", "tokens out")


def cost_rows(
    rows: Sequence[CallRow],
) -> list[tuple[str, int, int, int, int | None, int | None]]:
    """Per agent path (in order of first call) and in total: calls, characters and tokens."""
    by_path: dict[str, list[CallRow]] = {}
    for row in sorted(rows, key=lambda r: r.started):
        by_path.setdefault(str(row.path), []).append(row)
    table = [_sum(path, group) for path, group in by_path.items()]
    if len(table) != 1:
        table.append(_sum("total", list(rows)))
    return table


def _sum(label: str, rows: list[CallRow]) -> tuple[str, int, int, int, int | None, int | None]:
    def tokens(key: str) -> int | None:
        values = [getattr(r, key) for r in rows]
        return (
            sum(v for v in values if isinstance(v, int))
            if any(isinstance(v, int) for v in values)
            else None
        )

    return (
        label,
        len(rows),
        sum(r.chars_in for r in rows),
        sum(r.chars_out for r in rows),
        tokens("tokens_in"),
        tokens("tokens_out"),
    )


def _tokens_note(rows: Sequence[CallRow]) -> str:
    methods = sorted({str(r.tokens_method) for r in rows if r.tokens_method})
    if not methods or methods == ["unavailable"]:
        return "Tokens not counted: no tokenizer is available (characters are exact)."
    provider = [r for r in rows if isinstance(r.provider_tokens_in, int)]
    note = f"Tokens counted with: {', '.join(methods)}."
    if provider:
        p_in = sum(r.provider_tokens_in or 0 for r in provider)
        p_out = sum(r.provider_tokens_out or 0 for r in provider)
        note += f" Provider-reported usage: {p_in:,} in / {p_out:,} out."
    return note


def cost_html(rows: Sequence[CallRow]) -> str:
    if not rows:
        return "<details><summary>Cost: no model calls</summary></details>"
    head = "".join(f"<th>{c}</th>" for c in _COST_COLUMNS)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{_esc(v if isinstance(v, str) else count(v))}</td>" for v in r)
        + "</tr>"
        for r in cost_rows(rows)
    )
    return (
        '<details class="agentnb-cost" open><summary>Cost</summary>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        f"<div>{_esc(_tokens_note(rows))}</div></details>"
    )


def cost_lines(rows: Sequence[CallRow]) -> list[str]:
    if not rows:
        return ["no model calls"]
    table = [list(_COST_COLUMNS)] + [
        [v if isinstance(v, str) else count(v) for v in r] for r in cost_rows(rows)
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(_COST_COLUMNS))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths))
        )
        for row in table
    ]
    return [*lines, _tokens_note(rows)]


# -- pieces -------------------------------------------------------------------------------------


def _spans(result: RenderedRun) -> list[Span]:
    result.trace.count_tokens()  # the tree shows each call's tokens on its span
    spans = list(result.trace.spans)
    if result.path is None:
        return spans
    prefix = result.path
    # The sub-agent's own spans; its agent span's parent (the caller's tool call) is left
    # out, so it becomes a root of the tree.
    return [s for s in spans if s.path == prefix or s.path.startswith(prefix + "/")]


def _rows(result: RenderedRun) -> list[CallRow]:
    rows = list(result.trace.call_rows)
    if result.path is None:
        return rows
    prefix = result.path
    return [r for r in rows if r.path == prefix or str(r.path).startswith(prefix + "/")]


def _elapsed(spans: Sequence[Span]) -> float | None:
    starts = [s.started for s in spans]
    ends = [s.ended for s in spans if s.ended is not None]
    return (max(ends) - min(starts)) if starts and ends else None


def _head(result: RenderedRun, spans: Sequence[Span]) -> tuple[bool, str, str]:
    agent = result.last_agent.name if result.last_agent is not None else "?"
    verdict = f"{agent} answered" if result.ok else f"{agent} did not finish"
    facts = f"{plural(result.model_calls, 'model call')} · {result.chars_in:,} chars sent"
    return result.ok, f"{'✔' if result.ok else '✘'} {verdict} · {facts}", seconds(_elapsed(spans))


def _head_html(result: RenderedRun, spans: Sequence[Span]) -> str:
    ok, text, took = _head(result, spans)
    cls = "agentnb-ok" if ok else "agentnb-bad"
    took_html = f'<span class="agentnb-latency">{took}</span>'
    return f'<div class="agentnb-head"><span class="{cls}">{_esc(text)}</span> · {took_html}</div>'


def _head_text(result: RenderedRun, spans: Sequence[Span]) -> str:
    _, text, took = _head(result, spans)
    return f"RunResult {text} · {took}"


def _output_text(result: RenderedRun) -> str:
    output = result.output
    if hasattr(output, "model_dump_json"):
        return str(output.model_dump_json(indent=2))
    if isinstance(output, (dict, list)):
        return json.dumps(output, indent=2, ensure_ascii=False, default=str)
    return result.final_text


def _error_text(result: RenderedRun) -> str:
    error = result.error
    return f"{type(error).__name__}: {error}" if error is not None else "failed"


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")


def _esc(value: object) -> str:
    return html.escape(str(value), quote=False)
