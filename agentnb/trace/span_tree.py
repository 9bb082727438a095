"""The span tree as agentnb shows it: one walk, shared by the HTML, the text form and the
notebook's trace explorer, so the three always agree on what a node is and what it cost."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ..words import plural
from .spans import Span


@dataclass
class Node:
    """A span with its children and the model-call totals of its subtree."""

    span: Span
    children: list[Node] = field(default_factory=list)
    calls: int = 0
    chars_in: int = 0
    chars_out: int = 0
    tokens_in: int | None = None
    tokens_out: int | None = None

    def add_call(self, span: Span) -> None:
        self.calls += 1
        self.chars_in += int(span.attrs.get("chars_in") or 0)
        self.chars_out += int(span.attrs.get("chars_out") or 0)
        self.tokens_in = _plus(self.tokens_in, span.attrs.get("tokens_in"))
        self.tokens_out = _plus(self.tokens_out, span.attrs.get("tokens_out"))


def _plus(total: int | None, value: object) -> int | None:
    if not isinstance(value, int):
        return total
    return value if total is None else total + value


def build(spans: Sequence[Span]) -> list[Node]:
    """The forest of spans in start order, below the run span (which repeats the root agent).

    Each node's totals cover every model call in its subtree, so an agent's line says what
    delegating to it cost, its sub-agents included.
    """
    nodes = {s.span_id: Node(s) for s in spans}
    roots: list[Node] = []
    for s in spans:
        parent = nodes.get(s.parent_id) if s.parent_id else None
        (parent.children if parent is not None else roots).append(nodes[s.span_id])
    for s in spans:
        if s.kind != "model_call":
            continue
        node: Node | None = nodes[s.span_id]
        while node is not None:
            node.add_call(s)
            pid = node.span.parent_id
            node = nodes.get(pid) if pid else None
    forest: list[Node] = []
    for root in roots:
        forest.extend(root.children if root.span.kind == "run" else [root])
    return forest


def walk(nodes: Iterable[Node], depth: int = 0) -> Iterator[tuple[int, Node]]:
    """Depth-first, in start order: ``(indent level, node)``."""
    for node in nodes:
        yield depth, node
        yield from walk(node.children, depth + 1)


def seconds(value: float | None) -> str:
    """A duration as ``0.123 s``: always three decimals, so one sanitize rule covers them all
    (see ``LATENCY_REGEX`` in `agentnb.trace.render`)."""
    return "–" if value is None else f"{value:.3f} s"


def count(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _tokens(node: Node) -> str:
    if node.tokens_in is None and node.tokens_out is None:
        return "tokens –"
    return f"tokens {count(node.tokens_in)} → {count(node.tokens_out)}"


def _server_side(events: Iterable[dict[str, object]]) -> str:
    """What the provider did or kept on its side in a model call (the Responses API): hosted
    tools it ran, reasoning items, and how much was sent when it kept the conversation."""
    parts = []
    for event in events:
        kind = event.get("event")
        if kind == "hosted_tool":
            parts.append(str(event.get("type")))
        elif kind == "reasoning":
            parts.append("reasoning")
        elif kind == "server_state" and event.get("previous_response_id"):
            sent = event.get("chars_on_wire")
            shown = count(sent) if isinstance(sent, int) else "–"
            parts.append(f"{shown} chars on the wire after {event['previous_response_id']}")
    return "".join(f" · {p}" for p in parts)


def describe(node: Node) -> str:
    """One line for a node, without its latency: what it is and what it cost."""
    s = node.span
    status = "" if s.status == "ok" else f" · {s.status}"
    if s.kind == "model_call":
        turn = s.attrs.get("turn")
        retries = s.attrs.get("retries") or 0
        extra = f" · {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""
        extra += _server_side(s.attrs.get("events") or ())
        return (
            f"model call{f' {turn}' if turn else ''} ({s.name}) · "
            f"{count(node.chars_in)} chars in → {count(node.chars_out)} out · "
            f"{_tokens(node)}{extra}{status}"
        )
    if s.kind == "tool_call":
        args = s.attrs.get("args_chars")
        result = s.attrs.get("result_chars")
        sent = f"{count(args)} chars" if args is not None else "–"
        back = f"{count(result)} chars" if result is not None else "–"
        below = f" · {plural(node.calls, 'model call')} below" if node.calls else ""
        return f"tool {s.name} · {sent} → {back}{below}{status}"
    turns = s.attrs.get("turns")
    turn_text = f" · {turns} turn{'s' if turns != 1 else ''}" if turns else ""
    handed = s.attrs.get("handed_to")
    handoff = f" · handed to {handed}" if handed else ""
    return (
        f"{s.kind} {s.name}{turn_text} · {plural(node.calls, 'model call')} · "
        f"{count(node.chars_in)} chars in → {count(node.chars_out)} out · "
        f"{_tokens(node)}{handoff}{status}"
    )
