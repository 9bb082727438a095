"""Running totals over a history that only grows, so measuring a turn costs O(new messages).

Every model call resends the whole history. Each message's size and token count is cached on
the message, but adding the cached numbers up is still a pass over the history: over a long
conversation that pass, not the tokenizer, becomes the cost of a turn. A `HistoryTally` keeps
the sums for the messages it has seen; the next request adds only the messages appended since.

The tally trusts that a history grows by appending. It checks that cheaply (the first message
and the last one it counted are the same objects at the same places) and recounts from the
start whenever that check fails; the run loop also resets it when a handoff replaces the history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..models.types import Message


@dataclass(slots=True)
class _Sums:
    count: int = 0
    first: Message | None = None
    last: Message | None = None
    key: object = None
    values: dict[str, int] = field(default_factory=dict)

    def prefix(self, messages: list[Message], key: object = None) -> int:
        """How many leading messages of ``messages`` are already summed (0: start again)."""
        n = self.count
        if (
            n
            and key == self.key
            and len(messages) >= n
            and messages[0] is self.first
            and messages[n - 1] is self.last
        ):
            return n
        self.count, self.first, self.last, self.key = 0, None, None, key
        self.values = {}
        return 0

    def advance(self, messages: list[Message], key: object = None) -> None:
        self.count = len(messages)
        self.first = messages[0] if messages else None
        self.last = messages[-1] if messages else None
        self.key = key


@dataclass(slots=True)
class HistoryTally:
    """Sums of message sizes and token counts over the part of a history already measured."""

    sizes: _Sums = field(default_factory=_Sums)
    tokens: _Sums = field(default_factory=_Sums)
    fixed: tuple[Any, ...] | None = None
    """``(system prompt, tool specs, their sizes)`` of the last request: an agent resends the
    same ones on every turn, so the next request measures them only if they changed."""
    prefix: Any = None
    """The last request's chain of fingerprints (`agentnb.trace.prefixes.Prefix`), which the
    next request extends; ``None`` without a tokenizer."""
    prefix_root: Any = None
    """That chain's first parts (tool specs and system prompt)."""
    sent: Any = None
    """The newest history this agent sent, shared by its call rows until their tokens are
    counted (`agentnb.trace.calls`)."""
    prefix_fixed: tuple[Any, ...] | None = None
    """``(system, specs, output schema, tokenizer key, root, system tokens, spec tokens)`` of
    the last request: the next one reuses them if it sends the same prompt and specs."""

    def reset(self) -> None:
        self.sizes = _Sums()
        self.tokens = _Sums()
        self.fixed = None
        self.prefix = self.prefix_root = self.prefix_fixed = self.sent = None
