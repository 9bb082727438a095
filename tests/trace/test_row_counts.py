"""Counting an agent's rows in one pass (`agentnb.trace._row_counts`) gives what counting each
row the plain way (`CallRow.count_tokens`) gives: the same columns, the same chains of
fingerprints, the same tokens on the spans, on random runs of interleaved agents whose
histories grow, are replaced, change prompt, specs, schema or model, fail, or are partly
counted during the run."""

from __future__ import annotations

import random
from typing import Any

import pytest

from agentnb.models.types import (
    Message,
    ModelRequest,
    ModelResponse,
    OutputSchema,
    ToolCall,
    ToolSpec,
    Usage,
)
from agentnb.trace import tokens
from agentnb.trace._row_counts import count_rows
from agentnb.trace.calls import CALL_COLUMNS, CallRow, columns_of, row_values
from agentnb.trace.history import HistoryTally
from agentnb.trace.spans import Trace

TIMES = ("started", "ended", "latency_s")
"""Read off the clock: they differ between two plays of one script."""
WORDS = ["a", "bb", "é", "step", "done", "\u2028", "x y", "", "!"]


def _text(rnd: random.Random) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 4)))


class _Agent:
    def __init__(self, rnd: random.Random, name: str) -> None:
        self.name, self.tally = name, HistoryTally()
        self.system = _text(rnd)
        self.specs = [ToolSpec(f"t{i}", _text(rnd), {"type": "object"}) for i in range(2)]
        self.schema: OutputSchema | None = None
        self.model: object = None
        self.messages = [Message.user(_text(rnd))]


def _script(seed: int) -> list[tuple[Any, ...]]:
    """A random run, as steps that `_play` turns into fresh objects each time."""
    rnd = random.Random(seed)
    return [
        (rnd.random(), rnd.randrange(4), rnd.randrange(1000)) for _ in range(rnd.randint(1, 60))
    ]


def _play(seed: int, steps: list[tuple[Any, ...]]) -> tuple[Trace, list[CallRow]]:
    """The rows of ``steps``, made as the run loop makes them; ``read`` rows counted at once."""
    rnd = random.Random(seed)
    trace = Trace("run")
    agents = [_Agent(rnd, f"agent{i}") for i in range(3)]
    read_now: list[CallRow] = []
    for chance, which, pick in steps:
        agent = agents[which % 3]
        span = trace.start("model_call", "m", None, agent=agent.name, path=agent.name, depth=1)
        if chance < 0.05:  # a handoff: the history replaced, the tally reset
            agent.messages = [Message.user(_text(rnd))]
            agent.tally.reset()
        elif chance < 0.08:  # a history replaced without telling the tally
            agent.messages = [Message.user(_text(rnd)), *agent.messages[1:]]
        elif chance < 0.11:
            agent.system = _text(rnd)
        elif chance < 0.14:
            agent.specs = list(agent.specs)  # equal specs, a new list
        elif chance < 0.16:
            agent.specs = agent.specs[:1]
        elif chance < 0.18:
            agent.schema = OutputSchema("answer", {"type": "object", "n": pick})
        elif chance < 0.20:
            agent.model = rnd.choice([None, "gpt-4o", "claude-3-5-sonnet"])
        request = ModelRequest(agent.system, list(agent.messages), agent.specs, agent.schema)
        calls = tuple(
            ToolCall(f"t{i}", f'{{"n": "{_text(rnd)}"}}', f"c{pick}_{i}") for i in range(pick % 3)
        )
        usage = Usage(input_tokens=pick, output_tokens=3) if pick % 5 == 0 else Usage()
        response = (
            None if pick % 17 == 0 else ModelResponse(_text(rnd) or None, list(calls), usage=usage)
        )
        trace.end(span, "ok" if response is not None else "error")
        row = CallRow.measure("run", span, request, response, agent.tally, "ok", [], agent.model)
        trace.call_rows.append(row)
        if pick % 13 == 0:  # read during the run (a budget, a hook)
            read_now.append(row)
            row.count_tokens()
        if response is not None:
            agent.messages.append(Message.assistant(response.text, calls))
            agent.messages += [Message.tool(c, _text(rnd)) for c in calls]
    return trace, read_now


def _chain(prefix: Any) -> Any:
    if prefix is None:
        return None
    return [(p.kind, p.digest, p.tokens, p.total, p.args, p.depth) for p in prefix.parts()]


def _seen(trace: Trace) -> list[Any]:
    out = []
    for row in trace.call_rows:
        values = dict(zip(CALL_COLUMNS, row.values(), strict=True))
        values["prefix"] = _chain(values["prefix"])
        for clock in TIMES:
            del values[clock]
        spans = [s for s in trace.spans if s.span_id == row.span_id]
        out.append((values, spans[0].attrs))
    return out


def _flaky(text: str) -> int:
    if "!" in text:
        raise ValueError("a counter of the user's that fails")
    return len(text.split())


@pytest.mark.parametrize("counter", ["words", "flaky", "bpe-openai"])
def test_counting_an_agent_s_rows_in_one_pass_equals_counting_each_row(counter: str) -> None:
    if counter == "bpe-openai":
        pytest.importorskip("bpe_openai")
        tokens.set_tokenizer("bpe-openai")
    else:
        tokens.set_tokenizer({"words": lambda t: len(t.split()), "flaky": _flaky}[counter], counter)
    try:
        for seed in range(150):
            steps = _script(seed)
            plain, _ = _play(seed, steps)
            for row in plain.call_rows:
                row.count_tokens()
            batch, _ = _play(seed, steps)
            count_rows(batch.call_rows)
            assert all(row.pending is None for row in batch.call_rows)
            assert _seen(batch) == _seen(plain), seed
    finally:
        tokens.set_tokenizer(None)


def test_the_trace_counts_its_rows_in_one_pass(word_tokenizer: list[str]) -> None:
    trace, _ = _play(5, _script(5))
    trace.count_tokens()
    assert all(row.pending is None for row in trace.call_rows)
    assert all(row.tokens_in is not None for row in trace.call_rows)


def test_the_columns_of_rows_are_their_values_column_by_column(word_tokenizer: list[str]) -> None:
    for seed in range(40):
        trace, _ = _play(seed, _script(seed))
        rows = trace.call_rows
        got = columns_of(rows)  # counts the rows not counted yet
        assert all(row.pending is None for row in rows)
        assert got == list(zip(*map(row_values, rows), strict=True)), seed
