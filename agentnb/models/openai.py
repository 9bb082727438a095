"""`OpenAIModel`: any OpenAI-compatible endpoint, through the ``openai`` package's async client.

It speaks Chat Completions, which OpenAI, Azure, vLLM, Ollama, LM Studio and llama.cpp's
server all understand. Beyond converting the wire format (`._openai_wire`) it does three
things a notebook user would otherwise have to build:

- **a limit on requests in flight** (``max_concurrency``), so a 1,000-way fan-out queues
  instead of tripping a rate limit; the time spent queueing is traced apart from latency;
- **retries** of 429, 5xx, timeouts and connection errors with exponential backoff and
  jitter, honouring ``Retry-After``; agentnb does them (the ``openai`` client is told not to)
  so each one shows in the trace;
- **one client per event loop**, because an HTTP client is bound to the loop it first ran
  on, and agentnb runs both on its own background loop and on Jupyter's.

The API key is read once, kept masked, and scrubbed from every message agentnb writes.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal

from ..errors import UserError
from ._http import (
    Backoff,
    Failure,
    Secret,
    Slots,
    check_sending,
    display_url,
    retry_after,
    server_message,
)
from ._openai_wire import (
    WEAKER,
    MalformedReply,
    StructuredMode,
    request_to_wire,
    response_from_wire,
)
from .deltas import StreamItem
from .types import ModelRequest, ModelResponse

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
NO_KEY = "not-needed"
"""Sent as the key to a server given by ``base_url`` when no key is set: vLLM, Ollama,
LM Studio and llama.cpp ignore it unless they were started with a key of their own."""

DEFAULT_BACKOFF = Backoff()

Structured = Literal["auto", "json_schema", "json_object", "prompt"]


class OpenAIModel:
    """A model client for OpenAI or any OpenAI-compatible server (Chat Completions).

    ``OpenAIModel("gpt-4o-mini")`` uses OpenAI with ``OPENAI_API_KEY``;
    ``OpenAIModel("llama3.1", base_url="http://localhost:11434/v1")`` a local server, which
    needs no key (``OPENAI_BASE_URL`` works too). Pass ``client=`` to use a configured
    ``openai.AsyncOpenAI`` / ``AsyncAzureOpenAI`` as is (it is then shared by every loop).

    - ``max_concurrency``: requests in flight at once, per event loop; the rest wait their turn.
    - ``max_retries``, ``backoff`` (a `Backoff`, or the first delay in seconds): retries of
      429, 408/409, 5xx, timeouts and connection errors.
    - ``timeout``: seconds per attempt.
    - ``structured``: how a structured output is asked for. ``"auto"`` sends the JSON schema
      and, if the server rejects that with 400/422, falls back to JSON mode and then to an
      instruction in the system prompt, remembering what worked.
    - ``params``: extra body fields sent with every request (``temperature``, ``seed``, ...).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Any = None,
        max_concurrency: int = 8,
        max_retries: int = 3,
        timeout: float | None = 120.0,
        backoff: Backoff | float = DEFAULT_BACKOFF,
        structured: Structured = "auto",
        params: Mapping[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise UserError(f"OpenAIModel needs a model name such as 'gpt-4o-mini', got {model!r}")
        check_sending(max_concurrency, max_retries, timeout)
        if structured not in ("auto", "json_schema", "json_object", "prompt"):
            raise UserError(
                f"structured must be 'auto', 'json_schema', 'json_object' or 'prompt', got {structured!r}"
            )
        self.model = model
        self.name = name or model
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff = Backoff.of(backoff)
        self.structured: Structured = structured
        self.params = dict(params or {})
        self._mode: StructuredMode = "json_schema" if structured == "auto" else structured
        self._key: Secret | None = None
        if client is not None:
            if not hasattr(client, "chat"):
                raise UserError(
                    f"client must be an openai.AsyncOpenAI (or compatible), got {type(client).__name__}"
                )
            client = client.with_options(max_retries=0)
            self.base_url = display_url(str(client.base_url))
        else:
            url = base_url or os.environ.get(BASE_URL_ENV) or None
            self._url = url
            self.base_url = display_url(url)
            self._key = Secret(_find_key(model, api_key, url))
        target = self.base_url or "https://api.openai.com"
        self._max_tokens_param = (
            "max_completion_tokens" if "api.openai.com" in target else "max_tokens"
        )
        self._slots = Slots(
            self,
            client=client,
            make_client=self._new_client,
            key=self._key,
            key_env=KEY_ENV,
            host="api.openai.com",
        )

    def _new_client(self) -> Any:
        import openai

        assert self._key is not None
        return openai.AsyncOpenAI(api_key=self._key.reveal(), base_url=self._url, max_retries=0)

    async def request(self, request: ModelRequest) -> ModelResponse:
        async with self._slots.slot() as (client, events):
            mode: StructuredMode | None = self._mode if request.output_schema is not None else None

            async def attempt() -> Any:
                body = request_to_wire(
                    self.model, request, mode, max_tokens_param=self._max_tokens_param
                )
                params = {
                    **(self.params or {}),
                    **body.pop("extra_body", {}),
                }  # ModelSettings.extra
                extra = {"extra_body": params} if params else {}
                return await client.chat.completions.with_raw_response.create(
                    **body, timeout=self.timeout, **extra
                )

            def fallback(failed: Failure) -> bool:
                # "auto": a server that rejects the schema gets the next weaker request.
                nonlocal mode
                weaker = WEAKER.get(mode or "") if self.structured == "auto" else None
                if failed.status not in (400, 422) or weaker is None:
                    return False
                events.append(
                    {
                        "event": "structured_fallback",
                        "from": mode,
                        "to": weaker,
                        "status": failed.status,
                        "message": self._slots.scrub(failed.message)[:200],
                    }
                )
                mode = weaker
                return True

            async def read(raw: Any) -> ModelResponse:
                return response_from_wire(raw.parse())

            response = await self._slots.send(
                attempt,
                self._failure,
                read,
                events,
                reply="a chat completion",
                malformed=MalformedReply,
                fallback=fallback,
            )
            if mode is not None and mode != self._mode:
                self._mode = mode  # remember what this server accepts
            return response

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The call streamed (usage included): text and tool-call deltas, then the response.
        Retried like `request` until the first delta; a stream broken after it (no finish
        reason or no ``[DONE]``) raises `agentnb.errors.StreamBroken`."""
        from ._openai_stream import stream_chat

        return stream_chat(self, request)

    def _failure(self, exc: Exception) -> Failure | None:
        import openai

        if isinstance(exc, openai.APIStatusError):
            headers = exc.response.headers
            return Failure(exc.status_code, _server_message(exc), retry_after(headers))
        if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
            timed_out = isinstance(exc, openai.APITimeoutError)
            return Failure.no_answer(exc, timed_out, self.timeout)
        return None

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (if agentnb created it)."""
        await self._slots.aclose()

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model!r}, base_url={self.base_url!r})"


def _find_key(model: str, api_key: str | None, base_url: str | None) -> str:
    key = api_key or os.environ.get(KEY_ENV)
    if key:
        return key
    if base_url and "api.openai.com" not in base_url:
        return NO_KEY
    raise UserError(
        f"OpenAIModel({model!r}) needs an API key: set the {KEY_ENV} environment variable "
        "(or pass api_key=...). For a local server (vLLM, Ollama, LM Studio) pass "
        f"base_url=... or set {BASE_URL_ENV}; no key is needed then."
    )


def _server_message(exc: Any) -> str:
    # Some compatible servers put the message itself in "error".
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, Mapping) else None
    return inner if isinstance(inner, str) else server_message(exc)
