"""A Responses API stream (server-sent events) read into deltas and, at its end, the response.

The events that matter: ``response.output_item.added`` (a message, a function call with its
name and ``call_id``, a reasoning item, a hosted tool's call), ``response.output_text.delta``
and ``response.function_call_arguments.delta`` (the pieces), and the end marker
``response.completed`` (or ``response.incomplete``) carrying the whole response, usage
included; ``response.failed`` and ``error`` report a failure. The whole response of the end
event is read by `._responses_wire.response_from_wire`, so a streamed call's response is the
one the same call would have returned whole.

What was streamed and what the end says must agree. An event is named by its ``type`` field,
as the API documents it and the ``openai`` package reads it: one without a ``type``, or whose
SSE ``event:`` line names another, is refused (`agentnb.models.http.sse.BadEvent`), never read by its ``event:``
line alone. A ``response.completed`` whose text or function calls differ from what was
streamed ends the call with `agentnb.errors.UnreadableReply`: the user saw the streamed text,
the result would hold the other, and neither can be trusted over the other.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ...deltas import StreamItem, TextChunk, ToolCallChunk
from ...http.rules import Failure
from ...http.sse import BadEvent, ServerError, ServerEvent, attrs, stream_with_retries, text_in
from ...types import ModelRequest, ModelResponse
from .wire import MalformedReply, response_from_wire

if TYPE_CHECKING:
    from .adapter import OpenAIResponsesModel

_END = frozenset({"response.completed", "response.incomplete"})

_ERROR_STATUS = {"server_error": 500, "rate_limit_exceeded": 429, "overloaded": 529}
"""The status an ``error`` event's code stands for, so that one before the first delta is
retried like the same HTTP error; another code is not retried."""


class ResponseStream:
    """What one Responses API stream has said so far."""

    def __init__(self, done: Callable[[ModelResponse, str | None], None]) -> None:
        self.complete = False
        self.ended = False  # response.completed (or incomplete) came: nothing after it is read
        self.reply: dict[str, Any] | None = None
        self.calls: dict[int, int] = {}
        """A function call's output index -> its index among the calls."""
        self._text: list[str] = []
        self._streamed_calls: dict[int, list[str]] = {}  # index -> [name, arguments]
        self._done = done

    def feed(self, event: ServerEvent) -> list[TextChunk | ToolCallChunk]:
        data = json.loads(event.data)
        if not isinstance(data, dict):
            raise ValueError(f"an event that is not an object: {event.data[:100]!r}")
        kind = data.get("type")
        if not isinstance(kind, str) or (event.event is not None and event.event != kind):
            raise BadEvent(
                f"an event whose type is {kind!r} (SSE event: {event.event!r}); each event of a "
                "Responses stream names itself in its 'type' field"
            )
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            text = text_in(data.get("delta"), "content")
            self._text.append(text)
            return [TextChunk(text)] if text else []
        if kind == "response.output_item.added":
            item = data.get("item") or {}
            if item.get("type") == "function_call":
                index = self.calls.setdefault(int(data.get("output_index", 0)), len(self.calls))
                name = text_in(item.get("name"), "tool name")
                arguments = text_in(item.get("arguments"), "tool arguments")
                self._streamed_calls[index] = [name, arguments]
                return [ToolCallChunk(index, name, arguments, item.get("call_id") or "")]
            return []
        if kind == "response.function_call_arguments.delta":
            found = self.calls.get(int(data.get("output_index", 0)))
            delta = text_in(data.get("delta"), "tool arguments")
            if found is not None and delta:
                self._streamed_calls[found][1] += delta
                return [ToolCallChunk(found, arguments=delta)]
            return []
        if kind in _END:
            self.reply = data.get("response")
            self.complete = isinstance(self.reply, dict)
            self.ended = True
        elif kind == "response.failed":
            error = (data.get("response") or {}).get("error") or {}
            raise ServerError(Failure(None, str(error.get("message") or error), retryable=False))
        elif kind == "error":
            code = data.get("code")
            status = code if isinstance(code, int) else _ERROR_STATUS.get(str(code))
            message = str(data.get("message") or data)
            raise ServerError(Failure(status, message, retryable=status is not None))
        return []

    def response(self) -> ModelResponse:
        response, rid = response_from_wire(attrs(self.reply))
        self._agrees(response)
        self._done(response, rid)
        return response

    def _agrees(self, response: ModelResponse) -> None:
        """Raise `MalformedReply` when the end's response is not what was streamed."""
        streamed = "".join(self._text)
        final = response.text or ""
        if final != streamed:
            raise MalformedReply(
                f"its response.completed holds a text of {len(final):,} characters other than "
                f"the {len(streamed):,} streamed"
            )
        calls = [(c.name, c.arguments) for c in response.tool_calls]
        shown = [
            (n, a or "{}")
            for n, a in (self._streamed_calls[i] for i in sorted(self._streamed_calls))
        ]
        if calls != shown:
            raise MalformedReply(
                f"its response.completed holds function calls {[n for n, _ in calls]} other "
                f"than those streamed {[n for n, _ in shown]}, or with other arguments"
            )

    def missing(self) -> str:
        return "no response.completed"


async def stream_response(
    model: OpenAIResponsesModel, request: ModelRequest
) -> AsyncIterator[StreamItem]:
    """`OpenAIResponsesModel.stream`: one call streamed, with the adapter's slots and retries."""
    async with model._slots.slot() as (client, events):
        plan = model._plan(request, events)

        def open_stream() -> Any:
            body = plan.body(model, stream=True)
            return client.responses.with_streaming_response.create(**body)

        def fallback(failed: Failure) -> bool:
            return plan.lost(model, failed, events)

        def reader() -> ResponseStream:
            return ResponseStream(lambda response, rid: model._remember(request, response, rid))

        items = stream_with_retries(model._slots, open_stream, reader, events, fallback=fallback)
        async with aclosing(items):
            async for item in items:
                yield item
