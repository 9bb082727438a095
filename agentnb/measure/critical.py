"""The critical path: the shortest wall time a run could have had, given what waited on what.

Inside one agent the turns are sequential (each turn reads the previous turn's results), but
the tool calls of one turn are independent of each other: a runner could run them all at
once. So an agent's critical time is, turn by turn, its model call plus the slowest of that
turn's tool calls (a sub-agent's tool call counting that sub-agent's own critical time).
Wall time minus this bound is what the orchestration cost in waiting: ~0 for a parallel
fan-out, the sum of the other branches for a serial one, plus the framework's overhead.

Compositions follow the same rule: a `FanOut`'s branches ran side by side (the bound is the
slowest branch, or their total work spread over the slots when ``max_concurrency`` capped it:
with one slot, their sum); a list of results ran one after another (the bound is their sum), and so did
the rounds of a `verify_loop`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from ..trace.spans import Span


def span_critical(spans: Iterable[Span]) -> float:
    """The critical time of one trace's spans (seconds; unfinished spans count as zero)."""
    children: dict[str | None, list[Span]] = defaultdict(list)
    for span in spans:
        children[span.parent_id].append(span)

    def duration(span: Span) -> float:
        return max(span.duration or 0.0, 0.0)

    def crit(span: Span) -> float:
        below = children.get(span.span_id, [])
        if span.kind == "model_call":
            return duration(span)
        if span.kind == "tool_call":
            agents = [c for c in below if c.kind == "agent"]
            return max((crit(a) for a in agents), default=duration(span))
        if span.kind == "agent":
            turns: dict[Any, list[Span]] = defaultdict(list)
            for child in below:
                turns[child.attrs.get("turn")].append(child)
            total = 0.0
            for members in turns.values():
                total += sum(crit(c) for c in members if c.kind == "model_call")
                total += max((crit(c) for c in members if c.kind != "model_call"), default=0.0)
            return total
        # a run span: its agent spans follow one another (handoffs pass control on)
        return sum(crit(c) for c in below)

    return sum(crit(root) for root in children.get(None, []))


def critical_path(result: Any) -> float | None:
    """The critical-path lower bound of a run's wall time, in seconds.

    Takes a `RunResult` (its spans), a fan-out (anything with a ``results`` mapping: its
    branches ran concurrently, so the slowest one), or a list of results (run in sequence,
    so the sum). ``None`` when the object carries no spans.
    """
    if isinstance(result, (list, tuple)):
        parts = [critical_path(r) for r in result]
        return None if any(p is None for p in parts) else float(sum(p or 0.0 for p in parts))
    trace = getattr(result, "trace", None)
    if trace is not None and hasattr(trace, "spans"):
        path = getattr(result, "path", None)
        spans: Sequence[Span] = trace.spans
        if path is not None:  # a sub-agent's result: only its subtree
            spans = [s for s in spans if s.path == path or s.path.startswith(path + "/")]
            ids = {s.span_id for s in spans}
            spans = [s if s.parent_id in ids else _as_root(s) for s in spans if s.kind != "run"]
        return span_critical(spans)
    rounds = getattr(result, "rounds", None)
    if isinstance(rounds, list) and rounds and hasattr(rounds[0], "writer"):  # a verify_loop
        runs = [
            x for r in rounds for x in (r.writer, getattr(r, "verifier", None)) if x is not None
        ]
        return critical_path(runs)
    branches = getattr(result, "results", None)
    if isinstance(branches, dict):
        parts = [critical_path(r) for r in branches.values()]
        known = [p for p in parts if p is not None]
        if parts and not known:
            return None
        # m slots cannot finish n branches faster than their total work spread over the slots
        slots = getattr(result, "max_concurrency", None)
        spread = sum(known) / slots if isinstance(slots, int) and slots > 0 else 0.0
        return max(max(known, default=0.0), spread)
    return None


def _as_root(span: Span) -> Span:
    copy = Span(
        span.span_id,
        None,
        span.kind,
        span.name,
        span.agent,
        span.path,
        span.depth,
        span.started,
        span.ended,
        span.status,
        span.attrs,
    )
    return copy
