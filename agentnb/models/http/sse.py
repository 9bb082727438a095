"""Streaming over HTTP, for any provider: server-sent events, and retries before the first delta.

A provider's stream module reads its events into deltas and, at the end, the full response
(`Accumulator`); `stream_with_retries` runs the attempts. An attempt that fails before the
first delta is retried as `Slots.send` retries a request (same `._send.Attempts`: same
backoff and bounds, same ``retry`` events);
once a delta has been handed on, what was shown cannot be taken back, so a stream that breaks
after it (an error, or an end without the provider's end marker) ends the call with
`StreamBroken`. A stream that ends without its end marker is broken, never silently short;
once the end marker came, the stream is over and nothing after it is read as part of the reply.
What little follows it (the body's end: a blank line, the chunked encoding's last chunk) is
still read and dropped, briefly (`finish_body`): a response closed before its body ends takes
its connection with it, and every streamed call would pay a new TCP (and TLS) handshake.

A hostile or broken server is bounded three ways: ``timeout`` bounds the whole attempt,
``stream_idle`` the wait between two events (a keep-alive comment is not progress), and
``max_response_chars`` the text and tool arguments one reply may hold.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, aclosing
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any, Protocol

from ...errors import ModelHTTPError, StreamBroken, UnreadableReply
from ..deltas import StreamItem, TextChunk, ToolCallChunk
from ..types import ModelResponse
from .attempt_limit import Deadline
from .first_byte import first_byte_event
from .rules import Failure
from .send import Slots


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
    try:
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
    finally:  # closed at the end marker: close the body's lines now, not when collected
        aclose = getattr(lines, "aclose", None)
        if aclose is not None:
            await aclose()


_NEWLINE = re.compile(r"\r\n|\r|\n")


async def utf8_lines(chunks: AsyncIterator[bytes]) -> AsyncGenerator[str, None]:
    """The lines of a body given in byte chunks, decoded strictly: a stream that is not valid
    UTF-8 is refused (`BadEvent`), as a whole reply that is not would be, rather than read
    with U+FFFD in place of what the server sent. Lines end at CR LF, LF or CR (the spec's)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    line: list[str] = []  # the pieces of the line not yet ended
    after_cr = False  # the last text ended with CR: a LF starting the next one is its pair
    try:
        async for chunk in chunks:
            text = _decode(decoder, chunk)
            if not text:
                continue
            if after_cr and text.startswith("\n"):
                text = text[1:]
            after_cr = text.endswith("\r")
            first, *rest = _NEWLINE.split(text)
            line.append(first)
            if rest:
                yield "".join(line)
                for whole in rest[:-1]:
                    yield whole
                line = [rest[-1]]
        line.append(_decode(decoder, b"", final=True))
        if "".join(line):
            yield "".join(line)
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


def _decode(decoder: codecs.IncrementalDecoder, chunk: bytes, final: bool = False) -> str:
    try:
        return decoder.decode(chunk, final)
    except UnicodeDecodeError as exc:
        raise BadEvent(f"a stream that is not valid UTF-8 ({exc.reason})") from None


def attrs(value: Any, raw: frozenset[str] = frozenset()) -> Any:
    """JSON (dicts, lists) as objects with attributes, the shape an SDK's parsed reply has, so
    a stream's end is read by the same ``response_from_wire`` as a whole reply. Fields named
    in ``raw`` stay as they are (a tool's ``input``, which the SDK keeps a dict too)."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: v if k in raw else attrs(v, raw) for k, v in value.items()})
    if isinstance(value, list):
        return [attrs(v, raw) for v in value]
    return value


class BadEvent(ValueError):
    """An event the reader cannot use (a delta whose text is not a string): not retried, and
    after the first delta a `StreamBroken` naming what came."""


def text_in(value: Any, what: str) -> str:
    """``value`` when it is a string (None is ""); else `BadEvent` naming what was received."""
    if value is None or isinstance(value, str):
        return value or ""
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:60] + "..."
    raise BadEvent(f"a delta whose {what} is {type(value).__name__} {shown}, not text")


class ServerError(Exception):
    """An error event inside a stream (``{"error": ...}``, Anthropic's ``event: error``)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class Accumulator(Protocol):
    """A provider's reading of one stream."""

    complete: bool
    """The provider's end marker arrived, after everything a response needs."""

    ended: bool
    """The provider's end marker arrived: the stream is over, whatever follows is not read."""

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


async def stream_with_retries(
    slots: Slots,
    open_stream: OpenStream,
    accumulator: Callable[[], Accumulator],
    events: list[dict[str, Any]],
    *,
    fallback: Callable[[Failure], bool] | None = None,
) -> AsyncGenerator[StreamItem, None]:
    """The deltas of one model call, then its response; see the module docstring.

    Each attempt is bounded as a whole by the model's ``timeout`` and, between two events of
    the stream, by its ``stream_idle`` (`._deadline.Deadline`); retries follow
    `._send.Attempts`, as a request's do. What the server says is scrubbed of the key as it
    is read, so no object of a failed call holds it."""
    owner = slots.owner
    attempts = slots.attempts(events)
    cap = owner.max_response_chars
    while True:
        reader = accumulator()
        shown = 0  # deltas handed on
        chars = 0  # their text and arguments
        failed: Failure | None = None
        deadline = Deadline(owner.timeout, idle=owner.stream_idle)
        arrived: dict[str, Any] | None = None
        try:
            async with AsyncExitStack() as stack:
                raw = await deadline.run(stack.enter_async_context(open_stream()))
                arrived = first_byte_event(raw, attempts.started, now_if_unstamped=True)
                why = ""
                body = utf8_lines(raw.iter_bytes())
                lines = deadline.each(server_events(body))
                await stack.enter_async_context(aclosing(lines))
                deltas = await stack.enter_async_context(aclosing(_deltas(lines, reader)))
                try:
                    async for delta in deltas:
                        chars += _size(delta)
                        if chars > cap:
                            raise BadEvent(too_long(cap))
                        shown += 1
                        yield delta
                except ServerError as exc:
                    failed = replace(exc.failure, message=slots.scrub(exc.failure.message))
                    why = f"an error event: {failed.message}"
                except BadEvent as exc:
                    failed = Failure(None, slots.scrub(str(exc)), retryable=False)
                    why = failed.message
                except Exception as exc:  # the connection broke, or the deadline passed
                    failed = owner._failure(exc) or Failure(
                        None,
                        slots.scrub(f"broke off ({type(exc).__name__}: {exc})"),
                        kind="connection_error",
                    )
                    why = failed.message
                if failed is not None and shown:
                    raise attempts.error(_after_first_delta(why), kind=StreamBroken)
                if failed is None and reader.ended:
                    await finish_body(body)
        except ModelHTTPError:
            raise
        except Exception as exc:  # the SDK's own error, raised on opening (a bad status)
            failed = owner._failure(exc)
            if failed is None:
                raise
        if failed is None and not reader.complete:
            if shown:
                raise attempts.error(_after_first_delta(reader.missing()), kind=StreamBroken)
            failed = Failure(
                None, f"ended its stream early ({reader.missing()})", kind="connection_error"
            )
        if failed is not None:
            await attempts.retry_or_raise(failed, fallback)
            continue
        try:
            response = reader.response()
        except (ValueError, TypeError, AttributeError) as exc:
            failed = Failure(
                None, slots.scrub(f"a stream that cannot be read ({exc})"), retryable=False
            )
        else:
            if arrived is not None:
                events.append(arrived)
            response.events[:0] = events
            yield response
            return
        raise attempts.error(failed, kind=UnreadableReply)


async def _deltas(
    lines: AsyncIterator[ServerEvent], reader: Accumulator
) -> AsyncGenerator[TextChunk | ToolCallChunk, None]:
    """The deltas of a stream's events, up to its end marker: nothing after it is read. (Its
    own frame holds each event as received, so that no frame of a failed call's traceback
    holds what the server said unscrubbed.)"""
    async for event in lines:
        for delta in reader.feed(event):
            yield delta
        if reader.ended:
            return


FINISH_BODY_S = 0.25
"""How long the end of a body is waited for after the stream's end marker. A server sends it
at once; one that does not is not waited for longer (its connection is then dropped)."""

FINISH_BODY_LINES = 8
"""At most this many lines after the end marker are read and dropped before giving up."""


async def finish_body(body: AsyncIterator[str]) -> None:
    """Read a body to its end after the stream's end marker, so that closing the response
    returns its connection to the pool instead of closing it. Bounded by `FINISH_BODY_S`
    and `FINISH_BODY_LINES`; whatever goes wrong here only costs the connection, never the
    reply, which is complete."""
    left = FINISH_BODY_LINES
    try:
        async for _ in Deadline(FINISH_BODY_S, idle=FINISH_BODY_S).each(body):
            left -= 1
            if left < 0:
                return
    except Exception:  # the reply is whole; a lost connection is all it costs
        return


def too_long(cap: int) -> str:
    """Why a reply past ``max_response_chars`` was cut off, and what to do."""
    return (
        f"a reply longer than max_response_chars={cap:,} characters (text and tool "
        "arguments); raise max_response_chars=... on the model if such replies are expected"
    )


def _size(delta: TextChunk | ToolCallChunk) -> int:
    if isinstance(delta, TextChunk):
        return len(delta.text)
    return len(delta.arguments) + len(delta.name)


def _after_first_delta(why: str) -> Failure:
    return Failure(None, f"a stream that broke off after it began ({why}); not retried")
