"""Shared fixtures. Tests never reach the network: no real model is ever called."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("AGENTNB_TOKENIZER", "off")  # never try to download tiktoken's files

from hypothesis import settings  # noqa: E402

# The property tests are the same examples on every run and every machine, and keep no database,
# so a fresh clone's first `python -m pytest` is the run CI made. Finding new failures is the job
# of a separate, longer random run: `HYPOTHESIS_PROFILE=explore python -m pytest tests`.
settings.register_profile("default", derandomize=True, database=None)
settings.register_profile("explore", max_examples=2000, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

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


# -- the real model (tests marked local_model): one llama.cpp server for the whole session

from skip_reasons import untested_parts  # noqa: E402

from agentnb.models.local_server.model import REQUIRE_ENV, missing_packages  # noqa: E402
from agentnb.models.local_server.model import TESTS_HINT as LOCAL_HINT  # noqa: E402


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without ``agentnb[local]`` the real-model tests skip (one reason, one line), unless
    ``AGENTNB_REQUIRE_LOCAL=1`` (CI), where they run and fail for want of the packages."""
    if not missing_packages() or os.environ.get(REQUIRE_ENV) == "1":
        return
    skip = pytest.mark.skip(reason=LOCAL_HINT)
    for item in items:
        if item.get_closest_marker("local_model") is not None:
            item.add_marker(skip)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config):
    """After the skips' reasons (-rs), one line says which optional parts did not run."""
    yield
    reasons = [str(r.longrepr) for r in terminalreporter.stats.get("skipped", [])]
    parts = untested_parts(reasons)
    if parts:
        terminalreporter.write_line("not tested here: " + "; ".join(parts))


def _started(model: str):
    missing = missing_packages(model)
    if missing:
        message = f"{LOCAL_HINT} (missing: {', '.join(missing)})"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {message}", pytrace=False)
        pytest.skip(LOCAL_HINT)
    import agentnb

    server = agentnb.local_model(model, max_retries=0, log_prompts=True)
    server.start()
    return server


@pytest.fixture(scope="session")
def local_server():
    """llama.cpp's server with SmolLM2-135M-Instruct, started once (through
    `agentnb.local_model`) for every test that needs it, stopped at the session's end; it
    logs every prompt it tokenizes (``server.prompts()``)."""
    server = _started("smollm2-135m")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gemma_server():
    """The same with Gemma 3 270M (``local_model("gemma3-270m")``)."""
    server = _started("gemma3-270m")
    yield server
    server.stop()
