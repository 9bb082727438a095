"""Counting a call's tokens in one pass gives what counting its request and response apart gives,
and a count kept for one text is never served for another."""

from __future__ import annotations

import random

from agentnb.models.types import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec
from agentnb.trace import tokens
from agentnb.trace.history import HistoryTally


def _words(rnd: random.Random) -> str:
    return " ".join(rnd.choice(["a", "bb", "c c", "dé", "{}"]) for _ in range(rnd.randint(0, 6)))


def test_call_tokens_equal_request_and_response_tokens_counted_apart(word_tokenizer):
    rnd = random.Random(5)
    spec = ToolSpec("step", "One step.", {"type": "object"})
    history: list[Message] = [Message.user(_words(rnd))]
    tally = HistoryTally()
    for turn in range(60):
        request = ModelRequest(_words(rnd) if turn % 7 == 0 else "sys", list(history), [spec])
        calls = tuple(ToolCall(f"c{turn}{i}", _words(rnd), "step") for i in range(turn % 3))
        response = ModelResponse(_words(rnd), calls)
        got = tokens.call_tokens(request, (response.text, response.tool_calls), tally)
        expected_in, method = tokens.request_tokens(request)  # a fresh pass, no tally
        assert got == (expected_in, tokens.response_tokens(response), method)
        assert method == "words"
        history.append(Message.assistant(response.text, calls))
        history += [Message.tool(c, _words(rnd)) for c in calls]


def test_a_failed_call_has_tokens_in_and_none_out(word_tokenizer):
    request = ModelRequest("sys", [Message.user("one two three")])
    assert tokens.call_tokens(request, None) == (4, None, "words")


def test_without_a_tokenizer_nothing_is_counted():
    tokens.set_tokenizer("off")
    try:
        request = ModelRequest("sys", [Message.user("one two")])
        assert tokens.call_tokens(request, ("x", ())) == (None, None, "unavailable")
    finally:
        tokens.set_tokenizer(None)


def test_equal_specs_share_a_count_and_a_changed_spec_is_counted_anew(word_tokenizer):
    first = ToolSpec("look", "Look it up.", {"type": "object"})
    again = ToolSpec("look", "Look it up.", {"type": "object"})  # an agent built anew
    other = ToolSpec("look", "Look it up, twice over.", {"type": "object"})
    n_first, _ = tokens.spec_tokens([first])
    seen = len(word_tokenizer)
    assert tokens.spec_tokens([again]) == (n_first, "words")
    assert len(word_tokenizer) == seen  # served from the count of the same text
    n_other, _ = tokens.spec_tokens([other])
    assert n_other == n_first + 2 and len(word_tokenizer) == seen + 1
