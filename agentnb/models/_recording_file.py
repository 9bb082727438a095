"""The file format of a recording, written and read in one place, and checked as a whole
when it is read.

JSON lines, UTF-8, one object per line, compact, keys in a fixed order (re-recording after a
change gives a readable diff)::

    {"agentnb_recording":2,"model":"gpt-4o-mini"}
    {"agent":"coordinator","request":{...},"settings":{"temperature":0.2},"response":{...}}
    {"agent":"legal","request":{...},"error":{"type":"ModelHTTPError","message":"...","status":500,"events":[]}}

- line 1, the header (`Header`): the format version (``READS`` lists those this agentnb
  reads) and the recorded client's ``name``. Recordings joined end to end may repeat it.
- then one line per model call (`Entry`), written when the call finishes (concurrent calls
  therefore appear in the order they finished): the ``agent`` that made it, the ``request``
  in canonical form (system, messages, tools, output_schema: exactly what "characters sent"
  measures), the ``settings`` it was made with (`ModelSettings`: only the fields set, and
  only when one is; since version 2), and either
- ``response`` (`Response`): ``text`` (string or null), ``tool_calls`` (``id``, ``name``,
  ``arguments`` as a JSON string), ``usage`` (``input_tokens``, ``output_tokens``, each an
  integer or null: always present, since a replay must report what the original did; and
  ``cached_input_tokens``, ``cache_write_tokens``, ``reasoning_tokens`` when the provider
  reported them),
  ``stop_reason``, ``model``, ``events`` (the adapter's retries; not its queue waits, which
  depend on the machine, not the model), or
- ``error`` (`Error`), for a call that failed with an `AgentRunError`: the error's ``type``,
  ``message``, and for a `ModelHTTPError` its ``status`` and ``events``.

Version 1 had no ``settings``: it is still read, and a replay of it does not compare them.

No key, header or URL is ever written: only what the model was sent and what it answered.
Reading checks every line against these models, strictly (a number is not text), and a
damaged file is a `UserError` naming the file, the line and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from ..errors import AgentRunError, ModelHTTPError, UserError
from .settings import ModelSettings
from .types import ModelResponse, StopReason, Usage

FORMAT_VERSION = 2
"""The version `record` writes (2: each call's model settings)."""
READS = (1, 2)
"""The versions `replay` reads."""
_UNSTABLE_EVENTS = frozenset({"queue_wait"})


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Header(_Strict):
    agentnb_recording: int
    model: str


class ToolCallRecord(_Strict):
    id: str = ""
    name: str
    arguments: str


class UsageRecord(_Strict):
    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None


class Response(_Strict):
    text: str | None
    tool_calls: list[ToolCallRecord] = []
    usage: UsageRecord
    stop_reason: StopReason = "stop"
    model: str | None = None
    events: list[dict[str, Any]] = []


class Error(_Strict):
    type: str
    message: str
    status: int | None = None
    events: list[dict[str, Any]] = []


class Entry(_Strict):
    agent: str = ""
    request: dict[str, Any]
    settings: dict[str, Any] | None = None
    """The call's settings; ``{}`` when none were set, None when unknown (a version-1 file)."""
    response: Response | None = None
    error: Error | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> Entry:
        if (self.response is None) == (self.error is None):
            raise ValueError("a recorded call has either a response or an error, not both")
        return self


def settings_dict(settings: ModelSettings | None) -> dict[str, Any]:
    """How a call's settings are written and compared: the fields set, as JSON values."""
    if settings is None:
        return {}
    out: dict[str, Any] = {}
    for name in ModelSettings.__dataclass_fields__:
        value = getattr(settings, name)
        if value is not None:
            out[name] = list(value) if isinstance(value, tuple) else value
    read_back: dict[str, Any] = json.loads(json.dumps(out, ensure_ascii=False, default=repr))
    return read_back  # as a recording reads back (a tuple is a list)


def response_dict(response: ModelResponse) -> dict[str, Any]:
    """How a response is written (see the module docstring)."""
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


def error_dict(exc: AgentRunError) -> dict[str, Any]:
    """How a failed call's error is written."""
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ModelHTTPError):
        out["status"] = exc.status
        out["events"] = [e for e in exc.events if e.get("event") not in _UNSTABLE_EVENTS]
    return out


def read(path: Path) -> tuple[Header, list[tuple[int, Entry]]]:
    """The header and the ``(line number, entry)`` pairs of the recording at ``path``,
    each line checked; anything amiss is a `UserError` naming the file, line and field."""
    if not path.exists():
        raise UserError(f"No recording at {str(path)!r}: make one with agentnb.record(model, path)")
    if path.is_dir():
        raise UserError(
            f"{str(path)!r} is a directory; replay() takes a recording file made by "
            "agentnb.record(model, path)"
        )
    header: Header | None = None
    version = FORMAT_VERSION
    entries: list[tuple[int, Entry]] = []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        where = f"{path}:{number}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserError(
                f"{where} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                f"{exc.start + 1}); is this an agentnb recording?"
            ) from None
        if not text.strip():
            continue
        try:
            item = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(
                f"{where} is not JSON ({exc.msg}); is this an agentnb recording?"
            ) from None
        if not isinstance(item, dict):
            raise UserError(
                f"{where} is not a JSON object (it is {_short(item)}); is this an agentnb recording?"
            )
        if "agentnb_recording" in item:
            version = item["agentnb_recording"]
            if version not in READS or isinstance(version, bool):
                raise UserError(
                    f"{where}: the recording is of format version {_short(version)}; this "
                    f"agentnb reads version {', '.join(map(str, READS))}. Record it again, or "
                    "use the agentnb that made it."
                )
            found = _checked(Header, item, where)
            header = header or found
            version = found.agentnb_recording
            continue
        if header is None:
            raise UserError(
                f"{where}: a recording starts with its header line "
                f'{{"agentnb_recording":{FORMAT_VERSION},"model":...}}; is this an agentnb '
                "recording?"
            )
        entry: Entry = _checked(Entry, item, where)
        if version == 1 and entry.settings is not None:
            raise UserError(
                f"{where}: settings: a version-1 recording has none (they came with version 2); "
                "the recording is damaged or not agentnb's"
            )
        if version >= 2 and entry.settings is None:
            entry = entry.model_copy(update={"settings": {}})  # none were set
        entries.append((number, entry))
    if header is None:
        raise UserError(f"{path} is empty: make a recording with agentnb.record(model, path)")
    return header, entries


def _checked(model: type[_Strict], item: dict[str, Any], where: str) -> Any:
    try:
        return model.model_validate(item)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "the line"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise UserError(
            f"{where}: {field}: {first['msg']}{more}; the recording is damaged or not agentnb's"
        ) from None


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:40] + "..."
