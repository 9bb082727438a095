"""`HTTPModel`: what every adapter that talks to a server over HTTP shares.

An adapter (`OpenAIModel`, `AnthropicModel`) keeps what is its provider's: how to make its
SDK's client, one attempt on the wire, how to read a reply. The rest is here, written once:
the constructor's common options, finding the key, one client per event loop and a limit on
requests in flight (`Slots`), a bound on each attempt (`._http.Deadline`), retries with
`._http.Backoff` and ``Retry-After`` (each retry traced as an event), reading an SDK's
exceptions (`._http.Failure`), the `ModelHTTPError` a call ends with, closing, pickling.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar

from ..errors import ModelHTTPError, UserError
from ._http import (
    AttemptTimeout,
    Backoff,
    Deadline,
    Failure,
    PerLoop,
    Secret,
    check_sending,
    display_url,
    scrub,
    server_message,
)
from .types import ModelResponse

NO_KEY = "not-needed"
"""Sent as the key to a server given by ``base_url`` when no key is set: vLLM, Ollama,
LM Studio, llama.cpp and local proxies ignore it unless they were started with a key."""

DEFAULT_BACKOFF = Backoff()

Events = list[dict[str, Any]]


class HTTPModel:
    """The base of model clients that reach a server through a provider's SDK.

    A subclass sets the class attributes that name its provider, calls
    ``super().__init__(...)`` with the options every adapter takes, and implements
    `_sdk` (the SDK's module, imported when first needed), `_make_client` and ``request``
    (with `Slots.slot` and `Slots.send`).
    """

    provider: ClassVar[str]
    """The class's name as users write it, for messages: ``"OpenAIModel"``."""
    example: ClassVar[str]
    """A model name to show in messages: ``"gpt-4o-mini"``."""
    key_env: ClassVar[str]
    base_url_env: ClassVar[str]
    host: ClassVar[str]
    """The provider's own host, where a key is needed: ``"api.openai.com"``."""
    client_kind: ClassVar[str]
    """What ``client=`` takes, for messages: ``"openai.AsyncOpenAI"``."""
    client_attr: ClassVar[str]
    """An attribute such a client has (``"chat"``), to refuse something else at once."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key: str | None,
        client: Any,
        max_concurrency: int,
        max_retries: int,
        timeout: float | None,
        backoff: Backoff | float,
        params: Mapping[str, Any] | None,
        name: str | None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise UserError(
                f"{self.provider} needs a model name such as {self.example!r}, got {model!r}"
            )
        check_sending(max_concurrency, max_retries, timeout)
        if params is not None and not isinstance(params, Mapping):
            raise UserError(
                f"params must be a dict of extra request fields, got {type(params).__name__}"
            )
        for option, value in (("api_key", api_key), ("base_url", base_url), ("name", name)):
            if value is not None and not isinstance(value, str):
                raise UserError(f"{option} must be a string, got {type(value).__name__}")
        self.model = model
        self.name = name or model
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff = Backoff.of(backoff)
        self.params = dict(params or {})
        self._key: Secret | None = None
        self._url: str | None = None
        self._client = client
        if client is not None:
            if not hasattr(client, self.client_attr):
                raise UserError(
                    f"client must be an {self.client_kind} (or compatible), got {type(client).__name__}"
                )
            self._client = client.with_options(max_retries=0)  # agentnb retries, and traces it
            self.base_url = display_url(str(client.base_url))
        else:
            self._url = base_url or os.environ.get(self.base_url_env) or None
            self.base_url = display_url(self._url)
            self._key = Secret(self._find_key(api_key))
        self._slots = Slots(self)

    # -- what a provider supplies

    def _sdk(self) -> ModuleType:
        """The provider's SDK module (``openai``, ``anthropic``)."""
        raise NotImplementedError

    def _make_client(self, api_key: str, base_url: str | None) -> Any:
        """A new SDK client that does not retry by itself."""
        raise NotImplementedError

    # -- shared

    def _find_key(self, api_key: str | None) -> str:
        key = api_key or os.environ.get(self.key_env)
        if key:
            return key
        if self._url and self.host not in self._url:
            return NO_KEY
        raise UserError(
            f"{self.provider}({self.model!r}) needs an API key: set the {self.key_env} environment "
            f"variable (or pass api_key=...). For a local server or a proxy pass base_url=... or "
            f"set {self.base_url_env}; no key is needed then."
        )

    def _new_client(self) -> Any:
        if self._key is None:  # unpickled: keys do not travel, the environment has it here
            self._key = Secret(self._find_key(None))
        return self._make_client(self._key.reveal(), self._url)

    def _failure(self, exc: Exception) -> Failure | None:
        """What an exception of one attempt was; None when it is not the SDK's nor a
        `Deadline`'s (a bug, not a failure of the server: it is let through)."""
        sdk = self._sdk()
        if isinstance(exc, sdk.APIStatusError):
            return Failure.status_error(exc.status_code, server_message(exc), exc.response.headers)
        if not isinstance(exc, sdk.APIError) and not _from_transport(exc):
            return None
        if isinstance(exc, sdk.APIError) and not isinstance(exc, sdk.APIConnectionError):
            return Failure(None, f"an unreadable reply ({exc})", retryable=False)
        return Failure.of(exc, self._url or self.base_url, self.timeout)

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (if agentnb created it)."""
        await self._slots.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"

    def __getstate__(self) -> dict[str, Any]:
        """A pickled model (a sweep sent to other processes) carries no key: the copy reads
        it from the environment where it runs. A model made with ``client=`` is refused, since
        the client holds the key."""
        if self._client is not None:
            raise UserError(
                f"{self!r} was made with client=..., which holds the API key: it cannot be "
                "pickled. Make it with api_key/base_url instead (the key is then read from "
                f"{self.key_env} where the copy runs)."
            )
        state = dict(self.__dict__)
        state["_key"] = None
        state["_slots"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._slots = Slots(self)


def _from_transport(exc: BaseException) -> bool:
    """Whether ``exc`` is an HTTP client's own (httpx or a fork) or a `Deadline`'s."""
    module = type(exc).__module__.split(".")[0]
    return module.startswith(("httpx", "httpcore")) or isinstance(exc, AttemptTimeout)


@dataclass(slots=True)
class Slot:
    """One event loop's HTTP client and its limit on requests in flight."""

    client: Any
    semaphore: asyncio.Semaphore
    owned: bool
    """agentnb made the client, so agentnb closes it."""


class Slots(PerLoop[Slot]):
    """A model's way to its server: one `Slot` per event loop (the ``client`` given to the
    model, shared, or one made per loop), and the send loop with its retries."""

    def __init__(self, owner: HTTPModel) -> None:
        super().__init__(self._new_slot)
        self._owner = owner

    def _new_slot(self) -> Slot:
        owner = self._owner
        semaphore = asyncio.Semaphore(owner.max_concurrency)
        if owner._client is not None:
            return Slot(owner._client, semaphore, owned=False)
        return Slot(owner._new_client(), semaphore, owned=True)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[tuple[Any, Events]]:
        """The running loop's client, once a request may go, and the request's event list
        (a wait for room under ``max_concurrency`` is its ``queue_wait`` event)."""
        slot = self.get()
        events: Events = []
        queued = slot.semaphore.locked()
        started = time.perf_counter()
        async with slot.semaphore:
            if queued:
                events.append({"event": "queue_wait", "seconds": time.perf_counter() - started})
            yield slot.client, events

    async def send(
        self,
        attempt: Callable[[], Awaitable[Any]],
        read: Callable[[Any], Awaitable[ModelResponse]],
        events: Events,
        *,
        reply: str,
        malformed: type[Exception],
        fallback: Callable[[Failure], bool] | None = None,
    ) -> ModelResponse:
        """``read(await attempt())``, each attempt within the model's ``timeout``, retried
        while that may help and the `Backoff` allows.

        ``fallback`` may ask for another try at once after a failure that is not retried (a
        weaker request); ``read`` turns the raw reply into a response, raising ``malformed``
        (or ValueError, TypeError) when it is not ``reply``. A call that fails raises a
        `ModelHTTPError` holding only text: no exception of the SDK is chained to it.
        """
        owner = self._owner
        started = time.perf_counter()
        retries = 0
        waited = 0.0
        while True:
            failed = stop = None
            try:
                raw = await Deadline(owner.timeout).run(attempt())
            except Exception as exc:
                failed = owner._failure(exc)
                if failed is None:
                    raise
            if failed is None:
                break
            if failed.retryable and retries < owner.max_retries:
                wait, stop = self._next_wait(retries + 1, failed, waited)
                if stop is None:
                    retries += 1
                    waited += wait
                    status = failed.status if failed.status is not None else failed.kind
                    events.append(
                        {"event": "retry", "attempt": retries, "status": status, "wait_s": wait}
                    )
                    if wait > 0:
                        await asyncio.sleep(wait)
                    continue
            if stop is None and fallback is not None and fallback(failed):
                continue
            raise self.error(failed, retries, started, events, stop)
        try:
            response = await read(raw)
        except (ValueError, TypeError, AttributeError) as exc:
            text = raw.http_response.text
            why = str(exc) if isinstance(exc, malformed) else "it is not valid JSON"
            shown = text if len(text) <= 200 else text[:200] + "..."
            failed = Failure(raw.status_code, f"a reply that is not {reply} ({why}): {shown!r}")
        else:
            response.events[:0] = events
            return response
        raise self.error(failed, retries, started, events)

    def _next_wait(self, attempt: int, failed: Failure, waited: float) -> tuple[float, str | None]:
        """The wait before retry ``attempt``, or why it is not made."""
        backoff = self._owner.backoff
        asked = failed.retry_after
        if asked is not None and asked > backoff.max:
            return 0.0, (
                f"the server asked to be retried in {asked:,.0f} s (Retry-After), longer than "
                f"Backoff(max={backoff.max:g}) allows; try again later"
            )
        wait = backoff.delay(attempt, asked)
        if waited + wait > backoff.total:
            return 0.0, (
                f"waiting {wait:.1f} s more would pass Backoff(total={backoff.total:g}), the "
                "most time spent waiting between the attempts of one call"
            )
        return wait, None

    def scrub(self, text: str) -> str:
        return scrub(text, self._owner._key)

    def error(
        self,
        failed: Failure,
        retries: int,
        started: float,
        events: Events,
        stop: str | None = None,
    ) -> ModelHTTPError:
        """The error a failed call ends with: which model, where, what happened, what to do."""
        owner = self._owner
        where = owner.base_url or f"https://{owner.host}"
        if failed.kind == "connect":
            text = f"{owner.model}: could not connect to {where} (is the server running?)"
        elif failed.status is not None:
            text = f"{owner.model} at {where} answered HTTP {failed.status}: {failed.message}"
        else:
            text = f"{owner.model} at {where}: {failed.message}"
        if retries:
            tally = f"after {retries} retr{'y' if retries == 1 else 'ies'}"
            tally += f", {time.perf_counter() - started:.1f} s"
            text += f" {tally}" if failed.kind == "connect" else f" ({tally})"
        elif failed.kind == "connect" and not failed.retryable:
            text += "; not retried, as nothing listens at that local address"
        if stop is not None:
            text += f"; {'no more retries' if retries else 'not retried'}: {stop}"
        if failed.status in (401, 403, 404):
            text = text.rstrip(". ")
        if failed.status in (401, 403):
            text += f". Check the API key: set {owner.key_env} or pass api_key=..."
        elif failed.status == 404:
            text += ". Check the model name and base_url."
        return ModelHTTPError(self.scrub(text), status=failed.status, events=events)

    async def aclose(self) -> None:
        """Close the running loop's client, if agentnb made it."""
        slot = self.pop_current()
        if slot is not None and slot.owned:
            await slot.client.close()
