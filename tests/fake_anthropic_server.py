"""An Anthropic Messages API server for tests, on the standard library only.

It listens on 127.0.0.1 on a free port, in a thread, and answers ``POST /v1/messages`` from
a per-test script (a list of replies used in order, or a function ``body -> reply``). Every
request body and its headers are kept, so a test can assert on what the real ``anthropic``
client put on the wire. The server itself is `_stub_server.StubServer`; this module adds the
Messages API's replies and errors.
"""

from __future__ import annotations

from typing import Any

from _stub_server import Reply, Script, StubServer

__all__ = ["FakeAnthropicServer", "Reply", "Script", "error", "message", "text", "tool_use"]


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
        "id": "msg_test", "type": "message", "role": "assistant", "model": model,
        "content": list(blocks),
        "stop_reason": stop_reason or ("tool_use" if uses_tools else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }  # fmt: skip


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
