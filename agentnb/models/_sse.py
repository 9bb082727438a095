"""Streaming over HTTP, for any provider: server-sent events, and retries before the first delta.

A provider's stream module reads its events into deltas and, at the end, the full response
(`Accumulator`); `stream_with_retries` runs the attempts. An attempt that fails before the
first delta is retried as `Slots.send` retries a request (same backoff, same ``retry`` events);
once a delta has been handed on, what was shown cannot be taken back, so a stream that breaks
after it (an error, or an end without the provider's end marker) ends the call with
`StreamBroken`. A stream that ends without its end marker is broken, never silently short.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Protocol

from ..errors import ModelHTTPError, StreamBroken
from ._http import Backoff, Failure, Slots
from .deltas import StreamItem, TextChunk, ToolCallChunk
from .types import ModelResponse


@dataclass(frozen=True, slots=True)
class ServerEvent:
    """One server-sent event: its ``event:`` name (None when absent) and its ``data``."""

    event: str | None
    data: str


async def server_events(lines: AsyncIterator[str]) -> AsyncIterator[ServerEvent]:
    """The events of a ``text/event-stream`` body given line by line. An event is complete at
    the blank line after it; one cut before that blank line is dropped (the spec's rule)."""
    name: str | None = None
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield ServerEvent(name, "\n".join(data))
            name, data = None, []
            continue
        if line.startswith(":"):  # a comment (keep-alive)
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)


def attrs(value: Any, raw: frozenset[str] = frozenset()) -> Any:
    """JSON (dicts, lists) as objects with attributes, the shape an SDK's parsed reply has, so
    a stream's end is read by the same ``response_from_wire`` as a whole reply. Fields named
    in ``raw`` stay as they are (a tool's ``input``, which the SDK keeps a dict too)."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: v if k in raw else attrs(v, raw) for k, v in value.items()})
    if isinstance(value, list):
        return [attrs(v, raw) for v in value]
    return value


class ServerError(Exception):
    """An error event inside a stream (``{"error": ...}``, Anthropic's ``event: error``)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class Accumulator(Protocol):
    """A provider's reading of one stream."""

    complete: bool
    """The provider's end marker arrived."""

    def feed(self, event: ServerEvent) -> list[TextChunk | ToolCallChunk]:
        """The deltas in one event (raises `ServerError` for an error event)."""
        ...

    def response(self) -> ModelResponse:
        """The whole response, once `complete` (raises ValueError when it cannot be read)."""
        ...

    def missing(self) -> str:
        """What a stream that ended early lacks, in a few words."""
        ...


class OpenStream(Protocol):
    """One attempt: the SDK's streaming response (raising its own errors on a bad status)."""

    def __call__(self) -> AbstractAsyncContextManager[Any]: ...


@dataclass(frozen=True, slots=True)
class Retries:
    """How the adapter retries: its limit and backoff, and how it reads its SDK's errors."""

    max_retries: int
    backoff: Backoff
    failure: Callable[[Exception], Failure | None]


async def stream_with_retries(
    slots: Slots,
    open_stream: OpenStream,
    accumulator: Callable[[], Accumulator],
    retries: Retries,
    events: list[dict[str, Any]],
    *,
    fallback: Callable[[Failure], bool] | None = None,
) -> AsyncGenerator[StreamItem, None]:
    """The deltas of one model call, then its response; see the module docstring."""
    attempt = 0
    while True:
        reader = accumulator()
        shown = 0  # deltas handed on
        failed: Failure | None = None
        try:
            async with open_stream() as raw:
                try:
                    async for event in server_events(raw.iter_lines()):
                        for delta in reader.feed(event):
                            shown += 1
                            yield delta
                except ServerError as exc:
                    if shown:
                        raise _broken(slots, f"an error event: {exc}", attempt, events) from None
                    failed = exc.failure
                except Exception as exc:  # the connection broke while the body was read
                    why = f"{type(exc).__name__}: {exc}"
                    if shown:
                        raise _broken(slots, why, attempt, events) from exc
                    failed = Failure(None, f"broke off ({why})", kind="connection_error")
        except ModelHTTPError:
            raise
        except Exception as exc:  # the SDK's own error, raised on opening (a bad status)
            failed = retries.failure(exc)
            if failed is None:
                raise
        if failed is None and not reader.complete:
            if shown:
                raise _broken(slots, reader.missing(), attempt, events)
            failed = Failure(
                None, f"ended its stream early ({reader.missing()})", kind="connection_error"
            )
        if failed is not None:
            if failed.retryable and attempt < retries.max_retries:
                attempt += 1
                await _pause(retries.backoff, attempt, failed, events)
                continue
            if fallback is not None and fallback(failed):
                continue
            raise slots.error(failed.status, failed.message, attempt, events)
        try:
            response = reader.response()
        except (ValueError, TypeError, AttributeError) as exc:
            raise slots.error(
                None, f"a stream that cannot be read ({exc})", attempt, events
            ) from None
        response.events[:0] = events
        yield response
        return


def _broken(slots: Slots, why: str, attempt: int, events: list[dict[str, Any]]) -> StreamBroken:
    error = slots.error(
        None, f"a stream that broke off after it began ({why}); not retried", attempt, events
    )
    return StreamBroken(str(error), events=events)


async def _pause(
    backoff: Backoff, attempt: int, failed: Failure, events: list[dict[str, Any]]
) -> None:
    wait = backoff.delay(attempt, failed.retry_after)
    status = failed.status if failed.status is not None else failed.kind
    events.append({"event": "retry", "attempt": attempt, "status": status, "wait_s": wait})
    if wait > 0:
        await asyncio.sleep(wait)
