"""A Responses API stream (server-sent events) read into deltas and, at its end, the response.

The events that matter: ``response.output_item.added`` (a message, a function call with its
name and ``call_id``, a reasoning item, a hosted tool's call), ``response.output_text.delta``
and ``response.function_call_arguments.delta`` (the pieces), and the end marker
``response.completed`` (or ``response.incomplete``) carrying the whole response, usage
included; ``response.failed`` and ``error`` report a failure. The whole response of the end
event is read by `._responses_wire.response_from_wire`, so a streamed call's response is the
one the same call would have returned whole.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ...deltas import StreamItem, TextChunk, ToolCallChunk
from ...http.rules import Failure
from ...http.sse import ServerError, ServerEvent, attrs, stream_with_retries, text_in
from ...types import ModelRequest, ModelResponse
from .wire import response_from_wire

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
        self._done = done

    def feed(self, event: ServerEvent) -> list[TextChunk | ToolCallChunk]:
        data = json.loads(event.data)
        if not isinstance(data, dict):
            raise ValueError(f"an event that is not an object: {event.data[:100]!r}")
        kind = data.get("type") or event.event
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            text = text_in(data.get("delta"), "content")
            return [TextChunk(text)] if text else []
        if kind == "response.output_item.added":
            item = data.get("item") or {}
            if item.get("type") == "function_call":
                index = self.calls.setdefault(int(data.get("output_index", 0)), len(self.calls))
                return [
                    ToolCallChunk(
                        index,
                        text_in(item.get("name"), "tool name"),
                        text_in(item.get("arguments"), "tool arguments"),
                        item.get("call_id") or "",
                    )
                ]
            return []
        if kind == "response.function_call_arguments.delta":
            found = self.calls.get(int(data.get("output_index", 0)))
            delta = text_in(data.get("delta"), "tool arguments")
            if found is not None and delta:
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
        self._done(response, rid)
        return response

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
