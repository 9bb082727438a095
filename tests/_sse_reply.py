"""A streamed reply for the fake servers: server-sent events written one at a time.

`Streamed` goes where a reply body goes (``Reply(200, Streamed([...]))``, or bare in a
script). The connection closes after the last event, so a list of events without the
provider's end marker is a stream cut in the middle, as a dropped connection looks to a client.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any


def sse(data: dict[str, Any] | str, event: str | None = None) -> str:
    """One event's text: ``event:`` (when given) and ``data:`` lines."""
    body = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {body}\n\n"


@dataclass
class Streamed:
    """``events`` (texts made by `sse`) sent ``pause`` seconds apart, then the connection closes."""

    events: list[str]
    pause: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)

    def cut(self, after: int) -> Streamed:
        """The same stream broken off after its first ``after`` events."""
        return Streamed(self.events[:after], self.pause, self.headers)

    def write_to(self, handler: Any) -> None:
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Cache-Control", "no-cache")
            for key, value in self.headers.items():
                handler.send_header(key, value)
            handler.end_headers()
            for i, event in enumerate(self.events):
                if i and self.pause:
                    time.sleep(self.pause)
                handler.wfile.write(event.encode())
                handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        handler.close_connection = True
