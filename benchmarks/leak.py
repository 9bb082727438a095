"""A leak check: thousands of runs of freshly built agents must not grow the process.

Each run builds its agent anew, with a tool whose input has 40 fields, and runs it against a
server on 127.0.0.1 (this module's own, standard library only) through `OpenAIModel` and
`AnthropicModel` in turn, whole and streamed: the model calls the tool once, then answers.
After a warm-up, the resident memory may grow by less than ``MAX_GROWTH_MB`` over all the
runs, and no task, thread or file descriptor may be left behind.

``python -m benchmarks.leak`` runs 10,000 (``--runs N`` for another number); the unit suite
runs a few hundred (tests/test_leaks.py) with the same code.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pydantic

import agentnb as a

MAX_GROWTH_MB = 20.0
FIELDS = 40
KEY = "leak-check-key-0123456789"

Form = pydantic.create_model(  # type: ignore[call-overload]
    "Form", **{f"field_{i}": (int, ...) for i in range(FIELDS)}
)
ARGUMENTS = {f"field_{i}": i for i in range(FIELDS)}


# -- the server: a tool call first, then an answer, in either provider's shape


def _called_back(body: dict[str, Any]) -> bool:
    """Whether the request carries the tool's result (so the model answers now)."""
    for message in body.get("messages", []):
        if message.get("role") == "tool":
            return True
        content = message.get("content")
        if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
            return True
    return False


def _openai(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if _called_back(body):
        message: dict[str, Any] = {"role": "assistant", "content": "done"}
        finish = "stop"
    else:
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "fill", "arguments": json.dumps(ARGUMENTS)},
        }
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    whole = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }
    head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    delta = {k: v for k, v in message.items() if v is not None}
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": 0, **delta["tool_calls"][0]}]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**head, "choices": [], "usage": usage},
    ]
    return whole, chunks


def _anthropic(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if _called_back(body):
        block: dict[str, Any] = {"type": "text", "text": "done"}
        stop = "end_turn"
    else:
        block = {"type": "tool_use", "id": "toolu_1", "name": "fill", "input": ARGUMENTS}
        stop = "tool_use"
    usage = {"input_tokens": 10, "output_tokens": 5}
    whole = {
        "id": "msg",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    opening = {**whole, "content": [], "stop_reason": None}
    if block["type"] == "text":
        start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": "done"}
    else:
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(ARGUMENTS)}
    events = [
        {"type": "message_start", "message": opening},
        {"type": "content_block_start", "index": 0, "content_block": start},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]
    return whole, events


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        openai = self.path.endswith("/chat/completions")
        whole, events = (_openai if openai else _anthropic)(body)
        if not body.get("stream"):
            data = json.dumps(whole).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        lines = [
            (f"event: {e['type']}\n" if not openai else "") + f"data: {json.dumps(e)}\n\n"
            for e in events
        ]
        if openai:
            lines.append("data: [DONE]\n\n")
        data = "".join(lines).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving() -> Iterator[str]:
    """A local server for both providers; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- the runs


def _agent(model: Any) -> a.Agent:
    def fill(form: Form) -> str:  # type: ignore[valid-type]
        """Fill in the form."""
        return "filled"

    return a.Agent("filler", "Fill in the form.", model, [a.tool(fill)])


@dataclass
class Counts:
    rss_mb: float
    fds: int
    threads: int
    tasks: int


def counts() -> Counts:
    gc.collect()
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    rss = pages * os.sysconf("SC_PAGE_SIZE") / 2**20

    async def tasks() -> int:
        # A body's generators left at the end marker are closed by the loop's finalizer on its
        # next passes (httpx does not close its inner generators): let those run, then count.
        for _ in range(3):
            await asyncio.sleep(0)
        return len(asyncio.all_tasks()) - 1  # this one

    return Counts(
        rss, len(os.listdir("/proc/self/fd")), threading.active_count(), a.run_sync(tasks())
    )


def run_many(models: list[Any], runs: int) -> None:
    """``runs`` runs, the models and streamed/whole in turn; each must succeed."""
    for i in range(runs):
        model = models[i % len(models)]
        agent = _agent(model)
        if (i // len(models)) % 2:
            result = list(a.stream_sync(agent, "go"))[-1].result
        else:
            result = a.run_sync(agent, "go")
        if not result.ok or result.output != "done":
            raise AssertionError(f"run {i} failed: {result.error!r}")


def check(
    runs: int, warmup: int = 200, max_growth_mb: float | None = MAX_GROWTH_MB
) -> dict[str, Any]:
    """Run the leak check; returns the figures (raises AssertionError on a leak). The memory
    bound means something over thousands of runs only (``None``: not checked): over a few,
    a cache filling up to its bound or a lazy import looks like growth."""
    with serving() as url:
        models = [
            a.OpenAIModel("m", base_url=url + "/v1", api_key=KEY),
            a.AnthropicModel("m", base_url=url, api_key=KEY),
        ]
        run_many(models, warmup)
        before = counts()
        started = time.perf_counter()
        run_many(models, runs)
        seconds = time.perf_counter() - started
        after = counts()
        for model in models:
            a.run_sync(model.aclose())
    figures = {
        "runs": runs,
        "seconds": round(seconds, 1),
        "rss_growth_mb": round(after.rss_mb - before.rss_mb, 1),
        "before": vars(before),
        "after": vars(after),
    }
    if max_growth_mb is not None:
        assert figures["rss_growth_mb"] < max_growth_mb, figures
    # a leak is growth; fewer (a connection or a thread of earlier work ending) is fine
    grown = [k for k in ("fds", "threads", "tasks") if getattr(after, k) > getattr(before, k)]
    assert not grown, (grown, figures)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    args = parser.parse_args(argv)
    print(json.dumps(check(args.runs), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
