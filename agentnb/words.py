"""Wording shared by every layer. Like `agentnb.errors`, it imports nothing of agentnb, so the
lowest layer can use it."""

from __future__ import annotations


def plural(n: int, word: str) -> str:
    """``n`` with ``word``, made plural unless there is exactly one: ``1 model call``,
    ``3 model calls``, ``1,204 turns``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"
