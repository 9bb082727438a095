"""`Deadline`: the time one attempt at a model call may take, as a whole and, for a stream,
between its pieces.

An HTTP client's own timeout bounds each read, so a reply that trickles in a byte at a time
never trips it; a deadline bounds the attempt from its start to its last byte.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from typing import NoReturn, TypeVar

T = TypeVar("T")


class AttemptTimeout(Exception):
    """An attempt ran past its `Deadline`: ``limit`` is ``"timeout"`` or ``"idle"``."""

    def __init__(self, limit: str, seconds: float) -> None:
        super().__init__(f"{limit} of {seconds:g} s passed")
        self.limit = limit
        self.seconds = seconds


class Deadline:
    """The time one attempt may take, from the moment this is made.

    ``timeout`` bounds the whole attempt: connecting, sending, and the whole reply however
    slowly it trickles in (an HTTP client's own timeout only bounds each read). A streamed
    reply is bounded as a whole the same way, and ``idle`` bounds the wait for each of its
    pieces: ``await deadline.run(open_stream())``, then ``async for x in deadline.each(s)``.
    Running past either raises `AttemptTimeout`, which `Failure.of` reads as a timeout.
    """

    __slots__ = ("_end", "idle", "timeout")

    def __init__(self, timeout: float | None, idle: float | None = None) -> None:
        self.timeout = timeout
        self.idle = idle
        loop = asyncio.get_running_loop()
        self._end = None if timeout is None else loop.time() + timeout

    def _left(self) -> float | None:
        if self._end is None:
            return None
        return max(self._end - asyncio.get_running_loop().time(), 0.0)

    async def run(self, awaitable: Awaitable[T], *, idle: bool = False) -> T:
        """``await awaitable`` within what is left of the attempt (and ``idle``, if asked)."""
        left = self._left()
        limit = "timeout"
        if idle and self.idle is not None and (left is None or self.idle < left):
            left, limit = self.idle, "idle"
        if left is None:
            return await awaitable
        scope = asyncio.timeout(left)
        try:
            async with scope:
                return await awaitable
        except TimeoutError:
            if scope.expired():
                self._expired(limit)
            raise  # a TimeoutError of the awaitable's own

    def _expired(self, limit: str) -> NoReturn:
        seconds = self.idle if limit == "idle" else self.timeout
        raise AttemptTimeout(limit, seconds or 0.0) from None

    async def each(self, stream: AsyncIterator[T]) -> AsyncGenerator[T, None]:
        """The items of ``stream``, each within ``idle`` and all within ``timeout``; what
        ``stream`` skips (a stream's keep-alive comments) does not count as an item."""
        iterator = stream.__aiter__()
        try:
            while True:
                try:
                    item = await self.run(iterator.__anext__(), idle=True)
                except StopAsyncIteration:
                    return
                yield item
        finally:  # closed early (the end marker came, or the reader gave up): close ``stream``
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                await aclose()
