"""Benchmark 1: framework overhead per model call, with a zero-latency scripted model.

The model answers instantly, so everything measured is the framework: building requests,
running tools and sub-agents, and agentnb's trace (spans, per-call rows, character and token
counts), which stays on. Cases: one agent in a tool loop; a coordinator that calls three
sub-agents in one turn and then synthesises (five model calls per run); and that hierarchy
with its agents built anew for every run, as a sweep builds them (the calls counted from the
trace, no DataFrame built); that last case again with token counting on (bpe-openai) and
off, side by side, and what reading the rows (``result.calls``) then costs in each.

With openai-agents installed, the same two workloads run on it in the same process, in
interleaved blocks, and the ratio of the medians is reported.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from agentnb import set_tokenizer

from . import _openai_agents as oa
from ._cases import (
    REVIEWERS,
    Case,
    agentnb_hierarchy,
    agentnb_hierarchy_fresh,
    agentnb_single,
    side_by_side,
)
from ._stats import Row, at_least, at_most, row, summarize, timed_row

TARGET_US = 100.0
TARGET_RATIO = 20.0


def bench_overhead(
    runs: int = 300, block: int = 25, reviewers: int = REVIEWERS, compare: bool = True
) -> dict[str, Any]:
    """Microseconds per model call for each case (median of ``runs`` runs, one sample each)."""
    with_oa = compare and oa.available()
    pairs: list[tuple[Case, Case | None]] = [
        (agentnb_single(), oa.single() if with_oa else None),
        (agentnb_hierarchy(reviewers), oa.hierarchy(reviewers) if with_oa else None),
        (agentnb_hierarchy_fresh(reviewers), None),  # a sweep's case: nothing reused
        (agentnb_hierarchy_fresh(reviewers, tokens=True), None),  # ...with counting on and off
        (agentnb_hierarchy_fresh(reviewers, tokens=False), None),
    ]
    cases = [c for pair in pairs for c in pair if c is not None]
    samples, cpu = asyncio.run(side_by_side(cases, runs, block))
    reading = {on: asyncio.run(_reading_rows(reviewers, on, runs)) for on in (True, False)}
    set_tokenizer(None)

    rows: list[Row] = []
    data: dict[str, Any] = {}
    for ours, theirs in pairs:
        mine, mine_cpu = summarize(samples[ours.key]), summarize(cpu[ours.key])
        data[f"agentnb: {ours.name}"] = {
            "wall_us": mine,
            "cpu_us": mine_cpu,
            "fastest_block_us": _fastest_block(samples[ours.key], block),
        }
        rows.append(
            timed_row(
                f"agentnb · {ours.name}",
                "µs per model call",
                mine,
                "µs",
                limit=TARGET_US,
                note=_note(mine_cpu, samples[ours.key], block),
            )
        )
        if theirs is None:
            continue
        other, other_cpu = summarize(samples[theirs.key]), summarize(cpu[theirs.key])
        data[f"openai-agents: {theirs.name}"] = {
            "wall_us": other,
            "cpu_us": other_cpu,
            "fastest_block_us": _fastest_block(samples[theirs.key], block),
        }
        rows.append(
            timed_row(
                f"openai-agents · {theirs.name}",
                "µs per model call",
                other,
                "µs",
                note=_note(other_cpu, samples[theirs.key], block),
            )
        )
        ratios = _block_ratios(samples[theirs.key], samples[ours.key], block)
        ratio = other["median"] / mine["median"]
        cpu_ratio = other_cpu["median"] / mine_cpu["median"]
        data[f"ratio: {ours.name}"] = {
            "ratio_of_medians": ratio,
            "per_block": ratios,
            "cpu_ratio": cpu_ratio,
        }
        target, met = at_least(ratio, TARGET_RATIO)
        rows.append(
            row(
                f"openai-agents ÷ agentnb · {ours.name}",
                "overhead ratio",
                ratio,
                "×",
                spread=summarize(ratios),
                target=target,
                met=met,
                note=f"same process, interleaved blocks; CPU-time ratio {cpu_ratio:.1f}×",
            )
        )
    on, off = (summarize(samples[agentnb_hierarchy_fresh(reviewers, t).key]) for t in (1, 0))
    ratio = on["median"] / off["median"]
    data["counting on ÷ off"] = {"ratio_of_medians": ratio}
    target, met = at_most(ratio, 1.15)
    rows.append(
        row(
            "agentnb · hierarchy built anew: counting on ÷ off",
            "counting's share of the overhead",
            ratio,
            "×",
            target=target,
            met=met,
            note=f"{on['median']:.0f} µs against {off['median']:.0f} µs per model call",
        )
    )
    for on_, figures in reading.items():
        data[f"reading rows, counting {'on' if on_ else 'off'}"] = figures
        rows.append(
            row(
                f"agentnb · hierarchy built anew: result.calls, counting {'on' if on_ else 'off'}",
                "µs per model call to read the rows",
                figures["median"],
                "µs",
                spread={k: v for k, v in figures.items() if k != "read_over_run"},
                note="after the run: counting the tokens and building the DataFrame",
            )
        )
        target, met = at_most(figures["read_over_run"], 1.0) if on_ else (None, None)
        rows.append(
            row(
                f"agentnb · hierarchy built anew: result.calls, counting {'on' if on_ else 'off'}",
                "read ÷ the run's own time",
                figures["read_over_run"],
                "×",
                target=target,
                met=met,
                note="each run timed, then its first read (issue 34: ≤ 1×)",
            )
        )
    if not with_oa:
        why = "not installed: pip install openai-agents" if compare else "skipped"
        rows.append(row("openai-agents", "overhead ratio", None, note=why))
    return {
        "name": "overhead",
        "title": "Framework overhead per model call (zero-latency scripted model, tracing on)",
        "params": {"runs": runs, "block": block, "reviewers": reviewers, "openai_agents": with_oa},
        "data": data,
        "rows": rows,
    }


async def _reading_rows(reviewers: int, on: bool, runs: int) -> dict[str, float]:
    """Microseconds per model call that ``result.calls`` takes after a run of the hierarchy
    built anew (each run's first read: its tokens are counted then)."""
    case = agentnb_hierarchy_fresh(reviewers, tokens=on)
    case.reset()
    results = [await case.run() for _ in range(3)]
    for result in results:  # warm: the tokenizer loaded, pandas imported
        _ = result.calls
    per_call, of_run = [], []
    for _ in range(max(runs // 4, 10)):
        start = time.perf_counter()
        result = await case.run()
        ran = time.perf_counter() - start
        start = time.perf_counter()
        _ = result.calls
        read = time.perf_counter() - start
        per_call.append(read / case.calls_per_run * 1e6)
        of_run.append(read / ran)
    figures = summarize(per_call)
    figures["read_over_run"] = statistics.median(of_run)
    return figures


def _fastest_block(samples: list[float], block: int) -> float:
    """The lowest median of one block of runs: what the machine gives when nothing else runs."""
    return min(statistics.median(samples[i : i + block]) for i in range(0, len(samples), block))


def _note(cpu: dict[str, float], wall: list[float], block: int) -> str:
    return (
        f"CPU time {cpu['median']:,.0f} µs (IQR {cpu['q1']:,.0f}–{cpu['q3']:,.0f}); "
        f"fastest block median {_fastest_block(wall, block):,.0f} µs"
    )


def _block_ratios(theirs: list[float], ours: list[float], block: int) -> list[float]:
    """The ratio of medians within each interleaved block: the spread of the ratio."""
    out = []
    for i in range(0, min(len(theirs), len(ours)), block):
        a, b = theirs[i : i + block], ours[i : i + block]
        if a and b:
            out.append(statistics.median(a) / statistics.median(b))
    return out
