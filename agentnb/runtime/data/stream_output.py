"""What a stream shows of a structured answer: its text without agentnb's wrapper, and the
answer so far as a validated partial object.

A type whose schema is not an object (``list[int]``, ``int``, a union) is requested wrapped
as ``{"response": ...}`` (see `agentnb.runtime.agents.output`); the wrapper is agentnb's business, so
the text deltas of such an answer leave it out: the opening ``{"response":`` is held back until
it is complete and dropped, and the last closing brace is held back until more text shows it
was not the wrapper's. Each piece of text also tries the answer so far against the output type
with pydantic's partial validation (``experimental_allow_partial``, as pydantic-ai's
``stream_output`` does): a partial list or dict validates item by item, a model once its
required fields are there; each new valid value is sent as a `PartialOutput` event.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_core import from_json

from ...models.types import RESPONSE_FIELD

if TYPE_CHECKING:
    from .protocols import OutputSpecLike

_WRAPPER = re.compile(r'\s*\{\s*"' + RESPONSE_FIELD + r'"\s*:\s*')
_NOTHING = object()


class OutputStream:
    """The text of one model call as a stream shows it, for an agent with ``spec``."""

    __slots__ = ("_emitted", "_last", "_text", "spec")

    def __init__(self, spec: OutputSpecLike | None) -> None:
        self.spec = spec
        self._text = ""
        self._emitted = 0
        self._last: Any = _NOTHING

    def feed(self, piece: str) -> str:
        """Take one text piece; returns the text to show now ('' to wait)."""
        self._text += piece
        if self.spec is None or not self.spec.wrapped:
            self._emitted = len(self._text)
            return piece
        return self._shown(final=False)

    def finish(self) -> str:
        """The text still held back once the call has ended."""
        if self.spec is None or not self.spec.wrapped:
            return ""
        return self._shown(final=True)

    def _shown(self, *, final: bool) -> str:
        text = self._text
        match = _WRAPPER.match(text)
        if match is None:
            if not final and _could_open_wrapper(text):
                return ""  # perhaps the wrapper's opening: wait
            inner = text  # not wrapped after all: shown as it is
        else:
            inner = text[match.end() :]
            end = inner.rstrip()
            if end.endswith("}"):  # perhaps the wrapper's closing brace: hold it back
                inner = end[:-1].rstrip() if final else end[:-1]
            elif final:
                inner = end
        new = inner[self._emitted :]
        self._emitted = max(self._emitted, len(inner))
        return new

    def partial(self) -> Any:
        """The answer so far, validated partially, if it is valid and new; else `NOTHING`."""
        spec = self.spec
        if spec is None:
            return _NOTHING
        try:
            value = from_json(self._text, allow_partial="trailing-strings")
        except ValueError:
            return _NOTHING
        if spec.wrapped:
            if not isinstance(value, dict) or RESPONSE_FIELD not in value:
                return _NOTHING
            value = value[RESPONSE_FIELD]
        try:
            output = spec.adapter.validate_python(
                value, experimental_allow_partial="trailing-strings"
            )
        except ValidationError:
            return _NOTHING
        if self._last is not _NOTHING and output == self._last:
            return _NOTHING
        self._last = output
        return output


NOTHING = _NOTHING
"""What `OutputStream.partial` returns when there is no new valid partial answer."""


def _could_open_wrapper(text: str) -> bool:
    """Whether ``text`` may still become the wrapper's opening ``{"response":``."""
    stripped = re.sub(r"\s+", "", text)
    opening = '{"' + RESPONSE_FIELD + '":'
    return opening.startswith(stripped) or stripped.startswith(opening)


def unwrapped_text(spec: OutputSpecLike | None, text: str) -> str:
    """A whole message's text without the wrapper (for `MessageOutput`)."""
    stream = OutputStream(spec)
    return stream.feed(text) + stream.finish()
