"""Callbacks of the wrong shape are a UserError when given, saying what agentnb calls instead."""

from __future__ import annotations

import pytest

import agentnb as a
from agentnb.runtime import RunOptions


def model() -> a.ScriptedModel:
    return a.ScriptedModel([a.say("ok")])


def test_openai_agents_hook_names_are_named_to_their_agentnb_equivalents():
    class Ported(a.Hooks):
        async def on_llm_start(self, context, agent, system_prompt, input_items) -> None:
            pass

    with pytest.raises(a.UserError, match=r"Ported\.on_llm_start .*on_model_start\(ctx, agent"):
        a.run_sync(a.Agent("w", "x", model()), "go", hooks=Ported())

    class AgentLevel(a.Hooks):
        def on_start(self, context, agent) -> None:
            pass

    with pytest.raises(a.UserError, match=r"on_start .*on_agent_start"):
        a.Agent("w", "x", model(), hooks=AgentLevel())


def test_an_unknown_on_method_lists_agentnb_s_hooks():
    class Typo(a.Hooks):
        def on_tool_finish(self, ctx, agent, name, text) -> None:
            pass

    with pytest.raises(a.UserError, match=r"on_tool_finish is not a hook.*on_tool_end"):
        RunOptions(hooks=Typo())


def test_a_hook_with_too_few_parameters_says_what_it_is_passed():
    class Short(a.Hooks):
        async def on_tool_start(self, ctx, agent) -> None:  # openai-agents' (ctx, agent, tool)
            pass

    with pytest.raises(a.UserError, match=r"on_tool_start.*\(ctx, agent, tool_name, arguments\)"):
        RunOptions(hooks=Short())


def test_well_formed_hooks_and_helpers_are_accepted():
    class Fine(a.Hooks):
        async def on_tool_start(self, *args, **kwargs) -> None:
            pass

        def on_model_end(self, ctx, agent, response, call) -> None:
            pass

        def helper(self) -> None:  # not a hook: any other method is the user's business
            pass

    result = a.run_sync(a.Agent("w", "x", model()), "go", hooks=Fine())
    assert result.ok


def test_needs_approval_taking_three_arguments_is_rejected_at_once():
    def ask(ctx, tool_name, arguments) -> bool:
        return True

    with pytest.raises(
        a.UserError,
        match=r"needs_approval: ask\(ctx, tool_name, arguments\).*\(ctx, arguments\) or \(pending\)",
    ):
        a.tool(needs_approval=ask)(lambda_free)
    with pytest.raises(a.UserError, match="needs_approval"):
        a.Agent("w", "x", model()).as_tool(needs_approval=ask)


def lambda_free(x: str) -> str:
    """A tool."""
    return x


def test_tool_guardrails_with_the_wrong_arity_are_rejected():
    def two(ctx, arguments):
        return a.ToolGuardrail.allow()

    def three(ctx, tool_name, arguments):
        return a.ToolGuardrail.allow()

    with pytest.raises(a.UserError, match=r"input_guardrails.*\(ctx, tool_name, arguments\)"):
        a.tool(input_guardrails=[two])(lambda_free)
    with pytest.raises(a.UserError, match=r"output_guardrails.*result_text"):
        a.tool(output_guardrails=[three])(lambda_free)
    assert a.tool(input_guardrails=[three])(lambda_free).input_guardrails == (three,)


def test_agent_guardrails_instructions_on_event_approver_and_filters_are_checked():
    with pytest.raises(a.UserError, match=r"input_guardrails.*\(ctx, agent, value\)"):
        a.Agent("w", "x", model(), input_guardrails=[lambda value: None])
    with pytest.raises(a.UserError, match=r"instructions.*\(ctx\) or \(ctx, agent\)"):
        a.Agent("w", lambda ctx, agent, extra: "x", model())
    with pytest.raises(a.UserError, match=r"on_event.*\(event\)"):
        a.run_sync(a.Agent("w", "x", model()), "go", on_event=lambda: None)
    with pytest.raises(a.UserError, match=r"approver.*\(pending\)"):
        RunOptions(approver=lambda ctx, pending: True)
    with pytest.raises(a.UserError, match=r"input_filter.*\(messages\)"):
        a.Handoff(a.Agent("t", "x", model()), input_filter=lambda: [])


def test_instructions_in_either_form_still_work():
    seen: list[str] = []

    def with_agent(ctx, agent) -> str:
        seen.append(agent.name)
        return "be brief"

    m = model()
    assert a.run_sync(a.Agent("w", with_agent, m), "go").ok
    assert seen == ["w"] and m.requests[0].system == "be brief"
