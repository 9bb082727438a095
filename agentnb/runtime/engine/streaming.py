"""Streamed runs: `run_streamed` (async) and `stream_sync` (scripts and blocking cells).

A streamed run is an ordinary run whose `Watchers` have a sink: the events of every agent
of the hierarchy (sub-agents included, each with its path) arrive in one stream, in the order
they happen, and end with `RunEnded`. Its `RunResult` is the one `run` returns for the same
run (same rows, characters and usage), with ``ttft_s`` measured on every model call.

A pattern streams through the same entry, ``run_streamed(agentnb.parallel, agents, input)``:
the stream hands its sink to the pattern as ``on_event``, and the pattern hands it to each of
its runs (`agentnb.RunOptions.on_event`), tagging each event with the run's ``part``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import queue
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Generic, TypeVar, Unpack, cast, overload

from ...errors import RunCancelled, UserError
from ...models.types import Message, Usage
from ..agents.agent import Agent
from ..data.context import RunContext
from ..data.events import (
    Event,
    RunEnded,
    Sink,
    Watchers,
    being_cancelled,
    both,
    run_ended,
    watch_spans,
)
from ..data.options import RunKeywords, RunOptions, shows_run_keywords
from ..data.result import RunResult
from .blocking import background_loop, blocking, in_background_loop, running_loop, take
from .runner import build_result, execute, start_context
from .thread_loop import run_here, thread_loop

T = TypeVar("T")


@overload
def run_streamed(
    agent: Agent, input: str | list[Message], /, **options: Unpack[RunKeywords]
) -> RunStream[RunResult]: ...


@overload
def run_streamed(
    pattern: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any
) -> RunStream[T]: ...


@shows_run_keywords
def run_streamed(target: Any, /, *args: Any, **kwargs: Any) -> RunStream[Any]:
    """Start streaming a run, or a pattern: returns a `RunStream` at once.

    ``run_streamed(agent, input, **options)`` streams a run; ``options`` are those of
    `agentnb.run` (``limits``, ``timeout``, ``hooks``, ...), and a bad one raises `UserError`
    at once. ``async for event in stream`` yields the events as they happen;
    ``await stream.result()`` gives the final `RunResult` and, like `run`, never raises once
    the run has started.

    ``run_streamed(agentnb.parallel, agents, input, **options)`` streams a pattern the same
    way: the function (`parallel`, `chain`, `verify_loop`, or a coroutine function of yours
    that takes ``on_event=``) is called with these arguments and the stream's ``on_event``.
    Every run it makes streams into this one stream, each event's ``part`` naming its run (a
    branch, a stage, a round), each run ending with its own `RunEnded`; the last event is a
    `RunEnded` whose ``result`` is the pattern's (its `FanOut`, ...), which is also what
    ``await stream.result()`` gives. The pattern's result is the one it gives unstreamed, plus
    ``ttft_s`` on every call. One entry for runs and patterns alike, as `run_sync` is: the
    pattern's own ``on_event`` keyword is the callback form of the same events.
    """
    if "on_event" in kwargs:
        raise UserError(
            "run_streamed yields the events itself: iterate it instead of passing on_event "
            "(on_event is the callback form, for run, run_sync and the patterns)."
        )
    if isinstance(target, Agent):
        return _run_stream(target, *args, **kwargs)
    if not callable(target) or not _takes_on_event(target):
        raise UserError(
            "run_streamed takes an Agent and its input, or a pattern and its arguments such as "
            "run_streamed(agentnb.parallel, agents, input) (a coroutine function that takes "
            f"on_event=); got {_what(target)}"
        )
    return RunStream(
        getattr(target, "__name__", "pattern"), lambda sink: target(*args, on_event=sink, **kwargs)
    )


def _takes_on_event(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True  # a builtin or an odd callable: let the call say
    return any(p.name == "on_event" or p.kind == p.VAR_KEYWORD for p in params)


def _what(target: Any) -> str:
    if callable(target):
        name = getattr(target, "__name__", type(target).__name__)
        return f"{name}, which takes no on_event="
    return type(target).__name__


def _run_stream(agent: Agent, input: str | list[Message], **options: Any) -> RunStream[RunResult]:
    ctx = start_context(agent, input, RunOptions.of(**options))
    return RunStream(agent.name, lambda sink: execute(agent, input, ctx), agent, ctx)


class RunStream(Generic[T]):
    """A run (or a pattern) whose events arrive as they happen. It starts when first iterated
    or awaited.

    ``async for event in stream`` yields `AgentStarted`, `TextDelta`, `ToolCallStarted`, ...
    and lastly `RunEnded` (events wait in the stream until read). ``await stream.result()``
    runs it to the end (iterating is optional) and returns the `RunResult` (for a pattern,
    what the pattern returns); `cancel` stops it (a run's result then holds what was done,
    with `RunCancelled`; a cancelled pattern's ``result()`` raises `RunCancelled`).
    """

    def __init__(
        self,
        name: str,
        work: Callable[[Sink], Awaitable[T]],
        agent: Agent | None = None,
        ctx: RunContext | None = None,
    ) -> None:
        self.name = name
        """The agent's name, or the pattern's (``parallel``)."""
        self.agent = agent
        """The root agent of a streamed run (None for a pattern)."""
        self.context = ctx
        """The run's context (None for a pattern, whose runs each have their own)."""
        self._work = work
        self._events: deque[Event] = deque()
        self._wake: asyncio.Event | None = None
        self._reader: asyncio.Task[Any] | None = None  # the task waiting in __anext__, if any
        self._forward: Callable[[Event | None], None] | None = None
        self._task: asyncio.Future[T] | None = None
        self._final: T | None = None
        self._t0 = 0.0
        self._seen_end = False
        self._done = False
        self._error: BaseException | None = None
        if ctx is not None:  # the stream is the run's sink (before the deprecated listeners)
            run = ctx.watchers
            hooks, theirs = (run.hooks, run.sink) if run is not None else ((), None)
            ctx.watchers = Watchers(both(self._emit, theirs), hooks)
            watch_spans(ctx)

    async def result(self) -> T:
        """The `RunResult` (or the pattern's result), once it ends. A run's never raises once
        started (a cancelled run gives its partial result). Cancelling the caller cancels it."""
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

    def __aiter__(self) -> RunStream[T]:
        self._start()
        return self

    async def __anext__(self) -> Event:
        reader = asyncio.current_task()
        if self._reader is not None and self._reader is not reader:
            raise UserError(
                f"run_streamed({self.name}, ...) is already read by another `async for`: each "
                "event goes to one reader, so two would each see part of the run. Read it once "
                "and pass the events on (await stream.result() gives the result alone)."
            )
        self._reader = reader
        try:
            while not self._events:
                if self._done:
                    if self._error is not None:
                        raise self._error
                    raise StopAsyncIteration
                if self._wake is None:
                    self._wake = asyncio.Event()
                self._wake.clear()
                await self._wake.wait()
            return self._events.popleft()
        finally:
            self._reader = None

    def _start(self) -> asyncio.Future[T]:
        if self._task is None:
            self._t0 = time.perf_counter()
            self._task = asyncio.ensure_future(self._run())
            self._task.add_done_callback(self._ended)
        return self._task

    async def _run(self) -> T:
        work = self._work(self._emit)
        if not inspect.isawaitable(work):
            raise UserError(
                f"run_streamed({self.name}, ...) needs a coroutine function such as "
                f"agentnb.parallel; {self.name}(...) returned {type(work).__name__}"
            )
        try:
            self._final = await work
        except asyncio.CancelledError:
            if self.context is not None:
                self._final = self._ending()
            raise
        return self._final

    def _emit(self, event: Event | None) -> None:
        if isinstance(event, RunEnded) and self.context is not None:
            self._seen_end = True  # a run sends its own RunEnded, unless cancelled
        if self._forward is not None:
            self._forward(event)
            return
        if event is not None:
            self._events.append(event)
        if self._wake is not None:
            self._wake.set()

    def _ended(self, task: asyncio.Future[T]) -> None:
        error = None if task.cancelled() else task.exception()
        if self.context is not None and self.agent is not None:
            if not self._seen_end:
                self._emit(run_ended(self.context, self.agent, cast(RunResult, self._ending())))
        elif error is None:
            final = None if task.cancelled() else task.result()
            name, since = self.name, time.perf_counter() - self._t0
            self._emit(RunEnded(name, name, 0, "", since, final))
        self._error = error
        self._done = True
        self._emit(None)  # the end: wakes a reader, or tells stream_sync's

    def _ending(self) -> T:
        """A run's final result; for a run cancelled before it began, an empty cancelled one.
        A pattern cut short has none: `RunCancelled`."""
        ctx = self.context
        if ctx is None:
            if self._final is None:
                raise RunCancelled(f"The {self.name} was cancelled before it ended.")
            return self._final
        if self._final is None:
            if ctx.root is not None:
                final = build_result(ctx, None, asyncio.CancelledError())
            else:
                error = RunCancelled("The run was cancelled before it began.")
                final = RunResult(None, False, error, Usage(), None, ctx.trace, [], ctx)
            self._final = cast(T, final)
        return self._final

    def __repr__(self) -> str:
        state = (
            "not started"
            if self._task is None
            else ("running" if not self._task.done() else "ended")
        )
        return f"RunStream({self.name!r}, {state})"


@overload
def stream_sync(agent: Agent, input: str | list[Message], /, **options: Any) -> Iterator[Event]: ...


@overload
def stream_sync(
    pattern: Callable[..., Awaitable[Any]], /, *args: Any, **kwargs: Any
) -> Iterator[Event]: ...


@shows_run_keywords
def stream_sync(target: Any, /, *args: Any, **kwargs: Any) -> Iterator[Event]:
    """``for event in stream_sync(agent, input, ...)``: a streamed run from synchronous code
    (``stream_sync(agentnb.parallel, agents, input, ...)`` for a pattern, as in `run_streamed`).

    Works in a script (the run goes on the calling thread, as for `agentnb.run_sync`) and in
    a Jupyter cell (on agentnb's background loop). The last event is `RunEnded`, whose ``result`` is the `RunResult`
    (or the pattern's result). An interrupt (Ctrl-C, Kernel -> Interrupt) cancels the run,
    which still ends with its `RunEnded` (``ok=False``, `RunCancelled`; for a pattern,
    ``result`` None); leaving the loop early cancels the run too.
    """
    if in_background_loop():
        raise UserError(
            "stream_sync was called from inside agentnb's event loop (an async tool?): "
            "use `agentnb.run_streamed(...)` with `async for` there."
        )
    stream = run_streamed(target, *args, **kwargs)
    if running_loop() is None:  # a script: on this thread, as run_sync does
        return _events_here(stream)
    return _events_of(stream)


def _events_here(stream: RunStream[Any]) -> Iterator[Event]:
    """The events of ``stream``, run on the calling thread's loop: the loop runs while the
    reader waits for events, and pauses while the reader handles those that arrived together
    (taken as one batch, so that a reply of many small deltas costs one loop entry per batch)."""
    inbox: list[Event | None] = []
    arrived: asyncio.Event | None = None

    def forward(event: Event | None) -> None:
        inbox.append(event)
        if arrived is not None:
            arrived.set()

    async def next_events() -> None:
        nonlocal arrived
        while not inbox:
            arrived = arrived or asyncio.Event()
            arrived.clear()
            await arrived.wait()

    interrupted = False

    def interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        stream.cancel()

    stream._forward = forward
    runner = thread_loop().create_task(_quietly(stream))
    try:
        while True:
            try:
                with blocking():  # a first Ctrl-C cancels the run, which still ends with RunEnded
                    run_here(next_events(), on_interrupt=interrupt)
            except KeyboardInterrupt:
                # Ctrl-C just before or after the wait, when Python's own handler is in place:
                # a first one ends the run the same way. The events stay in the inbox (taken
                # only below), so none is lost to the interrupt.
                if interrupted:  # a second one
                    raise
                interrupt()
                continue
            batch = inbox[:]
            inbox.clear()
            for event in batch:
                if event is None:  # the end
                    if stream._error is not None:
                        raise stream._error
                    return
                yield event
    finally:
        if not runner.done():  # left early: stop the run and let it wind down
            stream.cancel()
            if running_loop() is None:
                run_here(asyncio.wait([runner]))


def _events_of(stream: RunStream[Any]) -> Iterator[Event]:
    inbox: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
    stream._forward = inbox.put
    loop = background_loop()
    future = asyncio.run_coroutine_threadsafe(_quietly(stream), loop)
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
            if event is None:  # the end
                if stream._error is not None:
                    raise stream._error
                return
            yield event
    finally:
        if not future.done() and loop.is_running():  # left early: stop the run (if it can be)
            loop.call_soon_threadsafe(stream.cancel)
            try:
                future.result(timeout=10)
            except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
                pass


async def _quietly(stream: RunStream[Any]) -> None:
    """Run ``stream`` to its end; what it ends with reaches the reader as events."""
    try:
        await stream.result()
    except (Exception, asyncio.CancelledError):
        pass  # a pattern's UserError or RunCancelled: the reader raises it or sees RunEnded
