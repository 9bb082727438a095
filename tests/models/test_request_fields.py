"""What is traced is what was sent: extra fields cannot replace the fields agentnb builds."""

from __future__ import annotations

import pytest
from fake_openai_server import FakeOpenAIServer, completion

import agentnb as a


@pytest.mark.parametrize(
    ("key", "covered"),
    [
        ("messages", "the agent's instructions and the run's input"),
        ("model", "model name"),
        ("tools", "the agent's tools"),
        ("tool_choice", "ModelSettings(tool_choice=...)"),
        ("stream", "run_streamed"),
        ("stream_options", "run_streamed"),
        ("response_format", "Agent(output_type=...)"),
        ("system", "instructions"),
        ("temperature", "ModelSettings(temperature=...)"),
        ("max_completion_tokens", "ModelSettings(max_tokens=...)"),
    ],
)
def test_extra_settings_cannot_set_a_field_agentnb_builds(key, covered):
    with pytest.raises(
        a.UserError, match=rf"ModelSettings\(extra=\.\.\.\) cannot set '{key}'"
    ) as e:
        a.ModelSettings(extra={key: [{"role": "user", "content": "something else"}]})
    assert covered in str(e.value)


def test_a_value_json_cannot_carry_is_refused_at_construction():
    with pytest.raises(a.UserError, match="'user'.*JSON"):
        a.ModelSettings(extra={"user": object()})
    with pytest.raises(a.UserError, match="'logit_bias'.*JSON"):
        a.OpenAIModel(
            "m", base_url="http://127.0.0.1:9/v1", params={"logit_bias": {1: float("nan")}}
        )


@pytest.mark.parametrize("key", ["messages", "model", "stream", "tools", "response_format"])
def test_an_adapters_params_cannot_set_a_field_agentnb_builds(key):
    with pytest.raises(a.UserError, match=rf"OpenAIModel\(params=\.\.\.\) cannot set '{key}'"):
        a.OpenAIModel("m", base_url="http://127.0.0.1:9/v1", params={key: "x"})
    with pytest.raises(a.UserError, match=rf"AnthropicModel\(params=\.\.\.\) cannot set '{key}'"):
        a.AnthropicModel("claude-sonnet-4-5", api_key="x", params={key: "x"})


def test_params_are_defaults_the_settings_override_and_the_server_receives_what_is_traced():
    with FakeOpenAIServer([completion("one"), completion("two")]) as server:
        model = a.OpenAIModel(
            "m",
            base_url=server.url,
            params={"temperature": 0.2, "user": "u-1"},
            tokenizer="provider",
        )
        a.run_sync(a.Agent("w", "Be brief.", model), "hi")
        hot = a.ModelSettings(temperature=0.9, extra={"logprobs": True})
        result = a.run_sync(a.Agent("w", "Be brief.", model, model_settings=hot), "hi")
    first, second = server.bodies
    assert (first["temperature"], first["user"]) == (0.2, "u-1")
    assert (second["temperature"], second["user"], second["logprobs"]) == (0.9, "u-1", True)
    sent = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert second["messages"] == sent
    row = result.calls.iloc[0]
    assert (row["chars_in_system"], row["chars_in_user"]) == (len("Be brief."), len("hi"))
