"""Shared fixtures. Tests never reach the network: no real model is ever called."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("AGENTNB_TOKENIZER", "off")  # never try to download tiktoken's files

from notebook_support import CommLog, record_comms  # noqa: E402

from agentnb.trace import tokens  # noqa: E402

PROVIDER_ENVIRONMENT = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
)
"""What the model clients read from the environment: a developer's own key or endpoint must
never reach a test (nor a test pass only because one is set)."""


@pytest.fixture(autouse=True)
def _no_provider_environment(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Every test runs without the providers' variables, except a ``live`` one."""
    if request.node.get_closest_marker("live") is None:
        for name in PROVIDER_ENVIRONMENT:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def dummy_comm(monkeypatch: pytest.MonkeyPatch) -> CommLog:
    """Widgets created in the test talk to recording comms (as in ipywidgets' own tests)."""
    return record_comms(monkeypatch)


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
