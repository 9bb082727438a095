"""A captured call's row is measured when first read: the same row as measuring it at once."""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, function_tool, handoff, set_tracing_disabled  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402
from agents.usage import Usage as SdkUsage  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from agentnb.integrations import _agents_frames, _sdk_items, article, openai_agents  # noqa: E402
from agentnb.integrations._rows import MeasuredWhenRead, mark_span, with_sizes  # noqa: E402
from agentnb.models.types import ModelRequest  # noqa: E402
from agentnb.trace import CALL_COLUMNS  # noqa: E402
from agentnb.trace.calls import CallRow  # noqa: E402

set_tracing_disabled(True)

_TIMED = {"started", "ended", "latency_s", "ttft_s", "ttfb_s", "run_id"}
_TEXTS = ["", "plain", 'quote " and \\ slash', "naïve café ✓", "tab\tnew\nline", "x" * 300]


class Verdict(BaseModel):
    ok: bool
    reason: str


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(_TEXTS) for _ in range(rng.randint(1, 3)))


def _usage(rng: random.Random) -> SdkUsage | None:
    if rng.random() < 0.5:
        return None
    tokens_in, tokens_out = rng.randint(1, 500), rng.randint(1, 50)
    return SdkUsage(
        requests=1, input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + 1
    )


def _reply(rng: random.Random, output: list[object]) -> object:
    usage = _usage(rng)
    return output if usage is None else {"output": output, "usage": usage}


def _tool_loop(rng: random.Random) -> tuple[Agent, str]:
    @function_tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}: " + rng.choice(_TEXTS)

    @function_tool
    def count(text: str) -> int:
        """Count characters."""
        return len(text)

    steps = []
    for turn in range(rng.randint(1, 6)):
        calls = [
            function_call(
                rng.choice(["lookup", "count"]),
                {"key" if i % 2 else "text": _text(rng)},
                call_id=f"c{turn}_{i}",
            )
            for i in range(rng.randint(1, 3))
        ]
        calls = [c if c.name == "count" else _as_lookup(c) for c in calls]
        prefix = [assistant_message(_text(rng))] if rng.random() < 0.3 else []
        steps.append(_reply(rng, [*prefix, *calls]))
    schema = rng.random() < 0.5
    final = json.dumps({"ok": True, "reason": _text(rng)}) if schema else _text(rng)
    steps.append(_reply(rng, [assistant_message(final)]))
    agent = Agent(
        name="loop",
        instructions=_text(rng),
        model=ScriptedModel(steps),
        tools=[lookup, count],
        output_type=Verdict if schema else None,
    )
    return agent, _text(rng)


def _as_lookup(call: object) -> object:
    arguments = json.loads(call.arguments)  # type: ignore[attr-defined]
    call.arguments = json.dumps({"key": next(iter(arguments.values()))})  # type: ignore[attr-defined]
    return call


def _handoff(rng: random.Random) -> tuple[Agent, str]:
    tax = Agent(
        name="tax",
        instructions=_text(rng),
        model=ScriptedModel([_reply(rng, [assistant_message(_text(rng))])]),
    )
    triage = Agent(
        name="triage",
        instructions=_text(rng),
        model=ScriptedModel([_reply(rng, [function_call("transfer_to_tax", {}, call_id="h")])]),
        handoffs=[handoff(tax)],
    )
    return triage, _text(rng)


def _hierarchy(rng: random.Random) -> tuple[Agent, str]:
    return article.coordinator(rng.randint(1, 3), itertools.count()), article.CLAUSE


_SCENARIOS = [_tool_loop, _handoff, _hierarchy]


def _record_at_once(self, run, span, call, output, usage, status):
    """How a call was recorded before its row was measured when read: all of it at once."""
    article = self.capture.count == "article"
    history = run.history
    history.update(_sdk_items.as_input_items(call["input"]), article)
    system = call["system_instructions"]
    request = ModelRequest(
        system or "",
        list(history.messages),
        _sdk_items.tool_specs(call["tools"], call["handoffs"], run.specs),
        _sdk_items.output_schema(call["output_schema"]),
        agent=run.name,
    )
    response = _sdk_items.response(output, usage) if output is not None else None
    row = CallRow.measure(self.trace.run_id, span, request, response, run.tally, status, [])
    if article:
        row = with_sizes(row, history.article_sizes(system, call["tools"]))
    row.__class__ = MeasuredWhenRead  # the same slots: compared as the rows it stands for
    self.trace.call_rows.append(row)
    mark_span(span, row)


def _comparable(row: MeasuredWhenRead) -> dict[str, object]:
    values = row.as_dict()
    prefix = values["prefix"]
    values["prefix"] = None if prefix is None else (prefix.digest, prefix.total)
    return {
        k: ("nan" if isinstance(v, float) and math.isnan(v) else v)
        for k, v in values.items()
        if k not in _TIMED
    }


async def _rows(scenario, seed: int, count: str, order: random.Random | None):
    agent, task = scenario(random.Random(seed))
    with openai_agents.capture(count) as cap:  # type: ignore[arg-type]
        await Runner.run(agent, task, max_turns=20)
    rows = [row for run in cap.runs for row in run.trace.call_rows]
    assert rows and all(type(row) is MeasuredWhenRead for row in rows)
    if order is not None:  # read the characters in any order: the later calls' first
        for row in order.sample(rows, len(rows)):
            assert row.chars_in is not None
    else:  # as every table reads them: all of a run's rows at once
        for run in cap.runs:
            run.trace.count_tokens()
    return [_comparable(row) for row in rows]


@pytest.mark.parametrize("count", ["agentnb", "article"])
@pytest.mark.parametrize("seed", range(12))
async def test_a_row_read_later_is_the_row_measured_at_once(
    monkeypatch, word_tokenizer, count, seed
):
    scenario = _SCENARIOS[seed % len(_SCENARIOS)]
    later = await _rows(scenario, seed, count, random.Random(seed) if seed % 2 else None)

    monkeypatch.setattr(_agents_frames.Frame, "record", _record_at_once)
    at_once = await _rows(scenario, seed, count, None)
    assert later == at_once
    assert set(later[0]) == set(CALL_COLUMNS) - _TIMED


async def test_a_row_is_not_measured_until_read():
    agent, task = _tool_loop(random.Random(1))
    with openai_agents.capture() as cap:
        await Runner.run(agent, task)
    row = cap.runs[0].trace.call_rows[0]
    span = next(s for s in cap.spans if s.span_id == row.span_id)
    assert row.pending is not None and span.attrs.get("chars_in") is None
    assert row.chars_in > 0 and span.attrs["chars_in"] == row.chars_in
    assert cap.runs[0].chars_in == sum(r.chars_in for r in cap.runs[0].trace.call_rows)


def test_rows_of_one_agent_that_send_as_many_messages_are_counted_as_tables_count(word_tokenizer):
    """`Trace.count_tokens` counts an agent's rows in one pass where each request grows the
    last; a captured row is measured first, whatever its request's length."""
    from agentnb.integrations._rows import Unmeasured, call_row
    from agentnb.models.types import Message, Usage
    from agentnb.trace import Trace
    from agentnb.trace.history import HistoryTally

    trace, tally = Trace("r"), HistoryTally()
    for text in ("first question", "second question"):  # the history was replaced: same length
        span = trace.start("model_call", "m", None, agent="a", path="a", depth=0, turn=1)
        trace.end(span)
        row = call_row(
            "r",
            span,
            model="m",
            turn=1,
            sizes=None,
            chars_out=0,
            tokens=(None, None, ""),
            usage=Usage(),
            tool_calls=0,
            stop_reason="stop",
            status="ok",
            kind=MeasuredWhenRead,
        )
        request = ModelRequest("Be brief.", [Message.user(text)], agent="a")
        row.pending = Unmeasured(span, request, None, tally, None)
        trace.call_rows.append(row)
    trace.count_tokens()
    assert [(r.chars_in_user, r.tokens_in) for r in trace.call_rows] == [(14, 4), (15, 4)]
