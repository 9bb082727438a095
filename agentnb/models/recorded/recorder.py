"""Record a model's calls to a file once; replay them offline, with the same trace, forever.

A workshop notebook is run once against a real model with ``agentnb.record(model, path)``;
afterwards ``agentnb.replay(path)`` answers the same requests with no key and no network.
Because agentnb measures what the model is *sent* (`agentnb.trace.sizes`), and a replay is
sent exactly what the recording was, the calls table of a replayed run has the same
characters, tokens and provider usage as the original.

The file format (a header line, then one JSON line per call) is documented, written and
checked in `._recording_file`: `replay` reads the whole file at once and refuses a damaged
one with a `UserError` naming the file, line and field.

Replay matches each request to an unused recorded call with the same canonical request
(first in file order when several are equal), not merely the next line, so parallel
sub-agents that finish in another order still get their own answers. A request with no
match raises `ReplayMismatch`, naming the first difference from the nearest recorded call.
The model settings of each call (`ModelSettings`) are recorded beside the request and must
match too (a recording of format version 1 has none: its settings are not compared); a
request recorded with other settings is a `ReplayMismatch` naming the setting that differs.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import checks, errors
from ...errors import AgentRunError, ModelHTTPError, ReplayMismatch, UserError
from ...words import plural
from ..base import ModelClient
from ..canonical import dumps, request_payload
from ..deltas import StreamItem, stream_of
from ..types import ModelRequest, ModelResponse, ToolCall, Usage
from .file import FORMAT_VERSION, Entry, error_dict, line, read, response_dict, settings_dict


def record(
    model: ModelClient | str, path: str | os.PathLike[str], *, append: bool = False
) -> Recorder:
    """Wrap ``model`` so that every call is written to ``path`` (JSON lines; see module doc).

    The file is started afresh unless ``append=True``. ``model`` may be a spec string.
    """
    if isinstance(model, str):
        from ..registry import model_from_spec

        model = model_from_spec(model)
    if not isinstance(model, ModelClient):
        raise checks.fail("record(model, ...)", "a model client or a spec string", model)
    checks.flag(append, "record(append=...)")
    return Recorder(model, _path(path, "record"), append=append)


def replay(path: str | os.PathLike[str], *, name: str | None = None) -> Replay:
    """A model client that answers from a recording made by `record`, offline.

    The whole file is checked here: a damaged one raises a `UserError` naming the file, the
    line and the field."""
    checks.text(name, "replay(name=...)", optional=True)
    return Replay(_path(path, "replay"), name=name)


def _path(path: object, caller: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise checks.fail(f"{caller}(path)", "a file path (str or Path)", path)
    if "\x00" in str(os.fspath(path)):  # no file system takes it
        raise checks.fail(f"{caller}(path)", "a file path without NUL characters", path)
    return Path(path)


def _replayed_tokenizer(tokenizer: Any) -> str:
    """What a replay counts with: the recorded model's encoding, or the recorded usage
    (``provider``) for a server's tokenizer, which will not be there to ask."""
    return tokenizer if isinstance(tokenizer, str) and tokenizer != "server" else "provider"


class Recorder:
    """A model client that passes every request to ``model`` and writes the call down."""

    def __init__(self, model: ModelClient, path: Path, *, append: bool = False) -> None:
        self.model = model
        self.name = getattr(model, "name", type(model).__name__)
        self.tokenizer = getattr(model, "tokenizer", None)  # counted as the model it records
        self.path = path
        self.calls = 0
        self._lock = threading.Lock()
        if path.is_dir():
            raise UserError(f"{str(path)!r} is a directory; record() writes a file: give its path")
        path.parent.mkdir(parents=True, exist_ok=True)
        if not append or not path.exists() or path.stat().st_size == 0:
            header: dict[str, Any] = {"agentnb_recording": FORMAT_VERSION, "model": self.name}
            if self.tokenizer is not None:
                header["tokenizer"] = _replayed_tokenizer(self.tokenizer)
            path.write_text(dumps(header) + "\n", encoding="utf-8")

    async def request(self, request: ModelRequest) -> ModelResponse:
        entry = _entry(request)
        try:
            response = await self.model.request(request)
        except AgentRunError as exc:
            self._write({**entry, "error": error_dict(exc)})
            raise
        self._write({**entry, "response": response_dict(response)})
        return response

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The wrapped model's stream (or its response as one delta), passed on as it comes;
        the call is written down when it ends, as for `request`."""
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        entry = _entry(request)
        try:
            async for item in stream_of(self.model, request):
                if isinstance(item, ModelResponse):
                    self._write({**entry, "response": response_dict(item)})
                yield item
        except AgentRunError as exc:
            self._write({**entry, "error": error_dict(exc)})
            raise

    def _write(self, entry: dict[str, Any]) -> None:
        text = line(entry)
        with self._lock, self.path.open("a", encoding="utf-8") as file:
            file.write(text)
            self.calls += 1

    def __repr__(self) -> str:
        return f"Recorder({self.model!r} -> {str(self.path)!r}, {plural(self.calls, 'call')})"

    def __getstate__(self) -> dict[str, Any]:
        return _without_lock(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        _with_lock(self, state)


def _entry(request: ModelRequest) -> dict[str, Any]:
    """The start of a call's line: who asked, what was sent, and the settings when any are set."""
    entry: dict[str, Any] = {"agent": request.agent, "request": request_payload(request)}
    settings = settings_dict(request.settings)
    if settings:
        entry["settings"] = settings
    return entry


@dataclass(slots=True)
class _Entry:
    line: int
    call: Entry
    used: bool = False

    def reply(self) -> ModelResponse:
        if self.call.error is not None:
            raise _rebuild_error(self.call.error)
        r = self.call.response
        assert r is not None  # an entry has one or the other
        return ModelResponse(
            text=r.text,
            tool_calls=[ToolCall(c.name, c.arguments, c.id) for c in r.tool_calls],
            usage=Usage(
                r.usage.input_tokens,
                r.usage.output_tokens,
                1,
                r.usage.cached_input_tokens,
                r.usage.cache_write_tokens,
                r.usage.reasoning_tokens,
            ),
            stop_reason=r.stop_reason,
            model=r.model,
            events=[dict(e) for e in r.events],
        )


def _rebuild_error(data: Any) -> AgentRunError:
    cls = getattr(errors, data.type, None)
    if cls is ModelHTTPError or not (isinstance(cls, type) and issubclass(cls, AgentRunError)):
        return ModelHTTPError(data.message, status=data.status, events=list(data.events))
    return cls(data.message)


class Replay:
    """Answers requests from a recording; see the module docstring for the matching rule.

    ``requests`` lists what it received; ``remaining`` counts recorded calls not used yet.
    """

    def __init__(self, path: Path, *, name: str | None = None) -> None:
        header, calls = read(path)
        self.path = path
        self.name = name or header.model or "replay"
        self.tokenizer = header.tokenizer
        """How the recorded model was counted (None: by its name, as any client)."""
        self.requests: list[ModelRequest] = []
        self._entries = [_Entry(line, call) for line, call in calls]
        self._by_request: dict[str, deque[_Entry]] = {}
        for entry in self._entries:
            self._by_request.setdefault(dumps(entry.call.request), deque()).append(entry)
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        return sum(1 for e in self._entries if not e.used)

    def assert_complete(self) -> None:
        """Raise AssertionError if some recorded calls were never requested."""
        if self.remaining:
            raise AssertionError(
                f"{self.remaining} recorded call(s) in {self.path} were never requested"
            )

    async def request(self, request: ModelRequest) -> ModelResponse:
        key = dumps(request_payload(request))
        settings = settings_dict(request.settings)
        with self._lock:  # a replay may serve two event loops (run_sync and Jupyter's)
            self.requests.append(request)
            queue = self._by_request.get(key)
            entry = _take(queue, settings) if queue else None
            if entry is None:
                raise self._mismatch(request, settings, queue)
            entry.used = True
        return entry.reply()

    def _mismatch(
        self, request: ModelRequest, settings: dict[str, Any], same: deque[_Entry] | None
    ) -> ReplayMismatch:
        who = f"agent {request.agent!r}" if request.agent else "the agent"
        if same:  # the request is recorded, with other settings
            nearest = same[0]
            where, recorded, sent = first_difference(nearest.call.settings, settings, "settings")
            recorded_text, sent_text = _shown(recorded, sent)
            return ReplayMismatch(
                f"{who.capitalize()} sent a request that the recording {self.path} holds "
                f"(line {nearest.line}) with other model settings: {where} was recorded "
                f"{recorded_text}, sent {sent_text}. If the change is intended, record the run "
                "again with agentnb.record(...)."
            )
        unused = [e for e in self._entries if not e.used]
        if not unused:
            return ReplayMismatch(
                f"Replay of {self.path} has no call left for {who}: all {len(self._entries)} "
                "recorded calls were used. Record the run again with agentnb.record(...)."
            )
        nearest = next((e for e in unused if e.call.agent == request.agent), unused[0])
        where, recorded, sent = first_difference(nearest.call.request, request_payload(request))
        recorded_text, sent_text = _shown(recorded, sent)
        return ReplayMismatch(
            f"{who.capitalize()} sent a request that is not in the recording {self.path}. "
            f"Compared with the nearest recorded call (line {nearest.line}, agent {nearest.call.agent!r}), "
            f"the first difference is at {where}: recorded {recorded_text}, sent {sent_text}. "
            "If the change is intended, record the run again with agentnb.record(...)."
        )

    def __repr__(self) -> str:
        used = len(self._entries) - self.remaining
        return f"Replay({str(self.path)!r}, {used:,} of {plural(len(self._entries), 'call')} used)"

    def __getstate__(self) -> dict[str, Any]:
        return _without_lock(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        _with_lock(self, state)


def _take(queue: deque[_Entry], settings: dict[str, Any]) -> _Entry | None:
    """The first recorded call of ``queue`` made with ``settings`` (a call recorded without
    them, in a version-1 file, matches any), taken out of the queue; None if there is none."""
    for i, entry in enumerate(queue):
        if entry.call.settings is None or entry.call.settings == settings:
            del queue[i]
            return entry
    return None


def _without_lock(obj: Any) -> dict[str, Any]:
    """A recorder's or replay's state to pickle (a sweep on other processes): its lock is
    the copy's own."""
    return {k: v for k, v in vars(obj).items() if k != "_lock"}


def _with_lock(obj: Any, state: dict[str, Any]) -> None:
    vars(obj).update(state)
    obj._lock = threading.Lock()


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Any = _Absent()


def first_difference(recorded: Any, sent: Any, path: str = "$") -> tuple[str, Any, Any]:
    """Where two JSON values first differ, as ``(json_path, recorded, sent)``; the path is
    ``""`` when they are equal. A missing key or list item shows as ``<absent>``."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in [*recorded, *(k for k in sent if k not in recorded)]:
            a, b = recorded.get(key, ABSENT), sent.get(key, ABSENT)
            found = first_difference(a, b, f"{path}.{key}")
            if found[0]:
                return found
        return "", None, None
    if isinstance(recorded, list) and isinstance(sent, list):
        for i in range(max(len(recorded), len(sent))):
            a = recorded[i] if i < len(recorded) else ABSENT
            b = sent[i] if i < len(sent) else ABSENT
            found = first_difference(a, b, f"{path}[{i}]")
            if found[0]:
                return found
        return "", None, None
    if type(recorded) is not type(sent) or recorded != sent:
        return path, recorded, sent
    return "", None, None


def _shown(recorded: Any, sent: Any, limit: int = 80) -> tuple[str, str]:
    """Both values as short JSON; two long texts are cut around where they start to differ."""
    a = repr(recorded) if recorded is ABSENT else dumps(recorded)
    b = repr(sent) if sent is ABSENT else dumps(sent)
    start = 0
    if isinstance(recorded, str) and isinstance(sent, str):
        same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        start = max(same - limit // 2, 0)
    return _cut(a, start, limit), _cut(b, start, limit)


def _cut(text: str, start: int, limit: int) -> str:
    head = "..." if start else ""
    body = text[start : start + limit]
    return head + body + ("..." if start + limit < len(text) else "")
