"""Handoff input filters: functions ``list[Message] -> list[Message]`` that trim what a handoff
forwards to its target.

They run after the `HandoffConfig` strategy has chosen the messages and before its token
budget is applied. They never mutate the messages they receive (the source agent's history
and the trace keep the full conversation); they return a new list, reusing unchanged messages.

Exposed as ``agentnb.filters``::

    Handoff(refunds, input_filter=agentnb.filters.compose(
        agentnb.filters.remove_tool_calls, agentnb.filters.keep_last_n(5)))
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import UserError
from ...models.types import Message

HistoryFilter = Callable[[list[Message]], list[Message]]


def remove_tool_calls(messages: list[Message]) -> list[Message]:
    """Drop tool calls and their results; an assistant turn that also had text keeps its text.

    The target then reads the conversation as the user saw it, without the source agent's
    plumbing (lookups, the transfer call itself), which is often most of the characters.
    """
    kept: list[Message] = []
    for message in messages:
        if message.role == "tool":
            continue
        if message.role == "assistant" and message.tool_calls:
            if message.content:
                kept.append(Message.assistant(message.content))
            continue
        kept.append(message)
    return kept


def keep_last_n(n: int) -> HistoryFilter:
    """A filter keeping the last ``n`` messages (fewer if the cut would orphan tool results)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise UserError(f"keep_last_n(n) needs a positive integer, got {n!r}")

    def keep_last(messages: list[Message]) -> list[Message]:
        return last_messages(messages, n)

    keep_last.__name__ = f"keep_last_{n}"
    return keep_last


def compose(*filters: HistoryFilter) -> HistoryFilter:
    """One filter applying ``filters`` left to right."""
    for f in filters:
        if not callable(f):
            raise UserError(
                f"compose() takes filters (functions list[Message] -> list[Message]), got {f!r}. "
                "Did you write keep_last_n instead of keep_last_n(5)?"
            )

    def composed(messages: list[Message]) -> list[Message]:
        for f in filters:
            messages = list(f(messages))
        return messages

    composed.__name__ = "compose(" + ", ".join(getattr(f, "__name__", "?") for f in filters) + ")"
    return composed


def last_messages(messages: list[Message], n: int) -> list[Message]:
    """The last ``n`` messages, without leading tool results whose call was cut off
    (chat APIs reject a tool result with no call before it)."""
    kept = list(messages[-n:]) if n > 0 else []
    while kept and kept[0].role == "tool":
        kept.pop(0)
    return kept


__all__ = ["HistoryFilter", "compose", "keep_last_n", "last_messages", "remove_tool_calls"]
