"""`Limit`: at most N holders at once across every thread and event loop of the process.

An ``asyncio.Semaphore`` belongs to one event loop, and a model serves many: agentnb's
background loop, Jupyter's, and in a script one loop per thread calling ``run_sync``. A
model's ``max_concurrency`` is the model's, so its requests in flight are counted here,
under a thread lock; a waiter on any loop is woken on its own loop
(``call_soon_threadsafe``), and the slot is handed to it directly, so a newcomer cannot
overtake the queue.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Limit:
    """At most ``size`` holders at once, waiting in order of arrival."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._free = size
        self._lock = threading.Lock()
        self._waiting: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    def busy(self) -> bool:
        """Whether a new holder would have to wait."""
        with self._lock:
            return self._free <= 0 or bool(self._waiting)

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        await self.acquire()
        try:
            yield
        finally:
            self.release()

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free > 0 and not self._waiting:
                self._free -= 1
                return
            turn: asyncio.Future[None] = loop.create_future()
            self._waiting.append((loop, turn))
        try:
            await turn
        except BaseException:  # cancelled while waiting, or just after being handed the slot
            with self._lock:
                try:
                    self._waiting.remove((loop, turn))
                    handed = False
                except ValueError:
                    handed = True
            if handed:
                self.release()
            raise

    def release(self) -> None:
        with self._lock:
            # The oldest waiter whose loop is running; one on a loop that is paused (a thread's
            # loop between two run_sync calls) only if none is, so that no slot sits idle there.
            for loop, turn in sorted(self._waiting, key=lambda w: not w[0].is_running()):
                self._waiting.remove((loop, turn))
                try:
                    loop.call_soon_threadsafe(_grant, turn)
                except RuntimeError:  # its loop is closed: that waiter is gone
                    continue
                return
            self._free += 1


def _grant(turn: asyncio.Future[None]) -> None:
    if not turn.done():
        turn.set_result(None)
