"""A Messages API stream (server-sent events) read into deltas and, at its end, the response.

The events: ``message_start`` (the message, its input usage), per content block
``content_block_start`` / ``content_block_delta`` (``text_delta``, or ``input_json_delta`` for
a tool's input) / ``content_block_stop``, then ``message_delta`` (stop reason, output usage)
and ``message_stop``, the end marker; ``ping`` between them, ``error`` on a failure. The
message is rebuilt and read by `._anthropic_wire.response_from_wire`, so a streamed call's
response is the one the same call would have returned whole.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ...deltas import StreamItem, TextChunk, ToolCallChunk
from ...http.rules import Failure
from ...http.sse import ServerError, ServerEvent, attrs, stream_with_retries, text_in
from ...request_fields import extra_body
from ...types import ModelRequest, ModelResponse
from .wire import StructuredMode, output_tool_name, request_to_wire, response_from_wire

if TYPE_CHECKING:
    from .adapter import AnthropicModel

_ERROR_STATUS = {"overloaded_error": 529, "api_error": 500, "rate_limit_error": 429}
"""The status an error event stands for, so that one before the first delta is retried."""


_RAW = frozenset({"input"})
"""A tool's input is a dict in the SDK's reply too."""


class MessageStream:
    """What one Messages API stream has said so far."""

    def __init__(self, request: ModelRequest, mode: StructuredMode) -> None:
        self.request = request
        self.mode = mode
        self.complete = False
        self.ended = False
        self.message: dict[str, Any] | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json: dict[int, list[str]] = {}
        self.calls = 0
        self.stop_reason: str | None = None
        self.answer_tool = (
            output_tool_name(request)
            if mode == "tool" and request.output_schema is not None
            else None
        )
        """In ``"tool"`` mode, the output tool: its input is the answer, streamed as text."""
        self.answer: int | None = None

    def feed(self, event: ServerEvent) -> list[TextChunk | ToolCallChunk]:
        data = json.loads(event.data)
        kind = data.get("type") or event.event
        if kind == "message_start":
            self.message = dict(data["message"])
            self.message["usage"] = dict(self.message.get("usage") or {})
        elif kind == "content_block_start":
            block = dict(data["content_block"])
            index = int(data["index"])
            self.blocks[index] = block
            if block.get("type") == "tool_use":
                self.json[index] = []
                if block.get("name") == self.answer_tool:  # the answer: its input is the text
                    self.answer = index
                    return []
                self.calls += 1
                return [
                    ToolCallChunk(self.calls - 1, block.get("name", ""), "", block.get("id", ""))
                ]
            if block.get("type") == "text" and text_in(block.get("text"), "text"):
                return [TextChunk(block["text"])]
        elif kind == "content_block_delta":
            return self._delta(int(data["index"]), data["delta"])
        elif kind == "message_delta":
            self.stop_reason = (data.get("delta") or {}).get("stop_reason") or self.stop_reason
            if self.message is not None:  # later counts replace the first ones
                self.message["usage"].update(
                    {k: v for k, v in (data.get("usage") or {}).items() if v is not None}
                )
        elif kind == "message_stop":
            self.ended = True
            self.complete = self.message is not None
        elif kind == "error":
            error = data.get("error") or {}
            status = _ERROR_STATUS.get(error.get("type", ""))
            raise ServerError(Failure(status, error.get("message", event.data[:200])))
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[TextChunk | ToolCallChunk]:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        if delta.get("type") == "text_delta":
            piece = text_in(delta.get("text"), "text")
            block["text"] = block.get("text", "") + piece
            return [TextChunk(piece)] if piece else []
        if delta.get("type") == "input_json_delta":
            part = text_in(delta.get("partial_json"), "tool input")
            self.json.setdefault(index, []).append(part)
            if index == self.answer:
                return [TextChunk(part)] if part else []
            order = sorted(i for i in self.json if i != self.answer).index(index)
            return [ToolCallChunk(order, arguments=part)] if part else []
        return []  # thinking, signatures, citations: not part of the answer's text

    def response(self) -> ModelResponse:
        """The message read whole. A tool's input that is not JSON is kept as its call's raw
        arguments, so the model is told, as for OpenAI, rather than the call failing (the
        answer tool of ``structured="tool"`` excepted: that input is the answer)."""
        assert self.message is not None
        content = []
        raw: list[str | None] = []  # per tool call: its input's text when it is not JSON
        for index, block in sorted(self.blocks.items()):
            if block.get("type") == "tool_use":
                text = "".join(self.json.get(index, []))
                try:
                    value, bad = (json.loads(text) if text.strip() else {}), None
                except ValueError:
                    if self._is_answer(block):
                        raise
                    value, bad = {}, text
                block = {**block, "input": value}
                raw.append(bad)
            content.append(block)
        message = {**self.message, "content": content, "stop_reason": self.stop_reason}
        response = response_from_wire(attrs(message, _RAW), self.request, self.mode)
        if any(raw) and len(response.tool_calls) == len(raw):
            for call, bad in zip(response.tool_calls, raw):
                if bad is not None:
                    call.arguments = bad
        return response

    def _is_answer(self, block: dict[str, Any]) -> bool:
        return (
            self.mode == "tool"
            and self.request.output_schema is not None
            and block.get("name") == output_tool_name(self.request)
        )

    def missing(self) -> str:
        if self.message is None:
            return "no message_start"
        return "no message_stop" + ("" if self.stop_reason else " and no stop reason")


async def stream_message(model: AnthropicModel, request: ModelRequest) -> AsyncIterator[StreamItem]:
    """`AnthropicModel.stream`: one call streamed, with the adapter's slots and retries."""
    async with model._slots.slot() as (client, events):
        body = request_to_wire(
            model.model, request, model.structured, model.max_tokens, model.cache
        )
        extra = extra_body(model.params, body)  # ModelSettings.extra, params

        def open_stream() -> Any:
            return client.messages.with_streaming_response.create(
                **body, stream=True, timeout=model.timeout, **extra
            )

        def reader() -> MessageStream:
            return MessageStream(request, model.structured)

        items = stream_with_retries(model._slots, open_stream, reader, events)
        async with aclosing(items):
            async for item in items:
                yield item
