"""A Chat Completions stream read into deltas and, at its end, the `ModelResponse`.

The request asks for usage in the stream (``stream_options={"include_usage": true}``): the
usage comes in a last chunk with no choices, before ``data: [DONE]``. A stream is complete
when it has both a finish reason and ``[DONE]``; the whole completion is then rebuilt and read
by `._openai_wire.response_from_wire`, so a streamed call's response (text, tool calls, usage,
stop reason) is the one the same call would have returned whole.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ....errors import ModelHTTPError, StreamBroken
from ...deltas import StreamItem, TextChunk, ToolCallChunk
from ...http.rules import Failure
from ...http.sse import ServerError, ServerEvent, attrs, stream_with_retries, text_in
from ...types import ModelRequest, ModelResponse
from .wire import StructuredMode, required_refused, response_from_wire, weaker_mode

if TYPE_CHECKING:
    from .adapter import OpenAIModel


class ChatStream:
    """What one Chat Completions stream has said so far."""

    def __init__(self) -> None:
        self.complete = False
        self.ended = False  # [DONE] came
        self.finish_reason: str | None = None
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: Any = None
        self.model: str | None = None

    def feed(self, event: ServerEvent) -> list[TextChunk | ToolCallChunk]:
        if event.data.strip() == "[DONE]":
            self.ended = True
            self.complete = self.finish_reason is not None
            return []
        chunk = json.loads(event.data)
        if not isinstance(chunk, dict):
            raise ValueError(f"a chunk that is not an object: {event.data[:100]!r}")
        if "error" in chunk:  # some servers report a failure inside the stream
            error = chunk["error"]
            message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
            status = error.get("code") if isinstance(error, dict) else None
            raise ServerError(Failure(status if isinstance(status, int) else None, message))
        self.model = chunk.get("model") or self.model
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        deltas: list[TextChunk | ToolCallChunk] = []
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = text_in(delta.get("content"), "content")
            if content:
                self.text.append(content)
                deltas.append(TextChunk(content))
            refusal = text_in(delta.get("refusal"), "refusal")
            if refusal:
                self.refusal.append(refusal)
                deltas.append(TextChunk(refusal))
            for piece in delta.get("tool_calls") or []:
                deltas.append(self._call(piece))
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return deltas

    def _call(self, piece: dict[str, Any]) -> ToolCallChunk:
        index = int(piece.get("index", len(self.calls)))
        call = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
        function = piece.get("function") or {}
        name = text_in(function.get("name"), "tool name")
        arguments = text_in(function.get("arguments"), "tool arguments")
        call["id"] = piece.get("id") or call["id"]
        call["name"] += name
        call["arguments"] += arguments
        return ToolCallChunk(index, name, arguments, piece.get("id") or "")

    def response(self) -> ModelResponse:
        calls = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for _, c in sorted(self.calls.items())
        ]
        message = {
            "role": "assistant",
            "content": "".join(self.text) if self.text else None,
            "refusal": "".join(self.refusal) if self.refusal else None,
            "tool_calls": calls or None,
        }
        completion = {
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
            "usage": self.usage,
        }
        return response_from_wire(attrs(completion))

    def missing(self) -> str:
        if self.finish_reason is None:
            return "no finish reason" + ("" if self.ended else " and no [DONE]")
        return "no [DONE] after the finish reason"


async def stream_chat(model: OpenAIModel, request: ModelRequest) -> AsyncIterator[StreamItem]:
    """`OpenAIModel.stream`: one call streamed, with the adapter's slots, retries and fallback."""
    async with model._slots.slot() as (client, events):
        mode: StructuredMode | None = model._mode if request.output_schema is not None else None
        usage_asked: dict[str, Any] = {"stream_options": {"include_usage": True}}

        def open_stream() -> Any:
            return client.chat.completions.with_streaming_response.create(
                **model._body(request, mode), stream=True, **usage_asked, timeout=model.timeout
            )

        def fallback(failed: Failure) -> bool:  # as `OpenAIModel.request` does, and:
            nonlocal mode, usage_asked
            if failed.status in (400, 422) and usage_asked and "stream_options" in failed.message:
                usage_asked = {}  # a server that does not know it: stream without usage
                events.append({"event": "stream_options_dropped", "status": failed.status})
                return True
            message = model._slots.scrub(failed.message)
            weaker = weaker_mode(model.structured, mode, failed.status, message, events)
            if weaker is None:
                return False
            mode = weaker
            return True

        items = stream_with_retries(
            model._slots, open_stream, ChatStream, events, fallback=fallback
        )
        async with aclosing(items):
            try:
                async for item in items:
                    yield item
            except StreamBroken:
                raise
            except ModelHTTPError as exc:  # refused before the first delta
                raise required_refused(exc, request) from None
        if mode is not None and mode != model._mode:
            model._mode = mode
