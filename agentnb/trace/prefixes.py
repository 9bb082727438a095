"""What a request starts with, as a chain of fingerprints: the data a prompt-cache estimate needs.

Providers cache the *prefix* of a request: an exact run of leading tokens seen before is served
from the cache at a lower price. To estimate that, agentnb keeps, for every model call, the
request as a chain of parts in the providers' order — the tool specs (with the output schema),
the system prompt, then each message — where every part holds a fingerprint of everything up
to and including it, its own token count and the running total.

A history only grows, so the chain of turn 2 extends the chain of turn 1: the parts are shared
(turn 2 points at turn 1's last part), and memory grows with the number of messages, not with
calls times history length. No text is kept, only hashes and counts. Two requests share a
prefix up to a part exactly when that part's fingerprint is the same in both (64-bit BLAKE2b
hashes of the texts, the same in every process, so runs made by a sweep's workers compare).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Literal

from ..models.types import Message

PartKind = Literal["tools", "system", "user", "assistant", "tool"]


class Prefix:
    """One part of a request, chained to the parts before it (see the module docstring)."""

    __slots__ = ("args", "depth", "digest", "kind", "parent", "tokens", "total")

    def __init__(
        self, kind: PartKind, digest: bytes, tokens: int, parent: Prefix | None, args: int = 0
    ) -> None:
        self.kind: PartKind = kind
        self.digest = digest
        """Fingerprint of the request up to and including this part (8 bytes)."""
        self.tokens = tokens
        """This part's own tokens."""
        self.total: int = tokens + (parent.total if parent is not None else 0)
        """Tokens of the request up to and including this part."""
        self.parent = parent
        self.args = args
        """Of ``tokens``, those of the tool-call arguments (an assistant message's)."""
        self.depth: int = 0 if parent is None else parent.depth + 1

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
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"Prefix({self.depth + 1} parts, {self.total:,} tokens)"

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        """Pickled as the nearest ancestor at a depth multiple of `_ANCHOR` (pickled the same
        way, and shared by every chain that has it) plus the parts after it, flat: a chain of
        thousands of messages pickles without deep recursion, and calls that share a history
        still share most of it once unpickled (a sweep's executor sends rows this way)."""
        segment = []
        node: Prefix | None = self
        while node is not None and (node is self or node.depth % _ANCHOR):
            segment.append((node.kind, node.digest, node.tokens, node.args))
            node = node.parent
        segment.reverse()
        return _rebuild, (node, tuple(segment))


_ANCHOR = 256


def _rebuild(
    anchor: Prefix | None, segment: tuple[tuple[PartKind, bytes, int, int], ...]
) -> Prefix:
    node = anchor
    for kind, digest, tokens, args in segment:
        node = Prefix(kind, digest, tokens, node, args)
    assert node is not None
    return node


_blake2b = hashlib.blake2b


def fingerprint(text: str, parent: bytes = b"") -> bytes:
    """An 8-byte fingerprint of ``text`` following ``parent`` (BLAKE2b)."""
    return _blake2b(parent + text.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def head(tools: tuple[bytes, int], system: tuple[bytes, int]) -> Prefix:
    """The fixed start of a request: ``(fingerprint, tokens)`` of its specs and of its system
    prompt.

    Both parts are always present (with 0 tokens when empty) so that message parts always hang
    from a system part, and breakpoints "after the tools" and "after the system prompt" exist.
    """
    specs = Prefix("tools", tools[0], tools[1], None)
    return Prefix(
        "system", _blake2b(specs.digest + system[0], digest_size=8).digest(), system[1], specs
    )


def extend(parent: Prefix, message: Message, tokens: int, args: int = 0) -> Prefix:
    """The part for ``message`` (``tokens``, ``args`` of them its tool calls') after ``parent``."""
    text = message.content
    key = (
        f"{message.role}\x1f{-1 if text is None else len(text)}\x1f{message.tool_call_id}\x1f{text}"
    )
    if message.tool_calls:
        key += repr(tuple((c.id, c.name, c.arguments) for c in message.tool_calls))
    return Prefix(message.role, fingerprint(key, parent.digest), tokens, parent, args)


TOKEN_COMPONENTS = ("system", "tools", "user", "assistant", "tool_args", "tool_results")
"""The components of `agentnb.trace.sizes.COMPONENTS` that tokens are split into (a token
count has no JSON framing: the chat format's own tokens are the provider's, docs/tokens.md)."""

_COMPONENT = {"tools": "tools", "system": "system", "user": "user", "tool": "tool_results"}


def components(chain: Prefix) -> dict[str, int]:
    """A request's tokens by component, from its chain; they add up to ``chain.total``."""
    out = dict.fromkeys(TOKEN_COMPONENTS, 0)
    node: Prefix | None = chain
    while node is not None:
        if node.kind == "assistant":
            out["assistant"] += node.tokens - node.args
            out["tool_args"] += node.args
        else:
            out[_COMPONENT[node.kind]] += node.tokens
        node = node.parent
    return out
