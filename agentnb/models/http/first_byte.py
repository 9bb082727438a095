"""When a server began answering: the time to the first byte of a call's answer (``ttfb_s``).

A call's ``latency_s`` alone cannot tell a server that queued a request from one that took long
to generate it. The first byte of the answer (its status line and headers) says when the server
began answering, streamed or not: a server that holds a request's headers while it waits in
its queue shows the wait in ``ttfb_s``, not as generation. What a server sends first is its
own: llama-cpp-python's (measured, docs/local-models.md) sends a whole reply at once, headers
with its last byte (``ttfb_s`` ≈ ``latency_s``), and a stream's headers at once, before it takes
the request from its queue (``ttfb_s`` ≈ 0); there the queue shows only in a streamed call's
``ttft_s``, which is why `agentnb.local_model` makes its client wait instead (``wait_s``).

Each client agentnb makes (`http_client`) stamps a response as its headers arrive (`stamp`, an
httpx response hook); `first_byte_event` turns the stamp of the answer that was read into the
call's ``first_byte`` event, timed from when the call's first attempt went, as ``latency_s`` is
(after any wait for a slot, retries included). A client given by the user (``client=...``) has
no hook: its calls that are not streamed have no ``first_byte`` event (``ttfb_s`` NaN); its
streams are timed when they open, which is when their headers came.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

FIRST_BYTE_EVENT = "first_byte"
"""The event of a model client's response that `agentnb.trace.calls.CallRow` reads as
``ttfb_s``: ``{"event": "first_byte", "seconds": ...}``."""

_STAMP = "agentnb_first_byte_at"
"""Where the hook leaves its ``perf_counter`` reading, in the httpx response's extensions."""


async def stamp(response: Any) -> None:
    """The response hook of agentnb's clients: httpx calls it once a response's status line
    and headers are read, before its body."""
    response.extensions[_STAMP] = time.perf_counter()


def http_client(sdk: ModuleType) -> Any:
    """The SDK's default async HTTP client (``openai.DefaultAsyncHttpxClient``, Anthropic's
    alike: the SDK's own timeouts, limits and redirects), stamping each response's headers."""
    return sdk.DefaultAsyncHttpxClient(event_hooks={"response": [stamp]})


def first_byte_event(
    raw: Any, since: float, *, now_if_unstamped: bool = False
) -> dict[str, Any] | None:
    """The ``first_byte`` event of the answer ``raw`` (an SDK's raw response), in seconds
    since ``since`` (a ``perf_counter`` reading). Unstamped (a user's client): None, or, with
    ``now_if_unstamped``, now (a stream is opened once its headers are read, so now is when
    they came, give or take the time to return)."""
    http_response = getattr(raw, "http_response", None)
    extensions = getattr(http_response, "extensions", None)
    at = extensions.get(_STAMP) if isinstance(extensions, dict) else None
    if not isinstance(at, float):
        if not now_if_unstamped:
            return None
        at = time.perf_counter()
    return {"event": FIRST_BYTE_EVENT, "seconds": max(at - since, 0.0)}
