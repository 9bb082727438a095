"""The benchmark harness runs, at tiny sizes, and returns what the published table needs.

No timing is asserted (timings belong to `python -m benchmarks`, not to tests); what is
checked is the shape of each section and the figures that do not depend on the machine, so
the harness cannot rot silently while the code it measures changes.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path

import pytest

with warnings.catch_warnings():  # bpe-openai's import warns (importlib.resources.open_binary)
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import bpe_openai  # noqa: F401
    except ImportError:
        pass

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ is not installed

from benchmarks._stats import summarize
from benchmarks.cost import bench_cost
from benchmarks.fanout import bench_fanout
from benchmarks.overhead import bench_overhead
from benchmarks.report import markdown
from benchmarks.run import PLAN, main
from benchmarks.stream_latency import bench_stream
from benchmarks.sweep_overhead import bench_sweep
from benchmarks.token_cache import bench_token_cache
from benchmarks.trace_scale import bench_trace_scale

ROW_KEYS = {"case", "metric", "value", "unit", "spread", "target", "met", "note"}


def _check(section: dict, name: str) -> list[dict]:
    assert section["name"] == name
    assert section["title"] and isinstance(section["params"], dict)
    assert section["rows"], "a section without rows would print nothing"
    for row in section["rows"]:
        assert set(row) == ROW_KEYS
        assert row["met"] in (True, False, None)
        assert (row["target"] is None) == (row["met"] is None)
        if row["spread"] is not None:
            assert row["spread"]["min"] <= row["spread"]["median"] <= row["spread"]["max"]
    json.dumps(section)  # it must go into results/latest.json as it is
    return section["rows"]


def _metric(rows: list[dict], metric: str) -> list[dict]:
    found = [r for r in rows if r["metric"] == metric]
    assert found, f"no row for {metric!r}"
    return found


def test_summaries_give_median_quartiles_and_extremes():
    assert summarize([3.0, 1.0, 2.0, 4.0, 100.0]) == {
        "median": 3.0,
        "q1": 2.0,
        "q3": 4.0,
        "min": 1.0,
        "max": 100.0,
        "n": 5,
    }
    assert summarize([7.0])["q1"] == summarize([7.0])["q3"] == 7.0


def test_overhead_times_both_agentnb_cases():
    rows = _check(bench_overhead(runs=3, block=2, compare=False), "overhead")
    per_call = _metric(rows, "µs per model call")
    assert [r["case"] for r in per_call] == [
        "agentnb · single agent, tool loop",
        "agentnb · hierarchy, 3 sub-agents",
        "agentnb · hierarchy, 3 sub-agents, agents built anew every run",
        "agentnb · hierarchy, 3 sub-agents, agents built anew every run, token counting on",
        "agentnb · hierarchy, 3 sub-agents, agents built anew every run, token counting off",
    ]
    assert all(r["spread"]["n"] == 3 and r["value"] > 0 for r in per_call)
    assert _metric(rows, "counting's share of the overhead")[0]["target"] == "<= 1.15"
    reading = _metric(rows, "µs per model call to read the rows")
    assert [r["case"].rsplit(", ", 1)[1] for r in reading] == ["counting on", "counting off"]
    against_run = _metric(rows, "read ÷ the run's own time")
    assert [r["target"] for r in against_run] == ["<= 1", None]


def test_a_fresh_process_first_run_is_measured_in_new_processes():
    from benchmarks.first_run import bench_first_run

    rows = _check(bench_first_run(repeats=1), "first_run")
    assert [r["unit"] for r in rows] == ["ms", "ms", "s", "×", "s"]
    # the "ms" rows are differences (first − next) and may be below zero on a noisy machine
    assert all(math.isfinite(r["value"]) for r in rows)
    assert all(r["value"] > 0 for r in rows if r["unit"] != "ms")


def test_overhead_side_by_side_with_openai_agents_when_installed():
    pytest.importorskip("agents")
    section = bench_overhead(runs=2, block=1, compare=True)
    rows = _check(section, "overhead")
    assert section["params"]["openai_agents"] is True
    ratios = _metric(rows, "overhead ratio")
    assert len(ratios) == 2 and all(r["value"] > 0 and r["target"] == ">= 20" for r in ratios)


def test_capture_overhead_compares_plain_and_captured_openai_agents_runs():
    pytest.importorskip("agents")
    from benchmarks.capture_overhead import bench_capture

    section = bench_capture(runs=2, block=1)
    rows = _check(section, "openai_agents_capture")
    added = _metric(rows, "overhead")
    assert [r["case"] for r in added] == [
        "capture adds · single agent, tool loop",
        "capture adds · hierarchy, 3 sub-agents",
    ]
    assert all(r["target"] == "<= 5" and r["unit"] == "%" for r in added)


def test_fanout_reports_ratio_and_cost_per_branch():
    section = bench_fanout(
        sizes=(3, 100), latency=0.01, repeats=1, reviewer_latency=0.01, reviewer_repeats=1
    )
    rows = _check(section, "fanout")
    assert [r["metric"] for r in rows] == [
        "wall ÷ critical path",
        "overhead per branch",
        "CPU per branch",
        "wall ÷ critical path",
        "overhead per branch",
        "CPU per branch",
        "parallel wall ÷ slowest",
        "serial wall ÷ sum",
    ]
    assert section["data"]["sizes"][3]["ratio"]["median"] >= 1.0  # never faster than a branch


def test_trace_scale_builds_the_calls_frame_of_a_real_run():
    section = bench_trace_scale(workers=2, turns=3, repeats=1, memory_workers=1)
    rows = _check(section, "trace_scale")
    assert section["data"]["model_calls"] == 2 * 3 + 2
    # model calls, tool calls, agent spans of the workers, plus run and coordinator spans
    assert section["data"]["spans"] == (2 * 3 + 2) + (2 * 2 + 2) + 2 + 2
    assert _metric(rows, "build RunResult.calls")[0]["target"] is None  # stated for 100k only
    assert _metric(rows, "memory per span")[0]["value"] > 0


def test_cost_checks_the_issue_targets_on_the_scenario():
    rows = _check(bench_cost(), "cost")
    targeted = {(r["case"], r["metric"]) for r in rows if r["target"] is not None}
    assert targeted == {
        ("handle, k=3", "multiplier"),
        ("handle", "chars per added sub-agent"),
        ("attached, k=3", "multiplier"),
        ("team, k=3", "multiplier"),
        ("team", "chars per added sub-agent"),
    }
    assert all(r["met"] for r in rows if r["target"] is not None)
    assert len(_metric(rows, "multiplier")) == 4 * 4  # four modes, k = 1, 2, 3, 5


def test_token_counting_reads_only_new_texts_each_turn():
    section = bench_token_cache(turns=8, window=3, repeats=1)
    rows = _check(section, "token_cache")
    assert _metric(rows, "texts tokenized per turn")[0]["value"] == 2.0
    # a cold pass: system prompt, tool spec, the task, then two texts per turn but the last
    assert section["data"]["texts_total"] == 3 + 2 * 7
    assert section["data"]["texts_uncached"] == sum(3 + 2 * (t - 1) for t in range(1, 9))


def test_sweep_overhead_compares_against_a_plain_loop():
    rows = _check(bench_sweep(configs=2, repeats=1), "sweep")
    assert [r["metric"] for r in rows] == [
        "sweep overhead per configuration",
        "one configuration's run (reference)",
    ]


def test_stream_latency_times_both_clients_and_counts_connections():
    rows = _check(bench_stream(runs=4, block=2), "stream")
    assert [r["metric"] for r in rows] == [
        "ms to first delta",
        "ms to first delta",
        "time to first delta",
        "TCP connections",
    ]
    assert _metric(rows, "TCP connections")[0]["value"] == 1  # the pool keeps its connection


def test_the_runner_writes_json_and_prints_a_markdown_table(tmp_path, capsys):
    out = tmp_path / "results.json"
    assert main(["--quick", "--only", "cost", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["quick"] is True
    machine = document["machine"]
    assert {"cpu", "cores", "python", "agentnb", "date", "tokenizer"} <= set(machine)
    assert [s["name"] for s in document["benchmarks"]] == ["cost"]
    table = capsys.readouterr().out
    assert table.splitlines()[0].startswith("Machine: ")
    assert "| Cost | handle, k=3 | multiplier |" in table
    assert table == markdown(document) + "\n"
    assert (tmp_path / "results.md").read_text() == table


def test_the_runner_refuses_unknown_benchmarks(capsys):
    with pytest.raises(SystemExit):
        main(["--only", "nope"])
    assert "unknown benchmark" in capsys.readouterr().err
    assert set(PLAN) == {
        "cost",
        "first_run",
        "token_cache",
        "fanout",
        "sweep",
        "stream",
        "overhead",
        "openai_agents_capture",
        "trace_scale",
    }


def test_a_quick_run_does_not_overwrite_the_published_results(tmp_path, monkeypatch):
    import benchmarks.run as runner

    published = tmp_path / "latest.json"
    monkeypatch.setattr(runner, "DEFAULT_OUT", published)
    monkeypatch.setattr(runner, "QUICK_OUT", tmp_path / "quick" / "quick.json")
    assert main(["--quick", "--only", "cost"]) == 0
    assert not published.exists()
    assert json.loads((tmp_path / "quick" / "quick.json").read_text())["quick"] is True
