"""`Message.to_json` / `Message.from_json` (and for lists): every kind of message round-trips."""

from __future__ import annotations

import json

import pytest

import agentnb
from agentnb import Agent, Message, ScriptedModel, say, tool_call
from agentnb.errors import UserError
from agentnb.models.types import ToolCall

EVERY_KIND = [
    Message.user("What is 2+3?"),
    Message.assistant("Let me add.", (ToolCall("add", '{"a": 2, "b": 3}', "call_1"),)),
    Message.tool(ToolCall("add", "{}", "call_1"), "5"),
    Message.assistant(
        "It is 5.",
        (),
        (
            {"event": "reasoning", "id": "rs_1", "summary": "added the numbers"},
            {
                "event": "hosted_tool",
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
            },
        ),
    ),
    Message("user", "Your answer could not be read as int", generated=True),
    Message.assistant(None, (ToolCall("a", "{}", "c2"), ToolCall("b", '{"x": "é"}', "c3"))),
]


def test_every_kind_of_message_round_trips_through_json_text():
    text = json.dumps(agentnb.messages_to_json(EVERY_KIND))
    back = agentnb.messages_from_json(text)
    assert back == EVERY_KIND
    # the fields equality does not compare are kept too
    assert [m.items for m in back] == [m.items for m in EVERY_KIND]
    assert [m.generated for m in back] == [m.generated for m in EVERY_KIND]
    assert [Message.from_json(m.to_json()).to_json() for m in EVERY_KIND] == [
        m.to_json() for m in EVERY_KIND
    ]


def test_a_conversation_continues_from_its_json_form_and_the_model_receives_it_all():
    model = ScriptedModel([tool_call("add", a=2, b=3), say("5"), say("10")])

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    agent = Agent("calc", model=model, tools=[add])
    first = agentnb.run_sync(agent, "2+3?")
    saved = json.dumps(agentnb.messages_to_json(first.to_input_list()))
    history = agentnb.messages_from_json(saved)
    second = agentnb.run_sync(agent, [*history, Message.user("and doubled?")])
    assert second.ok and second.output == "10"
    sent = model.requests[-1].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert json.loads(sent[1].tool_calls[0].arguments) == {"a": 2, "b": 3}
    assert sent[2].content == "5"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("not json", "not JSON"),
        ({"content": "no role"}, "takes a dict"),
        ({"role": "user", "colour": "red"}, "unknown field"),
        ({"role": "robot"}, "must be 'user'"),
        ({"role": "assistant", "tool_calls": [{"arguments": "{}"}]}, "tool_calls must be"),
    ],
)
def test_bad_json_is_a_user_error_saying_what_is_wrong(given, said):
    with pytest.raises(UserError, match=said):
        Message.from_json(given)
