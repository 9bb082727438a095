"""Finer streaming: a message-level event, tool-call argument deltas (scripted models and both
adapters), and a structured answer streamed as validated partial objects, never wrapped."""

from __future__ import annotations

import uuid

import pytest
from fake_anthropic_server import FakeAnthropicServer, text, tool_use
from fake_anthropic_server import streamed as claude_stream
from fake_openai_server import FakeOpenAIServer
from fake_openai_server import streamed as chat_stream
from pydantic import BaseModel

import agentnb as a
from agentnb.models import Backoff

KEY = "sk-test-" + uuid.uuid4().hex
FAST = Backoff(initial=0.001, jitter=0.0)


@a.tool
def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def of(kind: type, events: list) -> list:
    return [e for e in events if isinstance(e, kind)]


def test_text_sent_alongside_a_tool_call_is_one_message_event():
    def reply(request: a.ModelRequest) -> a.ModelResponse:
        if request.tool_results:
            return a.ModelResponse(text="It is 5.")
        call = a.ToolCall("add", '{"x": 2, "y": 3}')
        return a.ModelResponse(text="Let me add them.", tool_calls=[call])

    events = list(a.stream_sync(a.Agent("calc", "x", a.FunctionModel(reply), [add]), "2+3?"))

    messages = [(e.text, e.tool_calls) for e in of(a.MessageOutput, events)]
    assert messages == [("Let me add them.", ("add",)), ("It is 5.", ())]
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("MessageOutput") < kinds.index("ToolCallStarted")  # the message first
    (delta,) = of(a.ToolCallDelta, events)  # a model that does not stream: each call whole
    assert (delta.index, delta.name, delta.arguments) == (0, "add", '{"x": 2, "y": 3}')


def test_openai_streams_tool_call_arguments_as_deltas():
    pieces = [chat_stream(tool_calls=[("add", {"x": 2, "y": 3})]), chat_stream("5.")]
    with FakeOpenAIServer(pieces) as server:
        model = a.OpenAIModel("fake-model", base_url=server.url, api_key=KEY, backoff=FAST)
        events = list(a.stream_sync(a.Agent("calc", "x", model, [add]), "2+3?"))

    deltas = of(a.ToolCallDelta, events)
    assert len(deltas) > 2  # the arguments arrived in pieces
    assert (deltas[0].name, deltas[0].call_id) == ("add", "call_0")
    assert "".join(d.arguments for d in deltas) == '{"x": 2, "y": 3}'
    (started,) = of(a.ToolCallStarted, events)
    assert started.arguments == '{"x": 2, "y": 3}'
    assert server.bodies[1]["messages"][-1]["content"] == "5"


def test_anthropic_streams_tool_call_arguments_as_deltas():
    pytest.importorskip("anthropic")
    pieces = [
        claude_stream(tool_use("toolu_1", "add", x=2, y=3), stop_reason="tool_use"),
        claude_stream(text("5.")),
    ]
    with FakeAnthropicServer(pieces) as server:
        model = a.AnthropicModel("claude-test", base_url=server.url, api_key=KEY, backoff=FAST)
        events = list(a.stream_sync(a.Agent("calc", "x", model, [add]), "2+3?"))

    deltas = of(a.ToolCallDelta, events)
    assert len(deltas) > 2 and deltas[0].name == "add"
    assert "".join(d.arguments for d in deltas) == '{"x": 2, "y": 3}'
    assert events[-1].result.ok and events[-1].result.output == "5."


def test_a_wrapped_structured_answer_streams_without_its_wrapper_and_as_partial_lists():
    model = a.ScriptedModel([a.say('{"response": [1, 22, 333]}')], chunk_chars=5)
    agent = a.Agent("counter", "x", model, output_type=list[int])

    events = list(a.stream_sync(agent, "count"))

    shown = "".join(e.text for e in of(a.TextDelta, events))
    assert shown == "[1, 22, 333]"
    assert "response" not in shown
    partials = [e.output for e in of(a.PartialOutput, events)]
    assert partials[-1] == [1, 22, 333]
    assert all(isinstance(p, list) for p in partials) and len(partials) >= 3
    assert [e.text for e in of(a.MessageOutput, events)] == ["[1, 22, 333]"]
    assert events[-1].result.output == [1, 22, 333]
    assert model.requests[0].output_schema is not None  # the model was asked for the wrapper


class Review(BaseModel):
    verdict: str
    risks: list[str]


async def test_a_model_answer_streams_as_partial_objects_once_its_fields_are_there():
    answer = '{"verdict": "risky", "risks": ["unlimited liability", "no cap"]}'
    model = a.ScriptedModel([a.say(answer)], chunk_chars=9)
    agent = a.Agent("reviewer", "x", model, output_type=Review)

    events = [e async for e in a.run_streamed(agent, "review")]

    partials = [e.output for e in of(a.PartialOutput, events)]
    assert all(isinstance(p, Review) for p in partials)
    assert partials[-1] == Review(verdict="risky", risks=["unlimited liability", "no cap"])
    assert len(partials) >= 2  # seen growing, not only at the end
    assert "".join(e.text for e in of(a.TextDelta, events)) == answer  # an object: unwrapped
