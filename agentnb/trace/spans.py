"""The trace of one run: a tree of spans, one row per model call, and JSON log events.

One `Trace` is shared by a whole hierarchy (the root agent, its sub-agents and theirs), so
everything has one run id and the top result rolls up every call at every depth. Times are
seconds since the run started (``perf_counter``), which keeps timelines comparable across runs.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from ..errors import CallbackRaised
from ._blocks import frame as blocks_frame
from ._row_counts import count_rows
from .calls import CALL_COLUMNS, CallRow, columns_of

if TYPE_CHECKING:
    import pandas as pd

_REPORTED = ("tokens_in_cached", "tokens_in_cache_write", "tokens_out_reasoning")
"""Provider-reported parts of the usage: float columns (NaN) when no call reported them."""

__all__ = ["CALL_COLUMNS", "CallRow", "Listener", "Span", "SpanKind", "Trace"]


SpanKind = Literal["run", "agent", "model_call", "tool_call", "approval", "guardrail"]
"""``approval``: time a call waited for a person (or an approver) to allow it, kept apart
from model latency. ``guardrail``: one check of an agent's input or output, or of a tool call."""


def new_run_id() -> str:
    """A run's id: 12 random hex digits (a native run's and a captured framework's alike)."""
    return os.urandom(6).hex()


@dataclass(slots=True)
class Span:
    """One node of the run tree: the run, an agent's run, a model call or a tool call."""

    span_id: str
    parent_id: str | None
    kind: SpanKind
    name: str
    agent: str
    path: str
    depth: int
    started: float
    ended: float | None = None
    status: str = "running"
    """``running`` until it ends; then ``ok``, ``error``, ``timeout``, ``refused`` or ``cancelled``."""
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def duration(self) -> float | None:
        return None if self.ended is None else self.ended - self.started


Listener = Callable[[str, Span], None]
"""``fn(event, span)`` with ``event`` ``"start"`` or ``"end"``: how the trace tells the run that
a span started or ended (the runtime turns it into `agentnb.SpanStarted` / `SpanEnded`)."""


class Trace:
    """Collects spans, model-call rows and log events for one run (and its sub-agents)."""

    def __init__(self, run_id: str, t0: float | None = None) -> None:
        self.run_id = run_id
        self._wall0 = time.time()  # a float; `started_at` makes the datetime when asked
        self._t0 = time.perf_counter() if t0 is None else t0
        """``perf_counter`` at time zero. Runs started together by a pattern (a fan-out, a
        chain) share one, so their span times sit on one clock and can be compared."""
        self.spans: list[Span] = []
        self.call_rows: list[CallRow] = []
        """One `CallRow` per model call, in the order the calls finished."""
        self.records: list[dict[str, Any]] = []
        """The run's log records (`log`): run, depth, path, event, then the event's own fields;
        `log_lines` gives them as JSON lines."""
        self.on_span: Listener | None = None
        """Told ``("start" | "end", span)`` of every span, when someone watches the run: the
        runtime installs it to send the span events of the run's stream (None otherwise, and
        then a span costs one check). What it raises ends the run, as `CallbackRaised`."""
        self._count = 0
        self._open: dict[str, Span] = {}
        # Spans not ended yet, in start order: closing what a finished sub-agent left open
        # then costs the few spans still running, not a scan of a trace of 100,000 spans.

    def __getstate__(self) -> dict[str, Any]:
        """A pickled trace keeps its records, not who was watching the run."""
        state = dict(self.__dict__)
        state["on_span"] = None
        return state

    @property
    def started_at(self) -> datetime:
        """When the run started (UTC)."""
        return datetime.fromtimestamp(self._wall0, UTC)

    @property
    def t0(self) -> float:
        return self._t0

    def now(self) -> float:
        return time.perf_counter() - self._t0

    def start(
        self,
        kind: SpanKind,
        name: str,
        parent: Span | None,
        *,
        agent: str,
        path: str,
        depth: int,
        **attrs: Any,
    ) -> Span:
        self._count += 1
        span_id = f"s{self._count}"
        span = Span(
            span_id,
            parent.span_id if parent else None,
            kind,
            name,
            agent,
            path,
            depth,
            time.perf_counter() - self._t0,
            attrs=attrs,
        )
        self.spans.append(span)
        self._open[span_id] = span
        if self.on_span is not None:
            self._notify("start", span)
        return span

    def end(self, span: Span, status: str = "ok", **attrs: Any) -> None:
        span.ended = time.perf_counter() - self._t0
        span.status = status
        self._open.pop(span.span_id, None)
        if attrs:
            span.attrs.update(attrs)
        if self.on_span is not None:
            self._notify("end", span)

    @contextmanager
    def ends_on_failure(self, span: Span) -> Iterator[Span]:
        """An exception out of the block ends ``span`` (``cancelled`` or ``error``) and goes on
        up: a span is never left running because what it timed failed."""
        try:
            yield span
        except asyncio.CancelledError:
            self.end(span, "cancelled")
            raise
        except BaseException:
            self.end(span, "error")
            raise

    def _notify(self, event: str, span: Span) -> None:
        """Tell the watcher; what it raises travels as `CallbackRaised` (the run's error)."""
        assert self.on_span is not None
        try:
            self.on_span(event, span)
        except CallbackRaised:
            raise
        except BaseException as exc:  # user code: even SystemExit must not escape the run
            raise CallbackRaised(exc) from None

    def close_open_under(self, root: Span, status: str) -> None:
        """End every running span below ``root`` (a sub-agent that timed out or failed)."""
        if self._indexed():
            if root is next(reversed(self._open.values()), None):
                return  # nothing started after it still runs: the usual end of a sub-agent
            for span in [s for s in self._open_after(root) if self._is_below(s, root.span_id)]:
                if span.ended is None:
                    self.end(span, status)
            return
        below = {root.span_id}  # spans were added without start(): the long way
        for span in self.spans:
            if span.parent_id in below:
                below.add(span.span_id)
                if span.ended is None:
                    self.end(span, status)

    def _indexed(self) -> bool:
        """True while every span came from `start`: span ``s<n>`` is then ``spans[n - 1]``."""
        return len(self.spans) == self._count

    def _open_after(self, root: Span) -> list[Span]:
        """The running spans started after ``root`` (all running spans if it has ended).

        A span below ``root`` was started after it, and `_open` keeps start order: walking back
        from the newest to ``root`` skips the spans of the callers, which are still running. A
        sub-agent that finished normally left nothing open, so this usually stops at once.
        """
        if self._open.get(root.span_id) is not root:
            return list(self._open.values())
        after = []
        for span in reversed(self._open.values()):
            if span is root:
                break
            after.append(span)
        after.reverse()
        return after

    def _is_below(self, span: Span, root_id: str) -> bool:
        parent = span.parent_id
        while parent is not None:
            if parent == root_id:
                return True
            parent = self.spans[int(parent[1:]) - 1].parent_id
        return False

    def log(self, event: str, *, depth: int, path: str, **extra: Any) -> None:
        self.records.append(
            {"run": self.run_id, "depth": depth, "path": path, "event": event, **extra}
        )

    def log_lines(self) -> list[str]:
        """The log records as JSON lines: run, depth, path, event, then the event's own fields."""
        return [json.dumps(e, ensure_ascii=False, default=str) for e in self.records]

    @property
    def events(self) -> list[dict[str, Any]]:
        """The former name of `records` (kept for code that reads it, with no warning): "events" now
        names only the typed events a run sends (`agentnb.Event`)."""
        return self.records

    def children(self, span: Span | None) -> list[Span]:
        parent = span.span_id if span else None
        return [s for s in self.spans if s.parent_id == parent]

    def tree(self) -> list[dict[str, Any]]:
        """The spans as nested dicts (``children`` lists), roots first."""
        self.count_tokens()
        nodes: dict[str, dict[str, Any]] = {}
        roots: list[dict[str, Any]] = []
        for s in self.spans:
            node = {
                "span_id": s.span_id,
                "kind": s.kind,
                "name": s.name,
                "agent": s.agent,
                "path": s.path,
                "depth": s.depth,
                "started": s.started,
                "ended": s.ended,
                "status": s.status,
                **s.attrs,
                "children": [],
            }
            nodes[s.span_id] = node
            parent = nodes.get(s.parent_id) if s.parent_id else None
            (parent["children"] if parent is not None else roots).append(node)
        return roots

    def count_tokens(self) -> None:
        """Count the tokens of every call not counted yet (`CallRow.count_tokens`), which also
        puts them on the calls' spans; in the order the calls finished, so that each agent's
        history is counted turn after turn."""
        count_rows(self.call_rows)

    def calls_frame(self) -> pd.DataFrame:
        """One row per model call with the columns `CALL_COLUMNS` (a pandas DataFrame), in the
        order the calls started: rows are recorded as calls finish, and sub-agents running in
        parallel finish in any order, but a table reads best in the order the calls were made."""
        import numpy as np
        import pandas as pd

        columns = list(CALL_COLUMNS)
        if not self.call_rows:
            return pd.DataFrame({c: [] for c in columns}, columns=columns)
        with _collector_paused():
            self.count_tokens()  # in the order the calls finished, before the rows are sorted
            rows = sorted(self.call_rows, key=_started)
            data: dict[str, Any] = dict(zip(columns, columns_of(rows), strict=True))
            for column in _REPORTED:  # not reported for some calls: NaN, like a gap
                if None in data[column]:
                    data[column] = np.array(data[column], dtype=float)  # None is NaN
            # built from its columns, these made float first: fixing their dtype on the frame
            # afterwards cost more than building a small run's whole frame
            return blocks_frame(columns, list(data.values()))

    def spans_frame(self) -> pd.DataFrame:
        """One row per span (all kinds), for filtering and timelines."""
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "run_id": self.run_id,
                    "span_id": s.span_id,
                    "parent_id": s.parent_id,
                    "kind": s.kind,
                    "name": s.name,
                    "agent": s.agent,
                    "path": s.path,
                    "depth": s.depth,
                    "started": s.started,
                    "ended": s.ended,
                    "duration": s.duration,
                    "status": s.status,
                }
                for s in self.spans
            ],
            columns=[
                "run_id",
                "span_id",
                "parent_id",
                "kind",
                "name",
                "agent",
                "path",
                "depth",
                "started",
                "ended",
                "duration",
                "status",
            ],
        )


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic collection while a calls frame is built (a synchronous step that frees
    nothing): each pass would traverse the whole trace, and building the frame of 100,000
    calls makes dozens of them, most of its time. Cycles made meanwhile are collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _started(row: CallRow) -> float:
    return row.started
