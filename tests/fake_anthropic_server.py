"""An Anthropic Messages API server for tests, on the standard library only.

It listens on 127.0.0.1 on a free port, in a thread, and answers ``POST /v1/messages`` from
a per-test script (a list of replies used in order, or a function ``body -> reply``). Every
request body and its headers are kept, so a test can assert on what the real ``anthropic``
client put on the wire.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, Any], dict[str, str]]
"""status, JSON body, extra headers."""


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
    return status, {"type": "error", "error": {"type": kind, "message": msg}}, headers or {}


Script = list[Any] | Callable[[dict[str, Any]], Any]


class FakeAnthropicServer:
    """Use as a context manager; ``url`` is the base URL to give the client."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> FakeAnthropicServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.split("?")[0].rstrip("/") != "/v1/messages":
                    self._send(error(404, "not_found_error", f"no route {self.path}"))
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                self._send(server._next(json.loads(raw or b"{}"), headers))

            def _send(self, reply: Reply) -> None:
                status, body, headers = reply
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
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
                reply = error(500, "api_error", "the test server ran out of script")
        return reply if isinstance(reply, tuple) else (200, reply, {})

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
