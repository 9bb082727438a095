"""Credentials never stay in a ``base_url``: ``user:password@`` is split out at construction
into the header it becomes, a credential-looking query parameter is refused, and neither
shows anywhere the key would not: errors (a server echoing its ``Authorization`` header,
base64 included), ``vars(model)``, pickles, deep copies, the run's renderings."""

from __future__ import annotations

import base64
import copy
import json
import pickle

import pytest
from fake_openai_server import completion
from fault_server import FaultServer, Play, Request, response
from secret_scan import exception_texts, traceback_with_locals

import agentnb as a
from agentnb.models.providers.anthropic.adapter import AnthropicModel
from agentnb.models.providers.openai.adapter import OpenAIModel
from agentnb.models.providers.openai_responses.adapter import OpenAIResponsesModel

PASSWORD = "pw-URL-SECRET-7f3a9c"
TOKEN = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()


def echo_authorization(request: Request) -> Play:
    """A 401 that quotes the request's Authorization header, as some proxies do."""
    said = f"refused credentials {request.headers.get('authorization')!r}"
    return response(401, {"error": {"message": said, "type": "auth"}})


def renderings(model: object, result: a.RunResult) -> str:
    texts = [repr(model), str(model), repr(vars(model)), repr(result), *result.log_lines()]
    texts += [result.calls.to_csv(), json.dumps(result.span_tree(), default=str)]
    texts += exception_texts(result.error) + traceback_with_locals(result.error)
    return "\n".join(texts)


@pytest.mark.parametrize("kind", [OpenAIModel, OpenAIResponsesModel, AnthropicModel])
def test_a_url_password_becomes_a_header_and_shows_nowhere(kind):
    with FaultServer(echo_authorization) as server:
        url = server.url.replace("//", f"//alice:{PASSWORD}@") + "/v1"
        model = kind("m", base_url=url, max_retries=0)
        result = a.run_sync(a.Agent("w", "Be brief.", model), "hello")
        a.run_sync(model.aclose())
        sent = server.requests[0].headers["authorization"]

    assert sent == f"Basic {TOKEN}"  # what the URL meant is what went out, as a header
    assert not result.ok and "HTTP 401" in str(result.error)
    assert "[redacted]" in str(result.error)  # the echoed header, scrubbed
    shown = renderings(model, result)
    pickled = pickle.dumps(model) + pickle.dumps(result)
    copied = copy.deepcopy(model)
    for leak in (PASSWORD, TOKEN, f"alice:{PASSWORD}"):
        assert leak not in shown
        assert leak.encode() not in pickled
        assert leak not in repr(vars(copied))
    assert model.base_url == server.url + "/v1"


def test_a_copy_of_such_a_model_says_its_credentials_stayed_behind():
    with FaultServer([response(200, completion("hi"))]) as server:
        url = server.url.replace("//", f"//alice:{PASSWORD}@") + "/v1"
        model = OpenAIModel("m", base_url=url)
        copied = pickle.loads(pickle.dumps(model))
        result = a.run_sync(a.Agent("w", "Be brief.", copied), "hello")
        assert server.seen == 0  # nothing went out without the credentials
    assert not result.ok and "never travels" in str(result.error)


@pytest.mark.parametrize("query", ["api-key=SECRET1234", "access_token=SECRET1234", "sig=abc"])
def test_a_credential_in_the_query_is_refused_with_what_to_do(query):
    with pytest.raises(a.UserError, match="pass the key as api_key=") as caught:
        OpenAIModel("m", base_url=f"https://gw.example.com/v1?{query}")
    assert "SECRET1234" not in str(caught.value)


def test_an_ordinary_query_is_kept():
    model = OpenAIModel("m", base_url="https://gw.example.com/v1?api-version=2024-10-01")
    assert model._url == "https://gw.example.com/v1?api-version=2024-10-01"


def test_the_servers_tokenizer_gets_the_header_not_the_url():
    model = OpenAIModel("smollm2", base_url=f"http://bob:{PASSWORD}@127.0.0.1:9/v1")
    counter = model.tokenizer
    assert not isinstance(counter, str)
    assert counter.root == "http://127.0.0.1:9"
    assert PASSWORD not in repr(counter) + repr(vars(counter))
    assert PASSWORD.encode() not in pickle.dumps(counter)


def test_a_clients_url_with_credentials_never_reaches_the_tokenizers_root():
    import openai

    client = openai.AsyncOpenAI(
        api_key="not-needed", base_url=f"http://bob:{PASSWORD}@127.0.0.1:9/v1"
    )
    model = OpenAIModel("smollm2", client=client)
    counter = model.tokenizer
    assert not isinstance(counter, str) and counter.root == "http://127.0.0.1:9"
    assert PASSWORD not in repr(counter) + repr(model)


@pytest.mark.parametrize("query", ["api-version=2024-10-01", "design=a", "author=b", "page=2"])
def test_ordinary_query_parameters_are_not_taken_for_credentials(query):
    assert OpenAIModel("m", base_url=f"https://gw.example.com/v1?{query}").base_url
