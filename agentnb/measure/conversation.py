"""`conversation_cost`: what each turn of a conversation sent, and what of it was history.

Each turn of a chat resends the history before the new input, so the cost of turn n grows
with n. One row per turn (one run on an `agentnb.Session`): the characters and tokens sent
by all its model calls, split into the history the session put before the input and what
was new, and with ``prices`` the money; ``caching="openai"`` adds what OpenAI's automatic
prompt cache would serve (`agentnb.cache_estimate`, the earlier turns warming the cache).

A summarising session (``Session(summarize=agentnb.SummarizeOlder(...))``) writes its summary
with model calls of its own, inside the turn's run: they are counted apart, in the
``summary_*`` columns (their agent spans carry ``session_summary=True``), and every other
column is the conversation's own calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..models.types import Message
from ..trace.sizes import message_size
from .caching import cache_estimate
from .prices import Prices, add_cost

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = (
    "turn",
    "run_id",
    "model_calls",
    "history_messages",
    "chars_sent",
    "chars_history",
    "chars_new",
    "tokens_sent",
    "tokens_history_est",
    "tokens_new_est",
    "summary_calls",
    "chars_summary",
    "tokens_summary",
)


def conversation_cost(
    session_or_results: Any, prices: Prices | None = None, caching: str | None = None
) -> pd.DataFrame:
    """One row per turn of a conversation (columns `COLUMNS`, then ``cost`` and ``summary_cost``
    with ``prices``, ``tokens_in_cached_est`` with ``caching="openai"``).

    ``session_or_results``: an `agentnb.Session` (the runs this object made) or the results of
    the turns in order. ``chars_history`` is the history's characters times the root agent's
    model calls (each resends it); the token split is in proportion to the characters.
    ``summary_calls``, ``chars_summary`` and ``tokens_summary`` are what the session's
    summariser sent in that turn (0 for a session that does not summarise)."""
    import pandas as pd

    results = _results(session_or_results)
    if prices is not None and not isinstance(prices, Prices):
        raise UserError(
            f"prices must be an agentnb.Prices table (or None), got {type(prices).__name__}"
        )
    if caching not in (None, "openai"):
        raise UserError(f"caching must be None or 'openai', got {caching!r}")
    rows = []
    for turn, result in enumerate(results, start=1):
        everything = result.calls
        summarising = _summary_rows(result, everything)
        calls, summary = everything[~summarising], everything[summarising]
        history = result.context.history if result.context is not None else 0
        root_calls = int((calls["depth"] == 0).sum()) if len(calls) else 0
        chars_sent = int(calls["chars_in"].sum())
        chars_history = min(chars_sent, _chars(result.inputs[:history]) * root_calls)
        tokens_sent = float(calls["tokens_in"].sum())
        share = chars_history / chars_sent if chars_sent else 0.0
        row: dict[str, Any] = {
            "turn": turn,
            "run_id": result.run_id,
            "model_calls": len(calls),
            "history_messages": history,
            "chars_sent": chars_sent,
            "chars_history": chars_history,
            "chars_new": chars_sent - chars_history,
            "tokens_sent": tokens_sent,
            "tokens_history_est": round(tokens_sent * share),
            "tokens_new_est": round(tokens_sent * (1 - share)),
            "summary_calls": len(summary),
            "chars_summary": int(summary["chars_in"].sum()),
            "tokens_summary": float(summary["tokens_in"].sum()),
        }
        if prices is not None:
            row["cost"] = float(add_cost(calls, prices)["cost"].sum())
            row["summary_cost"] = float(add_cost(summary, prices)["cost"].sum())
        if caching == "openai":
            cached = cache_estimate(result, "openai", earlier=results[: turn - 1] or None)
            own = cached[~summarising.to_numpy()]
            row["tokens_in_cached_est"] = float(own["tokens_in_cached_est"].sum())
        rows.append(row)
    extra = (["cost", "summary_cost"] if prices is not None else []) + (
        ["tokens_in_cached_est"] if caching else []
    )
    return pd.DataFrame(rows, columns=[*COLUMNS, *extra])


def _summary_rows(result: Any, calls: pd.DataFrame) -> pd.Series:
    """Which of ``calls`` a session's summariser made (under an agent span marked
    ``session_summary``), as a boolean mask."""
    paths = {s.path for s in result.spans if s.kind == "agent" and s.attrs.get("session_summary")}
    if not paths or not len(calls):
        return calls["path"].map(lambda _: False).astype(bool)
    return calls["path"].map(lambda p: p in paths or any(p.startswith(f"{q}/") for q in paths))


def _results(data: Any) -> list[Any]:
    results = getattr(data, "results", data)  # a Session keeps the results of its runs
    if (
        not isinstance(results, Sequence)
        or isinstance(results, str)
        or not all(hasattr(r, "calls") and hasattr(r, "inputs") for r in results)
    ):
        raise UserError(
            "conversation_cost takes an agentnb.Session or a list of the RunResults of its "
            f"turns, got {type(data).__name__}"
        )
    return list(results)


def _chars(messages: Sequence[Message]) -> int:
    """What ``messages`` add to a request: each one's whole JSON object in the canonical form
    (`agentnb.trace.sizes`), and the comma that separates it from the next."""
    return sum(message_size(m).total + 1 for m in messages)
