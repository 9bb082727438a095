"""What a request starts with, as a chain of fingerprints: the data a prompt-cache estimate needs.

Providers cache the *prefix* of a request: an exact run of leading tokens seen before is served
from the cache at a lower price. To estimate that, agentnb keeps, for every model call, the
request as a chain of parts in the providers' order — the tool specs (with the output schema),
the system prompt, then each message — where every part holds a fingerprint of everything up
to and including it, its own token count and the running total.

A history only grows, so the chain of turn 2 extends the chain of turn 1: the parts are shared
(turn 2 points at turn 1's last part), and memory grows with the number of messages, not with
calls times history length. No text is kept, only hashes and counts. Two requests share a
prefix up to a part exactly when that part's fingerprint is the same in both (64-bit hashes
of the texts, valid inside one Python process).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from ..models.types import Message

PartKind = Literal["tools", "system", "user", "assistant", "tool"]


class Prefix:
    """One part of a request, chained to the parts before it (see the module docstring)."""

    __slots__ = ("digest", "kind", "parent", "tokens", "total")

    def __init__(self, kind: PartKind, digest: int, tokens: int, parent: Prefix | None) -> None:
        self.kind: PartKind = kind
        self.digest = digest
        """Fingerprint of the request up to and including this part."""
        self.tokens = tokens
        """This part's own tokens."""
        self.total: int = tokens + (parent.total if parent is not None else 0)
        """Tokens of the request up to and including this part."""
        self.parent = parent

    def parts(self) -> list[Prefix]:
        """The chain from the request's first part to this one."""
        out = list(self._walk())
        out.reverse()
        return out

    def _walk(self) -> Iterator[Prefix]:
        node: Prefix | None = self
        while node is not None:
            yield node
            node = node.parent

    def __eq__(self, other: object) -> bool:
        """Equal when they fingerprint the same request prefix (same parts, same counts)."""
        if not isinstance(other, Prefix):
            return NotImplemented
        return self.digest == other.digest and self.total == other.total

    def __hash__(self) -> int:
        return self.digest

    def __repr__(self) -> str:
        return f"Prefix({sum(1 for _ in self._walk())} parts, {self.total:,} tokens)"


def head(tools: tuple[int, int], system: tuple[int, int]) -> Prefix:
    """The fixed start of a request: ``(digest, tokens)`` of its specs and of its system prompt.

    Both parts are always present (with 0 tokens when empty) so that message parts always hang
    from a system part, and breakpoints "after the tools" and "after the system prompt" exist.
    """
    specs = Prefix("tools", hash(("tools", tools[0])), tools[1], None)
    return Prefix("system", hash((specs.digest, system[0])), system[1], specs)


def extend(parent: Prefix, message: Message, tokens: int) -> Prefix:
    """The part for ``message`` after ``parent``."""
    calls = tuple((c.id, c.name, c.arguments) for c in message.tool_calls)
    content = (message.role, message.content, message.tool_call_id, calls)
    return Prefix(message.role, hash((parent.digest, content)), tokens, parent)
