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

import asyncio
import importlib.util
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ModelHTTPError, UserError
from ._anthropic_wire import MalformedReply, StructuredMode, request_to_wire, response_from_wire
from ._http import RETRYABLE_STATUS, Backoff, PerLoop, Secret, display_url, retry_after, scrub
from .types import ModelRequest, ModelResponse

KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
NO_KEY = "not-needed"
"""Sent as the key to a server given by ``base_url`` when no key is set (a local proxy)."""


@dataclass(slots=True)
class _Slot:
    client: Any
    semaphore: asyncio.Semaphore
    owned: bool


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
    ) -> None:
        if not isinstance(model, str) or not model:
            raise UserError(
                f"AnthropicModel needs a model name such as 'claude-sonnet-4-5', got {model!r}"
            )
        for label, value, least in (("max_tokens", max_tokens, 1),
                                    ("max_concurrency", max_concurrency, 1),
                                    ("max_retries", max_retries, 0)):  # fmt: skip
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise UserError(f"{label} must be an integer >= {least}, got {value!r}")
        if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
            raise UserError(f"timeout must be seconds > 0 or None, got {timeout!r}")
        if structured not in ("tool", "native", "prompt"):
            raise UserError(f"structured must be 'tool', 'native' or 'prompt', got {structured!r}")
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
            self._client = client.with_options(max_retries=0)
            self.base_url = display_url(str(client.base_url))
        else:
            if not _installed():
                raise UserError(
                    "AnthropicModel needs the anthropic package: pip install 'agentnb[anthropic]'"
                )
            self._client = None
            self._url = base_url or os.environ.get(BASE_URL_ENV) or None
            self.base_url = display_url(self._url)
            self._key = Secret(_find_key(model, api_key, self._url))
        self._slots: PerLoop[_Slot] = PerLoop(self._new_slot)

    def _new_slot(self) -> _Slot:
        semaphore = asyncio.Semaphore(self.max_concurrency)
        if self._client is not None:
            return _Slot(self._client, semaphore, owned=False)
        import anthropic

        assert self._key is not None
        client = anthropic.AsyncAnthropic(
            api_key=self._key.reveal(), base_url=self._url, max_retries=0
        )
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
        import anthropic

        body = request_to_wire(self.model, request, self.structured, self.max_tokens)
        extra = {"extra_body": self.params} if self.params else {}
        retries = 0
        while True:
            try:
                raw = await client.messages.with_raw_response.create(
                    **body, timeout=self.timeout, **extra
                )
            except anthropic.APIStatusError as exc:
                if exc.status_code in RETRYABLE_STATUS and retries < self.max_retries:
                    retries += 1
                    after = retry_after(exc.response.headers)
                    await self._pause(retries, exc.status_code, after, events)
                    continue
                raise self._error(exc.status_code, _server_message(exc), retries, events) from None
            except anthropic.APIConnectionError as exc:  # includes APITimeoutError
                timed_out = isinstance(exc, anthropic.APITimeoutError)
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
                response = response_from_wire(await raw.parse(), request, self.structured)
            except (ValueError, TypeError, AttributeError) as exc:
                text = raw.http_response.text
                why = str(exc) if isinstance(exc, MalformedReply) else "it is not valid JSON"
                shown = text if len(text) <= 200 else text[:200] + "..."
                raise self._error(
                    raw.status_code, f"a reply that is not a message ({why}): {shown!r}",
                    retries, events,
                ) from None  # fmt: skip
            response.events[:0] = events
            return response

    async def _pause(
        self, attempt: int, status: int | str, after: float | None, events: list[dict[str, Any]]
    ) -> None:
        wait = self.backoff.delay(attempt, after)
        events.append({"event": "retry", "attempt": attempt, "status": status, "wait_s": wait})
        if wait > 0:
            await asyncio.sleep(wait)

    def _error(
        self, status: int | None, message: str, retries: int, events: list[dict[str, Any]]
    ) -> ModelHTTPError:
        where = self.base_url or "api.anthropic.com"
        head = f"HTTP {status}: " if status is not None else ""
        text = f"{self.model} at {where} answered {head}{message}"
        if retries:
            text += f" (after {retries} retr{'y' if retries == 1 else 'ies'})"
        if status in (401, 403):
            text += f". Check the API key: set {KEY_ENV} or pass api_key=..."
        elif status == 404:
            text += ". Check the model name and base_url."
        return ModelHTTPError(scrub(text, self._key), status=status, events=events)

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


def _server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
    text = body if isinstance(body, str) else getattr(getattr(exc, "response", None), "text", "")
    text = str(text or exc)
    return text if len(text) <= 300 else text[:300] + "..."
