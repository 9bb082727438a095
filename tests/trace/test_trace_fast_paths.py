"""The trace's fast paths must agree with the slow rules they stand for.

Sizes are added up field by field instead of encoding each message, and closing a subtree
looks at the running spans only: both are what keeps the per-call overhead low and a trace of
100,000 model calls linear (see benchmarks/).
"""

from __future__ import annotations

import json
import random

import pandas as pd

from agentnb.models.types import Message, ModelRequest, OutputSchema, ToolCall, ToolSpec
from agentnb.trace.calls import CALL_COLUMNS, CallRow
from agentnb.trace.history import HistoryTally
from agentnb.trace.sizes import (
    COMPONENTS,
    canonical_request,
    message_size,
    request_sizes,
)
from agentnb.trace.spans import Span, Trace

ALPHABET = 'ab "\\\n\t\u00e9\u2028\U0001f600\x00\x1f/{}:,'


def _text(rnd: random.Random) -> str:
    return "".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 12)))


def _messages(rnd: random.Random) -> list[Message]:
    calls = tuple(
        ToolCall(_text(rnd), json.dumps({"a": _text(rnd)}, ensure_ascii=False), _text(rnd))
        for _ in range(rnd.randint(0, 3))
    )
    return [
        Message.user(_text(rnd)),
        Message.assistant(_text(rnd) if rnd.random() < 0.5 else None, calls),
        Message("tool", None, tool_call_id=None),
        *(Message.tool(c, _text(rnd)) for c in calls),
    ]


def test_message_sizes_match_the_canonical_json():
    # Measured independently: what adding the message to a request adds to the request's
    # canonical text (serialised whole), less the comma that separates it from the next one.
    rnd = random.Random(7)
    other = Message.user("x")
    alone = len(canonical_request(ModelRequest("", [other])))
    for _ in range(300):
        for message in _messages(rnd):
            added = len(canonical_request(ModelRequest("", [message, other]))) - alone - 1
            assert message_size(message).total == added


def test_request_sizes_add_up_to_the_canonical_request():
    rnd = random.Random(11)
    for i in range(300):
        schema = OutputSchema("answer", {"type": "object"}) if i % 3 == 0 else None
        tools = [ToolSpec(_text(rnd), _text(rnd), {"type": "object"}) for _ in range(i % 3)]
        request = ModelRequest(_text(rnd), _messages(rnd), tools, schema)
        sizes = request_sizes(request)
        assert sizes["total"] == len(canonical_request(request))
        assert sum(sizes[c] for c in COMPONENTS) == sizes["total"]
        assert list(sizes) == [*COMPONENTS, "total"]
        assert sizes["system"] == len(json.dumps(request.system, ensure_ascii=False)) - 2


def test_a_tally_remeasures_the_prompt_and_specs_when_they_change():
    rnd = random.Random(17)
    specs = [ToolSpec(_text(rnd), _text(rnd), {"type": "object"}) for _ in range(3)]
    prompts = ["first prompt", "second \u00e9 prompt", ""]
    tally, messages = HistoryTally(), _messages(rnd)
    for turn in range(200):
        tools = rnd.choice([specs, specs[:2], specs[::-1], [], [*specs, specs[0]]])
        if rnd.random() < 0.2:  # the same list, changed in place
            tools.append(ToolSpec("late", "Added later.", {"type": "object"}))
        schema = OutputSchema("answer", {"type": "object"}) if turn % 4 == 0 else None
        request = ModelRequest(rnd.choice(prompts), list(messages), tools, schema)
        assert request_sizes(request, tally) == request_sizes(request)
        messages += _messages(rnd)


def _tree() -> tuple[Trace, dict[str, Span]]:
    trace = Trace("r")
    s: dict[str, Span] = {}
    s["run"] = trace.start("run", "c", None, agent="c", path="c", depth=0)
    s["agent"] = trace.start("agent", "c", s["run"], agent="c", path="c", depth=0)
    s["call_a"] = trace.start("tool_call", "a", s["agent"], agent="c", path="c", depth=0)
    s["sub_a"] = trace.start("agent", "a", s["call_a"], agent="a", path="c/a", depth=1)
    s["model_a"] = trace.start("model_call", "m", s["sub_a"], agent="a", path="c/a", depth=1)
    s["call_b"] = trace.start("tool_call", "b", s["agent"], agent="c", path="c", depth=0)
    s["sub_b"] = trace.start("agent", "b", s["call_b"], agent="b", path="c/b", depth=1)
    s["done_a"] = trace.start("tool_call", "t", s["sub_a"], agent="a", path="c/a", depth=1)
    s["deep_a"] = trace.start("model_call", "m", s["done_a"], agent="a", path="c/a", depth=1)
    trace.end(s["done_a"], "ok")  # ended, but its child still runs: it is still below sub_a
    return trace, s


def test_closing_a_subtree_ends_only_its_running_spans_in_start_order():
    trace, s = _tree()
    ended: list[str] = []
    trace.on_span = lambda event, span: ended.append(span.span_id)
    trace.close_open_under(s["sub_a"], "timeout")
    assert ended == [s["model_a"].span_id, s["deep_a"].span_id]
    assert s["model_a"].status == s["deep_a"].status == "timeout"
    assert s["done_a"].status == "ok" and s["sub_a"].ended is None and s["sub_b"].ended is None
    trace.close_open_under(s["run"], "error")
    assert [span for span in trace.spans if span.ended is None] == [s["run"]]
    assert [s["sub_b"].status, s["done_a"].status] == ["error", "ok"]


def test_spans_added_by_hand_are_still_closed():
    trace, s = _tree()
    extra = Span("x1", s["sub_a"].span_id, "model_call", "m", "a", "c/a", 1, 0.0)
    trace.spans.append(extra)
    trace.close_open_under(s["sub_a"], "cancelled")
    assert extra.status == "cancelled" and s["model_a"].status == "cancelled"
    assert s["sub_b"].ended is None


def test_closing_a_subtree_matches_the_long_way_on_random_traces():
    rnd = random.Random(13)
    for _ in range(200):
        trace = Trace("r")
        spans = [trace.start("run", "c", None, agent="c", path="c", depth=0)]
        for _ in range(rnd.randint(1, 25)):
            parent = rnd.choice(spans)
            spans.append(trace.start("agent", "a", parent, agent="a", path="p", depth=0))
            if rnd.random() < 0.4:
                trace.end(rnd.choice(spans), "ok")
        root = rnd.choice(spans)  # running or not
        below, expected = {root.span_id}, []
        for span in spans:  # the long way: every span, in start order
            if span.parent_id in below:
                below.add(span.span_id)
                if span.ended is None:
                    expected.append(span.span_id)
        ended: list[str] = []
        trace.on_span = lambda event, span, out=ended: out.append(span.span_id)
        trace.close_open_under(root, "timeout")
        assert ended == expected


def _row(rnd: random.Random, i: int) -> CallRow:
    values = {c: rnd.randint(0, 9) for c in CALL_COLUMNS}
    values.update(run_id="r", span_id=f"s{i}", path=rnd.choice(["c", "c/a"]), status="ok")
    values["started"] = rnd.choice([0.5, 0.25, 1.0, 0.0]) + i * 1e-9 * rnd.randint(0, 1)
    values["tokens_in"] = rnd.choice([None, 3])
    return CallRow(**values)


def test_the_calls_frame_is_the_rows_in_start_order():
    rnd = random.Random(3)
    trace = Trace("r")
    assert list(trace.calls_frame().columns) == list(CALL_COLUMNS)
    trace.call_rows = [_row(rnd, i) for i in range(200)]
    ordered = sorted(trace.call_rows, key=lambda r: r.started)
    expected = pd.DataFrame(
        {c: [getattr(r, c) for r in ordered] for c in CALL_COLUMNS}, columns=list(CALL_COLUMNS)
    )
    frame = trace.calls_frame()
    assert frame.equals(expected)
    assert list(frame.dtypes) == list(expected.dtypes)
