"""Record a model's calls to a file once; replay them offline, with the same trace, forever.

A workshop notebook is run once against a real model with ``agentnb.record(model, path)``;
afterwards ``agentnb.replay(path)`` answers the same requests with no key and no network.
Because agentnb measures what the model is *sent* (`agentnb.trace.sizes`), and a replay is
sent exactly what the recording was, the calls table of a replayed run has the same
characters, tokens and provider usage as the original.

File format (JSON lines, UTF-8, one object per line, compact, keys in a fixed order so that
re-recording after a change gives a readable diff)::

    {"agentnb_recording":1,"model":"gpt-4o-mini"}
    {"agent":"coordinator","request":{...},"response":{...}}
    {"agent":"legal","request":{...},"error":{"type":"ModelHTTPError","message":"...","status":500}}

- line 1 is a header: the format version and the recorded client's ``name``;
- then one line per model call, written when the call finishes (concurrent calls therefore
  appear in the order they finished);
- ``request`` is the canonical request of `agentnb.models.canonical.request_payload`
  (system, messages, tools, output_schema): exactly what "characters sent" measures;
- ``response`` is ``{"text", "tool_calls": [{"id","name","arguments"}], "usage":
  {"input_tokens","output_tokens"}, "stop_reason", "model", "events"}``; ``usage`` also has
  ``cached_input_tokens``, ``cache_write_tokens`` and ``reasoning_tokens`` when the provider
  reported them; ``events`` keeps the
  adapter's retries but not its queue waits (those depend on the machine, not the model);
- ``error`` replaces ``response`` for a call that failed with an `AgentRunError`, so a failed
  run replays as a failed run.

No key, header or URL is ever written: only what the model was sent and what it answered.

Replay matches each request to an unused recorded call with the same canonical request
(first in file order when several are equal), not merely the next line, so parallel
sub-agents that finish in another order still get their own answers. A request with no
match raises `ReplayMismatch`, naming the first difference from the nearest recorded call.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import errors
from ..errors import AgentRunError, ModelHTTPError, ReplayMismatch, UserError
from .base import ModelClient
from .canonical import dumps, request_payload
from .types import ModelRequest, ModelResponse, ToolCall, Usage

FORMAT_VERSION = 1
_UNSTABLE_EVENTS = frozenset({"queue_wait"})


def record(
    model: ModelClient | str, path: str | os.PathLike[str], *, append: bool = False
) -> Recorder:
    """Wrap ``model`` so that every call is written to ``path`` (JSON lines; see module doc).

    The file is started afresh unless ``append=True``. ``model`` may be a spec string.
    """
    if isinstance(model, str):
        from .registry import model_from_spec

        model = model_from_spec(model)
    if not isinstance(model, ModelClient):
        raise UserError(f"record() takes a model client, got {type(model).__name__}")
    return Recorder(model, Path(path), append=append)


def replay(path: str | os.PathLike[str], *, name: str | None = None) -> Replay:
    """A model client that answers from a recording made by `record`, offline."""
    return Replay(Path(path), name=name)


class Recorder:
    """A model client that passes every request to ``model`` and writes the call down."""

    def __init__(self, model: ModelClient, path: Path, *, append: bool = False) -> None:
        self.model = model
        self.name = getattr(model, "name", type(model).__name__)
        self.path = path
        self.calls = 0
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        if not append or not path.exists() or path.stat().st_size == 0:
            header = {"agentnb_recording": FORMAT_VERSION, "model": self.name}
            path.write_text(dumps(header) + "\n", encoding="utf-8")

    async def request(self, request: ModelRequest) -> ModelResponse:
        payload = request_payload(request)
        try:
            response = await self.model.request(request)
        except AgentRunError as exc:
            self._write({"agent": request.agent, "request": payload, "error": _error_dict(exc)})
            raise
        self._write(
            {"agent": request.agent, "request": payload, "response": _response_dict(response)}
        )
        return response

    def _write(self, entry: dict[str, Any]) -> None:
        line = dumps(entry) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as file:
            file.write(line)
            self.calls += 1

    def __repr__(self) -> str:
        return f"Recorder({self.model!r} -> {str(self.path)!r}, {self.calls} calls)"


def _response_dict(response: ModelResponse) -> dict[str, Any]:
    return {
        "text": response.text,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls
        ],
        "usage": _usage_dict(response.usage),
        "stop_reason": response.stop_reason,
        "model": response.model,
        "events": [e for e in response.events if e.get("event") not in _UNSTABLE_EVENTS],
    }


_USAGE_DETAILS = ("cached_input_tokens", "cache_write_tokens", "reasoning_tokens")
"""Written only when the provider reported them, so older recordings read the same."""


def _usage_dict(usage: Usage) -> dict[str, int | None]:
    out = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    for name in _USAGE_DETAILS:
        value = getattr(usage, name)
        if value is not None:
            out[name] = value
    return out


def _error_dict(exc: AgentRunError) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ModelHTTPError):
        out["status"] = exc.status
        out["events"] = [e for e in exc.events if e.get("event") not in _UNSTABLE_EVENTS]
    return out


@dataclass(slots=True)
class _Entry:
    line: int
    agent: str
    request: dict[str, Any]
    answer: dict[str, Any]
    used: bool = False

    def reply(self) -> ModelResponse:
        if "error" in self.answer:
            raise _rebuild_error(self.answer["error"])
        r = self.answer["response"]
        return ModelResponse(
            text=r.get("text"),
            tool_calls=[
                ToolCall(c["name"], c["arguments"], c.get("id", ""))
                for c in r.get("tool_calls", [])
            ],
            usage=Usage(
                r["usage"].get("input_tokens"),
                r["usage"].get("output_tokens"),
                1,
                *(r["usage"].get(name) for name in _USAGE_DETAILS),
            ),
            stop_reason=r.get("stop_reason", "stop"),
            model=r.get("model"),
            events=list(r.get("events", [])),
        )


def _rebuild_error(data: dict[str, Any]) -> AgentRunError:
    cls = getattr(errors, str(data.get("type")), None)
    message = str(data.get("message", "a recorded error"))
    if cls is ModelHTTPError or not (isinstance(cls, type) and issubclass(cls, AgentRunError)):
        return ModelHTTPError(message, status=data.get("status"), events=data.get("events"))
    return cls(message)


class Replay:
    """Answers requests from a recording; see the module docstring for the matching rule.

    ``requests`` lists what it received; ``remaining`` counts recorded calls not used yet.
    """

    def __init__(self, path: Path, *, name: str | None = None) -> None:
        if not path.exists():
            raise UserError(
                f"No recording at {str(path)!r}: make one with agentnb.record(model, path)"
            )
        self.path = path
        self.requests: list[ModelRequest] = []
        self._entries: list[_Entry] = []
        self._by_request: dict[str, deque[_Entry]] = {}
        self._lock = threading.Lock()
        header: dict[str, Any] = {}
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not text.strip():
                continue
            try:
                item = json.loads(text)
            except json.JSONDecodeError as exc:
                raise UserError(
                    f"{path}:{number} is not JSON ({exc.msg}); is this an agentnb recording?"
                ) from None
            if "agentnb_recording" in item:
                header = item
                continue
            if "request" not in item or not ("response" in item or "error" in item):
                raise UserError(
                    f"{path}:{number} is not a recorded call (needs request and response or error)"
                )
            entry = _Entry(number, item.get("agent", ""), item["request"], item)
            self._entries.append(entry)
            self._by_request.setdefault(dumps(entry.request), deque()).append(entry)
        self.name = name or str(header.get("model") or "replay")

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
        with self._lock:  # a replay may serve two event loops (run_sync and Jupyter's)
            self.requests.append(request)
            queue = self._by_request.get(key)
            entry = queue.popleft() if queue else None
            if entry is None:
                raise self._mismatch(request)
            entry.used = True
        return entry.reply()

    def _mismatch(self, request: ModelRequest) -> ReplayMismatch:
        unused = [e for e in self._entries if not e.used]
        who = f"agent {request.agent!r}" if request.agent else "the agent"
        if not unused:
            return ReplayMismatch(
                f"Replay of {self.path} has no call left for {who}: all {len(self._entries)} "
                "recorded calls were used. Record the run again with agentnb.record(...)."
            )
        nearest = next((e for e in unused if e.agent == request.agent), unused[0])
        where, recorded, sent = first_difference(nearest.request, request_payload(request))
        recorded_text, sent_text = _shown(recorded, sent)
        return ReplayMismatch(
            f"{who.capitalize()} sent a request that is not in the recording {self.path}. "
            f"Compared with the nearest recorded call (line {nearest.line}, agent {nearest.agent!r}), "
            f"the first difference is at {where}: recorded {recorded_text}, sent {sent_text}. "
            "If the change is intended, record the run again with agentnb.record(...)."
        )

    def __repr__(self) -> str:
        used = len(self._entries) - self.remaining
        return f"Replay({str(self.path)!r}, {used} of {len(self._entries)} calls used)"


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
