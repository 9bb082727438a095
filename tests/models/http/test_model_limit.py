"""A model's ``max_concurrency`` is the model's: it holds across every thread and event loop
of the process, counted by the server itself (requests in flight at its end)."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fake_openai_server import completion
from fake_openai_server import streamed as openai_stream

import agentnb as a
from agentnb.models.http.limit import Limit
from agentnb.models.providers.openai.adapter import OpenAIModel


class CountingServer:
    """Chat Completions that take ``hold`` seconds each; ``peak`` is the most requests it had
    in flight at once (from the request's arrival to the start of its answer, a span inside
    the client's own)."""

    def __init__(self, hold: float = 0.1, stream: bool = False) -> None:
        self.hold, self.stream = hold, stream
        self.in_flight = self.peak = self.seen = 0
        self._lock = threading.Lock()

    def __enter__(self) -> CountingServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server.seen += 1
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                time.sleep(server.hold)
                with server._lock:
                    server.in_flight -= 1
                if server.stream:
                    body = "".join(openai_stream("four").events).encode()
                    kind = "text/event-stream"
                else:
                    body, kind = json.dumps(completion("four")).encode(), "application/json"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"


def in_threads(n: int, work: Callable[[], Any], within: float = 120.0) -> list[Any]:
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(work())) for _ in range(n)]
    for thread in threads:
        thread.start()
    ends = time.monotonic() + within
    for thread in threads:
        thread.join(max(ends - time.monotonic(), 0))
    assert len(results) == n, f"{n - len(results)} threads still running after {within:g} s"
    return results


def test_200_threads_sharing_one_model_never_pass_its_limit():
    with CountingServer() as server:
        model = OpenAIModel("m", base_url=server.url, max_concurrency=16)
        agent = a.Agent("w", "Be brief.", model)

        def run() -> a.RunResult:
            result = a.run_sync(agent, "two and two")
            a.run_sync(model.aclose())  # this thread's client, on the loop it ran on
            return result

        results = in_threads(200, run)
    assert all(r.ok and r.output == "four" for r in results), {
        repr(r.error)[:300] for r in results if not r.ok
    }
    assert server.seen == 200
    assert 1 < server.peak <= 16


def test_streams_from_threads_hold_the_limit_and_leave_no_pending_task(caplog):
    with CountingServer(stream=True) as server:
        model = OpenAIModel("m", base_url=server.url, max_concurrency=8)
        agent = a.Agent("w", "Be brief.", model)

        def streamed() -> Any:
            result = list(a.stream_sync(agent, "two and two"))[-1].result
            a.run_sync(model.aclose())
            return result

        with caplog.at_level(logging.ERROR, logger="asyncio"):
            results = in_threads(200, streamed)
    assert all(r.ok and r.output == "four" for r in results)
    assert 1 < server.peak <= 8
    assert not [r for r in caplog.records if "destroyed" in r.getMessage()]


async def test_a_waiter_cancelled_gives_its_turn_to_the_next():
    limit = Limit(1)
    await limit.acquire()
    first = asyncio.ensure_future(limit.acquire())
    second = asyncio.ensure_future(limit.acquire())
    await asyncio.sleep(0)
    first.cancel()
    limit.release()
    await asyncio.wait_for(second, 5)
    assert first.cancelled() and limit.busy()
    limit.release()
    assert not limit.busy()


def test_a_slot_is_handed_across_loops():
    limit = Limit(1)
    order: list[str] = []
    held = threading.Event()

    async def hold_then_release() -> None:
        await limit.acquire()
        held.set()
        await asyncio.sleep(0.05)
        order.append("released")
        limit.release()

    async def wait_turn() -> None:
        await limit.acquire()
        order.append("acquired")
        limit.release()

    holder = threading.Thread(target=lambda: asyncio.run(hold_then_release()))
    holder.start()
    assert held.wait(5)
    asyncio.run(asyncio.wait_for(wait_turn(), 5))
    holder.join(5)
    assert order == ["released", "acquired"]


@pytest.fixture(autouse=True)
def _quiet_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTNB_TOKENIZER", "off")
