"""Blocking calls (`run_sync`): on the calling thread's own loop, or on a background loop.

With no event loop running in the calling thread (a plain script, a worker thread), the work
runs right there, on a loop kept for that thread (`agentnb.runtime.engine.thread_loop`). Where one
is running (Jupyter runs a loop in the main thread) it cannot be re-entered, so the work goes
to one long-lived loop in a background thread and the calling thread waits. A new loop per
call would break clients bound to a loop (the httpx client inside ``openai``) either way. Ctrl-C or Kernel ->
Interrupt cancels the run and, for a run of an agent, returns the partial result.

User code may raise any `BaseException` on that loop (a tool calling ``sys.exit()``). asyncio
lets `SystemExit` and `KeyboardInterrupt` out of a task and out of ``run_forever``; left
alone, that would end the loop's thread and leave the caller waiting for ever. So the work
`wait` submits hands such an exception back to the caller as a value, the thread goes back
to serving the loop when one escapes anyway (from a task the work started), and a caller
whose loop is gone all the same is told so within `_CHECK_EVERY` seconds.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import queue
import threading
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, overload

from ...errors import AgentnbError, UserError
from ..data.options import shows_run_keywords
from .thread_loop import is_thread_loop, run_here

if TYPE_CHECKING:
    from ...models.types import Message
    from ..agents.agent import Agent
    from ..data.options import RunKeywords
    from ..data.result import RunResult

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_CHECK_EVERY = 0.25
"""Seconds between a waiting caller's checks that the loop's thread is still alive."""


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """The loop's thread: run the loop until it is stopped, through a SystemExit or a
    KeyboardInterrupt that a task's step lets out of ``run_forever``."""
    while True:
        try:
            loop.run_forever()
        except (KeyboardInterrupt, SystemExit):  # out of a task's step: the task holds it too
            continue
        return


def background_loop() -> asyncio.AbstractEventLoop:
    """agentnb's event loop (started on first use, a daemon thread that lives with the process)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed() or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=_serve, args=(loop,), name="agentnb-loop", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def in_background_loop() -> bool:
    """Whether the caller runs on one of agentnb's loops (the background one or a thread's),
    where blocking on another run would stop the loop that serves it."""
    if _thread is not None and threading.current_thread() is _thread:
        return True
    return is_thread_loop(running_loop())


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread, if any."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


@overload
def run_sync(
    target: Agent, input: str | list[Message], /, **options: Unpack[RunKeywords]
) -> RunResult: ...


@overload
def run_sync(target: Awaitable[T], /) -> T: ...


@shows_run_keywords
def run_sync(target: Any, input: Any = None, /, **kwargs: Any) -> Any:
    """Run an agent (``run_sync(agent, input, **run_options)``) or any agentnb awaitable
    (``run_sync(agentnb.parallel(...))``) to completion from synchronous code.

    Works in a plain script and inside a running event loop (a Jupyter cell), without
    nest_asyncio. With no loop running, the work runs on the calling thread (on a loop kept
    for it), so objects bound to that thread work in instructions, hooks and async tools;
    inside a running loop it runs on agentnb's background loop. An interrupt cancels the work; for an agent run the partial `RunResult`
    (``ok=False``, error `RunCancelled`) is returned instead of raising.
    """
    from ..agents.agent import Agent
    from ..data.options import RunOptions
    from .runner import build_result, execute, start_context

    ctx = None
    if isinstance(target, Agent):
        ctx = start_context(target, input, RunOptions.of(**kwargs))
        coro: Awaitable[Any] = execute(target, input, ctx)
    elif inspect.isawaitable(target):
        if input is not None or kwargs:
            if inspect.iscoroutine(target):
                target.close()  # it will never run: no "never awaited" warning
            raise UserError(
                "run_sync(awaitable) takes no other arguments; pass them to the coroutine function."
            )
        coro = target
    else:
        raise UserError(
            f"run_sync takes an Agent and its input, or an awaitable such as agentnb.parallel(...); got {type(target).__name__}"
        )
    if in_background_loop():
        if inspect.iscoroutine(coro):
            coro.close()
        raise UserError(
            "run_sync was called from inside agentnb's event loop (an async tool?): use `await agentnb.run(...)` there."
        )
    try:
        if running_loop() is None:  # a script, a worker thread: here, on this thread's loop
            with blocking():
                return run_here(coro)
        return wait(coro)
    except (KeyboardInterrupt, concurrent.futures.CancelledError):
        if ctx is not None and ctx.root is not None:
            return build_result(ctx, None, asyncio.CancelledError())
        raise


class _Escaped(Exception):
    """Carries a `BaseException` that asyncio would let out of the loop back to the caller."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def wait(awaitable: Awaitable[T]) -> T:
    """Block until ``awaitable`` finishes on the background loop; an interrupt cancels it
    and waits for the cancellation to finish (so spans are closed) before re-raising.

    A `BaseException` the awaitable raises (`SystemExit`, `KeyboardInterrupt`, ...) is raised
    here, in the caller; the loop keeps running. If the loop's thread dies all the same,
    `AgentnbError` says so instead of waiting for ever."""
    loop = background_loop()
    thread = _thread
    holder: dict[str, asyncio.Task[Any]] = {}

    async def main() -> T:
        holder["task"] = asyncio.current_task()  # type: ignore[assignment]
        try:
            return await awaitable
        except (asyncio.CancelledError, GeneratorExit, Exception):
            raise  # a GeneratorExit here is this coroutine being closed, or a task's outcome
        except BaseException as exc:  # asyncio would re-raise it in the loop's thread
            raise _Escaped(exc) from None

    global _main_blocked
    on_main = threading.current_thread() is threading.main_thread()
    _main_blocked += on_main
    future = asyncio.run_coroutine_threadsafe(main(), loop)
    try:
        try:
            return _result(future, thread)
        except _Escaped as escaped:
            error = escaped.error
        raise error  # outside the handler, so that it is not chained to its carrier
    except KeyboardInterrupt:

        def cancel() -> None:  # on the loop's thread, where `main` records its task
            task = holder.get("task")
            if task is not None:
                task.cancel()  # the future then ends when the task has cleaned up
            else:
                future.cancel()  # not started yet: it never will

        if not future.done():
            loop.call_soon_threadsafe(cancel)
            try:
                future.result(timeout=10)
            except BaseException:
                pass
        raise
    finally:
        _main_blocked -= on_main


def _result(future: concurrent.futures.Future[T], thread: threading.Thread | None) -> T:
    """``future.result()``, unless the thread that should finish it dies first."""
    while True:
        try:
            future.exception(timeout=_CHECK_EVERY)  # waits, without raising the outcome
        except concurrent.futures.TimeoutError:
            _check_alive(thread)
            continue
        return future.result()


def take(inbox: queue.SimpleQueue[T]) -> T:
    """``inbox.get()`` for an inbox the background loop fills, unless the loop's thread dies
    first (`AgentnbError` then, within `_CHECK_EVERY` seconds, instead of waiting for ever)."""
    thread = _thread
    while True:
        try:
            return inbox.get(timeout=_CHECK_EVERY)
        except queue.Empty:
            _check_alive(thread)


def _check_alive(thread: threading.Thread | None) -> None:
    if thread is None or not thread.is_alive():
        raise AgentnbError(
            "agentnb's background event loop stopped while this call was waiting on it, "
            "so the call cannot finish. Run it again: a new loop will be started."
        ) from None


_main_blocked = 0


def main_thread_blocked() -> bool:
    """Whether the main thread is blocked in `wait` now. In Jupyter the main thread is the
    kernel's: while it blocks, widget clicks cannot reach Python (see `agentnb.runtime.guards.approval`)."""
    return _main_blocked > 0


@contextmanager
def blocking() -> Iterator[None]:
    """Count the calling thread as waiting on the background loop while inside (see
    `main_thread_blocked`): for waits other than `wait`, such as a stream read in a cell."""
    global _main_blocked
    on_main = threading.current_thread() is threading.main_thread()
    _main_blocked += on_main
    try:
        yield
    finally:
        _main_blocked -= on_main
