"""One calls-table row for a model call agentnb did not make itself (a captured framework's).

The row has exactly the columns of `agentnb.trace.CALL_COLUMNS`, in that order (a test checks
it), so a captured call sits in the same frame as a native one and every table and plot reads
it the same way.
"""

from __future__ import annotations

import math
from typing import Any

from ..models.types import Usage
from ..trace.spans import CALL_COLUMNS, Span, Trace


def counted(
    tokens: tuple[int | None, int | None, str], usage: Usage
) -> tuple[int | None, int | None, str, int | None]:
    """agentnb's token counts, or the provider's when agentnb has no tokenizer (as native rows):
    ``(tokens_in, tokens_out, method, tokens_in_overhead)``."""
    tokens_in, tokens_out, method = tokens
    if tokens_in is None and usage.input_tokens is not None:
        return usage.input_tokens, usage.output_tokens, "provider", None
    overhead = None
    if tokens_in is not None and usage.input_tokens is not None:
        overhead = usage.input_tokens - tokens_in
    return tokens_in, tokens_out, method, overhead


def call_row(
    run_id: str,
    span: Span,
    *,
    model: str,
    turn: int,
    sizes: dict[str, Any] | None,
    chars_out: int | None,
    tokens: tuple[int | None, int | None, str],
    usage: Usage,
    tool_calls: int,
    stop_reason: str,
    status: str,
    prefix: Any = None,
) -> dict[str, Any]:
    """A row of `CALL_COLUMNS`; ``sizes`` is `request_sizes`' dict (None: not measurable),
    ``tokens`` agentnb's count ``(in, out, method)``, ``usage`` what the provider reported."""
    latency = None if span.ended is None else span.ended - span.started
    size = sizes.get if sizes is not None else _missing
    tokens_in, tokens_out, method, overhead = counted(tokens, usage)
    row = {
        "run_id": run_id,
        "span_id": span.span_id,
        "parent_id": span.parent_id,
        "agent": span.agent,
        "model": model,
        "path": span.path,
        "depth": span.depth,
        "turn": turn,
        "started": span.started,
        "ended": span.ended,
        "latency_s": latency,
        "wait_s": 0.0,
        "ttft_s": span.attrs.get("ttft_s", math.nan),
        "chars_in": size("total"),
        "chars_in_system": size("system"),
        "chars_in_tools": size("tools"),
        "chars_in_user": size("user"),
        "chars_in_assistant": size("assistant"),
        "chars_in_tool_args": size("tool_args"),
        "chars_in_tool_results": size("tool_results"),
        "chars_in_framing": size("framing"),
        "chars_out": chars_out,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "tokens_method": method,
        "provider_tokens_in": usage.input_tokens,
        "provider_tokens_out": usage.output_tokens,
        "tokens_in_cached": usage.cached_input_tokens,
        "tokens_in_cache_write": usage.cache_write_tokens,
        "tokens_out_reasoning": usage.reasoning_tokens,
        "tokens_in_overhead": overhead,
        "tool_calls": tool_calls,
        "stop_reason": stop_reason,
        "retries": 0,
        "status": status,
        "prefix": prefix,
    }
    span.attrs.update(
        chars_in=row["chars_in"], chars_out=chars_out, tokens_in=tokens_in, tokens_out=tokens_out
    )
    return row


def _missing(component: str) -> None:
    """A request that could not be measured has no size in any component."""
    return None


def row_values(row: Any) -> dict[str, Any]:
    """A recorded row (native or captured) as a dict keyed by `CALL_COLUMNS`."""
    if isinstance(row, dict):
        return row
    return {column: getattr(row, column) for column in CALL_COLUMNS}


def reported_usage(trace: Trace) -> Usage:
    """The provider-reported usage summed over a trace's calls (None where none reported)."""
    usage = Usage()
    for row in map(row_values, trace.call_rows):
        usage = usage + Usage(row["provider_tokens_in"], row["provider_tokens_out"], 1)
    return usage
