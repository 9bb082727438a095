"""An event loop kept per thread, for `run_sync` and `stream_sync` when no loop is running.

In a plain script the run happens on the calling thread, so objects bound to their thread
(a ``sqlite3`` connection, a GUI handle) work from instructions functions, hooks and async
tools. The loop is kept between calls, so a client bound to the loop of its first call (the
httpx client inside ``openai``) keeps working across calls. Where a loop is already running
(a Jupyter cell), that loop cannot be re-entered: `agentnb.runtime.engine.blocking` uses its background
loop instead.

Ctrl-C while the loop runs cancels the work (a first interrupt; a second one raises at once),
waits for the cancellation to finish (so spans are closed), then raises `KeyboardInterrupt`,
as ``asyncio.run`` does. A `SystemExit` or `KeyboardInterrupt` that a stray task lets out of
the loop is absorbed (that task holds it); the work's own comes back to the caller.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

_local = threading.local()
_loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
"""Every loop this module made: code running on one must not block on another run."""


class _Kept:
    """The thread's loop; closed when the thread ends (the holder is dropped with it)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        _loops.add(self.loop)

    def __del__(self) -> None:
        loop = self.loop
        if not loop.is_running() and not loop.is_closed():
            loop.close()


def thread_loop() -> asyncio.AbstractEventLoop:
    """This thread's loop (made on first use, kept while the thread lives)."""
    kept: _Kept | None = getattr(_local, "kept", None)
    if kept is None or kept.loop.is_closed():
        kept = _local.kept = _Kept()
    return kept.loop


def is_thread_loop(loop: asyncio.AbstractEventLoop | None) -> bool:
    """Whether ``loop`` is one of the per-thread loops made here."""
    return loop is not None and loop in _loops


class _Escaped(Exception):
    """Carries a `BaseException` out of the work's task (asyncio would raise it from the loop)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def run_here(awaitable: Awaitable[T], on_interrupt: Callable[[], None] | None = None) -> T:
    """Run ``awaitable`` to completion on this thread's loop.

    A first Ctrl-C calls ``on_interrupt`` (default: cancel the work) and lets the work wind
    down; the work then ends (cancelled: `KeyboardInterrupt` is raised here) or returns
    normally. A second Ctrl-C raises `KeyboardInterrupt` at once."""
    loop = thread_loop()

    async def main() -> T:
        try:
            return await awaitable
        except (asyncio.CancelledError, GeneratorExit, Exception):
            raise
        except BaseException as exc:  # would leave the loop from the task's step
            raise _Escaped(exc) from None

    task: asyncio.Task[T] | None = None
    interrupts = 0

    def interrupt() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1 or task is None:
            raise KeyboardInterrupt()
        if on_interrupt is not None:  # even when the wait has just ended: its work goes on
            on_interrupt()
        elif not task.done():
            task.cancel()
        # else the work ended as the Ctrl-C came: its result stands

    try:
        handler = _install(loop, interrupt)
    except BaseException:  # Ctrl-C before the handler was in place: nothing has started
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise
    task = loop.create_task(main())
    try:
        while not task.done():
            try:
                loop.run_until_complete(task)
            except (KeyboardInterrupt, SystemExit):
                if interrupts > 1:
                    raise
                continue  # a stray task's, which holds it: keep serving the work
            except BaseException:
                if not task.done():
                    raise
    except KeyboardInterrupt:
        _restore(loop, handler, interrupt)  # a third interrupt is not caught
        if not task.done():  # a second interrupt: cancel, and wait for the cancellation
            task.cancel()
            _drain(loop, task)
        raise
    finally:
        _restore(loop, handler, interrupt)
    if task.cancelled():
        if asyncio.iscoroutine(awaitable):  # cancelled before its first step: never started
            awaitable.close()
        if interrupts:
            raise KeyboardInterrupt()
        raise asyncio.CancelledError()
    error = task.exception()
    if isinstance(error, _Escaped):
        raise error.error
    return task.result()


def _drain(loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
    while not task.done():
        try:
            loop.run_until_complete(asyncio.wait([task]))
        except SystemExit:  # a stray task's
            continue


_handlers: list[Callable[[], None]] = []
"""The Ctrl-C handlers of the `run_here` calls now running on the main thread's loop."""


def _ctrl_c() -> None:
    """The loop's one Ctrl-C callback: the handler of the `run_here` running now. The loop
    reads a signal from its wakeup pipe and queues this callback; when that happens just as
    one wait ends, the callback runs at the loop's next start, in the next wait, which takes
    the interrupt (a callback bound to the wait that had ended would see its work done and the
    Ctrl-C would be lost)."""
    if not _handlers:
        raise KeyboardInterrupt()
    _handlers[-1]()


def _restore(
    loop: asyncio.AbstractEventLoop, installed: bool, interrupt: Callable[[], None]
) -> None:
    if not installed:
        return
    if interrupt in _handlers:
        _handlers.remove(interrupt)
    try:
        if loop.remove_signal_handler(signal.SIGINT):  # the default handler is back
            return
    except NotImplementedError:
        pass
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _install(loop: asyncio.AbstractEventLoop, interrupt: Callable[[], None]) -> bool:
    """Take over Ctrl-C while the loop runs (main thread, default handler only: a handler of
    the user's is left alone).

    Through the loop's own signal handling where it has one: the signal then also writes to
    the loop's wakeup pipe (`signal.set_wakeup_fd`), so a Ctrl-C that lands just as the loop
    blocks in ``select()`` wakes it at once. A plain `signal.signal` handler runs only when
    the blocked call returns: at the loop's next timer, a minute later for a model that
    hangs. Where the loop has none (Windows), the plain handler is what there is."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    try:
        loop.add_signal_handler(signal.SIGINT, _ctrl_c)
    except NotImplementedError:
        signal.signal(signal.SIGINT, lambda signum, frame: _ctrl_c())
    _handlers.append(interrupt)
    return True
