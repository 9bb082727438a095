"""Lifecycle hooks (run-wide and per agent), and what a hook or listener that raises does to a run."""

from __future__ import annotations

from typing import Any

import pytest

import agentnb as a


@a.tool
def lookup(clause: str) -> str:
    """Look a clause up."""
    return f"clause {clause}: unlimited liability"


class Recorder(a.Hooks):
    """Every hook call as ``(hook, agent)``; tools as ``tool_start:<tool>``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.requests: list[a.ModelRequest] = []
        self.rows: list[dict[str, Any]] = []
        self.outputs: list[Any] = []
        self.tool_io: list[tuple[str, str]] = []

    async def on_agent_start(self, ctx, agent):
        self.calls.append(("agent_start", agent.name))

    async def on_agent_end(self, ctx, agent, output):
        self.calls.append(("agent_end", agent.name))
        self.outputs.append(output)

    async def on_model_start(self, ctx, agent, request):
        self.calls.append(("model_start", agent.name))
        self.requests.append(request)

    async def on_model_end(self, ctx, agent, response, call):
        self.calls.append(("model_end", agent.name))
        self.rows.append(call)

    async def on_tool_start(self, ctx, agent, tool_name, arguments):
        self.calls.append((f"tool_start:{tool_name}", agent.name))
        self.tool_io.append(("in", arguments))

    async def on_tool_end(self, ctx, agent, tool_name, result_text):
        self.calls.append((f"tool_end:{tool_name}", agent.name))
        self.tool_io.append(("out", result_text))

    async def on_handoff(self, ctx, source, target):
        self.calls.append(("handoff", f"{source.name}->{target.name}"))


def two_levels() -> tuple[a.Agent, a.ScriptedModel, a.ScriptedModel]:
    legal_model = a.ScriptedModel(
        [a.tool_call("lookup", clause="4"), a.say("Risky: unlimited liability.")]
    )
    legal = a.Agent("legal", "You review law.", legal_model, [lookup])
    coordinator_model = a.ScriptedModel(
        [a.tool_call("legal", input="Check clause 4"), a.say("Clause 4 is risky.")]
    )
    coordinator = a.Agent("coordinator", "You coordinate.", coordinator_model, [legal])
    return coordinator, coordinator_model, legal_model


HIERARCHY_ORDER = [
    ("agent_start", "coordinator"),
    ("model_start", "coordinator"),
    ("model_end", "coordinator"),
    ("tool_start:legal", "coordinator"),
    ("agent_start", "legal"),
    ("model_start", "legal"),
    ("model_end", "legal"),
    ("tool_start:lookup", "legal"),
    ("tool_end:lookup", "legal"),
    ("model_start", "legal"),
    ("model_end", "legal"),
    ("agent_end", "legal"),
    ("tool_end:legal", "coordinator"),
    ("model_start", "coordinator"),
    ("model_end", "coordinator"),
    ("agent_end", "coordinator"),
]


async def test_run_hooks_see_every_agent_of_a_two_level_hierarchy_in_order():
    coordinator, coordinator_model, legal_model = two_levels()
    hooks = Recorder()

    result = await a.run(coordinator, "Review the contract.", hooks=hooks)

    assert result.ok, result.error
    assert hooks.calls == HIERARCHY_ORDER
    # the requests the hooks saw are the ones the models received, in order
    sent = [coordinator_model.requests[0], legal_model.requests[0], legal_model.requests[1]]
    assert hooks.requests == [*sent, coordinator_model.requests[1]]
    # each call's row, already measured, is the row the trace keeps
    rows = [r.as_dict() for r in result.trace.call_rows]  # hooks get each row as a dict
    by_span = {r["span_id"]: r for r in rows}
    assert [r["span_id"] for r in hooks.rows] == [r["span_id"] for r in rows]
    for seen in hooks.rows:
        assert seen == by_span[seen["span_id"]]
        assert seen["chars_in"] > 0 and seen["status"] == "ok"
    assert hooks.outputs == ["Risky: unlimited liability.", "Clause 4 is risky."]
    assert hooks.tool_io == [
        ("in", '{"input":"Check clause 4"}'),
        ("in", '{"clause":"4"}'),
        ("out", "clause 4: unlimited liability"),
        ("out", "Risky: unlimited liability."),
    ]


async def test_an_agent_s_own_hooks_see_that_agent_only():
    coordinator, *_ = two_levels()
    legal = coordinator.tools[0]
    legal.hooks = Recorder()
    coordinator.hooks = Recorder()
    run_hooks = Recorder()

    result = await a.run(coordinator, "Review the contract.", hooks=run_hooks)

    assert result.ok, result.error
    assert run_hooks.calls == HIERARCHY_ORDER
    assert legal.hooks.calls == [(h, who) for h, who in HIERARCHY_ORDER if who == "legal"]
    assert coordinator.hooks.calls == [
        (h, who) for h, who in HIERARCHY_ORDER if who == "coordinator"
    ]


async def test_hooks_may_be_plain_functions_and_read_the_run_context():
    seen: list[tuple[str, object]] = []

    class Plain(a.Hooks):
        def on_agent_start(self, ctx, agent):  # a plain def works too
            seen.append((agent.name, ctx.deps))

    agent = a.Agent("solo", "x", a.ScriptedModel([a.say("hi")]))
    result = await a.run(agent, "go", hooks=Plain(), deps={"user": 7})

    assert result.ok and seen == [("solo", {"user": 7})]


async def test_a_handoff_is_seen_by_the_run_s_hooks_and_by_the_target_s_own():
    billing = a.Agent("billing", "You handle bills.", a.ScriptedModel([a.say("Refunded.")]))
    billing.hooks = Recorder()
    triage = a.Agent(
        "triage",
        "You route.",
        a.ScriptedModel([a.tool_call("transfer_to_billing")]),
        handoffs=[billing],
    )
    hooks = Recorder()

    result = await a.run(triage, "Refund me", hooks=hooks)

    assert result.ok and result.output == "Refunded."
    assert hooks.calls == [
        ("agent_start", "triage"),
        ("model_start", "triage"),
        ("model_end", "triage"),
        ("handoff", "triage->billing"),  # a handoff, not a tool call: no tool hooks
        ("agent_start", "billing"),
        ("model_start", "billing"),
        ("model_end", "billing"),
        ("agent_end", "billing"),
    ]
    assert billing.hooks.calls == hooks.calls[3:]


def test_hooks_must_be_an_instance():
    agent = a.Agent("solo", "x", a.ScriptedModel([a.say("hi")]))
    with pytest.raises(a.UserError, match=r"run\(hooks=...\).*got the class Recorder"):
        a.run_sync(agent, "go", hooks=Recorder)
    with pytest.raises(a.UserError, match="got dict"):
        a.Agent("solo", "x", a.ScriptedModel([]), hooks={})


# -- a hook that raises ends the run


class Boom(Exception):
    pass


async def test_a_raising_hook_ends_the_run_with_its_exception_and_keeps_the_rows():
    class FailsOnSecondCall(a.Hooks):
        def __init__(self) -> None:
            self.ends = 0

        async def on_model_end(self, ctx, agent, response, call):
            self.ends += 1
            if self.ends == 2:
                raise Boom("the cost line could not be printed")

    coordinator, coordinator_model, legal_model = two_levels()

    result = await a.run(coordinator, "Review the contract.", hooks=FailsOnSecondCall())

    assert not result.ok and result.output is None
    assert (
        isinstance(result.error, Boom) and str(result.error) == "the cost line could not be printed"
    )
    # the two calls that happened are in the trace; nothing ran after the hook raised
    assert list(result.calls["agent"]) == ["coordinator", "legal"]
    assert list(result.calls["status"]) == ["ok", "ok"]
    assert len(legal_model.requests) == 1 and len(coordinator_model.requests) == 1
    # the sub-agent's failure ended the whole run: it was not turned into text for the caller
    legal_span = next(s for s in result.spans if s.kind == "agent" and s.name == "legal")
    assert legal_span.status == "error"
    assert all(s.ended is not None for s in result.spans)
    assert result.spans[0].status == "error"


def test_a_hook_raising_system_exit_ends_the_run_and_run_sync_does_not_raise():
    class Exits(a.Hooks):
        async def on_tool_start(self, ctx, agent, tool_name, arguments):
            raise SystemExit(3)

    coordinator, *_ = two_levels()

    result = a.run_sync(coordinator, "Review the contract.", hooks=Exits())

    assert not result.ok and isinstance(result.error, SystemExit)
    assert result.error.code == 3
    assert len(result.calls) == 1


async def test_an_agent_s_raising_hook_in_parallel_sub_agents_ends_the_run():
    class FailsAtStart(a.Hooks):
        async def on_agent_start(self, ctx, agent):
            raise Boom(f"{agent.name} refused to start")

    slow = a.Agent("slow", "x", a.ScriptedModel([a.say("slow answer")], latency=0.05))
    bad = a.Agent("bad", "x", a.ScriptedModel([a.say("never")]), hooks=FailsAtStart())
    boss = a.Agent(
        "boss",
        "x",
        a.ScriptedModel([[a.tool_call("slow", input="a"), a.tool_call("bad", input="b")]]),
        [slow, bad],
    )

    result = await a.run(boss, "go")

    assert isinstance(result.error, Boom) and str(result.error) == "bad refused to start"
    # slow's call was cancelled before it answered: its row says so
    assert list(zip(result.calls["agent"], result.calls["status"])) == [
        ("boss", "ok"),
        ("slow", "cancelled"),
    ]
    statuses = {s.name: s.status for s in result.spans if s.kind == "agent"}
    assert statuses["bad"] == "error" and statuses["slow"] == "cancelled"


# -- an on_event that raises at a span ends the run too


async def test_a_raising_on_event_ends_the_run_and_keeps_the_row_of_the_call_it_was_told_of():
    told: list[str] = []

    def on_event(event: a.Event) -> None:
        if isinstance(event, a.SpanEnded) and event.kind == "model_call":
            told.append(event.span_id)
            raise Boom("the widget broke")

    agent = a.Agent(
        "w", "x", a.ScriptedModel([a.tool_call("lookup", clause="1"), a.say("done")]), [lookup]
    )

    result = await a.run(agent, "go", on_event=on_event)

    assert not result.ok and isinstance(result.error, Boom)
    assert len(result.calls) == 1 and result.calls["span_id"][0] == told[0]
    assert result.calls["status"][0] == "ok" and result.calls["chars_in"][0] > 0
    assert told == [told[0]]  # not called again once it raised
    assert all(s.ended is not None for s in result.spans)


def test_an_on_event_raising_at_the_run_s_start_or_end_does_not_escape_run_sync():
    for when in (a.SpanStarted, a.SpanEnded):

        def on_event(event: a.Event, when: type = when) -> None:
            if isinstance(event, when) and event.kind == "run":
                raise KeyboardInterrupt  # user code: even this ends the run as its error

        agent = a.Agent("w", "x", a.ScriptedModel([a.say("done")]))
        result = a.run_sync(agent, "go", on_event=on_event)

        assert not result.ok and isinstance(result.error, KeyboardInterrupt), when
        assert all(s.ended is not None for s in result.spans)
        assert len(result.calls) == (0 if when is a.SpanStarted else 1)


async def test_deprecated_listeners_still_work_and_others_are_told_when_one_raises():
    seen: list[tuple[str, str]] = []

    def broken(event: str, span: a.trace.Span) -> None:
        raise Boom("broken")

    def fine(event: str, span: a.trace.Span) -> None:
        seen.append((event, span.kind))

    with pytest.warns(DeprecationWarning, match=r"listeners=.*deprecated.*on_event="):
        result = await a.run(
            a.Agent("w", "x", a.ScriptedModel([a.say("done")])), "go", listeners=[broken, fine]
        )

    assert isinstance(result.error, Boom)
    assert seen[0] == ("start", "run") and seen[-1] == ("end", "run")


async def test_nothing_watches_a_run_without_hooks_or_a_stream():
    ctx_seen: list[object] = []

    @a.tool
    def probe(ctx: a.ToolCallContext) -> str:
        """Probe."""
        ctx_seen.append((ctx.run.watchers, ctx.caller.watchers))
        return "ok"

    agent = a.Agent("w", "x", a.ScriptedModel([a.tool_call("probe"), a.say("done")]), [probe])
    await a.run(agent, "go")

    assert ctx_seen == [(None, None)]
