"""The widgets against a recording comm: what they send is what a front end would draw."""

from __future__ import annotations

import threading

import pytest

import agentnb as a
from agentnb.notebook import RunMonitor, TraceExplorer


def team(n: int = 2, latency: float = 0.0) -> a.Agent:
    subs = [
        a.Agent(
            f"expert{i}", "You check.", a.ScriptedModel([a.say(f"finding {i}")], latency=latency)
        )
        for i in range(n)
    ]
    calls = [a.tool_call(f"expert{i}", input="clause 7") for i in range(n)]
    return a.Agent(
        "coord",
        "Coordinate.",
        a.ScriptedModel([calls, a.say("all checked")], latency=latency),
        subs,
    )


def test_the_monitor_ends_with_every_agent_its_calls_and_characters(dummy_comm):
    monitor = RunMonitor("coord")
    result = a.run_sync(team(), "review", on_event=monitor.on_event, stream=False)
    monitor.finish(result)

    per_path = result.calls.groupby("path")["chars_in"].sum().to_dict()
    assert monitor.snapshot() == [
        {
            "agent": "coord",
            "path": "coord",
            "status": "ok",
            "calls": 2,
            "chars_in": per_path["coord"],
        },
        {
            "agent": "expert0",
            "path": "coord/expert0",
            "status": "ok",
            "calls": 1,
            "chars_in": per_path["coord/expert0"],
        },
        {
            "agent": "expert1",
            "path": "coord/expert1",
            "status": "ok",
            "calls": 1,
            "chars_in": per_path["coord/expert1"],
        },
    ]
    last = [m["state"]["value"] for m in dummy_comm.states() if "value" in m["state"]][-1]
    assert "✔ <b>coord</b> · ok" in last and f"{result.chars_in:,} chars sent" in last
    assert repr(monitor) == "RunMonitor('coord')"  # text/plain: the same in every run


async def test_redraws_are_throttled_and_happen_on_the_loop_thread(dummy_comm):
    # async: a loop runs here, as in a Jupyter cell, so run_sync uses agentnb's background loop
    threads: list[str] = []

    class Spy(RunMonitor):
        def redraw(self) -> None:
            threads.append(threading.current_thread().name)
            super().redraw()

    monitor = Spy("coord", interval=60, tick=60)  # nothing is due again within this test
    events: list[a.Event] = []

    def both(event: a.Event) -> None:
        monitor.on_event(event)
        events.append(event)

    result = a.run_sync(team(n=6), "review", on_event=both)
    monitor.finish(result)

    # Created (1), the run's end (1, on the loop), finished (1): not one redraw per event.
    spans = [e for e in events if isinstance(e, (a.SpanStarted, a.SpanEnded))]
    assert len(spans) == 2 * len(result.spans) > 30 and len(events) > len(spans)
    assert threads == ["MainThread", "agentnb-loop", "MainThread"]
    assert monitor.snapshot()[0]["calls"] == 2


def test_the_monitor_shows_an_interrupted_run_as_failed(dummy_comm):
    monitor = RunMonitor("stuck")
    model = a.ScriptedModel([a.say("late")], latency=5)
    result = a.run_sync(
        a.Agent("stuck", "Wait.", model), "go", on_event=monitor.on_event, timeout=0.05
    )
    monitor.finish(result)

    assert monitor.state == "failed" and monitor.error is not None
    assert monitor.error.startswith("RunTimeout: ")
    assert monitor.snapshot()[0]["status"] != "running"
    assert "RunTimeout" in monitor.children[0].value


def test_the_explorer_lists_the_span_tree_and_shows_a_calls_request_split(dummy_comm):
    result = a.run_sync(team(), "review")
    explorer = TraceExplorer(result)

    labels = [label.replace("\xa0", " ") for label, _ in explorer.tree.options]
    assert labels[0] == "agent coord"
    assert labels[1].startswith("  model call 1 · ")
    assert "  tool expert0" in labels and "    agent expert0" in labels
    assert len(labels) == len(result.spans) - 1  # the run span repeats the root agent

    row = result.calls.iloc[0]
    explorer.select(row["span_id"])
    detail = explorer.detail.value
    assert (
        f"<td>· tool schemas</td><td style='text-align:right'>{row['chars_in_tools']:,} (" in detail
    )
    assert f"<td>chars sent</td><td style='text-align:right'>{row['chars_in']:,}</td>" in detail
    sent = [m["state"]["value"] for m in dummy_comm.states() if "value" in m["state"]]
    assert sent and sent[-1] == detail  # the selection reached the front end
    assert repr(explorer) == f"TraceExplorer({len(labels)} spans)"


def test_the_dashboard_reruns_and_redraws_when_a_slider_moves(dummy_comm):
    from agentnb.measure.scenarios import generalist, review_hierarchy
    from agentnb.notebook import SweepDashboard

    board = SweepDashboard(k=1, max_k=2, latency=0.0)
    baseline = a.run_sync(generalist()).chars_in
    two = a.run_sync(review_hierarchy(2, "inline")).chars_in
    first_timeline = bytes(board.timeline_image.value)

    board.k.value = 2  # what dragging the slider does
    assert board.last_run is not None
    assert sorted(board.last_run.calls["path"].unique()) == [
        "coordinator",
        "coordinator/opinion_1",
        "coordinator/opinion_2",
    ]
    assert f"{two:,} characters sent, <b>{two / baseline:.2f}×</b>" in board.summary.value
    assert (
        bytes(board.timeline_image.value).startswith(b"\x89PNG")
        and bytes(board.timeline_image.value) != first_timeline
    )
    assert bytes(board.multiplier_image.value).startswith(b"\x89PNG")
    summaries = [
        m["state"]["value"]
        for m in dummy_comm.states()
        if "<b>2 sub-agents</b>" in str(m["state"].get("value"))
    ]
    assert summaries  # the new numbers were sent to the front end

    board.mode.value = "attached"
    attached = a.run_sync(review_hierarchy(2, "attached")).chars_in
    assert board.last_run.chars_in == attached < two


async def test_with_top_level_await_the_monitor_follows_the_run_on_the_callers_loop(dummy_comm):
    monitor = RunMonitor("coord")
    result = await a.run(team(), "review", on_event=monitor.on_event)

    assert result.ok and monitor.state == "ok"  # no finish() needed: the run span's end says so
    assert [row["status"] for row in monitor.snapshot()] == ["ok", "ok", "ok"]
    last = [m["state"]["value"] for m in dummy_comm.states() if "value" in m["state"]][-1]
    assert "✔ <b>coord</b> · ok" in last


def test_a_streamed_run_shows_each_agent_s_text_in_the_monitor(dummy_comm):
    boss = team()
    for sub in boss.tools:
        sub.model.chunk_chars = 4
    monitor = RunMonitor("coord", streamed=True)  # the events are read on this thread

    for event in a.stream_sync(boss, "review"):  # the stream carries the spans too
        monitor.on_event(event)
    monitor.finish(event.result)

    texts = {path: row.text for path, row in monitor.rows.items()}
    assert texts == {
        "coord": "all checked",
        "coord/expert0": "finding 0",
        "coord/expert1": "finding 1",
    }
    html = monitor.render(0.0)
    assert "coord/expert1:</span> finding 1</td>" in html and '">all checked</td>' in html


def test_the_explorer_shows_when_a_streamed_call_s_first_token_came(dummy_comm):
    events = list(a.stream_sync(team(), "review"))
    result = events[-1].result
    explorer = TraceExplorer(result)

    explorer.select(result.calls["span_id"][0])
    assert "<td>first token after</td>" in explorer.detail.value
    plain = a.run_sync(team(), "review")
    explorer = TraceExplorer(plain)
    explorer.select(plain.calls["span_id"][0])
    assert "first token" not in explorer.detail.value


ANSWER = "The clause promises 100% availability, which no supplier can keep."


def _writer(chunk_chars: int = 3) -> a.Agent:
    model = a.ScriptedModel([a.say(ANSWER)], chunk_chars=chunk_chars)
    return a.Agent("writer", "Review.", model)


def _views(monitor: RunMonitor) -> list[str]:
    """Every picture the monitor's view is given from now on, in order."""
    seen: list[str] = []
    monitor.children[0].observe(lambda change: seen.append(change["new"]), "value")
    return seen


def _finished(views: list[str]) -> list[str]:
    return [v for v in views if "✔ <b>" in v]


def test_a_stream_read_late_never_shows_the_run_finished_before_its_whole_text(dummy_comm):
    # The old race, made certain: the loop runs the whole run before the reader on the calling
    # thread has read a single event. The spans are in the same stream as the text, so the
    # monitor has seen nothing of the run yet, its end included. Then the events are read.
    monitor = RunMonitor("writer", streamed=True, interval=0, tick=60)
    views = _views(monitor)
    events = list(a.stream_sync(_writer(), "review"))
    assert monitor.state == "waiting" and monitor.rows == {}  # nothing read yet
    assert _finished(views) == []

    for event in events:
        monitor.on_event(event)
    assert monitor.state == "ok"
    assert _finished(views) and all(ANSWER in v for v in _finished(views)), views
    # Each delta was drawn (interval 0) before the run was shown finished, the text growing.
    drawn = [v for v in views if "agentnb-monitor-text" in v]
    assert len(drawn) > len(ANSWER) // 3 - 2 and views.index(_finished(views)[0]) > 1


def test_run_live_gives_the_monitor_every_delta_before_the_run_s_end(dummy_comm):
    from agentnb.notebook import run_live

    threads: dict[str, set[str]] = {"span": set(), "event": set()}

    class Spy(RunMonitor):
        def on_event(self, event: a.Event) -> None:
            kind = "span" if isinstance(event, (a.SpanStarted, a.SpanEnded)) else "event"
            threads[kind].add(threading.current_thread().name)
            super().on_event(event)

    monitor = Spy("writer", interval=60, tick=60)  # drawn only at the run's end and finish
    views = _views(monitor)
    model_seen: list[object] = []
    result = run_live(_writer(), "review", monitor=monitor, on_event=model_seen.append)

    assert result.ok and result.output == ANSWER and result.calls["ttft_s"].notna().all()
    # Spans and events reached the monitor on one thread (the run's), so in the order they happened.
    assert len(threads["span"]) == 1 and threads["event"] == threads["span"]
    assert _finished(views) and all(ANSWER in v for v in _finished(views)), views
    # The caller's own on_event is called too, with every event of the run.
    assert "".join(e.text for e in model_seen if isinstance(e, a.TextDelta)) == ANSWER
    assert isinstance(model_seen[-1], a.RunEnded) and model_seen[-1].result is result


def test_the_deprecated_listener_form_still_drives_the_monitor(dummy_comm):
    watched, listened = RunMonitor("coord"), RunMonitor("coord")
    result = a.run_sync(team(), "review", on_event=watched.on_event, stream=False)
    with pytest.warns(DeprecationWarning, match="on_event=fn"):
        old = a.run_sync(team(), "review", listeners=[listened.listener])
    watched.finish(result)
    listened.finish(old)

    assert listened.snapshot() == watched.snapshot() and listened.state == "ok"
