"""Runs started inside a tool (``await ctx.delegate(agent, input)`` or
``agentnb.run(agent, input, parent=ctx)``) are children of the calling run: one trace, one
calls table with their paths, one usage, and the caller's limits cover them."""

from __future__ import annotations

import asyncio
import pickle
import re
import threading

import pytest

import agentnb as a
from agentnb.models import ModelResponse


def answer(text: str, tokens_in: int = 0, tokens_out: int = 0) -> ModelResponse:
    return ModelResponse(text, usage=a.models.usage(tokens_in, tokens_out))


def researcher(*script) -> a.Agent:
    return a.Agent("researcher", "You research.", a.ScriptedModel(list(script)))


def boss_with(tool, *script) -> tuple[a.Agent, a.ScriptedModel]:
    model = a.ScriptedModel(list(script))
    return a.Agent("boss", "You delegate.", model, [tool]), model


def test_a_delegated_run_joins_the_callers_trace_tables_and_usage():
    sub = researcher(answer("cats purr", 30, 7))
    children: list[a.RunResult] = []

    async def research(topic: str, ctx: a.ToolCallContext) -> str:
        """Research a topic."""
        child = await ctx.delegate(sub, f"Research {topic}")
        children.append(child)
        return f"found: {child.output}"

    boss, boss_model = boss_with(
        research, a.tool_call("research", topic="cats"), answer("Cats purr.", 100, 10)
    )

    result = a.run_sync(boss, "Tell me about cats")

    assert result.ok, result.error
    # what each model received
    assert [m.content for m in sub.model.requests[0].messages] == ["Research cats"]
    assert boss_model.requests[1].messages[-1].content == "found: cats purr"
    # one calls table, with the child's path under the caller's
    assert list(result.calls["path"]) == ["boss", "boss/researcher", "boss"]
    assert list(result.calls["depth"]) == [0, 1, 0]
    assert set(result.calls["run_id"]) == {result.run_id}
    # one usage: the child's tokens are the caller's
    assert (result.usage.input_tokens, result.usage.output_tokens) == (130, 17)
    # the child's own result covers its subtree only
    (child,) = children
    assert child.ok and child.output == "cats purr"
    assert list(child.calls["path"]) == ["boss/researcher"]
    assert child.model_calls == 1 and child.chars_in == result.calls["chars_in"][1]
    assert (child.usage.input_tokens, child.usage.requests) == (30, 1)
    assert [m.content for m in child.new_items] == ["cats purr"]
    # the child's agent span hangs under the tool call's span
    spans = {s.span_id: s for s in result.spans}
    agent_span = next(s for s in result.spans if s.name == "researcher" and s.kind == "agent")
    assert spans[agent_span.parent_id].kind == "tool_call"
    assert spans[agent_span.parent_id].name == "research"
    assert agent_span.status == "ok" and agent_span.attrs["delegated"] is True


def test_agentnb_run_with_parent_is_the_same_child_run():
    sub = researcher(a.say("42"))

    async def ask(question: str, ctx: a.ToolCallContext) -> str:
        """Ask the researcher."""
        child = await a.run(sub, question, parent=ctx, max_turns=2)
        return str(child.output)

    boss, boss_model = boss_with(ask, a.tool_call("ask", question="6*7?"), a.say("42 it is"))
    result = a.run_sync(boss, "go")
    assert result.ok, result.error
    assert list(result.calls["path"]) == ["boss", "boss/researcher", "boss"]
    assert boss_model.requests[1].messages[-1].content == "42"


def test_the_callers_model_call_budget_covers_the_child_and_ends_the_run():
    @a.tool
    def lookup(q: str) -> str:
        """Look it up."""
        return "data"

    sub = a.Agent(
        "researcher", "", a.ScriptedModel([a.tool_call("lookup", q="x"), a.say("done")]), [lookup]
    )
    seen: list[a.RunResult] = []

    async def research(topic: str, ctx: a.ToolCallContext) -> str:
        """Research."""
        child = await ctx.delegate(sub, topic)
        seen.append(child)
        return "child failed" if not child.ok else str(child.output)

    boss, boss_model = boss_with(research, a.tool_call("research", topic="t"), a.say("never"))

    result = a.run_sync(boss, "go", limits=a.Limits(max_model_calls=2))

    assert not result.ok and isinstance(result.error, a.BudgetExceeded)
    assert "boss/researcher" in str(result.error)
    assert not seen[0].ok and isinstance(seen[0].error, a.BudgetExceeded)  # the tool saw it
    assert len(boss_model.requests) == 1  # the caller made no call past its budget
    assert len(sub.model.requests) == 1
    assert list(result.calls["path"]) == ["boss", "boss/researcher"]


def test_the_callers_token_budget_covers_the_child():
    sub = researcher(answer("long answer", 500, 50))

    async def research(topic: str, ctx: a.ToolCallContext) -> str:
        """Research."""
        return str((await ctx.delegate(sub, topic)).output)

    boss, boss_model = boss_with(
        research, ModelResponse(None, [a.tool_call("research", topic="t")], a.models.usage(10, 5))
    )
    result = a.run_sync(boss, "go", limits=a.Limits(max_tokens=100))
    assert not result.ok and isinstance(result.error, a.BudgetExceeded)
    assert "Token budget of the run" in str(result.error)
    assert len(boss_model.requests) == 1


def test_the_callers_timeout_covers_the_child():
    sub = a.Agent("researcher", "", a.ScriptedModel([a.say("late")], latency=30.0))

    async def research(topic: str, ctx: a.ToolCallContext) -> str:
        """Research."""
        return str((await ctx.delegate(sub, topic)).output)

    boss, _ = boss_with(research, a.tool_call("research", topic="t"), a.say("never"))

    result = a.run_sync(boss, "go", timeout=0.2)

    assert not result.ok and isinstance(result.error, a.RunTimeout)
    child_span = next(s for s in result.spans if s.name == "researcher" and s.kind == "agent")
    assert child_span.ended is not None and child_span.status != "ok"
    assert list(result.calls["path"]) == ["boss", "boss/researcher"]


def test_the_depth_limit_covers_the_child():
    sub = researcher(a.say("never asked"))

    async def research(topic: str, ctx: a.ToolCallContext) -> str:
        """Research."""
        child = await ctx.delegate(sub, topic)
        return f"ok={child.ok}: {child.error}"

    boss, boss_model = boss_with(research, a.tool_call("research", topic="t"), a.say("fine"))
    result = a.run_sync(boss, "go", limits=a.Limits(max_depth=0))
    assert result.ok
    assert (
        boss_model.requests[1]
        .messages[-1]
        .content.startswith("ok=False: maximum depth reached (0) at boss")
    )
    assert sub.model.requests == []


def test_a_child_failure_is_a_result_the_tool_reads_and_the_run_goes_on():
    sub = researcher()  # an empty script: the child fails

    async def research(topic: str, ctx: a.ToolCallContext) -> str:
        """Research."""
        child = await ctx.delegate(sub, topic)
        return "no answer" if not child.ok else "?"

    boss, boss_model = boss_with(research, a.tool_call("research", topic="t"), a.say("fine"))
    result = a.run_sync(boss, "go")
    assert result.ok and result.output == "fine"
    assert boss_model.requests[1].messages[-1].content == "no answer"


async def test_a_parent_from_a_finished_run_is_a_one_line_user_error():
    kept: list[a.ToolCallContext] = []

    def keep(x: str, ctx: a.ToolCallContext) -> str:
        """Keep the context."""
        kept.append(ctx)
        return "kept"

    boss, _ = boss_with(keep, a.tool_call("keep", x="1"), a.say("done"))
    assert (await a.run(boss, "go")).ok
    with pytest.raises(a.UserError, match=r"has ended; pass the ctx of the tool that is running"):
        await a.run(researcher(a.say("x")), "hi", parent=kept[0])
    with pytest.raises(a.UserError, match=r"has ended"):
        await kept[0].delegate(researcher(a.say("x")), "hi")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"limits": a.Limits(max_model_calls=3)}, r"sets limits; pass only max_turns or timeout"),
        ({"run_id": "x", "deps": 1}, r"sets deps, run_id;"),
    ],
)
def test_parent_with_options_that_contradict_it_is_a_user_error(options, message):
    errors: list[str] = []

    async def research(topic: str, ctx: a.ToolCallContext) -> str:
        """Research."""
        try:
            await a.run(researcher(a.say("x")), topic, parent=ctx, **options)
        except a.UserError as exc:
            errors.append(str(exc))
            raise
        return "?"

    boss, boss_model = boss_with(research, a.tool_call("research", topic="t"), a.say("done"))
    a.run_sync(boss, "go")
    assert len(errors) == 1 and "\n" not in errors[0]
    assert re.search(message, errors[0])
    assert boss_model.requests[1].messages[-1].content.startswith("ERROR: research failed")


async def test_parent_must_be_a_tool_call_context():
    with pytest.raises(a.UserError, match=r"run\(parent=\.\.\.\) must be the ToolCallContext"):
        await a.run(researcher(a.say("x")), "hi", parent=object())  # type: ignore[arg-type]


def test_parallel_children_each_keep_their_own_result_and_path():
    subs = [
        a.Agent(f"r{i}", "", a.ScriptedModel([a.say(f"answer {i}")], latency=0.01)) for i in (1, 2)
    ]
    seen: list[list[str]] = []

    async def research(topic: str, ctx: a.ToolCallContext) -> str:
        """Research."""
        results = await asyncio.gather(*(ctx.delegate(s, topic) for s in subs))
        seen.append([list(r.calls["path"])[0] for r in results])
        return ",".join(str(r.output) for r in results)

    boss, boss_model = boss_with(research, a.tool_call("research", topic="a"), a.say("done"))
    result = a.run_sync(boss, "go")
    assert result.ok
    assert boss_model.requests[1].messages[-1].content == "answer 1,answer 2"
    assert seen == [["boss/r1", "boss/r2"]]
    assert sorted(result.calls["path"]) == ["boss", "boss", "boss/r1", "boss/r2"]


async def test_a_streamed_run_streams_the_childs_events_with_its_path():
    sub = researcher(a.say("streamed answer"))

    async def research(topic: str, ctx: a.ToolCallContext) -> str:
        """Research."""
        return str((await ctx.delegate(sub, topic)).output)

    boss, _ = boss_with(research, a.tool_call("research", topic="t"), a.say("done"))
    stream = a.run_streamed(boss, "go")
    paths = [e.path async for e in stream if isinstance(e, a.TextDelta)]
    result = await stream.result()
    assert result.ok, result.error
    assert "boss/researcher" in paths and paths[-1] == "boss"


def test_parent_given_to_run_sync_says_where_it_belongs():
    with pytest.raises(a.UserError, match=r"parent= starts a child run from inside a tool"):
        a.run_sync(researcher(a.say("x")), "hi", parent=None)  # type: ignore[call-arg]


def test_a_pause_for_approval_inside_a_child_ends_the_run_with_a_clear_error_not_a_pause():
    @a.tool(needs_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return "deleted"

    sub = a.Agent("cleaner", "", a.ScriptedModel([a.tool_call("delete", path="/x")]), [delete])

    async def clean(where: str, ctx: a.ToolCallContext) -> str:
        """Clean up."""
        return str((await ctx.delegate(sub, where)).error)

    boss, boss_model = boss_with(clean, a.tool_call("clean", where="/"), a.say("never"))
    result = a.run_sync(boss, "go", approver="pause")
    assert not result.ok and isinstance(result.error, a.UserError)
    assert "boss/cleaner needs approval" in str(result.error)
    assert result.interruptions == []  # nothing a resume would misread
    assert len(boss_model.requests) == 1


class _Unpicklable(a.UserError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


def test_a_result_whose_child_ended_the_run_with_an_unpicklable_error_still_pickles():
    def instructions(ctx) -> str:
        raise _Unpicklable("a setup mistake")

    sub = a.Agent("researcher", instructions, a.ScriptedModel([a.say("x")]))

    async def research(topic: str, ctx: a.ToolCallContext) -> str:
        """Research."""
        return str((await ctx.delegate(sub, topic)).ok)

    boss, boss_model = boss_with(research, a.tool_call("research", topic="t"), a.say("never"))
    result = a.run_sync(boss, "go")
    assert not result.ok and "a setup mistake" in str(result.error)
    assert len(boss_model.requests) == 1  # a setup mistake ends the run, not a text to ignore
    copy = pickle.loads(pickle.dumps(result))
    assert "a setup mistake" in str(copy.error) and copy.context.ended is None
