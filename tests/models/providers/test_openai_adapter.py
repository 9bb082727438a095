"""OpenAIModel through the real ``openai`` client against a Chat Completions server on 127.0.0.1.

The server (tests/fake_openai_server.py) is started per test; nothing reaches the internet
except the last test, which needs OPENAI_API_KEY and AGENTNB_LIVE=1.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid

import pytest
from fake_openai_server import FakeOpenAIServer, Reply, completion, error
from pydantic import BaseModel

import agentnb as a
from agentnb.models import Backoff, ModelRequest
from agentnb.models.http.rules import retry_after, scrub
from agentnb.models.registry import model_from_spec

KEY = "sk-test-" + uuid.uuid4().hex
FAST = Backoff(initial=0.001, jitter=0.0)


@pytest.fixture
def server():
    with FakeOpenAIServer() as s:
        yield s


def openai_model(server: FakeOpenAIServer, **options) -> a.OpenAIModel:
    options.setdefault("backoff", FAST)
    return a.OpenAIModel("fake-model", base_url=server.url, api_key=KEY, **options)


@a.tool
def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


class Verdict(BaseModel):
    risk: str
    score: int


def test_a_tool_loop_goes_over_the_wire_in_chat_completions_shape(server):
    server.script = [completion(tool_calls=[("add", {"x": 2, "y": 3})]), completion("5")]
    model = openai_model(server)

    result = a.run_sync(a.Agent("calc", "You add.", model, [add]), "2+3?")

    assert result.ok, result.error
    assert result.output == "5"
    first, second = server.bodies
    assert first["model"] == "fake-model"
    assert first["messages"] == [
        {"role": "system", "content": "You add."},
        {"role": "user", "content": "2+3?"},
    ]
    assert first["tools"][0]["type"] == "function"
    assert first["tools"][0]["function"]["name"] == "add"
    assert first["tools"][0]["function"]["parameters"]["properties"].keys() == {"x", "y"}
    assert second["messages"][2] == {
        "role": "assistant",
        "content": "",  # not null: strict local servers (llama-cpp-python) refuse a null
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "add", "arguments": '{"x": 2, "y": 3}'},
            }
        ],
    }
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_0", "content": "5"}
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    assert server.headers[0]["x-stainless-retry-count"] == "0"  # agentnb retries, not openai
    assert list(result.calls["model"]) == ["fake-model", "fake-model"]
    assert list(result.calls["stop_reason"]) == ["tool_calls", "stop"]


def test_parallel_tool_calls_in_one_turn_all_run_and_answer_by_id(server):
    server.script = [
        completion(
            tool_calls=[("add", {"x": 1, "y": 1}), ("add", {"x": 2, "y": 2})],
            call_ids=["call_a", "call_b"],
        ),
        completion("2 and 4"),
    ]

    result = a.run_sync(a.Agent("calc", "You add.", openai_model(server), [add]), "1+1, 2+2")

    assert result.ok, result.error
    tool_messages = [m for m in server.bodies[1]["messages"] if m["role"] == "tool"]
    assert tool_messages == [
        {"role": "tool", "tool_call_id": "call_a", "content": "2"},
        {"role": "tool", "tool_call_id": "call_b", "content": "4"},
    ]
    assert list(result.calls["tool_calls"]) == [2, 0]


def test_provider_usage_is_recorded_beside_agentnb_counts(server, word_tokenizer):
    server.script = [completion("hello there", prompt_tokens=123, completion_tokens=45)]

    result = a.run_sync(a.Agent("greeter", "Greet.", openai_model(server)), "hi")

    row = result.calls.iloc[0]
    assert (row["provider_tokens_in"], row["provider_tokens_out"]) == (123, 45)
    assert row["tokens_method"] == "words"  # agentnb's own count, beside the provider's
    assert row["tokens_out"] == 2
    assert (result.usage.input_tokens, result.usage.output_tokens) == (123, 45)


def test_structured_output_sends_the_json_schema(server):
    server.script = [completion('{"risk": "high", "score": 7}')]
    agent = a.Agent("judge", "Judge.", openai_model(server), output_type=Verdict)

    result = a.run_sync(agent, "contract text")

    assert result.ok, result.error
    assert result.output == Verdict(risk="high", score=7)
    fmt = server.bodies[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "verdict"
    assert fmt["json_schema"]["schema"]["properties"].keys() == {"risk", "score"}


def test_a_server_that_rejects_json_schema_gets_json_mode_and_the_choice_is_remembered(server):
    def script(body):
        if body.get("response_format", {}).get("type") == "json_schema":
            return error(400, "response_format type json_schema is not supported")
        return completion('{"risk": "low", "score": 1}')

    server.script = script
    model = openai_model(server)
    agent = a.Agent("judge", "Judge.", model, output_type=Verdict)

    first = a.run_sync(agent, "one")
    second = a.run_sync(agent, "two")

    assert first.ok and second.ok
    kinds = [b.get("response_format", {}).get("type") for b in server.bodies]
    assert kinds == ["json_schema", "json_object", "json_object"]
    system = server.bodies[1]["messages"][0]["content"]
    assert system.startswith("Judge.") and '"score"' in system  # the schema, in words
    events = [s.attrs.get("events") for s in first.spans if s.kind == "model_call"][0]
    assert events[0]["event"] == "structured_fallback"
    assert events[0]["to"] == "json_object"
    assert any('"model_structured_fallback"' in line for line in first.log_lines())
    assert list(first.calls["retries"]) == [0]  # a fallback is not a retry


def test_structured_json_schema_only_reports_the_rejection(server):
    server.script = [error(400, "json_schema is not supported")]
    agent = a.Agent(
        "judge", "Judge.", openai_model(server, structured="json_schema"), output_type=Verdict
    )

    result = a.run_sync(agent, "one")

    assert not result.ok
    assert isinstance(result.error, a.ModelHTTPError)
    assert result.error.status == 400
    assert "HTTP 400: json_schema is not supported" in str(result.error)
    assert len(server.bodies) == 1


def test_a_429_with_retry_after_is_retried_and_the_retry_is_traced(server):
    server.script = [error(429, "slow down", headers={"Retry-After": "0"}), completion("done")]

    result = a.run_sync(a.Agent("worker", "Work.", openai_model(server)), "go")

    assert result.ok, result.error
    assert list(result.calls["retries"]) == [1]
    span = next(s for s in result.spans if s.kind == "model_call")
    retry, arrived = span.attrs["events"]
    assert retry == {"event": "retry", "attempt": 1, "status": 429, "wait_s": 0.0}
    # the answer's first byte, timed like latency_s: from the first attempt, retries included
    assert arrived["event"] == "first_byte" and arrived["seconds"] == result.calls["ttfb_s"][0]
    assert 0 <= arrived["seconds"] <= result.calls["latency_s"][0]
    retry_lines = [json.loads(x) for x in result.log_lines() if '"model_retry"' in x]
    assert retry_lines[0]["status"] == 429 and retry_lines[0]["path"] == "worker"
    assert len(server.bodies) == 2


def test_500s_exhausting_the_retries_end_the_run_with_what_the_server_said(server):
    server.script = [error(500, "the model is overloaded")] * 3

    result = a.run_sync(a.Agent("worker", "Work.", openai_model(server, max_retries=2)), "go")

    assert not result.ok
    assert isinstance(result.error, a.ModelHTTPError)
    assert result.error.status == 500
    assert "HTTP 500: the model is overloaded (after 2 retries, " in str(result.error)
    assert len(server.bodies) == 3
    assert list(result.calls["retries"]) == [2]
    assert list(result.calls["status"]) == ["error"]
    assert [e["attempt"] for e in result.error.events] == [1, 2]


def test_a_client_error_is_not_retried(server):
    server.script = [error(404, "The model `fake-model` does not exist")]

    result = a.run_sync(a.Agent("worker", "Work.", openai_model(server)), "go")

    assert isinstance(result.error, a.ModelHTTPError) and result.error.status == 404
    assert "does not exist" in str(result.error) and "Check the model name" in str(result.error)
    assert len(server.bodies) == 1


@pytest.mark.parametrize(
    ("body", "why"),
    [("this is not json", "not valid JSON"), ({"object": "chat.completion"}, "no choices")],
)
def test_a_malformed_body_ends_the_run_without_retrying(server, body, why):
    server.script = [Reply(200, body)]

    result = a.run_sync(a.Agent("worker", "Work.", openai_model(server)), "go")

    assert isinstance(result.error, a.ModelHTTPError)
    assert why in str(result.error)
    assert len(server.bodies) == 1


def test_a_slow_server_hits_the_timeout_and_each_attempt_is_retried(server):
    server.script = [Reply(200, completion("late"), delay=30)] * 2
    model = openai_model(server, timeout=0.2, max_retries=1)

    result = a.run_sync(a.Agent("worker", "Work.", model), "go")

    assert isinstance(result.error, a.ModelHTTPError)
    assert "no complete reply within the timeout of 0.2 s" in str(result.error)
    assert [e["status"] for e in result.error.events] == ["timeout"]
    assert len(server.bodies) == 2


async def test_the_concurrency_limit_queues_requests_and_records_the_wait(server):
    server.script = lambda body: Reply(200, completion("ok"), delay=0.05)
    model = openai_model(server, max_concurrency=1)
    request = ModelRequest("Be brief.", [a.Message.user("hi")])

    responses = await asyncio.gather(*(model.request(request) for _ in range(3)))
    await model.aclose()

    assert server.max_in_flight == 1
    waits = [e for r in responses for e in r.events if e["event"] == "queue_wait"]
    assert len(waits) == 2 and all(w["seconds"] > 0 for w in waits)


def test_queue_wait_is_kept_apart_from_latency_in_a_fan_out(server):
    server.script = lambda body: Reply(
        200,
        completion(tool_calls=[("helper", {"input": "a"}), ("helper", {"input": "b"})])
        if body["messages"][0]["content"] == "Lead." and len(body["messages"]) == 2
        else completion("fine"),
        delay=0.05,
    )
    model = openai_model(server, max_concurrency=1)
    helper = a.Agent("helper", "Help.", model)
    lead = a.Agent("lead", "Lead.", model, [helper])

    result = a.run_sync(lead, "go")

    assert result.ok, result.error
    helpers = result.calls[result.calls["agent"] == "helper"]
    assert len(helpers) == 2 and helpers["wait_s"].max() > 0
    assert server.max_in_flight == 1


def test_the_key_never_appears_in_anything_agentnb_shows_or_writes(server, tmp_path):
    leaky = f"Incorrect API key provided: {KEY}. You can find your API key at ..."
    server.script = [
        error(429, "slow down", headers={"Retry-After": "0"}),
        completion(tool_calls=[("add", {"x": 1, "y": 2})]),
        completion("3"),
        error(401, leaky),
    ]
    model = openai_model(server)
    recorder = a.record(model, tmp_path / "run.jsonl")
    agent = a.Agent("calc", "You add.", recorder, [add])

    good = a.run_sync(agent, "1+2?")
    bad = a.run_sync(agent, "again")

    assert good.ok and not bad.ok
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"  # it was used...
    shown = [repr(model), str(model), repr(vars(model)), repr(recorder), repr(agent)]
    for result in (good, bad):
        shown += [
            repr(result),
            result._repr_html_(),
            *result.log_lines(),
            result.calls.to_csv(),
            result.trace.spans_frame().to_csv(),
            repr(result.spans),
            json.dumps(result.span_tree(), default=str),
        ]
    shown += [str(bad.error), repr(bad.error), repr(bad.error.args), repr(bad.error.__dict__)]
    shown += [(tmp_path / "run.jsonl").read_text()]
    everything = "\n".join(shown)
    assert KEY not in everything  # ...and shown nowhere
    assert KEY[:16] not in everything and KEY[-8:] not in everything
    assert "HTTP 401" in str(bad.error) and "OPENAI_API_KEY" in str(bad.error)
    assert repr(model) == f"OpenAIModel('fake-model', base_url='{server.url}')"


def test_a_missing_key_is_reported_before_any_request(monkeypatch):

    with pytest.raises(a.UserError, match="set the OPENAI_API_KEY environment variable"):
        a.OpenAIModel("gpt-4o-mini")
    with pytest.raises(a.UserError, match="OPENAI_API_KEY"):
        a.run_sync(a.Agent("x", "y", "openai:gpt-4o-mini"), "hello")


def test_a_local_server_needs_no_key(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    server.script = [completion("local answer")]

    model = model_from_spec("openai:llama3.1")
    result = a.run_sync(a.Agent("x", "y", model), "hello")

    assert result.ok, result.error
    assert model.base_url == server.url
    assert server.bodies[0]["model"] == "llama3.1"
    assert server.headers[0]["authorization"] == "Bearer not-needed"


async def test_one_model_serves_both_the_background_loop_and_the_running_loop(server):
    server.script = [completion("from the background loop"), completion("from this loop")]
    model = openai_model(server)
    agent = a.Agent("x", "y", model)

    blocking = await asyncio.to_thread(a.run_sync, agent, "one")  # agentnb's own loop
    awaited = await a.run(agent, "two")  # pytest's loop, as Jupyter's would be

    assert blocking.output == "from the background loop"
    assert awaited.output == "from this loop"
    assert len(model._slots) == 2  # a client per loop
    await model.aclose()
    assert len(model._slots) == 1


def test_clients_of_closed_loops_are_dropped(server):
    server.script = [completion("one"), completion("two")]
    model = openai_model(server)
    request = ModelRequest("", [a.Message.user("hi")])

    asyncio.run(model.request(request))
    asyncio.run(model.request(request))

    assert len(model._slots._items) == 1  # the first loop's client went with its loop
    assert len(model._slots) == 0  # and the second loop is closed too


def test_a_configured_client_is_used_as_is_but_without_its_own_retries(server):
    import openai

    server.script = [error(503, "busy"), completion("ok")]
    client = openai.AsyncOpenAI(api_key=KEY, base_url=server.url, max_retries=5)
    model = a.OpenAIModel("fake-model", client=client, backoff=FAST)

    result = a.run_sync(a.Agent("x", "y", model), "hi")

    assert result.ok and list(result.calls["retries"]) == [1]
    assert [h["x-stainless-retry-count"] for h in server.headers] == ["0", "0"]


def test_bad_options_are_user_errors():
    with pytest.raises(a.UserError, match="max_concurrency"):
        a.OpenAIModel("m", base_url="http://127.0.0.1:1/v1", max_concurrency=0)
    with pytest.raises(a.UserError, match="structured"):
        a.OpenAIModel("m", base_url="http://127.0.0.1:1/v1", structured="xml")  # type: ignore[arg-type]
    with pytest.raises(a.UserError, match="backoff"):
        a.OpenAIModel("m", base_url="http://127.0.0.1:1/v1", backoff="fast")  # type: ignore[arg-type]


def test_backoff_grows_and_honours_retry_after():
    backoff = Backoff(initial=1.0, multiplier=2.0, max=5.0, jitter=0.0)
    assert [backoff.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    assert backoff.delay(1, retry_after=3.0) == 3.0
    assert backoff.delay(1, retry_after=600.0) == 5.0
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({}) is None
    assert scrub("key sk-proj-abc123********wxyz here") == "key [redacted key] here"


@pytest.mark.live  # keeps the provider's environment (tests/conftest.py clears it elsewhere)
@pytest.mark.skipif(
    not (os.environ.get("OPENAI_API_KEY") and os.environ.get("AGENTNB_LIVE") == "1"),
    reason="needs OPENAI_API_KEY and AGENTNB_LIVE=1 (reaches api.openai.com)",
)
def test_live_openai_tool_loop_and_structured_output():  # pragma: no cover - live only
    model = a.OpenAIModel(os.environ.get("AGENTNB_LIVE_MODEL", "gpt-4o-mini"))
    calc = a.Agent("calc", "Use the add tool, then answer with the number only.", model, [add])
    result = a.run_sync(calc, "What is 19 + 23?")
    assert result.ok, result.error
    assert "42" in result.output
    assert result.calls["provider_tokens_in"].notna().all()
    judge = a.Agent("judge", "Rate the risk.", model, output_type=Verdict)
    assert isinstance(a.run_sync(judge, "Unlimited liability.").output, Verdict)
