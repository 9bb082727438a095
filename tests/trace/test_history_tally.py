"""A HistoryTally gives exactly the numbers of a full pass, while visiting only new messages."""

from __future__ import annotations

import random

import agentnb as a
from agentnb.models.types import Message, ModelRequest, ToolCall, ToolSpec
from agentnb.trace import tokens
from agentnb.trace.history import HistoryTally
from agentnb.trace.sizes import request_sizes
from agentnb.trace.tokens import request_tokens

SPEC = ToolSpec("lookup", "Look a key up.", {"type": "object", "properties": {}})


def grow(messages: list[Message], turn: int) -> None:
    call = ToolCall("lookup", f'{{"key":"k{turn}"}}', f"call_{turn}")
    messages.append(Message.assistant("thinking" if turn % 3 else None, (call,)))
    messages.append(Message.tool(call, f'value {turn} "quoted"\n'))


def test_tallied_sizes_and_tokens_equal_a_full_pass_on_every_turn(word_tokenizer):
    tally = HistoryTally()
    messages = [Message.user("Find every key.")]
    for turn in range(1, 30):
        request = ModelRequest("system", list(messages), [SPEC])
        assert request_sizes(request, tally) == request_sizes(request)
        assert request_tokens(request, tally) == request_tokens(request)
        grow(messages, turn)


def test_the_tally_visits_only_new_messages(word_tokenizer):
    tally = HistoryTally()
    messages = [Message.user("Find every key.")]
    for turn in range(1, 20):
        request_tokens(ModelRequest("system", list(messages), [SPEC]), tally)
        grow(messages, turn)
    word_tokenizer.clear()
    for message in messages:  # forget every cached count: a full pass would recount them all
        message.tokens_cache = None
    tokens._text_tokens.clear()  # and the counts kept by text
    request_tokens(ModelRequest("system", list(messages), [SPEC]), tally)
    # only the two messages appended after the last request were counted, not the 37 before
    assert word_tokenizer == ["thinking", '{"key":"k19"}', 'value 19 "quoted"\n']


def test_a_replaced_history_is_recounted_not_trusted():
    rng = random.Random(7)
    tally = HistoryTally()
    messages = [Message.user("first task")]
    for turn in range(1, 6):
        grow(messages, turn)
    request_sizes(ModelRequest("s", list(messages)), tally)
    for _ in range(20):  # histories that are not extensions of the last one
        kept = rng.sample(messages, rng.randint(1, len(messages)))
        other = [Message.user("another task"), *kept]
        request = ModelRequest("s", other)
        assert request_sizes(request, tally) == request_sizes(request)


def test_a_run_with_a_re_ask_and_a_handoff_reports_full_pass_numbers():
    from pydantic import BaseModel

    class Answer(BaseModel):
        value: int

    desk_model = a.ScriptedModel([a.say("not json"), a.say('{"value": 3}')])
    desk = a.Agent("desk", "Answer with JSON.", desk_model, output_type=Answer)
    triage_model = a.ScriptedModel([a.tool_call("transfer_to_desk")])
    triage = a.Agent("triage", "Route.", triage_model, handoffs=[desk])
    result = a.run_sync(triage, "What is 1+2?")

    assert result.ok, result.error
    assert result.output == Answer(value=3) and result.last_agent is desk
    assert len(desk_model.requests) == 2  # the re-ask
    received = [*triage_model.requests, *desk_model.requests]
    assert list(result.calls["chars_in"]) == [request_sizes(r)["total"] for r in received]
