"""One long-lived event loop in a background thread, for blocking calls (`run_sync`).

A new loop per call would break clients bound to a loop (the httpx client inside ``openai``),
and Jupyter already runs a loop in the main thread, so `asyncio.run` is not an option there.
The coroutine runs on agentnb's own loop; the calling thread waits. Ctrl-C or Kernel ->
Interrupt cancels the run and, for a run of an agent, returns the partial result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, overload

from ..errors import UserError

if TYPE_CHECKING:
    from ..models.types import Message
    from .agent import Agent
    from .result import RunResult

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """agentnb's event loop (started on first use, a daemon thread that lives with the process)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed() or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="agentnb-loop", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def in_background_loop() -> bool:
    return _thread is not None and threading.current_thread() is _thread


@overload
def run_sync(target: Agent, input: str | list[Message], /, **options: Any) -> RunResult: ...


@overload
def run_sync(target: Awaitable[T], /) -> T: ...


def run_sync(target: Any, input: Any = None, /, **kwargs: Any) -> Any:
    """Run an agent (``run_sync(agent, input, **run_options)``) or any agentnb awaitable
    (``run_sync(agentnb.parallel(...))``) to completion from synchronous code.

    Works in a plain script and inside a running event loop (a Jupyter cell), without
    nest_asyncio. An interrupt cancels the work; for an agent run the partial `RunResult`
    (``ok=False``, error `RunCancelled`) is returned instead of raising.
    """
    from .agent import Agent
    from .options import RunOptions
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
        return wait(coro)
    except (KeyboardInterrupt, concurrent.futures.CancelledError):
        if ctx is not None and ctx.root is not None:
            return build_result(ctx, None, asyncio.CancelledError())
        raise


def wait(awaitable: Awaitable[T]) -> T:
    """Block until ``awaitable`` finishes on the background loop; an interrupt cancels it
    and waits for the cancellation to finish (so spans are closed) before re-raising."""
    loop = background_loop()
    holder: dict[str, asyncio.Task[Any]] = {}

    async def main() -> T:
        holder["task"] = asyncio.current_task()  # type: ignore[assignment]
        return await awaitable

    global _main_blocked
    on_main = threading.current_thread() is threading.main_thread()
    _main_blocked += on_main
    future = asyncio.run_coroutine_threadsafe(main(), loop)
    try:
        return future.result()
    except KeyboardInterrupt:

        def cancel() -> None:  # on the loop's thread, where `main` records its task
            task = holder.get("task")
            if task is not None:
                task.cancel()  # the future then ends when the task has cleaned up
            else:
                future.cancel()  # not started yet: it never will

        loop.call_soon_threadsafe(cancel)
        try:
            future.result(timeout=10)
        except BaseException:
            pass
        raise
    finally:
        _main_blocked -= on_main


_main_blocked = 0


def main_thread_blocked() -> bool:
    """Whether the main thread is blocked in `wait` now. In Jupyter the main thread is the
    kernel's: while it blocks, widget clicks cannot reach Python (see `runtime.approval`)."""
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
