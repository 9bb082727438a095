"""`OpenAIModel`: any OpenAI-compatible endpoint, through the ``openai`` package's async client.

It speaks Chat Completions, which OpenAI, Azure, vLLM, Ollama, LM Studio and llama.cpp's
server all understand. Beyond converting the wire format (`._openai_wire`) it does three
things a notebook user would otherwise have to build:

- **a limit on requests in flight** (``max_concurrency``), so a 1,000-way fan-out queues
  instead of tripping a rate limit; the time spent queueing is traced apart from latency;
- **retries** of 429, 5xx, timeouts and connection errors with exponential backoff and
  jitter, honouring ``Retry-After`` within bounds; agentnb does them (the ``openai`` client
  is told not to) so each one shows in the trace;
- **a bound on each attempt** (``timeout``): connecting and the whole reply, however slowly
  it comes;
- **one client per event loop**, because an HTTP client is bound to the loop it first ran
  on, and agentnb runs both on its own background loop and on Jupyter's.

The API key is read once, kept masked, scrubbed from every message agentnb writes, and
never pickled. What it shares with `AnthropicModel` is in `._http_model.HTTPModel`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from types import ModuleType
from typing import Any, Literal
from urllib.parse import urlsplit

from .... import checks
from ....errors import ModelHTTPError, UserError
from ...deltas import StreamItem
from ...http.first_byte import http_client
from ...http.model import DEFAULT_BACKOFF, MAX_RESPONSE_CHARS, NO_KEY, HTTPModel
from ...http.rules import Backoff, Failure, Secret, is_loopback
from ...local_server import tokenizer as tokenizing
from ...request_fields import extra_body
from ...types import ModelRequest, ModelResponse
from .wire import (
    OPENAI_TOOL_CHOICES,
    MalformedReply,
    StructuredMode,
    ToolChoices,
    request_to_wire,
    required_refused,
    response_from_wire,
    weaker_mode,
)

__all__ = ["NO_KEY", "OpenAIModel", "ToolChoices"]

Structured = Literal["auto", "json_schema", "json_object", "prompt"]


class OpenAIModel(HTTPModel):
    """A model client for OpenAI or any OpenAI-compatible server (Chat Completions).

    ``OpenAIModel("gpt-4o-mini")`` uses OpenAI with ``OPENAI_API_KEY``;
    ``OpenAIModel("llama3.1", base_url="http://localhost:11434/v1")`` a local server, which
    needs no key (``OPENAI_BASE_URL`` works too). Pass ``client=`` to use a configured
    ``openai.AsyncOpenAI`` / ``AsyncAzureOpenAI`` as is (it is then shared by every loop).

    - ``max_concurrency``: requests in flight at once for this model, across every thread
      and event loop of the process; the rest wait their turn.
    - ``timeout``: seconds one attempt may take as a whole, from connecting to the last byte
      of the reply (a reply that trickles in is cut off too; a streamed reply is bounded as a
      whole the same way); then it is retried.
    - ``stream_idle``: seconds a streamed reply may go without sending an event before the
      attempt fails (None: only ``timeout`` bounds it); keep-alive comments do not count.
    - ``max_response_chars``: the most characters of text and tool arguments one reply may
      hold, streamed or not (20 million by default); a longer one ends the call with a
      `ModelHTTPError` (a `StreamBroken` keeping the text shown, once a stream has begun).
    - ``max_retries``: retries of 429, 408/409, 5xx, timeouts and connection errors (a
      connection refused on a local address is not retried: no server is running there).
    - ``backoff``: a `Backoff`, or the first delay in seconds. ``Backoff(max=...)`` is the
      longest wait before one retry: a server whose ``Retry-After`` asks for longer ends the
      call at once with a `ModelHTTPError` saying how long it asked for.
      ``Backoff(total=...)`` bounds the time spent waiting between the attempts of one call
      (60 s by default).
    - ``structured``: how a structured output is asked for. ``"auto"`` sends the JSON schema
      and, if the server rejects that with 400/422, falls back to JSON mode and then to an
      instruction in the system prompt, remembering what worked.
    - ``params``: extra body fields sent with every request (``temperature``, ``seed``, ...).
    - ``tool_choices``: a `ToolChoices` for a server whose ``tool_choice`` differs from
      OpenAI's (``agentnb.local_model()`` sets the one for llama-cpp-python's server).
    - ``tokenizer``: what agentnb counts this model's tokens with (the ``tokens_method``
      column says which was used). ``"auto"``: the encoding of an OpenAI model's family
      (``gpt-4o`` → ``o200k_base``), else, for a server on this machine (a loopback
      ``base_url``), the server's own tokenize endpoint (llama.cpp, llama-cpp-python, vLLM),
      else the provider's reported usage. ``"server"`` asks the ``base_url``'s server
      whatever its host (each text counted is sent there, with the model's credentials). Or name one: ``"o200k_base"``, ``"cl100k_base"``, ``"server"``, ``"provider"``.

    A pickled copy (a sweep on other processes) carries no key: it reads ``OPENAI_API_KEY``
    where it runs. A model made with ``client=`` cannot be pickled.
    """

    provider = "OpenAIModel"
    example = "gpt-4o-mini"
    key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"
    host = "api.openai.com"
    client_kind = "openai.AsyncOpenAI"
    client_attr = "chat"

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
        stream_idle: float | None = None,
        tool_choices: ToolChoices | None = None,
        tokenizer: str = "auto",
        max_response_chars: int = MAX_RESPONSE_CHARS,
    ) -> None:
        if tool_choices is not None and not isinstance(tool_choices, ToolChoices):
            raise checks.fail(
                "OpenAIModel(tool_choices=...)",
                "agentnb.models.ToolChoices(...) or None",
                tool_choices,
            )
        checks.one_of(
            structured,
            "OpenAIModel(structured=...)",
            ("auto", "json_schema", "json_object", "prompt"),
        )
        checks.one_of(tokenizer, "OpenAIModel(tokenizer=...)", tokenizing.CHOICES)
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
        self.structured: Structured = structured
        self.tool_choices = tool_choices or OPENAI_TOOL_CHOICES
        self._mode: StructuredMode = "json_schema" if structured == "auto" else structured
        target = self.base_url or "https://api.openai.com"
        self._max_tokens_param = (
            "max_completion_tokens" if "api.openai.com" in target else "max_tokens"
        )
        self.tokenizer: str | tokenizing.ServerTokenizer = self._choose_tokenizer(tokenizer)

    def _choose_tokenizer(self, choice: str) -> str | tokenizing.ServerTokenizer:
        """What `tokenizer` means for this model and server (see the class docstring)."""
        url = self._url or (str(self._client.base_url) if self._client is not None else None)
        if choice == tokenizing.AUTO:
            encoding, _ = tokenizing.family_encoding(self.model)
            if encoding is not None:
                return encoding
            # Counting sends every text to the server: unasked, only to this machine's.
            choice = tokenizing.SERVER if is_loopback(url) else tokenizing.PROVIDER
        if choice != tokenizing.SERVER:
            return choice
        if url is None or self.host in (urlsplit(url).hostname or ""):
            raise UserError(
                f"OpenAIModel({self.model!r}, tokenizer='server') counts with the tokenize "
                "endpoint of the server given by base_url=...; OpenAI's API has none: use "
                "tokenizer='o200k_base' or 'cl100k_base'"
            )
        key = self._key
        if key is None and self._client is not None:
            key = Secret(str(getattr(self._client, "api_key", "") or ""))
        return tokenizing.ServerTokenizer(url, self.model, key, headers=self._url_headers)

    def _sdk(self) -> ModuleType:
        import openai

        return openai

    def _make_client(self, api_key: str, base_url: str | None) -> Any:
        import openai

        return openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, http_client=http_client(openai)
        )

    def _body(self, request: ModelRequest, mode: StructuredMode | None) -> dict[str, Any]:
        """The keywords of one Chat Completions call, plain or streamed: the wire body, and
        ``ModelSettings.extra`` and ``params`` under ``extra_body``."""
        body = request_to_wire(
            self.model,
            request,
            mode,
            max_tokens_param=self._max_tokens_param,
            tool_choices=self.tool_choices,
        )
        return {**body, **extra_body(self.params, body)}

    def wire_request(self, request: ModelRequest) -> dict[str, Any]:
        """What this call sends (Chat Completions), as the response cache keys it."""
        mode: StructuredMode | None = self._mode if request.output_schema is not None else None
        return self._wire("openai.chat", "/chat/completions", self._body(request, mode))

    async def request(self, request: ModelRequest) -> ModelResponse:
        async with self._slots.slot() as (client, events):
            mode: StructuredMode | None = self._mode if request.output_schema is not None else None

            async def attempt() -> Any:
                return await client.chat.completions.with_raw_response.create(
                    **self._body(request, mode), timeout=self.timeout
                )

            def fallback(failed: Failure) -> bool:
                # "auto": a server that rejects the schema gets the next weaker request.
                nonlocal mode
                message = self._slots.scrub(failed.message)
                weaker = weaker_mode(self.structured, mode, failed.status, message, events)
                if weaker is None:
                    return False
                mode = weaker
                return True

            async def read(raw: Any) -> ModelResponse:
                return response_from_wire(raw.parse())

            try:
                response = await self._slots.send(
                    attempt,
                    read,
                    events,
                    reply="a chat completion",
                    malformed=MalformedReply,
                    fallback=fallback,
                )
            except ModelHTTPError as exc:
                raise required_refused(exc, request) from None
            if mode is not None and mode != self._mode:
                self._mode = mode  # remember what this server accepts
            return response

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The call streamed (usage included): text and tool-call deltas, then the response.
        Retried like `request` until the first delta; a stream broken after it (no finish
        reason or no ``[DONE]``) raises `agentnb.errors.StreamBroken`."""
        from .stream import stream_chat

        return stream_chat(self, request)
