"""What the patterns share: runs started on one clock, and their traces read as one table.

Each run of a pattern (a fan-out branch, a chain stage, a verifier round) is an ordinary run
with its own run id, limits and trace, so it can fail or time out without touching the others.
All of a pattern's traces share one time zero, so their span times are directly comparable
(a timeline of a fan-out shows the branches side by side), and their call rows are
concatenated into one DataFrame with a column naming the part each row belongs to.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .. import checks
from ..errors import RunTimeout, UserError
from ..models.base import ModelClient
from ..models.types import Message
from ..runtime import (
    Agent,
    Event,
    RunContext,
    RunOptions,
    RunResult,
    execute,
    model_client,
    start_context,
)
from ..trace.spans import CALL_COLUMNS, Trace

if TYPE_CHECKING:
    import pandas as pd

Input = str | list[Message]


def clock() -> float:
    """A time zero for a pattern's runs."""
    return time.perf_counter()


def check_agent(agent: Any, where: str, model: ModelClient | str | None = None) -> Agent:
    """An Agent with a usable model (its own, or the pattern's ``model=``), or a `UserError`
    saying which part is wrong."""
    if not isinstance(agent, Agent):
        raise UserError(f"{where} must be an Agent, got {type(agent).__name__}")
    if model is None or agent.model is not None:
        model_client(agent)
    return agent


def check_timeout(timeout: float | None, where: str) -> None:
    checks.positive_seconds(timeout, f"{where}(timeout=...)")


def for_part(options: RunOptions, key: Any) -> RunOptions:
    """``options`` for the run of a pattern known as ``key`` in its result's ``parts()``: with
    ``on_event``, each of the run's events reaches it with ``part=key``."""
    on_event = options.on_event
    if on_event is None:
        return options

    def tagged(event: Event) -> None:
        on_event(replace(event, part=key))

    return replace(options, on_event=tagged)


def prepare(agent: Agent, input: Input, options: RunOptions, *, t0: float) -> RunContext:
    """A run's context with its trace on the pattern's clock (raises `UserError` on bad arguments)."""
    if options.approver == "pause":
        raise UserError(
            "approver='pause' is for agentnb.run and agentnb.resume; inside parallel, chain and "
            "verify_loop pass an approver function (a pause there cannot be resumed yet)."
        )
    if options.session is not None:  # its runs would claim one session at once, or each resend it
        raise UserError(
            "session= is for one run at a time (agentnb.run, run_sync, run_streamed, "
            "stream_sync); a pattern's runs cannot share one session."
        )
    return start_context(agent, input, options, t0=t0)


async def run_on_clock(agent: Agent, input: Input, options: RunOptions, *, t0: float) -> RunResult:
    """`agentnb.run` with the trace on the pattern's clock."""
    return await execute(agent, input, prepare(agent, input, options, t0=t0))


def status(result: RunResult) -> str:
    """``ok``, ``timeout`` or ``error``."""
    if result.ok:
        return "ok"
    return "timeout" if isinstance(result.error, RunTimeout) else "error"


def reason(result: RunResult) -> str:
    """Why a run gave no output, in a few words."""
    error = result.error
    if isinstance(error, RunTimeout):
        limit = result.context.limits.timeout if result.context is not None else None
        return f"did not answer within {limit:g} s" if limit else "timed out"
    return f"failed: {type(error).__name__}: {error}"


def run_window(result: RunResult) -> tuple[float | None, float | None]:
    """When the run started and ended on the pattern's clock (its ``run`` span)."""
    spans = result.trace.spans
    if not spans:
        return None, None
    return spans[0].started, spans[0].ended


def combine_calls(parts: Mapping[Any, RunResult], column: str | tuple[str, ...]) -> pd.DataFrame:
    """Every part's call rows in one DataFrame: the key column(s) first, then `CALL_COLUMNS`.

    With several key columns, each key of ``parts`` is a tuple with one value per column.
    """
    import pandas as pd

    keys = (column,) if isinstance(column, str) else column
    rows = []
    for key, result in parts.items():
        values = dict(zip(keys, (key,) if isinstance(column, str) else key))
        result.trace.count_tokens()  # each agent's rows in one pass, as result.calls counts them
        rows += [{**values, **row.as_dict()} for row in result.trace.call_rows]
    columns = [*keys, *CALL_COLUMNS]
    return pd.DataFrame({c: [r.get(c) for r in rows] for c in columns}, columns=columns)


def combine_spans(parts: Mapping[Any, RunResult], columns: tuple[str, ...]) -> pd.DataFrame:
    """Every part's spans in one DataFrame (for timelines), the key columns first."""
    import pandas as pd

    frames = []
    for key, result in parts.items():
        frame = result.trace.spans_frame()
        values = key if len(columns) > 1 else (key,)
        for i, (column, value) in enumerate(zip(columns, values)):
            frame.insert(i, column, value)
        frames.append(frame)
    if not frames:
        empty = Trace("").spans_frame()
        for i, column in enumerate(columns):
            empty.insert(i, column, [])
        return empty
    return pd.concat(frames, ignore_index=True)
