"""Code-routed handoffs: the triage model classifies once, Python routes (zero routing tokens)."""

from __future__ import annotations

import json
from typing import Literal, Optional, Union

import pytest

import agentnb as a
from agentnb.models.types import Message

REQUEST = "Please refund order A-17."


class RefundIntent(a.Intent):
    kind: Literal["refund"] = "refund"
    order_id: Optional[str] = None  # noqa: UP045


class PaymentFailedIntent(RefundIntent):
    card_declined: bool = True


class BillingIntent(a.Intent):
    kind: Literal["billing"] = "billing"


class CancelIntent(a.Intent):
    kind: Literal["cancel"] = "cancel"


class ComplaintIntent(a.Intent):
    kind: Literal["complaint"] = "complaint"


def agent(name: str, *steps: object) -> a.Agent:
    return a.Agent(name, f"You are {name}.", a.ScriptedModel(list(steps)))


def support(triage_reply: object, **triage_options: object):
    refunds, billing, general = (
        agent("Refunds", "Refund done."),
        agent("Billing", "Billed."),
        agent("General", "Noted."),
    )
    route = (
        a.HandoffRoute("support")
        .when(RefundIntent)
        .to(refunds)
        .when(BillingIntent, CancelIntent)
        .to(billing)
        .otherwise(general)
    )
    triage = a.Agent(
        "Triage",
        "Classify the request.",
        a.ScriptedModel([a.say(triage_reply)]),
        route=route,
        **triage_options,
    )
    return triage, refunds, billing, general


def requests(*agents: a.Agent) -> list[int]:
    return [len(x.model.requests) for x in agents]  # type: ignore[union-attr]


async def test_an_intent_is_routed_in_python_without_another_model_call():
    triage, refunds, billing, general = support({"kind": "refund", "order_id": "A-17"})
    result = await a.run(triage, REQUEST)

    assert result.ok and result.output == "Refund done." and result.last_agent is refunds
    assert requests(triage, refunds, billing, general) == [1, 1, 0, 0]
    asked = triage.model.requests[0]  # type: ignore[union-attr]
    assert asked.tools == []  # no transfer_to_* specs: zero routing tokens
    assert asked.output_schema is not None  # the union Respond | intents
    received = refunds.model.requests[0].messages  # type: ignore[union-attr]
    assert received == [
        Message.user(
            f'{REQUEST}\n\nTriage passed this on as RefundIntent: {{"kind":"refund","order_id":"A-17"}}'
        )
    ]
    assert list(result.calls["agent"]) == ["Triage", "Refunds"]
    handoffs = [json.loads(x) for x in result.log_lines() if '"handoff"' in x]
    assert [(h["source"], h["agent"], h["routing"]) for h in handoffs] == [
        ("Triage", "Refunds", "code")
    ]


async def test_the_schema_tells_the_model_what_respond_is_in_plain_words():
    triage, *_ = support({"message": "We open at 9."})
    await a.run(triage, "When do you open?")
    schema = triage.model.requests[0].output_schema.schema  # type: ignore[union-attr]
    respond = schema["$defs"]["Respond"]
    assert respond["description"] == (
        "Reply to the user yourself, without handing the request over to another agent."
    )
    assert respond["properties"] == {"message": {"type": "string"}}
    assert "``" not in json.dumps(schema)  # no reST markup for the model to read


async def test_several_intents_share_a_target_and_respond_is_a_direct_answer():
    triage, refunds, billing, general = support({"kind": "cancel"})
    result = await a.run(triage, "Cancel my plan.")
    assert result.last_agent is billing and requests(triage, refunds, billing, general) == [
        1,
        0,
        1,
        0,
    ]

    triage, refunds, billing, general = support({"message": "We open at 9."})
    result = await a.run(triage, "When do you open?")
    assert result.output == "We open at 9." and result.last_agent is triage
    assert requests(triage, refunds, billing, general) == [1, 0, 0, 0]


async def test_an_intent_without_a_rule_goes_to_otherwise():
    union = Union[a.Respond, RefundIntent, BillingIntent, CancelIntent, ComplaintIntent]  # noqa: UP007
    triage, refunds, billing, general = support({"kind": "complaint"}, output_type=union)
    result = await a.run(triage, "The courier was rude.")
    assert result.last_agent is general and requests(triage, refunds, billing, general) == [
        1,
        0,
        0,
        1,
    ]


async def test_an_intent_without_a_rule_and_no_fallback_ends_the_run_with_a_clear_error():
    refunds = agent("Refunds", "x")
    route = a.HandoffRoute("narrow").when(RefundIntent).to(refunds)
    union = Union[a.Respond, RefundIntent, ComplaintIntent]  # noqa: UP007
    triage = a.Agent(
        "Triage",
        "x",
        a.ScriptedModel([a.say({"kind": "complaint"})]),
        output_type=union,
        route=route,
    )
    result = await a.run(triage, "The courier was rude.")
    assert not result.ok and isinstance(result.error, a.UserError)
    assert "no rule for ComplaintIntent" in str(result.error)


async def test_a_more_specific_intent_must_come_before_its_parent():
    refunds, payments = agent("Refunds", "Refund done."), agent("Payments", "Card checked.")
    with pytest.raises(
        a.UserError, match="PaymentFailedIntent is registered after its parent RefundIntent"
    ):
        a.HandoffRoute("r").when(RefundIntent).to(refunds).when(PaymentFailedIntent)

    route = (
        a.HandoffRoute("r").when(PaymentFailedIntent).to(payments).when(RefundIntent).to(refunds)
    )
    triage = a.Agent(
        "Triage",
        "x",
        a.ScriptedModel([a.say({"kind": "refund", "card_declined": True})]),
        route=route,
    )
    result = await a.run(triage, "My card was declined.")
    assert result.last_agent is payments


def test_route_mistakes_are_user_errors_and_targets_are_listed():
    refunds, billing = agent("Refunds", "x"), agent("Billing", "x")
    with pytest.raises(a.UserError, match="Respond is the direct answer"):
        a.HandoffRoute("r").when(a.Respond)  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="subclasses of agentnb.Intent"):
        a.HandoffRoute("r").when(str)  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="registered twice"):
        a.HandoffRoute("r").when(BillingIntent).to(billing).when(BillingIntent)
    unfinished = a.HandoffRoute("r").when(BillingIntent).to(billing)
    unfinished.when(CancelIntent)  # .to(...) forgotten
    with pytest.raises(a.UserError, match=r"when\(CancelIntent\) has no \.to\(agent\)"):
        a.Agent("Triage", "x", a.ScriptedModel([]), route=unfinished)

    route = (
        a.HandoffRoute("r")
        .when(RefundIntent)
        .to(refunds)
        .when(BillingIntent, CancelIntent)
        .to(billing)
    )
    assert route.targets() == [refunds, billing]
    triage = a.Agent("Triage", "x", a.ScriptedModel([]), route=route)
    graph = triage.graph()
    assert [(h["agent"], h.get("routed")) for h in graph["handoffs"]] == [
        ("Refunds", True),
        ("Billing", True),
    ]
