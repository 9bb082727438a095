"""Agent construction: mistakes raise `UserError` at once, saying what to do."""

from __future__ import annotations

import warnings

import pytest
from pydantic import BaseModel

import agentnb as a


class Verdict(BaseModel):
    ok: bool


def documented(x: int) -> int:
    """Return x."""
    return x


def model() -> a.ScriptedModel:
    return a.ScriptedModel([a.say("ok")])


@pytest.mark.parametrize("output_type", [Verdict(ok=True), object()])
def test_an_output_type_pydantic_cannot_validate_is_refused(output_type: object):
    with pytest.raises(a.UserError, match="output_type must be a type pydantic validates"):
        a.Agent("judge", "Judge.", model(), output_type=output_type)


def test_two_tools_with_one_name_are_refused():
    def other(y: int) -> int:
        """Also x."""
        return y

    with pytest.raises(a.UserError, match="two tools named 'documented'") as info:
        a.Agent("w", "x", model(), [documented, a.tool(other, name="documented")])
    assert "rename one" in str(info.value)


def test_a_tool_named_like_a_sub_agent_is_refused():
    sub = a.Agent("documented", "Sub.", model())
    with pytest.raises(a.UserError, match="two tools named 'documented'"):
        a.Agent("w", "x", model(), [documented, sub])


def test_a_lambda_tool_needs_a_name():
    with pytest.raises(a.UserError, match="'<lambda>' is not usable") as info:
        a.Agent("w", "x", model(), [lambda x: x])
    assert "name='...'" in str(info.value)


def test_a_tool_without_a_docstring_has_an_empty_description_and_a_warning_at_the_users_line():
    def bare(x: int) -> int:
        return x

    with pytest.warns(a.AgentnbWarning, match=r"tool 'bare' has no description.*docstring") as got:
        agent = a.Agent("w", "x", model(), [bare])
    assert agent.tool_map()["bare"].description == ""
    assert [w.filename for w in got] == [__file__]  # where the agent was made, not agentnb's
    described = a.Agent("w", "x", model(), [a.tool(bare, description="Return x.")])
    assert described.tool_map()["bare"].description == "Return x."


def test_a_parameter_without_a_type_is_warned_about_with_its_name():
    with pytest.warns(a.AgentnbWarning, match=r"parameters without a type \(x\).*annotate"):
        fn = a.tool(lambda x: x, name="ident", description="Return x.")
    assert fn.name == "ident"
    assert fn.parameters["properties"]["x"] == {}  # what the model is shown: no type at all


def test_a_described_and_typed_tool_is_not_warned_about():
    def typed(ctx: a.ToolCallContext, x: int) -> int:
        """Return x."""
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a.tool(typed)


def test_tools_with_var_args_are_refused():
    def spread(*values: int) -> int:
        """Sum."""
        return sum(values)

    with pytest.raises(a.UserError, match=r"\*args and \*\*kwargs"):
        a.tool(spread)


def test_a_non_callable_tool_is_refused():
    with pytest.raises(a.UserError, match="function, an Agent or a Tool"):
        a.Agent("w", "x", model(), ["search"])


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10", None])
def test_bad_max_turns_is_refused(bad: object):
    with pytest.raises(a.UserError, match="max_turns must be a positive integer"):
        a.Agent("w", "x", model(), max_turns=bad)  # type: ignore[arg-type]


def test_an_agent_needs_a_name():
    with pytest.raises(a.UserError, match="non-empty name"):
        a.Agent("  ", "x", model())


def test_user_errors_are_value_errors_and_agentnb_errors():
    assert issubclass(a.UserError, ValueError) and issubclass(a.UserError, a.AgentnbError)
    for run_error in (
        a.MaxTurnsExceeded,
        a.RunTimeout,
        a.BudgetExceeded,
        a.RunCancelled,
        a.ScriptExhausted,
        a.OutputValidationError,
    ):
        assert issubclass(run_error, a.AgentRunError)
        assert not issubclass(run_error, a.UserError)


async def test_run_refuses_bad_arguments_before_starting():
    agent = a.Agent("w", "x", model())
    with pytest.raises(a.UserError, match="Agent first"):
        await a.run("w", "hi")  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="input must be text"):
        await a.run(agent, 42)  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="Limits"):
        await a.run(agent, "hi", limits={"max_tokens": 5})  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="timeout must be positive"):
        await a.run(agent, "hi", timeout=0)
    with pytest.raises(a.UserError, match="no model"):
        await a.run(a.Agent("w", "x"), "hi")
    assert agent.model.requests == []  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", [0, -1, 1.5])
async def test_run_refuses_a_bad_max_turns(bad: object):
    agent = a.Agent("w", "x", model())
    with pytest.raises(a.UserError, match="max_turns must be a positive integer"):
        await a.run(agent, "hi", max_turns=bad)  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="max_turns must be a positive integer"):
        a.run_sync(agent, "hi", max_turns=bad)
    assert agent.model.requests == []  # type: ignore[union-attr]


def test_a_run_leaves_the_agent_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentnb.models import registry

    made: list[a.ScriptedModel] = []

    def scripted(name: str) -> a.ScriptedModel:
        made.append(a.ScriptedModel([a.say(name)] * 3))
        return made[-1]

    monkeypatch.setitem(registry._PROVIDERS, "fixture", scripted)
    agent = a.Agent("helper", "Help.", "fixture:hello", tools=(_double,))
    before = repr(agent), agent.model, agent.tools
    first = a.run_sync(agent, "q")
    second = a.run_sync(agent, "q")

    assert first.output == second.output == "hello"
    assert (repr(agent), agent.model, agent.tools) == before  # the spec string is still there
    assert agent.model == "fixture:hello" and isinstance(agent.tools, tuple)
    assert len(made) == 1 and len(made[0].requests) == 2  # one client, resolved once, shared


def _double(x: int) -> int:
    """Double x."""
    return 2 * x


def test_instructions_and_model_swapped_is_refused_at_construction_saying_the_order():
    scripted = model()
    with pytest.raises(a.UserError, match=r"instructions got a model client.*\(name, instructions"):
        a.Agent("reviewer", scripted, "Review.")  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match=r"'provider:model'.*swapped"):
        a.Agent("reviewer", "gpt-4o-mini", "Review the clause.")
    assert scripted.requests == []


def test_a_model_that_is_no_spec_nor_client_is_refused_at_construction():
    with pytest.raises(a.UserError, match=r"model='gpt4'.*'provider:model'"):
        a.Agent("reviewer", "Review.", "gpt4")
    with pytest.raises(a.UserError, match=r"must be a model client.*got 42"):
        a.Agent("reviewer", "Review.", 42)  # type: ignore[arg-type]


def test_an_agent_without_a_model_runs_with_the_runs_model_or_says_both_ways():
    agent = a.Agent("reviewer", "Review.")
    given = a.ScriptedModel([a.say("Fine.")])
    assert a.run_sync(agent, "x", model=given).output == "Fine."
    assert given.requests[0].system == "Review."
    with pytest.raises(
        a.UserError, match=r"Agent\('reviewer', instructions, model\).*run\(\.\.\., model="
    ):
        a.run_sync(agent, "x")
