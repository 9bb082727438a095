"""Hooks and streaming in the patterns: `parallel`, `chain` and `verify_loop` take ``hooks=`` and
``on_event=`` as `run` does, and `run_streamed` / `stream_sync` stream a pattern as they stream a run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import agentnb as a
from agentnb.runtime import RunOptions
from agentnb.runtime.data.events import Event

TIMES = ("started", "ended", "latency_s", "ttft_s")
APPROVED = '{"outcome": "approved", "problems": []}'


@a.tool
def lookup(clause: str) -> str:
    """Look a clause up."""
    return f"clause {clause}: unlimited liability"


class Recorder(a.Hooks):
    """Every hook call as ``(run_id, hook, agent)``; tools as ``tool_start:<tool>``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.requests: list[a.ModelRequest] = []

    async def on_agent_start(self, ctx, agent):
        self.calls.append((ctx.run_id, "agent_start", agent.name))

    async def on_agent_end(self, ctx, agent, output):
        self.calls.append((ctx.run_id, "agent_end", agent.name))

    async def on_model_start(self, ctx, agent, request):
        self.calls.append((ctx.run_id, "model_start", agent.name))
        self.requests.append(request)

    async def on_model_end(self, ctx, agent, response, call):
        self.calls.append((ctx.run_id, "model_end", agent.name))

    async def on_tool_start(self, ctx, agent, tool_name, arguments):
        self.calls.append((ctx.run_id, f"tool_start:{tool_name}", agent.name))

    async def on_tool_end(self, ctx, agent, tool_name, result_text):
        self.calls.append((ctx.run_id, f"tool_end:{tool_name}", agent.name))


def hierarchy(name: str, **chunking: Any) -> tuple[a.Agent, a.ScriptedModel, a.ScriptedModel]:
    """``name`` coordinating ``name-legal``, which looks a clause up."""
    legal_model = a.ScriptedModel(
        [a.tool_call("lookup", clause="4"), a.say(f"{name}: unlimited liability.")],
        latency=0.01,
        **chunking,
    )
    legal = a.Agent(f"{name}_legal", "You review law.", legal_model, [lookup])
    boss_model = a.ScriptedModel(
        [a.tool_call(f"{name}_legal", input="Check clause 4"), a.say(f"{name} says: risky.")],
        latency=0.01,
        **chunking,
    )
    return a.Agent(name, "You coordinate.", boss_model, [legal]), boss_model, legal_model


def order_of(name: str) -> list[tuple[str, str]]:
    legal = f"{name}_legal"
    return [
        ("agent_start", name),
        ("model_start", name),
        ("model_end", name),
        (f"tool_start:{legal}", name),
        ("agent_start", legal),
        ("model_start", legal),
        ("model_end", legal),
        ("tool_start:lookup", legal),
        ("tool_end:lookup", legal),
        ("model_start", legal),
        ("model_end", legal),
        ("agent_end", legal),
        (f"tool_end:{legal}", name),
        ("model_start", name),
        ("model_end", name),
        ("agent_end", name),
    ]


def by_part(calls: list[tuple[str, str, str]], run_ids: dict[str, Any]) -> dict[Any, list[Any]]:
    """Hook calls grouped by the pattern's part (found from the run id), each in its order."""
    grouped: dict[Any, list[Any]] = {}
    for run_id, hook, agent in calls:
        grouped.setdefault(run_ids[run_id], []).append((hook, agent))
    return grouped


# -- hooks


async def test_run_hooks_see_every_agent_of_every_branch_of_a_fan_out_in_order():
    (east, east_boss, east_legal), (west, west_boss, west_legal) = (
        hierarchy("east"),
        hierarchy("west"),
    )
    hooks = Recorder()

    fan = await a.parallel([east, west], "Review the contract.", hooks=hooks)

    assert fan.ok, fan.missing
    run_ids = {fan[name].run_id: name for name in fan.names}
    # the branches run concurrently: the order is compared within each branch, the lists whole
    assert by_part(hooks.calls, run_ids) == {"east": order_of("east"), "west": order_of("west")}
    assert len(hooks.calls) == 2 * len(order_of("east"))
    # the branches did interleave: west started before east ended
    flat = [(hook, agent) for _, hook, agent in hooks.calls]
    assert flat.index(("agent_start", "west")) < flat.index(("agent_end", "east"))
    # the hooks saw exactly the requests the models received
    received = [
        *east_boss.requests,
        *east_legal.requests,
        *west_boss.requests,
        *west_legal.requests,
    ]
    assert sorted(map(id, hooks.requests)) == sorted(map(id, received))
    assert east_legal.requests[0].last_user_text == "Check clause 4"


async def test_run_hooks_see_every_stage_of_a_chain_in_order():
    first, _, _ = hierarchy("first")
    second_model = a.ScriptedModel([a.say("Summary: risky.")])
    second = a.Agent("second", "Summarise.", second_model)
    hooks = Recorder()

    chained = await a.chain([first, second], "Review the contract.", hooks=hooks)

    assert chained.ok and chained.output == "Summary: risky."
    assert [(hook, agent) for _, hook, agent in hooks.calls] == [
        *order_of("first"),
        ("agent_start", "second"),
        ("model_start", "second"),
        ("model_end", "second"),
        ("agent_end", "second"),
    ]
    run_ids = {r.run_id: stage for stage, r in chained.results.items()}
    assert list(by_part(hooks.calls, run_ids)) == ["first", "second"]
    assert second_model.requests[0].last_user_text == "first says: risky."


async def test_run_hooks_see_both_agents_of_every_round_of_a_verify_loop():
    writer_model = a.ScriptedModel([a.say("Draft one."), a.say("Draft two.")])
    verifier_model = a.ScriptedModel(
        [a.say('{"outcome": "redo", "problems": ["too short"]}'), a.say(APPROVED)]
    )
    writer = a.Agent("writer", "Write.", writer_model)
    verifier = a.Agent("verifier", "Check.", verifier_model)
    hooks = Recorder()

    looped = await a.verify_loop(writer, verifier, "A slogan.", hooks=hooks)

    assert looped.approved
    one = ["agent_start", "model_start", "model_end", "agent_end"]
    expected = [(h, agent) for agent in ("writer", "verifier") * 2 for h in one]
    assert [(hook, agent) for _, hook, agent in hooks.calls] == expected
    assert hooks.requests == [
        writer_model.requests[0],
        verifier_model.requests[0],
        writer_model.requests[1],
        verifier_model.requests[1],
    ]


@pytest.mark.parametrize("pattern", ["parallel", "chain", "verify_loop"])
async def test_bad_hooks_are_a_user_error_before_any_model_call(pattern: str):
    model = a.ScriptedModel([a.say("x")])
    agent = a.Agent("w", "x", model)
    call = {
        "parallel": lambda **kw: a.parallel([agent], "go", **kw),
        "chain": lambda **kw: a.chain([agent], "go", **kw),
        "verify_loop": lambda **kw: a.verify_loop(agent, a.Agent("v", "x", model), "go", **kw),
    }[pattern]
    with pytest.raises(a.UserError, match=r"run\(hooks=...\) takes an instance of agentnb.Hooks"):
        await call(hooks=Recorder)
    with pytest.raises(a.UserError, match="on_event must be a function"):
        await call(on_event="print")
    assert model.requests == []


def test_hooks_and_on_event_are_checked_where_the_options_are_built():
    with pytest.raises(a.UserError, match="pass MyHooks"):
        RunOptions(hooks=Recorder)  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="on_event must be a function"):
        RunOptions(on_event=42)  # type: ignore[arg-type]


# -- streaming


def points(events: list[Any]) -> list[Any]:
    """The run's events other than its spans' and log records (``tests/runtime/data/test_span_events.py``)."""
    return [e for e in events if not isinstance(e, (a.SpanStarted, a.SpanEnded, a.LogRecorded))]


def shape(event: Event) -> tuple[Any, ...]:
    """An event without its times and ids, with its part."""
    kind = type(event).__name__
    if isinstance(event, a.TextDelta):
        return (event.part, kind, event.path, event.text)
    if isinstance(event, (a.ToolCallStarted, a.ToolCallEnded)):
        return (event.part, kind, event.path, event.name)
    return (event.part, kind, event.path)


def coarse(events: list[Event]) -> list[Event]:
    """The events without the finer ones (argument deltas, whole messages, partial outputs)."""
    return [e for e in events if not isinstance(e, (a.ToolCallDelta, a.MessageOutput))]


def branch_events(name: str) -> list[tuple[Any, ...]]:
    legal = f"{name}/{name}_legal"
    answer = f"{name}: unlimited liability."
    said = f"{name} says: risky."
    return [
        (name, "AgentStarted", name),
        (name, "ToolCallStarted", name, f"{name}_legal"),
        (name, "AgentStarted", legal),
        (name, "ToolCallStarted", legal, "lookup"),
        (name, "ToolCallEnded", legal, "lookup"),
        *[(name, "TextDelta", legal, answer[i : i + 8]) for i in range(0, len(answer), 8)],
        (name, "AgentEnded", legal),
        (name, "ToolCallEnded", name, f"{name}_legal"),
        *[(name, "TextDelta", name, said[i : i + 8]) for i in range(0, len(said), 8)],
        (name, "AgentEnded", name),
        (name, "RunEnded", name),
    ]


async def test_on_event_watches_every_branch_of_a_fan_out_as_it_is_written():
    east, _, east_legal = hierarchy("east", chunk_chars=8, chunk_latency=0.002)
    west, _, _ = hierarchy("west", chunk_chars=8, chunk_latency=0.002)
    events: list[Event] = []

    fan = await a.parallel({"east": east, "west": west}, "Review.", on_event=events.append)

    assert fan.ok
    grouped: dict[Any, list[tuple[Any, ...]]] = {}
    for event in coarse(points(events)):
        grouped.setdefault(event.part, []).append(shape(event))
    assert grouped == {"east": branch_events("east"), "west": branch_events("west")}
    # the two branches' text was written side by side, not one after the other
    parts = [e.part for e in events if isinstance(e, a.TextDelta)]
    assert parts.index("west") < len(parts) - 1 - parts[::-1].index("east")
    # each branch ends with its own RunEnded, whose result is that branch's run
    ends = {e.part: e.result for e in events if isinstance(e, a.RunEnded)}
    assert ends == {"east": fan["east"], "west": fan["west"]}
    # events carry the branch's trace: their spans, paths and times (on the fan-out's clock)
    for event in events:
        if isinstance(event, (a.RunEnded, a.LogRecorded)):  # the run's, not one span's
            continue
        span = next(s for s in fan[event.part].spans if s.span_id == event.span_id)
        assert (event.agent, event.path, event.depth) == (span.agent, span.path, span.depth)
        assert span.started <= event.time
    assert east_legal.requests[1].tool_results == ["clause 4: unlimited liability"]


async def test_run_streamed_streams_a_fan_out_and_ends_with_its_result():
    east, _, _ = hierarchy("east", chunk_chars=8)
    west, _, _ = hierarchy("west", chunk_chars=8)

    stream = a.run_streamed(a.parallel, [east, west], "Review.", timeout=5)
    events = points([event async for event in stream])
    fan = await stream.result()

    assert isinstance(fan, a.FanOut) and fan.ok and fan.timeout == 5
    last = events[-1]
    assert isinstance(last, a.RunEnded) and last.part is None and last.result is fan
    assert (last.agent, last.path) == ("parallel", "parallel")
    grouped: dict[Any, list[tuple[Any, ...]]] = {}
    for event in coarse(events[:-1]):
        grouped.setdefault(event.part, []).append(shape(event))
    assert grouped == {"east": branch_events("east"), "west": branch_events("west")}


async def test_a_missing_branch_streams_its_failed_end_and_its_siblings_go_on():
    slow = a.Agent("slow", "x", a.ScriptedModel([a.say("late")], latency=5))
    quick = a.Agent("quick", "x", a.ScriptedModel([a.say("done")], chunk_chars=2))
    events: list[Event] = []

    fan = await a.parallel([slow, quick], "go", timeout=0.05, on_event=events.append)

    assert fan.missing == {"slow": "did not answer within 0.05 s"}
    ends = {e.part: e.result for e in events if isinstance(e, a.RunEnded)}
    assert ends["slow"] is fan["slow"] and not ends["slow"].ok
    assert "".join(e.text for e in events if isinstance(e, a.TextDelta)) == "done"


def streamed_and_plain(pattern: str) -> tuple[Any, Any, list[Event]]:
    """The pattern run twice on fresh scripted models, plain then streamed (``on_event``)."""

    def agents(**chunking: Any) -> dict[str, a.Agent]:
        east, _, _ = hierarchy("east", **chunking)
        west, _, _ = hierarchy("west", **chunking)
        writer = a.Agent(
            "writer", "Write.", a.ScriptedModel([a.say("One."), a.say("Two.")], **chunking)
        )
        checks = [a.say('{"outcome": "redo", "problems": ["short"]}'), a.say(APPROVED)]
        verifier = a.Agent("verifier", "Check.", a.ScriptedModel(checks, **chunking))
        return {"east": east, "west": west, "writer": writer, "verifier": verifier}

    def start(agents: dict[str, a.Agent], **kw: Any) -> Any:
        if pattern == "parallel":
            return a.parallel([agents["east"], agents["west"]], "Review.", **kw)
        if pattern == "chain":
            return a.chain([agents["east"], agents["west"]], "Review.", **kw)
        return a.verify_loop(agents["writer"], agents["verifier"], "A slogan.", **kw)

    events: list[Event] = []
    plain = a.run_sync(start(agents()))
    streamed = a.run_sync(start(agents(chunk_chars=3), on_event=events.append))
    return plain, streamed, events


@pytest.mark.parametrize("pattern", ["parallel", "chain", "verify_loop"])
def test_a_streamed_pattern_gives_the_result_an_unstreamed_one_gives_plus_ttft(pattern: str):
    plain, streamed, events = streamed_and_plain(pattern)

    assert type(streamed) is type(plain) and streamed.ok and plain.ok
    assert list(streamed.parts()) == list(plain.parts())
    assert [r.output for r in streamed.parts().values()] == [
        r.output for r in plain.parts().values()
    ]
    assert [r.usage for r in streamed.parts().values()] == [r.usage for r in plain.parts().values()]
    untimed = [c for c in plain.calls.columns if c not in (*TIMES, "run_id")]
    for column in untimed:  # column by column, so a failure names the column
        assert streamed.calls[column].equals(plain.calls[column]), column
    assert plain.calls["ttft_s"].isna().all()
    assert streamed.calls["ttft_s"].notna().all()
    table, expected = streamed.table(), plain.table()
    assert table.drop(columns=_times(table)).equals(expected.drop(columns=_times(expected)))
    # every part streamed, each ending with its RunEnded; parts are the keys of parts()
    ends = [e for e in events if isinstance(e, a.RunEnded)]
    assert [e.part for e in ends] == list(streamed.parts())
    assert [e.result for e in ends] == list(streamed.parts().values())
    for key, result in streamed.parts().items():  # each root agent's text, as it was written
        root = result.spans[0].path
        deltas = [e for e in events if isinstance(e, a.TextDelta) and e.part == key]
        assert "".join(e.text for e in deltas if e.path == root) == result.messages[-1].content


def _times(frame: Any) -> list[str]:
    return [c for c in frame.columns if c in ("started", "ended", "duration", "run_id")]


def test_stream_sync_streams_a_chain_from_plain_code():
    first = a.Agent("first", "x", a.ScriptedModel([a.say("draft")], chunk_chars=2))
    second_model = a.ScriptedModel([a.say("final")])
    second = a.Agent("second", "x", second_model)

    events = points(list(a.stream_sync(a.chain, [first, second], "a brief")))

    assert [shape(e) for e in events] == [
        ("first", "AgentStarted", "first"),
        ("first", "TextDelta", "first", "dr"),
        ("first", "TextDelta", "first", "af"),
        ("first", "TextDelta", "first", "t"),
        ("first", "MessageOutput", "first"),
        ("first", "AgentEnded", "first"),
        ("first", "RunEnded", "first"),
        ("second", "AgentStarted", "second"),
        ("second", "TextDelta", "second", "final"),
        ("second", "MessageOutput", "second"),
        ("second", "AgentEnded", "second"),
        ("second", "RunEnded", "second"),
        (None, "RunEnded", "chain"),
    ]
    chained = events[-1].result
    assert isinstance(chained, a.ChainResult) and chained.output == "final"
    assert second_model.requests[0].last_user_text == "draft"


def test_a_plain_run_takes_on_event_and_gets_the_events_a_stream_yields():
    def agent() -> a.Agent:
        hierarchy_root, _, _ = hierarchy("solo", chunk_chars=5)
        return hierarchy_root

    heard: list[Event] = []
    result = a.run_sync(agent(), "Review.", on_event=heard.append)
    streamed = list(a.stream_sync(agent(), "Review."))

    assert result.ok and heard[-1].result is result
    assert [shape(e) for e in heard] == [shape(e) for e in streamed]
    assert all(e.part is None for e in heard)


async def test_an_on_event_that_raises_ends_that_branch_only():
    def fragile(event: Event) -> None:
        if event.part == "bad" and isinstance(event, a.TextDelta):
            raise RuntimeError("display gone")

    good = a.Agent("good", "x", a.ScriptedModel([a.say("fine")]))
    bad = a.Agent("bad", "x", a.ScriptedModel([a.say("words")]))

    fan = await a.parallel([good, bad], "go", on_event=fragile)

    assert fan.outputs == {"good": "fine"}
    assert isinstance(fan["bad"].error, RuntimeError) and "display gone" in fan.missing["bad"]
    assert list(fan["bad"].calls["status"]) == ["error"]  # the call's row is kept


async def test_an_on_event_that_raises_at_a_run_s_end_fails_that_run():
    def at_end(event: Event) -> None:
        if isinstance(event, a.RunEnded):
            raise ValueError("no room")

    result = await a.run(a.Agent("w", "x", a.ScriptedModel([a.say("hi")])), "go", on_event=at_end)

    assert not result.ok and isinstance(result.error, ValueError)
    assert result.model_calls == 1


async def test_bad_pattern_arguments_surface_from_the_stream():
    with pytest.raises(a.UserError, match="run_streamed yields the events itself"):
        a.run_streamed(a.parallel, [], "go", on_event=print)
    stream = a.run_streamed(a.parallel, [], "go")
    with pytest.raises(a.UserError, match="needs at least one agent"):
        [e async for e in stream]
    with pytest.raises(a.UserError, match="needs at least one agent"):
        await stream.result()
    with pytest.raises(a.UserError, match="needs at least one agent"):
        list(a.stream_sync(a.chain, [], "go"))
    with pytest.raises(a.UserError, match="needs a coroutine function"):
        await a.run_streamed(lambda on_event: 42).result()


async def test_cancelling_a_pattern_stream_ends_it_and_result_says_cancelled():
    slow = a.Agent("slow", "x", a.ScriptedModel([a.say("late")], latency=5))
    quick = a.Agent("quick", "x", a.ScriptedModel([a.say("done")]))
    stream = a.run_streamed(a.parallel, [slow, quick], "go")

    events = []
    async for event in stream:
        events.append(event)
        if isinstance(event, a.RunEnded) and event.part == "quick":
            stream.cancel()

    assert isinstance(events[-1], a.RunEnded) and events[-1].part is None
    assert events[-1].result is None
    with pytest.raises(a.RunCancelled, match="parallel was cancelled"):
        await stream.result()
    await asyncio.sleep(0)
