"""ModelSettings, per-run defaults, tool_use_behavior and run(model=...), on scripted models
and through the OpenAI and Anthropic clients against servers on 127.0.0.1."""

from __future__ import annotations

import uuid

import pytest
from fake_anthropic_server import FakeAnthropicServer, message, text, tool_use
from fake_openai_server import FakeOpenAIServer, completion

import agentnb as a
from agentnb.models import Backoff

WARM = a.ModelSettings(temperature=0.7, seed=1)


@a.tool
def lookup(term: str) -> str:
    """Look a term up."""
    return f"{term}: defined"


@a.tool
def note(text: str) -> str:
    """Write a note."""
    return "noted"


def test_an_agents_settings_reach_the_model_and_the_run_overrides_them_field_by_field():
    model = a.ScriptedModel([a.say("ok")])
    agent = a.Agent("w", "x", model, model_settings=a.ModelSettings(temperature=0.2, top_p=0.9))

    result = a.run_sync(agent, "go", model_settings=a.ModelSettings(temperature=0.0, seed=7))

    assert result.ok
    assert model.requests[0].settings == a.ModelSettings(temperature=0.0, top_p=0.9, seed=7)


def test_an_agent_without_settings_sends_none():
    model = a.ScriptedModel([a.say("ok")])
    a.run_sync(a.Agent("w", "x", model), "go")
    assert model.requests[0].settings is None


def test_run_settings_reach_sub_agents_and_handoff_targets():
    sub_model = a.ScriptedModel([a.say("sub says")])
    sub = a.Agent("sub", "x", sub_model, model_settings=a.ModelSettings(top_p=0.5))
    target_model = a.ScriptedModel([a.say("target says")])
    target = a.Agent("target", "x", target_model)
    boss_model = a.ScriptedModel(
        [a.tool_call("sub", input="do"), a.tool_call("transfer_to_target"), a.say("unused")]
    )
    boss = a.Agent("boss", "x", boss_model, [sub.as_tool()], handoffs=[target])

    result = a.run_sync(boss, "go", model_settings=WARM)

    assert result.ok and result.output == "target says"
    assert boss_model.requests[0].settings == WARM
    assert sub_model.requests[0].settings == a.ModelSettings(temperature=0.7, top_p=0.5, seed=1)
    assert target_model.requests[0].settings == WARM


def test_a_forced_tool_choice_goes_back_to_auto_after_the_tool_call():
    model = a.ScriptedModel([a.tool_call("lookup", term="x"), a.say("done")])
    agent = a.Agent("w", "x", model, [lookup], model_settings=a.ModelSettings(tool_choice="lookup"))

    result = a.run_sync(agent, "go")

    assert result.ok
    assert [r.settings.tool_choice for r in model.requests if r.settings] == ["lookup", "auto"]


def test_settings_are_checked_at_construction():
    with pytest.raises(a.UserError, match=r"ModelSettings\(temperature=...\) must be a number"):
        a.ModelSettings(temperature="hot")  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="model_settings must be agentnb.ModelSettings"):
        a.Agent("w", "x", a.ScriptedModel([]), model_settings={"temperature": 1})
    with pytest.raises(a.UserError, match="run\\(model_settings=...\\)"):
        a.run_sync(a.Agent("w", "x", a.ScriptedModel([])), "go", model_settings=3)
    assert a.ModelSettings(stop="END").stop == ("END",)


@pytest.mark.parametrize(
    ("behavior", "expected"),
    [("stop_on_first_tool", "lookup-result"), (a.StopAtTools("note"), "noted")],
)
def test_a_stop_behaviour_makes_a_tools_result_the_output(behavior, expected):
    @a.tool(name="lookup")
    def lookup_(term: str) -> str:
        """Look a term up."""
        return "lookup-result"

    model = a.ScriptedModel(
        [a.tool_call("lookup", term="x"), a.tool_call("note", text="y"), a.say("never")]
    )
    agent = a.Agent("w", "x", model, [lookup_, note], tool_use_behavior=behavior)

    result = a.run_sync(agent, "go")

    assert result.ok and result.output == expected
    assert len(model.requests) == (1 if behavior == "stop_on_first_tool" else 2)


def _fails(x: str) -> str:
    """Always fails."""
    raise RuntimeError("the database is down")


@pytest.mark.parametrize(
    "behavior", ["stop_on_first_tool", a.StopAtTools("fails"), a.StopAtTools("nosuch")]
)
@pytest.mark.parametrize(
    "call",
    [
        a.tool_call("fails", x="q"),
        a.ToolCall("fails", '{"x": "q",'),  # not JSON
        a.ToolCall("fails", '{"y": 1}'),  # not its arguments
        a.tool_call("nosuch", x="q"),  # no such tool
    ],
    ids=["raises", "invalid-json", "invalid-arguments", "unknown-tool"],
)
def test_a_stop_on_a_failed_tool_ends_the_run_with_the_error_never_as_the_answer(behavior, call):
    model = a.ScriptedModel([call, a.say("never")])
    agent = a.Agent("w", "x", model, [a.tool(_fails, name="fails")], tool_use_behavior=behavior)

    result = a.run_sync(agent, "go")

    if isinstance(behavior, a.StopAtTools) and call.name not in behavior.names:
        assert result.ok and result.output == "never"  # not a stopping tool: the model saw it
        assert model.requests[1].tool_results[0].startswith(("ERROR", "Tool error"))
        return
    assert not result.ok and result.output is None
    assert isinstance(result.error, a.ToolFailed)
    assert result.error.tool == call.name and result.error.agent == "w"
    said = str(result.error)
    assert ("ERROR" in said or "Tool error" in said) and "run_llm_again" in said
    assert len(model.requests) == 1  # no further model call
    tool_span = next(s for s in result.spans if s.kind == "tool_call")
    assert tool_span.status == "error"


def test_a_stop_on_a_tool_that_succeeds_after_another_failed_gives_its_result():
    model = a.ScriptedModel([[a.tool_call("fails", x="q"), a.tool_call("note", text="y")]])
    agent = a.Agent(
        "w",
        "x",
        model,
        [a.tool(_fails, name="fails"), note],
        tool_use_behavior=a.StopAtTools("note"),
    )
    result = a.run_sync(agent, "go")
    assert result.ok and result.output == "noted"


def test_a_sub_agent_that_stops_on_its_tool_answers_its_caller_with_the_result():
    sub = a.Agent(
        "sub",
        "x",
        a.ScriptedModel([a.tool_call("lookup", term="tax")]),
        [lookup],
        tool_use_behavior="stop_on_first_tool",
    )
    boss_model = a.ScriptedModel([a.tool_call("sub", input="q"), a.say("done")])
    result = a.run_sync(a.Agent("boss", "x", boss_model, [sub.as_tool()]), "go")
    assert result.ok and boss_model.requests[1].tool_results == ["tax: defined"]


def test_a_bad_tool_use_behavior_is_refused():
    with pytest.raises(a.UserError, match="tool_use_behavior must be"):
        a.Agent("w", "x", a.ScriptedModel([]), tool_use_behavior="stop")  # type: ignore[arg-type]


def test_run_model_is_the_model_of_every_agent_without_one():
    shared = a.ScriptedModel(
        lambda r: (
            a.tool_call("sub", input="q")
            if r.agent == "boss" and not r.tool_results
            else a.say(f"{r.agent} answers")
        )
    )
    own = a.ScriptedModel([a.say("own model")])
    sub = a.Agent("sub", "x")
    other = a.Agent("other", "x", own)
    boss = a.Agent("boss", "x", None, [sub.as_tool(), other.as_tool()])

    result = a.run_sync(boss, "go", model=shared)

    assert result.ok and result.output == "boss answers"
    assert [r.agent for r in shared.requests] == ["boss", "sub", "boss"]
    assert own.requests == [] and boss.model is None  # the agents are not changed


def test_without_run_model_an_agent_without_a_model_is_refused():
    with pytest.raises(a.UserError, match="has no model"):
        a.run_sync(a.Agent("w", "x"), "go")


# -- the wire


def test_openai_receives_the_settings_under_its_own_names():
    with FakeOpenAIServer() as server:
        server.script = [completion(tool_calls=[("lookup", {"term": "x"})]), completion("ok")]
        model = a.OpenAIModel(
            "fake-model",
            base_url=server.url,
            api_key="sk-test-" + uuid.uuid4().hex,
            backoff=Backoff(initial=0.001, jitter=0.0),
        )
        settings = a.ModelSettings(
            temperature=0.1,
            top_p=0.5,
            max_tokens=64,
            tool_choice="required",
            parallel_tool_calls=False,
            seed=3,
            stop=["END"],
            extra={"logprobs": True},
        )
        result = a.run_sync(a.Agent("w", "x", model, [lookup], model_settings=settings), "go")
    assert result.ok, result.error
    first, second = server.bodies
    assert {k: first[k] for k in settings_keys(first)} == {
        "temperature": 0.1,
        "top_p": 0.5,
        "max_tokens": 64,
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "seed": 3,
        "stop": ["END"],
        "logprobs": True,
    }
    assert second["tool_choice"] == "auto"


def settings_keys(body: dict) -> list[str]:
    names = (
        "temperature",
        "top_p",
        "max_tokens",
        "tool_choice",
        "parallel_tool_calls",
        "seed",
        "stop",
        "logprobs",
    )
    return [k for k in names if k in body]


def test_openai_refuses_a_tool_choice_naming_no_tool_before_any_request():
    with FakeOpenAIServer() as server:
        model = a.OpenAIModel("fake-model", base_url=server.url, api_key="sk-test-x")
        agent = a.Agent(
            "w", "x", model, [lookup], model_settings=a.ModelSettings(tool_choice="missing")
        )
        result = a.run_sync(agent, "go")
    assert not result.ok and isinstance(result.error, a.UserError)
    assert "tool_choice='missing'" in str(result.error) and "lookup" in str(result.error)
    assert server.bodies == []


def claude(server: FakeAnthropicServer) -> a.AnthropicModel:
    return a.AnthropicModel(
        "claude-test", base_url=server.url, api_key="sk-ant-test-0123456789", backoff=0.0
    )  # type: ignore[arg-type]


def test_anthropic_receives_the_settings_under_its_own_names():
    pytest.importorskip("anthropic")
    script = [message(tool_use("toolu_1", "lookup", term="x")), message(text("ok"))]
    settings = a.ModelSettings(
        temperature=0.1,
        max_tokens=64,
        tool_choice="lookup",
        parallel_tool_calls=False,
        stop="END",
        extra={"top_k": 5},
    )
    with FakeAnthropicServer(script) as server:
        result = a.run_sync(
            a.Agent("w", "x", claude(server), [lookup], model_settings=settings), "go"
        )
    assert result.ok, result.error
    first, second = server.bodies
    assert (first["temperature"], first["max_tokens"], first["stop_sequences"], first["top_k"]) == (
        0.1,
        64,
        ["END"],
        5,
    )
    assert first["tool_choice"] == {
        "type": "tool",
        "name": "lookup",
        "disable_parallel_tool_use": True,
    }
    assert second["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


def test_anthropic_cannot_honour_a_seed_and_says_so_before_any_request():
    pytest.importorskip("anthropic")
    with FakeAnthropicServer([message(text("never"))]) as server:
        agent = a.Agent("w", "x", claude(server), model_settings=a.ModelSettings(seed=1))
        result = a.run_sync(agent, "go")
    assert not result.ok and isinstance(result.error, a.UserError)
    assert "cannot honour ModelSettings(seed=1)" in str(result.error)
    assert server.bodies == []
