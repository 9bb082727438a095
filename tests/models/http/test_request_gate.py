"""``agentnb.models.ALLOW_MODEL_REQUESTS = False`` and ``AGENTNB_ALLOW_MODEL_REQUESTS=0``: a
request to a real endpoint is refused before it leaves (the server on 127.0.0.1 receives
nothing), in an error that names the switch; offline models go on working."""

from __future__ import annotations

import pytest
from fake_anthropic_server import FakeAnthropicServer, message, text
from fake_openai_server import FakeOpenAIServer, completion

import agentnb as a
import agentnb.models
from agentnb.models import Backoff
from agentnb.models.http.gate import ENVIRONMENT, requests_allowed

FAST = Backoff(initial=0.001, jitter=0.0)


@pytest.fixture
def forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agentnb.models, "ALLOW_MODEL_REQUESTS", False)


def test_requests_are_allowed_by_default() -> None:
    assert agentnb.models.ALLOW_MODEL_REQUESTS is True
    assert requests_allowed()


def test_a_forbidden_request_ends_the_run_naming_the_switch_and_nothing_is_sent(forbidden):
    with FakeOpenAIServer([completion("should never be read")]) as server:
        model = a.OpenAIModel("fake-model", base_url=server.url, api_key="sk-x", backoff=FAST)
        result = a.run_sync(a.Agent("bot", "Answer.", model), "hi")
        assert server.bodies == []  # refused before it left the process
    assert not result.ok
    assert isinstance(result.error, a.UserError)
    assert "agentnb.models.ALLOW_MODEL_REQUESTS = False" in str(result.error)
    assert ENVIRONMENT in str(result.error)
    assert "fake-model" in str(result.error)
    assert len(result.calls) == 1 and result.calls["status"][0] == "error"


def test_a_forbidden_stream_is_refused_too(forbidden):
    with FakeOpenAIServer([completion("never")]) as server:
        model = a.OpenAIModel("fake-model", base_url=server.url, api_key="sk-x", backoff=FAST)
        result = a.run_sync(a.Agent("bot", "Answer.", model), "hi", on_event=lambda e: None)
        assert server.bodies == []
    assert not result.ok and "ALLOW_MODEL_REQUESTS" in str(result.error)


def test_the_environment_variable_forbids_requests_of_every_http_adapter(monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, "0")
    with FakeAnthropicServer([message(text("never"))]) as server:
        model = a.AnthropicModel("claude-test", base_url=server.url, api_key="k", backoff=FAST)
        result = a.run_sync(a.Agent("bot", "Answer.", model), "hi")
        assert server.bodies == []
    assert not result.ok and ENVIRONMENT in str(result.error)


def test_a_sub_agents_forbidden_request_ends_the_run_rather_than_becoming_text(forbidden):
    with FakeOpenAIServer([completion("never")]) as server:
        remote = a.OpenAIModel("fake-model", base_url=server.url, api_key="sk-x", backoff=FAST)
        sub = a.Agent("sub", "Answer.", remote)
        boss_model = a.ScriptedModel([a.tool_call("sub", input="go"), a.say("done")])
        result = a.run_sync(a.Agent("boss", "Delegate.", boss_model, [sub]), "hi")
        assert server.bodies == []
    assert not result.ok and "ALLOW_MODEL_REQUESTS" in str(result.error)
    assert len(boss_model.requests) == 1  # the boss was never told an error it could ignore


def test_offline_models_are_not_affected(forbidden, monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, "off")
    model = a.ScriptedModel([a.say("fine")])
    result = a.run_sync(a.Agent("bot", "Answer.", model), "hi")
    assert result.ok and result.output == "fine"


def test_allowing_again_lets_the_request_through(monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, "1")
    with FakeOpenAIServer([completion("hello")]) as server:
        model = a.OpenAIModel("fake-model", base_url=server.url, api_key="sk-x", backoff=FAST)
        result = a.run_sync(a.Agent("bot", "Answer.", model), "hi")
        assert len(server.bodies) == 1
    assert result.ok and result.output == "hello"
