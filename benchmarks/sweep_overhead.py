"""Sweep overhead: what `agentnb.sweep` adds per configuration beyond the runs themselves.

The same grid is run twice, side by side and alternately: once through ``sweep`` (no progress
bar) and once as a plain loop that awaits the same function. The difference, divided by the number of configurations, is the sweep's own cost:
bookkeeping, the per-configuration rows and the final frame. Each configuration is a small
run (one agent, one tool call, two model calls) on a zero-latency scripted model.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import agentnb as nb

from ._stats import Row, row, summarize, timed_row

TARGET_MS = 5.0


def _sweep() -> Any:
    try:
        from agentnb.measure.sweeps import sweep
    except ImportError:
        return None
    return sweep


@nb.tool
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


# Built once: making a tool builds a pydantic model, which would dwarf the sweep's own cost.


async def small_run(size: int) -> nb.RunResult:
    """One configuration's work: a run of two model calls."""
    model = nb.ScriptedModel([nb.tool_call("lookup", key=f"k{size}"), nb.say("done")])
    agent = nb.Agent("analyst", "Look it up.", model, tools=[lookup])
    return await nb.run(agent, f"What is k{size}?")


async def _plain(configs: int) -> float:
    start = time.perf_counter()
    for i in range(configs):
        if not (await small_run(i)).ok:
            raise RuntimeError("the benchmark run went wrong")
    return time.perf_counter() - start


async def _swept(configs: int) -> float:
    sweep = _sweep()
    start = time.perf_counter()
    frame = await sweep(small_run, {"size": list(range(configs))}, progress=False)
    elapsed = time.perf_counter() - start
    if len(frame) != 2 * configs or not frame["ok"].all():
        raise RuntimeError("the benchmark sweep went wrong")
    return elapsed


def bench_sweep(configs: int = 100, repeats: int = 5) -> dict[str, Any]:
    if _sweep() is None:
        return {
            "name": "sweep",
            "title": "Sweep overhead per configuration",
            "params": {"configs": configs, "repeats": repeats},
            "data": {},
            "rows": [
                row("sweep", "overhead per configuration", None, note="agentnb.sweep missing")
            ],
        }

    async def both() -> tuple[list[float], list[float]]:
        await _plain(5)  # warm up both paths
        await _swept(5)
        plain, swept = [], []
        for _ in range(repeats):
            plain.append(await _plain(configs))
            swept.append(await _swept(configs))
        return plain, swept

    plain, swept = asyncio.run(both())
    extra = summarize([(s - p) / configs * 1e3 for s, p in zip(swept, plain)])
    per_run = summarize([p / configs * 1e3 for p in plain])
    rows: list[Row] = [
        timed_row(
            f"{configs} configurations",
            "sweep overhead per configuration",
            extra,
            "ms",
            limit=TARGET_MS,
            note="sweep minus a plain loop over the same runs",
        ),
        timed_row(
            f"{configs} configurations", "one configuration's run (reference)", per_run, "ms"
        ),
    ]
    return {
        "name": "sweep",
        "title": "Sweep overhead per configuration",
        "params": {"configs": configs, "repeats": repeats},
        "data": {"plain_s": summarize(plain), "sweep_s": summarize(swept), "overhead_ms": extra},
        "rows": rows,
    }
