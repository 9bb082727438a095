"""A deadline that cannot be confused with a timeout raised inside the work it bounds.

``asyncio.wait_for`` reports its own deadline as ``TimeoutError``, and so does an HTTP client
whose request timed out inside the awaited work. The run and `AgentTool` must tell the two
apart: the first is "the run took too long", the second is a failure of one call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class DeadlinePassed(Exception):
    """The deadline given to `within` passed before the work finished."""


def within(work: Awaitable[T], seconds: float | None) -> Awaitable[T]:
    """``work`` to await, cancelled after ``seconds`` (None: ``work`` itself, no deadline).

    Awaiting it raises `DeadlinePassed` when the deadline passes; a ``TimeoutError`` raised
    inside ``work`` propagates as itself.
    """
    return work if seconds is None else _within(work, seconds)


async def _within(work: Awaitable[T], seconds: float) -> T:
    try:
        return await asyncio.wait_for(_own_timeouts(work), seconds)
    except TimeoutError:
        raise DeadlinePassed from None
    except _InnerTimeout as inner:
        raise inner.error from inner.error.__cause__


class _InnerTimeout(Exception):
    """Carries a TimeoutError raised inside the work past ``wait_for``; and a SystemExit or
    KeyboardInterrupt, which out of the task ``wait_for`` makes (before Python 3.12) would stop
    the event loop itself."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


async def _own_timeouts(work: Awaitable[T]) -> T:
    try:
        return await work
    except (TimeoutError, KeyboardInterrupt, SystemExit) as exc:
        raise _InnerTimeout(exc) from None
