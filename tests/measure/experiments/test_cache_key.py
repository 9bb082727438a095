"""The response cache's key is the request as sent: two requests that differ on the wire never
share an answer, counted at a local server (issue 32, point 5)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from _stub_server import StubServer
from fake_openai_server import FakeOpenAIServer, completion

import agentnb as a
from agentnb.models import Backoff
from agentnb.models.response_cache import cache_key

Variant = Callable[[str], a.Agent]


def chat(model: str = "gpt-4o-mini", key: str = "sk-first", **options) -> Variant:
    def agent(url: str) -> a.Agent:
        made = a.OpenAIModel(
            model, base_url=url, api_key=key, backoff=Backoff(jitter=0.0), **options
        )
        return a.Agent("writer", "Write one line.", made)

    return agent


def lookup(city: str) -> str:
    """Look a city up."""
    return city


def with_tool(url: str) -> a.Agent:
    return chat()(url).clone(tools=[lookup])


def other_system(url: str) -> a.Agent:
    return chat()(url).clone(instructions="Write two lines.")


async def asked(tmp_path, server: StubServer, variants: dict[str, Variant]) -> list[dict]:
    """Run each variant once in one experiment with the cache on; the bodies the server got."""

    async def fn(variant: str, trial: int) -> a.RunResult:
        return await a.run(variants[variant](server.url), "Say hello.")

    exp = await a.experiment(
        "k", fn, {"variant": list(variants)}, store=tmp_path / "x.db", cache=True, progress=False
    )
    assert exp.runs["ok"].all(), list(exp.runs["error"])
    return server.bodies


DIFFERENT = {
    "temperature": (chat(params={"temperature": 0}), chat(params={"temperature": 1.5})),
    "seed": (chat(params={"seed": 1}), chat(params={"seed": 2})),
    "wire model under one name": (chat("gpt-4o-mini", name="m"), chat("gpt-4o", name="m")),
    "a tool offered": (chat(), with_tool),
    "another system prompt": (chat(), other_system),
}


@pytest.mark.parametrize("first, second", list(DIFFERENT.values()), ids=list(DIFFERENT))
async def test_requests_that_differ_on_the_wire_are_each_sent(tmp_path, first, second):
    with FakeOpenAIServer(lambda body, headers=None: completion("hi")) as server:
        bodies = await asked(tmp_path, server, {"a": first, "b": second})
    assert len(bodies) == 2 and bodies[0] != bodies[1]


async def test_the_same_request_with_another_key_is_answered_from_the_cache(tmp_path):
    with FakeOpenAIServer(lambda body, headers=None: completion("hi")) as server:
        bodies = await asked(
            tmp_path, server, {"a": chat(key="sk-first"), "b": chat(key="sk-second")}
        )
    assert len(bodies) == 1


class FakeResponsesServer(StubServer):
    route = "/v1/responses"
    prefix = "/v1"


def responses_reply(body, headers=None) -> dict:
    part = {"type": "output_text", "text": "hi", "annotations": []}
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1700000000,
        "model": body["model"],
        "status": "completed",
        "output": [{"type": "message", "id": "m", "role": "assistant", "content": [part]}],
        "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
    }


def responses(*hosted: a.HostedTool) -> Variant:
    def agent(url: str) -> a.Agent:
        model = a.OpenAIResponsesModel(
            "gpt-4o-mini",
            base_url=url,
            api_key="sk-x",
            tools=list(hosted),
            backoff=Backoff(jitter=0.0),
        )
        return a.Agent("writer", "Write one line.", model)

    return agent


async def test_a_hosted_tool_is_part_of_the_request(tmp_path):
    with FakeResponsesServer(responses_reply) as server:
        bodies = await asked(
            tmp_path,
            server,
            {"plain": responses(), "search": responses(a.HostedTool("web_search"))},
        )
    assert len(bodies) == 2
    assert [b.get("tools", []) for b in bodies] == [[], [{"type": "web_search"}]]


REQUEST = a.ModelRequest(
    system="Write one line.", messages=[a.Message("user", "Say hello.")], agent="writer"
)


def key(model: a.ModelClient) -> str:
    return cache_key(model, REQUEST, 0, ["writer", 1])


def test_two_providers_at_one_gateway_url_never_share_an_answer():
    url = "http://127.0.0.1:9/v1"
    openai = a.OpenAIModel("claude-sonnet-4", base_url=url, api_key="sk-x", name="gw")
    anthropic = a.AnthropicModel("claude-sonnet-4", base_url=url, api_key="sk-x", name="gw")
    assert key(openai) != key(anthropic)
    assert openai.wire_request(REQUEST)["api"] == "openai.chat"
    assert anthropic.wire_request(REQUEST)["api"] == "anthropic.messages"


def test_a_local_models_key_names_its_file_not_the_port_it_got():
    def served(port: int, file: str) -> a.OpenAIModel:
        model = a.OpenAIModel("local", base_url=f"http://127.0.0.1:{port}/v1", api_key="none")
        model.endpoint_id = {"local_model": "local", "file": file, "bytes": 100}
        return model

    assert key(served(8001, "/m/a.gguf")) == key(served(8002, "/m/a.gguf"))
    assert key(served(8001, "/m/a.gguf")) != key(served(8001, "/m/b.gguf"))


def test_the_wire_request_keyed_holds_no_credential():
    model = a.OpenAIModel(
        "gpt-4o-mini", base_url="http://user:hunter2@127.0.0.1:9/v1", api_key="sk-secret"
    )
    text = json.dumps(model.wire_request(REQUEST))
    assert "sk-secret" not in text and "hunter2" not in text
    same_elsewhere = a.OpenAIModel("gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="sk-o")
    assert key(model) == key(same_elsewhere)  # who asks is not part of what is asked
