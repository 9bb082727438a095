"""A server on 127.0.0.1 that misbehaves on cue, on the standard library only.

Unlike `_stub_server.StubServer`, which answers well-formed HTTP, this one writes the bytes
of each reply itself, so a reply can stop half-way, trickle in, never come, or reset the
connection. Each request is answered by a `Play`: a list of steps (`Send` bytes, `Pause`,
`Reset`, `Hang`, `Close`) run in order, then the connection is closed. Plays are used in order of
arrival and the last one repeats, so ``[error_500]`` answers every retry alike.

Plays are built from parts: `response` (status, headers, body) for one whole reply, and
`trickle` for a body sent a few bytes at a time. A streamed reply is the same thing with
other parts: `sse_head` then one `sse_event` per delta with `Pause` between them, so faults in
a stream (a reset after two deltas, a stall between deltas, a stream that never ends) are
plays like any other.

Every request (method, path, headers in lower case, body) is kept in ``requests``; ``seen``
counts them.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.client import responses
from socketserver import BaseRequestHandler, ThreadingTCPServer
from typing import Any


@dataclass(frozen=True)
class Send:
    data: bytes


@dataclass(frozen=True)
class Pause:
    seconds: float


@dataclass(frozen=True)
class Reset:
    """Close the connection with a TCP reset (RST), not an orderly close."""


@dataclass(frozen=True)
class Hang:
    """Say nothing more until the server stops."""


@dataclass(frozen=True)
class Close:
    """Close the connection in order (the end of a reply without a Content-Length)."""


Step = Send | Pause | Reset | Hang | Close
Play = list[Step]


def response(
    status: int = 200,
    body: dict[str, Any] | str | bytes = b"",
    headers: dict[str, str] | None = None,
    *,
    content_length: int | None = None,
) -> Play:
    """One whole reply; ``content_length`` may claim more than is sent (a truncated body)."""
    payload = _bytes(body)
    return [
        Send(
            head(status, headers, len(payload) if content_length is None else content_length)
            + payload
        )
    ]


def head(status: int, headers: dict[str, str] | None, length: int | None) -> bytes:
    """A status line and headers (JSON unless ``headers`` say otherwise)."""
    lines = [f"HTTP/1.1 {status} {responses.get(status, 'Status')}"]
    fields = {"Content-Type": "application/json", **(headers or {})}
    if length is not None:
        fields["Content-Length"] = str(length)
    lines += [f"{k}: {v}" for k, v in fields.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def trickle(body: dict[str, Any] | str | bytes, *, every: float, size: int = 1) -> Play:
    """A 200 whose body comes ``size`` bytes every ``every`` seconds."""
    payload = _bytes(body)
    steps: Play = [Send(head(200, None, len(payload)))]
    for start in range(0, len(payload), size):
        steps += [Pause(every), Send(payload[start : start + size])]
    return steps


def sse_head() -> Play:
    """The start of a streamed reply (server-sent events; end it with `Close`)."""
    return [Send(head(200, {"Content-Type": "text/event-stream", "Connection": "close"}, None))]


def sse_event(data: dict[str, Any] | str, event: str | None = None) -> Send:
    """One server-sent event."""
    text = data if isinstance(data, str) else json.dumps(data)
    return Send(((f"event: {event}\n" if event else "") + f"data: {text}\n\n").encode())


def _bytes(body: dict[str, Any] | str | bytes) -> bytes:
    if isinstance(body, dict):
        return json.dumps(body).encode()
    return body.encode() if isinstance(body, str) else body


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


@dataclass
class FaultServer:
    """Use as a context manager; ``url`` is ``http://127.0.0.1:<port>`` (add a prefix)."""

    plays: Sequence[Play] | Callable[[Request], Play] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._tcp: ThreadingTCPServer | None = None

    @property
    def seen(self) -> int:
        return len(self.requests)

    @property
    def url(self) -> str:
        assert self._tcp is not None, "start the server first"
        return f"http://127.0.0.1:{self._tcp.server_address[1]}"

    def __enter__(self) -> FaultServer:
        server = self

        class Handler(BaseRequestHandler):
            def handle(self) -> None:
                conn: socket.socket = self.request
                reader = conn.makefile("rb")
                while not server._stopping.is_set():
                    request = _read_request(reader)
                    if request is None:
                        return
                    if not server._play(conn, server._next(request)):
                        return

        ThreadingTCPServer.allow_reuse_address = True
        self._tcp = ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._tcp.daemon_threads = True
        threading.Thread(
            target=self._tcp.serve_forever, kwargs={"poll_interval": 0.005}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        if self._tcp is not None:
            self._tcp.shutdown()
            self._tcp.server_close()

    def _next(self, request: Request) -> Play:
        with self._lock:
            self.requests.append(request)
            if callable(self.plays):
                return self.plays(request)
            if not self.plays:
                return response(500, {"error": {"message": "the fault server has no play"}})
            return self.plays[min(len(self.requests), len(self.plays)) - 1]

    def _play(self, conn: socket.socket, steps: Iterable[Step]) -> bool:
        """Run the steps; whether the connection may serve another request."""
        try:
            for step in steps:
                if isinstance(step, Send):
                    conn.sendall(step.data)
                elif isinstance(step, Pause):
                    if self._stopping.wait(step.seconds):
                        return False
                elif isinstance(step, Reset):
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    conn.close()
                    return False
                elif isinstance(step, Hang):
                    self._stopping.wait()
                    return False
                elif isinstance(step, Close):
                    conn.shutdown(socket.SHUT_RDWR)
                    return False
        except OSError:  # the client gave up (a timeout)
            return False
        return True


def _read_request(reader: Any) -> Request | None:
    try:
        line = reader.readline()
        if not line:
            return None
        method, path, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            raw = reader.readline().decode("latin-1").strip()
            if not raw:
                break
            key, _, value = raw.partition(":")
            headers[key.strip().lower()] = value.strip()
        body = reader.read(int(headers.get("content-length") or 0))
    except (OSError, ValueError):
        return None
    return Request(method, path, headers, body)
