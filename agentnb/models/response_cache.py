"""The response cache's seam: where an experiment's cache sits between the run loop and a model.

The run loop passes every model call through `through(model, path, turn)`. Outside an
experiment with a cache (no `Session` in the context variable `SESSION`: every ordinary run)
that returns the model itself. Inside one, it returns a `CachedCall`: the request's key is
looked up in the session's store, and a stored answer is returned (or streamed) instead of
calling the provider; a new answer is handed to the store as soon as its call ends.

The key (`cache_key`) is the request as sent: for an adapter that speaks a wire protocol,
what its ``wire_request(request)`` returns (API kind, endpoint, path, wire model name and the
whole body, with its ``params``, hosted tools and output format; never a credential), else
the model's name, the canonical request (`agentnb.models.canonical`), its settings and
output limit; then the trial number, the call's place in its run (agent path and turn) and
how many identical keys came before it in the same run (identical parallel branches stay
independent). It holds no configuration of the experiment: two configurations that send the
same request at the same trial share one answer (common random numbers).

A stored answer is checked as a model's answer is before it is served: its row's checksum
(the store's), its shape, ``max_response_chars`` and its tool calls (each names a tool the
request offered). One that fails is not served: the model is asked, the fresh answer replaces
the row, and the call's events say why (``cache_refused``). The wrapper counts tokens as the
model it wraps (its ``tokenizer``). The store behind a session lives in a higher layer
(`agentnb.measure.experiments.store`); this module only knows the `ResponseStore` protocol.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from .base import ModelClient
from .canonical import dumps, request_payload
from .deltas import StreamItem, TextChunk, ToolCallChunk, stream_of
from .http.model import MAX_RESPONSE_CHARS
from .http.send import longer_than
from .recorded.file import response_dict, settings_dict
from .types import ModelRequest, ModelResponse, ToolCall, Usage

CACHE_EVENT = "response_cache"
"""The event a cached answer carries in ``ModelResponse.events``: the trace marks its call
``cached`` and keeps the original ``latency_s`` it holds."""


class ResponseStore(Protocol):
    """Where a session's answers are kept: the experiment store, or a dict on a worker."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, entry: dict[str, Any]) -> None: ...


@dataclass(slots=True)
class Session:
    """One run of an experiment as the cache sees it: its trial, its store, what it may do.

    ``read``: answer from the store when the key is there; ``write``: store new answers.
    ``calls``, ``hits``: model calls seen and answered from the store (progress bar, tests).
    ``usage``, ``chars_in``, ``chars_out``: what the calls seen cost (a judge's, counted
    apart from the system under test)."""

    trial: int
    store: ResponseStore | None = None
    read: bool = False
    write: bool = False
    calls: int = 0
    hits: int = 0
    chars_in: int = 0
    chars_out: int = 0
    usage: Usage = field(default_factory=Usage)
    seen: Counter[str] = field(default_factory=Counter)
    timings: list[tuple[Any, Any]] = field(default_factory=list)
    """The ``wall_s`` and ``critical_s`` of the runs that made each answer served: a run
    answered wholly from the cache keeps its original run's timing."""


SESSION: ContextVar[Session | None] = ContextVar("agentnb_response_cache", default=None)


def through(model: ModelClient, path: str, turn: int) -> ModelClient:
    """The client a model call at ``path``, ``turn`` goes through: ``model`` itself unless an
    experiment's session is active."""
    session = SESSION.get()
    if session is None:
        return model
    return CachedCall(model, session, path, turn)


def sent(model: ModelClient, request: ModelRequest) -> dict[str, Any]:
    """What identifies a request to ``model`` (see the module docstring): the adapter's wire
    request where it has one, else the model's name and the canonical request."""
    wire = getattr(model, "wire_request", None)
    if callable(wire):
        return {"wire": wire(request)}
    return {
        "model": getattr(model, "name", type(model).__name__),
        "endpoint": str(getattr(model, "base_url", None) or ""),
        "request": request_payload(request),
        "settings": settings_dict(request.settings),
        "max_output_tokens": request.max_output_tokens,
    }


def cache_key(
    model: ModelClient, request: ModelRequest, trial: int, place: list[Any], what: Any = None
) -> str:
    """The key of a request (see the module docstring): a SHA-256 of its canonical JSON."""
    payload = {"sent": what or sent(model, request), "trial": trial, "place": place}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


class CachedCall:
    """One model call of an experiment's run, answered from the store when it can be."""

    def __init__(self, model: ModelClient, session: Session, path: str, turn: int) -> None:
        self.inner = model
        self.name = getattr(model, "name", type(model).__name__)
        self.tokenizer = getattr(model, "tokenizer", None)  # counted as the model it wraps
        named = getattr(model, "model", None)
        self.model = named if isinstance(named, str) else self.name
        self.session = session
        self.path = path
        self.turn = turn
        self._refused: str | None = None

    def _key(self, request: ModelRequest) -> str:
        session = self.session
        what = sent(self.inner, request)
        base = cache_key(self.inner, request, session.trial, [self.path, self.turn], what)
        session.seen[base] += 1
        n = session.seen[base]
        if n == 1:
            return base
        return cache_key(self.inner, request, session.trial, [base, n], what)

    def _stored(self, key: str, request: ModelRequest) -> ModelResponse | None:
        session = self.session
        if not session.read or session.store is None:
            return None
        entry = session.store.get(key)
        if entry is None:
            return None
        try:
            if "refused" in entry:
                raise ValueError(entry["refused"])
            response = response_from_dict(entry["response"])
            _check_answer(response, request, self.inner)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            self._refused = f"{type(exc).__name__}: {str(exc)[:200]}"
            return None
        session.hits += 1
        session.timings.append((entry.get("wall_s"), entry.get("critical_s")))
        response.events.append({"event": CACHE_EVENT, "latency_s": entry.get("latency_s")})
        return response

    def _keep(self, key: str, request: ModelRequest, response: ModelResponse, t: float) -> None:
        session = self.session
        session.usage.add(response.usage, requests=1)
        session.chars_in += len(dumps(request_payload(request)))
        session.chars_out += len(response.text or "") + sum(
            len(c.arguments) for c in response.tool_calls
        )
        if session.write and session.store is not None:
            entry = {
                "model": self.name,
                "trial": session.trial,
                "path": self.path,
                "turn": self.turn,
                "latency_s": t,
                "response": response_dict(response),
            }
            if self._refused is not None:
                entry["replace"] = True  # the fresh answer takes the damaged row's place
            session.store.put(key, entry)
        if self._refused is not None:
            response.events.append(
                {"event": "cache_refused", "reason": self._refused, "refetched": True}
            )

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.session.calls += 1
        key = self._key(request)
        stored = self._stored(key, request)
        if stored is not None:
            return stored
        start = time.perf_counter()
        response = await self.inner.request(request)
        self._keep(key, request, response, _latency(start, response))
        return response

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The stored answer as a stream (its text, its tool calls), or the model's own stream,
        kept when it ends."""
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.session.calls += 1
        key = self._key(request)
        stored = self._stored(key, request)
        if stored is not None:
            if stored.text:
                yield TextChunk(stored.text)
            for i, call in enumerate(stored.tool_calls):
                yield ToolCallChunk(i, call.name, call.arguments, call.id)
            yield stored
            return
        start = time.perf_counter()
        async for item in stream_of(self.inner, request):
            if isinstance(item, ModelResponse):
                self._keep(key, request, item, _latency(start, item))
            yield item


def _latency(start: float, response: ModelResponse) -> float:
    """The call's time, less what it waited for a concurrency slot (as ``latency_s`` is)."""
    waited = sum(
        float(e.get("seconds", 0.0)) for e in response.events if e.get("event") == "queue_wait"
    )
    return time.perf_counter() - start - waited


def _check_answer(response: ModelResponse, request: ModelRequest, model: ModelClient) -> None:
    """A stored answer held to what a model's answer is held to (a `ValueError` saying why)."""
    if response.text is None and not response.tool_calls:
        raise ValueError("it holds neither text nor tool calls")
    if response.text is not None and not isinstance(response.text, str):
        raise ValueError("its text is not a string")
    cap = getattr(model, "max_response_chars", MAX_RESPONSE_CHARS)
    longer = longer_than(response, cap if isinstance(cap, int) else MAX_RESPONSE_CHARS)
    if longer is not None:
        raise ValueError(longer)
    offered = {t.name for t in request.tools}
    for call in response.tool_calls:
        if not isinstance(call.name, str) or not isinstance(call.arguments, str):
            raise ValueError("a tool call's name or arguments is not a string")
        if call.name not in offered:
            raise ValueError(f"it calls {call.name[:60]!r}, a tool the request did not offer")
    for value in (response.usage.input_tokens, response.usage.output_tokens):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ValueError("its usage is not a count")


def response_from_dict(data: dict[str, Any]) -> ModelResponse:
    """A response as `response_dict` wrote it."""
    if not isinstance(data, dict):
        raise TypeError(f"a stored answer is a JSON object, not {type(data).__name__}")
    usage = data.get("usage") or {}
    return ModelResponse(
        text=data.get("text"),
        tool_calls=[
            ToolCall(c["name"], c.get("arguments", "{}"), c.get("id", ""))
            for c in data.get("tool_calls", [])
        ],
        usage=Usage(
            usage.get("input_tokens"),
            usage.get("output_tokens"),
            1,
            usage.get("cached_input_tokens"),
            usage.get("cache_write_tokens"),
            usage.get("reasoning_tokens"),
        ),
        stop_reason=data.get("stop_reason", "stop"),
        model=data.get("model"),
        events=[dict(e) for e in data.get("events", [])],
    )
