"""`TraceExplorer`: the span tree of a run as a list to click through, with the selected span's
numbers beside it — above all what a model call was sent, split by component, which is where
the cost of a hierarchy hides (tool schemas resent each turn, documents pasted as arguments).

ipywidgets has no tree widget; an indented `Select` is one, and needs no extra package.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..trace.span_tree import Node, build, count, describe, seconds, walk
from ..trace.spans import Trace
from ..words import plural
from ._snapshot import Snapshotted

if TYPE_CHECKING:
    from ..runtime import RunResult

SIZE_PARTS = (
    ("system prompt", "chars_in_system"),
    ("tool schemas", "chars_in_tools"),
    ("user input", "chars_in_user"),
    ("earlier assistant text", "chars_in_assistant"),
    ("tool-call arguments", "chars_in_tool_args"),
    ("tool results", "chars_in_tool_results"),
    ("framing", "chars_in_framing"),
)
"""The components of "characters sent", in the order `agentnb.trace.sizes` defines them."""


class TraceExplorer(Snapshotted, widgets.HBox):  # type: ignore[misc]  # ipywidgets is untyped
    """Click a span to see its sizes: ``TraceExplorer(result)`` (a `RunResult` or a `Trace`)."""

    def __init__(self, result: RunResult | Trace) -> None:
        trace: Trace = result.trace if not isinstance(result, Trace) else result
        self.trace = trace
        self.nodes: dict[str, Node] = {}
        self.rows = {r.span_id: r for r in trace.call_rows}
        trace.count_tokens()  # the tree shows each call's tokens on its span
        options: list[tuple[str, str]] = []
        for depth, node in walk(build(trace.spans)):
            self.nodes[node.span.span_id] = node
            options.append(("\u00a0\u00a0" * depth + _label(node), node.span.span_id))
        self.tree = widgets.Select(
            options=options,
            rows=min(max(len(options), 2), 18),
            layout=widgets.Layout(width="48%"),
        )
        self.detail = widgets.HTML(layout=widgets.Layout(width="50%"))
        self.tree.observe(self._on_select, names="value")
        super().__init__([self.tree, self.detail])
        self.add_class("agentnb-explorer")
        if options:
            self.tree.value = options[0][1]
        self._show(self.tree.value)

    def select(self, span_id: str) -> None:
        """Select a span by id (what a click does)."""
        self.tree.value = span_id

    def _on_select(self, change: dict[str, Any]) -> None:
        self._show(change["new"])

    def _show(self, span_id: str | None) -> None:
        node = self.nodes.get(span_id) if span_id else None
        self.detail.value = "<i>no spans</i>" if node is None else self.detail_html(node)
        self.refresh_snapshot()

    def snapshot_html(self) -> str:
        """The span list (the selected span in bold) beside the selected span's numbers: what a
        saved notebook shows without a kernel."""
        items = "".join(
            f"<div>{'<b>' if value == self.tree.value else ''}{html.escape(label)}"
            f"{'</b>' if value == self.tree.value else ''}</div>"
            for label, value in self.tree.options
        )
        return (
            '<div class="agentnb-explorer" style="display:flex;gap:2em;align-items:flex-start">'
            f'<div style="white-space:pre;font-family:var(--jp-code-font-family,monospace)">{items}</div>'
            f"<div>{self.detail.value}</div></div>"
        )

    def detail_html(self, node: Node) -> str:
        """What the explorer shows for one span."""
        s = node.span
        facts = [
            ("kind", s.kind),
            ("name", s.name),
            ("path", s.path),
            ("status", s.status),
            ("duration", seconds(s.duration)),
        ]
        if s.kind == "tool_call":
            facts += [
                ("argument chars", count(s.attrs.get("args_chars"))),
                ("result chars", count(s.attrs.get("result_chars"))),
            ]
        row = self.rows.get(s.span_id)
        rows = (
            [row]
            if row
            else [self.rows[n.span.span_id] for _, n in walk([node]) if n.span.span_id in self.rows]
        )
        if rows:
            facts.append(("model calls", count(len(rows))))
            sizes = [(label, sum(getattr(r, key) for r in rows)) for label, key in SIZE_PARTS]
            total = sum(r.chars_in for r in rows)
            facts += [("chars sent", count(total))]
            facts += [(f"· {label}", f"{count(v)} ({_share(v, total)})") for label, v in sizes]
            facts += [
                ("chars received", count(sum(r.chars_out for r in rows))),
                ("tokens in / out", f"{count(node.tokens_in)} / {count(node.tokens_out)}"),
                (
                    "tokens counted with",
                    ", ".join(sorted({str(r.tokens_method) for r in rows})),
                ),
            ]
            if row is not None:
                facts += [
                    ("waited in queue", seconds(row.wait_s)),
                    ("retries", count(row.retries)),
                ]
                ttft = row.ttft_s
                if ttft == ttft:  # NaN: the call was not streamed
                    facts.append(("first token after", seconds(ttft)))
        cells = "".join(
            f"<tr><td>{html.escape(k)}</td><td style='text-align:right'>{html.escape(str(v))}</td></tr>"
            for k, v in facts
        )
        return f'<table class="agentnb-span">{cells}</table>'

    def __repr__(self) -> str:
        return f"TraceExplorer({plural(len(self.nodes), 'span')})"


def _label(node: Node) -> str:
    s = node.span
    if s.kind == "model_call":
        return f"model call {s.attrs.get('turn', '')} · {count(node.chars_in)} chars"
    if s.kind == "tool_call":
        return f"tool {s.name}"
    return describe(node).split(" · ")[0]


def _share(part: int, total: int) -> str:
    return f"{100 * part / total:.0f}%" if total else "–"
