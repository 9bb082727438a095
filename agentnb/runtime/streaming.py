"""Streamed runs: `run_streamed` (async) and `stream_sync` (scripts and blocking cells).

A streamed run is an ordinary run whose `RunEvents` have a sink: the events of every agent
of the hierarchy (sub-agents included, each with its path) arrive in one stream, in the order
they happen, and end with `RunEnded`. Its `RunResult` is the one `run` returns for the same
run (same rows, characters and usage), with ``ttft_s`` measured on every model call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import RunCancelled, UserError
from ..models.types import Message, Usage
from ._loop import background_loop, blocking, in_background_loop, take
from .agent import Agent
from .context import RunContext
from .events import Event, RunEnded, RunEvents, being_cancelled
from .options import RunOptions
from .result import RunResult
from .runner import build_result, execute, start_context


def run_streamed(agent: Agent, input: str | list[Message], **options: Any) -> RunStream:
    """Start streaming a run: returns a `RunStream` at once (raises `UserError` at once on bad
    arguments). ``options`` are those of `agentnb.run` (``limits``, ``timeout``, ``hooks``, ...).

    ``async for event in stream`` yields the events as they happen; ``await stream.result()``
    gives the final `RunResult` and, like `run`, never raises once the run has started.
    """
    ctx = start_context(agent, input, RunOptions.of(**options))
    return RunStream(agent, input, ctx)


class RunStream:
    """A run whose events arrive as they happen. It starts when first iterated or awaited.

    ``async for event in stream`` yields `AgentStarted`, `TextDelta`, `ToolCallStarted`, ...
    and lastly `RunEnded` (events wait in the stream until read). ``await stream.result()``
    runs it to the end (iterating is optional) and returns the `RunResult`; `cancel` stops it
    (the result then holds what was done, with `RunCancelled`).
    """

    def __init__(self, agent: Agent, input: str | list[Message], ctx: RunContext) -> None:
        self.agent = agent
        self.context = ctx
        self._input = input
        self._events: deque[Event] = deque()
        self._wake: asyncio.Event | None = None
        self._forward: Callable[[Event], None] | None = None
        self._task: asyncio.Future[RunResult] | None = None
        self._final: RunResult | None = None
        self._read_all = False
        run = ctx.events
        ctx.events = RunEvents(self._emit, run.hooks if run is not None else ())

    async def result(self) -> RunResult:
        """The run's `RunResult`, once it ends (never raises once started; a cancelled run
        gives its partial result). Cancelling the caller cancels the run."""
        task = self._start()
        try:
            return await task
        except asyncio.CancelledError:
            if being_cancelled():
                raise
            return self._ending()

    def cancel(self) -> None:
        """Stop the run (on its event loop's thread); the stream still ends with `RunEnded`."""
        if self._task is not None:
            self._task.cancel()

    def __aiter__(self) -> RunStream:
        self._start()
        return self

    async def __anext__(self) -> Event:
        while not self._events:
            if self._read_all:
                raise StopAsyncIteration
            if self._wake is None:
                self._wake = asyncio.Event()
            self._wake.clear()
            await self._wake.wait()
        event = self._events.popleft()
        if isinstance(event, RunEnded):
            self._read_all = True
        return event

    def _start(self) -> asyncio.Future[RunResult]:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())
            self._task.add_done_callback(self._ended)
        return self._task

    async def _run(self) -> RunResult:
        try:
            self._final = await execute(self.agent, self._input, self.context)
        except asyncio.CancelledError:
            self._final = self._ending()
            raise
        return self._final

    def _emit(self, event: Event) -> None:
        if self._forward is not None:
            self._forward(event)
            return
        self._events.append(event)
        if self._wake is not None:
            self._wake.set()

    def _ended(self, _: object) -> None:
        result = self._ending()
        root = self.context.trace.spans[0].span_id if self.context.trace.spans else ""
        name = self.agent.name
        self._emit(RunEnded(name, name, 0, root, self.context.trace.now(), result))

    def _ending(self) -> RunResult:
        """The final result; for a run cancelled before it began, an empty cancelled one."""
        if self._final is None:
            if self.context.root is not None:
                self._final = build_result(self.context, None, asyncio.CancelledError())
            else:
                error = RunCancelled("The run was cancelled before it began.")
                ctx = self.context
                self._final = RunResult(None, False, error, Usage(), None, ctx.trace, [], ctx)
        return self._final

    def __repr__(self) -> str:
        state = (
            "not started"
            if self._task is None
            else ("running" if not self._task.done() else "ended")
        )
        return f"RunStream({self.agent.name!r}, {state})"


def stream_sync(agent: Agent, input: str | list[Message], /, **options: Any) -> Iterator[Event]:
    """``for event in stream_sync(agent, input, ...)``: a streamed run from synchronous code.

    Works in a script and in a Jupyter cell (the run goes on agentnb's background loop, as for
    `agentnb.run_sync`). The last event is `RunEnded`, whose ``result`` is the `RunResult`.
    An interrupt (Ctrl-C, Kernel -> Interrupt) cancels the run, which still ends with its
    `RunEnded` (``ok=False``, `RunCancelled`); leaving the loop early cancels the run too.
    """
    if in_background_loop():
        raise UserError(
            "stream_sync was called from inside agentnb's event loop (an async tool?): "
            "use `agentnb.run_streamed(...)` with `async for` there."
        )
    stream = run_streamed(agent, input, **options)
    return _events_of(stream)


def _events_of(stream: RunStream) -> Iterator[Event]:
    inbox: queue.SimpleQueue[Event] = queue.SimpleQueue()
    stream._forward = inbox.put
    loop = background_loop()
    future = asyncio.run_coroutine_threadsafe(stream.result(), loop)
    interrupted = False
    try:
        while True:
            try:
                with blocking():
                    event = take(inbox)  # AgentnbError if the loop dies meanwhile
            except KeyboardInterrupt:
                if interrupted:  # a second interrupt: stop waiting for the run to wind down
                    raise
                interrupted = True
                loop.call_soon_threadsafe(stream.cancel)
                continue
            yield event
            if isinstance(event, RunEnded):
                return
    finally:
        if not future.done() and loop.is_running():  # left early: stop the run (if it can be)
            loop.call_soon_threadsafe(stream.cancel)
            try:
                future.result(timeout=10)
            except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                pass
