"""The smaller points of the fourth hardening pass (issue 38, item 5): each mistake is a
one-line `UserError` that says what to do, raised where the mistake is made, and a run that
started ends with a result."""

from __future__ import annotations

import asyncio

import pytest

import agentnb as a
from agentnb.models.providers.openai_responses.server import ResponsesServer
from agentnb.patterns.routing import HandoffRoute


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and len(text) < 400
    return text


@pytest.mark.parametrize("blocking", [True, False])
def test_a_guardrail_raising_cancelled_ends_the_run_cancelled(blocking):
    def guard(ctx, agent, value):
        raise asyncio.CancelledError()

    model = a.ScriptedModel([a.say("hi")], latency=0.01)
    agent = a.Agent("w", "x", model, input_guardrails=[a.input_guardrail(guard, blocking=blocking)])
    result = a.run_sync(agent, "hello")  # returns: it does not raise CancelledError
    assert not result.ok and isinstance(result.error, a.RunCancelled)


def _cancelling_guard(ctx, tool_name, arguments):
    raise asyncio.CancelledError()


@a.tool(input_guardrails=[_cancelling_guard])
def guarded(x: int) -> int:
    """Echo x."""
    return x


@a.tool
def cancels(x: int) -> int:
    """Raise CancelledError from a worker thread."""
    raise asyncio.CancelledError()


@a.tool
async def cancels_async(x: int) -> int:
    """Raise CancelledError on the loop."""
    raise asyncio.CancelledError()


@pytest.mark.parametrize("tool", [guarded, cancels, cancels_async], ids=lambda t: t.name)
def test_a_tool_or_tool_guardrail_raising_cancelled_ends_the_run_cancelled(tool):
    model = a.ScriptedModel([a.tool_call(tool.name, x=1), a.say("unreached")])
    result = a.run_sync(a.Agent("w", "x", model, tools=[tool]), "hello")
    assert not result.ok and isinstance(result.error, a.RunCancelled)
    assert len(model.requests) == 1  # the run stopped at the tool


class Billing(a.Intent):
    pass


class Refund(a.Intent):
    pass


def test_a_route_rule_without_its_target_says_to_add_to():
    with pytest.raises(a.UserError) as caught:
        HandoffRoute("triage").when(Billing).when(Refund)
    assert ".when(Billing) needs .to(agent) before .when(...)" in one_line(caught.value)


def test_calls_from_spans_of_none_says_what_it_takes():
    otel = pytest.importorskip("agentnb.integrations.otel")
    with pytest.raises(a.UserError, match="takes the finished spans") as caught:
        otel.calls_from_spans(None)
    one_line(caught.value)


def test_an_empty_cost_table_says_what_it_needs():
    empty = a.run_sync(a.Agent("w", "x", a.ScriptedModel([a.say("hi")])), "hi").calls.iloc[:0]
    with pytest.raises(a.UserError, match="cost_table needs rows of model calls") as caught:
        a.cost_table(empty)
    one_line(caught.value)


def test_a_hook_attribute_that_is_not_a_function_is_refused_at_construction():
    class Counting(a.Hooks):
        on_agent_start = 5

    with pytest.raises(a.UserError, match=r"Counting.on_agent_start is int 5, not a function"):
        a.Agent("w", "x", a.ScriptedModel([a.say("hi")]), hooks=Counting())


def test_two_readers_of_one_stream_are_told_not_to_split_it():
    async def both() -> tuple[BaseException | None, a.RunResult]:
        model = a.ScriptedModel([a.say("hello world")], latency=0.01)
        stream = a.run_streamed(a.Agent("w", "x", model), "hi")

        async def read() -> list[object]:
            return [event async for event in stream]

        outcome = await asyncio.gather(read(), read(), return_exceptions=True)
        error = next((o for o in outcome if isinstance(o, BaseException)), None)
        return error, await stream.result()

    error, result = asyncio.run(both())
    assert isinstance(error, a.UserError) and "already read by another" in one_line(error)
    assert result.ok  # the run itself went on


def test_to_input_list_gives_copies():
    model = a.ScriptedModel([a.tool_call("add", x=1, y=2), a.say("3")])

    @a.tool
    def add(x: int, y: int) -> int:
        """Add."""
        return x + y

    result = a.run_sync(a.Agent("w", "x", model, tools=[add]), "1+2")
    history = result.to_input_list()
    history[0].content = "changed"
    history[1].tool_calls[0].arguments = "{}"
    assert result.messages[0].content == "1+2"
    assert result.messages[1].tool_calls[0].arguments != "{}"
    assert result.to_input_list() == result.messages  # equal, not the same objects


def test_a_tool_typed_with_run_context_points_to_tool_call_context():
    def lookup(ctx: a.RunContext, key: str) -> str:
        """Look a key up."""
        return key

    with pytest.raises(a.UserError) as caught:
        a.tool(lookup)
    text = one_line(caught.value)
    assert "ToolCallContext" in text and "Trace" not in text


def test_a_function_inside_a_list_of_instructions_is_refused_at_construction():
    with pytest.raises(a.UserError, match=r"the list holds a function") as caught:
        a.Agent("w", ["Be brief.", lambda ctx: "today"], a.ScriptedModel([a.say("hi")]))
    assert "instructions=fn" in one_line(caught.value)


def test_the_responses_server_reads_list_valued_tool_outputs_as_text():
    seen: list[str] = []

    def reply(request: a.models.ModelRequest) -> object:
        seen.append(request.messages[-1].content or "")
        return a.say("ok")

    with ResponsesServer(a.ScriptedModel(reply)) as server:
        import openai

        client = openai.OpenAI(base_url=server.url, api_key="not-needed", max_retries=0)
        client.responses.create(
            model="m",
            input=[
                {"role": "user", "content": "look it up"},
                {"type": "function_call", "call_id": "c1", "name": "mcp", "arguments": "{}"},
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": [
                        {"type": "input_text", "text": "first part"},
                        {"type": "input_image", "image_url": "data:,"},
                        {"type": "input_text", "text": "second part"},
                    ],
                },
            ],
        )
        client.close()
    assert seen == ["first part\n[input_image]\nsecond part"]
