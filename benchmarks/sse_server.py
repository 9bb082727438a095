"""A Chat Completions server on 127.0.0.1 that streams and keeps its connections alive, and
counts them: what the streaming benchmark times and the connection-reuse test counts.

Every reply is a stream (``text/event-stream``, chunked, HTTP/1.1 keep-alive, as OpenAI and
vLLM send it): a few text pieces, a usage chunk, ``data: [DONE]``, then the chunked body's
end. A client that closes the response without reading that end drops the connection, and
the next call opens a new one; `connections` says how many were opened.

``python -m benchmarks.sse_server`` runs it in a process of its own (printing its URL, serving
until its stdin closes), so that a benchmark's client does not share an interpreter lock with
the server; `RemoteStreamServer` starts it and reads its counts from ``GET /stats``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def stream_events(text: str = "Hello there, streamed.", pieces: int = 4) -> list[bytes]:
    """The events of one streamed answer, ``data: [DONE]`` last."""
    step = max(1, len(text) // pieces)
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    ]
    chunks += [
        {"choices": [{"index": 0, "delta": {"content": text[i : i + step]}}]}
        for i in range(0, len(text), step)
    ]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "fake-model"}
    events = [f"data: {json.dumps(base | c)}\n\n".encode() for c in chunks]
    return [*events, b"data: [DONE]\n\n"]


class KeepAliveStreamServer:
    """The server, in a thread; use as a context manager. ``url`` is the base URL to give a
    client (``http://127.0.0.1:<port>/v1``); ``connections`` the TCP connections accepted,
    ``requests`` the requests answered."""

    def __init__(self, text: str = "Hello there, streamed.") -> None:
        self.events = stream_events(text)
        self.connections = 0
        self.requests = 0
        self.bodies: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # As servers that stream do (uvicorn, nginx): without it, each small event
                # waits for the client's delayed ACK of the one before (Nagle's algorithm).
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with server._lock:
                    server.connections += 1

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests += 1
                    server.bodies.append(body)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for event in server.events:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def do_GET(self) -> None:  # /stats: the counts, for a server in another process
                with server._lock:
                    server.connections -= 1  # this connection is the asker's, not a client's
                    body = json.dumps(
                        {"connections": server.connections, "requests": server.requests}
                    )
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body.encode())
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that drops its connection is what is being counted, not an error

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> KeepAliveStreamServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class RemoteStreamServer:
    """`KeepAliveStreamServer` in a process of its own; the same ``url`` and counts."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self.url = ""

    def _stats(self) -> dict[str, int]:
        with urllib.request.urlopen(self.url + "/stats", timeout=10) as reply:
            stats: dict[str, int] = json.loads(reply.read())
        return stats

    @property
    def connections(self) -> int:
        return self._stats()["connections"]

    @property
    def requests(self) -> int:
        return self._stats()["requests"]

    def __enter__(self) -> RemoteStreamServer:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.sse_server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        assert self._process.stdout is not None
        self.url = self._process.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.__exit__()
            raise RuntimeError(f"the stream server did not start (it said {self.url!r})")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=10)
            if self._process.stdout is not None:
                self._process.stdout.close()


if __name__ == "__main__":
    with KeepAliveStreamServer() as running:
        print(running.url, flush=True)
        sys.stdin.read()  # until the parent closes it
