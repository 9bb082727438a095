"""Server-side conversation state: which earlier response a request continues.

With ``conversation="server"`` the Responses API keeps each response (its input and output)
and a request may name one as ``previous_response_id``, sending only the items that came
after it. agentnb's runtime still hands the model client the whole history on every call, so
the adapter finds the response to continue from the history itself: after each call it
remembers the conversation that response ends (every message sent, then its reply), keyed by
a running hash of the messages; the next request whose history starts with such a
conversation sends only the messages after it.

This makes the chains follow the histories, with no bookkeeping above the model layer: each
agent's run (a sub-agent's included) has its own history, hence its own chain; a handoff
that passes the history on unchanged continues the chain, a filtered one starts a new one;
two calls with the same history (a retry, or parallel branches given the same input) may
both continue the same response, which the API allows.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from ...canonical import dumps
from ...types import Message, ModelResponse

MAX_CHAINS = 4096
"""Conversations remembered per model client; the oldest are forgotten (their next request is
sent whole, which is always correct, only bigger)."""


@dataclass(frozen=True, slots=True)
class Continuation:
    """How to send one request: after ``previous_response_id``, only ``messages[start:]``."""

    previous_response_id: str | None
    start: int


def _norm(message: Message) -> str:
    """A message as the server saw it: what the runtime may fill in later (an empty text for
    a reply that had none) compares equal."""
    calls = [(c.id, c.name, c.arguments or "{}") for c in message.tool_calls]
    return dumps([message.role, message.content or "", calls, message.tool_call_id or ""])


def _prefix_keys(messages: Sequence[Message]) -> list[str]:
    """The key of every prefix of ``messages``: ``keys[k]`` is that of ``messages[:k]``."""
    running = hashlib.sha256()
    keys = [running.hexdigest()]
    for message in messages:
        running.update(_norm(message).encode())
        running.update(b"\x00")
        keys.append(running.hexdigest())
    return keys


class ResponseChains:
    """The conversations one model client's responses end, by key (see the module doc)."""

    def __init__(self) -> None:
        self._ids: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()  # a model may serve agentnb's loop and Jupyter's at once

    def continuation(self, messages: Sequence[Message]) -> Continuation:
        """The longest remembered conversation ``messages`` starts with (none: send it whole)."""
        keys = _prefix_keys(messages)
        with self._lock:
            for k in range(len(messages), 0, -1):
                found = self._ids.get(keys[k])
                if found is not None:
                    self._ids.move_to_end(keys[k])
                    return Continuation(found, k)
        return Continuation(None, 0)

    def remember(
        self, messages: Sequence[Message], response: ModelResponse, response_id: str | None
    ) -> None:
        """That ``response_id`` ends ``messages`` followed by ``response``'s reply."""
        if not response_id:
            return
        reply = Message.assistant(response.text, tuple(response.tool_calls))
        key = _prefix_keys([*messages, reply])[-1]
        with self._lock:
            self._ids[key] = response_id
            self._ids.move_to_end(key)
            while len(self._ids) > MAX_CHAINS:
                self._ids.popitem(last=False)

    def forget(self, response_id: str) -> None:
        """The server no longer knows ``response_id`` (expired, deleted)."""
        with self._lock:
            for key in [k for k, v in self._ids.items() if v == response_id]:
                del self._ids[key]

    def __len__(self) -> int:
        return len(self._ids)
