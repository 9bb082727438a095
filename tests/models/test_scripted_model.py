"""ScriptedModel and FunctionModel: the offline models every other test and notebook runs on."""

from __future__ import annotations

import asyncio

import pytest

import agentnb as a
from agentnb.models import scripted


@a.tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def agent(model: a.ModelClient, **kwargs: object) -> a.Agent:
    return a.Agent("helper", "You help.", model, [lookup], **kwargs)  # type: ignore[arg-type]


async def test_say_is_the_final_answer():
    model = a.ScriptedModel([a.say("hello")])

    result = await a.run(agent(model), "hi")

    assert result.ok and result.output == "hello"
    assert len(model.requests) == 1
    assert model.requests[0].last_user_text == "hi"
    model.assert_complete()


async def test_a_tool_call_step_runs_the_tool_and_the_next_request_holds_its_result():
    model = a.ScriptedModel([a.tool_call("lookup", key="k1"), a.say("done")])

    result = await a.run(agent(model), "find k1")

    assert result.ok and result.output == "done"
    second = model.requests[1]
    assistant, tool_msg = second.messages[-2:]
    assert assistant.role == "assistant" and assistant.tool_calls[0].name == "lookup"
    assert assistant.tool_calls[0].arguments == '{"key":"k1"}'
    assert tool_msg.role == "tool" and tool_msg.content == "value of k1"
    assert tool_msg.tool_call_id == assistant.tool_calls[0].id != ""


async def test_a_list_of_tool_calls_is_one_turn():
    model = a.ScriptedModel(
        [[a.tool_call("lookup", key="a"), a.tool_call("lookup", key="b")], a.say("both")]
    )

    result = await a.run(agent(model), "find a and b")

    assert result.ok
    assert len(model.requests) == 2
    assert model.requests[1].tool_results == ["value of a", "value of b"]
    assert list(result.calls["tool_calls"]) == [2, 0]
    ids = [c.id for c in model.requests[1].messages[1].tool_calls]
    assert len(set(ids)) == 2


async def test_a_reused_tool_call_object_gets_fresh_ids_each_turn():
    call = a.tool_call("lookup", key="x")
    model = a.ScriptedModel([call, call, a.say("ok")])

    result = await a.run(agent(model), "twice")

    assert result.ok
    ids = [m.tool_call_id for m in model.requests[2].messages if m.role == "tool"]
    assert len(ids) == 2 and ids[0] != ids[1]
    assert call.id == ""  # the script's object is left untouched


async def test_a_callable_script_answers_from_what_the_model_received():
    def reply(request: a.ModelRequest) -> object:
        if not request.tool_results:
            return a.tool_call("lookup", key=request.last_user_text)
        return a.say(f"got: {request.tool_results[-1]}")

    model = a.ScriptedModel(reply)

    result = await a.run(agent(model), "zeta")

    assert result.output == "got: value of zeta"
    assert [len(r.messages) for r in model.requests] == [1, 3]
    assert model.remaining == 0


async def test_requests_are_recorded_in_order_with_the_whole_request():
    model = a.ScriptedModel([a.tool_call("lookup", key="1"), a.tool_call("lookup", key="2"), "end"])

    await a.run(agent(model), "go")

    assert [len(r.messages) for r in model.requests] == [1, 3, 5]
    first = model.requests[0]
    assert first.system == "You help."
    assert first.agent == "helper"
    assert [t.name for t in first.tools] == ["lookup"]
    assert model.requests[2].tool_results == ["value of 1", "value of 2"]


async def test_running_out_of_script_ends_the_run_naming_the_agent_and_the_step():
    model = a.ScriptedModel([a.tool_call("lookup", key="k")])

    result = await a.run(agent(model), "go")

    assert not result.ok and result.output is None
    assert isinstance(result.error, a.ScriptExhausted)
    message = str(result.error)
    assert "'helper'" in message
    assert "step 2" in message and "holds 1" in message
    assert list(result.calls["status"]) == ["ok", "error"]  # the partial trace is kept


def test_a_bad_step_is_refused_at_construction():
    with pytest.raises(a.UserError, match="script step"):
        a.ScriptedModel([a.say("ok"), 42])  # type: ignore[list-item]
    with pytest.raises(a.UserError, match="list of steps or a function"):
        a.ScriptedModel("not a list")  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="latency"):
        a.ScriptedModel([], latency=-1)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the seconds the models sleep, and sleep zero instead."""
    recorded: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds: float) -> None:
        recorded.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(scripted.asyncio, "sleep", fake_sleep)
    return recorded


async def test_latency_in_seconds_is_awaited_before_each_reply(sleeps: list[float]):
    model = a.ScriptedModel([a.tool_call("lookup", key="k"), a.say("ok")], latency=0.25)

    await a.run(agent(model), "go")

    assert sleeps == [0.25, 0.25]


async def test_a_latency_callable_receives_each_request(sleeps: list[float]):
    model = a.ScriptedModel(
        [a.tool_call("lookup", key="k"), a.say("ok")],
        latency=lambda request: 0.1 * len(request.messages),
    )

    await a.run(agent(model), "go")

    assert sleeps == pytest.approx([0.1, 0.3])


async def test_latency_really_sleeps_on_the_event_loop():
    model = a.ScriptedModel([a.say("late")], latency=0.02)

    result = await a.run(agent(model), "go")

    span = next(s for s in result.spans if s.kind == "model_call")
    assert span.duration is not None and span.duration >= 0.015  # a lower bound only


async def test_function_model_with_a_sync_function():
    def echo(request: a.ModelRequest) -> a.Say:
        return a.say(request.last_user_text.upper())

    model = a.FunctionModel(echo)

    result = await a.run(agent(model), "shout")

    assert result.output == "SHOUT"
    assert model.name == "echo"
    assert len(model.requests) == 1


async def test_function_model_with_an_async_function():
    async def think(request: a.ModelRequest) -> object:
        await asyncio.sleep(0)
        if not request.tool_results:
            return [a.tool_call("lookup", key="p"), a.tool_call("lookup", key="q")]
        return a.ModelResponse(text=" + ".join(request.tool_results))

    model = a.FunctionModel(think)

    result = await a.run(agent(model), "both")

    assert result.output == "value of p + value of q"
    assert model.requests[1].tool_results == ["value of p", "value of q"]


def test_function_model_needs_a_function():
    with pytest.raises(a.UserError, match="function"):
        a.FunctionModel("nope")  # type: ignore[arg-type]


def test_say_encodes_data_as_json():
    from pydantic import BaseModel

    class P(BaseModel):
        x: int

    assert a.say(P(x=1)).text == '{"x":1}'
    assert a.say({"k": "é"}).text == '{"k": "é"}'
    assert a.tool_call("t", q="é", n=1).arguments == '{"q":"é","n":1}'
