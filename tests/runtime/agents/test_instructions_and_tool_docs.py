"""Instructions as functions (sync, async, (ctx) or (ctx, agent)); tool parameter descriptions
from Annotated and from Google, NumPy and Sphinx docstrings; functions that cannot be tools."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field

import agentnb as a


def run_with(instructions: Any) -> tuple[a.RunResult, a.ScriptedModel]:
    model = a.ScriptedModel([a.say("ok")])
    return a.run_sync(a.Agent("w", instructions, model), "go", deps="Ann"), model


def test_an_async_instructions_function_is_awaited():
    async def prompt(ctx: Any) -> str:
        return f"You help {ctx.deps}."

    result, model = run_with(prompt)
    assert result.ok and model.requests[0].system == "You help Ann."


def test_instructions_taking_ctx_and_agent():
    result, model = run_with(lambda ctx, agent: f"You are {agent.name}, helping {ctx.deps}.")
    assert model.requests[0].system == "You are w, helping Ann."


def test_instructions_returning_prompt_sections():
    result, model = run_with(lambda ctx: [a.PromptSection("Role", "Review.")])
    assert model.requests[0].system == "## Role\nReview."


def test_instructions_returning_something_else_end_the_run_naming_the_agent():
    result, model = run_with(lambda ctx: 42)
    assert isinstance(result.error, a.UserError) and "Agent 'w'" in str(result.error)
    assert model.requests == []


def test_a_sub_agents_async_instructions_are_awaited_too():
    async def prompt(ctx: Any, agent: a.Agent) -> str:
        return f"{agent.name} at work"

    sub_model = a.ScriptedModel([a.say("fine")])
    sub = a.Agent("legal", prompt, sub_model)
    boss = a.Agent(
        "boss",
        "x",
        a.ScriptedModel([a.tool_call("legal", input="q"), a.say("ok")]),
        [sub.as_tool()],
    )
    assert a.run_sync(boss, "go").ok and sub_model.requests[0].system == "legal at work"


def google(city: str, days: int = 1) -> str:
    """Forecast the weather.

    Args:
        city: The city's name.
        days (int): How many days
            ahead.
    """
    return city


def numpy(city: str, days: int = 1) -> str:
    """Forecast the weather.

    Parameters
    ----------
    city : str
        The city's name.
    days : int
        How many days ahead.
    """
    return city


def sphinx(city: str, days: int = 1) -> str:
    """Forecast the weather.

    :param city: The city's name.
    :param days: How many days ahead.
    """
    return city


@pytest.mark.parametrize("fn", [google, numpy, sphinx])
def test_parameter_descriptions_from_each_docstring_style(fn):
    made = a.tool(fn)
    assert made.description == "Forecast the weather."
    props = made.parameters["properties"]
    assert props["city"]["description"] == "The city's name."
    assert props["days"]["description"] == "How many days ahead."


def test_parameter_descriptions_from_annotated():
    def book(
        room: Annotated[str, "The room's code."],
        people: Annotated[int, Field(description="How many.", ge=1)],
    ) -> str:
        """Book a room."""
        return room

    props = a.tool(book).parameters["properties"]
    assert props["room"]["description"] == "The room's code."
    assert props["people"] == {"description": "How many.", "minimum": 1, "type": "integer"}


def test_the_model_receives_the_descriptions():
    model = a.ScriptedModel([a.say("ok")])
    a.run_sync(a.Agent("w", "x", model, [google]), "go")
    (spec,) = model.requests[0].tools
    assert spec.parameters["properties"]["city"]["description"] == "The city's name."


def positional_only(x: int, /) -> int:
    return x


def star_args(*xs: int) -> int:
    return 0


def star_kwargs(**kw: int) -> int:
    return 0


def generator(n: int):  # type: ignore[no-untyped-def]
    yield n


async def async_generator(n: int):  # type: ignore[no-untyped-def]
    yield n


@pytest.mark.parametrize(
    ("fn", "why"),
    [
        (positional_only, "positional-only"),
        (star_args, r"\*args and \*\*kwargs"),
        (star_kwargs, r"\*args and \*\*kwargs"),
        (generator, "is a generator"),
        (async_generator, "is a generator"),
    ],
)
def test_functions_that_cannot_be_tools_are_refused_saying_why(fn, why):
    with pytest.raises(a.UserError, match=why):
        a.tool(fn)


def test_a_coroutine_given_as_instructions_is_never_sent_as_text():
    async def prompt() -> str:
        return "never"

    result, model = run_with(prompt())
    assert isinstance(result.error, a.UserError) and "a coroutine" in str(result.error)
    assert model.requests == []
