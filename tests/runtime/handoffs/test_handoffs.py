"""LLM-routed handoffs: transfer_to_<name> tools, what each HandoffConfig forwards, filters."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

import agentnb as a
from agentnb.models.types import Message
from agentnb.runtime.engine.runner import REASK_PREFIX

REQUEST = "Please refund order A-17, it arrived broken."
CONVERSATION = [
    Message.user("Hello"),
    Message.assistant("Hi, how can I help?"),
    Message.user(REQUEST),
]


@a.tool
def lookup_order(order_id: str) -> str:
    """Look an order up by its id."""
    return f"{order_id}: paid 40 EUR, delivered"


def specialist(name: str, answer: str) -> a.Agent:
    return a.Agent(name, f"You handle {name.lower()} requests.", a.ScriptedModel([answer]))


async def test_triage_is_asked_once_and_the_target_answers_the_user():
    refunds = specialist("Refunds", "Refund started for A-17.")
    billing = specialist("Billing", "unused")
    triage_model = a.ScriptedModel([a.tool_call("transfer_to_refunds")])
    triage = a.Agent(
        "Triage",
        "Route the request.",
        triage_model,
        handoffs=[
            a.Handoff(refunds, description="Refunds and returns."),
            billing,
        ],
    )
    result = await a.run(triage, REQUEST)

    assert result.ok and result.output == "Refund started for A-17."
    assert result.last_agent is refunds
    assert len(triage_model.requests) == 1
    assert [t.name for t in triage_model.requests[0].tools] == [
        "transfer_to_refunds",
        "transfer_to_billing",
    ]
    assert triage_model.requests[0].tools[0].description == "Refunds and returns."
    received = refunds.model.requests[0].messages  # type: ignore[union-attr]
    assert received[0] == Message.user(REQUEST)
    assert billing.model.requests == []  # type: ignore[union-attr]
    events = [json.loads(line) for line in result.log_lines()]
    assert [e["agent"] for e in events if e["event"] == "handoff"] == ["Refunds"]
    assert list(result.calls["agent"]) == ["Triage", "Refunds"]


async def forwarded(
    handoff_options: dict, script: list | None = None
) -> tuple[list[Message], a.RunResult]:
    """Run Triage (one lookup, then a transfer) on CONVERSATION; what Refunds first received."""
    refunds = specialist("Refunds", "Done.")
    triage_model = a.ScriptedModel(
        script or [a.tool_call("lookup_order", order_id="A-17"), a.tool_call("transfer_to_refunds")]
    )
    triage = a.Agent(
        "Triage",
        "Route.",
        triage_model,
        tools=[lookup_order],
        handoffs=[a.Handoff(refunds, **handoff_options)],
    )
    result = await a.run(triage, list(CONVERSATION))
    assert result.ok and result.last_agent is refunds
    return refunds.model.requests[0].messages, result  # type: ignore[union-attr]


def shape(messages: list[Message]) -> list[str]:
    return [
        m.role + ("(" + ",".join(c.name for c in m.tool_calls) + ")" if m.tool_calls else "")
        for m in messages
    ]


async def test_full_forwards_the_whole_conversation_with_the_transfer_settled():
    messages, result = await forwarded({})
    assert shape(messages) == [
        "user",
        "assistant",
        "user",
        "assistant(lookup_order)",
        "tool",
        "assistant(transfer_to_refunds)",
        "tool",
    ]
    assert messages[4].content == "A-17: paid 40 EUR, delivered"
    assert messages[-1].content == "Transferred to Refunds."
    event = next(json.loads(x) for x in result.log_lines() if '"handoff_context"' in x)
    assert (event["strategy"], event["available"], event["forwarded"]) == ("full", 7, 7)


async def test_last_n_forwards_a_window_without_orphan_tool_results():
    messages, _ = await forwarded({"config": a.HandoffConfig(strategy="last_n", window=5)})
    assert shape(messages) == [
        "user",
        "assistant(lookup_order)",
        "tool",
        "assistant(transfer_to_refunds)",
        "tool",
    ]
    messages, _ = await forwarded({"config": a.HandoffConfig(strategy="last_n", window=3)})
    assert shape(messages) == [
        "user",
        "assistant(transfer_to_refunds)",
        "tool",
    ]  # the cut-off result dropped
    assert messages[0] == Message.user(REQUEST)


async def test_last_n_puts_back_the_users_request_when_the_window_cuts_it():
    messages, result = await forwarded({"config": a.HandoffConfig(strategy="last_n", window=4)})
    assert messages[0] == Message.user(REQUEST)  # the window alone starts at the lookup
    assert shape(messages)[1:] == [
        "assistant(lookup_order)",
        "tool",
        "assistant(transfer_to_refunds)",
        "tool",
    ]
    event = next(json.loads(x) for x in result.log_lines() if '"handoff_context"' in x)
    assert (event["available"], event["forwarded"]) == (7, 5)
    # only the newest request comes back, never the greeting before it
    assert Message.user("Hello") not in messages


def test_last_n_does_not_repeat_a_request_inside_the_window_nor_bring_back_a_reask():
    reask = Message("user", REASK_PREFIX + " the answer was not valid JSON.", generated=True)
    history = [*CONVERSATION, Message.assistant("not json"), reask, Message.assistant("{}")]
    handoff = a.Handoff(
        specialist("Refunds", "unused"), config=a.HandoffConfig(strategy="last_n", window=2)
    )
    assert handoff.forward(history) == [Message.user(REQUEST), reask, Message.assistant("{}")]
    handoff = a.Handoff(
        specialist("Refunds", "unused"), config=a.HandoffConfig(strategy="last_n", window=4)
    )
    assert handoff.forward(history) == history[-4:]  # the request is already in the window


def test_the_users_message_is_known_by_its_mark_not_by_its_words():
    own = Message.user(REASK_PREFIX + " my parcel, it never came.")  # the user's own words
    history = [own, Message.assistant("looking"), Message.assistant("{}")]
    handoff = a.Handoff(
        specialist("Refunds", "unused"), config=a.HandoffConfig(strategy="last_n", window=1)
    )
    assert handoff.forward(history) == [own, Message.assistant("{}")]


class RefundRequest(BaseModel):
    order_id: str
    reason: str


async def test_intent_only_forwards_the_users_message_and_the_typed_intent():
    messages, _ = await forwarded({"config": a.HandoffConfig(strategy="intent_only")})
    assert messages == [Message.user(REQUEST)]

    script = [a.tool_call("transfer_to_refunds", order_id="A-17", reason="broken")]
    messages, result = await forwarded(
        {"config": a.HandoffConfig(strategy="intent_only"), "input_type": RefundRequest}, script
    )
    assert len(messages) == 1
    assert messages[0].content == (
        f'{REQUEST}\n\nTriage passed this on as RefundRequest: {{"order_id":"A-17","reason":"broken"}}'
    )
    event = next(json.loads(x) for x in result.log_lines() if '"handoff_context"' in x)
    assert event["intent"] == {"order_id": "A-17", "reason": "broken"}


async def test_an_intent_that_fails_its_schema_goes_back_to_the_source_model():
    refunds = specialist("Refunds", "unused")
    triage_model = a.ScriptedModel(
        [a.tool_call("transfer_to_refunds", order_id="A-17"), "I could not transfer you."]
    )
    triage = a.Agent(
        "Triage", "Route.", triage_model, handoffs=[a.Handoff(refunds, input_type=RefundRequest)]
    )
    result = await a.run(triage, REQUEST)
    assert result.last_agent is triage and result.output == "I could not transfer you."
    assert "reason: Field required" in triage_model.requests[1].tool_results[0]
    assert refunds.model.requests == []  # type: ignore[union-attr]
    params = triage_model.requests[0].tools[0].parameters
    assert set(params["properties"]) == {"order_id", "reason"}


async def test_a_token_budget_drops_the_oldest_messages(word_tokenizer):
    full, _ = await forwarded({})
    messages, result = await forwarded({"config": a.HandoffConfig(budget=12)})
    assert 0 < len(messages) < len(full)
    assert messages == full[len(full) - len(messages) :]  # a suffix of the full history
    assert messages[0].role != "tool"
    event = next(json.loads(x) for x in result.log_lines() if '"handoff_context"' in x)
    assert event["tokens"] <= 12 and event["tokens_method"] == "words"


async def test_without_a_tokenizer_the_budget_is_an_estimate_and_says_so():
    _, result = await forwarded({"config": a.HandoffConfig(budget=20)})
    event = next(json.loads(x) for x in result.log_lines() if '"handoff_context"' in x)
    assert event["tokens_method"] == "estimate: characters/4"


async def test_filters_trim_what_is_forwarded():
    messages, _ = await forwarded({"input_filter": a.filters.remove_tool_calls})
    assert messages == CONVERSATION
    both = a.filters.compose(a.filters.remove_tool_calls, a.filters.keep_last_n(1))
    messages, _ = await forwarded({"input_filter": both})
    assert messages == [Message.user(REQUEST)]
    with pytest.raises(a.UserError, match="keep_last_n"):
        a.filters.compose(a.filters.keep_last_n)(CONVERSATION)  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="positive integer"):
        a.filters.keep_last_n(0)


async def test_handing_control_back_is_refused_as_a_cycle():
    first = a.Agent("First", "x", a.ScriptedModel([a.tool_call("transfer_to_second")]))
    second_model = a.ScriptedModel([a.tool_call("transfer_to_first"), "I answer myself."])
    second = a.Agent("Second", "x", second_model, handoffs=[first])
    first.handoffs = [second]
    result = await a.run(first, "hi")

    assert result.ok and result.last_agent is second and result.output == "I answer myself."
    refusal = second_model.requests[1].tool_results[-1]
    assert refusal.startswith("ERROR: First already had control in this run (First -> Second)")
    assert len(first.model.requests) == 1  # type: ignore[union-attr]


def test_handoff_config_mistakes_are_user_errors():
    with pytest.raises(a.UserError, match="not a strategy"):
        a.HandoffConfig(strategy="everything")  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="only applies to strategy='last_n'"):
        a.HandoffConfig(window=3)
    with pytest.raises(a.UserError, match="budget"):
        a.HandoffConfig(budget=0)
    with pytest.raises(a.UserError, match="must be an Agent"):
        a.Handoff("refunds")  # type: ignore[arg-type]
