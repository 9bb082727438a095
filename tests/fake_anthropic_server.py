"""An Anthropic Messages API server for tests, on the standard library only.

It listens on 127.0.0.1 on a free port, in a thread, and answers ``POST /v1/messages`` from
a per-test script (a list of replies used in order, or a function ``body -> reply``). Every
request body and its headers are kept, so a test can assert on what the real ``anthropic``
client put on the wire. The server itself is `_stub_server.StubServer`; this module adds the
Messages API's replies and errors.
"""

from __future__ import annotations

import json
from typing import Any

from _sse_reply import Streamed, sse
from _stub_server import Reply, Script, StubServer

__all__ = [
    "FakeAnthropicServer",
    "Reply",
    "Script",
    "Streamed",
    "error",
    "error_event",
    "message",
    "streamed",
    "text",
    "tool_use",
]


def message(
    *blocks: dict[str, Any],
    stop_reason: str | None = None,
    input_tokens: int = 12,
    output_tokens: int = 7,
    model: str = "claude-test",
) -> dict[str, Any]:
    """A Messages API reply made of content blocks (see `text` and `tool_use`)."""
    uses_tools = any(b["type"] == "tool_use" for b in blocks)
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": list(blocks),
        "stop_reason": stop_reason or ("tool_use" if uses_tools else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(id: str, name: str, **input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def error(status: int, kind: str, msg: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"type": "error", "error": {"type": kind, "message": msg}}, headers or {})


class FakeAnthropicServer(StubServer):
    """Use as a context manager; ``url`` is the base URL to give the client."""

    route = "/v1/messages"

    def error_reply(self, status: int, message: str) -> Reply:
        return error(status, "not_found_error" if status == 404 else "api_error", message)


def streamed(
    *blocks: dict[str, Any],
    stop_reason: str | None = None,
    input_tokens: int = 12,
    output_tokens: int = 7,
    model: str = "claude-test",
    piece: int = 4,
    pause: float = 0.0,
) -> Streamed:
    """The streamed form of `message`: its server-sent events, text and tool inputs in pieces
    of ``piece`` characters, a ``ping``, and ``message_stop`` at the end."""
    whole = message(*blocks, stop_reason=stop_reason, model=model)
    opening = {**whole, "content": [], "stop_reason": None}
    opening["usage"] = {"input_tokens": input_tokens, "output_tokens": 1}
    events = [event("message_start", message=opening), event("ping")]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start, text, kind, key = {**block, "text": ""}, block["text"], "text_delta", "text"
        else:
            start = {**block, "input": {}}
            text, kind, key = json.dumps(block["input"]), "input_json_delta", "partial_json"
        events.append(event("content_block_start", index=index, content_block=start))
        for i in range(0, len(text), piece):
            delta = {"type": kind, key: text[i : i + piece]}
            events.append(event("content_block_delta", index=index, delta=delta))
        events.append(event("content_block_stop", index=index))
    delta = {"stop_reason": whole["stop_reason"], "stop_sequence": None}
    events.append(event("message_delta", delta=delta, usage={"output_tokens": output_tokens}))
    events.append(event("message_stop"))
    return Streamed(events, pause)


def event(kind: str, **fields: Any) -> str:
    """One server-sent event of the Messages API: ``event: <kind>`` and its data."""
    return sse({"type": kind, **fields}, kind)


def error_event(kind: str, msg: str) -> str:
    """An ``event: error`` inside a stream (e.g. ``overloaded_error``)."""
    return event("error", error={"type": kind, "message": msg})
