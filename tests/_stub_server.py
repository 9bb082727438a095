"""The HTTP side of the fake provider servers the tests start, on the standard library only.

A `StubServer` listens on 127.0.0.1 on a free port, in a thread, and answers ``POST`` on one
route from a per-test script: a list of replies used in order of arrival, or a function
``body -> reply`` (for concurrent calls, whose order of arrival is not fixed). A reply is a
`Reply`, or a dict sent as a 200 JSON body. Every request body and its headers are kept, so
a test can assert on what a real SDK client put on the wire, and the requests being answered
at once are counted. A provider's fake (``fake_openai_server.py``, ``fake_anthropic_server.py``)
adds its route and the shape of its replies and errors.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, TypeVar


@dataclass
class Reply:
    """What the server sends back: a status, a body (dict -> JSON, str/bytes as is), headers,
    and a delay before answering (released early when the server stops)."""

    status: int = 200
    body: dict[str, Any] | str | bytes = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Script = list[Reply | dict[str, Any]] | Callable[[dict[str, Any]], Reply | dict[str, Any]]

S = TypeVar("S", bound="StubServer")


class StubServer:
    """The server; use as a context manager or call `start` and `stop`.

    A subclass sets `route` (the path answered), `prefix` (what `url` adds to the address)
    and `error_reply` (an error reply in its provider's shape).
    """

    route: ClassVar[str]
    prefix: ClassVar[str] = ""

    def __init__(self, script: Script | None = None) -> None:
        self.script: Script = script if script is not None else []
        self.bodies: list[dict[str, Any]] = []
        """Every request body received, decoded, in order of arrival."""
        self.headers: list[dict[str, str]] = []
        """Their headers, names in lower case."""
        self.in_flight = 0
        self.max_in_flight = 0
        """The most requests the server was answering at once."""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def error_reply(self, status: int, message: str) -> Reply:
        raise NotImplementedError

    @property
    def url(self) -> str:
        """The base URL to give the client."""
        assert self._httpd is not None, "start the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}{self.prefix}"

    def start(self: S) -> S:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.split("?")[0].rstrip("/") != server.route:
                    self._send(server.error_reply(404, f"no route {self.path}"))
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                reply = server._next(json.loads(raw or b"{}"), headers)
                stopped = bool(reply.delay) and server._stopping.wait(reply.delay)
                with server._lock:  # before answering: the client may send the next one at once
                    server.in_flight -= 1
                if not stopped:
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                data = reply.body
                if hasattr(data, "write_to"):  # a streamed body writes itself (_sse_reply.py)
                    data.write_to(self)
                    return
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
                reply = self.error_reply(500, "the test server ran out of script")
        return reply if isinstance(reply, Reply) else Reply(200, reply)

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self: S) -> S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
