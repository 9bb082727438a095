"""Shared fixtures. Tests never reach the network: no real model is ever called."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("AGENTNB_TOKENIZER", "off")  # never try to download tiktoken's files

from agentnb.trace import tokens  # noqa: E402


@pytest.fixture(autouse=True)
def _reset_tokenizer():
    """Each test starts without a tokenizer (as on a machine with no tiktoken encodings)."""
    tokens.set_tokenizer(None)
    yield
    tokens.set_tokenizer(None)


@pytest.fixture
def word_tokenizer():
    """A stand-in tokenizer (one token per whitespace-separated word) that counts its calls."""
    seen: list[str] = []

    def count(text: str) -> int:
        seen.append(text)
        return len(text.split())

    tokens.set_tokenizer(count, "words")
    return seen
