"""Provider usage in full: cached input, cache writes and reasoning tokens, from both adapters'
wire formats (servers on 127.0.0.1 sending those fields), through the calls table, the run's
usage, a recording and its replay."""

from __future__ import annotations

import math

import pytest
from fake_anthropic_server import FakeAnthropicServer, message, text, tool_use
from fake_openai_server import FakeOpenAIServer, completion

import agentnb as a
from agentnb.models import Backoff

DETAILS = ["tokens_in_cached", "tokens_in_cache_write", "tokens_out_reasoning"]


@a.tool
def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def openai_reply(*, cached: int | None, reasoning: int | None, **kwargs):
    body = completion(**kwargs)
    if cached is not None:
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
    if reasoning is not None:
        body["usage"]["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return body


def anthropic_reply(*blocks, read: int, write: int, **kwargs):
    body = message(*blocks, **kwargs)
    body["usage"].update(cache_read_input_tokens=read, cache_creation_input_tokens=write)
    return body


def openai_agent(server: FakeOpenAIServer, model: a.ModelClient | None = None) -> a.Agent:
    client = model or a.OpenAIModel(
        "gpt-4o-mini", base_url=server.url, api_key="sk-test", backoff=Backoff(jitter=0.0)
    )
    return a.Agent("adder", "Add numbers with the tool.", client, [add])


def test_openai_cached_and_reasoning_tokens_reach_the_calls_table_and_add_up(tmp_path):
    script = [
        openai_reply(
            tool_calls=[("add", {"x": 2, "y": 3})],
            prompt_tokens=1500,
            completion_tokens=40,
            cached=0,
            reasoning=32,
        ),
        openai_reply(text="5", prompt_tokens=1600, completion_tokens=9, cached=1408, reasoning=4),
    ]
    path = tmp_path / "adder.jsonl"
    with FakeOpenAIServer(script) as server:
        recorded = a.run_sync(
            openai_agent(server, a.record(openai_agent(server).model, path)), "2+3?"
        )

    assert recorded.ok, recorded.error
    calls = recorded.calls
    assert list(calls["provider_tokens_in"]) == [1500, 1600]
    assert list(calls["tokens_in_cached"]) == [0, 1408]
    assert calls["tokens_in_cache_write"].isna().all()  # OpenAI reports none: NaN, not 0
    assert list(calls["tokens_out_reasoning"]) == [32, 4]
    assert recorded.usage == a.Usage(3100, 49, 2, 1408, None, 36)

    replayed = a.run_sync(openai_agent(server, a.replay(path)), "2+3?")
    assert replayed.calls[["provider_tokens_in", *DETAILS]].equals(
        calls[["provider_tokens_in", *DETAILS]]
    )
    assert replayed.usage == recorded.usage


def test_anthropic_cache_reads_and_writes_reach_the_calls_table_and_add_up():
    script = [
        anthropic_reply(
            text("Adding."),
            tool_use("toolu_1", "add", x=2, y=3),
            input_tokens=20,
            output_tokens=9,
            read=0,
            write=1300,
        ),
        anthropic_reply(text("5"), input_tokens=15, output_tokens=2, read=1300, write=40),
    ]
    with FakeAnthropicServer(script) as server:
        claude = a.AnthropicModel(
            "claude-sonnet-4", base_url=server.url, api_key="sk-ant-test", cache="auto"
        )
        result = a.run_sync(a.Agent("adder", "Add numbers with the tool.", claude, [add]), "2+3?")

    assert result.ok, result.error
    calls = result.calls
    assert list(calls["provider_tokens_in"]) == [20 + 1300, 15 + 1300 + 40]  # every input token
    assert list(calls["tokens_in_cached"]) == [0, 1300]
    assert list(calls["tokens_in_cache_write"]) == [1300, 40]
    assert calls["tokens_out_reasoning"].isna().all()
    assert result.usage.cached_input_tokens == 1300 and result.usage.cache_write_tokens == 1340


def test_usage_without_details_keeps_them_unreported():
    with FakeOpenAIServer([completion("hi")]) as server:
        result = a.run_sync(openai_agent(server), "hello")
    row = result.calls.iloc[0]
    assert all(math.isnan(row[c]) for c in DETAILS)
    assert result.usage.cached_input_tokens is None


@pytest.mark.parametrize(
    ("left", "right", "total"),
    [
        (
            a.Usage(1, 1, 1, None, None, None),
            a.Usage(2, 2, 1, None, None, None),
            (None, None, None),
        ),
        (a.Usage(1, 1, 1, 5, None, 2), a.Usage(2, 2, 1, None, 3, 1), (5, 3, 3)),
    ],
)
def test_details_add_up_and_stay_none_only_when_never_reported(left, right, total):
    both = left + right
    assert (both.cached_input_tokens, both.cache_write_tokens, both.reasoning_tokens) == total
    assert sum([left, right]) == both


async def test_sub_agents_usage_details_roll_up_to_the_root():
    def reply(cached: int) -> a.ModelResponse:
        return a.ModelResponse(text="ok", usage=a.Usage(100, 5, 1, cached, None, None))

    worker = a.Agent("worker", "Work.", a.ScriptedModel([reply(64)]))
    first = a.ModelResponse(
        tool_calls=[a.tool_call("worker", input="go")], usage=a.Usage(90, 5, 1, 0, None, None)
    )
    lead = a.Agent("lead", "Lead.", a.ScriptedModel([first, reply(128)]), [worker.as_tool()])

    result = await a.run(lead, "start")

    assert result.ok, result.error
    assert result.usage.cached_input_tokens == 0 + 64 + 128
    assert list(result.calls["tokens_in_cached"]) == [0, 64, 128]


def test_adding_a_usage_in_place_sums_each_field_keeping_none_only_where_both_are():
    import itertools

    def summed(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    tokens = (None, 0, 7)
    for i, o, ci, co in itertools.product(tokens, repeat=4):
        total, provider = a.Usage(i, o, 3), a.Usage(ci, co, 5)
        total.add(provider, requests=1)
        assert (total.input_tokens, total.output_tokens) == (summed(i, ci), summed(o, co))
        assert total.requests == 4  # the requests given, not the other usage's
        assert provider == a.Usage(ci, co, 5)  # the added one is left as it was
