"""Plumbing shared by adapters that talk HTTP: backoff, Retry-After, secrets, per-loop clients.

None of it knows a provider. It lives apart from the adapters so that the conversion code
stays readable and the rules (how long to wait, what counts as a secret) are written once.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import UserError

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
