"""Fault injection: both HTTP adapters against a server that misbehaves (tests/fault_server.py),
in a single agent and as the one failing sub-agent of a coordinator.

Each case asserts the outcome, how many requests the server saw, a bound on the time the
trace shows (not the wall clock), that the partial trace is kept, and that the key shows
nowhere: not in an error's text or chain, a pickle, a recording nor the log lines
(tests/secret_scan.py). Backoffs are short (10 ms) so that the suite stays fast; timeouts are
not: a fault that is not about time gets a timeout of 5 s, so that a busy machine (an attempt
that takes longer than usual to reach the server) cannot turn a healthy attempt into a timeout
and a retry the case does not expect, and the faults about time use 1 s (`BRIEF`).

Each case runs four ways: OpenAIModel and AnthropicModel, with whole replies (`run_sync`) and
with streamed ones (`stream_sync`, the server's 200s then being server-sent events). Where a
stream must end differently (a stream that broke after its first delta is not retried: what
was shown cannot be taken back) the case says so in ``in_stream``; a few faults exist in one
form only (``only``).
"""

from __future__ import annotations

import email.utils
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import anthropic  # noqa: F401 (imported now, so that no run's time includes importing an SDK)
import openai
import pytest
from fake_anthropic_server import error_event, message, text
from fake_anthropic_server import event as anthropic_event
from fake_anthropic_server import streamed as anthropic_stream
from fake_openai_server import completion
from fake_openai_server import streamed as openai_stream
from fault_server import (
    Close,
    FaultServer,
    Hang,
    Pause,
    Play,
    Reset,
    Send,
    head,
    response,
    sse_event,
    sse_head,
    trickle,
)
from secret_scan import KEY, MASKED, assert_no_key

import agentnb as a
from agentnb.models import Backoff

FAST = Backoff(initial=0.01, multiplier=1.0, max=0.2, jitter=0.0, total=1.0)
SETTINGS: dict[str, Any] = {"timeout": 5.0, "max_retries": 2, "backoff": FAST}
BRIEF: dict[str, Any] = {"timeout": 1.0, "max_retries": 1}
"""For the faults that last until the timeout: one retry, after a timeout short enough to keep
the suite quick and long enough that every attempt reaches the server, even on a busy machine."""


def _add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


add = a.tool(_add, name="add")  # its function has a module-level name: results pickle


@dataclass(frozen=True)
class Provider:
    name: str
    prefix: str
    ok: Callable[[str], Play]
    """A reply with this text, as a whole body or as a stream."""
    call: Callable[[str, Any], Play]
    """A reply calling tool ``name`` with these arguments (raw JSON text for OpenAI)."""
    error: Callable[[int, str], dict[str, Any]]
    streamed: bool = False
    """Runs stream (`agentnb.stream_sync`), and the server's 200s are server-sent events."""

    def model(self, url: str, **options: Any) -> a.OpenAIModel | a.AnthropicModel:
        settings = {**SETTINGS, **options}
        base = url + self.prefix
        if self.name.startswith("openai"):
            return a.OpenAIModel("fake-model", base_url=base, api_key=KEY, **settings)
        return a.AnthropicModel("claude-test", base_url=base, api_key=KEY, **settings)


def _openai_call(name: str, arguments: Any) -> dict[str, Any]:
    body = completion(tool_calls=[(name, {})])
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = arguments
    return body


def _sse(events: list[str], gap: float = 0.0) -> Play:
    """A streamed reply: the events, ``gap`` seconds apart, then the server closes."""
    steps: Play = [*sse_head()]
    for i, event in enumerate(events):
        steps += [*([Pause(gap)] if i and gap else []), Send(event.encode())]
    return [*steps, Close()]


_WHOLE_PIECE = 10**9  # an argument or a text in one delta


def _openai_sse_call(name: str, raw: str) -> list[str]:
    marker = {"raw": 1}  # replaced by the raw (maybe invalid) arguments text
    events = openai_stream(tool_calls=[(name, marker)], piece=_WHOLE_PIECE).events
    old, new = json.dumps(json.dumps(marker))[1:-1], json.dumps(raw)[1:-1]
    return [e.replace(old, new) for e in events]


def _anthropic_sse_call(name: str, arguments: Any) -> list[str]:
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": {"raw": 1}}
    events = anthropic_stream(block, piece=_WHOLE_PIECE).events
    # a stream sends the input as JSON text; a str is that text as is (maybe not JSON)
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return [
        e.replace(json.dumps(json.dumps({"raw": 1}))[1:-1], json.dumps(raw)[1:-1]) for e in events
    ]


def text_events(p: Provider, words: str, piece: int = 4) -> list[str]:
    """A streamed text reply's events, ``piece`` characters per delta."""
    if p.name.startswith("openai"):
        return openai_stream(words, piece=piece).events
    return anthropic_stream(text(words), piece=piece).events


OPENAI = Provider(
    "openai",
    "/v1",
    lambda words: response(200, completion(words)),
    lambda name, arguments: response(200, _openai_call(name, arguments)),
    lambda status, said: {"error": {"message": said, "type": "test_error"}},
)
ANTHROPIC = Provider(
    "anthropic",
    "",
    lambda words: response(200, message(text(words))),
    lambda name, arguments: response(
        200, message({"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments})
    ),
    lambda status, said: {"type": "error", "error": {"type": "api_error", "message": said}},
)
OPENAI_STREAMED = replace(
    OPENAI,
    name="openai-streamed",
    ok=lambda words: _sse(openai_stream(words, piece=_WHOLE_PIECE).events),
    call=lambda name, arguments: _sse(_openai_sse_call(name, arguments)),
    streamed=True,
)
ANTHROPIC_STREAMED = replace(
    ANTHROPIC,
    name="anthropic-streamed",
    ok=lambda words: _sse(anthropic_stream(text(words), piece=_WHOLE_PIECE).events),
    call=lambda name, arguments: _sse(_anthropic_sse_call(name, arguments)),
    streamed=True,
)
PROVIDERS = [OPENAI, ANTHROPIC, OPENAI_STREAMED, ANTHROPIC_STREAMED]


@dataclass(frozen=True)
class Fault:
    """A misbehaviour, what the server plays, and what must come of it."""

    plays: Callable[[Provider], list[Play]]
    ok: bool
    """Whether the agent that meets the fault still finishes."""
    seen: int
    """Requests the server must see (its plays repeat their last one)."""
    says: str = ""
    """Part of the error message (when not ``ok``)."""
    status: int | None = None
    retries: int = 0
    """Retries of the last model call to the server."""
    within: float = 30.0
    """A bound on the run's time, read from the trace (seconds): it catches a run that outlives
    its timeouts, with room for a busy machine (which limit ended a run is asserted by the
    error's text, not by its time)."""
    options: dict[str, Any] = field(default_factory=dict)
    refused: bool = False
    """No server at all: nothing listens on the port."""
    in_stream: dict[str, Any] = field(default_factory=dict)
    """What differs when the reply is streamed (a stream that broke after its first delta
    is not retried: what was shown cannot be taken back)."""
    only: str | None = None
    """"whole" or "streamed": a fault of one form only."""
    output: str | None = None
    """The answer of a run that finishes, when not one of the replies' usual texts."""
    partial: str | None = None
    """The text a broken stream had shown, kept on its model call's span."""

    def expected(self, provider: Provider) -> Fault:
        return replace(self, **self.in_stream) if provider.streamed else self


def _error(
    status: int, said: str, headers: dict[str, str] | None = None
) -> Callable[[Provider], list[Play]]:
    return lambda p: [response(status, p.error(status, said), headers)]


def _then_ok(first: Callable[[Provider], list[Play]]) -> Callable[[Provider], list[Play]]:
    return lambda p: [*first(p), p.ok("fine")]


def _http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


def _body(p: Provider, words: str) -> dict[str, Any]:
    """A whole reply's JSON body with this text."""
    return completion(words) if p.name.startswith("openai") else message(text(words))


def _half(p: Provider) -> list[Play]:
    """The reply cut by a reset: half its body, or a stream's first two events."""
    if p.streamed:
        events = text_events(p, "a reply that is cut off half-way")
        return [[*_sse(events[: len(events) // 2])[:-1], Reset()]]
    body = json.dumps(_body(p, "a reply that is cut off half-way")).encode()
    return [[Send(head(200, None, len(body)) + body[: len(body) // 2]), Reset()]]


def _trickle(p: Provider) -> list[Play]:
    """A reply that comes slowly: a byte, or a stream's event, every 20 ms."""
    if p.streamed:
        return [_sse(text_events(p, "slow " * 20, piece=1), gap=0.02)]
    return [trickle(_body(p, "slow " * 20), every=0.02)]


def _truncated_json(p: Provider) -> list[Play]:
    body = json.dumps(_body(p, "cut"))
    return [response(200, body[: len(body) // 2])]


def _non_utf8(p: Provider) -> list[Play]:
    if p.streamed:
        events = text_events(p, "caf-", piece=100)
        return [
            [*sse_head(), *(Send(e.encode().replace(b"caf-", b"caf\xe9")) for e in events), Close()]
        ]
    return [response(200, json.dumps(_body(p, "caf-")).encode().replace(b"caf-", b"caf\xe9"))]


def _error_event(p: Provider) -> list[Play]:
    """A stream whose first event is an error (the server is overloaded), then a good one."""
    if p.name.startswith("openai"):
        event = sse_event({"error": {"message": "overloaded, try again", "code": 529}})
        return [[*sse_head(), event, Close()], p.ok("fine")]
    return [
        [*sse_head(), Send(error_event("overloaded_error", "Overloaded").encode()), Close()],
        p.ok("fine"),
    ]


def _then(p: Provider, events: list[str], tail: list[str]) -> list[Play]:
    """A stream of ``events`` then ``tail``, after which the server says nothing more."""
    return [[*sse_head(), *(Send(e.encode()) for e in [*events, *tail]), Hang()]]


def _after_the_end(p: Provider) -> list[Play]:
    """A good stream, then more text after its end marker (and a server that never closes)."""
    if p.name.startswith("openai"):
        extra = [sse_event(_chunk(" and more")).data.decode(), sse_event("[DONE]").data.decode()]
    else:
        delta = {"type": "text_delta", "text": " and more"}
        extra = [anthropic_event("content_block_delta", index=0, delta=delta)]
    return _then(p, text_events(p, "fine", piece=100), extra)


def _text_that_is(value: Any, after: int) -> Callable[[Provider], list[Play]]:
    """A stream whose delta number ``after`` (counting text deltas) holds ``value``, not text."""

    def plays(p: Provider) -> list[Play]:
        events = text_events(p, "one two three", piece=4)
        first = 1 if p.name.startswith("openai") else 3  # the role chunk; message_start...
        bad = json.loads(events[first + after].split("data: ", 1)[1])
        if p.name.startswith("openai"):
            bad["choices"][0]["delta"]["content"] = value
            event = sse_event(bad).data.decode()
        else:
            bad["delta"]["text"] = value
            event = anthropic_event("content_block_delta", index=0, delta=bad["delta"])
        return _then(p, events[: first + after], [event])

    return plays


def _keep_alives(p: Provider) -> list[Play]:
    """A stream that sends only keep-alive comments, every 20 ms, for 10 s."""
    return [[*sse_head(), *[Pause(0.02), Send(b": keep-alive\n\n")] * 500, Close()]]


BROKEN = "a stream that broke off after it began"
BIG = "x" * 10_000_000

FAULTS: dict[str, Fault] = {
    "connection-refused": Fault(
        lambda p: [],
        ok=False,
        seen=0,
        refused=True,
        says="could not connect to http://127.0.0.1:",
    ),
    "reset-before-the-body": Fault(
        lambda p: [[Reset()]], ok=False, seen=3, retries=2, says="the connection was reset"
    ),
    "reset-during-the-body": Fault(
        _half,
        ok=False,
        seen=3,
        retries=2,
        says="the connection was reset while reading the reply",
        in_stream={"seen": 1, "retries": 0, "says": f"{BROKEN} (the connection was reset"},
    ),
    "never-answers": Fault(
        lambda p: [[Hang()]],
        ok=False,
        seen=2,
        retries=1,
        options=BRIEF,
        says="no complete reply within the timeout of 1 s",
    ),
    "trickling-body": Fault(
        _trickle,
        ok=False,
        seen=2,
        retries=1,
        options=BRIEF,
        says="no complete reply within the timeout of 1 s",
        in_stream={
            "seen": 1,
            "retries": 0,
            "says": f"{BROKEN} (no complete reply within the timeout of 1 s)",
        },
    ),
    "stream-stalls-past-its-idle-limit": Fault(
        lambda p: [[*_sse(text_events(p, "one two three four")[:6])[:-1], Pause(10.0)]],
        ok=False,
        seen=1,
        options={"timeout": 5.0, "stream_idle": 0.1},
        says=f"{BROKEN} (nothing came for 0.1 s while streaming the reply)",
        only="streamed",
    ),
    "stream-ends-without-its-end-marker": Fault(
        lambda p: [_sse(text_events(p, "one two three")[:4])],
        ok=False,
        seen=1,
        says=BROKEN,
        only="streamed",
    ),
    "error-event-before-the-first-delta-then-ok": Fault(
        _error_event, ok=True, seen=2, retries=1, only="streamed"
    ),
    "not-json": Fault(
        lambda p: [
            response(200, f"<html>proxy error for {KEY}</html>", {"Content-Type": "text/html"})
        ],
        ok=False,
        seen=1,
        status=200,
        says="answered HTTP 200: a reply that is not a ",
        in_stream={"seen": 3, "retries": 2, "status": None, "says": "ended its stream early ("},
    ),
    "truncated-json": Fault(
        _truncated_json, ok=False, seen=1, status=200, says="(it is not valid JSON)", only="whole"
    ),
    "non-utf8-bytes": Fault(
        _non_utf8,
        ok=False,
        seen=1,
        status=200,
        says="(it is not valid JSON)",
        # refused in a stream as in a whole reply, not read with U+FFFD in its place
        in_stream={"status": None, "says": "a stream that is not valid UTF-8"},
    ),
    "401-echoing-the-key": Fault(
        _error(401, f"Incorrect API key provided: {MASKED}. Your key {KEY} was refused."),
        ok=False,
        seen=1,
        status=401,
        says="Check the API key",
    ),
    "400-context-length": Fault(
        _error(400, "This model's maximum context length is 8192 tokens; you sent 9000."),
        ok=False,
        seen=1,
        status=400,
        says="maximum context length is 8192 tokens",
    ),
    **{
        f"{status}-no-retry-after": Fault(
            _error(status, f"status {status}"),
            ok=False,
            seen=3,
            retries=2,
            status=status,
            says=f"answered HTTP {status}: status {status} (after 2 retries, ",
        )
        for status in (429, 500, 503, 529)
    },
    **{
        f"{status}-retry-after-0-then-ok": Fault(
            _then_ok(_error(status, "later", {"Retry-After": "0"})), ok=True, seen=2, retries=1
        )
        for status in (429, 500, 503, 529)
    },
    "429-retry-after-longer-than-backoff-max": Fault(
        _error(429, "slow down", {"Retry-After": "3600"}),
        ok=False,
        seen=1,
        status=429,
        says="not retried: the server asked to be retried in 3,600 s (Retry-After), longer than Backoff(max=0.2)",
    ),
    "503-retry-after-past-http-date-then-ok": Fault(
        _then_ok(_error(503, "later", {"Retry-After": _http_date(-60)})), ok=True, seen=2, retries=1
    ),
    "503-retry-after-future-http-date": Fault(
        lambda p: [response(503, p.error(503, "later"), {"Retry-After": _http_date(3600)})],
        ok=False,
        seen=1,
        status=503,
        says="longer than Backoff(max=0.2)",
    ),
    "500s-until-the-total-wait-runs-out": Fault(
        _error(500, "down"),
        ok=False,
        seen=3,
        retries=2,
        status=500,
        options={
            "max_retries": 10,
            "backoff": Backoff(initial=0.1, multiplier=1.0, jitter=0.0, total=0.25),
        },
        says="would pass Backoff(total=0.25)",
    ),
    "tool-call-with-invalid-json-arguments": Fault(
        lambda p: [
            p.call("add", '{"x": 1,' if p.name.startswith("openai") else "{bad"),
            p.ok("sorry"),
        ],
        ok=True,
        seen=2,
    ),
    "tool-call-of-an-unknown-tool": Fault(
        lambda p: [
            p.call("nosuch", "{}" if p.name.startswith("openai") else {}),
            p.ok("sorry"),
        ],
        ok=True,
        seen=2,
    ),
    "10-mb-reply": Fault(lambda p: [p.ok(BIG)], ok=True, seen=1, within=60.0),
    "data-after-the-end-marker": Fault(_after_the_end, ok=True, seen=1, only="streamed"),
    "a-delta-whose-text-is-a-number": Fault(
        _text_that_is(12345, after=2),
        ok=False,
        seen=1,
        says=f"{BROKEN} (a delta whose ",
        partial="one two ",
        only="streamed",
    ),
    "a-first-delta-whose-text-is-an-object": Fault(
        _text_that_is({"no": "text"}, after=0),
        ok=False,
        seen=1,
        says="is dict {'no': 'text'}, not text",
        only="streamed",
    ),
    "reply-past-max-response-chars": Fault(
        lambda p: [p.ok("x" * 200)],
        ok=False,
        seen=1,
        status=200,
        options={"max_response_chars": 50},
        says="longer than max_response_chars=50 (text and tool arguments)",
        # a stream's first delta (the whole text) is past it: nothing was shown
        in_stream={"status": None, "says": "a reply longer than max_response_chars=50 "},
    ),
    "reply-past-max-response-chars-in-pieces": Fault(
        lambda p: [_sse(text_events(p, "x" * 200, piece=4))],
        ok=False,
        seen=1,
        options={"max_response_chars": 50},
        says=f"{BROKEN} (a reply longer than max_response_chars=50",
        partial="x" * 48,
        only="streamed",
    ),
    "keep-alives-only-past-the-idle-limit": Fault(
        _keep_alives,
        ok=False,
        seen=3,
        retries=2,
        options={"timeout": 5.0, "stream_idle": 0.1},
        says="nothing came for 0.1 s while streaming the reply",
        only="streamed",
    ),
    "keep-alives-only-past-the-timeout": Fault(
        _keep_alives,
        ok=False,
        seen=2,
        retries=1,
        options=BRIEF,
        says="no complete reply within the timeout of 1 s",
        only="streamed",
    ),
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


CASES = [
    pytest.param(name, provider, id=f"{provider.name}-{name}")
    for name, fault in FAULTS.items()
    for provider in PROVIDERS
    if fault.only in (None, "streamed" if provider.streamed else "whole")
]


def served(fault: Fault, provider: Provider) -> FaultServer:
    return FaultServer(fault.plays(provider))


def run_against(
    fault: Fault, provider: Provider, url: str, agent: Callable[[Any], a.Agent], tmp_path
):
    model = provider.model(url, **fault.options)
    recorder = a.record(model, tmp_path / "run.jsonl")
    try:
        if provider.streamed:
            result = list(a.stream_sync(agent(recorder), "go"))[-1].result
        else:
            result = a.run_sync(agent(recorder), "go")
    finally:
        busy = a.run_sync(_busy_connections(model))
        a.run_sync(model.aclose())  # its idle connections, on the loop that ran it
    assert busy == [], "a failed or cut attempt left its connection open"
    return model, result


async def _busy_connections(model: Any) -> list[str]:
    """The connections of ``model``'s client still serving a request: none may be left once
    a call has ended, however its attempts failed (httpx and httpcore internals, read only)."""
    busy = []
    for slot in model._slots._items.values():
        pool = slot.client._client._transport._pool
        busy += [c.info() for c in pool.connections if not (c.is_idle() or c.is_closed())]
    return busy


def case(name: str, provider: Provider) -> Fault:
    return FAULTS[name].expected(provider)


def check_trace(result: a.RunResult, fault: Fault, model_name: str) -> None:
    run_span = result.spans[0]
    assert run_span.kind == "run" and run_span.duration is not None
    assert run_span.duration <= fault.within  # from the trace's clock, not the wall clock
    calls = [s for s in result.spans if s.kind == "model_call" and s.name == model_name]
    assert calls, "the model call is kept in the trace"
    assert all(s.ended is not None for s in result.spans)  # every span closed
    rows = result.calls[result.calls["model"] == model_name]
    assert int(rows["retries"].iloc[-1]) == fault.retries
    if not fault.ok:
        assert calls[-1].status == "error"
        assert list(rows["status"])[-1] == "error"


@pytest.mark.parametrize(("name", "provider"), CASES)
def test_a_single_agent(name, provider, tmp_path):
    fault = case(name, provider)
    with served(fault, provider) as server:
        url = f"http://127.0.0.1:{_free_port()}" if fault.refused else server.url
        model, result = run_against(
            fault, provider, url, lambda m: a.Agent("worker", "Work.", m, [add]), tmp_path
        )

    assert result.ok is fault.ok, result.error
    assert server.seen == fault.seen
    if fault.ok:
        assert result.output in ((fault.output,) if fault.output else ("fine", "sorry", BIG))
    else:
        assert isinstance(result.error, a.ModelHTTPError)
        assert fault.says in str(result.error)
        assert result.error.status == fault.status
        assert result.spans[0].status == "error"
        assert any(
            '"run_end"' in line and type(result.error).__name__ in line
            for line in result.log_lines()
        )
    check_trace(result, fault, model.name)
    if fault.partial is not None:
        call = [s for s in result.spans if s.kind == "model_call"][-1]
        assert call.attrs["partial_text"] == fault.partial
    if name.startswith("tool-call"):
        sent_back = json.dumps(server.requests[1].json())
        assert "ERROR: " in sent_back  # the model was told, and may recover
    assert_no_key(model, result, tmp_path / "run.jsonl")


@pytest.mark.parametrize(("name", "provider"), CASES)
def test_a_coordinator_whose_one_sub_agent_meets_the_fault(name, provider, tmp_path):
    fault = case(name, provider)
    lead_model = a.ScriptedModel(
        [[a.tool_call("helper", input="look"), a.tool_call("steady", input="look")], a.say("done")]
    )
    steady = a.Agent("steady", "Steady.", a.ScriptedModel([a.say("steady answer")]))

    def coordinator(model: Any) -> a.Agent:
        helper = a.Agent("helper", "Help.", model, [add])
        return a.Agent("lead", "Lead.", lead_model, [helper, steady])

    with served(fault, provider) as server:
        url = f"http://127.0.0.1:{_free_port()}" if fault.refused else server.url
        model, result = run_against(fault, provider, url, coordinator, tmp_path)

    assert result.ok, result.error  # a sub-agent's failure is text its caller can act on
    assert result.output == "done"
    assert server.seen == fault.seen
    told = dict(zip(("helper", "steady"), lead_model.requests[1].tool_results))
    assert told["steady"] == "steady answer"
    helper_span = next(s for s in result.spans if s.kind == "agent" and s.name == "helper")
    if fault.ok:
        assert helper_span.status == "ok"
    else:
        kind = "StreamBroken" if fault.says.startswith(BROKEN) else "ModelHTTPError"
        if "a reply that is not" in fault.says or "not valid JSON" in fault.says:
            kind = "UnreadableReply"  # a 200 that cannot be read: a ModelHTTPError too
        assert told["helper"].startswith(f"ERROR: helper failed: {kind}: ")
        assert fault.says in told["helper"]
        assert helper_span.status == "error"
    check_trace(result, fault, model.name)
    assert_no_key(model, result, tmp_path / "run.jsonl")


def _chunk(words: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": {"content": words}, "finish_reason": None}],
    }


@pytest.mark.parametrize(("stall", "limit"), [(10.0, "idle"), (0.0, None)], ids=["stalls", "flows"])
async def test_a_stream_from_the_fault_server_is_bounded_by_a_deadline(stall, limit):
    # The shape a streamed variant of each fault takes once the adapters stream: the same
    # server, a play of server-sent events, and the attempt's Deadline around the stream.
    from agentnb.models.http.attempt_limit import AttemptTimeout, Deadline

    play = [
        *sse_head(),
        sse_event(_chunk("one ")),
        Pause(0.01),
        sse_event(_chunk("two ")),
        Pause(stall),
        sse_event(_chunk("three")),
        sse_event("[DONE]"),
        Close(),
    ]
    got: list[str] = []
    with FaultServer([play]) as server:
        client = openai.AsyncOpenAI(api_key=KEY, base_url=server.url + "/v1", max_retries=0)
        deadline = Deadline(30.0, idle=1.0)  # idle: room for a busy machine
        stream = await deadline.run(
            client.chat.completions.create(model="fake-model", messages=[], stream=True)
        )
        try:
            async for chunk in deadline.each(stream):
                got.append(chunk.choices[0].delta.content or "")
        except AttemptTimeout as stopped:
            assert stopped.limit == limit
        else:
            assert limit is None
        await client.close()

    assert got == (["one ", "two "] if limit else ["one ", "two ", "three"])
    assert server.seen == 1


def test_a_streamed_run_recorded_replays_offline(tmp_path):
    path = tmp_path / "streamed.jsonl"
    with FaultServer([OPENAI_STREAMED.ok("from the stream")]) as server:
        model = OPENAI_STREAMED.model(server.url)
        events = list(a.stream_sync(a.Agent("w", "Work.", a.record(model, path)), "go"))
    original = events[-1].result

    replayed = a.run_sync(a.Agent("w", "Work.", a.replay(path)), "go")

    assert original.ok and replayed.ok, (original.error, replayed.error)
    assert [e.text for e in events if isinstance(e, a.TextDelta)] == ["from the stream"]
    assert replayed.output == original.output == "from the stream"
    assert KEY[:8] not in path.read_text()
