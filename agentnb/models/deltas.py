"""What a streaming model client yields: text and tool-call deltas, then the whole response.

A client may offer ``stream(request)`` beside ``request(request)``: an async iterator of
`TextChunk` and `ToolCallChunk` items as the provider sends them, ending with the full
`ModelResponse` (the same one ``request`` would have returned, usage included). The runtime
turns the text chunks into ``TextDelta`` events, the tool-call chunks into ``ToolCallDelta`` and times the first item of any kind (the
``ttft_s`` column); a client without ``stream`` is streamed as one delta per response
(`stream_of`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from .base import ModelClient
from .types import ModelRequest, ModelResponse


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A piece of the answer's text, in the order written."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A piece of a tool call: the first piece of call ``index`` carries its ``name`` (and
    ``id`` when the provider gives one), later pieces more of its JSON ``arguments``."""

    index: int
    name: str = ""
    arguments: str = ""
    id: str = ""


StreamItem = TextChunk | ToolCallChunk | ModelResponse
"""One item of a stream: deltas, then (last) the complete response."""


def stream_of(model: ModelClient, request: ModelRequest) -> AsyncIterator[StreamItem]:
    """``model.stream(request)`` when the client streams, else its response as one delta."""
    stream = getattr(model, "stream", None)
    if stream is not None:
        items: AsyncIterator[StreamItem] = stream(request)
        return items
    return _one_delta(model, request)


async def _one_delta(model: ModelClient, request: ModelRequest) -> AsyncIterator[StreamItem]:
    response = await model.request(request)
    if response.text:
        yield TextChunk(response.text)
    for index, call in enumerate(response.tool_calls):  # each call whole, as one delta
        yield ToolCallChunk(index, call.name, call.arguments, call.id or "")
    yield response
