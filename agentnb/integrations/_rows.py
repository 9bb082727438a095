"""One calls-table row for a model call agentnb did not make itself (a captured framework's).

A model call measured on an agentnb request is a `CallRow.measure` like a native one, taken when
the row is first read (`MeasuredWhenRead`); these helpers cover the rest: a row whose characters
are counted by another rule (`with_sizes`) and a row for a call that could not be measured, or
was read from spans (`call_row`). Either way the row is the trace layer's `CallRow`, so a
captured call sits in the same frame as a native one and every table and plot reads it the same
way.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from ..models.types import ModelRequest, ModelResponse, Usage
from ..trace.calls import CALL_COLUMNS, UNCOUNTED_COLUMNS, CallRow, when_read
from ..trace.history import HistoryTally
from ..trace.sizes import COMPONENTS
from ..trace.spans import Span, Trace


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


def with_sizes(row: CallRow, sizes: dict[str, int]) -> CallRow:
    """``row``, just measured, with its characters counted another way (``sizes``:
    `request_sizes`' keys); set in place, so that its tokens are still counted when read."""
    for key, value in sizes.items():
        setattr(row, _COLUMN[key], value)
    return row


_COLUMN = {"total": "chars_in", **{c: f"chars_in_{c}" for c in COMPONENTS}}


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
    kind: type[CallRow] = CallRow,
) -> CallRow:
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
        "ttfb_s": math.nan,  # the framework's client is not agentnb's: nothing timed its bytes
        "chars_in": size("total"),
        "chars_in_system": size("system"),
        "chars_in_tools": size("tools"),
        "chars_in_user": size("user"),
        "chars_in_assistant": size("assistant"),
        "chars_in_tool_args": size("tool_args"),
        "chars_in_tool_results": size("tool_results"),
        "chars_in_framing": size("framing"),
        "chars_out": chars_out,
        "chars_on_wire": size("total"),  # what the framework sent in all: its request as measured
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
        "cached": False,
        "prefix": prefix,
    }
    span.attrs.update(
        chars_in=row["chars_in"], chars_out=chars_out, tokens_in=tokens_in, tokens_out=tokens_out
    )
    return kind(**row)


def _missing(component: str) -> None:
    """A request that could not be measured has no size in any component."""
    return None


def row_values(row: CallRow) -> dict[str, Any]:
    """A recorded row as a dict keyed by `CALL_COLUMNS`."""
    return row.as_dict()


def reported_usage(trace: Trace) -> Usage:
    """The provider-reported usage summed over a trace's calls (None where none reported)."""
    usage = Usage()
    for row in trace.call_rows:  # the reported columns only: no token counted here
        usage.add(Usage(row.provider_tokens_in, row.provider_tokens_out, 1))
    return usage


def mark_span(span: Span, row: CallRow) -> None:
    """What the trace tree shows on a model call's span (as the run loop sets it); a row not
    yet counted puts its tokens there when it is (`CallRow.count_tokens`)."""
    span.attrs.update(chars_in=row.chars_in, chars_out=row.chars_out)
    if row.pending is None:
        span.attrs.update(tokens_in=row.tokens_in, tokens_out=row.tokens_out)


class Unmeasured:
    """What a captured call was sent, kept until its row is first read: the request, its
    history being the agent's list, which grows after the call, and how much of it was sent."""

    __slots__ = ("span", "request", "sent", "response", "tally", "sizes")

    def __init__(
        self,
        span: Span,
        request: ModelRequest,
        response: ModelResponse | None,
        tally: HistoryTally,
        sizes: dict[str, int] | None,
    ) -> None:
        self.span, self.request, self.sent = span, request, len(request.messages)
        self.response, self.tally, self.sizes = response, tally, sizes

    def measure(self, row: CallRow, label: str) -> CallRow:
        """The row `CallRow.measure` gives the call (its characters replaced by ``sizes``, the
        article's count, if given); a request it cannot measure gives `not_measured`'s row."""
        request, span = self.request, self.span
        try:
            sent = ModelRequest(
                request.system,
                request.messages[: self.sent],
                request.tools,
                request.output_schema,
                agent=request.agent,
            )
            measured = CallRow.measure(
                row.run_id, span, sent, self.response, self.tally, row.status, []
            )
            return with_sizes(measured, self.sizes) if self.sizes is not None else measured
        except Exception as exc:  # measuring must never break a table: the span says why
            return not_measured(row.run_id, span, label, row.turn, row.status, exc)


class MeasuredWhenRead(CallRow):
    """A captured call's row whose characters are measured the first time one of them, or of
    its tokens, is read (as a native row counts its tokens then): measuring adds nothing to
    the run's own time. `Trace.count_tokens`, which every table and view of a trace calls
    first, reads the rows in the order the calls finished, so each agent's history is measured
    turn after turn."""

    __slots__ = ()

    def measure_sizes(self) -> None:
        """Fill the columns of characters, and mark the span, once."""
        unmeasured = self.pending
        if not isinstance(unmeasured, Unmeasured):
            return
        measured = unmeasured.measure(self, self.model)
        counted = measured.pending is None  # else its token columns are counted later, here
        for column in CALL_COLUMNS if counted else UNCOUNTED_COLUMNS:
            setattr(self, column, getattr(measured, column))
        self.pending = measured.pending
        mark_span(unmeasured.span, self)

    def count_tokens(self) -> None:
        self.measure_sizes()
        super().count_tokens()


_SIZE_COLUMNS = ("chars_on_wire", *_COLUMN.values())
"""The columns measured from a captured call's request, read through `MeasuredWhenRead`."""
for _column in _SIZE_COLUMNS:
    setattr(
        MeasuredWhenRead,
        _column,
        when_read(CallRow.__dict__[_column], operator.methodcaller("measure_sizes")),
    )


def not_measured(
    run_id: str, span: Span, model: str, turn: int, status: str, error: Exception
) -> CallRow:
    """The row of a call whose request could not be measured; its span says why."""
    span.attrs["chars_in_reason"] = f"not measured: {type(error).__name__}: {error}"
    return call_row(
        run_id,
        span,
        model=model,
        turn=turn,
        sizes=None,
        chars_out=None,
        tokens=(None, None, "unavailable"),
        usage=Usage(),
        tool_calls=0,
        stop_reason="stop" if status == "ok" else "error",
        status=status,
    )
