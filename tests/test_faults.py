"""Fault injection: both HTTP adapters against a server that misbehaves (tests/fault_server.py),
in a single agent and as the one failing sub-agent of a coordinator.

Each case asserts the outcome, how many requests the server saw, a bound on the time the
trace shows (not the wall clock), that the partial trace is kept, and that the key shows
nowhere: not in an error's text or chain, a pickle, a recording nor the log lines
(tests/secret_scan.py). Settings are short (timeouts of 0.2-0.3 s, backoffs of
10 ms) so that the whole suite stays fast.

The adapters do not stream yet; when they do, a streamed variant of each case is a play
built from `fault_server.sse_head`/`sse_event` instead of `response` (the last test shows a
stream from this server bounded by the attempt's `Deadline`, as an adapter's would be).
"""

from __future__ import annotations

import email.utils
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic  # noqa: F401 (imported now, so that no run's time includes importing an SDK)
import openai
import pytest
from fake_anthropic_server import message, text
from fake_openai_server import completion
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
SETTINGS: dict[str, Any] = {"timeout": 0.3, "max_retries": 2, "backoff": FAST}
BRIEF: dict[str, Any] = {"timeout": 0.2, "max_retries": 1}
"""For the faults that last until the timeout: one retry, sooner."""


def _add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


add = a.tool(_add, name="add")  # its function has a module-level name: results pickle


@dataclass(frozen=True)
class Provider:
    name: str
    prefix: str
    ok: Callable[[str], dict[str, Any]]
    call: Callable[[str, Any], dict[str, Any]]
    """A reply calling tool ``name`` with these arguments (raw JSON text for OpenAI)."""
    error: Callable[[int, str], dict[str, Any]]

    def model(self, url: str, **options: Any) -> a.OpenAIModel | a.AnthropicModel:
        settings = {**SETTINGS, **options}
        base = url + self.prefix
        if self.name == "openai":
            return a.OpenAIModel("fake-model", base_url=base, api_key=KEY, **settings)
        return a.AnthropicModel("claude-test", base_url=base, api_key=KEY, **settings)


def _openai_call(name: str, arguments: Any) -> dict[str, Any]:
    body = completion(tool_calls=[(name, {})])
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = arguments
    return body


OPENAI = Provider(
    "openai",
    "/v1",
    lambda words: completion(words),
    _openai_call,
    lambda status, said: {"error": {"message": said, "type": "test_error"}},
)
ANTHROPIC = Provider(
    "anthropic",
    "",
    lambda words: message(text(words)),
    lambda name, arguments: message(
        {"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments}
    ),
    lambda status, said: {"type": "error", "error": {"type": "api_error", "message": said}},
)
PROVIDERS = [OPENAI, ANTHROPIC]


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
    within: float = 3.0
    """A bound on the run's time, read from the trace (seconds)."""
    options: dict[str, Any] = field(default_factory=dict)
    refused: bool = False
    """No server at all: nothing listens on the port."""


def _error(
    status: int, said: str, headers: dict[str, str] | None = None
) -> Callable[[Provider], list[Play]]:
    return lambda p: [response(status, p.error(status, said), headers)]


def _then_ok(first: Callable[[Provider], list[Play]]) -> Callable[[Provider], list[Play]]:
    return lambda p: [*first(p), response(200, p.ok("fine"))]


def _http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


def _half(p: Provider) -> list[Play]:
    body = json.dumps(p.ok("a reply that is cut off half-way")).encode()
    return [[Send(head(200, None, len(body)) + body[: len(body) // 2]), Reset()]]


def _truncated_json(p: Provider) -> list[Play]:
    body = json.dumps(p.ok("cut"))
    return [response(200, body[: len(body) // 2])]


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
        _half, ok=False, seen=3, retries=2, says="the connection was reset while reading the reply"
    ),
    "never-answers": Fault(
        lambda p: [[Hang()]],
        ok=False,
        seen=2,
        retries=1,
        options=BRIEF,
        says="no complete reply within the timeout of 0.2 s",
    ),
    "trickling-body": Fault(
        lambda p: [trickle(p.ok("slow " * 20), every=0.02)],
        ok=False,
        seen=2,
        retries=1,
        options=BRIEF,
        says="no complete reply within the timeout of 0.2 s",
    ),
    "not-json": Fault(
        lambda p: [
            response(200, f"<html>proxy error for {KEY}</html>", {"Content-Type": "text/html"})
        ],
        ok=False,
        seen=1,
        status=200,
        says="answered HTTP 200: a reply that is not a ",
    ),
    "truncated-json": Fault(
        _truncated_json, ok=False, seen=1, status=200, says="(it is not valid JSON)"
    ),
    "non-utf8-bytes": Fault(
        lambda p: [response(200, json.dumps(p.ok("caf-")).encode().replace(b"caf-", b"caf\xe9"))],
        ok=False,
        seen=1,
        status=200,
        says="(it is not valid JSON)",
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
            response(200, p.call("add", '{"x": 1,' if p is OPENAI else "{bad")),
            response(200, p.ok("sorry")),
        ],
        ok=True,
        seen=2,
    ),
    "tool-call-of-an-unknown-tool": Fault(
        lambda p: [
            response(200, p.call("nosuch", "{}" if p is OPENAI else {})),
            response(200, p.ok("sorry")),
        ],
        ok=True,
        seen=2,
    ),
    "10-mb-reply": Fault(lambda p: [response(200, p.ok(BIG))], ok=True, seen=1, within=10.0),
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=PROVIDERS, ids=lambda p: p.name)
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param


def served(fault: Fault, provider: Provider) -> FaultServer:
    return FaultServer(fault.plays(provider))


def run_against(
    fault: Fault, provider: Provider, url: str, agent: Callable[[Any], a.Agent], tmp_path
):
    model = provider.model(url, **fault.options)
    recorder = a.record(model, tmp_path / "run.jsonl")
    result = a.run_sync(agent(recorder), "go")
    return model, result


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


@pytest.mark.parametrize("name", list(FAULTS))
def test_a_single_agent(name, provider, tmp_path):
    fault = FAULTS[name]
    with served(fault, provider) as server:
        url = f"http://127.0.0.1:{_free_port()}" if fault.refused else server.url
        model, result = run_against(
            fault, provider, url, lambda m: a.Agent("worker", "Work.", m, [add]), tmp_path
        )

    assert result.ok is fault.ok, result.error
    assert server.seen == fault.seen
    if fault.ok:
        assert result.output in ("fine", "sorry", BIG)
    else:
        assert isinstance(result.error, a.ModelHTTPError)
        assert fault.says in str(result.error)
        assert result.error.status == fault.status
        assert result.spans[0].status == "error"
        assert any('"run_end"' in line and "ModelHTTPError" in line for line in result.log_lines())
    check_trace(result, fault, model.name)
    if name.startswith("tool-call"):
        sent_back = json.dumps(server.requests[1].json())
        assert "Tool error" in sent_back  # the model was told, and may recover
    assert_no_key(model, result, tmp_path / "run.jsonl")


@pytest.mark.parametrize("name", list(FAULTS))
def test_a_coordinator_whose_one_sub_agent_meets_the_fault(name, provider, tmp_path):
    fault = FAULTS[name]
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
        assert told["helper"].startswith("ERROR: helper failed: ModelHTTPError: ")
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
    from agentnb.models._deadline import AttemptTimeout, Deadline

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
        deadline = Deadline(5.0, idle=0.2)
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
