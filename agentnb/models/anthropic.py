"""`AnthropicModel`: Claude through the Messages API and the ``anthropic`` package's async client.

It proves the provider boundary: the agents, tools and scenarios that run on `ScriptedModel`
or `OpenAIModel` run unchanged here; only the wire format differs (`._anthropic_wire`). Like
`OpenAIModel` it limits requests in flight (``max_concurrency``, queueing traced apart from
latency), retries 408/409/429/5xx (529 "overloaded" included), timeouts and connection
errors itself with backoff and ``Retry-After`` so each retry shows in the trace, and keeps
one client per event loop. The helpers for that are shared, in `._http`.

``anthropic`` is an optional extra (``pip install 'agentnb[anthropic]'``): this module does not
import it until a request is made, so ``import agentnb`` works without it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

from ..errors import UserError
from ._anthropic_wire import (
    CacheMode,
    MalformedReply,
    StructuredMode,
    request_to_wire,
    response_from_wire,
)
from ._http import (
    Backoff,
    Failure,
    Secret,
    Slots,
    check_int,
    check_sending,
    display_url,
    retry_after,
    server_message,
)
from .deltas import StreamItem
from .types import ModelRequest, ModelResponse

KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
NO_KEY = "not-needed"
"""Sent as the key to a server given by ``base_url`` when no key is set (a local proxy)."""


class AnthropicModel:
    """A model client for Claude (the Anthropic Messages API).

    ``AnthropicModel("claude-sonnet-4-5")`` reads ``ANTHROPIC_API_KEY``; ``base_url`` (or
    ``ANTHROPIC_BASE_URL``) points it at a proxy or a test server. ``client=`` takes a
    configured ``anthropic.AsyncAnthropic`` as is (shared by every event loop).

    - ``max_tokens``: the answer's token limit (the API requires one) when the request sets none.
    - ``max_concurrency``, ``max_retries``, ``backoff``, ``timeout``: as for `OpenAIModel`.
    - ``structured``: how a structured output is asked for: ``"tool"`` (the model is made to
      call a ``final_answer`` tool whose input is the answer; every Claude model), ``"native"``
      (``output_config`` with the JSON schema; recent models) or ``"prompt"`` (an instruction).
    - ``params``: extra fields sent with every request (``temperature``, ``top_p``, ...).
    - ``cache``: ``"auto"`` marks prompt-cache breakpoints after the tool specs, after the
      system prompt and at the end of the history (docs/caching.md); ``None`` marks none.
    """

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
        backoff: Backoff | float = Backoff(),  # noqa: B008 (frozen: safe to share)
        structured: StructuredMode = "tool",
        params: Mapping[str, Any] | None = None,
        name: str | None = None,
        cache: CacheMode = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise UserError(
                f"AnthropicModel needs a model name such as 'claude-sonnet-4-5', got {model!r}"
            )
        check_int("max_tokens", max_tokens, 1)
        check_sending(max_concurrency, max_retries, timeout)
        if structured not in ("tool", "native", "prompt"):
            raise UserError(f"structured must be 'tool', 'native' or 'prompt', got {structured!r}")
        if cache not in ("auto", None):
            raise UserError(f"cache must be 'auto' or None, got {cache!r}")
        self.cache: CacheMode = cache
        self.model = model
        self.name = name or model
        self.max_tokens = max_tokens
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff = Backoff.of(backoff)
        self.structured: StructuredMode = structured
        self.params = dict(params or {})
        self._key: Secret | None = None
        if client is not None:
            if not hasattr(client, "messages"):
                raise UserError(
                    f"client must be an anthropic.AsyncAnthropic, got {type(client).__name__}"
                )
            client = client.with_options(max_retries=0)
            self.base_url = display_url(str(client.base_url))
        else:
            if not _installed():
                raise UserError(
                    "AnthropicModel needs the anthropic package: pip install 'agentnb[anthropic]'"
                )
            self._url = base_url or os.environ.get(BASE_URL_ENV) or None
            self.base_url = display_url(self._url)
            self._key = Secret(_find_key(model, api_key, self._url))
        self._slots = Slots(
            self,
            client=client,
            make_client=self._new_client,
            key=self._key,
            key_env=KEY_ENV,
            host="api.anthropic.com",
        )

    def _new_client(self) -> Any:
        import anthropic

        assert self._key is not None
        return anthropic.AsyncAnthropic(
            api_key=self._key.reveal(), base_url=self._url, max_retries=0
        )

    async def request(self, request: ModelRequest) -> ModelResponse:
        async with self._slots.slot() as (client, events):
            body = request_to_wire(
                self.model, request, self.structured, self.max_tokens, self.cache
            )
            params = {**(self.params or {}), **body.pop("extra_body", {})}  # ModelSettings.extra
            extra = {"extra_body": params} if params else {}

            async def attempt() -> Any:
                return await client.messages.with_raw_response.create(
                    **body, timeout=self.timeout, **extra
                )

            async def read(raw: Any) -> ModelResponse:
                return response_from_wire(await raw.parse(), request, self.structured)

            return await self._slots.send(
                attempt, self._failure, read, events, reply="a message", malformed=MalformedReply
            )

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The call streamed (its server-sent events): text and tool-call deltas, then the
        response. Retried like `request` until the first delta; a stream broken after it (no
        ``message_stop``) raises `agentnb.errors.StreamBroken`."""
        from ._anthropic_stream import stream_message

        return stream_message(self, request)

    def _failure(self, exc: Exception) -> Failure | None:
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):  # 529 "overloaded" is a 5xx: retried
            headers = exc.response.headers
            return Failure(exc.status_code, server_message(exc), retry_after(headers))
        if isinstance(exc, anthropic.APIConnectionError):  # includes APITimeoutError
            timed_out = isinstance(exc, anthropic.APITimeoutError)
            return Failure.no_answer(exc, timed_out, self.timeout)
        return None

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (if agentnb created it)."""
        await self._slots.aclose()

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model!r}, base_url={self.base_url!r})"


def _installed() -> bool:
    """Whether ``anthropic`` can be imported, without importing it (that takes seconds)."""
    if "anthropic" in sys.modules:
        return sys.modules["anthropic"] is not None
    return importlib.util.find_spec("anthropic") is not None


def _find_key(model: str, api_key: str | None, base_url: str | None) -> str:
    key = api_key or os.environ.get(KEY_ENV)
    if key:
        return key
    if base_url and "api.anthropic.com" not in base_url:
        return NO_KEY
    raise UserError(
        f"AnthropicModel({model!r}) needs an API key: set the {KEY_ENV} environment variable "
        "(or pass api_key=...). For a proxy or local server pass base_url=... or set "
        f"{BASE_URL_ENV}."
    )
