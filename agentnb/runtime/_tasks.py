"""Run the tool calls of one turn concurrently, the first run-ending error stopping the others.

This is ``asyncio.wait(tasks, return_when=FIRST_EXCEPTION)`` followed by cancelling what is
left, with one difference in mechanism: each call wakes the waiting turn itself, when it fails
or is the last to finish. ``asyncio.wait`` learns it from done callbacks, which run one pass of
the event loop later, and only then wakes the turn: at zero model latency that extra pass (and
its callbacks) was about a fifth of the cost of a turn that calls three sub-agents
(benchmarks/overhead.py). A call cancelled before it starts never runs its own code; a done
callback, removed as soon as the call starts, counts it instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")


async def run_concurrently(coros: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    """The results of ``coros`` in their order, each run as a task.

    When one raises (anything but a cancellation), those still running are cancelled and
    awaited, then the first error in the order of ``coros`` is raised, as ``[t.result() for t
    in tasks]`` would. When the caller is cancelled, every task is cancelled and awaited.
    """
    woken = asyncio.get_running_loop().create_future()
    left = len(coros)

    def finished(failed: bool) -> None:
        nonlocal left
        left -= 1
        if (failed or not left) and not woken.done():
            woken.set_result(None)

    def never_started(coro: Coroutine[Any, Any, T], task: asyncio.Task[T]) -> None:
        # Stays registered only on a task cancelled before its first step, whose `report`
        # never runs: it is counted here (and its coroutine closed, never to be awaited).
        coro.close()
        finished(False)

    async def report(coro: Coroutine[Any, Any, T], on_done: Callable[..., None]) -> T:
        current = asyncio.current_task()
        assert current is not None
        current.remove_done_callback(on_done)  # started: from here on, this counts the call
        try:
            result = await coro
        except asyncio.CancelledError:
            finished(False)
            raise
        except (KeyboardInterrupt, SystemExit) as exc:  # asyncio would re-raise these in the loop
            finished(True)
            raise _Carried(exc) from None
        except BaseException:
            finished(True)
            raise
        finished(False)
        return result

    tasks = []
    for coro in coros:
        on_done = partial(never_started, coro)
        task = asyncio.create_task(report(coro, on_done))
        task.add_done_callback(on_done)
        tasks.append(task)
    try:
        await woken
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    pending = [task for task in tasks if not task.done()]
    if pending:  # one raised a run-ending error: stop the others, then report it
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        # The error, not the cancellation of a sibling listed before it that it caused.
        for task in tasks:
            error = None if task.cancelled() else task.exception()
            if error is not None:
                raise _uncarried(error)
    return [_outcome(task) for task in tasks]  # re-raises the first error


class _Carried(Exception):
    """Carries a `SystemExit` or `KeyboardInterrupt` out of a task: raised from a task's step,
    those leave the event loop itself (ending a Jupyter kernel's loop, or ours)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _uncarried(error: BaseException) -> BaseException:
    return error.error if isinstance(error, _Carried) else error


def _outcome(task: asyncio.Task[T]) -> T:
    error = None if task.cancelled() else task.exception()
    if isinstance(error, _Carried):
        raise error.error
    return task.result()
