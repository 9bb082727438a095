"""The openai-agents / pydantic-ai forms the ports needed: ``tool_use_behavior`` as a function,
``reset_tool_choice=False``, an async ``extractor=``, a stopping tool's result read as the
``output_type``, and ``result.new_items``."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import agentnb as a
from agentnb.errors import OutputValidationError


class Weather(BaseModel):
    city: str
    celsius: int


@a.tool
def weather(city: str) -> Weather:
    """The weather in a city."""
    return Weather(city=city, celsius=21)


@a.tool
def shout(text: str) -> str:
    """Shout it."""
    return text.upper()


# -- tool_use_behavior as a function


def test_a_behavior_function_sees_every_result_and_its_final_output_ends_the_run():
    seen: list[list[a.FunctionToolResult]] = []

    def first_weather(ctx, results):
        seen.append(results)
        for r in results:
            if r.call.name == "weather":
                return a.ToolsToFinalOutputResult(True, f"{ctx.deps}: {r.output}")
        return a.ToolsToFinalOutputResult(False)

    model = a.ScriptedModel(
        [
            a.tool_call("shout", text="hi"),
            [a.tool_call("shout", text="yo"), a.tool_call("weather", city="Oslo")],
        ]
    )
    agent = a.Agent("w", "Use tools.", model, [shout, weather], tool_use_behavior=first_weather)

    result = a.run_sync(agent, "weather?", deps="report")

    assert result.ok, result.error
    assert result.output == 'report: {"city":"Oslo","celsius":21}'
    assert len(model.requests) == 2  # no third call after the function said stop
    assert [[r.call.name for r in turn] for turn in seen] == [["shout"], ["shout", "weather"]]
    assert seen[0][0].output == "HI" and seen[0][0].ok and seen[0][0].tool.name == "shout"
    # what the model received on the second turn: the first turn's result
    assert model.requests[1].messages[-1].content == "HI"


async def test_an_async_behavior_function_is_awaited_and_its_text_read_as_the_output_type():
    async def stop(ctx, results):
        return a.ToolsToFinalOutputResult(True, results[0].output)

    model = a.ScriptedModel([a.tool_call("weather", city="Rome")])
    agent = a.Agent("w", "", model, [weather], output_type=Weather, tool_use_behavior=stop)

    result = await a.run(agent, "go")

    assert result.ok, result.error
    assert result.output == Weather(city="Rome", celsius=21)
    assert model.requests[0].output_schema is not None  # the model was asked for the type


def test_a_behavior_function_of_the_wrong_shape_is_refused_at_construction():
    with pytest.raises(a.UserError, match=r"tool_use_behavior.*\(ctx, results\)"):
        a.Agent("w", "", a.ScriptedModel([]), [weather], tool_use_behavior=lambda: None)


def test_a_behavior_function_returning_something_else_ends_the_run_saying_what_to_return():
    model = a.ScriptedModel([a.tool_call("shout", text="x")])
    agent = a.Agent("w", "", model, [shout], tool_use_behavior=lambda ctx, results: True)
    result = a.run_sync(agent, "go")
    assert not result.ok and "ToolsToFinalOutputResult" in str(result.error)


# -- StopAtTools / stop_on_first_tool honour output_type


@pytest.mark.parametrize("behavior", ["stop_on_first_tool", a.StopAtTools("weather")])
def test_a_stopping_tools_result_becomes_the_output_type(behavior):
    model = a.ScriptedModel([a.tool_call("weather", city="Lima")])
    agent = a.Agent("w", "", model, [weather], output_type=Weather, tool_use_behavior=behavior)

    result = a.run_sync(agent, "go")

    assert result.ok, result.error
    assert result.output == Weather(city="Lima", celsius=21)  # not the JSON string
    assert len(model.requests) == 1
    assert model.requests[0].output_schema is not None


def test_a_stopping_tools_result_that_is_not_the_output_type_ends_the_run_ok_false():
    model = a.ScriptedModel([a.tool_call("shout", text="not json")])
    agent = a.Agent(
        "w", "", model, [shout], output_type=Weather, tool_use_behavior="stop_on_first_tool"
    )
    result = a.run_sync(agent, "go")
    assert not result.ok
    assert isinstance(result.error, OutputValidationError)
    assert "'shout'" in str(result.error) and "weather" in str(result.error)


def test_a_stopping_tool_without_output_type_still_answers_its_text():
    model = a.ScriptedModel([a.tool_call("weather", city="Lima")])
    agent = a.Agent("w", "", model, [weather], tool_use_behavior="stop_on_first_tool")
    assert a.run_sync(agent, "go").output == '{"city":"Lima","celsius":21}'


# -- reset_tool_choice


def test_a_forced_tool_choice_is_reset_to_auto_by_default_and_kept_with_reset_false():
    def agent(reset: bool, model: a.ScriptedModel) -> a.Agent:
        return a.Agent(
            "w",
            "",
            model,
            [shout],
            model_settings=a.ModelSettings(tool_choice="required"),
            reset_tool_choice=reset,
            max_turns=3,
        )

    default = a.ScriptedModel([a.tool_call("shout", text="a"), a.say("done")])
    assert a.run_sync(agent(True, default), "go").ok
    assert [r.settings.tool_choice for r in default.requests] == ["required", "auto"]

    kept = a.ScriptedModel([a.tool_call("shout", text="a"), a.tool_call("shout", text="b")])
    result = a.run_sync(agent(False, kept), "go", max_turns=2)
    assert [r.settings.tool_choice for r in kept.requests] == ["required", "required"]
    assert not result.ok and isinstance(result.error, a.MaxTurnsExceeded)


def test_reset_tool_choice_must_be_a_bool():
    with pytest.raises(a.UserError, match=r"reset_tool_choice=\.\.\.\) must be True or False"):
        a.Agent("w", "", a.ScriptedModel([]), reset_tool_choice="no")  # type: ignore[arg-type]


# -- an async extractor


def test_an_async_extractor_is_awaited_and_what_it_returns_is_what_the_caller_reads():
    async def verdict(result: a.RunResult) -> str:
        return f"verdict={result.output.upper()} after {result.model_calls} call(s)"

    sub = a.Agent("legal", "Judge.", a.ScriptedModel([a.say("fine")]))
    boss_model = a.ScriptedModel([a.tool_call("legal", input="clause"), a.say("ok")])
    boss = a.Agent("boss", "", boss_model, [sub.as_tool(extractor=verdict)])

    result = a.run_sync(boss, "review")

    assert result.ok, result.error
    tool_result = boss_model.requests[1].messages[-1]
    assert tool_result.role == "tool"
    assert tool_result.content == "verdict=FINE after 1 call(s)"


def test_an_extractor_that_raises_is_a_failed_call_the_caller_reads():
    async def broken(result: a.RunResult) -> str:
        raise KeyError("verdict")

    sub = a.Agent("legal", "Judge.", a.ScriptedModel([a.say("fine")]))
    boss_model = a.ScriptedModel([a.tool_call("legal", input="clause"), a.say("ok")])
    result = a.run_sync(a.Agent("boss", "", boss_model, [sub.as_tool(extractor=broken)]), "go")
    assert result.ok
    assert boss_model.requests[1].messages[-1].content == (
        "ERROR: legal's extractor failed: KeyError: 'verdict'"
    )


# -- result.new_items


def test_new_items_are_the_messages_after_the_input():
    model = a.ScriptedModel([a.tool_call("shout", text="a"), a.say("done")])
    history = [a.Message.user("earlier"), a.Message.assistant("yes"), a.Message.user("now")]

    result = a.run_sync(a.Agent("w", "", model, [shout]), history)

    assert [(m.role, m.content) for m in result.new_items] == [
        ("assistant", None),
        ("tool", "A"),
        ("assistant", "done"),
    ]
    assert result.new_items[0].tool_calls[0].name == "shout"
    assert result.to_input_list() == history + result.new_items
    assert model.requests[0].messages == history  # the model received the whole input
