"""An OpenAI-compatible Chat Completions server for tests, on the standard library only.

It listens on 127.0.0.1 on a free port, in a thread, and answers ``POST /v1/chat/completions``
from a per-test script. Every request body and its headers are kept, so a test can assert on
what went over the wire through the real ``openai`` client.

A script is a list of replies (used in order of arrival) or a function ``body -> reply``
(for concurrent calls, whose order of arrival is not fixed). A reply is a `Reply`, or a dict
used as a 200 JSON body; `completion` and `error` build the usual ones. The server itself is
`_stub_server.StubServer`; this module adds the Chat Completions replies and errors.
"""

from __future__ import annotations

import json
from typing import Any

from _sse_reply import Streamed, sse
from _stub_server import Reply, Script, StubServer

__all__ = ["FakeOpenAIServer", "Reply", "Script", "Streamed", "completion", "error", "streamed"]


def completion(
    text: str | None = None,
    *,
    tool_calls: list[tuple[str, dict[str, Any]]] | None = None,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    finish_reason: str | None = None,
    model: str = "fake-model",
    call_ids: list[str] | None = None,
) -> dict[str, Any]:
    """A Chat Completions body: a text answer and/or tool calls ``[(name, arguments), ...]``."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        ids = call_ids or [f"call_{i}" for i in range(len(tool_calls))]
        message["tool_calls"] = [
            {
                "id": ids[i],
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(tool_calls)
        ]
    reason = finish_reason or ("tool_calls" if tool_calls else "stop")
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def error(status: int, message: str, *, headers: dict[str, str] | None = None) -> Reply:
    """An error in OpenAI's shape: ``{"error": {"message": ..., "type": ...}}``."""
    body = {"error": {"message": message, "type": "test_error", "param": None, "code": None}}
    return Reply(status, body, headers or {})


class FakeOpenAIServer(StubServer):
    """The server; use as a context manager or call `start` and `stop`. Its ``url`` is the
    base URL to give the client, ``http://127.0.0.1:<port>/v1``."""

    route = "/v1/chat/completions"
    prefix = "/v1"

    def error_reply(self, status: int, message: str) -> Reply:
        return error(status, message)


def streamed(
    text: str | None = None,
    *,
    tool_calls: list[tuple[str, dict[str, Any]]] | None = None,
    piece: int = 4,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    model: str = "fake-model",
    pause: float = 0.0,
) -> Streamed:
    """The streamed form of `completion`: the text in pieces of ``piece`` characters, each
    tool call's arguments in pieces too, the finish reason, a usage chunk, then ``[DONE]``."""
    head = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse({**head, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": ""})]
    for i in range(0, len(text or ""), piece):
        events.append(chunk({"content": (text or "")[i : i + piece]}))
    for n, (name, args) in enumerate(tool_calls or []):
        arguments = json.dumps(args)
        function = {"name": name, "arguments": ""}
        opening = {"index": n, "id": f"call_{n}", "type": "function", "function": function}
        events.append(chunk({"tool_calls": [opening]}))
        for i in range(0, len(arguments), piece):
            part = {"index": n, "function": {"arguments": arguments[i : i + piece]}}
            events.append(chunk({"tool_calls": [part]}))
    events.append(chunk({}, "tool_calls" if tool_calls else "stop"))
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    events.append(sse({**head, "choices": [], "usage": usage}))
    events.append(sse("[DONE]"))
    return Streamed(events, pause)
