"""What `agentnb.integrations.openai_agents.capture` adds to an openai-agents run.

The two openai-agents workloads of the overhead benchmark (one agent in a tool loop; a
coordinator with three sub-agents through ``Agent.as_tool``), with the SDK's tracing disabled,
run plain and inside ``capture()`` (one capture per run, so opening and closing it is counted),
in interleaved blocks in one process. The figure is the captured run's time per model call over
the plain run's, as a percentage added; the notes give the same from CPU time and from the
fastest block of each (the best estimate of a quiet machine on a shared host). The scripted
model answers at once, so the SDK's own work is the whole denominator: with a real model's
latency the share is far smaller.
"""

from __future__ import annotations

import asyncio
import statistics
from typing import Any

from . import _openai_agents as oa
from ._cases import Case, side_by_side
from ._stats import Row, at_most, row, summarize, timed_row

TARGET_PERCENT = 5.0


def _captured(case: Case, count: str) -> Case:
    from agentnb.integrations.openai_agents import capture

    async def run() -> Any:
        with capture(count):  # type: ignore[arg-type]
            return await case.run()

    return Case(
        case.name,
        f"openai-agents + capture({count})",
        case.calls_per_run,
        run,
        case.reset,
        case.check,
    )


def bench_capture(runs: int = 300, block: int = 25, count: str = "agentnb") -> dict[str, Any]:
    """Microseconds per model call, plain and captured, and the percentage capture adds."""
    if not oa.available():
        return {
            "name": "openai_agents_capture",
            "title": "openai-agents capture overhead",
            "params": {},
            "data": {},
            "rows": [row("openai-agents", "capture overhead", None, note="not installed")],
        }
    pairs = [(plain, _captured(plain, count)) for plain in (oa.single(), oa.hierarchy())]
    cases = [c for pair in pairs for c in pair]
    wall, cpu = asyncio.run(side_by_side(cases, runs, block))
    rows: list[Row] = []
    data: dict[str, Any] = {}
    for plain, captured in pairs:
        base, with_capture = summarize(wall[plain.key]), summarize(wall[captured.key])
        ratios = [
            statistics.median(wall[captured.key][i : i + block])
            / statistics.median(wall[plain.key][i : i + block])
            for i in range(0, runs, block)
        ]
        added = (with_capture["median"] / base["median"] - 1.0) * 100.0
        fastest = {
            key: min(
                statistics.median(cpu[key][i : i + block]) for i in range(0, len(cpu[key]), block)
            )
            for key in (plain.key, captured.key)
        }
        quiet = (fastest[captured.key] / fastest[plain.key] - 1.0) * 100.0
        cpu_added = (
            summarize(cpu[captured.key])["median"] / summarize(cpu[plain.key])["median"] - 1.0
        ) * 100.0
        data[plain.name] = {
            "plain_us": base,
            "captured_us": with_capture,
            "added_percent": added,
            "per_block_ratio": ratios,
            "cpu_added_percent": cpu_added,
            "fastest_block_cpu_us": fastest,
            "fastest_block_added_percent": quiet,
        }
        rows.append(timed_row(f"openai-agents · {plain.name}", "µs per model call", base, "µs"))
        rows.append(
            timed_row(
                f"openai-agents + capture · {plain.name}", "µs per model call", with_capture, "µs"
            )
        )
        target, met = at_most(added, TARGET_PERCENT)
        spread = summarize([(r - 1.0) * 100.0 for r in ratios])
        rows.append(
            row(
                f"capture adds · {plain.name}",
                "overhead",
                added,
                "%",
                spread=spread,
                target=target,
                met=met,
                note=(
                    f"count={count!r}; interleaved blocks; CPU time +{cpu_added:.1f} %; "
                    f"fastest blocks' CPU time +{quiet:.1f} % "
                    f"(+{fastest[captured.key] - fastest[plain.key]:.0f} µs per call)"
                ),
            )
        )
    return {
        "name": "openai_agents_capture",
        "title": "openai-agents capture overhead (tracing disabled, scripted model)",
        "params": {"runs": runs, "block": block, "count": count},
        "data": data,
        "rows": rows,
    }
