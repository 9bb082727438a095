"""agentnb runs out as OpenTelemetry GenAI spans (the semantic conventions' names).

Each agentnb span becomes one OpenTelemetry span with the same parent: the run is an
``invoke_workflow`` span, an agent's run ``invoke_agent <agent>``, a model call ``chat <model>``
and a tool call ``execute_tool <tool>``. A model call carries the provider's usage as
``gen_ai.usage.*`` and agentnb's measurements as ``agentnb.*`` attributes (characters by
component, tokens and how they were counted). No message contents are exported: an agentnb
trace keeps sizes, not texts, and never an API key.
"""

from __future__ import annotations

from typing import Any

from ..trace.sizes import COMPONENTS
from ..trace.spans import Span, Trace
from ._rows import row_values

_OPERATION = {
    "run": "invoke_workflow",
    "agent": "invoke_agent",
    "model_call": "chat",
    "tool_call": "execute_tool",
}
_ROW_ATTRIBUTES = (
    "chars_in",
    *(f"chars_in_{c}" for c in COMPONENTS),
    "chars_out",
    "tokens_in",
    "tokens_out",
    "tokens_method",
    "tokens_in_overhead",
    "tokens_out_reasoning",
    "turn",
    "latency_s",
    "ttft_s",
    "stop_reason",
)


def _attributes(span: Span, trace: Trace, row: dict[str, Any] | None) -> dict[str, Any]:
    operation = _OPERATION.get(span.kind, span.kind)
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.agent.name": span.agent,
        "agentnb.run_id": trace.run_id,
        "agentnb.span_id": span.span_id,
        "agentnb.path": span.path,
        "agentnb.depth": span.depth,
        "agentnb.status": span.status,
    }
    if span.kind == "tool_call":
        attrs["gen_ai.tool.name"] = span.name
        if span.attrs.get("call_id"):
            attrs["gen_ai.tool.call.id"] = str(span.attrs["call_id"])
    if row is not None:
        attrs["gen_ai.request.model"] = str(row.get("model") or span.name)
        for key, name in (
            ("provider_tokens_in", "gen_ai.usage.input_tokens"),
            ("provider_tokens_out", "gen_ai.usage.output_tokens"),
            ("tokens_in_cached", "gen_ai.usage.cache_read.input_tokens"),
            ("tokens_in_cache_write", "gen_ai.usage.cache_creation.input_tokens"),
        ):
            if row.get(key) is not None:
                attrs[name] = int(row[key])
        if row.get("stop_reason"):
            attrs["gen_ai.response.finish_reasons"] = [str(row["stop_reason"])]
        for key in _ROW_ATTRIBUTES:
            value = row.get(key)
            if value is not None and value == value:  # not None, not NaN
                attrs[f"agentnb.{key}"] = (
                    value if isinstance(value, (str, bool, int, float)) else str(value)
                )
    return attrs


def _name(span: Span) -> str:
    operation = _OPERATION.get(span.kind, span.kind)
    return f"{operation} {span.agent if span.kind == 'agent' else span.name}"


def export_trace(trace: Trace, tracer: Any) -> list[Any]:
    """Emit one trace's spans through ``tracer``; returns the OpenTelemetry spans, ended."""
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace import Status, StatusCode

    rows = {row["span_id"]: row for row in map(row_values, trace.call_rows)}
    first = min((s.started for s in trace.spans), default=0.0)
    wall0 = trace.started_at.timestamp() - first  # the wall clock at the trace's time zero
    made: dict[str, Any] = {}
    out = []
    for span in sorted(trace.spans, key=lambda s: s.started):
        parent = made.get(span.parent_id) if span.parent_id else None
        context = otel_trace.set_span_in_context(parent) if parent is not None else None
        kind = (
            otel_trace.SpanKind.CLIENT
            if span.kind == "model_call"
            else otel_trace.SpanKind.INTERNAL
        )
        otel = tracer.start_span(
            _name(span),
            context=context,
            kind=kind,
            start_time=int((wall0 + span.started) * 1e9),
            attributes=_attributes(span, trace, rows.get(span.span_id)),
        )
        if span.status not in ("ok", "running"):
            otel.set_status(Status(StatusCode.ERROR, span.status))
        made[span.span_id] = otel
        out.append((otel, span))
    for otel, span in reversed(out):
        ended = span.ended if span.ended is not None else span.started
        otel.end(end_time=int((wall0 + ended) * 1e9))
    return [otel for otel, _ in out]
