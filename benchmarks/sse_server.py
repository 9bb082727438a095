"""A Chat Completions server on 127.0.0.1 that streams and keeps its connections alive, and
counts them: what the streaming benchmark times and the connection-reuse test counts.

Every reply is a stream (``text/event-stream``, chunked, HTTP/1.1 keep-alive, as OpenAI and
vLLM send it): a few text pieces, a usage chunk, ``data: [DONE]``, then the chunked body's
end. A client that closes the response without reading that end drops the connection, and
the next call opens a new one; `connections` says how many were opened.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
