"""Continuing a conversation (to_input_list, last_agent) and handoffs=HandoffRoute(...)."""

from __future__ import annotations

from typing import Literal

import pytest

import agentnb as a


def test_to_input_list_continues_the_conversation_with_the_last_agent():
    @a.tool
    def lookup(term: str) -> str:
        """Look up."""
        return "found"

    model = a.ScriptedModel([a.tool_call("lookup", term="x"), a.say("first"), a.say("second")])
    agent = a.Agent("w", "x", model, [lookup])
    first = a.run_sync(agent, "one")

    history = first.to_input_list()
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]
    second = a.run_sync(first.last_agent, history + [a.Message.user("two")])

    assert second.output == "second"
    sent = model.requests[2].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[-1].content == "two" and sent[3].content == "first"


def test_after_a_handoff_the_last_agent_is_the_target():
    target = a.Agent("target", "x", a.ScriptedModel([a.say("from target")]))
    source = a.Agent(
        "src", "x", a.ScriptedModel([a.tool_call("transfer_to_target")]), handoffs=[target]
    )
    result = a.run_sync(source, "hi")
    assert result.last_agent is target
    assert result.to_input_list()[-1].content == "from target"


class Refund(a.Intent):
    kind: Literal["refund"] = "refund"
    amount: int


def test_handoffs_as_a_handoff_route_works_like_route():
    refunds_model = a.ScriptedModel([a.say("refunded")])
    refunds = a.Agent("refunds", "x", refunds_model)
    route = a.HandoffRoute("support").when(Refund).to(refunds)
    triage_model = a.ScriptedModel([a.say('{"response": {"kind": "refund", "amount": 5}}')])
    triage = a.Agent("triage", "Classify.", triage_model, handoffs=route)

    assert triage.routing() is route and triage.handoff_list() == []
    assert triage.handoffs is route and triage.output_type is None  # the agent keeps its fields
    result = a.run_sync(triage, "refund me")
    assert result.ok and result.output == "refunded" and result.last_agent is refunds
    assert "Refund" in (refunds_model.requests[0].last_user_text)


def test_a_list_mixing_handoffs_and_a_route_is_refused():
    other = a.Agent("other", "x", a.ScriptedModel([]))
    route = a.HandoffRoute("r").when(Refund).to(other)
    with pytest.raises(a.UserError, match="mixes a HandoffRoute with other handoffs"):
        a.Agent("t", "x", a.ScriptedModel([]), handoffs=[other, route])
