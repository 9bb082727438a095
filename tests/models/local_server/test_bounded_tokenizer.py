"""Reading a run's rows never hangs and never sends what was not asked for: a server's
tokenizer is asked only on this machine or when the user says ``tokenizer="server"``, each
tokenize request has a deadline for the whole request, the search for the endpoint a budget,
and a failure falls back to the labelled count, said once in the log.

The servers are the test's own on 127.0.0.1 (tests/fault_server.py): one drips its answer a
byte at a time, one never answers, one redirects elsewhere."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from fake_openai_server import completion
from fault_server import FaultServer, Hang, Pause, Play, Request, Send, head, response, trickle

import agentnb as a
from agentnb.models.http.bounded_post import PostFailed, post_json
from agentnb.models.local_server.tokenizer import ServerTokenizer
from agentnb.models.providers.openai.adapter import OpenAIModel
from agentnb.trace import tokens

KEY = "zq-tokenizer-key-0123456789"


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Token counting on, as in a default install (the tests' conftest turns it off)."""
    monkeypatch.setenv("AGENTNB_TOKENIZER", "auto")
    tokens.set_tokenizer(None)


def chat_then(tokenize: Play) -> Any:
    """Chat Completions answered at once; every tokenize request gets ``tokenize``."""

    def play(request: Request) -> Play:
        if request.path.endswith("/chat/completions"):
            return response(200, completion("It is four.", prompt_tokens=12))
        return tokenize

    return play


def read_rows(result: a.RunResult, within: float = 30.0) -> Any:
    """``result.calls`` read in a thread, waited for at most ``within`` seconds."""
    box: list[Any] = []
    reader = threading.Thread(target=lambda: box.append(result.calls), daemon=True)
    reader.start()
    reader.join(within)
    assert box, f"result.calls was still blocked after {within:g} s"
    return box[0]


DRIP: Play = [Send(head(200, None, 200))] + [Pause(0.2), Send(b" ")] * 1000
"""A 200 whose body comes one byte every 0.2 s: each read returns, the answer never ends."""


@pytest.mark.parametrize("fault", [DRIP, [Hang()]], ids=["drip", "never-answers"])
def test_a_tokenizer_that_drips_or_never_answers_falls_back_within_its_budget(
    counting, caplog, fault
):
    with FaultServer(chat_then(fault)) as server:
        model = OpenAIModel("smollm2", base_url=server.url + "/v1", api_key=KEY)
        result = a.run_sync(a.Agent("w", "Answer in one line.", model), "two and two")
        a.run_sync(model.aclose())
        assert result.ok
        with caplog.at_level(logging.WARNING, logger="agentnb"):
            calls = read_rows(result)  # bounded: it hung before, 60 s and more
            again = read_rows(result)  # a second read asks nothing more
        probes = [r for r in server.requests if "tokenize" in r.path]

    assert calls["tokens_method"].iloc[0] == "provider"
    assert calls["tokens_in"].iloc[0] == 12  # the provider's usage, labelled as such
    assert list(again["tokens_method"]) == ["provider"]
    # The budget (2 s) bounds the probing as a whole; the first probe used it all.
    assert [r.path for r in probes] == ["/tokenize"]
    said = [r.getMessage() for r in caplog.records if "tokenizer" in r.getMessage()]
    assert len(said) == 1 and "provider's usage or an estimate" in said[0]
    assert KEY not in said[0]


def test_the_budget_covers_all_probes_together():
    slow_404: Play = [Pause(0.6), *response(404, {"error": "not found"})]
    with FaultServer([slow_404]) as server:
        counter = ServerTokenizer(server.url + "/v1", "m", timeout=1.0, budget=1.0)
        with pytest.raises(Exception, match="budget was spent"):
            counter("hello")
        assert server.seen == 2  # the second probe was cut at the budget, the third not made
    with pytest.raises(Exception, match="no tokenize endpoint"):
        counter("again")  # it stopped trying
    assert counter.failure is not None


def test_a_deadline_covers_the_headers_too():
    slow_headers: Play = [Send(b"HTTP/1.1 200 OK\r\n")] + [Pause(0.1), Send(b"X-A: b\r\n")] * 200
    for play in (slow_headers, trickle({"tokens": [1, 2]}, every=0.2)):
        with FaultServer([play]) as server, pytest.raises(PostFailed, match="within 0.5 s"):
            post_json(server.url + "/tokenize", {}, {}, 0.5)


def test_a_remote_servers_tokenizer_is_not_asked_unless_the_user_says_so():
    remote = OpenAIModel("some-model", base_url="https://gateway.example.com/v1", api_key=KEY)
    assert remote.tokenizer == "provider"
    asked = OpenAIModel(
        "some-model", base_url="https://gateway.example.com/v1", api_key=KEY, tokenizer="server"
    )
    assert isinstance(asked.tokenizer, ServerTokenizer)
    assert asked.tokenizer.root == "https://gateway.example.com"
    local = OpenAIModel("some-model", base_url="http://127.0.0.1:9/v1")
    assert isinstance(local.tokenizer, ServerTokenizer)
    assert isinstance(OpenAIModel("m", base_url="http://localhost:9/v1").tokenizer, ServerTokenizer)
    with pytest.raises(a.UserError, match="OpenAI's API has none"):
        OpenAIModel("some-model", api_key=KEY, tokenizer="server")


def test_a_redirect_does_not_take_the_key_to_another_host(counting):
    with FaultServer([response(200, {"tokens": [1]})]) as elsewhere:
        moved = response(307, b"", {"Location": elsewhere.url + "/tokenize"})
        with FaultServer(chat_then(moved)) as server:
            model = OpenAIModel("smollm2", base_url=server.url + "/v1", api_key=KEY)
            result = a.run_sync(a.Agent("w", "Be brief.", model), "hello")
            a.run_sync(model.aclose())
            calls = read_rows(result)
            probes = [r for r in server.requests if "tokenize" in r.path]
        assert elsewhere.seen == 0
    assert calls["tokens_method"].iloc[0] == "provider"
    assert probes and all(r.headers["authorization"] == f"Bearer {KEY}" for r in probes)
