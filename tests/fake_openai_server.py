"""An OpenAI-compatible Chat Completions server for tests, on the standard library only.

It listens on 127.0.0.1 on a free port, in a thread, and answers ``POST /v1/chat/completions``
from a per-test script. Every request body and its headers are kept, so a test can assert on
what went over the wire through the real ``openai`` client.

A script is a list of replies (used in order of arrival) or a function ``body -> reply``
(for concurrent calls, whose order of arrival is not fixed). A reply is a `Reply`, or a dict
used as a 200 JSON body; `completion` and `error` build the usual ones.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What the server sends back: a status, a body (dict -> JSON, str/bytes as is), headers,
    and a delay before answering (released early when the server stops)."""

    status: int = 200
    body: dict[str, Any] | str | bytes = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


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
            {"id": ids[i], "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(tool_calls)
        ]  # fmt: skip
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


Script = list[Reply | dict[str, Any]] | Callable[[dict[str, Any]], Reply | dict[str, Any]]


class FakeOpenAIServer:
    """The server; use as a context manager or call `start` and `stop`."""

    def __init__(self, script: Script | None = None) -> None:
        self.script: Script = script if script is not None else []
        self.bodies: list[dict[str, Any]] = []
        """Every request body received, decoded, in order of arrival."""
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        """The most requests the server was answering at once."""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL to give the client, ``http://127.0.0.1:<port>/v1``."""
        assert self._httpd is not None, "start the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(error(404, f"no route {self.path}"))
                    return
                body = json.loads(raw or b"{}")
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                reply = server._next(body, dict(self.headers))
                stopped = bool(reply.delay) and server._stopping.wait(reply.delay)
                with server._lock:  # before answering: the client may send the next one at once
                    server.in_flight -= 1
                if not stopped:
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = reply.body
                if isinstance(data, dict):
                    data = json.dumps(data)
                payload = data.encode() if isinstance(data, str) else data
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.bodies.append(body)
            self.headers.append(headers)
            if callable(self.script):
                reply = self.script(body)
            elif self.script:
                reply = self.script.pop(0)
            else:
                reply = error(500, "the test server ran out of script")
        return reply if isinstance(reply, Reply) else Reply(200, reply)

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
