"""Benchmark 5: token counting on a growing history stays flat per turn.

Every turn resends the whole history, so counting it afresh would cost a tokenizer pass over
everything said so far — quadratic over a conversation. agentnb caches each message's count
on the message (and the system prompt's and tool specs'), so a turn only tokenizes what is
new. This drives `agentnb.trace.tokens.request_tokens` over a tool loop growing to ``turns``
turns with a stand-in tokenizer (`agentnb.set_tokenizer`) that counts the texts it is given,
and compares the first and last ``window`` turns. For scale, the same history counted with
no cache: the texts a tokenizer would have to read.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from agentnb.models.types import Message, ModelRequest, ToolCall, ToolSpec
from agentnb.trace import set_tokenizer
from agentnb.trace.history import HistoryTally
from agentnb.trace.tokens import request_tokens

from ._stats import Row, row, summarize

SYSTEM = "You are a careful analyst. Look things up before you answer, and quote your sources."
SPEC = ToolSpec(
    "lookup",
    "Look a key up in the reference table.",
    {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
)
TARGET_TEXTS_PER_TURN = 2.0
"""A turn adds an assistant message (its call's arguments) and a tool result: two new texts."""


def _one_pass(turns: int, texts: list[str], tallied: bool = True) -> list[float]:
    """Microseconds of `request_tokens` at each turn; fresh messages, so the cache starts cold.

    ``tallied`` measures what the run loop does (a `HistoryTally` per agent: only new messages
    are visited); without it every turn adds up the cached counts of the whole history.
    """
    messages = [Message.user("Find the values of every key, then sum them.")]
    times: list[float] = []
    tally = HistoryTally() if tallied else None
    for turn in range(1, turns + 1):
        request = ModelRequest(SYSTEM, list(messages), [SPEC])
        start = time.perf_counter()
        tokens, _ = request_tokens(request, tally)
        times.append((time.perf_counter() - start) * 1e6)
        if tokens is None:
            raise RuntimeError("the benchmark tokenizer was not used")
        call = ToolCall("lookup", json.dumps({"key": f"key-{turn}"}), f"call_{turn}")
        messages.append(Message.assistant(None, (call,)))
        messages.append(Message.tool(call, f"The value of key-{turn} is {turn * 7} units."))
    texts.append(str(len(messages)))  # keeps the loop honest: the history really grew
    return times


def _uncached_texts(turns: int) -> int:
    """Texts a tokenizer would read if every request were counted from scratch."""
    # turn t sends: system + spec + the task + 2 (t - 1) messages
    return sum(3 + 2 * (t - 1) for t in range(1, turns + 1))


def bench_token_cache(turns: int = 500, window: int = 50, repeats: int = 5) -> dict[str, Any]:
    window = min(window, max(turns // 2, 1))
    set_tokenizer(lambda text: len(text.split()), "words (benchmark)")
    grew: list[str] = []
    try:
        passes = [_one_pass(turns, grew) for _ in range(repeats)]
        untallied = [_one_pass(turns, grew, tallied=False) for _ in range(repeats)]
    finally:
        set_tokenizer(None)
    per_turn = [statistics.median(p[t] for p in passes) for t in range(turns)]
    first = summarize(per_turn[:window])
    last = summarize(per_turn[-window:])
    texts_total, texts_last = _texts_asked(turns, window)
    growth = last["median"] / first["median"]
    last_untallied = summarize(
        [statistics.median(p[t] for p in untallied) for t in range(turns)][-window:]
    )
    target, met = f"<= {TARGET_TEXTS_PER_TURN:g}", texts_last <= TARGET_TEXTS_PER_TURN
    rows: list[Row] = [
        row(f"turns 1–{window}", "request_tokens per turn", first["median"], "µs", spread=first),
        row(
            f"turns {turns - window + 1}–{turns}",
            "request_tokens per turn",
            last["median"],
            "µs",
            spread=last,
            note=f"{growth:.1f}× the first {window} turns",
        ),
        row(
            f"turns {turns - window + 1}–{turns}, no tally",
            "request_tokens per turn",
            last_untallied["median"],
            "µs",
            spread=last_untallied,
            note="adding up every cached count each turn (before the history tally)",
        ),
        row(
            f"turns {turns - window + 1}–{turns}",
            "texts tokenized per turn",
            texts_last,
            "texts",
            target=target,
            met=met,
        ),
        row(
            f"{turns} turns",
            "texts tokenized in all",
            texts_total,
            "texts",
            note=f"{_uncached_texts(turns):,} without the per-message cache",
        ),
    ]
    return {
        "name": "token_cache",
        "title": "Token counting on a growing history (stand-in tokenizer)",
        "params": {"turns": turns, "window": window, "repeats": repeats},
        "data": {
            "per_turn_us": per_turn,
            "first_window": first,
            "last_window": last,
            "growth": growth,
            "texts_total": texts_total,
            "texts_per_turn_last_window": texts_last,
            "texts_uncached": _uncached_texts(turns),
        },
        "rows": rows,
    }


def _texts_asked(turns: int, window: int) -> tuple[int, float]:
    """Texts the tokenizer is given over one cold pass, and per turn over its last ``window``."""
    asked: list[str] = []

    def count(text: str) -> int:
        asked.append(text)
        return len(text.split())

    set_tokenizer(count, "words (benchmark, counted)")  # a new tokenizer: every cache is cold
    try:
        messages = [Message.user("Find the values of every key, then sum them.")]
        mark = 0
        for turn in range(1, turns + 1):
            if turn == turns - window + 1:
                mark = len(asked)
            request_tokens(ModelRequest(SYSTEM, list(messages), [SPEC]))
            call = ToolCall("lookup", json.dumps({"key": f"key-{turn}"}), f"call_{turn}")
            messages.append(Message.assistant(None, (call,)))
            messages.append(Message.tool(call, f"The value of key-{turn} is {turn * 7} units."))
    finally:
        set_tokenizer(None)
    return len(asked), (len(asked) - mark) / window
