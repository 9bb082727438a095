"""Plumbing shared by adapters that talk HTTP: backoff, Retry-After, secrets, per-loop clients,
and the send loop itself (`Slots.send`).

None of it knows a provider. It lives apart from the adapters so that the conversion code
stays readable and the rules (how long to wait, what is retried, what an error says, what
counts as a secret) are written once.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from ..errors import ModelHTTPError, UserError
from .types import ModelResponse

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
"""Statuses worth another try: request timeout, lock conflict, rate limit, server errors."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long to wait before retry number ``attempt`` (1, 2, ...).

    Exponential: ``initial * multiplier ** (attempt - 1)``, capped at ``max``, of which the
    fraction ``jitter`` is drawn at random so that many clients that failed together do not
    retry together. A server's ``Retry-After`` replaces the computed delay (still capped at
    ``max``: a server asking for an hour is better answered with an error than a frozen cell).
    """

    initial: float = 0.5
    multiplier: float = 2.0
    max: float = 60.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.initial < 0 or self.multiplier < 1 or self.max < 0 or not 0 <= self.jitter <= 1:
            raise UserError(
                "Backoff needs initial >= 0, multiplier >= 1, max >= 0 and 0 <= jitter <= 1, "
                f"got {self}"
            )

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max)
        base = min(self.initial * self.multiplier ** max(attempt - 1, 0), self.max)
        return base * (1 - self.jitter) + base * self.jitter * random.random()

    @classmethod
    def of(cls, value: Backoff | float | int) -> Backoff:
        """A `Backoff` from itself or from a number (the initial delay in seconds)."""
        if isinstance(value, Backoff):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return cls(initial=float(value))
        raise UserError(f"backoff must be agentnb.models.Backoff(...) or seconds, got {value!r}")


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a server asked us to wait: ``retry-after-ms``, ``retry-after`` (seconds or date)."""
    if not headers:
        return None
    for key, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(key)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value:
        parsed = email.utils.parsedate_tz(value)
        if parsed is not None:
            return max(email.utils.mktime_tz(parsed) - time.time(), 0.0)
    return None


class Secret:
    """A credential that never shows itself: its repr and str are masked."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{8,}")


def scrub(text: str, *secrets: Secret | str | None) -> str:
    """``text`` without the given secrets, nor anything shaped like an OpenAI key
    (servers echo a key's head and tail in "Incorrect API key" messages)."""
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if value and len(value) >= 4:
            text = text.replace(value, "[redacted]")
    return _KEY_LIKE.sub("[redacted key]", text)


def display_url(url: str | None) -> str | None:
    """A URL fit to show: no user:password, no query string (Azure puts keys there)."""
    if url is None:
        return None
    url = re.sub(r"//[^/@]*@", "//", str(url))
    return url.split("?", 1)[0]


class PerLoop(Generic[T]):
    """One ``T`` per running event loop, made on first use there.

    HTTP clients bind their connection pool to the loop they first ran on; agentnb runs on
    its background loop (`run_sync`) and on Jupyter's (``await agentnb.run``), so an adapter
    keeps one client per loop. Entries of closed loops are dropped on the next new loop.
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._items: dict[asyncio.AbstractEventLoop, T] = {}

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        item = self._items.get(loop)
        if item is None:
            for old in [old for old in self._items if old.is_closed()]:
                del self._items[old]
            item = self._items[loop] = self._factory()
        return item

    def pop_current(self) -> T | None:
        """Forget (and return) the running loop's item."""
        return self._items.pop(asyncio.get_running_loop(), None)

    def __len__(self) -> int:
        return sum(1 for loop in self._items if not loop.is_closed())

    def __getstate__(self) -> dict[str, Any]:
        # Items belong to event loops, which do not travel; a copy (a dask worker) makes its own.
        return {**self.__dict__, "_items": {}}


def check_int(name: str, value: object, least: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise UserError(f"{name} must be an integer >= {least}, got {value!r}")


def check_sending(max_concurrency: object, max_retries: object, timeout: object) -> None:
    """The options every HTTP adapter takes, checked the same way."""
    check_int("max_concurrency", max_concurrency, 1)
    check_int("max_retries", max_retries, 0)
    if timeout is not None and (not isinstance(timeout, (int, float)) or timeout <= 0):
        raise UserError(f"timeout must be seconds > 0 or None, got {timeout!r}")


def server_message(exc: Any) -> str:
    """What the server said in an SDK's status error: ``{"error": {"message": ...}}`` when the
    body has it, else the body's text (cut at 300 characters)."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
    text = body if isinstance(body, str) else getattr(getattr(exc, "response", None), "text", "")
    text = str(text or exc)
    return text if len(text) <= 300 else text[:300] + "..."


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed attempt, as an adapter reads it from its SDK's exception."""

    status: int | None
    """The HTTP status; None when no answer came."""
    message: str
    """What the server said, or what went wrong."""
    retry_after: float | None = None
    """Seconds the server asked us to wait (`retry_after`)."""
    kind: str = "http"
    """What the retry event names when there is no status: "timeout" or "connection_error"."""

    @classmethod
    def no_answer(cls, exc: BaseException, timed_out: bool, timeout: float | None) -> Failure:
        """A timeout or a connection error (always worth another try)."""
        what = (
            f"did not answer within the timeout of {timeout:g} s"
            if timed_out and timeout
            else f"could not be reached ({exc.__cause__ or exc})"
        )
        return cls(None, what, kind="timeout" if timed_out else "connection_error")

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status in RETRYABLE_STATUS


@dataclass(slots=True)
class Slot:
    """One event loop's HTTP client and its limit on requests in flight."""

    client: Any
    semaphore: asyncio.Semaphore
    owned: bool
    """agentnb made the client, so agentnb closes it."""


class HttpSettings(Protocol):
    """What `Slots` reads from its adapter, when it needs it."""

    model: str
    base_url: str | None
    max_concurrency: int
    max_retries: int
    backoff: Backoff


Events = list[dict[str, Any]]


class Slots(PerLoop[Slot]):
    """An HTTP adapter's way to its server, written once for every provider.

    One `Slot` per event loop (the ``client`` given to the adapter, shared, or one made per
    loop); `slot` waits for room under ``max_concurrency`` and records the wait as a
    ``queue_wait`` event; `send` retries what is worth retrying with `Backoff` and
    ``Retry-After``, each retry a ``retry`` event, and turns what is not into a
    `ModelHTTPError` that says where and never shows the key.

    The adapter keeps what is its provider's: how to make its SDK's client, one attempt on
    the wire, how to read its SDK's exceptions (`Failure`) and its replies.
    """

    def __init__(
        self,
        settings: HttpSettings,
        *,
        client: Any,
        make_client: Callable[[], Any],
        key: Secret | None,
        key_env: str,
        host: str,
    ) -> None:
        super().__init__(self._new_slot)
        self._settings = settings
        self._client = client
        self._make_client = make_client
        self._key = key
        self._key_env = key_env
        self._host = host

    def _new_slot(self) -> Slot:
        semaphore = asyncio.Semaphore(self._settings.max_concurrency)
        if self._client is not None:
            return Slot(self._client, semaphore, owned=False)
        return Slot(self._make_client(), semaphore, owned=True)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[tuple[Any, Events]]:
        """The running loop's client, once a request may go, and the request's event list."""
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
        failure: Callable[[Exception], Failure | None],
        read: Callable[[Any], Awaitable[ModelResponse]],
        events: Events,
        *,
        reply: str,
        malformed: type[Exception],
        fallback: Callable[[Failure], bool] | None = None,
    ) -> ModelResponse:
        """``read(await attempt())``, with retries.

        ``failure`` reads an exception of ``attempt`` (None: not the SDK's, let it through);
        ``fallback`` may ask for another try at once after a failure that is not retried (a
        weaker request); ``read`` turns the raw reply into a response, raising ``malformed``
        (or ValueError, TypeError) when it is not ``reply``.
        """
        retries = 0
        while True:
            try:
                raw = await attempt()
            except Exception as exc:
                failed = failure(exc)
                if failed is None:
                    raise
                if failed.retryable and retries < self._settings.max_retries:
                    retries += 1
                    await self._pause(retries, failed, events)
                    continue
                if fallback is not None and fallback(failed):
                    continue
                raise self.error(failed.status, failed.message, retries, events) from None
            try:
                response = await read(raw)
            except (ValueError, TypeError, AttributeError) as exc:
                text = raw.http_response.text
                why = str(exc) if isinstance(exc, malformed) else "it is not valid JSON"
                shown = text if len(text) <= 200 else text[:200] + "..."
                raise self.error(
                    raw.status_code,
                    f"a reply that is not {reply} ({why}): {shown!r}",
                    retries,
                    events,
                ) from None
            response.events[:0] = events
            return response

    async def _pause(self, attempt: int, failed: Failure, events: Events) -> None:
        wait = self._settings.backoff.delay(attempt, failed.retry_after)
        status = failed.status if failed.status is not None else failed.kind
        events.append({"event": "retry", "attempt": attempt, "status": status, "wait_s": wait})
        if wait > 0:
            await asyncio.sleep(wait)

    def scrub(self, text: str) -> str:
        return scrub(text, self._key)

    def error(
        self, status: int | None, message: str, retries: int, events: Events
    ) -> ModelHTTPError:
        """The error a failed request ends with: which model, where, what it said, what to do."""
        where = self._settings.base_url or self._host
        head = f"HTTP {status}: " if status is not None else ""
        text = f"{self._settings.model} at {where} answered {head}{message}"
        if retries:
            text += f" (after {retries} retr{'y' if retries == 1 else 'ies'})"
        if status in (401, 403):
            text += f". Check the API key: set {self._key_env} or pass api_key=..."
        elif status == 404:
            text += ". Check the model name and base_url."
        return ModelHTTPError(self.scrub(text), status=status, events=events)

    async def aclose(self) -> None:
        """Close the running loop's client, if agentnb made it."""
        slot = self.pop_current()
        if slot is not None and slot.owned:
            await slot.client.close()
