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

Each entry ends with ``"sha256"``: the SHA-256 of the line's text without that field (since
version 3). A line changed after it was recorded (a hand edit, a merge gone wrong) no longer
matches it and is refused, naming the line; a version-3 entry without one is refused too.
Older recordings have none and are read as they are; an entry appended to one with
``record(..., append=True)`` has its checksum, which is checked.

Only a regular file is read, a line at a time, each at most `MAX_LINE_BYTES`; a line nested
too deeply to read is refused, as is a usage count below zero.

No key, header or URL is ever written: only what the model was sent and what it answered.
Reading checks every line against these models, strictly (a number is not text), and a
damaged file is a `UserError` naming the file, the line and the field.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...errors import AgentRunError, ModelHTTPError, UserError
from ..canonical import dumps
from ..settings import ModelSettings
from ..types import ModelResponse, StopReason, Usage

FORMAT_VERSION = 3
"""The version `record` writes (2: each call's model settings; 3: each entry's checksum)."""
READS = (1, 2, 3)
"""The versions `replay` reads."""
MAX_LINE_BYTES = 64 * 2**20
"""The longest line read (64 MiB): far above a recorded answer (a 20 MB one reads), a bound
on what a file that is not a recording (``/dev/zero``, a huge blob) can make replay load."""
_CHECKSUM = re.compile(r',"sha256":"([0-9a-f]{64})"\}\s*$')
_UNSTABLE_EVENTS = frozenset({"queue_wait", "first_byte"})
"""Timings of one call, not part of its answer: a replayed or cached answer was not waited for."""


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Header(_Strict):
    agentnb_recording: int
    model: str
    tokenizer: str | None = None
    """How the recorded model's texts are counted (`agentnb.models.local_server.tokenizer`): an encoding's name, or
    ``provider`` (a server's tokenizer, gone when the recording is replayed: the recorded
    usage is the count)."""


class ToolCallRecord(_Strict):
    id: str = ""
    name: str
    arguments: str


Count = Annotated[int, Field(ge=0)]


class UsageRecord(_Strict):
    input_tokens: Count | None
    output_tokens: Count | None
    cached_input_tokens: Count | None = None
    cache_write_tokens: Count | None = None
    reasoning_tokens: Count | None = None


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


def line(entry: dict[str, Any]) -> str:
    """An entry as the line `record` writes: its JSON, then its checksum."""
    body = dumps(entry)
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return f'{body[:-1]},"sha256":"{digest}"}}\n'


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """The numbered lines of the regular file at ``path``, each at most `MAX_LINE_BYTES`."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise UserError(
            f"No recording at {str(path)!r}: make one with agentnb.record(model, path)"
        ) from None
    except OSError as exc:
        raise UserError(f"{str(path)!r} cannot be read ({exc.strerror})") from None
    if stat.S_ISDIR(mode):
        raise UserError(
            f"{str(path)!r} is a directory; replay() takes a recording file made by "
            "agentnb.record(model, path)"
        )
    if not stat.S_ISREG(mode):
        raise UserError(
            f"{str(path)!r} is not a regular file (a device, a pipe or a socket); replay() "
            "reads a recording file made by agentnb.record(model, path)"
        )
    with path.open("rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):  # replaced since the check
            raise UserError(f"{str(path)!r} is not a regular file")
        for number, raw in enumerate(iter(lambda: file.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(raw) > MAX_LINE_BYTES:
                raise UserError(
                    f"{path}:{number} is longer than {MAX_LINE_BYTES // 2**20} MiB, the longest "
                    "line a recording may have; is this an agentnb recording?"
                )
            yield number, raw.rstrip(b"\n")


def _verified(text: str, version: int, where: str) -> None:
    """Check the line's checksum (required from version 3)."""
    found = _CHECKSUM.search(text)
    if found is None:
        if version >= 3:
            raise UserError(
                f"{where}: the entry has no checksum (sha256), which every entry of a "
                "version-3 recording has; the line was changed after it was recorded. Record "
                "it again, or restore the line."
            )
        return
    body = text[: found.start()] + "}"
    if hashlib.sha256(body.encode("utf-8")).hexdigest() != found.group(1):
        raise UserError(
            f"{where}: the entry does not match its checksum (sha256): it was changed after "
            "it was recorded (by hand?). Record it again, or restore the line."
        )


def read(path: Path) -> tuple[Header, list[tuple[int, Entry]]]:
    """The header and the ``(line number, entry)`` pairs of the recording at ``path``,
    each line checked; anything amiss is a `UserError` naming the file, line and field."""
    header: Header | None = None
    version = FORMAT_VERSION
    entries: list[tuple[int, Entry]] = []
    for number, raw in _lines(path):
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
        except RecursionError:
            raise UserError(
                f"{where} is JSON nested too deeply to read; is this an agentnb recording?"
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
        item.pop("sha256", None)
        entry: Entry = _checked(Entry, item, where)  # a field amiss is named first, then
        _verified(text, version, where)  # a line changed in another way
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
    except RecursionError:
        raise UserError(
            f"{where}: nested too deeply to read; the recording is damaged or not agentnb's"
        ) from None
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
