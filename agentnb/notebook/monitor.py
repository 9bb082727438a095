"""`RunMonitor`: a live view of a run, one row per agent: status, elapsed time, characters sent.

It watches the run's events (``run(..., on_event=monitor.on_event)``): the spans' `SpanStarted`
and `SpanEnded` make its rows and their status, a streamed run's `TextDelta` the text each
agent's model is writing. Given as the run's ``on_event`` it is called on the thread of the
loop that runs the agents — agentnb's background loop for a blocking call — so it only
records what happened and schedules a redraw on that loop: at most one redraw per
``interval`` however many events arrive, plus a tick while the run lasts so elapsed times move
during a long model call. Setting a widget's value from that thread is safe: ipywidgets sends
the change over the kernel's comm, whose iopub socket accepts sends from any thread, and a
comm message is not tied to the cell that is running.

A streamed run's text must never lag behind its status: the monitor may not show a run
finished before it shows the whole answer. One ordered stream keeps that true by
construction: a call's text deltas come before the `SpanEnded` of that call, of its agent and
of the run, whether the monitor is the run's ``on_event`` or reads a stream on another thread
(``for event in stream_sync(...): monitor.on_event(event)``). ``streamed=True`` additionally
waits for the stream's `RunEnded` (or `finish`) before showing the outcome.
"""

from __future__ import annotations

import asyncio
import html
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..trace.span_tree import count
from ..words import plural
from ._snapshot import Snapshotted

if TYPE_CHECKING:
    from ..runtime import Event, RunResult
    from ..trace.spans import Span

TEXT_SHOWN = 400
"""The last characters of an agent's text shown while it is being written."""


@dataclass
class AgentRow:
    """What the monitor knows about one agent (one path) of the run."""

    name: str
    path: str
    depth: int
    status: str = "running"
    activity: str = ""
    started: float = field(default_factory=time.perf_counter)
    ended: float | None = None
    calls: list[Span] = field(default_factory=list)
    """Its finished model calls: their sizes are read when drawing (they are filled in just
    after the span ends)."""
    text: str = ""
    """What its model is writing now (a streamed run): the current call's text."""

    @property
    def chars_in(self) -> int:
        return sum(int(s.attrs.get("chars_in") or 0) for s in self.calls)

    def elapsed(self, now: float) -> float:
        return (self.ended if self.ended is not None else now) - self.started


class RunMonitor(Snapshotted, widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """Live progress of a run: ``display(monitor)`` then run with ``on_event=monitor.on_event``
    (`agentnb.notebook.run_live` and ``%%agent_run`` do both). In a streamed run each agent's
    row also shows the text its model is writing.

    From a stream read on another thread (``for event in stream_sync(...):
    monitor.on_event(event)``) the monitor needs nothing else: the stream carries the spans.
    ``streamed=True`` shows the run finished at its `RunEnded` rather than at its span's end."""

    def __init__(
        self,
        title: str = "run",
        *,
        interval: float = 0.1,
        tick: float = 0.5,
        streamed: bool = False,
    ) -> None:
        self.title = title
        self.streamed = streamed
        self.interval = interval
        self.tick = tick
        self.rows: dict[str, AgentRow] = {}
        self.state = "waiting"
        self.error: str | None = None
        self._started: float | None = None
        self._ended: float | None = None
        self._outcome: str | None = None
        """How the run's span ended (``ok`` or ``failed``), shown once the text is all there."""
        self._lock = threading.RLock()
        self._timer: asyncio.TimerHandle | None = None
        self._last_draw = 0.0
        self._view = widgets.HTML(layout=widgets.Layout(width="100%"))
        super().__init__([self._view])
        self.add_class("agentnb-monitor")
        self.redraw()

    # -- events of the run (on the run's loop thread, or the stream reader's) ----------------

    def on_event(self, event: Event) -> None:
        """One event of the run: spans make the rows, text deltas are shown under their agent.
        Redraws at most once per ``interval``; the tick kept going while the run lasts draws
        what came in between, and the run's end draws the rest."""
        from ..runtime import RunEnded, SpanEnded, SpanStarted, TextDelta

        if isinstance(event, (SpanStarted, SpanEnded)):
            change = "start" if isinstance(event, SpanStarted) else "end"
            with self._lock:
                self._record(change, event.span)
            self._schedule(final=change == "end" and event.kind == "run")
            return
        if isinstance(event, RunEnded):
            if event.part is None and event.depth == 0:
                self._show_outcome()
            return
        if not isinstance(event, TextDelta):
            return
        with self._lock:
            row = self.rows.get(event.path)
            if row is None:
                return
            row.text += event.text
            row.activity = "writing"
            due = time.perf_counter() - self._last_draw >= self.interval
        if due:
            self.redraw()

    def listener(self, event: str, span: Span) -> None:
        """Deprecated with ``run(listeners=...)``: the same as giving ``on_event=monitor.on_event``,
        which sees the spans as `SpanStarted` / `SpanEnded`."""
        with self._lock:
            self._record(event, span)
        self._schedule(final=event == "end" and span.kind == "run")

    def _show_outcome(self) -> None:
        """The stream has ended (every delta is in): show the run's outcome, now."""
        with self._lock:
            if self._outcome is None or self.state == self._outcome:
                return
            self.state = self._outcome
        self.redraw()

    def replace(self, obj: object) -> None:
        """Show ``obj`` (the run's result) in the monitor's place: it is displayed, and the
        monitor is closed, which removes its view from the page. The cell's outputs stay a
        widget and a result, as without streaming, so a saved notebook compares the same."""
        from IPython.display import display

        display(obj)  # type: ignore[no-untyped-call]
        self.close()

    def _record(self, event: str, span: Span) -> None:
        now = time.perf_counter()
        if span.kind == "run":
            if event == "start":
                self._started, self.state = now, "running"
            else:  # `finish` adds the error, when the caller has the result
                self._ended, self._outcome = now, "ok" if span.status == "ok" else "failed"
                if not self.streamed:  # else at the stream's end: its last deltas may be unread
                    self.state = self._outcome
            return
        if span.kind == "agent":
            row = self.rows.get(span.path)
            if event == "start":
                if row is None or span.name != row.name:  # new agent, or a handoff at this path
                    self.rows[span.path] = AgentRow(span.name, span.path, span.depth, started=now)
                else:
                    row.status, row.ended = "running", None
            elif row is not None:
                row.status, row.ended, row.activity = span.status, now, ""
            return
        row = self.rows.get(span.path)
        if row is None:
            return
        if span.kind == "model_call":
            if event == "start":
                row.activity, row.text = "waiting for the model", ""
            else:
                row.calls.append(span)
                row.activity = ""
        elif span.kind == "tool_call":
            row.activity = f"running {span.name}" if event == "start" else ""

    def _schedule(self, *, final: bool) -> None:
        """Redraw soon, on the loop the run is on (so a model call's sizes, filled in just after
        its span ends, are there), at most once per ``interval``; at the run's end, at once.
        Runs on that loop's thread, like `on_event`, so the timer needs no lock."""
        if final:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self.redraw()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # events read outside the run's loop (a stream read on another thread)
            if time.perf_counter() - self._last_draw >= self.interval:
                self.redraw()
            return
        delay = max(0.0, self._last_draw + self.interval - time.perf_counter())
        if self._timer is not None:
            if self._timer.when() <= loop.time() + delay:
                return  # a redraw is already due soon enough
            self._timer.cancel()
        self._timer = loop.call_later(delay, self._on_loop, loop)

    def _on_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        if self._ended is not None:  # the run's end drew the last picture already
            return
        self.redraw()
        # Keep ticking while the run lasts, so elapsed times move during a long model call.
        self._timer = loop.call_later(self.tick, self._on_loop, loop)

    # -- from the caller's thread ----------------------------------------------------------

    def finish(self, result: RunResult) -> None:
        """Show the outcome (the run is over; called by `run_live` on the caller's thread)."""
        with self._lock:
            if self._ended is None:
                self._ended = time.perf_counter()
            self.state = "ok" if result.ok else "failed"
            if result.error is not None:
                self.error = f"{type(result.error).__name__}: {result.error}"
            for row in self.rows.values():
                if row.status == "running":
                    row.status = "cancelled" if not result.ok else "ok"
                    row.ended = row.ended or self._ended
                row.activity = ""
        self.redraw()
        self.refresh_snapshot()

    def snapshot_html(self) -> str:
        """The monitor's table as it stands (after `finish`, the run's outcome)."""
        return f'<div class="agentnb-monitor">{self._view.value}</div>'

    def redraw(self) -> None:
        with self._lock:
            self._last_draw = time.perf_counter()
            self._view.value = self.render(self._last_draw)

    def render(self, now: float) -> str:
        """The monitor's HTML at time ``now`` (``time.perf_counter()``)."""
        end = self._ended if self._ended is not None else now
        took = f"{end - self._started:.1f} s" if self._started is not None else "–"
        total = sum(r.chars_in for r in self.rows.values())
        calls = sum(len(r.calls) for r in self.rows.values())
        mark = {"ok": "✔", "failed": "✘", "running": "⏳"}.get(self.state, "…")
        head = (
            f"{mark} <b>{_esc(self.title)}</b> · {self.state} · {took} · "
            f"{plural(calls, 'model call')} · {count(total)} chars sent"
        )
        if self.error:
            head += f'<div style="color:#cf222e">{_esc(self.error)}</div>'
        cells = "".join(
            "<tr>"
            f'<td style="padding-left:{0.3 + 1.2 * r.depth:.1f}em">{_esc(r.name)}</td>'
            f"<td>{_esc(r.status)}</td><td>{_esc(r.activity)}</td>"
            f'<td style="text-align:right">{r.elapsed(now):.1f} s</td>'
            f'<td style="text-align:right">{len(r.calls)}</td>'
            f'<td style="text-align:right">{count(r.chars_in)}</td>'
            f"</tr>{_text_row(r)}"
            for r in self.rows.values()
        )
        table = (
            "<style>.agentnb-monitor-table td,.agentnb-monitor-table th{padding:1px 10px 1px 0}</style>"
            '<table class="agentnb-monitor-table" style="border-collapse:collapse">'
            "<thead><tr><th>agent</th><th>status</th><th>now</th><th>elapsed</th>"
            "<th>calls</th><th>chars sent</th></tr></thead>"
            f"<tbody>{cells}</tbody></table>"
        )
        return f"<div>{head}</div>{table}"

    def snapshot(self) -> list[dict[str, Any]]:
        """The rows as dicts (for tests and for printing in a terminal)."""
        with self._lock:
            return [
                {
                    "agent": r.name,
                    "path": r.path,
                    "status": r.status,
                    "calls": len(r.calls),
                    "chars_in": r.chars_in,
                }
                for r in self.rows.values()
            ]

    def close(self) -> None:
        """Remove the monitor and its view from the front end."""
        self._view.close()
        super().close()

    def __repr__(self) -> str:  # the text/plain nbval compares: nothing that changes per run
        return f"RunMonitor({self.title!r})"


def _text_row(row: AgentRow) -> str:
    """The text an agent's model is writing, under its row (its path, for a sub-agent)."""
    if not row.text:
        return ""
    text = row.text if len(row.text) <= TEXT_SHOWN else "…" + row.text[-TEXT_SHOWN:]
    where = f'<span style="color:#57606a">{_esc(row.path)}:</span> ' if row.depth else ""
    return (
        f'<tr><td colspan="6" class="agentnb-monitor-text" style="padding-left:'
        f'{1.5 + 1.2 * row.depth:.1f}em;white-space:pre-wrap;color:#24292f">{where}{_esc(text)}</td></tr>'
    )


def _esc(value: object) -> str:
    return html.escape(str(value), quote=False)
