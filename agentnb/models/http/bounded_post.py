"""`post_json`: one JSON POST whose whole exchange has a deadline, on the standard library.

``urllib.request.urlopen(timeout=...)`` bounds each socket operation, not the request: a
server that sends one byte every few seconds keeps it reading forever. Here the deadline
covers connecting, sending, the status line and headers, and the body: when it passes, a
watchdog shuts the socket down, which wakes whatever read is blocked on it. Redirects are
not followed (a header holding a key never goes to a host the caller did not name), and a
body past ``max_bytes`` is refused rather than read to the end.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit


class PostFailed(Exception):
    """The POST got no usable answer: its text says why in a few words (never the key)."""


def post_json(
    url: str,
    body: Any,
    headers: Mapping[str, str],
    seconds: float,
    *,
    max_bytes: int = 16_000_000,
) -> Any:
    """The JSON answer to ``POST url`` with ``body``, all within ``seconds`` (raises
    `PostFailed`: no connection, a status other than 2xx, not JSON, too slow, too long)."""
    if seconds <= 0:
        raise PostFailed("no time left")
    deadline = time.monotonic() + seconds
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PostFailed(f"not an http(s) URL: {parts.scheme or '?'}://")
    connection_type = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    connection = connection_type(parts.hostname, parts.port, timeout=seconds)
    watchdog = threading.Timer(seconds, _cut, (connection,))
    watchdog.daemon = True
    watchdog.start()
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request(
            "POST",
            path,
            json.dumps(body).encode(),
            {"Content-Type": "application/json", "Connection": "close", **headers},
        )
        reply = connection.getresponse()
        data = reply.read(max_bytes + 1)
        status = reply.status
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if time.monotonic() >= deadline:
            raise PostFailed(f"no complete answer within {seconds:g} s") from None
        raise PostFailed(type(exc).__name__) from None
    finally:
        watchdog.cancel()
        connection.close()
    if time.monotonic() >= deadline:  # cut while reading: what came is not the whole answer
        raise PostFailed(f"no complete answer within {seconds:g} s")
    if not 200 <= status < 300:
        raise PostFailed(f"HTTP {status}")
    if len(data) > max_bytes:
        raise PostFailed(f"an answer longer than {max_bytes:,} bytes")
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError:
        raise PostFailed("an answer that is not JSON") from None


def _cut(connection: http.client.HTTPConnection) -> None:
    """The deadline passed: wake the read blocked on the connection's socket."""
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed
            pass
