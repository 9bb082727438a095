"""AnthropicModel through the real ``anthropic`` client against a Messages API server on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fake_anthropic_server import FakeAnthropicServer, error, message, text, tool_use
from pydantic import BaseModel

import agentnb as a
from agentnb.models.providers.anthropic.wire import messages_to_wire
from agentnb.models.registry import model_from_spec

pytest.importorskip("anthropic")  # imported here: it takes seconds, better at collection

KEY = "sk-ant-test-0123456789abcdef"


def claude(server: FakeAnthropicServer, **options: object) -> a.AnthropicModel:
    return a.AnthropicModel("claude-test", base_url=server.url, api_key=KEY, backoff=0.0, **options)  # type: ignore[arg-type]


@a.tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return {"Paris": "rain", "Oslo": "snow"}[city]


def test_parallel_tool_calls_round_trip_with_results_grouped_in_one_user_message():
    script = [
        message(
            text("Checking both."),
            tool_use("toolu_1", "weather", city="Paris"),
            tool_use("toolu_2", "weather", city="Oslo"),
            input_tokens=30,
            output_tokens=9,
        ),
        message(text("Paris: rain. Oslo: snow."), input_tokens=60, output_tokens=8),
    ]
    with FakeAnthropicServer(script) as server:
        agent = a.Agent("forecaster", "You report the weather.", claude(server), [weather])
        result = a.run_sync(agent, "Weather in Paris and Oslo?")

    assert result.ok, result.error
    assert result.output == "Paris: rain. Oslo: snow."
    first, second = server.bodies
    assert first["system"] == "You report the weather."  # top-level, not a message
    assert first["model"] == "claude-test" and first["max_tokens"] == 1024
    assert first["messages"] == [{"role": "user", "content": "Weather in Paris and Oslo?"}]
    assert first["tools"] == [
        {
            "name": "weather",
            "description": "Today's weather in a city.",
            "input_schema": weather.parameters,
        }
    ]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert second["messages"][1]["content"] == [
        {"type": "text", "text": "Checking both."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Oslo"}},
    ]
    assert second["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "snow"},
    ]
    sent = server.headers[0]  # the SDK sends the key as x-api-key or as a bearer token
    assert sent.get("x-api-key") == KEY or sent.get("authorization") == f"Bearer {KEY}"
    assert list(result.calls["provider_tokens_in"]) == [30, 60]
    assert list(result.calls["provider_tokens_out"]) == [9, 8]
    assert list(result.calls["stop_reason"]) == ["tool_calls", "stop"]
    assert result.usage.input_tokens == 90 and result.usage.output_tokens == 17


def team(boss_model: a.ModelClient, legal_model: a.ModelClient) -> a.Agent:
    """The same definitions for every provider: a coordinator and a legal sub-agent."""
    legal = a.Agent("legal", [a.PromptSection("Role", "You review clauses.")], legal_model)
    return a.Agent("boss", "You coordinate.", boss_model, [legal])


def test_the_same_agents_run_unchanged_on_scripted_and_anthropic_models():
    clause = "The supplier may end the contract at any time."
    scripted = a.run_sync(
        team(
            a.ScriptedModel(
                [
                    a.tool_call("legal", input="Review", artifacts=["clause"]),
                    a.say("Not acceptable."),
                ]
            ),
            a.ScriptedModel([a.say("One-sided termination.")]),
        ),
        "Check the clause.",
        artifacts={"clause": clause},
    )
    script = [
        message(tool_use("call_1_0", "legal", input="Review", artifacts=["clause"])),
        message(text("One-sided termination.")),
        message(text("Not acceptable.")),
    ]
    with FakeAnthropicServer(script) as server:
        model = claude(server)
        remote = a.run_sync(team(model, model), "Check the clause.", artifacts={"clause": clause})

    assert remote.ok and remote.output == scripted.output == "Not acceptable."
    columns = [
        "agent",
        "path",
        "depth",
        "turn",
        "tool_calls",
        "stop_reason",
        "chars_in",
        "chars_in_system",
        "chars_in_tool_results",
    ]
    assert remote.calls[columns].to_dict("records") == scripted.calls[columns].to_dict("records")
    legal_body = server.bodies[1]
    assert legal_body["system"] == "## Role\nYou review clauses."
    assert clause in legal_body["messages"][0]["content"]  # the document went by handle


class Verdict(BaseModel):
    acceptable: bool
    reason: str


def test_structured_output_through_a_forced_tool():
    script = [message(tool_use("toolu_9", "final_answer", acceptable=False, reason="one-sided"))]
    with FakeAnthropicServer(script) as server:
        agent = a.Agent("judge", "You judge clauses.", claude(server), output_type=Verdict)
        result = a.run_sync(agent, "Is it fair?")

    assert result.ok, result.error
    assert result.output == Verdict(acceptable=False, reason="one-sided")
    (body,) = server.bodies
    assert body["tool_choice"] == {"type": "tool", "name": "final_answer"}
    (output_tool,) = body["tools"]
    assert output_tool["input_schema"]["properties"].keys() == {"acceptable", "reason"}
    assert result.calls["stop_reason"].tolist() == ["stop"]


def test_structured_output_with_other_tools_lets_the_model_use_them_first():
    script = [
        message(tool_use("toolu_1", "weather", city="Oslo")),
        message(tool_use("toolu_2", "final_answer", acceptable=True, reason="snow is fine")),
    ]
    with FakeAnthropicServer(script) as server:
        agent = a.Agent("judge", "Judge.", claude(server), [weather], output_type=Verdict)
        result = a.run_sync(agent, "Go skiing in Oslo?")

    assert result.output == Verdict(acceptable=True, reason="snow is fine")
    assert server.bodies[0]["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in server.bodies[0]["tools"]] == ["weather", "final_answer"]


def test_native_structured_output_sends_the_schema_in_output_config():
    script = [message(text('{"acceptable": true, "reason": "fair"}'))]
    with FakeAnthropicServer(script) as server:
        agent = a.Agent("judge", "Judge.", claude(server, structured="native"), output_type=Verdict)
        result = a.run_sync(agent, "Fair?")

    assert result.output == Verdict(acceptable=True, reason="fair")
    fmt = server.bodies[0]["output_config"]["format"]
    assert fmt["type"] == "json_schema" and "acceptable" in fmt["schema"]["properties"]
    assert "tools" not in server.bodies[0]


def test_stop_reasons_are_mapped():
    with FakeAnthropicServer([message(text("cut"), stop_reason="max_tokens")]) as server:
        result = a.run_sync(a.Agent("a", "x", claude(server, max_tokens=5)), "go")

    assert result.calls["stop_reason"].tolist() == ["length"]
    assert server.bodies[0]["max_tokens"] == 5


def test_overloaded_is_retried_and_the_retry_is_traced():
    script = [
        error(529, "overloaded_error", "Overloaded", {"retry-after": "0"}),
        message(text("fine")),
    ]
    with FakeAnthropicServer(script) as server:
        result = a.run_sync(a.Agent("a", "x", claude(server)), "go")

    assert result.ok and result.output == "fine"
    assert len(server.bodies) == 2
    assert result.calls["retries"].tolist() == [1]


def test_a_bad_key_is_a_clear_error_that_never_shows_the_key():
    script = [error(401, "authentication_error", f"invalid x-api-key {KEY}")]
    with FakeAnthropicServer(script) as server:
        model = claude(server)
        result = a.run_sync(a.Agent("a", "x", model), "go")

    assert not result.ok and isinstance(result.error, a.ModelHTTPError)
    assert result.error.status == 401
    assert "ANTHROPIC_API_KEY" in str(result.error)
    assert KEY not in str(result.error) and KEY not in repr(model)
    assert all(KEY not in line for line in result.log_lines())


def test_a_missing_key_names_the_environment_variable():
    with pytest.raises(a.UserError, match="ANTHROPIC_API_KEY"):
        a.AnthropicModel("claude-test")


def test_spec_strings_resolve_to_anthropic_models(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    model = model_from_spec("anthropic:claude-test")

    assert isinstance(model, a.AnthropicModel) and model.name == "claude-test"
    assert KEY not in repr(model)


async def test_an_async_run_uses_a_client_of_its_own_event_loop():
    with FakeAnthropicServer([message(text("one")), message(text("two"))]) as server:
        model = claude(server)
        first = await a.run(a.Agent("a", "x", model), "go")
        second = a.run_sync(a.Agent("a", "x", model), "go")  # agentnb's background loop
        await model.aclose()

    assert (first.output, second.output) == ("one", "two")


def test_consecutive_user_turns_are_merged_with_tool_results_first():
    call = a.ToolCall("weather", '{"city":"Oslo"}', "toolu_1")
    wire = messages_to_wire(
        [
            a.Message.user("hi"),
            a.Message.assistant(None, (call,)),
            a.Message.tool(call, "snow"),
            a.Message.user("Answer as JSON."),
        ]
    )

    assert [turn["role"] for turn in wire] == ["user", "assistant", "user"]
    assert wire[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "snow"},
        {"type": "text", "text": "Answer as JSON."},
    ]


def test_without_the_anthropic_package_agentnb_imports_and_the_model_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
):
    code = "import sys; sys.modules['anthropic'] = None; import agentnb; print('imported')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "imported", done.stderr
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(a.UserError, match=r"pip install 'agentnb\[anthropic\]'"):
        a.AnthropicModel("claude-test", api_key=KEY)
