"""`AnthropicModel`: Claude through the Messages API and the ``anthropic`` package's async client.

It proves the provider boundary: the agents, tools and scenarios that run on `ScriptedModel`
or `OpenAIModel` run unchanged here; only the wire format differs (`._anthropic_wire`). Like
`OpenAIModel` it limits requests in flight (``max_concurrency``, queueing traced apart from
latency), retries 408/409/429/5xx (529 "overloaded" included), timeouts and connection
errors itself with backoff and ``Retry-After`` so each retry shows in the trace, bounds each
attempt as a whole, and keeps one client per event loop: all of that is shared, in
`._http_model.HTTPModel`.

``anthropic`` is an optional extra (``pip install 'agentnb[anthropic]'``): this module does not
import it until a request is made, so ``import agentnb`` works without it.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import AsyncIterator, Mapping
from types import ModuleType
from typing import Any

from .... import checks
from ....errors import UserError
from ...deltas import StreamItem
from ...http.first_byte import http_client
from ...http.model import DEFAULT_BACKOFF, MAX_RESPONSE_CHARS, HTTPModel
from ...http.rules import Backoff
from ...local_server import tokenizer as tokenizing
from ...request_fields import extra_body
from ...types import ModelRequest, ModelResponse
from .wire import CacheMode, MalformedReply, StructuredMode, request_to_wire, response_from_wire

__all__ = ["AnthropicModel"]


class AnthropicModel(HTTPModel):
    """A model client for Claude (the Anthropic Messages API).

    ``AnthropicModel("claude-sonnet-4-5")`` reads ``ANTHROPIC_API_KEY``; ``base_url`` (or
    ``ANTHROPIC_BASE_URL``) points it at a proxy or a test server. ``client=`` takes a
    configured ``anthropic.AsyncAnthropic`` as is (shared by every event loop).

    - ``max_tokens``: the answer's token limit (the API requires one) when the request sets none.
    - ``max_concurrency``, ``max_retries``, ``timeout`` (each attempt as a whole, a stream
      included), ``stream_idle`` (the longest silence within a stream), ``backoff``
      (``Backoff(max=...)``: the longest wait a ``Retry-After`` may ask for;
      ``Backoff(total=...)``: the most waiting between the attempts of one call),
      ``max_response_chars`` (the longest reply, streamed or not): as for `OpenAIModel`.
    - ``structured``: how a structured output is asked for: ``"tool"`` (the model is made to
      call a ``final_answer`` tool whose input is the answer; every Claude model), ``"native"``
      (``output_config`` with the JSON schema; recent models) or ``"prompt"`` (an instruction).
    - ``params``: extra fields sent with every request (``temperature``, ``top_p``, ...).
    - ``cache``: ``"auto"`` marks prompt-cache breakpoints after the tool specs, after the
      system prompt and at the end of the history (docs/caching.md); ``None`` marks none.
    """

    provider = "AnthropicModel"
    example = "claude-sonnet-4-5"
    key_env = "ANTHROPIC_API_KEY"
    base_url_env = "ANTHROPIC_BASE_URL"
    host = "api.anthropic.com"
    client_kind = "anthropic.AsyncAnthropic"
    client_attr = "messages"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Any = None,
        max_tokens: int = 1024,
        max_concurrency: int = 8,
        max_retries: int = 3,
        timeout: float | None = 120.0,
        backoff: Backoff | float = DEFAULT_BACKOFF,
        structured: StructuredMode = "tool",
        params: Mapping[str, Any] | None = None,
        name: str | None = None,
        cache: CacheMode = None,
        stream_idle: float | None = None,
        max_response_chars: int = MAX_RESPONSE_CHARS,
    ) -> None:
        checks.positive_int(max_tokens, "AnthropicModel(max_tokens=...)", optional=False)
        checks.one_of(structured, "AnthropicModel(structured=...)", ("tool", "native", "prompt"))
        checks.one_of(cache, "AnthropicModel(cache=...)", ("auto", None))
        if client is None and not _installed():
            raise UserError(
                "AnthropicModel needs the anthropic package: pip install 'agentnb[anthropic]'"
            )
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            client=client,
            max_concurrency=max_concurrency,
            max_retries=max_retries,
            timeout=timeout,
            backoff=backoff,
            params=params,
            name=name,
            stream_idle=stream_idle,
            max_response_chars=max_response_chars,
        )
        self.max_tokens = max_tokens
        self.tokenizer = tokenizing.PROVIDER  # Anthropic publishes no tokenizer for Claude
        self.structured: StructuredMode = structured
        self.cache: CacheMode = cache

    def _sdk(self) -> ModuleType:
        import anthropic

        return anthropic

    def _make_client(self, api_key: str, base_url: str | None) -> Any:
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=0, http_client=http_client(anthropic)
        )

    def wire_request(self, request: ModelRequest) -> dict[str, Any]:
        """What this call sends (Messages API), as the response cache keys it."""
        body = request_to_wire(self.model, request, self.structured, self.max_tokens, self.cache)
        return self._wire(
            "anthropic.messages", "/messages", {**body, **extra_body(self.params, body)}
        )

    async def request(self, request: ModelRequest) -> ModelResponse:
        async with self._slots.slot() as (client, events):
            body = request_to_wire(
                self.model, request, self.structured, self.max_tokens, self.cache
            )
            extra = extra_body(self.params, body)  # ModelSettings.extra, params

            async def attempt() -> Any:
                return await client.messages.with_raw_response.create(
                    **body, timeout=self.timeout, **extra
                )

            async def read(raw: Any) -> ModelResponse:
                return response_from_wire(await raw.parse(), request, self.structured)

            return await self._slots.send(
                attempt, read, events, reply="a message", malformed=MalformedReply
            )

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The call streamed (its server-sent events): text and tool-call deltas, then the
        response. Retried like `request` until the first delta; a stream broken after it (no
        ``message_stop``) raises `agentnb.errors.StreamBroken`."""
        from .stream import stream_message

        return stream_message(self, request)


def _installed() -> bool:
    """Whether ``anthropic`` can be imported, without importing it (that takes seconds)."""
    if "anthropic" in sys.modules:
        return sys.modules["anthropic"] is not None
    return importlib.util.find_spec("anthropic") is not None
