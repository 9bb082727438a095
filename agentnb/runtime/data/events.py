"""The points of a run that a stream and hooks watch, and the typed events a stream yields.

A run passes the same points whether anyone watches or not: an agent starts, it calls its
model (text arrives), it runs a tool, it hands off, it ends. The runner calls `Watchers` at
each of them, through the agent's ``state.watchers``, which is None when nobody watches (no
stream, no hooks): one check, and nothing else, in a run that does not use them.

`Watchers` sends each point to a sink as a frozen event (`AgentStarted`, `TextDelta`, ...)
and to the hooks (`agentnb.Hooks`) of the run and of the agent. The sink is a stream's
(`agentnb.run_streamed`) or the ``on_event`` callback a run or a pattern was given. A hook or
an ``on_event`` callback that raises (any ``BaseException``) ends the run: its exception
travels as `CallbackRaised` and becomes ``RunResult.error``.

The events are the one way to watch a run: besides the points above, every span of the trace
(the run, each agent, model call, tool call, approval and guardrail) starts with a
`SpanStarted` and ends with a `SpanEnded`, which carry its id and its parent's, so a consumer
rebuilds the span tree from the stream alone (`agentnb.RunMonitor` does), and every record of
the run's log arrives as a `LogRecorded` (the stream rebuilds ``log_lines`` too). The trace tells the
run of its spans through one hook (`Trace.on_span`) installed only when there is a sink.
Trace listeners ``fn(event, span)`` (``run(listeners=...)``) are deprecated: `listening` turns
them into a sink of span events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ...errors import CallbackRaised
from ...models.deltas import TextChunk, ToolCallChunk, stream_of
from ...models.types import ModelResponse, ToolCall
from .hooks import Hooks, reads_rows
from .off_loop import off_loop
from .outcome import OutcomeKind, ToolOutcome, model_text
from .stream_output import NOTHING, OutputStream, unwrapped_text

if TYPE_CHECKING:
    from ...models.base import ModelClient
    from ...models.types import ModelRequest
    from ...trace.calls import CallRow
    from ...trace.spans import Listener, Span, SpanKind, Trace
    from .context import RunContext
    from .protocols import AgentLike
    from .result import RunResult
    from .state import AgentRun


@dataclass(frozen=True, slots=True)
class Event:
    """What every event carries: whose it is and when (seconds since the run started)."""

    agent: str
    """The agent's name."""
    path: str
    """Where the agent sits in the hierarchy: ``coordinator/legal`` for a sub-agent."""
    depth: int
    span_id: str
    """The span it belongs to: the agent's, its model call's or its tool call's."""
    time: float
    """Seconds since the run started (in a pattern: since the pattern started)."""
    part: Any = field(default=None, kw_only=True)
    """In a pattern, which of its runs the event belongs to: the key of that run in the
    pattern result's ``parts()`` (a `parallel` branch's name, a `chain` stage's name,
    ``(round, "writer" | "verifier")`` in `verify_loop`). None for a plain run."""


@dataclass(frozen=True, slots=True)
class AgentStarted(Event):
    """An agent began: the root, a sub-agent called as a tool, or the target of a handoff."""


@dataclass(frozen=True, slots=True)
class TextDelta(Event):
    """A piece of the text a model is writing (``span_id``: its model call)."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta(Event):
    """A piece of a tool call the model is writing (``span_id``: its model call). The first
    piece of call ``index`` carries its ``name`` (and ``call_id`` when the provider gives one
    then); later pieces carry more of its JSON ``arguments``. A model that does not stream
    sends each call whole, as one delta."""

    index: int
    name: str
    arguments: str
    call_id: str


@dataclass(frozen=True, slots=True)
class MessageOutput(Event):
    """One model message's whole text, once the call has ended, whatever else the message held
    (``tool_calls``: the names of the calls it asked for). A structured answer's text is shown
    without agentnb's ``{"response": ...}`` wrapper. Not sent for a message with no text."""

    text: str
    tool_calls: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PartialOutput(Event):
    """A structured answer as far as it has been written, validated partially against the
    agent's output type (a list so far, a model once its required fields are there): sent
    each time a longer piece of the answer validates to a new value."""

    output: Any


@dataclass(frozen=True, slots=True)
class ToolCallStarted(Event):
    """A tool is about to run (``arguments``: the model's JSON text)."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolCallEnded(Event):
    """A tool finished; ``result_text`` is what the model reads, ``ok`` False for a tool error,
    a refusal or a sub-agent's failure (``kind`` says which: see `agentnb.ToolOutcome`)."""

    name: str
    result_text: str
    ok: bool
    kind: OutcomeKind = "ok"
    """``ok``, ``error``, ``rejected`` or ``handed_off``."""


@dataclass(frozen=True, slots=True)
class HandoffEvent(Event):
    """``source`` handed the conversation to ``target`` (the event is the source's, in its
    span). A handoff is not a tool call: no `ToolCallStarted` / `ToolCallEnded` is sent for
    its ``transfer_to_<name>`` call."""

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class AgentEnded(Event):
    """An agent gave its final output (not sent for an agent that handed off or failed)."""

    output: Any


@dataclass(frozen=True, slots=True)
class RunEnded(Event):
    """The run is over, well or not: the last event of a stream.

    ``result`` is its `RunResult`. A pattern streams one `RunEnded` per run it makes (with
    ``part`` set), then a last one (``part`` None, ``agent`` the pattern's name) whose
    ``result`` is the pattern's: its `FanOut`, `ChainResult` or `VerifyResult`.
    """

    result: Any


@dataclass(frozen=True, slots=True)
class SpanStarted(Event):
    """A span of the trace began (``time`` is its ``started``). ``parent_id`` places it in the
    tree: the stream's span events rebuild ``result.spans``. ``span`` is the live `Span`, whose
    ``attrs`` fill in as the run goes on."""

    parent_id: str | None
    kind: SpanKind
    name: str
    span: Span = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class SpanEnded(Event):
    """A span ended (``time`` is its ``ended``) with ``status`` (``ok``, ``error``, ``timeout``,
    ``refused`` or ``cancelled``). A model call's sizes are on ``span.attrs`` just after."""

    parent_id: str | None
    kind: SpanKind
    name: str
    status: str
    span: Span = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class LogRecorded(Event):
    """A record of the run's log: the dict behind one line of `RunResult.log_lines` (a handoff,
    a guardrail's verdict, an approval, a model call's retry, the run's start and end, ...).
    Records reach the stream at the next span's start or end, and the last ones before the
    run's `RunEnded`, so the stream holds the whole log, in order. ``span_id`` is the run's
    span, as for `RunEnded`: a record is the run's, written by the agent at ``path``."""

    record: dict[str, Any] = field(compare=False)


Sink = Callable[[Event], None]


def span_event(change: Literal["start", "end"] | str, span: Span) -> SpanStarted | SpanEnded:
    """The event of a span's start or end."""
    where = (span.agent, span.path, span.depth, span.span_id)
    if change == "start":
        return SpanStarted(*where, span.started, span.parent_id, span.kind, span.name, span)
    ended = span.ended if span.ended is not None else span.started
    return SpanEnded(*where, ended, span.parent_id, span.kind, span.name, span.status, span)


class SpanWatch:
    """The trace's span hook for a watched run: each span's start and end, and before it the
    log records written since the last one, go to the run's sink."""

    __slots__ = ("sent", "sink", "trace")

    def __init__(self, trace: Trace, sink: Sink) -> None:
        self.trace = trace
        self.sink = sink
        self.sent = 0
        """How many of the trace's log records were sent."""

    def __call__(self, change: str, span: Span) -> None:
        if self.sent < len(self.trace.records):
            self.send_log()
        self.sink(span_event(change, span))

    def send_log(self) -> None:
        """Send the log records not sent yet, as `LogRecorded` (in the order they were written)."""
        records, trace = self.trace.records, self.trace
        while self.sent < len(records):
            record = records[self.sent]
            self.sent += 1  # counted first: a sink that raises is not sent the same record again
            root = trace.spans[0].span_id if trace.spans else ""
            where = (str(record.get("agent", "")), record["path"], record["depth"], root)
            self.sink(LogRecorded(*where, trace.now(), record))


def watch_spans(ctx: RunContext) -> None:
    """Send the spans of the run's trace to its sink as `SpanStarted` / `SpanEnded`, and its
    log records as `LogRecorded` (nothing to do when the run has no sink: its spans then cost
    one check each, its log records none)."""
    watchers = ctx.watchers
    if watchers is None or watchers.sink is None:
        ctx.trace.on_span = None
        return
    ctx.trace.on_span = SpanWatch(ctx.trace, watchers.sink)


def send_log(ctx: RunContext) -> None:
    """Send what is left of the run's log to its sink (before its `RunEnded`)."""
    watch = ctx.trace.on_span
    if isinstance(watch, SpanWatch):
        watch.send_log()


def listening(listeners: Sequence[Listener]) -> Sink:
    """A sink that calls deprecated trace listeners ``fn(event, span)`` with the span events.

    As before, one that raises is not called again, the others are still told, and the first
    exception ends the run."""
    live = list(listeners)

    def sink(event: Event) -> None:
        if isinstance(event, SpanStarted):
            change = "start"
        elif isinstance(event, SpanEnded):
            change = "end"
        else:
            return
        failed: BaseException | None = None
        for listener in list(live):
            try:
                listener(change, event.span)
            except BaseException as exc:  # user code: even SystemExit must not escape the run
                live.remove(listener)
                failed = failed or exc
        if failed is not None:
            raise CallbackRaised(failed)

    return sink


def both(first: Sink | None, second: Sink | None) -> Sink | None:
    """One sink that sends each event to ``first``, then to ``second`` (either may be None).
    What the first raises still reaches the second before it ends the run."""
    if first is None or second is None:
        return first or second

    def sink(event: Event) -> None:
        try:
            first(event)
        finally:
            second(event)

    return sink


def subscriber(on_event: Sink) -> Sink:
    """The sink for a user's ``on_event`` callback: what it raises ends the run, as a hook's
    exception does."""

    def sink(event: Event) -> None:
        try:
            on_event(event)
        except BaseException as exc:  # user code: any exception ends the run, as its error
            raise CallbackRaised(exc) from None

    return sink


def run_ended(ctx: RunContext, agent: AgentLike, result: RunResult) -> RunEnded:
    """The `RunEnded` event of a run that gave ``result``."""
    root = ctx.trace.spans[0].span_id if ctx.trace.spans else ""
    return RunEnded(agent.name, agent.name, 0, root, ctx.trace.now(), result)


class Watchers:
    """Who watches one agent, and where its points go: the run's event ``sink`` (a stream's, or
    ``on_event``) and ``hooks`` (the run's, then its own). ``streams``: whether model calls
    are streamed (text deltas sent, ``ttft_s`` timed). Named apart from the events it sends
    (`Event`) and from the trace's log records (`Trace.records`)."""

    __slots__ = ("hooks", "sink", "streams")

    def __init__(
        self, sink: Sink | None = None, hooks: tuple[Hooks, ...] = (), *, streams: bool = True
    ) -> None:
        self.sink = sink
        self.hooks = hooks
        self.streams = streams and sink is not None

    async def agent_started(self, ctx: RunContext, state: AgentRun) -> None:
        if self.sink is not None:
            self.sink(AgentStarted(*_where(ctx, state, state.span)))
        if self.hooks:
            await self._hooks("on_agent_start", ctx, state.agent)

    async def agent_ended(self, ctx: RunContext, state: AgentRun, output: Any) -> None:
        if self.sink is not None:
            self.sink(AgentEnded(*_where(ctx, state, state.span), output))
        if self.hooks:
            await self._hooks("on_agent_end", ctx, state.agent, output)

    async def model_started(self, ctx: RunContext, state: AgentRun, request: ModelRequest) -> None:
        if self.hooks:
            await self._hooks("on_model_start", ctx, state.agent, request)

    async def request(
        self,
        model: ModelClient,
        request: ModelRequest,
        ctx: RunContext,
        state: AgentRun,
        span: Span,
    ) -> ModelResponse:
        """The model's response; streamed (text deltas sent, first delta timed) for a stream."""
        if not self.streams or self.sink is None:
            return await model.request(request)
        return await _streamed(model, request, ctx, state, span, self.sink)

    async def model_ended(
        self,
        ctx: RunContext,
        state: AgentRun,
        response: ModelResponse,
        row: CallRow,
    ) -> None:
        if any(map(reads_rows, self.hooks)):
            # the row as a dict counts its tokens: only for a hook that reads it
            await self._hooks("on_model_end", ctx, state.agent, response, row.as_dict())

    async def tool_started(
        self, ctx: RunContext, state: AgentRun, span: Span, call: ToolCall
    ) -> None:
        if self.sink is not None:
            self.sink(ToolCallStarted(*_where(ctx, state, span), call.name, call.arguments))
        if self.hooks:
            await self._hooks("on_tool_start", ctx, state.agent, call.name, call.arguments)

    async def tool_ended(
        self, ctx: RunContext, state: AgentRun, span: Span, call: ToolCall, outcome: ToolOutcome
    ) -> None:
        text = model_text(outcome)
        if self.sink is not None:
            where = _where(ctx, state, span)
            self.sink(ToolCallEnded(*where, call.name, text, outcome.succeeded, outcome.kind))
        if self.hooks:
            await self._hooks("on_tool_end", ctx, state.agent, call.name, text)

    async def _hooks(self, name: str, *args: Any) -> None:
        await _call_hooks(self.hooks, name, *args)


def watchers_for(ctx: RunContext, agent: AgentLike) -> Watchers | None:
    """What watches ``agent`` in this run: the run's stream and hooks, plus its own hooks."""
    own = agent.hooks
    if own is None:
        return ctx.watchers
    run = ctx.watchers
    if run is None:
        return Watchers(None, (own,))
    hooks = run.hooks if own in run.hooks else (*run.hooks, own)
    return Watchers(run.sink, hooks, streams=run.streams)


async def handed_off(
    ctx: RunContext, state: AgentRun, source: AgentLike, target: AgentLike
) -> None:
    """A handoff from ``source`` (still ``state.agent``) to ``target``: a `HandoffEvent` (the
    source's, in its span) and ``on_handoff`` of the run's hooks and of the *receiving* agent's
    own hooks, as openai-agents calls it (the source's own hooks are not told)."""
    run = ctx.watchers
    if run is not None and run.sink is not None:
        run.sink(HandoffEvent(*_where(ctx, state, state.span), source.name, target.name))
    hooks = run.hooks if run is not None else ()
    if target.hooks is not None and target.hooks not in hooks:
        hooks = (*hooks, target.hooks)
    if hooks:
        await _call_hooks(hooks, "on_handoff", ctx, source, target)


async def _call_hooks(hooks: tuple[Hooks, ...], name: str, *args: Any) -> None:
    for each in hooks:
        try:
            await off_loop(getattr(each, name), *args)
        except asyncio.CancelledError:
            if being_cancelled():  # the run is being cancelled, not failing
                raise
            raise CallbackRaised(asyncio.CancelledError()) from None
        except BaseException as exc:  # user code: any exception ends the run, as its error
            raise CallbackRaised(exc) from None


def being_cancelled() -> bool:
    """Whether the running task was asked to cancel (so a CancelledError is the run's, not
    one user code raised). Before Python 3.11 this cannot be told: assume it was."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return task is not None and (cancelling is None or bool(cancelling()))


def _where(ctx: RunContext, state: AgentRun, span: Span) -> tuple[str, str, int, str, float]:
    return state.agent.name, state.path, state.depth, span.span_id, ctx.trace.now()


async def _streamed(
    model: ModelClient,
    request: ModelRequest,
    ctx: RunContext,
    state: AgentRun,
    span: Span,
    sink: Sink,
) -> ModelResponse:
    """One model call streamed: every text piece sent as a `TextDelta` (a structured answer's
    also as `PartialOutput`), every tool-call piece as a `ToolCallDelta`, the whole message as
    `MessageOutput`; the first item of any kind timed (the call's ``ttft_s``), the text so far
    kept on the span if the call fails."""
    trace = ctx.trace
    agent, path, depth, span_id = state.agent.name, state.path, state.depth, span.span_id
    response: ModelResponse | None = None
    pieces: list[str] = []
    spec = state.agent.output_adapter() if request.output_schema is not None else None
    shown = OutputStream(spec)
    items = stream_of(model, request)
    try:
        async for item in items:
            if "ttft_s" not in span.attrs:
                span.attrs["ttft_s"] = trace.now() - span.started
            if isinstance(item, ModelResponse):
                response = item
            elif isinstance(item, TextChunk):
                pieces.append(item.text)
                text = shown.feed(item.text)
                if text:
                    sink(TextDelta(agent, path, depth, span_id, trace.now(), text))
                    # Let the stream's reader show it now: when the next events are already
                    # in the buffer, the rest of the call (and of the run) would otherwise
                    # run before the reader sees its first delta.
                    await asyncio.sleep(0)
                if spec is not None:
                    partial = shown.partial()
                    if partial is not NOTHING:
                        sink(PartialOutput(agent, path, depth, span_id, trace.now(), partial))
            elif isinstance(item, ToolCallChunk):
                where = (agent, path, depth, span_id, trace.now())
                sink(ToolCallDelta(*where, item.index, item.name, item.arguments, item.id))
    except BaseException:
        if pieces:  # what the model said before the stream broke: the agent's partial answer
            span.attrs["partial_text"] = state.last_text = "".join(pieces)
        raise
    finally:
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()
    if response is None:
        raise TypeError(f"{type(model).__name__}.stream ended without a ModelResponse")
    rest = shown.finish() if pieces else unwrapped_text(spec, response.text or "")
    if rest:  # held back until the end, or a response with no text deltas: its text as one
        sink(TextDelta(agent, path, depth, span_id, trace.now(), rest))
    if response.text:
        calls = tuple(c.name for c in response.tool_calls)
        text = unwrapped_text(spec, response.text)
        sink(MessageOutput(agent, path, depth, span_id, trace.now(), text, calls))
    return response
