"""`Slots`: an HTTP model's way to its server, the send loop with its retries written once.

One `Slot` per event loop (HTTP clients are bound to the loop they first ran on) holds the
client; the limit on requests in flight is one `.limit.Limit` for the model, whatever loop
or thread a request comes from; `Slots.send` makes the attempts, each within a
`._deadline.Deadline`, retries what is worth retrying as `._http.Backoff` allows, and turns
what is not into a `ModelHTTPError` that says where, what happened and what to do.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import ModelHTTPError, UnreadableReply
from ..types import ModelResponse
from .attempt_limit import Deadline
from .first_byte import first_byte_event
from .gate import check_request_allowed
from .limit import Limit
from .rules import Failure, PerLoop, scrub

if TYPE_CHECKING:
    from .model import HTTPModel

Events = list[dict[str, Any]]


@dataclass(slots=True)
class Slot:
    """One event loop's HTTP client."""

    client: Any
    owned: bool
    """agentnb made the client, so agentnb closes it."""


class Slots(PerLoop[Slot]):
    """A model's way to its server: one `Slot` per event loop (the ``client`` given to the
    model, shared, or one made per loop), the model's limit on requests in flight (one for
    all loops and threads), and the send loop with its retries."""

    def __init__(self, owner: HTTPModel) -> None:
        super().__init__(self._new_slot)
        self._owner = owner
        self._limit = Limit(owner.max_concurrency)

    @property
    def owner(self) -> HTTPModel:
        """The model these slots send for (its settings: timeout, retries, backoff)."""
        return self._owner

    def _new_slot(self) -> Slot:
        owner = self._owner
        if owner._client is not None:
            return Slot(owner._client, owned=False)
        return Slot(owner._new_client(), owned=True)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[tuple[Any, Events]]:
        """The running loop's client, once a request may go, and the request's event list
        (a wait for room under ``max_concurrency`` is its ``queue_wait`` event). Refused when
        requests are forbidden (`agentnb.models.http.gate`)."""
        check_request_allowed(self._owner)
        slot = self.get()
        events: Events = []
        queued = self._limit.busy()
        started = time.perf_counter()
        async with self._limit.held():
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
        attempts = self.attempts(events)
        while True:
            failed = None
            try:
                raw = await Deadline(owner.timeout).run(attempt())
            except Exception as exc:
                failed = owner._failure(exc)
                if failed is None:
                    raise
            if failed is None:
                break
            await attempts.retry_or_raise(failed, fallback)
        try:
            response = await read(raw)
        except (ValueError, TypeError, AttributeError) as exc:
            why = str(exc) if isinstance(exc, malformed) else "it is not valid JSON"
            failed = self._unreadable(raw, f"a reply that is not {reply} ({why})")
        else:
            longer = longer_than(response, owner.max_response_chars)
            if longer is None:
                arrived = first_byte_event(raw, attempts.started)
                if arrived is not None:
                    events.append(arrived)
                response.events[:0] = events
                return response
            raise attempts.error(Failure(raw.status_code, longer, retryable=False))
        # Raised here, out of the except: the error chains nothing that holds the reply.
        raise attempts.error(failed, kind=UnreadableReply)

    def _unreadable(self, raw: Any, what: str) -> Failure:
        """A reply that could not be read, quoting its start scrubbed of the key (made here,
        so that no frame of the call's traceback holds the unscrubbed body)."""
        text = self.scrub(raw.http_response.text[:1000])
        shown = text if len(text) <= 200 else text[:200] + "..."
        return Failure(raw.status_code, f"{self.scrub(what)}: {shown!r}")

    def attempts(self, events: Events) -> Attempts:
        """The retry state of one call (a request, or a stream until its first delta)."""
        return Attempts(self, events)

    def scrub(self, text: str) -> str:
        return scrub(text, self._owner._key, *self._owner._url_secrets)

    def error(
        self,
        failed: Failure,
        retries: int,
        started: float,
        events: Events,
        stop: str | None = None,
        kind: type[ModelHTTPError] = ModelHTTPError,
    ) -> ModelHTTPError:
        """The error a failed call ends with: which model, where, what happened, what to do
        (a `ModelHTTPError`, or the subclass ``kind``)."""
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
        return kind(self.scrub(text), status=failed.status, events=events)

    async def aclose(self) -> None:
        """Close the running loop's client, if agentnb made it."""
        slot = self.pop_current()
        if slot is not None and slot.owned:
            await slot.client.close()

    def close_others(self, timeout: float = 5.0) -> None:
        """Close the clients agentnb made on every loop but the running one (its own is
        closed by `aclose`): a loop running in another thread (`run_sync`'s) closes its
        client there; a loop that is not running is run until its client is closed."""
        for loop, slot in self.pop_all():
            if not slot.owned or loop.is_closed():
                continue
            if loop.is_running():
                asyncio.run_coroutine_threadsafe(slot.client.close(), loop).result(timeout)
            else:
                loop.run_until_complete(slot.client.close())


def longer_than(response: ModelResponse, cap: int) -> str | None:
    """Why a whole reply is refused when its text and tool arguments pass ``cap`` characters
    (`HTTPModel.max_response_chars`, the bound a stream is held to as well), else None."""
    size = len(response.text or "") + sum(
        len(c.arguments) + len(c.name) for c in response.tool_calls
    )
    if size <= cap:
        return None
    return (
        f"a reply of {size:,} characters, longer than max_response_chars={cap:,} (text and "
        "tool arguments); raise max_response_chars=... on the model if such replies are expected"
    )


class Attempts:
    """One call's retries: how many were made, how long was waited, and why they stopped.

    `again` decides after each failed attempt (and waits); `error` is the error the call ends
    with. Requests (`Slots.send`) and streams (`._sse`) share it, so both follow one rule:
    retry what may help, up to ``max_retries``, never waiting longer than ``Backoff.max`` at
    once (a ``Retry-After`` asking for more ends the call) nor ``Backoff.total`` in all.
    """

    def __init__(self, slots: Slots, events: Events) -> None:
        self._slots = slots
        self._events = events
        self.retries = 0
        self.waited = 0.0
        self.started = time.perf_counter()
        self.stop: str | None = None
        """Why a retryable failure was not retried (a wait the `Backoff` does not allow)."""

    async def again(self, failed: Failure) -> bool:
        """Whether to try again after ``failed``; if so, the wait is made and traced."""
        owner = self._slots._owner
        if not failed.retryable or self.retries >= owner.max_retries:
            return False
        backoff = owner.backoff
        asked = failed.retry_after
        if asked is not None and asked > backoff.max:
            self.stop = (
                f"the server asked to be retried in {asked:,.0f} s (Retry-After), longer than "
                f"Backoff(max={backoff.max:g}) allows; try again later"
            )
            return False
        wait = backoff.delay(self.retries + 1, asked)
        if self.waited + wait > backoff.total:
            self.stop = (
                f"waiting {wait:.1f} s more would pass Backoff(total={backoff.total:g}), the "
                "most time spent waiting between the attempts of one call"
            )
            return False
        self.retries += 1
        self.waited += wait
        status = failed.status if failed.status is not None else failed.kind
        self._events.append(
            {"event": "retry", "attempt": self.retries, "status": status, "wait_s": wait}
        )
        if wait > 0:
            await asyncio.sleep(wait)
        return True

    async def retry_or_raise(
        self, failed: Failure, fallback: Callable[[Failure], bool] | None
    ) -> None:
        """After ``failed``: return when the call is to be tried again (after the wait, or
        with the weaker request ``fallback`` switched to); raise the call's error otherwise."""
        if await self.again(failed):
            return
        if self.stop is None and fallback is not None and fallback(failed):
            return
        raise self.error(failed)

    def error(
        self, failed: Failure, *, kind: type[ModelHTTPError] = ModelHTTPError
    ) -> ModelHTTPError:
        """The error the call ends with (see `Slots.error`)."""
        return self._slots.error(failed, self.retries, self.started, self._events, self.stop, kind)
