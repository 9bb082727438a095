"""The key never shows: not in an error's chain, a pickled model, nor an echo by a server,
whatever the key's prefix. (Every fault of tests/models/http/test_faults.py is also scanned for it.)"""

from __future__ import annotations

import pickle

import pytest
from fake_openai_server import FakeOpenAIServer, completion, error
from secret_scan import KEY, MASKED, assert_no_key, exception_texts, traceback_with_locals

import agentnb as a
from agentnb.models import Backoff
from agentnb.models.http.rules import Secret, scrub

FAST = Backoff(initial=0.001, jitter=0.0)


@pytest.mark.parametrize(
    "echo",
    [
        KEY,
        MASKED,
        KEY[:8] + "..." + KEY[-4:],
        KEY[:8] + "\u2026" + KEY[-4:],
        KEY[:8] + "*****",
        "*****" + KEY[-4:],
        f'"{KEY[:8]}{"x" * 10}{KEY[-4:]}"',
    ],
    ids=["whole", "first-8-last-4", "dots", "ellipsis", "head-only", "tail-only", "quoted"],
)
def test_the_scrubber_masks_every_echo_of_the_configured_key(echo):
    said = f"Incorrect API key provided: {echo}. See the docs."

    shown = scrub(said, Secret(KEY))

    assert KEY[:8] not in shown and KEY[-4:] not in shown
    assert shown.startswith("Incorrect API key provided: ") and shown.endswith(". See the docs.")


def test_the_scrubber_leaves_other_text_alone():
    text = "HTTP 500: upstream model zq-other-thing**** timed out after 30 s"
    assert scrub(text, Secret(KEY)) == text
    assert scrub("no key here", None, "") == "no key here"


def test_a_failed_call_chains_no_sdk_exception(tmp_path):
    with FakeOpenAIServer() as server:
        server.script = [error(401, f"Incorrect API key provided: {MASKED}")]
        model = a.OpenAIModel("fake-model", base_url=server.url, api_key=KEY, backoff=FAST)
        result = a.run_sync(a.Agent("w", "Work.", model), "go")

    assert isinstance(result.error, a.ModelHTTPError)
    assert result.error.__cause__ is None and result.error.__context__ is None
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"  # the key was sent...
    assert_no_key(model, result)  # ...and shows nowhere
    assert not any("Bearer" in text for text in exception_texts(result.error))


def test_a_pickled_model_carries_no_key_and_finds_it_where_it_runs(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer() as server:
        server.script = [completion("hello")]
        model = a.OpenAIModel("fake-model", base_url=server.url, api_key=KEY, backoff=FAST)

        data = pickle.dumps(model)
        assert KEY.encode() not in data and KEY[:8].encode() not in data
        monkeypatch.setenv("OPENAI_API_KEY", "zq-the-worker-s-own-key")
        copy = pickle.loads(data)
        result = a.run_sync(a.Agent("w", "Work.", copy), "go")

    assert result.ok, result.error
    assert server.headers[0]["authorization"] == "Bearer zq-the-worker-s-own-key"
    assert repr(copy) == repr(model)


def test_a_pickled_anthropic_model_carries_no_key():
    model = a.AnthropicModel("claude-test", base_url="http://127.0.0.1:9", api_key=KEY)

    assert KEY[:8].encode() not in pickle.dumps(model)


def test_a_model_made_with_a_client_refuses_to_be_pickled():
    import openai

    client = openai.AsyncOpenAI(api_key=KEY, base_url="http://127.0.0.1:9/v1")
    model = a.OpenAIModel("fake-model", client=client)

    with pytest.raises(a.UserError, match="made with client=.*cannot be pickled"):
        pickle.dumps(model)


def test_a_secret_refuses_to_be_pickled():
    with pytest.raises(a.UserError, match="never pickled"):
        pickle.dumps(Secret(KEY))


def _stream_echoing_the_key(server_url: str, streamed: bool) -> a.RunResult:
    model = a.OpenAIModel(
        "fake-model", base_url=server_url + "/v1", api_key=KEY, backoff=FAST, max_retries=1
    )
    agent = a.Agent("w", "Work.", model)
    try:
        if streamed:
            return list(a.stream_sync(agent, "go"))[-1].result
        return a.run_sync(agent, "go")
    finally:
        a.run_sync(model.aclose())


@pytest.mark.parametrize(
    "play",
    ["401", "error-event-after-a-delta", "error-event-first", "not-json"],
)
def test_no_frame_of_a_failed_call_holds_the_key(play):
    # What `%xmode Verbose` and error trackers print: the traceback with each frame's locals.
    from fault_server import Close, FaultServer, response, sse_event, sse_head

    echo = f"Incorrect API key provided: {MASKED}; your key {KEY} was refused"
    chunk = {"choices": [{"index": 0, "delta": {"content": "so far "}, "finish_reason": None}]}
    plays = {
        "401": [response(401, {"error": {"message": echo}})],
        "error-event-after-a-delta": [
            [*sse_head(), sse_event(chunk), sse_event({"error": {"message": echo}}), Close()]
        ],
        "error-event-first": [[*sse_head(), sse_event({"error": {"message": echo}}), Close()]],
        "not-json": [response(200, f"<html>{echo}</html>", {"Content-Type": "text/html"})],
    }[play]
    with FaultServer(plays) as server:
        result = _stream_echoing_the_key(server.url, streamed=play.startswith("error-event"))

    assert isinstance(result.error, a.ModelHTTPError)
    rendered = "".join(traceback_with_locals(result.error))
    assert "failed =" in rendered or "failed=" in rendered  # the locals are rendered
    for leak in (KEY, MASKED, KEY[:8]):
        assert leak not in rendered
