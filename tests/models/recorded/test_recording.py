"""record() and replay(): a run recorded once replays offline with the same trace numbers."""

from __future__ import annotations

import json

import pytest
from fake_openai_server import FakeOpenAIServer, completion, error

import agentnb as a
from agentnb.models import Backoff
from agentnb.models.recorded.recorder import first_difference
from agentnb.trace.sizes import request_payload

TIMING = ["run_id", "span_id", "parent_id", "started", "ended", "latency_s", "wait_s", "ttfb_s"]


def numbers(result: a.RunResult):
    """The calls table without what depends on the clock or on ids."""
    frame = result.calls.drop(columns=TIMING)
    return frame.sort_values(["path", "turn"]).reset_index(drop=True)


@a.tool
def add(x: int, y: int) -> int:
    """Add two integers."""
    return x + y


def review_team(model: a.ModelClient) -> a.Agent:
    """A lead that asks two reviewers in parallel, then answers."""
    legal = a.Agent("legal", "You review legal risk.", model)
    tax = a.Agent("tax", "You review tax risk.", model)
    return a.Agent("lead", "You lead a review.", model, [legal, tax, add])


def reviewer_script(request: a.ModelRequest):
    """Replies that depend on who asks, so the order of concurrent calls does not matter."""
    if request.agent == "lead" and not request.tool_results:
        return [a.tool_call("legal", input="clause A"), a.tool_call("tax", input="clause B")]
    if request.agent == "lead":
        return a.say("summary: " + " | ".join(request.tool_results))
    return a.say(f"{request.agent} says {request.last_user_text} is fine")


def test_a_replayed_run_has_the_same_calls_and_output(tmp_path, word_tokenizer):
    path = tmp_path / "review.jsonl"
    original = a.run_sync(review_team(a.record(a.FunctionModel(reviewer_script), path)), "go")

    replayed_model = a.replay(path)
    replayed = a.run_sync(review_team(replayed_model), "go")

    assert original.ok and replayed.ok, (original.error, replayed.error)
    assert replayed.output == original.output
    assert numbers(replayed).equals(numbers(original))
    assert replayed.chars_in == original.chars_in
    replayed_model.assert_complete()
    assert len(replayed_model.requests) == 4


def test_the_file_is_a_header_then_one_canonical_line_per_call(tmp_path):
    path = tmp_path / "calc.jsonl"
    model = a.ScriptedModel([a.tool_call("add", x=1, y=2), a.say("3")], name="script-1")
    a.run_sync(a.Agent("calc", "You add.", a.record(model, path), [add]), "1+2?")

    lines = path.read_text(encoding="utf-8").splitlines()
    header, *calls = (json.loads(line) for line in lines)

    assert header == {"agentnb_recording": 3, "model": "script-1"}
    assert [list(c) for c in calls] == [["agent", "request", "response", "sha256"]] * 2
    assert [c["request"] for c in calls] == [request_payload(r) for r in model.requests]
    assert calls[0]["response"]["tool_calls"] == [
        {"id": "", "name": "add", "arguments": '{"x":1,"y":2}'}
    ]
    assert calls[1]["response"]["text"] == "3"
    assert all(", " not in line[:40] and "\n" not in line for line in lines)  # compact lines


def test_recording_the_same_run_twice_gives_the_same_bytes(tmp_path):
    texts = []
    for name in ("one.jsonl", "two.jsonl"):
        a.run_sync(review_team(a.record(a.FunctionModel(reviewer_script), tmp_path / name)), "go")
        texts.append(sorted((tmp_path / name).read_text().splitlines()))
    assert texts[0] == texts[1]


def test_concurrent_calls_are_matched_by_content_not_by_line_order(tmp_path):
    path = tmp_path / "review.jsonl"
    original = a.run_sync(review_team(a.record(a.FunctionModel(reviewer_script), path)), "go")
    header, *calls = path.read_text().splitlines()
    path.write_text("\n".join([header, *reversed(calls)]) + "\n")  # another finishing order

    replayed = a.run_sync(review_team(a.replay(path)), "go")

    assert replayed.ok, replayed.error
    assert (
        replayed.output
        == original.output
        == ("summary: legal says clause A is fine | tax says clause B is fine")
    )


def test_a_changed_prompt_fails_with_the_first_difference(tmp_path):
    path = tmp_path / "calc.jsonl"
    model = a.ScriptedModel([a.tool_call("add", x=1, y=2), a.say("3")])
    a.run_sync(a.Agent("calc", "You add.", a.record(model, path), [add]), "1+2?")

    result = a.run_sync(a.Agent("calc", "You add numbers.", a.replay(path), [add]), "1+2?")

    assert not result.ok
    assert isinstance(result.error, a.ReplayMismatch)
    message = str(result.error)
    assert "first difference is at $.system" in message
    assert 'recorded "You add.", sent "You add numbers."' in message
    assert "line 2, agent 'calc'" in message
    assert result.model_calls == 1


def test_a_changed_input_deep_in_a_long_text_is_shown_where_it_differs(tmp_path):
    path = tmp_path / "long.jsonl"
    long_text = "word " * 200
    a.run_sync(a.Agent("echo", "Echo.", a.record(a.ScriptedModel(["ok"]), path)), long_text + "A")

    result = a.run_sync(a.Agent("echo", "Echo.", a.replay(path)), long_text + "B")

    message = str(result.error)
    assert "$.messages[0].content" in message
    assert 'word A"' in message and 'word B"' in message  # the window around the difference
    assert len(message) < 600


def test_a_changed_tool_and_an_exhausted_recording_are_mismatches(tmp_path):
    path = tmp_path / "calc.jsonl"
    a.run_sync(a.Agent("calc", "You add.", a.record(a.ScriptedModel(["3"]), path), [add]), "1+2?")

    @a.tool
    def plus(x: int, y: int) -> int:
        """Add two integers."""
        return x + y

    changed = a.run_sync(a.Agent("calc", "You add.", a.replay(path), [plus]), "1+2?")
    assert "$.tools[0].name" in str(changed.error)
    assert 'recorded "add", sent "plus"' in str(changed.error)

    replay = a.replay(path)
    agent = a.Agent("calc", "You add.", replay, [add])
    assert a.run_sync(agent, "1+2?").ok
    again = a.run_sync(agent, "1+2?")
    assert isinstance(again.error, a.ReplayMismatch)
    assert "no call left for agent 'calc'" in str(again.error)


def test_a_recorded_failure_replays_as_the_same_failure(tmp_path):
    path = tmp_path / "fail.jsonl"

    def failing(request):
        raise a.ModelHTTPError("m at x answered HTTP 500: down", status=500)

    original = a.run_sync(a.Agent("w", "Work.", a.record(a.FunctionModel(failing), path)), "go")
    replayed = a.run_sync(a.Agent("w", "Work.", a.replay(path)), "go")

    assert isinstance(replayed.error, a.ModelHTTPError)
    assert replayed.error.status == 500
    assert str(replayed.error) == str(original.error)


def test_a_real_client_run_replays_offline_with_usage_and_retries(tmp_path):
    path = tmp_path / "openai.jsonl"
    with FakeOpenAIServer() as server:
        server.script = [
            error(429, "slow down", headers={"Retry-After": "0"}),
            completion(
                tool_calls=[("add", {"x": 2, "y": 3})], prompt_tokens=50, completion_tokens=9
            ),
            completion("5", prompt_tokens=70, completion_tokens=1),
        ]
        model = a.OpenAIModel(
            "fake-model",
            base_url=server.url,
            api_key="sk-test-recording",
            backoff=Backoff(initial=0.001, jitter=0),
        )
        original = a.run_sync(a.Agent("calc", "You add.", a.record(model, path), [add]), "2+3?")
    # the server is gone: the replay cannot reach it

    replayed = a.run_sync(a.Agent("calc", "You add.", a.replay(path), [add]), "2+3?")

    assert original.ok and replayed.ok, (original.error, replayed.error)
    assert numbers(replayed).equals(numbers(original))
    # a replayed answer was not waited for: no first byte (the recording keeps no timing)
    assert original.calls["ttfb_s"].notna().all() and replayed.calls["ttfb_s"].isna().all()
    assert list(replayed.calls["provider_tokens_in"]) == [50, 70]
    assert list(replayed.calls["retries"]) == [1, 0]
    assert list(replayed.calls["model"]) == ["fake-model", "fake-model"]
    assert (replayed.usage.input_tokens, replayed.usage.output_tokens) == (120, 10)
    assert "sk-test-recording" not in path.read_text()


def test_first_difference_walks_dicts_and_lists():
    assert first_difference({"a": [1, 2]}, {"a": [1, 2]}) == ("", None, None)
    assert first_difference({"a": [1, 2]}, {"a": [1, 3]}) == ("$.a[1]", 2, 3)
    where, recorded, sent = first_difference({"a": [1]}, {"a": [1, 2]})
    assert (where, repr(recorded), sent) == ("$.a[1]", "<absent>", 2)
    assert first_difference({"a": 1}, {"a": 1, "b": 2})[0] == "$.b"


def test_bad_arguments_are_user_errors(tmp_path):
    with pytest.raises(a.UserError, match="No recording"):
        a.replay(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"agentnb_recording":1,"model":"m"}\nnot json\n')
    with pytest.raises(a.UserError, match="bad.jsonl:2 is not JSON"):
        a.replay(bad)
    with pytest.raises(a.UserError, match="model client"):
        a.record(object(), tmp_path / "x.jsonl")  # type: ignore[arg-type]


def test_a_replay_counts_tokens_as_the_recorded_model_did(tmp_path):
    from agentnb.trace import tokens

    model = a.ScriptedModel(["An answer."], name="local-model")
    model.tokenizer = "provider"  # as a client whose provider's usage is the count
    path = tmp_path / "r.jsonl"
    a.run_sync(a.Agent("r", "Be brief.", a.record(model, path)), "Hello.")
    replayed = a.replay(path)

    assert replayed.tokenizer == "provider"
    assert tokens.tokenizer(replayed) == tokens.tokenizer(model)


def test_a_server_tokenizer_is_replayed_as_the_recorded_usage(tmp_path):
    model = a.ScriptedModel(["An answer."], name="local-model")
    model.tokenizer = object()  # a server's tokenizer: not there at replay time
    path = tmp_path / "r.jsonl"
    a.run_sync(a.Agent("r", "Be brief.", a.record(model, path)), "Hello.")

    assert a.replay(path).tokenizer == "provider"
