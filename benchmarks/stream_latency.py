"""Time to the first streamed delta: agentnb's streamed run against the bare ``AsyncOpenAI``
client's stream, at a local keep-alive server (`sse_server.RemoteStreamServer`: in a process of its own, so
that its threads do not take the interpreter lock from the client being timed).

Both stream the same answer from the same server, in interleaved blocks on one event loop.
The figure is agentnb's time from ``run_streamed(...)`` to its first `TextDelta` over the bare
client's time from ``chat.completions.create(stream=True)`` to its first content delta; each
stream is then read to its end, as a user's would be. The connections each opened are counted
by the server: a stream whose body is closed before its end costs a new connection per call.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from ._stats import Row, at_most, row, summarize, timed_row
from .sse_server import RemoteStreamServer

TARGET_RATIO = 1.1
TARGET_CONNECTIONS = 2


async def _bare(client: Any) -> float:
    started = time.perf_counter()
    first = 0.0
    stream = await client.chat.completions.create(
        model="fake-model",
        messages=[  # what agentnb sends for the same run: the same work for the SDK
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "hi"},
        ],
        stream=True,
        stream_options={"include_usage": True},
    )
    async for chunk in stream:
        if not first and chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter() - started
    return first


async def _agentnb(agent: Any) -> float:
    import agentnb as a

    started = time.perf_counter()
    first = 0.0
    stream = a.run_streamed(agent, "hi")
    async for event in stream:
        if not first and isinstance(event, a.TextDelta):
            first = time.perf_counter() - started
    result = await stream.result()
    if not result.ok:
        raise RuntimeError(f"the streamed run failed: {result.error}")
    return first


async def _side_by_side(runs: int, block: int) -> dict[str, Any]:
    import openai

    import agentnb as a

    out: dict[str, Any] = {"bare": [], "agentnb": []}
    with RemoteStreamServer() as bare_server, RemoteStreamServer() as our_server:
        client = openai.AsyncOpenAI(api_key="sk-bench", base_url=bare_server.url)
        model = a.OpenAIModel("fake-model", base_url=our_server.url, api_key="sk-bench")
        agent = a.Agent("streamer", "Answer briefly.", model=model)
        try:
            for _ in range(5):  # warm up both: imports, pools, the run loop's first pass
                await _bare(client)
                await _agentnb(agent)
            warm = {"bare": bare_server.connections, "agentnb": our_server.connections}
            for start in range(0, runs, block):
                n = min(block, runs - start)
                out["bare"] += [await _bare(client) for _ in range(n)]
                out["agentnb"] += [await _agentnb(agent) for _ in range(n)]
            out["connections"] = {
                "bare": bare_server.connections - warm["bare"],
                "agentnb": our_server.connections - warm["agentnb"],
            }
            out["connections_total"] = {
                "bare": bare_server.connections,
                "agentnb": our_server.connections,
            }
        finally:
            await client.close()
            await model.aclose()
    return out


def bench_stream(runs: int = 400, block: int = 5) -> dict[str, Any]:
    """Milliseconds to the first delta, bare and through agentnb, and their ratio."""
    got = asyncio.run(_side_by_side(runs, block))
    bare = [s * 1000 for s in got["bare"]]
    ours = [s * 1000 for s in got["agentnb"]]
    ratios = [
        statistics.median(ours[i : i + block]) / statistics.median(bare[i : i + block])
        for i in range(0, runs, block)
    ]
    ratio = statistics.median(ours) / statistics.median(bare)
    connections = got["connections"]
    rows: list[Row] = [
        timed_row("bare AsyncOpenAI stream", "ms to first delta", summarize(bare), "ms"),
        timed_row("agentnb run_streamed", "ms to first delta", summarize(ours), "ms"),
    ]
    target, met = at_most(ratio, TARGET_RATIO)
    rows.append(
        row(
            "agentnb ÷ bare client",
            "time to first delta",
            ratio,
            "×",
            spread=summarize(ratios),
            target=target,
            met=met,
            note=f"{runs} streams each, interleaved blocks of {block}",
        )
    )
    target, met = at_most(connections["agentnb"] + 1, TARGET_CONNECTIONS)
    rows.append(
        row(
            "agentnb streamed runs",
            "TCP connections",
            connections["agentnb"] + 1,
            "",
            target=target,
            met=met,
            note=(
                f"after warm-up, over {runs} streams (+1 for the warm-up's); the bare client: "
                f"{connections['bare'] + 1}"
            ),
        )
    )
    return {
        "name": "stream",
        "title": "Streaming: time to first delta and connection reuse (local keep-alive server)",
        "params": {"runs": runs, "block": block},
        "data": {
            "bare_ms": summarize(bare),
            "agentnb_ms": summarize(ours),
            "ratio": ratio,
            "per_block_ratio": ratios,
            "connections": got["connections_total"],
        },
        "rows": rows,
    }


if __name__ == "__main__":
    from .report import markdown

    print(markdown({"machine": {}, "quick": False, "benchmarks": [bench_stream()]}))
