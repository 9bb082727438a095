"""Each model counted with its own tokenizer: a local server's tokenize endpoint, an
encoding named by the client, the provider's usage for a model whose tokenizer is unknown.

The server here is the test's own, on 127.0.0.1: it answers Chat Completions and one of the
three tokenize endpoints (llama.cpp, vLLM, llama-cpp-python), with a tokenizer of one token
per word (plus a start-of-text token when asked), and reports as ``prompt_tokens`` the words
it was sent plus a chat template's few tokens per message.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fake_openai_server import completion

import agentnb as a
from agentnb.models.local_server.tokenizer import ServerTokenizer
from agentnb.models.providers.openai.adapter import OpenAIModel
from agentnb.trace import tokens

pytest.importorskip("bpe_openai")  # imported here, where its DeprecationWarning is not an error

TEMPLATE = 3  # tokens the fake chat template adds around each message

ROUTES = {"llama.cpp": "/tokenize", "vllm": "/tokenize", "llama-cpp-python": "/extras/tokenize"}


class TokenizingServer:
    """Chat Completions plus the tokenize endpoint of ``flavour`` (None: no endpoint)."""

    def __init__(
        self,
        flavour: str | None,
        *,
        bos: bool = False,
        key: str | None = None,
        answer: str = "It is four.",
        report_usage: bool = True,
        prompt_discount: int = 0,
    ) -> None:
        self.flavour, self.bos, self.key = flavour, bos, key
        self.answer, self.report_usage, self.discount = answer, report_usage, prompt_discount
        self.tokenized: list[str] = []
        self.tokenize_headers: list[dict[str, str]] = []
        self._httpd: ThreadingHTTPServer | None = None

    def words(self, text: str) -> list[int]:
        return ([1] if self.bos else []) + [7] * len(text.split())

    def reply(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if self.key is not None and headers.get("authorization") != f"Bearer {self.key}":
            return 401, {"error": {"message": "bad key"}}
        if path == "/v1/chat/completions":
            sent = sum(len(str(m.get("content") or "").split()) for m in body["messages"])
            prompt = sent + TEMPLATE * len(body["messages"]) - self.discount
            reply = completion(self.answer, prompt_tokens=prompt, completion_tokens=3)
            if not self.report_usage:
                del reply["usage"]
            return 200, reply
        if self.flavour is None or path != ROUTES[self.flavour]:
            return 404, {"error": "not found"}
        field = {"llama.cpp": "content", "vllm": "prompt", "llama-cpp-python": "input"}
        text = body.get(field[self.flavour])
        if not isinstance(text, str) or (self.flavour == "vllm" and "model" not in body):
            return 422, {"error": "bad body"}
        self.tokenized.append(text)
        self.tokenize_headers.append(headers)
        ids = self.words(text)
        return 200, (
            {"count": len(ids), "tokens": ids} if self.flavour == "vllm" else {"tokens": ids}
        )

    def __enter__(self) -> TokenizingServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, body = server.reply(self.path, json.loads(raw or b"{}"), headers)
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Token counting on, as in a default install (the tests' conftest turns it off)."""
    monkeypatch.setenv("AGENTNB_TOKENIZER", "auto")
    tokens.set_tokenizer(None)


@pytest.mark.parametrize("flavour", ["llama.cpp", "vllm", "llama-cpp-python"])
def test_a_local_model_is_counted_by_its_server_when_the_rows_are_read(counting, flavour):
    with TokenizingServer(flavour, bos=True) as server:
        model = OpenAIModel("smollm2", base_url=server.url)
        result = a.run_sync(a.Agent("w", "Answer in one line.", model), "what is two and two")
        assert result.ok and server.tokenized == []  # nothing counted during the run
        row = result.calls.iloc[0]

    assert row["tokens_method"] == f"server:{flavour}"
    assert row["tokens_in"] == 4 + 5  # the start-of-text token of each text taken off
    assert row["tokens_out"] == 3  # "It is four."
    assert row["provider_tokens_in"] == 9 + 2 * TEMPLATE
    assert row["tokens_in_overhead"] == 2 * TEMPLATE
    assert {"Answer in one line.", "what is two and two", "It is four."} <= set(server.tokenized)


def test_each_text_goes_to_the_server_once(counting):
    with TokenizingServer("llama.cpp") as server:
        model = OpenAIModel("smollm2", base_url=server.url)
        agent = a.Agent("w", "Answer in one line.", model)
        for _ in range(3):
            assert len(a.run_sync(agent, "what is two and two").calls) == 1
    assert server.tokenized.count("Answer in one line.") == 1
    assert server.tokenized.count("what is two and two") == 1


def test_the_servers_key_is_sent_and_never_shown(counting):
    key = "sk-local-secret-123456"
    with TokenizingServer("vllm", key=key) as server:
        model = OpenAIModel("smollm2", base_url=server.url, api_key=key)
        result = a.run_sync(a.Agent("w", "Be brief.", model), "hello there")
        calls = result.calls
    assert calls["tokens_method"].iloc[0] == "server:vllm"
    assert all(h["authorization"] == f"Bearer {key}" for h in server.tokenize_headers)
    assert key not in repr(model.tokenizer) + repr(model) + calls.to_string()
    assert key not in json.dumps(result.trace.tree(), default=str)


def test_a_server_without_a_tokenizer_gives_the_providers_usage_or_a_labelled_estimate(
    counting,
):
    with TokenizingServer(None) as server:
        model = OpenAIModel("smollm2", base_url=server.url)
        reported = a.run_sync(a.Agent("w", "Be brief.", model), "hello there").calls.iloc[0]
    assert reported["tokens_method"] == "provider"
    assert reported["tokens_in"] == reported["provider_tokens_in"] == 4 + 2 * TEMPLATE

    with TokenizingServer(None, report_usage=False) as server:
        model = OpenAIModel("smollm2", base_url=server.url)
        estimated = a.run_sync(a.Agent("w", "Be brief.", model), "hello there").calls.iloc[0]
    assert estimated["tokens_method"] == "estimate:chars/4"
    assert estimated["tokens_in"] == -(-estimated["chars_in"] // 4)


def test_a_server_that_stops_answering_gives_a_labelled_estimate(counting):
    with TokenizingServer("llama.cpp", report_usage=False) as server:
        model = OpenAIModel("smollm2", base_url=server.url)
        result = a.run_sync(a.Agent("w", "Be brief.", model), "hello there")
    calls = result.calls  # read after the server is gone
    assert result.ok and calls["tokens_method"].iloc[0] == "estimate:chars/4"


def test_a_provider_count_below_the_models_own_says_why(counting):
    # below the template's own tokens, yet a count (a negative one would be "not reported")
    with TokenizingServer("llama.cpp", prompt_discount=2 * TEMPLATE + 2) as server:
        model = OpenAIModel("smollm2", base_url=server.url)
        row = a.run_sync(a.Agent("w", "Be brief.", model), "hello there").calls.iloc[0]
    assert row["tokens_in_overhead"] < 0
    assert row["tokens_method"] == "server:llama.cpp (provider reported fewer)"


def test_an_openai_model_is_counted_with_its_encoding_whatever_its_name(counting):
    tokens.set_tokenizer("bpe-openai")
    with TokenizingServer(None) as server:
        fast = OpenAIModel("gpt-4o-mini", name="fast", base_url=server.url)
        old = OpenAIModel("my-deployment", base_url=server.url, tokenizer="cl100k_base")
        rows = [
            a.run_sync(a.Agent("w", "Be brief.", m), "hello there").calls.iloc[0]
            for m in (fast, old)
        ]
    assert rows[0]["model"] == "fast"
    assert rows[0]["tokens_method"] == "bpe-openai:o200k_base"
    assert rows[1]["tokens_method"] == "bpe-openai:cl100k_base"
    assert rows[0]["tokens_in"] == rows[1]["tokens_in"] == 2 + 3


def test_claude_and_unknown_models_are_never_counted_with_an_openai_encoding(counting):
    tokens.set_tokenizer("bpe-openai")
    claude = a.AnthropicModel("claude-sonnet-4-5", api_key="x")
    assert claude.tokenizer == "provider"
    with TokenizingServer(None) as server:
        assert OpenAIModel("mystery", base_url=server.url, tokenizer="provider").tokenizer == (
            "provider"
        )
    assert tokens.tokenizer(claude) == (None, "provider")
    local = OpenAIModel("mystery", base_url="http://127.0.0.1:9/v1")
    assert isinstance(local.tokenizer, ServerTokenizer)


def test_a_tokenizer_choice_is_checked_at_construction():
    with pytest.raises(a.UserError, match="tokenizer"):
        OpenAIModel("gpt-4o", api_key="x", tokenizer="words")
    with pytest.raises(a.UserError, match="base_url"):
        OpenAIModel("gpt-4o", api_key="x", tokenizer="server")
