"""Run the tool calls of one turn concurrently, the first run-ending error stopping the others."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


async def run_concurrently(coros: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    """The results of ``coros`` in their order, each run as a task.

    When one raises (anything but a cancellation), those still running are cancelled and
    awaited, then the first error in the order of ``coros`` is raised; every task's outcome is
    retrieved, so none is reported as "never retrieved". When the caller is cancelled, every
    task is cancelled and awaited.
    """
    tasks = [asyncio.create_task(_carrying(coro)) for coro in coros]
    try:
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        _close(coros)
        raise
    if pending:  # one raised a run-ending error: stop the others before reporting it
        for task in pending:
            task.cancel()
        await asyncio.wait(pending)
    _close(coros)
    # The error, not the cancellation of a sibling it caused; each task's outcome read once.
    errors = [task.exception() for task in tasks if not task.cancelled()]
    for error in errors:
        if error is not None:
            raise error.error if isinstance(error, _Carried) else error
    return [task.result() for task in tasks]  # a call cancelled from inside raises here


def _close(coros: Sequence[Coroutine[Any, Any, Any]]) -> None:
    """Close the calls a cancellation stopped before they started (their task was cancelled
    before its first step): never awaited, they would each be reported as such. Closing a
    coroutine that ran is a no-op."""
    for coro in coros:
        coro.close()


class _Carried(Exception):
    """Carries a `SystemExit` or `KeyboardInterrupt` out of a task: raised from a task's step,
    those leave the event loop itself (ending a Jupyter kernel's loop, or agentnb's)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


async def _carrying(coro: Coroutine[Any, Any, T]) -> T:
    try:
        return await coro
    except (KeyboardInterrupt, SystemExit) as exc:
        raise _Carried(exc) from None
