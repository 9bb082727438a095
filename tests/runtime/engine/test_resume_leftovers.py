"""Issue 31's leftovers: a resumed run ends as a plain run would (``stop_on_first_tool``), its
token limit counts the tokens spent before the pause, and a pause a state cannot hold is
refused when the state is written, saying what to do, not later on resume."""

from __future__ import annotations

import json
from typing import Any

import pytest

import agentnb as a

ran: list[dict[str, Any]] = []


@a.tool(needs_approval=True)
def refund(order: str, amount: int) -> str:
    """Refund an order."""
    ran.append({"order": order, "amount": amount})
    return f"refunded {amount} on {order}"


def through_json(result: a.RunResult) -> dict[str, Any]:
    assert isinstance(result.error, a.RunPaused), result.error
    return json.loads(json.dumps(result.to_state()))


# -- (a) tool_use_behavior after a resume


def stopping() -> tuple[a.Agent, a.ScriptedModel]:
    model = a.ScriptedModel([a.tool_call("refund", order="7", amount=40), a.say("never asked")])
    agent = a.Agent("support", "x", model, [refund], tool_use_behavior="stop_on_first_tool")
    return agent, model


@pytest.mark.parametrize("approved", [True, False])
def test_stop_on_first_tool_ends_a_resumed_run_at_the_tool_as_a_plain_run_does(approved):
    plain_agent, plain_model = stopping()
    plain = a.run_sync(plain_agent, "Refund order 7", approver=lambda *_: approved)
    paused_agent, _ = stopping()
    state = through_json(a.run_sync(paused_agent, "Refund order 7", approver="pause"))
    ran.clear()
    agent, model = stopping()

    result = a.run_sync(a.resume(agent, state, approved))

    assert len(plain_model.requests) == 1  # the plain run stops at the tool's result
    assert model.requests == []  # before: the model was asked again, and said "never asked"
    assert (result.ok, type(result.error)) == (plain.ok, type(plain.error))
    if approved:
        assert result.output == plain.output == "refunded 40 on 7"
        assert ran == [{"order": "7", "amount": 40}]
    else:
        assert ran == []


def test_run_llm_again_still_asks_the_model_after_a_resume():
    def asking() -> tuple[a.Agent, a.ScriptedModel]:
        agent, model = stopping()
        return agent.clone(tool_use_behavior="run_llm_again"), model

    state = through_json(a.run_sync(asking()[0], "Refund order 7", approver="pause"))
    agent, model = asking()

    result = a.run_sync(a.resume(agent, state, True))

    assert result.output == "never asked"
    assert model.requests[0].tool_results == ["refunded 40 on 7"]


# -- (b) Limits(max_tokens=...) counts the tokens spent before the pause


def reported() -> tuple[a.Agent, a.ScriptedModel]:
    """Each call reports 100 + 10 tokens (the count a token budget uses first)."""
    used = a.Usage(100, 10, 1)
    model = a.ScriptedModel(
        [
            a.ModelResponse(tool_calls=[a.tool_call("refund", order="7", amount=40)], usage=used),
            a.ModelResponse(text="Refunded.", usage=used),
        ]
    )
    return a.Agent("support", "x", model, [refund]), model


def test_the_token_limit_of_a_resumed_run_counts_the_tokens_spent_before_the_pause():
    limits = a.Limits(max_tokens=150)  # one call fits, two do not
    plain = a.run_sync(reported()[0], "Refund order 7", approver=a.approve_all, limits=limits)
    paused = a.run_sync(reported()[0], "Refund order 7", approver="pause", limits=limits)
    state = through_json(paused)
    agent, model = reported()

    result = a.run_sync(a.resume(agent, state, True, limits=limits))

    assert state["tokens_used"] == 110
    assert isinstance(plain.error, a.BudgetExceeded)
    assert isinstance(result.error, a.BudgetExceeded), result.output  # before: ok, 110 counted
    assert str(result.error) == str(plain.error)  # "220 tokens used, the limit is 150"
    assert "220 tokens used" in str(result.error)
    assert len(model.requests) == 1 and model.requests[0].tool_results == ["refunded 40 on 7"]
    roomy = a.run_sync(a.resume(reported()[0], state, True, limits=a.Limits(max_tokens=220)))
    assert roomy.ok and roomy.output == "Refunded."


def test_a_state_past_the_token_limit_is_refused_before_anything_runs():
    state = through_json(a.run_sync(reported()[0], "Refund order 7", approver="pause"))
    ran.clear()
    agent, model = reported()

    with pytest.raises(a.UserError, match=r"used 110 tokens .*max_tokens=100"):
        a.run_sync(a.resume(agent, state, True, limits=a.Limits(max_tokens=100)))
    assert ran == [] and model.requests == []


def test_the_tokens_used_are_sealed_with_the_state():
    state = through_json(a.run_sync(reported()[0], "Refund order 7", approver="pause"))
    state["tokens_used"] = 0

    with pytest.raises(a.UserError, match="tokens_used no longer match"):
        a.run_sync(a.resume(reported()[0], state, True, limits=a.Limits(max_tokens=150)))
    assert ran == [] or ran[-1] != {"order": "7", "amount": 40}


# -- (c) two parallel calls of one sub-agent that both pause


def fan_out(*tools: str) -> tuple[a.Agent, a.ScriptedModel]:
    """A lead calling sub-agent tools at once, each of whose calls pauses at a refund."""

    def support_step(request: a.ModelRequest) -> Any:
        if request.tool_results:
            return a.say("ok")
        return a.tool_call("refund", order=request.messages[0].content[-1], amount=1)

    support = a.Agent("support", "x", a.ScriptedModel(support_step), [refund])
    as_tools = [support.as_tool(name=name) for name in dict.fromkeys(tools)]
    calls = [a.tool_call(name, input=f"refund {i}") for i, name in enumerate(tools, start=7)]
    model = a.ScriptedModel([calls, a.say("lead done")])
    return a.Agent("lead", "x", model, as_tools), model


def test_two_parallel_pauses_in_one_sub_agent_are_refused_when_the_state_is_written():
    paused = a.run_sync(fan_out("support", "support")[0], "go", approver="pause")
    assert isinstance(paused.error, a.RunPaused)
    assert [i.arguments["order"] for i in paused.interruptions] == ["7", "8"]

    # before: a state was written that resume refused ("lists call call_1_0 ... twice")
    with pytest.raises(a.UserError, match=r"two calls of 'support'.*cannot be resumed.*approver="):
        paused.to_state()
    assert ran == []


def test_one_tool_per_parallel_call_pauses_and_resumes_both():
    paused = a.run_sync(fan_out("support", "support_2")[0], "go", approver="pause")
    state = through_json(paused)
    agent, model = fan_out("support", "support_2")
    ran.clear()

    result = a.run_sync(a.resume(agent, state, True))

    assert result.ok and result.output == "lead done", result.error
    assert sorted(r["order"] for r in ran) == ["7", "8"]
    assert model.requests[-1].tool_results == ["ok", "ok"]
