"""Summaries of noisy timings, table rows, and a description of the machine.

Timings on shared machines are noisy, so every timed figure is a median over several runs,
reported with its spread (quartiles and extremes). Comparisons between two frameworks are
made from samples taken side by side in one process, never from figures of separate runs.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

Row = dict[str, Any]
"""One line of the published table: case, metric, value, unit, spread, target, met."""


def summarize(samples: list[float]) -> dict[str, float]:
    """Median, quartiles, extremes and count of ``samples``."""
    if not samples:
        raise ValueError("no samples to summarize")
    ordered = sorted(samples)
    if len(ordered) >= 2:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    else:
        q1 = q3 = ordered[0]
    return {
        "median": statistics.median(ordered),
        "q1": q1,
        "q3": q3,
        "min": ordered[0],
        "max": ordered[-1],
        "n": len(ordered),
    }


def row(
    case: str,
    metric: str,
    value: float | int | None,
    unit: str = "",
    *,
    spread: dict[str, float] | None = None,
    target: str | None = None,
    met: bool | None = None,
    note: str = "",
) -> Row:
    """A table row. ``target`` is written like ``"<= 100"``; ``met`` says whether it holds."""
    return {
        "case": case,
        "metric": metric,
        "value": value,
        "unit": unit,
        "spread": spread,
        "target": target,
        "met": met,
        "note": note,
    }


def timed_row(
    case: str,
    metric: str,
    stats: dict[str, float],
    unit: str,
    *,
    limit: float | None = None,
    note: str = "",
) -> Row:
    """A row for a timed median, checked against an upper ``limit`` when there is one."""
    return row(
        case,
        metric,
        stats["median"],
        unit,
        spread=stats,
        target=None if limit is None else f"<= {limit:g}",
        met=None if limit is None else stats["median"] <= limit,
        note=note,
    )


def at_most(value: float, limit: float) -> tuple[str, bool]:
    return f"<= {limit:g}", value <= limit


def at_least(value: float, limit: float) -> tuple[str, bool]:
    return f">= {limit:g}", value >= limit


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _load() -> list[float] | None:
    """The 1, 5 and 15-minute load averages at the start: other work on the machine shows here."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on: they mean little without it."""
    import agentnb

    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "machine": platform.machine(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "python_impl": platform.python_implementation(),
        "agentnb": getattr(agentnb, "__version__", None),
        "openai_agents": _version("openai-agents"),
        "pandas": _version("pandas"),
        "git_commit": _git_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average": _load(),
        "argv": sys.argv[1:],
    }
