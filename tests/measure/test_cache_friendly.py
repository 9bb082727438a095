"""Requests are built cache-friendly: turn 2's wire request starts with turn 1's, in the
provider's order (tools, system, messages), byte for byte; and AnthropicModel(cache="auto")
marks its breakpoints where Anthropic recommends for an agent loop."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_anthropic_server import FakeAnthropicServer, message, text, tool_use
from fake_openai_server import FakeOpenAIServer, completion

import agentnb as a

EPHEMERAL = {"type": "ephemeral"}


@a.tool
def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=False, separators=(",", ":"))


def without_breakpoints(value: Any) -> Any:
    """The body with ``cache_control`` removed and one-text-block contents as strings (the
    API reads both forms alike), i.e. what the cache key is made of."""
    if isinstance(value, dict):
        return {k: without_breakpoints(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        items = [without_breakpoints(v) for v in value]
        if len(items) == 1 and isinstance(items[0], dict) and set(items[0]) == {"type", "text"}:
            return items[0]["text"]
        return items
    return value


def test_openai_turn_2_starts_with_turn_1():
    script = [completion(tool_calls=[("add", {"x": 2, "y": 3})]), completion("5")]
    with FakeOpenAIServer(script) as server:
        model = a.OpenAIModel("gpt-4o-mini", base_url=server.url, api_key="sk-test")
        result = a.run_sync(a.Agent("adder", "Add with the tool.", model, [add]), "2+3?")
    assert result.ok, result.error
    first, second = server.bodies
    # The provider's order: tools and the messages (system first); nothing differs but the end.
    assert dumps(second["tools"]) == dumps(first["tools"])
    turn1 = dumps(first["messages"])[:-1]  # without the closing bracket: a prefix of turn 2
    assert dumps(second["messages"]).startswith(turn1)
    assert len(second["messages"]) == len(first["messages"]) + 2  # the call and its result


def test_anthropic_turn_2_starts_with_turn_1_and_auto_marks_three_breakpoints():
    script = [
        message(text("Adding."), tool_use("toolu_1", "add", x=2, y=3)),
        message(text("5")),
    ]
    with FakeAnthropicServer(script) as server:
        claude = a.AnthropicModel(
            "claude-sonnet-4", base_url=server.url, api_key="sk-ant-test", cache="auto"
        )
        result = a.run_sync(a.Agent("adder", "Add with the tool.", claude, [add]), "2+3?")
    assert result.ok, result.error
    first, second = server.bodies
    for body in (first, second):  # after the tools, after the system prompt, at the end
        assert body["tools"][-1]["cache_control"] == EPHEMERAL
        assert body["system"] == [
            {"type": "text", "text": "Add with the tool.", "cache_control": EPHEMERAL}
        ]
        assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
        marks = dumps(body).count('"cache_control"')
        assert marks == 3  # of the API's four
    one, two = without_breakpoints(first), without_breakpoints(second)
    assert dumps(two["tools"]) == dumps(one["tools"])
    assert dumps(two["system"]) == dumps(one["system"])
    assert dumps(two["messages"]).startswith(dumps(one["messages"])[:-1])


def test_anthropic_without_cache_sends_no_breakpoint():
    with FakeAnthropicServer([message(text("hi"))]) as server:
        claude = a.AnthropicModel("claude-sonnet-4", base_url=server.url, api_key="sk-ant-test")
        a.run_sync(a.Agent("w", "Be brief.", claude), "hello")
    assert "cache_control" not in dumps(server.bodies[0])
    assert server.bodies[0]["system"] == "Be brief."


def test_cache_mode_is_checked_at_construction():
    with pytest.raises(a.UserError, match=r"cache=...\) must be one of 'auto', None"):
        a.AnthropicModel("claude-sonnet-4", api_key="k", cache="always")  # type: ignore[arg-type]


def test_the_estimate_of_an_auto_cached_anthropic_run_reads_what_the_last_turn_wrote(
    word_tokenizer,
):
    script = [
        message(text("Adding."), tool_use("toolu_1", "add", x=2, y=3)),
        message(text("5")),
    ]
    instructions = "Add with the tool. " + "Be exact. " * 600  # 1,200+ words: cacheable
    with FakeAnthropicServer(script) as server:
        claude = a.AnthropicModel(
            "claude-sonnet-4", base_url=server.url, api_key="sk-ant-test", cache="auto"
        )
        result = a.run_sync(a.Agent("adder", instructions, claude, [add]), "2+3?")
    assert result.ok, result.error

    estimate = a.cache_estimate(result, "anthropic")
    first, second = estimate["tokens_in"]
    assert list(estimate["tokens_in_cached_est"]) == [0, first]  # turn 2 reads turn 1's request
    assert list(estimate["tokens_in_cache_write_est"]) == [first, second - first]


def test_a_streamed_auto_cached_call_sends_the_breakpoints_and_reports_cache_tokens():
    import re

    from fake_anthropic_server import streamed

    reply = streamed(text("Fine."), input_tokens=30, output_tokens=2)
    reply.events[0] = re.sub(
        r'"input_tokens":\s*30',
        '"input_tokens": 30, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 20',
        reply.events[0],
    )
    with FakeAnthropicServer([reply]) as server:
        claude = a.AnthropicModel(
            "claude-sonnet-4", base_url=server.url, api_key="sk-ant-test", cache="auto"
        )
        events = list(a.stream_sync(a.Agent("w", "Be brief.", claude), "hello"))
    result = events[-1].result
    assert result.ok, result.error
    body = server.bodies[0]
    assert body["stream"] is True
    assert body["system"][0]["cache_control"] == EPHEMERAL
    assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
    row = result.calls.iloc[0]
    assert (row["provider_tokens_in"], row["tokens_in_cached"], row["tokens_in_cache_write"]) == (
        1050,
        1000,
        20,
    )
