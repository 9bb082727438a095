"""Rules shared by adapters that talk HTTP: how long an attempt may take, how long to wait
before the next, what a failed attempt was, what counts as a secret.

None of it knows a provider. It lives apart from the adapters so that the conversion code
stays readable and the rules are written once; `._http_model` puts them together into the
base class of the adapters. The bound on one attempt is `._deadline.Deadline`.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import ipaddress
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from ... import checks
from ...errors import UserError
from .attempt_limit import AttemptTimeout

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
"""Statuses worth another try: request timeout, lock conflict, rate limit, server errors."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long to wait before retry number ``attempt`` (1, 2, ...), and when to stop waiting.

    Exponential: ``initial * multiplier ** (attempt - 1)``, capped at ``max``, of which the
    fraction ``jitter`` is drawn at random so that many clients that failed together do not
    retry together. A server's ``Retry-After`` replaces the computed delay.

    - ``max``: the longest single wait (seconds). A server asking, with ``Retry-After``, for
      longer than this ends the call at once with an error saying how long it asked for: an
      error is better than a frozen cell.
    - ``total``: the most time spent waiting between the attempts of one call (seconds). A
      retry whose wait would go past it is not made; the call ends with the last error.
    """

    initial: float = 0.5
    multiplier: float = 2.0
    max: float = 60.0
    jitter: float = 0.5
    total: float = 60.0

    def __post_init__(self) -> None:
        checks.seconds(self.initial, "Backoff(initial=...)")
        checks.number(self.multiplier, "Backoff(multiplier=...)", least=1)
        checks.seconds(self.max, "Backoff(max=...)", infinite=True)
        checks.number(self.jitter, "Backoff(jitter=...)", least=0, most=1)
        checks.seconds(self.total, "Backoff(total=...)", infinite=True)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """The wait before retry ``attempt``: ``retry_after`` when the server gave one."""
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
            checks.seconds(value, "backoff")
            return cls(initial=float(value))
        raise checks.fail("backoff", "agentnb.models.Backoff(...) or seconds", value)


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
    """A credential that never shows itself: its repr and str are masked, and it refuses to be
    pickled (a model client drops its key when pickled and finds it again where it is used)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> NoReturn:
        raise UserError("An API key is never pickled: pass it where the model is used.")


_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{8,}")
_MASKING = r"(?:[*\u2026#xX]{3,}|\.{3})"


def scrub(text: str, *secrets: Secret | str | None) -> str:
    """``text`` without the given secrets, whole or echoed masked by a server (their first 8
    and last 4 characters around stars, as "Incorrect API key" messages show them), nor
    anything shaped like an OpenAI key."""
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if not value or len(value) < 4:
            continue
        text = text.replace(value, "[redacted]")
        if len(value) >= 12:
            head, tail = re.escape(value[:8]), re.escape(value[-4:])
            text = re.sub(rf"{head}[^\s\"'<>]*?{tail}", "[redacted key]", text)
            text = re.sub(rf"{head}{_MASKING}|{_MASKING}{tail}\b", "[redacted key]", text)
    return _KEY_LIKE.sub("[redacted key]", text)


def display_url(url: str | None) -> str | None:
    """A URL fit to show: no user:password, no query string (Azure puts keys there)."""
    if url is None:
        return None
    url = re.sub(r"//[^/@]*@", "//", str(url))
    return url.split("?", 1)[0]


_CREDENTIAL_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "accesstoken",
        "secret",
        "password",
        "passwd",
        "pwd",
        "auth",
        "sig",
        "signature",
        "credential",
        "credentials",
        "session",
        "bearer",
    }
)
"""Words that make a query parameter's name look like it holds a credential (Azure's
``api-key``, ``access_token``, ``X-Amz-Signature``, ``sig``, ``apiKey``)."""


def _looks_like_credential(name: str) -> bool:
    words = re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()
    parts = [p for p in re.split(r"[^a-z0-9]+", words) if p]
    return any(p in _CREDENTIAL_WORDS for p in parts) or "".join(parts) in _CREDENTIAL_WORDS


@dataclass(frozen=True, slots=True)
class UrlCredentials:
    """A ``base_url`` split at construction: the URL without its ``user:password@``, and the
    header that userinfo becomes (what an HTTP client would have sent for it: Basic)."""

    url: str | None
    headers: dict[str, Secret]
    secrets: tuple[Secret, ...]
    """What scrubbing removes besides the key: the password and its Basic token."""

    @classmethod
    def split(cls, url: str | None, where: str) -> UrlCredentials:
        """Split ``url``; a credential-looking query parameter is refused (`UserError`), since
        which header it would become is the server's own rule."""
        if url is None:
            return cls(None, {}, ())
        parts = urlsplit(url)
        named = [
            k
            for k, _ in parse_qsl(parts.query, keep_blank_values=True)
            if _looks_like_credential(k)
        ]
        if named:
            raise UserError(
                f"{where}: the base_url's query holds what looks like a credential "
                f"({', '.join(sorted(set(named)))}=...), which would travel with the model and "
                "its copies: pass the key as api_key=..., or give client=... made with "
                "default_headers=... / default_query=..."
            )
        if "@" not in parts.netloc:
            return cls(url, {}, ())
        userinfo, _, host = parts.netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        pair = f"{unquote(user)}:{unquote(password)}"
        token = base64.b64encode(pair.encode()).decode("ascii")
        secrets = tuple(Secret(v) for v in (unquote(password), token, pair) if v)
        bare = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
        return cls(bare, {"Authorization": Secret(f"Basic {token}")}, secrets)


def is_loopback(url: str | None) -> bool:
    """Whether ``url`` points at this machine (localhost, 127.0.0.0/8, ::1)."""
    host = urlsplit(url or "").hostname
    if host is None:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class PerLoop(Generic[T]):
    """One ``T`` per running event loop, made on first use there.

    HTTP clients bind their connection pool to the loop they first ran on; agentnb runs on
    its background loop (`run_sync`) and on Jupyter's (``await agentnb.run``), so an adapter
    keeps one client per loop. Entries of closed loops are dropped on the next new loop.
    Threads each running their own loop (``run_sync`` in a script's threads) share it, so the
    table is changed under a lock.
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._items: dict[asyncio.AbstractEventLoop, T] = {}
        self._lock = threading.Lock()

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        item = self._items.get(loop)
        if item is None:  # only this loop's thread makes its item: made outside the lock
            item = self._factory()
            with self._lock:
                for old in [old for old in self._items if old.is_closed()]:
                    del self._items[old]
                self._items[loop] = item
        return item

    def pop_current(self) -> T | None:
        """Forget (and return) the running loop's item."""
        with self._lock:
            return self._items.pop(asyncio.get_running_loop(), None)

    def pop_all(self) -> list[tuple[asyncio.AbstractEventLoop, T]]:
        """Forget (and return) every loop's item but the running loop's."""
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        with self._lock:
            others = [(loop, item) for loop, item in self._items.items() if loop is not running]
            for loop, _ in others:
                del self._items[loop]
        return others

    def __len__(self) -> int:
        with self._lock:
            return sum(1 for loop in self._items if not loop.is_closed())

    def __getstate__(self) -> dict[str, Any]:
        # Items belong to event loops, which do not travel; a copy (a dask worker) makes its own.
        state = {**self.__dict__, "_items": {}}
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def server_message(exc: Any) -> str:
    """What the server said in an SDK's status error: ``{"error": {"message": ...}}`` (or
    ``{"error": "..."}``, as some compatible servers write it) when the body has it, else the
    body's text (cut at 300 characters)."""
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, str) and inner:
            return inner
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
    text = body if isinstance(body, str) else getattr(getattr(exc, "response", None), "text", "")
    text = str(text or exc)
    return text if len(text) <= 300 else text[:300] + "..."


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed attempt, read from an exception: only text and numbers, never the exception
    (an SDK's exceptions hold the request, whose headers hold the key)."""

    status: int | None
    """The HTTP status; None when no answer came."""
    message: str
    """What the server said, or what went wrong, as a phrase (never empty)."""
    retry_after: float | None = None
    """Seconds the server asked us to wait (`retry_after`)."""
    kind: str = "http"
    """What the retry event names when there is no status: "timeout", "connect",
    "connection_error"."""
    retryable: bool = True
    """Whether another attempt may help (see `Failure.of` and `RETRYABLE_STATUS`)."""

    @classmethod
    def status_error(cls, status: int, message: str, headers: Mapping[str, str] | None) -> Failure:
        """An error answer from the server."""
        return cls(status, message, retry_after(headers), retryable=status in RETRYABLE_STATUS)

    @classmethod
    def of(cls, exc: BaseException, url: str | None, timeout: float | None) -> Failure:
        """A failure with no answer (a timeout, a connection error) from the exception an SDK or
        `Deadline` raised, read through its cause chain. An HTTP client's exception names are
        the same in httpx and its forks, so they are read by name."""
        names: list[str] = []
        details: list[str] = []
        seen: BaseException | None = exc
        while seen is not None and len(names) < 8:
            if isinstance(seen, AttemptTimeout):
                if seen.limit == "idle":
                    what = f"nothing came for {seen.seconds:g} s while streaming the reply"
                else:
                    what = f"no complete reply within the timeout of {seen.seconds:g} s"
                return cls(None, what, kind="timeout")
            names.append(type(seen).__name__)
            details.append(str(seen).strip())
            seen = seen.__cause__ or seen.__context__
        if any(n.endswith("Timeout") or n in ("TimeoutError", "APITimeoutError") for n in names):
            within = f" of {timeout:g} s" if timeout else ""
            return cls(None, f"no complete reply within the timeout{within}", kind="timeout")
        if "ConnectError" in names:
            # Nothing listens on a local address: the server is not running, and will not be
            # in the next few seconds either.
            return cls(None, "could not connect", kind="connect", retryable=not is_loopback(url))
        said = " ".join(details).lower()
        if "RemoteProtocolError" in names and "without sending a response" in said:
            return cls(None, "the server closed the connection without answering", kind="reset")
        if "WriteError" in names:
            return cls(None, "the connection was reset while sending the request", kind="reset")
        if "ReadError" in names or "RemoteProtocolError" in names:
            return cls(None, "the connection was reset while reading the reply", kind="reset")
        detail = next((d for d in details if d and d != "Connection error."), "")
        what = f"the request failed ({detail})" if detail else "the request failed"
        return cls(None, what, kind="connection_error")
