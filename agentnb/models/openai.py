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

import asyncio
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ModelHTTPError, UserError
from ._http import RETRYABLE_STATUS, Backoff, PerLoop, Secret, display_url, retry_after, scrub
from ._openai_wire import (
    WEAKER,
    MalformedReply,
    StructuredMode,
    request_to_wire,
    response_from_wire,
)
from .types import ModelRequest, ModelResponse

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
NO_KEY = "not-needed"
"""Sent as the key to a server given by ``base_url`` when no key is set: vLLM, Ollama,
LM Studio and llama.cpp ignore it unless they were started with a key of their own."""

DEFAULT_BACKOFF = Backoff()

Structured = Literal["auto", "json_schema", "json_object", "prompt"]


@dataclass(slots=True)
class _Slot:
    client: Any
    semaphore: asyncio.Semaphore
    owned: bool


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
        _check_int("max_concurrency", max_concurrency, 1)
        _check_int("max_retries", max_retries, 0)
        if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
            raise UserError(f"timeout must be seconds > 0 or None, got {timeout!r}")
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
            self._client = client.with_options(max_retries=0)
            self.base_url = display_url(str(client.base_url))
        else:
            self._client = None
            url = base_url or os.environ.get(BASE_URL_ENV) or None
            self._url = url
            self.base_url = display_url(url)
            self._key = Secret(_find_key(model, api_key, url))
        target = self.base_url or "https://api.openai.com"
        self._max_tokens_param = (
            "max_completion_tokens" if "api.openai.com" in target else "max_tokens"
        )
        self._slots: PerLoop[_Slot] = PerLoop(self._new_slot)

    def _new_slot(self) -> _Slot:
        semaphore = asyncio.Semaphore(self.max_concurrency)
        if self._client is not None:
            return _Slot(self._client, semaphore, owned=False)
        import openai

        assert self._key is not None
        client = openai.AsyncOpenAI(api_key=self._key.reveal(), base_url=self._url, max_retries=0)
        return _Slot(client, semaphore, owned=True)

    async def request(self, request: ModelRequest) -> ModelResponse:
        slot = self._slots.get()
        events: list[dict[str, Any]] = []
        queued = slot.semaphore.locked()
        started = time.perf_counter()
        async with slot.semaphore:
            if queued:
                events.append({"event": "queue_wait", "seconds": time.perf_counter() - started})
            return await self._send(slot.client, request, events)

    async def _send(
        self, client: Any, request: ModelRequest, events: list[dict[str, Any]]
    ) -> ModelResponse:
        import openai

        mode: StructuredMode | None = self._mode if request.output_schema is not None else None
        retries = 0
        while True:
            body = request_to_wire(
                self.model, request, mode, max_tokens_param=self._max_tokens_param
            )
            extra = {"extra_body": self.params} if self.params else {}
            try:
                raw = await client.chat.completions.with_raw_response.create(
                    **body, timeout=self.timeout, **extra
                )
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status in RETRYABLE_STATUS and retries < self.max_retries:
                    retries += 1
                    await self._pause(retries, status, retry_after(exc.response.headers), events)
                    continue
                weaker = WEAKER.get(mode or "") if self.structured == "auto" else None
                if status in (400, 422) and weaker is not None:
                    events.append({"event": "structured_fallback", "from": mode, "to": weaker,
                                   "status": status, "message": self._scrub(_server_message(exc))[:200]})  # fmt: skip
                    mode = weaker
                    continue
                raise self._error(status, _server_message(exc), retries, events) from None
            except openai.APIConnectionError as exc:  # includes APITimeoutError
                timed_out = isinstance(exc, openai.APITimeoutError)
                if retries < self.max_retries:
                    retries += 1
                    kind = "timeout" if timed_out else "connection_error"
                    await self._pause(retries, kind, None, events)
                    continue
                what = (
                    f"did not answer within the timeout of {self.timeout:g} s"
                    if timed_out and self.timeout
                    else f"could not be reached ({exc.__cause__ or exc})"
                )
                raise self._error(None, what, retries, events) from None
            try:
                response = response_from_wire(raw.parse())
            except (ValueError, TypeError, AttributeError) as exc:
                text = raw.http_response.text
                why = str(exc) if isinstance(exc, MalformedReply) else "it is not valid JSON"
                shown = text if len(text) <= 200 else text[:200] + "..."
                raise self._error(
                    raw.status_code,
                    f"a reply that is not a chat completion ({why}): {shown!r}",
                    retries,
                    events,
                ) from None
            if mode is not None and mode != self._mode:
                self._mode = mode  # remember what this server accepts
            response.events[:0] = events
            events.clear()
            return response

    async def _pause(
        self, attempt: int, status: int | str, after: float | None, events: list[dict[str, Any]]
    ) -> None:
        wait = self.backoff.delay(attempt, after)
        events.append({"event": "retry", "attempt": attempt, "status": status, "wait_s": wait})
        if wait > 0:
            await asyncio.sleep(wait)

    def _scrub(self, text: str) -> str:
        return scrub(text, self._key)

    def _error(
        self, status: int | None, message: str, retries: int, events: list[dict[str, Any]]
    ) -> ModelHTTPError:
        where = self.base_url or "api.openai.com"
        head = f"HTTP {status}: " if status is not None else ""
        text = f"{self.model} at {where} answered {head}{message}"
        if retries:
            text += f" (after {retries} retr{'y' if retries == 1 else 'ies'})"
        if status in (401, 403):
            text += f". Check the API key: set {KEY_ENV} or pass api_key=..."
        elif status == 404:
            text += ". Check the model name and base_url."
        return ModelHTTPError(self._scrub(text), status=status, events=events)

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (if agentnb created it)."""
        slot = self._slots.pop_current()
        if slot is not None and slot.owned:
            await slot.client.close()

    def __getstate__(self) -> dict[str, Any]:
        # Clients and semaphores belong to event loops; a copy (a dask worker) makes its own.
        state = self.__dict__.copy()
        state["_slots"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._slots = PerLoop(self._new_slot)

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


def _check_int(name: str, value: object, least: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise UserError(f"{name} must be an integer >= {least}, got {value!r}")


def _server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    text = body if isinstance(body, str) else getattr(getattr(exc, "response", None), "text", "")
    text = str(text or exc)
    return text if len(text) <= 300 else text[:300] + "..."
