"""What agentnb sends is accepted by the strict servers users run locally (llama.cpp's,
vLLM, Ollama), not only by OpenAI: checked on the wire of a Chat Completions server on
127.0.0.1 that records every body (the real llama-cpp-python server is in test_local_model.py)."""

from __future__ import annotations

import uuid

import pytest
from fake_openai_server import FakeOpenAIServer, completion, error
from fake_openai_server import streamed as chat_stream

import agentnb as a
from agentnb.models import Backoff, ToolChoices
from agentnb.models.canonical import canonical_request

KEY = "sk-test-" + uuid.uuid4().hex
FAST = Backoff(initial=0.001, jitter=0.0)
LLAMA_CPP = ToolChoices(send_auto=True, required=False)


@a.tool
def lookup(term: str) -> str:
    """Look a term up in the glossary."""
    return f"{term}: a defined term"


@a.tool
def define(term: str) -> str:
    """Define a term."""
    return f"{term} means what the contract says"


def model(server: FakeOpenAIServer, **options) -> a.OpenAIModel:
    return a.OpenAIModel("fake-model", base_url=server.url, api_key=KEY, backoff=FAST, **options)


def test_a_tool_call_message_goes_with_text_content_and_is_measured_with_its_null():
    with FakeOpenAIServer(
        [completion(tool_calls=[("lookup", {"term": "SLA"})]), completion("done")]
    ) as server:
        result = a.run_sync(a.Agent("w", "Look it up.", model(server), [lookup]), "SLA?")

    assert result.ok, result.error
    sent = server.bodies[1]["messages"][2]
    assert sent["role"] == "assistant" and sent["content"] == ""
    assert sent["tool_calls"][0]["function"] == {"name": "lookup", "arguments": '{"term": "SLA"}'}
    # "characters sent" is taken from the canonical form, which keeps the null
    request = a.models.ModelRequest(
        agent="w",
        system="Look it up.",
        messages=result.messages[:3],
        tools=[lookup.spec],
    )
    assert '"content":null,"tool_calls"' in canonical_request(request)
    assert result.calls["chars_in"].iloc[1] == len(canonical_request(request))


def test_by_default_no_tool_choice_is_sent_and_required_goes_as_required():
    with FakeOpenAIServer(
        [completion(tool_calls=[("lookup", {"term": "x"})]), completion("ok")]
    ) as server:
        settings = a.ModelSettings(tool_choice="required")
        agent = a.Agent("w", "x", model(server), [lookup, define], model_settings=settings)
        result = a.run_sync(agent, "go")
    assert result.ok, result.error
    assert server.bodies[0]["tool_choice"] == "required"
    with FakeOpenAIServer([completion("ok")]) as server:
        a.run_sync(a.Agent("w", "x", model(server), [lookup]), "go")
    assert "tool_choice" not in server.bodies[0]  # OpenAI's default is "auto" already


def test_a_server_that_ignores_tools_without_a_choice_is_sent_auto_when_there_are_tools():
    script = [completion(tool_calls=[("lookup", {"term": "x"})]), completion("ok")]
    with FakeOpenAIServer(script) as server:
        agent = a.Agent("w", "x", model(server, tool_choices=LLAMA_CPP), [lookup])
        assert a.run_sync(agent, "go").ok
    assert [b["tool_choice"] for b in server.bodies] == ["auto", "auto"]
    with FakeOpenAIServer([completion("ok")]) as server:
        a.run_sync(a.Agent("w", "x", model(server, tool_choices=LLAMA_CPP)), "go")
    assert "tool_choice" not in server.bodies[0]  # no tools: nothing to choose from


def test_required_on_a_server_without_it_is_sent_as_the_one_tools_name():
    script = [completion(tool_calls=[("lookup", {"term": "x"})]), completion("ok")]
    with FakeOpenAIServer(script) as server:
        settings = a.ModelSettings(tool_choice="required")
        agent = a.Agent(
            "w", "x", model(server, tool_choices=LLAMA_CPP), [lookup], model_settings=settings
        )
        result = a.run_sync(agent, "go")
    assert result.ok, result.error
    first, second = server.bodies
    assert first["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert second["tool_choice"] == "auto"  # a forced choice holds for one turn


def test_required_with_several_tools_on_a_server_without_it_is_refused_before_any_request():
    with FakeOpenAIServer([completion("never")]) as server:
        settings = a.ModelSettings(tool_choice="required")
        agent = a.Agent(
            "w",
            "x",
            model(server, tool_choices=LLAMA_CPP),
            [lookup, define],
            model_settings=settings,
        )
        result = a.run_sync(agent, "go")
    assert not result.ok and isinstance(result.error, a.UserError)
    message = str(result.error)
    assert "tool_choice='required'" in message and "2 tools" in message
    assert "ModelSettings(tool_choice='lookup')" in message and "lookup, define" in message
    assert server.bodies == []


@pytest.mark.parametrize("streamed", [False, True], ids=["request", "stream"])
def test_a_server_refusing_required_ends_the_call_saying_what_to_use_instead(streamed):
    # llama-cpp-python's server answers "required" with HTTP 500 and an empty message
    with FakeOpenAIServer([error(500, "")]) as server:
        settings = a.ModelSettings(tool_choice="required")
        agent = a.Agent("w", "x", model(server, max_retries=0), [lookup], model_settings=settings)
        if streamed:
            result = list(a.stream_sync(agent, "go"))[-1].result
        else:
            result = a.run_sync(agent, "go")
    assert server.bodies[0]["tool_choice"] == "required"
    assert not result.ok and isinstance(result.error, a.ModelHTTPError)
    assert result.error.status == 500
    message = str(result.error)
    assert "answered HTTP 500" in message and "tool_choice='required'" in message
    assert "ModelSettings(tool_choice='lookup')" in message
    assert "ToolChoices(required=False)" in message


def test_other_failures_are_left_as_they_are():
    with FakeOpenAIServer([error(500, "out of memory")]) as server:
        agent = a.Agent("w", "x", model(server, max_retries=0), [lookup])
        result = a.run_sync(agent, "go")
    assert isinstance(result.error, a.ModelHTTPError)
    assert "out of memory" in str(result.error) and "required" not in str(result.error)


def test_tool_choices_must_be_a_tool_choices():
    with pytest.raises(a.UserError, match=r"tool_choices=.*ToolChoices"):
        a.OpenAIModel("m", base_url="http://127.0.0.1:1/v1", tool_choices="llama")  # type: ignore[arg-type]


def test_a_streamed_tool_call_turn_goes_back_with_text_content():
    script = [chat_stream(tool_calls=[("lookup", {"term": "x"})]), chat_stream("ok")]
    with FakeOpenAIServer(script) as server:
        result = list(a.stream_sync(a.Agent("w", "x", model(server), [lookup]), "go"))[-1].result
    assert result.ok, result.error
    assert server.bodies[1]["messages"][2]["content"] == ""
