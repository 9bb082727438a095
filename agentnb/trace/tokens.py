"""Token counts: tiktoken when an encoding can be loaded, otherwise honestly "unavailable".

tiktoken downloads its encoding files on first use; machines without a network (CI, a train)
cannot load them, and then agentnb reports ``tokens_method="unavailable"`` rather than an
estimate dressed up as a count. A provider's own usage is recorded beside these counts.

A request's count is the sum of the tokens of its texts — the system prompt, each tool spec's
JSON, each message's content and tool-call arguments — without the few tokens per message a
provider adds for its chat format. Each message's count is cached on the message (and the
system prompt's and tool specs' in small tables), so what is resent on every turn is only
counted once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, Literal

from ..errors import UserError
from ..models.canonical import dumps
from ..models.types import Message, ModelRequest, ModelResponse
from .history import HistoryTally

Encoder = Callable[[str], int]

DEFAULT_ENCODING = "o200k_base"

_lock = threading.Lock()
_state: dict[str, Any] = {
    "loaded": False,
    "encoder": None,
    "method": "unavailable",
    "generation": 0,
}
# ``generation`` changes with every `set_tokenizer`, so a count cached under one tokenizer is
# never served under another that happens to carry the same method name.


def set_tokenizer(count: Encoder | Literal["off"] | None, method: str = "custom") -> None:
    """Choose how tokens are counted.

    - a function ``count(text) -> int``: ``method`` is what the ``tokens_method`` column will
      say, e.g. ``"tiktoken:cl100k_base"``;
    - ``"off"``: count no tokens (``tokens_method="unavailable"``), e.g. so that a notebook
      prints the same numbers on every machine; the code equivalent of ``AGENTNB_TOKENIZER=off``;
    - ``None``: the automatic choice again (tiktoken if it loads, unless that variable is set).
    """
    if not (count is None or count == "off" or callable(count)):
        raise UserError(
            f"set_tokenizer takes a function text -> int, 'off' or None (automatic), got {count!r}"
        )
    with _lock:
        _state["generation"] += 1
        _spec_tokens.clear()
        _text_tokens.clear()
        if count is None:
            _state.update(loaded=False, encoder=None, method="unavailable")
        elif count == "off":
            _state.update(loaded=True, encoder=None, method="unavailable")
        else:
            _state.update(loaded=True, encoder=count, method=method)


def tokenizer() -> tuple[Encoder | None, str]:
    """The counter in use and its method name; loads tiktoken once, on first need."""
    if not _state["loaded"]:
        with _lock:
            if not _state["loaded"]:
                _state["encoder"], _state["method"] = _load_tiktoken()
                _state["loaded"] = True
    return _state["encoder"], _state["method"]


def _load_tiktoken() -> tuple[Encoder | None, str]:
    if os.environ.get("AGENTNB_TOKENIZER", "").lower() in {"off", "none", "0"}:
        return None, "unavailable"
    name = os.environ.get("AGENTNB_TIKTOKEN_ENCODING", DEFAULT_ENCODING)
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(name)
    except Exception:  # no package, or no encoding file and no network to fetch it
        return None, "unavailable"
    return (lambda text: len(encoding.encode(text, disallowed_special=()))), f"tiktoken:{name}"


def message_tokens(message: Message, count: Encoder, method: str) -> int:
    key = (method, _state["generation"])
    cached = message.tokens_cache
    if cached is not None and cached[0] == key:
        return int(cached[1])
    n = count(message.content or "") if message.content else 0
    for call in message.tool_calls:
        n += count(call.arguments)
    message.tokens_cache = (key, n)
    return n


_spec_tokens: dict[tuple[int, str], tuple[object, int]] = {}
_text_tokens: dict[str, int] = {}
"""Counts of system prompts and output schemas, which are resent on every turn like history."""


def _cached_count(text: str, count: Encoder) -> int:
    n = _text_tokens.get(text)
    if n is None:
        n = count(text)
        if len(_text_tokens) > 10_000:
            _text_tokens.clear()
        _text_tokens[text] = n
    return n


def request_tokens(
    request: ModelRequest, tally: HistoryTally | None = None
) -> tuple[int | None, str]:
    """Tokens of a request and how they were obtained (``None, "unavailable"`` without a tokenizer).

    With a `HistoryTally`, only the messages appended since its last request are visited.
    """
    count, method = (_state["encoder"], _state["method"]) if _state["loaded"] else tokenizer()
    if count is None:
        return None, "unavailable"
    n = _cached_count(request.system, count) if request.system else 0
    for spec in request.tools:
        spec_key = (id(spec), method)
        hit = _spec_tokens.get(spec_key)
        if hit is None or hit[0] is not spec:
            hit = (spec, count(dumps(spec.as_dict())))
            if len(_spec_tokens) > 50_000:
                _spec_tokens.clear()
            _spec_tokens[spec_key] = hit
        n += hit[1]
    if request.output_schema is not None:
        n += _cached_count(dumps(request.output_schema.schema), count)
    key = (method, _state["generation"])
    messages = request.messages
    start = tally.tokens.prefix(messages, key) if tally is not None else 0
    history = tally.tokens.values.get("tokens", 0) if (tally is not None and start) else 0
    for i in range(start, len(messages)):  # only what is new since the tally's last request
        message = messages[i]
        cached = message.tokens_cache
        if cached is not None and cached[0] == key:
            history += cached[1]
        else:
            history += message_tokens(message, count, method)
    if tally is not None:
        tally.tokens.values = {"tokens": history}
        tally.tokens.advance(messages, key)
    return n + history, method


def response_tokens(response: ModelResponse) -> int | None:
    count, _ = tokenizer()
    if count is None:
        return None
    n = count(response.text) if response.text else 0
    return n + sum(count(c.arguments) for c in response.tool_calls)
