"""Switching token counting off from code: set_tokenizer("off"), beside None (automatic)."""

from __future__ import annotations

import pytest

import agentnb as a
from agentnb.trace import tokens


def words(text: str) -> int:
    return len(text.split())


@pytest.fixture
def tiktoken_would_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """The automatic choice finds a tokenizer (as on a machine with tiktoken's encodings)."""
    monkeypatch.delenv("AGENTNB_TOKENIZER", raising=False)
    monkeypatch.setattr(tokens._tokenizers, "installed", lambda backend: backend == "tiktoken")
    monkeypatch.setattr(tokens._tokenizers, "load", lambda backend, encoding, wait=None: words)


async def test_off_counts_no_tokens_even_where_the_automatic_choice_would(tiktoken_would_load):
    a.set_tokenizer(None)
    assert tokens.tokenizer() == (words, "tiktoken:o200k_base")

    a.set_tokenizer("off")
    assert tokens.tokenizer() == (None, "unavailable")
    model = a.ScriptedModel(["Fine."])
    result = await a.run(a.Agent("Solo", "Be brief.", model), "How are you today?")
    assert result.calls["tokens_in"].isna().all() and result.calls["tokens_out"].isna().all()
    assert list(result.calls["tokens_method"]) == ["unavailable"]

    a.set_tokenizer(None)  # back to automatic: the tokenizer is found again
    assert tokens.tokenizer() == (words, "tiktoken:o200k_base")


def test_off_replaces_a_custom_tokenizer(word_tokenizer):
    assert tokens.tokenizer()[1] == "words"
    a.set_tokenizer("off")
    assert tokens.tokenizer() == (None, "unavailable")


@pytest.mark.parametrize("value", ["on", False, 0])
def test_anything_else_is_refused_with_the_valid_choices(value):
    with pytest.raises(
        a.UserError,
        match="a function text -> int, 'off' or None \\(automatic\\), 'auto', 'tiktoken' or",
    ):
        a.set_tokenizer(value)  # type: ignore[arg-type]
