"""No run leaves anything behind: runs of freshly built agents (a 40-field tool input, both
HTTP adapters against a local server, whole and streamed) leave no task, thread or file
descriptor. A small version of ``python -m benchmarks.leak`` (10,000 runs, which also bounds
the growth of memory), with the same code."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from benchmarks.leak import check


def test_runs_of_fresh_agents_leave_no_task_thread_or_descriptor():
    figures = check(runs=40, warmup=20, max_growth_mb=None)  # raises AssertionError on a leak

    before, after = figures["before"], figures["after"]
    assert after["tasks"] == 0
    assert after["fds"] <= before["fds"] and after["threads"] <= before["threads"]
