"""Streamed runs on scripted models: the events of a hierarchy, the result, ttft_s, sync use."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

import agentnb as a
from agentnb.models.deltas import StreamItem, TextChunk
from agentnb.runtime.engine import blocking as _loop

TIMES = ("started", "ended", "latency_s", "ttft_s")


@a.tool
def lookup(clause: str) -> str:
    """Look a clause up."""
    return f"clause {clause}: unlimited liability"


def two_levels(**chunking: float) -> tuple[a.Agent, a.ScriptedModel, a.ScriptedModel]:
    legal_model = a.ScriptedModel(
        [a.tool_call("lookup", clause="4"), a.say("Risky: unlimited liability.")], **chunking
    )
    legal = a.Agent("legal", "You review law.", legal_model, [lookup])
    coordinator_model = a.ScriptedModel(
        [a.tool_call("legal", input="Check clause 4"), a.say("Clause 4 is risky.")], **chunking
    )
    coordinator = a.Agent("coordinator", "You coordinate.", coordinator_model, [legal])
    return coordinator, coordinator_model, legal_model


def points(events: list[Any]) -> list[Any]:
    """The run's events other than its spans' and log records (``tests/runtime/data/test_span_events.py``)."""
    return [e for e in events if not isinstance(e, (a.SpanStarted, a.SpanEnded, a.LogRecorded))]


def shape(event: a.runtime.events.Event) -> tuple[str, ...]:
    """An event without its times and ids."""
    kind = type(event).__name__
    if isinstance(event, a.TextDelta):
        return (kind, event.path, event.text)
    if isinstance(event, a.ToolCallStarted):
        return (kind, event.path, event.name, event.arguments)
    if isinstance(event, a.ToolCallEnded):
        return (kind, event.path, event.name, event.result_text, str(event.ok))
    if isinstance(event, a.AgentEnded):
        return (kind, event.path, str(event.output))
    if isinstance(event, a.ToolCallDelta):
        return (kind, event.path, str(event.index), event.name, event.arguments)
    if isinstance(event, a.MessageOutput):
        return (kind, event.path, event.text, *event.tool_calls)
    return (kind, event.path)


FINER = (a.ToolCallDelta, a.MessageOutput, a.PartialOutput)


def coarse(events: list[a.runtime.events.Event]) -> list[a.runtime.events.Event]:
    """The events without the finer ones (argument deltas, whole messages, partial outputs)."""
    return [e for e in events if not isinstance(e, FINER)]


async def test_a_hierarchy_streams_every_agent_s_events_in_order_with_its_path():
    coordinator, coordinator_model, legal_model = two_levels(chunk_chars=8)

    stream = a.run_streamed(coordinator, "Review the contract.")
    events = points([event async for event in stream])
    result = await stream.result()

    assert result.ok and result.output == "Clause 4 is risky."
    assert [shape(e) for e in events] == [
        ("AgentStarted", "coordinator"),
        ("ToolCallDelta", "coordinator", "0", "legal", '{"input":"Check clause 4"}'),
        ("ToolCallStarted", "coordinator", "legal", '{"input":"Check clause 4"}'),
        ("AgentStarted", "coordinator/legal"),
        ("ToolCallDelta", "coordinator/legal", "0", "lookup", '{"clause":"4"}'),
        ("ToolCallStarted", "coordinator/legal", "lookup", '{"clause":"4"}'),
        ("ToolCallEnded", "coordinator/legal", "lookup", "clause 4: unlimited liability", "True"),
        ("TextDelta", "coordinator/legal", "Risky: u"),
        ("TextDelta", "coordinator/legal", "nlimited"),
        ("TextDelta", "coordinator/legal", " liabili"),
        ("TextDelta", "coordinator/legal", "ty."),
        ("MessageOutput", "coordinator/legal", "Risky: unlimited liability."),
        ("AgentEnded", "coordinator/legal", "Risky: unlimited liability."),
        ("ToolCallEnded", "coordinator", "legal", "Risky: unlimited liability.", "True"),
        ("TextDelta", "coordinator", "Clause 4"),
        ("TextDelta", "coordinator", " is risk"),
        ("TextDelta", "coordinator", "y."),
        ("MessageOutput", "coordinator", "Clause 4 is risky."),
        ("AgentEnded", "coordinator", "Clause 4 is risky."),
        ("RunEnded", "coordinator"),
    ]
    assert events[-1].result is result
    # events carry their agent, depth and span, on the trace's clock, in order
    spans = {s.span_id: s for s in result.spans}
    for event in events[:-1]:
        span = spans[event.span_id]
        assert (event.agent, event.path, event.depth) == (span.agent, span.path, span.depth)
    deltas = [e for e in events if isinstance(e, a.TextDelta)]
    assert all(spans[e.span_id].kind == "model_call" for e in deltas)
    assert [e.time for e in events] == sorted(e.time for e in events)
    # the models were asked what an unstreamed run asks them
    assert coordinator_model.requests[1].tool_results == ["Risky: unlimited liability."]
    assert legal_model.requests[0].last_user_text == "Check clause 4"


async def test_a_streamed_run_gives_the_result_an_unstreamed_run_gives_plus_ttft():
    plain, _, _ = two_levels()
    streamed_agent, _, _ = two_levels(chunk_chars=3)

    expected = await a.run(plain, "Review the contract.", run_id="same")
    stream = a.run_streamed(streamed_agent, "Review the contract.", run_id="same")
    got = await stream.result()  # without iterating: the run goes to its end

    assert got.ok and got.output == expected.output
    assert got.usage == expected.usage
    assert [m.content for m in got.messages] == [m.content for m in expected.messages]
    untimed = [c for c in expected.calls.columns if c not in TIMES]
    assert got.calls[untimed].equals(expected.calls[untimed])
    assert expected.calls["ttft_s"].isna().all()  # not streamed
    ttft = got.calls["ttft_s"]
    assert ttft.notna().all() and (ttft >= 0).all() and (ttft <= got.calls["latency_s"]).all()
    # the events were kept for a reader that comes later
    events = points([e async for e in stream])
    assert isinstance(events[0], a.AgentStarted) and isinstance(events[-1], a.RunEnded)


async def test_chunk_latency_spaces_the_deltas_and_ttft_is_the_first_one():
    model = a.ScriptedModel([a.say("abcdefghij")], latency=0.02, chunk_chars=4, chunk_latency=0.03)
    stream = a.run_streamed(a.Agent("writer", "x", model), "go")

    deltas = [e for e in [e async for e in stream] if isinstance(e, a.TextDelta)]
    result = await stream.result()

    assert [d.text for d in deltas] == ["abcd", "efgh", "ij"]
    gaps = [b.time - a_.time for a_, b in zip(deltas, deltas[1:])]
    assert all(gap >= 0.025 for gap in gaps)  # trace times, with the event loop's slack
    (row,) = result.trace.call_rows
    assert 0.015 <= row.ttft_s <= deltas[0].time - row.started + 1e-9
    assert row.latency_s >= row.ttft_s + 0.05


async def test_a_client_without_stream_is_streamed_as_one_delta_per_response():
    model = a.FunctionModel(lambda request: a.say(f"echo: {request.last_user_text}"))

    stream = a.run_streamed(a.Agent("echo", "x", model), "hello")
    events = points([e async for e in stream])

    assert [shape(e) for e in events] == [
        ("AgentStarted", "echo"),
        ("TextDelta", "echo", "echo: hello"),
        ("MessageOutput", "echo", "echo: hello"),
        ("AgentEnded", "echo", "echo: hello"),
        ("RunEnded", "echo"),
    ]
    assert not math.isnan(events[-1].result.calls["ttft_s"][0])


async def test_a_call_with_tool_calls_only_has_a_ttft_too():
    model = a.ScriptedModel([a.tool_call("lookup", clause="1"), a.say("ok")])
    result = await a.run_streamed(a.Agent("w", "x", model, [lookup]), "go").result()

    assert result.calls["ttft_s"].notna().all()


class BreaksMidway:
    """A streaming client whose second call breaks after two pieces of text."""

    name = "breaks"

    def __init__(self) -> None:
        self.requests: list[a.ModelRequest] = []

    async def request(self, request: a.ModelRequest) -> a.ModelResponse:
        raise AssertionError("a streamed run uses stream()")

    async def stream(self, request: a.ModelRequest) -> AsyncIterator[StreamItem]:
        self.requests.append(request)
        if len(self.requests) == 1:
            yield a.ModelResponse(tool_calls=[a.ToolCall("lookup", '{"clause":"9"}')])
            return
        yield TextChunk("Clause 9 ")
        yield TextChunk("is fi")
        raise a.StreamBroken("the stream broke off after it began")


async def test_a_call_that_breaks_mid_stream_keeps_its_partial_text_on_its_span():
    model = BreaksMidway()
    stream = a.run_streamed(a.Agent("w", "x", model, [lookup]), "go")

    events = [e async for e in stream]
    result = await stream.result()

    assert not result.ok and isinstance(result.error, a.StreamBroken)
    assert [shape(e) for e in events if isinstance(e, a.TextDelta)] == [
        ("TextDelta", "w", "Clause 9 "),
        ("TextDelta", "w", "is fi"),
    ]
    assert list(result.calls["status"]) == ["ok", "error"]
    failed = next(s for s in result.spans if s.span_id == result.calls["span_id"][1])
    assert failed.status == "error" and failed.attrs["partial_text"] == "Clause 9 is fi"
    assert result.partial == "Clause 9 is fi"
    assert isinstance(events[-1], a.RunEnded) and events[-1].result is result


async def test_a_sub_agents_broken_stream_gives_its_partial_answer_to_the_caller():
    worker = a.Agent("worker", "x", BreaksMidway(), [lookup])
    boss_model = a.ScriptedModel([a.tool_call("worker", input="check clause 9"), "noted"])
    boss = a.Agent("boss", "Delegate.", boss_model, [worker.as_tool()])

    result = await a.run_streamed(boss, "go").result()

    assert result.ok
    seen = boss_model.requests[1].tool_results[0]
    assert "StreamBroken" in seen or "broke" in seen
    assert seen.endswith("Partial result: Clause 9 is fi")
    tool_span = next(s for s in result.spans if s.kind == "tool_call" and s.name == "worker")
    assert tool_span.status == "error"


async def test_parallel_sub_agents_stream_into_one_stream_each_under_its_path():
    reviewers = [
        a.Agent(name, "x", a.ScriptedModel([a.say(f"{name} says ok")], chunk_chars=4))
        for name in ("legal", "tax")
    ]
    boss = a.Agent(
        "boss",
        "x",
        a.ScriptedModel(
            [[a.tool_call("legal", input="a"), a.tool_call("tax", input="b")], a.say("fine")]
        ),
        reviewers,
    )

    events = [e async for e in a.run_streamed(boss, "go")]

    text: dict[str, str] = {}
    for event in events:
        if isinstance(event, a.TextDelta):
            text[event.path] = text.get(event.path, "") + event.text
    assert text == {"boss/legal": "legal says ok", "boss/tax": "tax says ok", "boss": "fine"}


async def test_a_handoff_streams_as_an_event_between_the_two_agents():
    billing = a.Agent("billing", "x", a.ScriptedModel([a.say("Refunded.")]))
    triage = a.Agent(
        "triage", "x", a.ScriptedModel([a.tool_call("transfer_to_billing")]), handoffs=[billing]
    )

    events = points([e async for e in a.run_streamed(triage, "Refund me")])

    kinds = [(type(e).__name__, e.agent) for e in coarse(events)]
    assert kinds[:1] == [("AgentStarted", "triage")]
    assert kinds[1:] == [  # a handoff sends no ToolCallStarted / ToolCallEnded
        ("HandoffEvent", "triage"),
        ("AgentStarted", "billing"),
        ("TextDelta", "billing"),
        ("AgentEnded", "billing"),
        ("RunEnded", "triage"),
    ]
    handoff = coarse(events)[1]
    assert (handoff.source, handoff.target) == ("triage", "billing")


async def test_hooks_and_a_stream_together():
    seen: list[str] = []

    class Costs(a.Hooks):
        async def on_model_end(self, ctx, agent, response, call):
            seen.append(f"{agent.name}: {call['chars_in']} chars, ttft {call['ttft_s']:.3f}")

    coordinator, *_ = two_levels(chunk_chars=5)
    stream = a.run_streamed(coordinator, "Review.", hooks=Costs())
    result = await stream.result()

    assert result.ok and len(seen) == 4
    assert seen[0].startswith(f"coordinator: {result.calls['chars_in'][0]} chars, ttft 0.0")


async def test_cancelling_a_stream_ends_it_with_the_partial_result():
    model = a.ScriptedModel([a.tool_call("lookup", clause="1"), a.say("late")], latency=0.05)
    stream = a.run_streamed(a.Agent("w", "x", model, [lookup]), "go", run_id="cut")

    events = []
    async for event in stream:
        events.append(event)
        if isinstance(event, a.ToolCallEnded):
            stream.cancel()
    result = await stream.result()

    assert isinstance(events[-1], a.RunEnded) and events[-1].result is result
    assert not result.ok and isinstance(result.error, a.RunCancelled)
    assert list(result.calls["status"]) == ["ok", "cancelled"]


async def test_cancelling_the_caller_of_result_cancels_the_run():
    model = a.ScriptedModel([a.say("late")], latency=30)
    stream = a.run_streamed(a.Agent("w", "x", model), "go")
    waiting = asyncio.ensure_future(stream.result())
    await asyncio.sleep(0.01)

    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting

    events = [e async for e in stream]
    assert isinstance(events[-1].result.error, a.RunCancelled)


def test_bad_arguments_raise_at_once():
    agent = a.Agent("w", "x", a.ScriptedModel([a.say("hi")]))
    with pytest.raises(a.UserError, match="max_turns must be a positive integer"):
        a.run_streamed(agent, "go", max_turns=0)
    with pytest.raises(a.UserError, match="takes an Agent and its input, or a pattern"):
        a.run_streamed("agent", "go")  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="input must be text"):
        a.stream_sync(agent, 42)  # type: ignore[arg-type]


# -- stream_sync


def test_stream_sync_in_plain_code():
    coordinator, *_ = two_levels(chunk_chars=6)

    events = points(list(a.stream_sync(coordinator, "Review.")))

    assert isinstance(events[0], a.AgentStarted) and isinstance(events[-1], a.RunEnded)
    text = "".join(e.text for e in events if isinstance(e, a.TextDelta) and e.depth == 0)
    assert text == "Clause 4 is risky." == events[-1].result.output


async def test_stream_sync_inside_a_running_event_loop():
    """As in a Jupyter cell: a loop runs in this thread; the run goes on agentnb's own."""
    asyncio.get_running_loop()
    coordinator, *_ = two_levels(chunk_chars=6)

    events = list(a.stream_sync(coordinator, "Review.", timeout=10))

    assert events[-1].result.ok
    assert sum(isinstance(e, a.AgentStarted) for e in events) == 2


def test_stream_sync_in_a_plain_script_process():
    script = textwrap.dedent(
        """
        import agentnb as a
        model = a.ScriptedModel([a.say("from a script")], chunk_chars=5)
        for event in a.stream_sync(a.Agent("w", "x", model), "go"):
            if isinstance(event, a.TextDelta):
                print(repr(event.text))
        print(event.result.ok)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "AGENTNB_TOKENIZER": "off"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["'from '", "'a scr'", "'ipt'", "True"]


def test_leaving_stream_sync_early_cancels_the_run():
    model = a.ScriptedModel([a.say("abcdefgh")], chunk_chars=1, chunk_latency=0.2)
    ended: list[str] = []

    def listener(event: str, span: a.trace.Span) -> None:
        if event == "end" and span.kind == "run":
            ended.append(span.status)

    with pytest.warns(DeprecationWarning, match="on_event"):  # the run's own thread sees it end
        events = a.stream_sync(a.Agent("w", "x", model), "go", listeners=[listener])
    for event in events:
        if isinstance(event, a.TextDelta):
            break
    events.close()  # what leaving the loop does once the generator is dropped

    assert ended == ["cancelled"]  # close() waited for the run to wind down


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")
def test_ctrl_c_during_stream_sync_ends_the_stream_with_the_partial_result():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    model = a.ScriptedModel([a.tool_call("lookup", clause="1"), a.say("never")], latency=30)
    model.latency = lambda request: 0 if len(request.messages) == 1 else 30
    agent = a.Agent("w", "x", model, [lookup])

    def press_ctrl_c() -> None:
        deadline = time.monotonic() + 10
        while not (len(model.requests) == 2 and _loop.main_thread_blocked()):
            if time.monotonic() > deadline:
                return
            time.sleep(0.001)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    try:
        events = list(a.stream_sync(agent, "go"))
    except KeyboardInterrupt:
        pytest.fail("stream_sync let the interrupt escape instead of ending the stream")

    result = events[-1].result
    assert not result.ok and isinstance(result.error, a.RunCancelled)
    assert list(result.calls["status"]) == ["ok", "cancelled"]
    assert not _loop.main_thread_blocked()


@pytest.mark.parametrize("when", ["before", "after"])
def test_ctrl_c_landing_just_outside_a_batch_wait_still_ends_the_stream_with_every_event(
    monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    # Between two batch waits Python's own Ctrl-C handler is in place, so the interrupt
    # arrives as a KeyboardInterrupt raised around the wait instead of through the loop.
    from agentnb.runtime.engine import streaming

    model = a.ScriptedModel([a.tool_call("lookup", clause="1"), a.say("never")], latency=30)
    model.latency = lambda request: 0 if len(request.messages) == 1 else 30
    real_run_here = streaming.run_here
    pressed: list[str] = []

    def run_here(awaitable: Any, on_interrupt: Any = None) -> Any:
        # "before": as the reader starts waiting for the slow second call; "after": as the
        # run's first batch of events has arrived.
        if (when == "before" and len(model.requests) < 2) or pressed:
            return real_run_here(awaitable, on_interrupt=on_interrupt)
        pressed.append(when)
        if when == "before":
            awaitable.close()
            raise KeyboardInterrupt
        real_run_here(awaitable, on_interrupt=on_interrupt)
        raise KeyboardInterrupt

    monkeypatch.setattr(streaming, "run_here", run_here)
    events = list(a.stream_sync(a.Agent("w", "x", model, [lookup]), "go"))

    assert pressed == [when]
    ended = [event for event in events if isinstance(event, a.RunEnded)]
    assert len(ended) == 1 and events[-1] is ended[0]
    assert isinstance(ended[0].result.error, a.RunCancelled)
    kinds = [type(event).__name__ for event in events]
    assert kinds.count("SpanStarted") == kinds.count("SpanEnded")  # no batch was dropped
    if when == "before":
        assert kinds.count("ToolCallStarted") == kinds.count("ToolCallEnded") == 1
        assert list(ended[0].result.calls["status"]) == ["ok", "cancelled"]


# -- ttft_s in the latency table and figure


async def test_latency_series_and_its_figure_show_ttft_for_streamed_runs_only():
    from agentnb.measure.sweeps import sweep
    from agentnb.measure.tables import latency_series
    from agentnb.plot import latency

    async def fn(n: int, mode: str) -> a.RunResult:
        model = a.ScriptedModel([a.say("an answer")] * n, latency=0.01, chunk_chars=3)
        agent = a.Agent("w", "x", model)
        if mode == "streamed":
            return await a.run_streamed(agent, "go").result()
        return await a.run(agent, "go")

    frame = await sweep(fn, {"mode": ["streamed", "plain"], "n": [1, 2]}, progress=False)
    series = latency_series(frame)

    streamed = series[series["mode"] == "streamed"]
    assert streamed["ttft_s"].notna().all() and (streamed["ttft_s"] >= 0.005).all()
    assert series[series["mode"] == "plain"]["ttft_s"].isna().all()
    lines = {line.get_gid() for line in latency(series).axes[0].get_lines()}
    assert "ttft:streamed" in lines and "ttft:plain" not in lines
