"""The call row: one record per model call, the trace schema's single definition.

`CallRow`'s fields are the columns of ``RunResult.calls`` (`CALL_COLUMNS`, in order), and
`CallRow.measure` is the one place a row is filled, from the call's span, the request the
model client received and its response. A field cannot be left out: building a row without
one is a ``TypeError``, never a ``None`` in a table.

Token counts are the one part of a row that costs real time (loading a tokenizer takes
seconds, counting is as costly as the rest of the framework), so a run does not count: the
row keeps what it needs, and the token columns are counted the first time any of them is
read (`CallRow.count_tokens`), after the run, when ``result.calls`` is built. A token budget
or a hook that reads a row during the run simply makes that row count then.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ..models.http.first_byte import FIRST_BYTE_EVENT
from ..models.local_server.tokenizer import PROVIDER
from ..models.response_cache import CACHE_EVENT
from ..models.types import Message, ModelRequest, ModelResponse, Usage
from .history import HistoryTally
from .sizes import request_sizes, response_chars
from .tokens import call_tokens, own_tokenizer

if TYPE_CHECKING:
    from .spans import Span

_NOT_REPORTED = Usage()


@dataclass(slots=True)
class CallRow:
    """One model call: where it sat in the run, when it ran, what it was sent and what came back."""

    run_id: str
    span_id: str
    """The call's span (``model_call``)."""
    parent_id: str | None
    """The span of the agent that made the call."""
    agent: str
    model: str
    """The model client's name."""
    path: str
    """Where the agent sat in the hierarchy, e.g. ``coordinator/legal``."""
    depth: int
    turn: int
    started: float
    """Seconds since the run started."""
    ended: float | None
    latency_s: float
    """Time the call took, less the time it waited for a concurrency slot."""
    wait_s: float
    """Time the call waited for a concurrency slot of the model client."""
    ttft_s: float
    """Time to the first token of a streamed call (NaN when the call was not streamed)."""
    ttfb_s: float
    """Time to the first byte of the answer (its headers), streamed or not, from when the
    request went, as ``latency_s`` (`agentnb.models.http.first_byte`): when the server began
    answering, so a server that queues requests before answering shows the queue here, not
    as generation. NaN where nothing was received over HTTP (scripted models, a cached or
    replayed answer) or the client is the user's own (``client=...``) and the call was not
    streamed."""
    chars_in: int
    """Characters sent (`agentnb.trace.sizes`); the ``chars_in_*`` components add up to it."""
    chars_in_system: int
    chars_in_tools: int
    chars_in_user: int
    chars_in_assistant: int
    chars_in_tool_args: int
    chars_in_tool_results: int
    chars_in_framing: int
    chars_out: int
    """Characters generated: the answer's text plus its tool calls' arguments."""
    chars_on_wire: int
    """Characters that went on the wire, by the rule of ``chars_in``: ``chars_in`` when the
    whole request was sent; less when the provider kept the conversation and only the new
    messages were sent (`agentnb.OpenAIResponsesModel` with ``conversation="server"``),
    while ``provider_tokens_in`` is still billed for the whole context."""
    tokens_in: int | None
    tokens_out: int | None
    tokens_method: str
    """How the tokens were counted (a tokenizer's name, ``provider``, or ``unavailable``)."""
    provider_tokens_in: int | None
    """What the provider reported (None: not reported)."""
    provider_tokens_out: int | None
    tokens_in_cached: int | None
    """Input tokens served from the provider's prompt cache (None: not reported)."""
    tokens_in_cache_write: int | None
    """Input tokens written to the provider's prompt cache (None: not reported)."""
    tokens_out_reasoning: int | None
    """Output tokens spent reasoning (None: not reported)."""
    tokens_in_overhead: int | None
    """The provider's input count minus agentnb's (docs/tokens.md says what it is made of)."""
    tool_calls: int
    """Tool calls the model asked for in this reply."""
    stop_reason: str
    retries: int
    """Retries the model client made (each one is in the span's events)."""
    status: str
    """``ok``, ``error`` or ``cancelled``."""
    cached: bool
    """Answered from an experiment's response cache (`agentnb.models.response_cache`): not
    paid for again; ``latency_s`` and the usage are the original call's."""
    prefix: Any
    """The request as a chain of fingerprints (`agentnb.trace.prefixes.Prefix`) for
    `agentnb.cache_estimate`; None without a tokenizer."""
    pending: Any = field(default=None, repr=False, compare=False)
    """What the token columns are counted from, until they are first read (not a column)."""

    @classmethod
    def measure(
        cls,
        run_id: str,
        span: Span,
        request: ModelRequest,
        response: ModelResponse | None,
        tally: HistoryTally | None,
        status: str,
        events: list[dict[str, Any]],
        model: object = None,
    ) -> CallRow:
        """The row of a finished call (``response`` None: it failed), measured from its span,
        the request as sent and the client's ``events`` (retries, waits for a slot). Its
        tokens are counted when first read, with ``model``'s tokenizer (a client or a name;
        None: the span's name)."""
        sizes = request_sizes(request, tally)
        provider = response.usage if response is not None else _NOT_REPORTED
        wait, retries, cached, latency, ttfb = 0.0, 0, False, None, math.nan
        sent = sizes["total"]
        for event in events:
            if event.get("event") == "queue_wait":
                wait += event.get("seconds", 0.0)
            elif event.get("event") == "retry":
                retries += 1
            elif event.get("event") == FIRST_BYTE_EVENT:
                ttfb = event.get("seconds", math.nan)
            elif event.get("event") == CACHE_EVENT:
                cached, latency = True, event.get("latency_s")
            elif event.get("event") == "server_state":  # the model client sent less
                sent = event.get("chars_on_wire", sent)
        ttft = span.attrs.get(
            "ttft_s", math.nan
        )  # set by a streamed call (runtime/watch/events.py)
        if wait and not math.isnan(ttft):  # timed from when the request went, like latency_s
            ttft = span.attrs["ttft_s"] = max(ttft - wait, 0.0)
        # Positional, in the order of the fields above (a test checks each field's value):
        # matching thirty keywords would be most of the work of building a row, once per call.
        return cls(
            run_id,
            span.span_id,
            span.parent_id,
            span.agent,
            span.name,
            span.path,
            span.depth,
            span.attrs.get("turn", 0),
            span.started,
            span.ended,
            (span.ended or 0.0) - span.started - wait if latency is None else latency,
            wait,
            ttft,
            ttfb,
            sizes["total"],
            sizes["system"],
            sizes["tools"],
            sizes["user"],
            sizes["assistant"],
            sizes["tool_args"],
            sizes["tool_results"],
            sizes["framing"],
            response_chars(response) if response is not None else 0,
            sent,
            None,
            None,
            "",
            provider.input_tokens,
            provider.output_tokens,
            provider.cached_input_tokens,
            provider.cache_write_tokens,
            provider.reasoning_tokens,
            None,
            len(response.tool_calls) if response is not None else 0,
            response.stop_reason if response is not None else "error",
            retries,
            status,
            cached,
            None,
            _Unsent.keep(span, request, response, tally, span.name if model is None else model),
        )

    def count_tokens(self) -> None:
        """Fill the token columns (once; reading any of them calls this).

        The model's own tokenizer where one is known (``tokens_method`` names it); else the
        provider's usage (``provider``); else an estimate of a token per four characters
        (``estimate:chars/4``)."""
        pending = self.pending
        if pending is None:
            return
        self.pending = None
        tally = pending.tally
        try:
            counted = call_tokens(pending.request(), pending.answer, tally, pending.model)
        except Exception as exc:  # a counter of the user's that fails: the row stays readable
            counted = None, None, f"unavailable ({type(exc).__name__})"
            if tally is not None:
                tally.prefix = None
        self.fill_tokens(pending, *counted, tally.prefix if tally is not None else None)

    def fill_tokens(
        self,
        pending: _Unsent,
        tokens_in: int | None,
        tokens_out: int | None,
        method: str,
        chain: Any,
    ) -> None:
        """Fill the token columns from what the tokenizer counted (`call_tokens`) for the
        request ``pending`` kept, and its chain of fingerprints (``chain``)."""
        reported_in, overhead = self.provider_tokens_in, None
        if tokens_in is None and reported_in is not None:
            tokens_in, tokens_out, method = reported_in, self.provider_tokens_out, "provider"
        elif tokens_in is None and method == PROVIDER:  # no tokenizer and no usage: say so
            tokens_in = math.ceil(self.chars_in / 4)
            tokens_out = math.ceil(self.chars_out / 4)
            method = "estimate:chars/4"
        elif tokens_in is not None and reported_in is not None:
            overhead = reported_in - tokens_in
            if overhead < 0 and own_tokenizer(pending.model):
                method += " (provider reported fewer)"
        self.tokens_in, self.tokens_out, self.tokens_method = tokens_in, tokens_out, method
        self.tokens_in_overhead = overhead
        self.prefix = chain if pending.tally is not None and tokens_in is not None else None
        attrs = pending.span.attrs
        attrs["tokens_in"], attrs["tokens_out"] = tokens_in, tokens_out

    def __getstate__(self) -> dict[str, Any]:
        return self.as_dict()  # counted first: what the counts came from stays behind

    def __setstate__(self, state: dict[str, Any]) -> None:
        for column, value in {**_ADDED_LATER, **state}.items():
            setattr(self, column, value)
        self.pending = None

    def values(self) -> tuple[Any, ...]:
        """The fields in the order of `CALL_COLUMNS`."""
        return row_values(self)

    def budget_tokens(self) -> tuple[int, str]:
        """What this call costs against a token budget (`agentnb.Limits` ``max_tokens``,
        ``as_tool(max_tokens=...)``), and how it was counted: the provider's usage where it
        reported one, else agentnb's count, else an estimate of a token per four characters."""
        if self.provider_tokens_in is not None:
            return self.provider_tokens_in + (self.provider_tokens_out or 0), (
                "provider-reported usage"
            )
        if self.tokens_in is not None:
            return self.tokens_in + (self.tokens_out or 0), self.tokens_method
        return (
            math.ceil((self.chars_in + self.chars_out) / 4),
            "an estimate of characters/4 (no tokenizer available)",
        )

    def as_dict(self) -> dict[str, Any]:
        """The row as a dict, keyed by `CALL_COLUMNS`."""
        return dict(zip(CALL_COLUMNS, row_values(self), strict=True))


class _Sent:
    """The newest history an agent sent, shared by its rows not yet counted."""

    __slots__ = ("messages",)

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages


class _Unsent:
    """What a row's request count needs, without holding the request's own copy of the history.

    Every request resends the history, so keeping each request until its row is read would
    hold a number of message references that grows with the square of the turns. The rows of
    one agent share one `_Sent` instead, which holds the newest history; a row keeps how many
    of its messages it sent. A history that did not grow by appending (a handoff replaced it)
    starts a new `_Sent`; the check is the one `HistoryTally` makes.
    """

    __slots__ = (
        "span",
        "system",
        "tools",
        "output_schema",
        "sent",
        "length",
        "answer",
        "tally",
        "model",
    )

    def __init__(
        self,
        span: Span,
        request: ModelRequest,
        sent: _Sent,
        response: ModelResponse | None,
        tally: HistoryTally | None,
        model: object,
    ) -> None:
        self.span, self.tally, self.model = span, tally, model
        self.system, self.tools, self.output_schema = (
            request.system,
            request.tools,
            request.output_schema,
        )
        self.sent, self.length = sent, len(request.messages)
        self.answer = (response.text, response.tool_calls) if response is not None else None

    @classmethod
    def keep(
        cls,
        span: Span,
        request: ModelRequest,
        response: ModelResponse | None,
        tally: HistoryTally | None,
        model: object,
    ) -> _Unsent:
        messages = request.messages
        sent = tally.sent if tally is not None else None
        if sent is not None and _grew_from(messages, sent.messages):
            sent.messages = messages
        else:
            sent = _Sent(messages)
            if tally is not None:
                tally.sent = sent
        return cls(span, request, sent, response, tally, model)

    def request(self) -> ModelRequest:
        """The request as far as counting goes (its history as it was sent)."""
        messages = self.sent.messages[: self.length]
        return ModelRequest(self.system, messages, self.tools, self.output_schema)


def _grew_from(messages: list[Message], before: list[Message]) -> bool:
    n = len(before)
    return len(messages) >= n and (
        n == 0 or (messages[0] is before[0] and messages[n - 1] is before[n - 1])
    )


_ADDED_LATER: dict[str, Any] = {"ttfb_s": math.nan}
"""Columns a row pickled before they existed reads as (not measured then)."""

CALL_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(CallRow) if f.name != "pending")
"""The columns of ``RunResult.calls``, in order: the fields of `CallRow`."""

COUNTED_COLUMNS = ("tokens_in", "tokens_out", "tokens_method", "tokens_in_overhead", "prefix")
"""The columns `CallRow.count_tokens` fills when one of them is first read."""


def when_read(slot: Any, fill: Callable[[Any], None]) -> property:
    """The column's slot behind a property that calls ``fill(row)`` on the first read, while
    the row is still pending (its tokens, or a captured call's sizes, not yet filled)."""

    def read(row: CallRow) -> Any:
        if row.pending is not None:
            fill(row)
        return slot.__get__(row, CallRow)

    return property(read, slot.__set__, doc=slot.__doc__)


_SLOTS = {column: CallRow.__dict__[column] for column in COUNTED_COLUMNS}
"""Where the counted columns are stored, under the properties that count them when read."""
for _column, _slot in _SLOTS.items():
    setattr(CallRow, _column, when_read(_slot, operator.methodcaller("count_tokens")))

row_values: Callable[[CallRow], tuple[Any, ...]] = operator.attrgetter(*CALL_COLUMNS)
"""A row's fields in the order of `CALL_COLUMNS`, read in one call: a table of 100,000 calls
reads four million fields, and reading them one by one in Python took longer than pandas
took to build the frame from them."""


UNCOUNTED_COLUMNS = tuple(column for column in CALL_COLUMNS if column not in COUNTED_COLUMNS)
"""The columns a row has from its call, before any token is counted."""
_uncounted_values = operator.attrgetter(*UNCOUNTED_COLUMNS)


def columns_of(rows: Sequence[CallRow]) -> list[tuple[Any, ...]]:
    """The values of ``rows`` column by column, in the order of `CALL_COLUMNS` (``rows``
    counted first): ``list(zip(*map(row_values, rows)))``, with the counted columns read
    from where they are stored once counted, not through the property that counts them
    (a table of 100,000 calls would call it half a million times)."""
    for row in rows:
        if row.pending is not None:
            row.count_tokens()
    found = dict(
        zip(UNCOUNTED_COLUMNS, zip(*map(_uncounted_values, rows), strict=True), strict=True)
    )
    for column, slot in _SLOTS.items():
        found[column] = tuple(map(slot.__get__, rows))
    return [found[column] for column in CALL_COLUMNS]
