"""Benchmark 2: fan-out scale — 10, 100, 1,000 and 5,000 branches of one model call at 0.2 s latency.

Every branch is a single agent whose scripted model waits ``latency`` seconds (an
``asyncio.sleep``, standing in for the network), so the critical path is ``latency``: a perfect
fan-out finishes in exactly that. Reported: wall time over the critical path, and the
framework's cost per branch, ``(wall - critical path) / branches``. The same fan-out at zero
latency gives the CPU cost of a branch on its own: the process's CPU time over the branches
(its wall time over the branches is kept beside it).

Also the issue's three-reviewer check: three branches of ``reviewer_latency`` seconds, in
parallel (close to the slowest) and one after another (close to the sum).

Uses `agentnb.parallel` (``agentnb/patterns/parallel.py``); where it is not available, the
same runs gathered with ``asyncio.gather`` over `agentnb.run`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import agentnb as nb

from ._stats import Row, row, summarize, timed_row

TARGET_RATIO = 1.05
TARGET_PER_BRANCH_US = 100.0
TARGET_RATIO_5000 = 2.0
"""At 5,000 branches (issue 34): wall ≤ 2 × the critical path."""
TARGET_FLAT = 0.2
"""CPU per branch at the largest size within ±20 % of its figure at 100 branches (issue 34)."""


def _parallel() -> tuple[str, Callable[[dict[str, nb.Agent], str], Awaitable[Any]]]:
    try:
        from agentnb.patterns.fan_out import parallel
    except ImportError:

        async def gathered(branches: dict[str, nb.Agent], task: str) -> Any:
            return await asyncio.gather(*(nb.run(a, task) for a in branches.values()))

        return "asyncio.gather over agentnb.run", gathered
    return "agentnb.parallel", parallel


def _branches(n: int, latency: float) -> dict[str, nb.Agent]:
    return {
        f"b{i}": nb.Agent(f"b{i}", "Answer.", nb.ScriptedModel([nb.say("ok")], latency=latency))
        for i in range(n)
    }


def _check(outcome: Any, n: int) -> None:
    if isinstance(outcome, list):  # the gather fallback
        ok = len(outcome) == n and all(r.ok for r in outcome)
    else:
        ok = outcome.ok and len(outcome.outputs) == n
    if not ok:
        raise RuntimeError(f"fan-out of {n} branches went wrong: {outcome!r}")


async def _walls(n: int, latency: float, repeats: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds (this process's, ``process_time``) of each fan-out."""
    _, fan_out = _parallel()
    walls, cpus = [], []
    for _ in range(repeats):
        branches = _branches(n, latency)  # fresh scripts, built outside the timed region
        start, cpu = time.perf_counter(), time.process_time()
        outcome = await fan_out(branches, "task")
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
        _check(outcome, n)
    return walls, cpus


async def _reviewers(latency: float, repeats: int) -> dict[str, list[float]]:
    _, fan_out = _parallel()
    walls: dict[str, list[float]] = {"parallel": [], "serial": []}
    for _ in range(repeats):
        branches = _branches(3, latency)
        start = time.perf_counter()
        _check(await fan_out(branches, "task"), 3)
        walls["parallel"].append(time.perf_counter() - start)
        branches = _branches(3, latency)
        start = time.perf_counter()
        for agent in branches.values():
            if not (await nb.run(agent, "task")).ok:
                raise RuntimeError("serial review went wrong")
        walls["serial"].append(time.perf_counter() - start)
    return walls


def bench_fanout(
    sizes: tuple[int, ...] = (10, 100, 1000, 5000),
    latency: float = 0.2,
    repeats: int = 5,
    reviewer_latency: float = 1.0,
    reviewer_repeats: int = 3,
) -> dict[str, Any]:
    how, _ = _parallel()
    rows: list[Row] = []
    data: dict[str, Any] = {"how": how, "sizes": {}}
    for n in sizes:
        walls, _ = asyncio.run(_walls(n, latency, repeats))
        zero_walls, zero_cpus = asyncio.run(_walls(n, 0.0, repeats))
        ratio = summarize([w / latency for w in walls])
        per_branch = summarize([(w - latency) / n * 1e6 for w in walls])
        # CPU time, not wall time: on a shared machine the wall time of a zero-latency fan-out
        # also counts the time other processes held the CPU, which grows with the fan-out's length.
        cpu_branch = summarize([c / n * 1e6 for c in zero_cpus])
        data["sizes"][n] = {
            "wall_s": summarize(walls),
            "ratio": ratio,
            "overhead_us_per_branch": per_branch,
            "cpu_us_per_branch_zero_latency": cpu_branch,
            "wall_us_per_branch_zero_latency": summarize([w / n * 1e6 for w in zero_walls]),
        }
        case = f"{n:,} branches × {latency:g} s"
        limit = TARGET_RATIO_5000 if n >= 5000 else TARGET_RATIO if n >= 1000 else None
        rows.append(timed_row(case, "wall ÷ critical path", ratio, "×", limit=limit))
        per_limit = TARGET_PER_BRANCH_US if n >= 1000 else None  # small n: timer noise / n
        rows.append(timed_row(case, "overhead per branch", per_branch, "µs", limit=per_limit))
        zero_wall = data["sizes"][n]["wall_us_per_branch_zero_latency"]["median"]
        note = f"process time ÷ branches; wall ÷ branches {zero_wall:.0f} µs"
        rows.append(
            timed_row(f"{n:,} branches × 0 s", "CPU per branch", cpu_branch, "µs", note=note)
        )
    largest = max(sizes)
    if 100 in data["sizes"] and largest > 100:
        base = data["sizes"][100]["cpu_us_per_branch_zero_latency"]["median"]
        top = data["sizes"][largest]["cpu_us_per_branch_zero_latency"]["median"]
        change = top / base - 1.0
        rows.append(
            row(
                f"CPU per branch, {largest:,} ÷ 100 branches",
                "change",
                change * 100,
                "%",
                target=f"within ±{TARGET_FLAT * 100:g}",
                met=abs(change) <= TARGET_FLAT,
                note=f"{base:.0f} µs → {top:.0f} µs (zero latency, process time ÷ branches)",
            )
        )
    if reviewer_repeats:
        review = asyncio.run(_reviewers(reviewer_latency, reviewer_repeats))
        par = summarize([w / reviewer_latency for w in review["parallel"]])
        ser = summarize([w / (3 * reviewer_latency) for w in review["serial"]])
        data["reviewers"] = {"latency": reviewer_latency, "parallel": par, "serial": ser}
        case = f"3 reviewers × {reviewer_latency:g} s"
        rows.append(timed_row(case, "parallel wall ÷ slowest", par, "×"))
        rows.append(timed_row(case, "serial wall ÷ sum", ser, "×"))
    return {
        "name": "fanout",
        "title": f"Fan-out scale ({how})",
        "params": {
            "sizes": list(sizes),
            "latency": latency,
            "repeats": repeats,
            "reviewer_latency": reviewer_latency,
            "reviewer_repeats": reviewer_repeats,
        },
        "data": data,
        "rows": rows,
    }
