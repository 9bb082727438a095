"""The run's events carry its spans and its log: the tree rebuilt from the stream alone is
``result.spans``, the log records it carries are ``result.log_lines()``."""

from __future__ import annotations

import json
from typing import Any

import agentnb as a


@a.tool
def lookup(clause: str) -> str:
    """Look up a clause."""
    return f"clause {clause}: unlimited liability"


def _hierarchy() -> a.Agent:
    legal = a.Agent(
        "legal",
        "Check.",
        a.ScriptedModel([a.tool_call("lookup", clause="4"), a.say("Risky.")], chunk_chars=3),
        [lookup],
    )
    return a.Agent(
        "boss",
        "Coordinate.",
        a.ScriptedModel([a.tool_call("legal", input="Check 4"), a.say("Risky, says legal.")]),
        [legal],
    )


def _rebuilt(events: list[a.Event]) -> list[dict[str, Any]]:
    """The spans as a consumer of the events sees them, in the order they started."""
    spans: dict[str, dict[str, Any]] = {}
    for event in events:
        if isinstance(event, a.SpanStarted):
            assert event.span_id not in spans and (
                event.parent_id is None or event.parent_id in spans  # a parent starts first
            )
            spans[event.span_id] = {
                "span_id": event.span_id,
                "parent_id": event.parent_id,
                "kind": event.kind,
                "name": event.name,
                "agent": event.agent,
                "path": event.path,
                "depth": event.depth,
                "started": event.time,
            }
        elif isinstance(event, a.SpanEnded):
            assert spans[event.span_id]["kind"] == event.kind
            spans[event.span_id].update(ended=event.time, status=event.status)
    return list(spans.values())


def _spans(result: a.RunResult) -> list[dict[str, Any]]:
    keys = ("span_id", "parent_id", "kind", "name", "agent", "path", "depth", "started")
    return [
        {**{k: getattr(s, k) for k in keys}, "ended": s.ended, "status": s.status}
        for s in result.spans
    ]


def test_the_span_tree_rebuilt_from_a_stream_is_the_result_s():
    events = list(a.stream_sync(_hierarchy(), "Review clause 4."))
    result = events[-1].result

    assert result.ok
    assert _rebuilt(events) == _spans(result)
    kinds = {s.kind for s in result.spans}
    assert {"run", "agent", "model_call", "tool_call"} <= kinds
    # A model call's text streams between its span's start and end.
    (legal_answer,) = [
        s for s in result.spans if s.kind == "model_call" and s.path == "boss/legal"
    ][1:]
    at = [i for i, e in enumerate(events) if e.span_id == legal_answer.span_id]
    assert [type(events[i]).__name__ for i in (at[0], at[-1])] == ["SpanStarted", "SpanEnded"]
    assert any(isinstance(events[i], a.TextDelta) for i in at)


def _log_lines(events: list[a.Event]) -> list[str]:
    records = [e.record for e in events if isinstance(e, a.LogRecorded)]
    return [json.dumps(r, ensure_ascii=False, default=str) for r in records]


def test_the_log_rebuilt_from_a_stream_is_the_result_s_in_order_before_its_end():
    events = list(a.stream_sync(_hierarchy(), "Review clause 4.", run_id="log-1"))
    result = events[-1].result

    lines = _log_lines(events)
    assert lines == result.log_lines() and len(lines) >= 4
    assert [json.loads(x)["event"] for x in (lines[0], lines[-1])] == ["run_start", "run_end"]
    logged = [i for i, e in enumerate(events) if isinstance(e, a.LogRecorded)]
    assert logged[-1] == len(events) - 2  # the run's end record comes just before RunEnded
    assert next(e for e in events if isinstance(e, a.LogRecorded)).path == "boss"


def test_a_run_with_a_handoff_logs_it_on_the_stream():
    billing = a.Agent("billing", "Bill.", a.ScriptedModel([a.say("Refunded.")]))
    triage = a.Agent(
        "triage",
        "Route.",
        a.ScriptedModel([a.tool_call("transfer_to_billing")]),
        handoffs=[billing],
    )
    events: list[a.Event] = []
    result = a.run_sync(triage, "Refund me", on_event=events.append)

    assert result.ok and _log_lines(events) == result.log_lines()
    assert "handoff" in [e.record["event"] for e in events if isinstance(e, a.LogRecorded)]


def test_on_event_without_streaming_sees_the_same_tree_and_leaves_the_calls_unstreamed():
    events: list[a.Event] = []
    result = a.run_sync(_hierarchy(), "Review clause 4.", on_event=events.append, stream=False)

    assert _rebuilt(events) == _spans(result) and _log_lines(events) == result.log_lines()
    assert not any(isinstance(e, a.TextDelta) for e in events)
    assert result.calls["ttft_s"].isna().all()  # the model was called as without on_event
    assert isinstance(events[-1], a.RunEnded) and events[-1].result is result


def test_a_pattern_s_span_events_carry_the_run_they_belong_to():
    events: list[a.Event] = []
    fan = a.run_sync(
        a.parallel({"x": _hierarchy(), "y": _hierarchy()}, "Review.", on_event=events.append)
    )

    for part, result in fan.results.items():
        mine = [e for e in events if e.part == part]
        assert _rebuilt(mine) == _spans(result)


def test_a_run_nobody_watches_has_no_span_hook():
    seen: list[object] = []

    @a.tool
    def probe(ctx: a.ToolCallContext) -> str:
        """Probe."""
        seen.append(ctx.run.trace.on_span)
        return "ok"

    def agent() -> a.Agent:
        return a.Agent("w", "x", a.ScriptedModel([a.tool_call("probe"), a.say("done")]), [probe])

    assert a.run_sync(agent(), "go").ok and seen == [None]
    assert a.run_sync(agent(), "go", on_event=lambda e: None).ok and callable(seen[-1])


def test_a_watched_run_s_result_pickles_without_its_watcher():
    import pickle

    result = a.run_sync(_hierarchy(), "Review clause 4.", on_event=lambda e: None)
    copy = pickle.loads(pickle.dumps(result))

    assert copy.log_lines() == result.log_lines() and len(copy.spans) == len(result.spans)
    assert copy.trace.on_span is None and result.trace.on_span is not None
