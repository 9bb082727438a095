"""The trace's numbers: characters sent (one rule), token counts (cached), Usage and Message."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random

import pandas as pd
import pytest

import agentnb as a
from agentnb.trace import tokens
from agentnb.trace.sizes import COMPONENTS, canonical_request, message_size, request_sizes
from agentnb.trace.spans import Trace


@a.tool
def note(text: str) -> str:
    """Keep a note."""
    return f"noted: {text}"


# -- characters sent


def random_text(rng: random.Random) -> str:
    alphabet = 'ab \n\t"\\/éü€😀\x00\x1f{}[],:'
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


def random_request(rng: random.Random) -> a.ModelRequest:
    messages: list[a.Message] = []
    for i in range(rng.randint(0, 6)):
        kind = rng.choice(["user", "assistant", "calls", "tool"])
        if kind == "user":
            messages.append(a.Message.user(random_text(rng)))
        elif kind == "assistant":
            messages.append(a.Message.assistant(rng.choice([None, random_text(rng)])))
        elif kind == "calls":
            calls = tuple(
                a.ToolCall(random_text(rng), json.dumps({"q": random_text(rng)}), f"c{i}{j}")
                for j in range(rng.randint(1, 3))
            )
            messages.append(a.Message.assistant(rng.choice([None, random_text(rng)]), calls))
        else:
            messages.append(a.Message.tool(a.ToolCall("t", "{}", f"c{i}"), random_text(rng)))
    tools = [
        a.ToolSpec(random_text(rng), random_text(rng), {"type": "object", "k": random_text(rng)})
        for _ in range(rng.randint(0, 3))
    ]
    schema = rng.choice([None, a.models.OutputSchema("answer", {"x": random_text(rng)})])
    return a.ModelRequest(random_text(rng), messages, tools, schema)


@pytest.mark.parametrize("seed", range(40))
def test_components_add_up_to_the_length_of_the_canonical_json(seed: int):
    request = random_request(random.Random(seed))

    sizes = request_sizes(request)

    assert sizes["total"] == len(canonical_request(request))
    assert sum(sizes[c] for c in COMPONENTS) == sizes["total"]
    assert all(sizes[c] >= 0 for c in COMPONENTS)
    # measuring twice (cached message sizes) gives the same answer
    assert request_sizes(request) == sizes


def test_the_canonical_json_is_compact_unicode_in_a_fixed_key_order():
    call = a.ToolCall("note", '{"text":"é"}', "c1")
    request = a.ModelRequest(
        "Sys",
        [a.Message.user("Hé"), a.Message.assistant(None, (call,)), a.Message.tool(call, "ok")],
        [note.spec],
    )

    text = canonical_request(request)

    assert text == (
        '{"system":"Sys","messages":['
        '{"role":"user","content":"Hé"},'
        '{"role":"assistant","content":null,"tool_calls":'
        '[{"id":"c1","name":"note","arguments":"{\\"text\\":\\"é\\"}"}]},'
        '{"role":"tool","tool_call_id":"c1","content":"ok"}],'
        '"tools":[{"name":"note","description":"Keep a note.","parameters":'
        '{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}}]}'
    )
    sizes = request_sizes(request)
    assert sizes["system"] == 3 and sizes["user"] == 2 and sizes["tool_results"] == 2
    assert sizes["tool_args"] == len('{\\"text\\":\\"é\\"}')
    assert sizes["tools"] == len(json.dumps(note.spec.as_dict(), separators=(",", ":")))


def test_an_output_schema_counts_with_the_tools():
    request = a.ModelRequest("s", [], [], a.models.OutputSchema("v", {"type": "object"}))
    text = canonical_request(request)
    assert text.endswith(',"output_schema":{"name":"v","schema":{"type":"object"}}}')
    assert request_sizes(request)["tools"] == len('{"name":"v","schema":{"type":"object"}}')


def test_a_message_size_is_computed_once_and_cached_on_the_message():
    message = a.Message.user("hello")
    first = message_size(message)
    assert message.size_cache is first
    assert message_size(message) is first


def test_a_replaced_message_is_measured_afresh():
    """``dataclasses.replace`` (history filters use it) must not carry the old size over."""
    message = a.Message.user("short")
    request_sizes(a.ModelRequest("s", [message]))

    longer = dataclasses.replace(message, content="a much longer text than before")
    request = a.ModelRequest("s", [longer])

    assert request_sizes(request)["total"] == len(canonical_request(request))
    assert request_sizes(request)["user"] == len("a much longer text than before")


def test_messages_compare_by_content_not_by_cache():
    measured = a.Message.user("x")
    message_size(measured)
    assert measured == a.Message.user("x")
    assert "_size" not in repr(measured)


# -- tokens


async def test_tokens_are_counted_with_the_tokenizer_in_use(word_tokenizer: list[str]):
    model = a.ScriptedModel([a.tool_call("note", text="one two"), a.say("three four five")])

    result = await a.run(a.Agent("w", "be brief", model, [note]), "hello there")

    calls = result.calls
    assert list(calls["tokens_method"]) == ["words", "words"]
    spec_words = len(json.dumps(note.spec.as_dict(), separators=(",", ":")).split())
    assert calls["tokens_in"].iloc[0] == 2 + spec_words + 2
    assert calls["tokens_out"].iloc[0] == 2  # '{"text":"one' and 'two"}'
    # the second call adds the call's arguments and the tool result "noted: one two"
    assert calls["tokens_in"].iloc[1] == calls["tokens_in"].iloc[0] + 2 + 3
    assert calls["tokens_out"].iloc[1] == 3
    assert calls["provider_tokens_in"].isna().all()


async def test_a_history_reread_over_ten_turns_is_counted_once(word_tokenizer: list[str]):
    long_input = "word " * 2_000
    system = "Follow the rules. " * 100
    model = a.ScriptedModel([a.tool_call("note", text=f"n{i}") for i in range(9)] + ["done"])

    result = await a.run(a.Agent("w", system, model, [note]), long_input)
    assert word_tokenizer == []  # a run counts nothing: its rows are counted when read
    calls = result.calls

    assert len(model.requests) == 10
    assert word_tokenizer.count(long_input) == 1
    assert word_tokenizer.count(system) == 1
    assert word_tokenizer.count("noted: n0") == 1  # each tool result, once
    # a call's arguments are counted once, as output; the history reuses that count
    assert word_tokenizer.count('{"text":"n0"}') == 1
    assert calls["tokens_in"].iloc[-1] > 2_000 + 300


async def test_counts_follow_a_change_of_tokenizer():
    message = a.Message.user("a b c d")
    request = a.ModelRequest("x y", [message], [note.spec])
    a.set_tokenizer(lambda text: 1)
    assert tokens.request_tokens(request) == (3, "custom")
    a.set_tokenizer(lambda text: 10)  # another tokenizer under the same method name
    assert tokens.request_tokens(request) == (30, "custom")


async def test_without_a_tokenizer_tokens_are_unavailable_not_estimated():
    model = a.ScriptedModel([a.tool_call("note", text="x"), "done"])

    result = await a.run(a.Agent("w", "s", model, [note]), "go")

    calls = result.calls
    assert calls["tokens_in"].isna().all() and calls["tokens_out"].isna().all()
    assert list(calls["tokens_method"]) == ["unavailable", "unavailable"]


async def test_provider_usage_is_recorded_and_used_when_there_is_no_tokenizer():
    model = a.ScriptedModel(
        [
            a.ModelResponse(tool_calls=[a.tool_call("note", text="x")], usage=a.Usage(120, 8, 1)),
            a.ModelResponse(text="done", usage=a.Usage(150, 3, 1)),
        ]
    )

    result = await a.run(a.Agent("w", "s", model, [note]), "go")

    calls = result.calls
    assert list(calls["tokens_method"]) == ["provider", "provider"]
    assert list(calls["tokens_in"]) == [120, 150] and list(calls["tokens_out"]) == [8, 3]
    assert list(calls["provider_tokens_in"]) == [120, 150]
    assert list(calls["provider_tokens_out"]) == [8, 3]
    assert result.usage == a.Usage(270, 11, 2)


async def test_provider_usage_is_recorded_beside_the_tokenizer_count(word_tokenizer: list[str]):
    model = a.ScriptedModel([a.ModelResponse(text="one two", usage=a.Usage(999, 77, 1))])

    result = await a.run(a.Agent("w", "s", model), "go")

    row = result.calls.iloc[0]
    assert row["tokens_method"] == "words"
    assert row["tokens_in"] == 2 and row["tokens_out"] == 2
    assert row["provider_tokens_in"] == 999 and row["provider_tokens_out"] == 77


async def test_provider_usage_with_only_input_tokens():
    model = a.ScriptedModel([a.ModelResponse(text="ok", usage=a.Usage(input_tokens=40))])
    result = await a.run(a.Agent("w", "s", model), "go")
    row = result.calls.iloc[0]
    assert row["tokens_in"] == 40 and row["tokens_method"] == "provider"
    assert pd.isna(row["provider_tokens_out"]) and pd.isna(row["tokens_out"])  # not reported


# -- Usage


def test_usage_adds_and_keeps_none_for_not_reported():
    assert a.Usage(3, 4, 1) + a.Usage(10, 20, 1) == a.Usage(13, 24, 2)
    assert a.Usage(3, None, 1) + a.Usage(None, None, 1) == a.Usage(3, None, 2)
    assert a.Usage(None, None) + a.Usage(None, 5) == a.Usage(None, 5, 0)
    assert (a.Usage() + a.Usage()).input_tokens is None
    assert a.Usage(3, 4).total_tokens == 7 and a.Usage(3, None).total_tokens == 3
    assert a.Usage().total_tokens is None


def test_usages_can_be_summed():
    assert sum([a.Usage(1, 2, 1), a.Usage(3, None, 1)]) == a.Usage(4, 2, 2)
    assert sum([], a.Usage()) == a.Usage()


def test_adding_something_else_to_a_usage_is_a_type_error():
    with pytest.raises(TypeError):
        a.Usage(1, 2) + 3  # type: ignore[operator]
    with pytest.raises(TypeError):
        "x" + a.Usage(1, 2)  # type: ignore[operator]


def test_the_worked_example_in_the_docs_matches_the_code():
    """docs/characters.md shows one request and its split: keep it true."""
    import re
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "characters.md").read_text(encoding="utf-8")

    @a.tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return "42"

    model = a.ScriptedModel([a.tool_call("lookup", key="x"), a.say("It is 42.")])
    result = a.run_sync(a.Agent("helper", "Be brief.", model, [lookup]), "What is x?")

    example = re.search(r'```json\n(\{"system":"Be brief\..*?)\n```', doc, re.S)
    assert example is not None and example.group(1) == canonical_request(model.requests[1])
    row = result.calls.iloc[1]
    numbers = " | ".join(
        str(int(row[c])) for c in ["chars_in", *(f"chars_in_{c}" for c in COMPONENTS)]
    )
    assert f"| {numbers} |" in doc


def test_a_call_row_cannot_leave_a_field_out():
    from agentnb.trace.calls import CALL_COLUMNS, CallRow

    values = dict.fromkeys(CALL_COLUMNS, 0)
    CallRow(**values)
    for column in CALL_COLUMNS:
        with pytest.raises(TypeError, match=column):
            CallRow(**{c: v for c, v in values.items() if c != column})


def test_every_column_of_a_run_s_calls_is_filled():
    from agentnb import Agent, ScriptedModel, run_sync, say, tool_call
    from agentnb.trace.calls import CALL_COLUMNS

    def look(q: str) -> str:
        """Look something up."""
        return "found"

    model = ScriptedModel([tool_call("look", q="x"), say("hi")])
    result = run_sync(Agent("a", "Answer.", model=model, tools=[look]), "q")
    assert len(result.trace.call_rows) == 2
    assert all(list(r.as_dict()) == list(CALL_COLUMNS) for r in result.trace.call_rows)
    nullable = {
        "ended",
        "parent_id",
        "tokens_in",
        "tokens_out",
        "provider_tokens_in",
        "provider_tokens_out",
        "tokens_in_cached",
        "tokens_in_cache_write",
        "tokens_out_reasoning",
        "tokens_in_overhead",
        "prefix",
    }
    for row in result.trace.call_rows:
        assert all(getattr(row, c) is not None for c in CALL_COLUMNS if c not in nullable)
    assert list(result.calls.columns) == list(CALL_COLUMNS)


def test_a_call_row_holds_the_call_s_span_and_sizes_in_their_fields():
    from agentnb import Agent, ScriptedModel, run_sync, say

    model = ScriptedModel([say("hello")])
    result = run_sync(Agent("a", "Answer.", model=model), "q")
    (row,) = result.trace.call_rows
    span = next(s for s in result.trace.spans if s.kind == "model_call")
    sizes = request_sizes(model.requests[0])
    assert (row.run_id, row.span_id, row.parent_id) == (result.run_id, span.span_id, span.parent_id)
    assert (row.agent, row.model, row.path, row.depth, row.turn) == ("a", span.name, "a", 0, 1)
    assert (row.started, row.ended, row.wait_s, row.retries) == (span.started, span.ended, 0.0, 0)
    assert row.chars_in == sizes["total"] == len(canonical_request(model.requests[0]))
    assert [getattr(row, f"chars_in_{c}") for c in COMPONENTS] == [sizes[c] for c in COMPONENTS]
    assert (row.chars_out, row.tool_calls, row.stop_reason, row.status) == (5, 0, "stop", "ok")
    assert row.chars_on_wire == row.chars_in  # the whole request went


@pytest.mark.parametrize(
    ("raised", "status"),
    [(asyncio.CancelledError, "cancelled"), (ValueError, "error"), (SystemExit, "error")],
)
def test_a_failure_inside_ends_on_failure_ends_the_span_and_goes_on(raised, status):
    trace = Trace("run-1")
    span = trace.start("tool_call", "lookup", None, agent="a", path="a", depth=0)

    with pytest.raises(raised), trace.ends_on_failure(span):
        raise raised()

    assert span.status == status and span.ended is not None


def test_ends_on_failure_leaves_a_span_that_did_not_fail_running():
    trace = Trace("run-1")
    span = trace.start("tool_call", "lookup", None, agent="a", path="a", depth=0)

    with trace.ends_on_failure(span):
        pass

    assert span.status == "running" and span.ended is None
