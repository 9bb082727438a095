"""OpenAIModel and AnthropicModel streaming through their real SDK clients, against servers on
127.0.0.1 that send server-sent events (tests/fake_*_server.py), streams cut mid-way included."""

from __future__ import annotations

import uuid

import pytest
from fake_anthropic_server import FakeAnthropicServer, error_event, message, text, tool_use
from fake_anthropic_server import streamed as claude_stream
from fake_openai_server import FakeOpenAIServer, Streamed, completion, error
from fake_openai_server import streamed as chat_stream

import agentnb as a
from agentnb.models import Backoff

KEY = "sk-test-" + uuid.uuid4().hex
FAST = Backoff(initial=0.001, jitter=0.0)
TIMES = ("started", "ended", "latency_s", "ttft_s", "ttfb_s")


@a.tool
def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def gpt(server: FakeOpenAIServer) -> a.OpenAIModel:
    return a.OpenAIModel("fake-model", base_url=server.url, api_key=KEY, backoff=FAST)


def claude(server: FakeAnthropicServer) -> a.AnthropicModel:
    pytest.importorskip("anthropic")
    return a.AnthropicModel("claude-test", base_url=server.url, api_key=KEY, backoff=FAST)


def deltas(events: list[a.runtime.events.Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, a.TextDelta)]


def stream(agent: a.Agent, input: str) -> tuple[list[a.runtime.events.Event], a.RunResult]:
    events = list(a.stream_sync(agent, input))
    return events, events[-1].result


# -- OpenAI


def test_openai_streams_text_and_tool_calls_and_gives_the_unstreamed_result():
    whole = [completion(tool_calls=[("add", {"x": 2, "y": 3})]), completion("The sum is 5.")]
    pieces = [chat_stream(tool_calls=[("add", {"x": 2, "y": 3})]), chat_stream("The sum is 5.")]
    with FakeOpenAIServer(whole) as plain, FakeOpenAIServer(pieces) as server:
        expected = a.run_sync(a.Agent("calc", "You add.", gpt(plain), [add]), "2+3?", run_id="r")
        events, result = stream(a.Agent("calc", "You add.", gpt(server), [add]), "2+3?")

    assert result.ok, result.error
    assert deltas(events) == ["The ", "sum ", "is 5", "."]
    assert result.output == expected.output == "The sum is 5."
    # same rows (characters, provider usage, stop reasons) as the unstreamed run
    untimed = [c for c in expected.calls.columns if c not in (*TIMES, "run_id")]
    assert result.calls[untimed].equals(expected.calls[untimed])
    assert list(result.calls["provider_tokens_in"]) == [10, 10]
    assert result.usage == expected.usage
    assert result.calls["ttft_s"].notna().all() and expected.calls["ttft_s"].isna().all()
    # both timed to the first byte; a stream's headers come before its first token
    assert result.calls["ttfb_s"].notna().all() and expected.calls["ttfb_s"].notna().all()
    assert (result.calls["ttfb_s"] <= result.calls["ttft_s"]).all()
    # what went over the wire: the same request, streamed, with usage asked for
    first = server.bodies[0]
    assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
    assert {k: v for k, v in first.items() if k not in ("stream", "stream_options")} == (
        plain.bodies[0]
    )
    assert server.bodies[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "content": "5",
    }


def test_openai_stream_cut_mid_way_ends_the_call_with_its_partial_text():
    cut = chat_stream("Clause 4 is risky because").cut(4)  # role, three pieces; no end
    with FakeOpenAIServer([cut]) as server:
        events, result = stream(a.Agent("w", "x", gpt(server)), "go")

    assert not result.ok and isinstance(result.error, a.StreamBroken)
    message = str(result.error)
    assert "broke off after it began" in message and "no finish reason and no [DONE]" in message
    assert KEY not in message
    assert deltas(events) == ["Clau", "se 4", " is "]
    assert len(server.bodies) == 1  # not retried: what was shown cannot be taken back
    (row,) = result.trace.call_rows
    assert row.status == "error" and row.ttft_s >= 0
    span = next(s for s in result.spans if s.span_id == row.span_id)
    assert span.attrs["partial_text"] == "Clause 4 is "


def test_openai_stream_ending_after_the_finish_reason_without_done_is_broken_too():
    full = chat_stream("ok")
    cut = full.cut(len(full.events) - 1)  # everything but [DONE]
    with FakeOpenAIServer([cut]) as server:
        _, result = stream(a.Agent("w", "x", gpt(server)), "go")

    assert isinstance(result.error, a.StreamBroken)
    assert "no [DONE] after the finish reason" in str(result.error)


def test_openai_retries_before_the_first_delta_only():
    empty_then_cut = chat_stream("never shown").cut(1)  # the role chunk only: no delta yet
    script = [error(503, "busy"), empty_then_cut, chat_stream("Hello there")]
    with FakeOpenAIServer(script) as server:
        events, result = stream(a.Agent("w", "x", gpt(server)), "go")

    assert result.ok, result.error
    assert deltas(events) == ["Hell", "o th", "ere"]
    assert len(server.bodies) == 3
    assert result.calls["retries"][0] == 2
    retries = [e for e in result.spans[2].attrs["events"] if e["event"] == "retry"]
    assert [r["status"] for r in retries] == [503, "connection_error"]


def test_openai_error_status_that_is_not_retried_ends_the_run_plainly():
    with FakeOpenAIServer([error(401, "Incorrect API key provided: " + KEY)]) as server:
        _, result = stream(a.Agent("w", "x", gpt(server)), "go")

    assert isinstance(result.error, a.ModelHTTPError)
    assert not isinstance(result.error, a.StreamBroken)
    assert "HTTP 401" in str(result.error) and KEY not in str(result.error)


# -- Anthropic


def test_anthropic_streams_its_events_and_gives_the_unstreamed_result():
    blocks = [
        (text("Adding."), tool_use("toolu_1", "add", x=2, y=3)),
        (text("The sum is 5."),),
    ]
    whole = [message(*b, input_tokens=30, output_tokens=9) for b in blocks]
    pieces = [claude_stream(*b, input_tokens=30, output_tokens=9) for b in blocks]
    with FakeAnthropicServer(whole) as plain, FakeAnthropicServer(pieces) as server:
        expected = a.run_sync(a.Agent("calc", "You add.", claude(plain), [add]), "2+3?")
        events, result = stream(a.Agent("calc", "You add.", claude(server), [add]), "2+3?")

    assert result.ok, result.error
    assert deltas(events) == ["Addi", "ng.", "The ", "sum ", "is 5", "."]
    assert result.output == expected.output == "The sum is 5."
    untimed = [c for c in expected.calls.columns if c not in (*TIMES, "run_id")]
    assert result.calls[untimed].equals(expected.calls[untimed])
    assert result.calls["ttfb_s"].notna().all() and expected.calls["ttfb_s"].notna().all()
    assert list(result.calls["provider_tokens_out"]) == [9, 9]  # message_delta's count
    assert list(result.calls["provider_tokens_in"]) == [30, 30]  # message_start's count
    assert server.bodies[0]["stream"] is True
    assert {k: v for k, v in server.bodies[0].items() if k != "stream"} == plain.bodies[0]
    assert server.bodies[1]["messages"][-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5"}
    ]


def test_anthropic_stream_cut_mid_way_ends_the_call_with_its_partial_text():
    cut = claude_stream(text("Clause 4 is risky")).cut(5)  # start, ping, block, 2 pieces
    with FakeAnthropicServer([cut]) as server:
        events, result = stream(a.Agent("w", "x", claude(server)), "go")

    assert isinstance(result.error, a.StreamBroken)
    assert "no message_stop" in str(result.error)
    assert deltas(events) == ["Clau", "se 4"]
    assert len(server.bodies) == 1
    span = next(s for s in result.spans if s.kind == "model_call")
    assert span.status == "error" and span.attrs["partial_text"] == "Clause 4"


def test_anthropic_overloaded_event_before_the_first_delta_is_retried():
    overloaded = Streamed(
        [claude_stream(text("x")).events[0], error_event("overloaded_error", "Overloaded")]
    )
    with FakeAnthropicServer([overloaded, claude_stream(text("Fine."))]) as server:
        events, result = stream(a.Agent("w", "x", claude(server)), "go")

    assert result.ok and result.output == "Fine."
    assert deltas(events) == ["Fine", "."]
    assert len(server.bodies) == 2 and result.calls["retries"][0] == 1


def test_anthropic_error_event_after_the_first_delta_breaks_the_stream():
    good = claude_stream(text("Partial answer"))
    broken = Streamed([*good.events[:4], error_event("overloaded_error", "Overloaded")])
    with FakeAnthropicServer([broken]) as server:
        events, result = stream(a.Agent("w", "x", claude(server)), "go")

    assert isinstance(result.error, a.StreamBroken) and "Overloaded" in str(result.error)
    assert deltas(events) == ["Part"] and len(server.bodies) == 1


def test_anthropic_structured_output_through_the_output_tool_streams_as_text():
    from pydantic import BaseModel

    class Verdict(BaseModel):
        risk: str

    reply = claude_stream(tool_use("toolu_9", "final_answer", risk="high"))
    with FakeAnthropicServer([reply]) as server:
        agent = a.Agent("judge", "Judge.", claude(server), output_type=Verdict)
        events, result = stream(agent, "go")

    assert result.ok and result.output == Verdict(risk="high")
    # the output tool's input, as the model writes it: text, not a tool call
    assert len(deltas(events)) > 1 and "".join(deltas(events)) == '{"risk": "high"}'
    assert not [e for e in events if isinstance(e, a.ToolCallDelta)]
    assert [e.output for e in events if isinstance(e, a.PartialOutput)][-1] == Verdict(risk="high")


def test_anthropic_output_tool_streams_a_wrapped_answer_without_its_wrapper():
    reply = claude_stream(tool_use("toolu_9", "final_answer", response=[1, 22, 333]))
    with FakeAnthropicServer([reply]) as server:
        agent = a.Agent("counter", "Count.", claude(server), output_type=list[int])
        events, result = stream(agent, "go")

    assert result.ok and result.output == [1, 22, 333]
    assert "".join(deltas(events)) == "[1, 22, 333]"
    assert [e.output for e in events if isinstance(e, a.PartialOutput)][-1] == [1, 22, 333]
    assert [e.text for e in events if isinstance(e, a.MessageOutput)] == ["[1,22,333]"]


def test_model_settings_reach_the_wire_when_streamed():
    settings = a.ModelSettings(temperature=0.2, extra={"user": "u-7"})
    with FakeOpenAIServer([chat_stream("ok")]) as server:
        _, result = stream(a.Agent("w", "x", gpt(server), model_settings=settings), "go")
    assert result.ok, result.error
    assert server.bodies[0]["temperature"] == 0.2 and server.bodies[0]["user"] == "u-7"

    with FakeAnthropicServer([claude_stream(text("ok"))]) as server:
        _, result = stream(a.Agent("w", "x", claude(server), model_settings=settings), "go")
    assert result.ok, result.error
    assert server.bodies[0]["temperature"] == 0.2 and server.bodies[0]["user"] == "u-7"


def test_a_server_that_rejects_stream_options_is_streamed_without_usage():
    script = [
        error(400, "Unrecognized request argument supplied: stream_options"),
        chat_stream("ok"),
    ]
    with FakeOpenAIServer(script) as server:
        _, result = stream(a.Agent("w", "x", gpt(server)), "go")

    assert result.ok and result.output == "ok"
    assert "stream_options" in server.bodies[0] and "stream_options" not in server.bodies[1]
    events = result.spans[2].attrs["events"]
    assert {"event": "stream_options_dropped", "status": 400} in events


def test_streamed_calls_reuse_their_connection():
    # A stream's body is read to its end after [DONE], so closing it keeps the connection
    # in the pool: a closed-early body would cost every streamed call a new connection.
    from benchmarks.sse_server import KeepAliveStreamServer

    with KeepAliveStreamServer("Hello there, streamed.") as server:
        model = gpt(server)  # type: ignore[arg-type]
        agent = a.Agent("a", "Be brief.", model=model)
        try:
            results = [stream(agent, f"question {i}")[1] for i in range(20)]
        finally:
            model.close()  # the pooled connection, kept alive by the server
        assert [r.output for r in results] == ["Hello there, streamed."] * 20
        assert server.requests == 20
        assert server.connections <= 2
    assert all(body["stream"] is True for body in server.bodies)
    assert [body["messages"][-1]["content"] for body in server.bodies] == [
        f"question {i}" for i in range(20)
    ]
