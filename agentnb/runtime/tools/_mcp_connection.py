"""One open session with one MCP server, owned by a task of its own.

The SDK's transports (``stdio_client``, ``streamable_http_client``) and its ``ClientSession``
are anyio context managers: they must be entered and left in the same task. A run's tools are
called from several tasks (the run loop, `asyncio.wait_for`'s task for a timeout, a task per
parallel tool call), so the session lives in one owner task, opened at the first use in a run
and closed when the run ends, and requests are sent to it from any task.

Every wait here is bounded: opening, listing and each call race the owner task (a server that
exited ends the wait at once) and a timeout (a server that hangs ends it after ``seconds``).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable
from typing import Any

CLOSE_SECONDS = 5.0
"""How long closing waits for the transport to shut down (a stdio server is terminated)."""


class ServerUnavailable(Exception):
    """The server could not be reached, exited, failed or did not answer in time.

    ``status`` is ``"timeout"`` for a server that did not answer, else ``"error"``."""

    def __init__(self, message: str, *, status: str = "error") -> None:
        super().__init__(message)
        self.status = status


class Connection:
    """A session with one server: `open`, then `request` from any task, then `close`."""

    def __init__(self, label: str, transport: Callable[[Any], Any]) -> None:
        self.label = label
        """How errors name the server (``MCP server 'fs'``)."""
        self._transport = transport
        """``transport(errlog) -> async context manager yielding (read, write)``."""
        self._session: Any = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._failure: BaseException | None = None
        # the server's stderr, kept for the error message (closed by close())
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        self._task: asyncio.Task[None] | None = None

    async def open(self, seconds: float) -> None:
        """Start the server (or connect to it) and initialise the session, within ``seconds``."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._own(), name=self.label)
        if self._ready.is_set():
            self._raise_if_failed()
            return
        ready = asyncio.ensure_future(self._ready.wait())
        try:
            done, _ = await asyncio.wait(
                {ready, self._task}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            ready.cancel()
        if not done:
            raise ServerUnavailable(
                f"{self.label} did not start within {seconds:g} s{self._stderr_tail()}",
                status="timeout",
            )
        self._raise_if_failed()

    async def request(self, method: str, seconds: float, *args: Any) -> Any:
        """``session.<method>(*args)``, within ``seconds``; `ServerUnavailable` if the server
        exits, fails or does not answer in time."""
        assert self._task is not None and self._session is not None, "open() first"
        if self._task.done():
            self._raise_if_failed()
            raise ServerUnavailable(f"{self.label} has exited{self._stderr_tail()}")
        call = asyncio.ensure_future(getattr(self._session, method)(*args))
        try:
            done, _ = await asyncio.wait(
                {call, self._task}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
            )
        except BaseException:
            call.cancel()
            raise
        if call in done:
            return call.result()  # the SDK's own errors (an MCPError) are the caller's to word
        call.cancel()
        if not done:
            raise ServerUnavailable(
                f"{self.label} did not answer within {seconds:g} s", status="timeout"
            )
        raise ServerUnavailable(f"{self.label} exited during the call{self._stderr_tail()}")

    async def close(self) -> None:
        """Leave the session and the transport (a stdio server is terminated), within
        `CLOSE_SECONDS`; an owner task that does not finish by then is cancelled."""
        task = self._task
        self._stop.set()
        if task is not None and not task.done():
            _, pending = await asyncio.wait({task}, timeout=CLOSE_SECONDS)
            if pending:
                task.cancel()
                await asyncio.wait({task}, timeout=CLOSE_SECONDS)
        self._errlog.close()

    async def _own(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                from mcp import ClientSession

                read, write = await stack.enter_async_context(self._transport(self._errlog))
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                self._session = session
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # the server failed: every waiter is told by _failure
            self._failure = exc
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self._ready.set()

    def _raise_if_failed(self) -> None:
        failure = self._failure
        if failure is None and self._session is None:
            failure = RuntimeError("the session ended before it started")
        if failure is not None:
            raise ServerUnavailable(
                f"{self.label} could not be started: {_describe(failure)}{self._stderr_tail()}"
            )

    def _stderr_tail(self) -> str:
        """The last line the server wrote to stderr, to help the reader see why."""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            lines = [line.strip() for line in self._errlog.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return f" (its last words on stderr: {lines[-1][:300]!r})" if lines else ""


def _describe(error: BaseException) -> str:
    """An exception in one line; an anyio exception group by its first leaf."""
    while getattr(error, "exceptions", None):  # an exception group (anyio's task groups)
        error = error.exceptions[0]  # type: ignore[attr-defined]
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}" if str(error) else text
