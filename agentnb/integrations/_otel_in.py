"""OpenTelemetry GenAI spans in: finished spans read back as agentnb traces and call rows.

A span is read by its ``gen_ai.operation.name`` (or its name's first word): ``invoke_agent``
is an agent's run, ``execute_tool`` a tool call, ``chat`` / ``text_completion`` /
``generate_content`` a model call; other spans are passed through (their children hang on
the nearest span that was read). An agent's path is the chain of ``invoke_agent`` spans above
it, so a sub-agent run inside a tool is one level deeper. A model call's request is rebuilt
from ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and ``gen_ai.tool.definitions``
(or the older per-message span events) and measured by agentnb's rule; a framework that does
not record message contents gives usage only, ``chars_in`` empty and the reason in the span's
``chars_in_reason``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from ..models.types import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec, Usage
from ..trace.calls import CallRow
from ..trace.sizes import request_sizes, response_chars
from ..trace.spans import Span, SpanKind, Trace
from ..trace.tokens import request_tokens, response_tokens
from ._rows import call_row

_MODEL_OPERATIONS = ("chat", "text_completion", "generate_content")
_KINDS: dict[str, SpanKind] = {"invoke_agent": "agent", "execute_tool": "tool_call"}
NO_CONTENT = "the spans do not record message contents (usage only)"


def operation(span: Any) -> SpanKind | None:
    """The agentnb kind of a GenAI span (None: not one agentnb reads)."""
    attrs = span.attributes or {}
    op = attrs.get("gen_ai.operation.name") or str(span.name).split(" ", 1)[0]
    if op in _MODEL_OPERATIONS:
        return "model_call"
    return _KINDS.get(op)


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text(parts: Any) -> str:
    if isinstance(parts, str):
        return parts
    out = []
    for part in parts or ():
        content = part.get("content") if isinstance(part, dict) else part
        out.append(content if isinstance(content, str) else json.dumps(content))
    return "".join(out)


def _args(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def messages(raw: Any) -> tuple[str, list[Message]]:
    """System text and agentnb messages from ``gen_ai.input.messages`` (the spec's parts form)."""
    system, out = [], []
    for message in _json(raw) or ():
        role, parts = message.get("role"), message.get("parts") or []
        texts = [p for p in parts if p.get("type") == "text"]
        calls = [p for p in parts if p.get("type") == "tool_call"]
        for part in parts:
            if part.get("type") == "tool_call_response":
                result = part.get("response", part.get("result"))
                call = ToolCall(part.get("name") or "", "", part.get("id") or "")
                out.append(
                    Message.tool(call, result if isinstance(result, str) else json.dumps(result))
                )
        if role == "system":
            system.append(_text(texts))
        elif role == "assistant":
            tool_calls = tuple(
                ToolCall(c.get("name") or "", _args(c.get("arguments")), c.get("id") or "")
                for c in calls
            )
            out.append(Message("assistant", _text(texts) if texts else None, tool_calls))
        elif texts:
            out.append(Message("user", _text(texts)))
    return "".join(system), out


_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _from_events(span: Any) -> tuple[str, list[Message]] | None:
    """The older form: one span event per message, its text in a ``content`` attribute."""
    found = [(e, _EVENT_ROLES[e.name]) for e in span.events or () if e.name in _EVENT_ROLES]
    if not found:
        return None
    system, out = "", []
    for event, role in found:
        content = _text(_json((event.attributes or {}).get("content", "")))
        if role == "system":
            system += content
        elif role == "tool":
            call = ToolCall("", "", str((event.attributes or {}).get("id", "")))
            out.append(Message.tool(call, content))
        else:
            out.append(Message("assistant" if role == "assistant" else "user", content))
    return system, out


_CONTENT_KEYS: dict[str, tuple[str, ...]] = {
    "text": ("content",),
    "tool_call": ("arguments",),
    "tool_call_response": ("response", "result"),
}


def recorded(raw: Any) -> bool:
    """Whether the messages carry their contents (instrumentation may record only their shape)."""
    for message in _json(raw) or ():
        for part in message.get("parts") or ():
            keys = _CONTENT_KEYS.get(part.get("type"), ())
            if keys and not any(k in part for k in keys):
                return False
    return True


def request(span: Any, agent: str) -> ModelRequest | None:
    """The request a model-call span records, or None when it records no message contents."""
    attrs = span.attributes or {}
    if "gen_ai.input.messages" in attrs:
        if not recorded(attrs["gen_ai.input.messages"]):
            return None
        system, history = messages(attrs["gen_ai.input.messages"])
    else:
        found = _from_events(span)
        if found is None:
            return None
        system, history = found
    if "gen_ai.system_instructions" in attrs:
        system = _text(_json(attrs["gen_ai.system_instructions"])) + system
    tools = [
        ToolSpec(t.get("name", ""), t.get("description") or "", t.get("parameters") or {})
        for t in _json(attrs.get("gen_ai.tool.definitions")) or ()
    ]
    return ModelRequest(system, history, tools, agent=agent)


def response(span: Any) -> ModelResponse | None:
    raw = (span.attributes or {}).get("gen_ai.output.messages")
    if raw is None or not recorded(raw):
        return None
    _, out = messages(raw)
    text = "".join(m.content or "" for m in out if m.role == "assistant") or None
    calls = [c for m in out for c in m.tool_calls]
    return ModelResponse(text, calls, stop_reason="tool_calls" if calls else "stop")


def traces(spans: Iterable[Any]) -> list[Trace]:
    """One agentnb `Trace` per OpenTelemetry trace id, spans in start order.

    A span that cannot be read (no ids, times or attributes of the usual types, a field of
    another shape) is skipped, and a warning says how many were and why the first was: one
    bad span from a third-party exporter does not cost the whole table."""
    skipped: list[str] = []
    ordered = sorted(_well_formed(spans, skipped), key=lambda s: s.start_time or 0)
    by_id = {s.context.span_id: s for s in ordered}
    out: dict[int, Trace] = {}
    kept: dict[int, Span] = {}
    turns: dict[str | None, int] = {}
    for raw in ordered:
        try:
            kind = operation(raw)
            if kind is None:
                continue
            tid = raw.context.trace_id
            trace = out.get(tid) or Trace(f"{tid:032x}"[:12], t0=(raw.start_time or 0) / 1e9)
            parent = _nearest(raw, by_id, kept)
            attrs = raw.attributes or {}
            name = str(attrs.get("gen_ai.agent.name") or (parent.agent if parent else "?"))
            if kind == "agent":
                path = f"{parent.path}/{name}" if parent is not None else name
                depth = parent.depth + 1 if parent is not None else 0
            else:
                path = parent.path if parent is not None else name
                depth = parent.depth if parent is not None else 0
            span = _span(raw, kind, parent, name, path, depth, trace)
            key = parent.span_id if parent else None
            row = _row(raw, span, trace, turns.get(key, 0) + 1) if kind == "model_call" else None
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            skipped.append(f"{_label(raw)}: {type(exc).__name__}: {exc}")
            continue
        out[tid] = trace
        kept[raw.context.span_id] = span
        trace.spans.append(span)
        if row is not None:
            turns[key] = turns.get(key, 0) + 1
            trace.call_rows.append(row)
    if skipped:
        warnings.warn(
            f"{len(skipped)} span(s) could not be read and were skipped (the first: "
            f"{skipped[0]}); the other spans are read as usual.",
            stacklevel=3,
        )
    return list(out.values())


def _well_formed(spans: Iterable[Any], skipped: list[str]) -> list[Any]:
    """The spans whose ids and times have the types a finished span's have."""
    kept = []
    for raw in spans:
        try:
            ids = (raw.context.span_id, raw.context.trace_id)
            times = (raw.start_time or 0, raw.end_time or 0)
            parent = raw.parent
            fine = (
                all(isinstance(v, int) for v in (*ids, *times))
                and (parent is None or isinstance(parent.span_id, int))
                and (raw.attributes is None or isinstance(raw.attributes, Mapping))
            )
        except AttributeError as exc:
            skipped.append(f"{_label(raw)}: {exc}")
            continue
        if fine:
            kept.append(raw)
        else:
            skipped.append(f"{_label(raw)}: its ids, times or attributes are not of a span's types")
    return kept


def _label(raw: Any) -> str:
    name = getattr(raw, "name", None)
    return repr(name)[:60] if isinstance(name, str) else f"a {type(raw).__name__}"


def _nearest(raw: Any, by_id: dict[int, Any], kept: dict[int, Span]) -> Span | None:
    parent = raw.parent
    while parent is not None:
        if parent.span_id in kept:
            return kept[parent.span_id]
        above = by_id.get(parent.span_id)
        parent = above.parent if above is not None else None
    return None


def _span(
    raw: Any, kind: SpanKind, parent: Span | None, agent: str, path: str, depth: int, trace: Trace
) -> Span:
    t0 = trace.t0
    started = (raw.start_time or 0) / 1e9 - t0
    ended = None if raw.end_time is None else raw.end_time / 1e9 - t0
    failed = getattr(getattr(raw, "status", None), "status_code", None)
    status = "error" if getattr(failed, "name", "") == "ERROR" else "ok"
    attrs = raw.attributes or {}
    name = attrs.get("gen_ai.tool.name") if kind == "tool_call" else None
    if kind == "agent":
        name = agent
    label = str(name or attrs.get("gen_ai.request.model") or raw.name)
    span = Span(
        f"{raw.context.span_id:016x}",
        parent.span_id if parent else None,
        kind,
        label,
        agent,
        path,
        depth,
        started,
        ended,
        status,
    )
    if kind == "tool_call" and "gen_ai.tool.call.id" in attrs:
        span.attrs["call_id"] = attrs["gen_ai.tool.call.id"]
    return span


def _usage(attrs: Any) -> Usage:
    """The framework's reported usage (``gen_ai.usage.*``; None where it reports none)."""
    return Usage(
        _count(attrs, "gen_ai.usage.input_tokens"),
        _count(attrs, "gen_ai.usage.output_tokens"),
        1,
        _count(attrs, "gen_ai.usage.cache_read.input_tokens"),
        _count(attrs, "gen_ai.usage.cache_creation.input_tokens"),
    )


def _count(attrs: Any, key: str) -> int | None:
    """A token count attribute: a whole number or absent (anything else: TypeError)."""
    value = attrs.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise TypeError(f"{key} is {value!r}, not a count of tokens")


def _row(raw: Any, span: Span, trace: Trace, turn: int) -> CallRow:
    attrs = raw.attributes or {}
    model = str(attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model") or "")
    req = request(raw, span.agent)
    resp = response(raw)
    sizes = request_sizes(req) if req is not None else None
    tokens_in, method = (
        request_tokens(req, None, model) if req is not None else (None, "unavailable")
    )
    tokens_out = None
    if resp is not None and tokens_in is not None:
        tokens_out = response_tokens(resp, model)
    if req is None:
        span.attrs["chars_in_reason"] = NO_CONTENT
    reasons = attrs.get("gen_ai.response.finish_reasons")
    stop = resp.stop_reason if resp is not None else (str(reasons[0]) if reasons else "stop")
    return call_row(
        trace.run_id,
        span,
        model=model,
        turn=turn,
        sizes=sizes,
        chars_out=response_chars(resp) if resp is not None else None,
        tokens=(tokens_in, tokens_out, method),
        usage=_usage(attrs),
        tool_calls=len(resp.tool_calls) if resp is not None else 0,
        stop_reason=stop if span.status == "ok" else "error",
        status=span.status,
    )
