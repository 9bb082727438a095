"""What "characters sent" means: the one rule, used everywhere in agentnb.

A model call's size is the length of the request's canonical JSON, as the model client received
it (the form is defined in `agentnb.models.canonical`: compact, non-ASCII kept, tool arguments
as a JSON string).

The characters are split by component. A text field counts its escaped content (the characters
between its quotes); the quotes, keys, commas and brackets around it are ``framing``:

=================  ===============================================================
``system``         the system prompt (the agent's instructions)
``tools``          each tool spec's whole JSON object, and the output schema's
``user``           user messages (the input, and what a sub-agent is handed)
``assistant``      the text of earlier assistant turns
``tool_args``      the arguments of earlier tool calls (what the model generated)
``tool_results``   tool results read back (sub-agents' answers included)
``framing``        everything else: punctuation, keys, ids and names of calls
=================  ===============================================================

The components add up exactly to the total. Each message is measured once, from its canonical
JSON, and the size is cached on the message; with a `HistoryTally` a request then costs one
pass over the messages appended since the last one, not over the whole history.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import NamedTuple

from ..models.canonical import (
    canonical_request,
    dumps,
    message_payload,
    request_payload,
    schema_payload,
    tool_payload,
)
from ..models.types import Message, ModelRequest, ModelResponse, OutputSchema, ToolSpec
from .history import HistoryTally

__all__ = [
    "COMPONENTS",
    "MessageSize",
    "canonical_request",
    "dumps",
    "escaped_length",
    "message_payload",
    "message_size",
    "request_payload",
    "request_sizes",
    "response_chars",
]

COMPONENTS = ("system", "tools", "user", "assistant", "tool_args", "tool_results", "framing")


def escaped_length(value: object) -> int:
    """Characters of a text field's content in the canonical JSON, without its two quotes
    (0 for None): what a component counts for a text."""
    if value is None:
        return 0
    if type(value) is str:  # what `dumps` does with a str, without the call through it
        return len(encode_basestring(value)) - 2
    return len(dumps(value)) - 2


class MessageSize(NamedTuple):
    """One message's share of a request: its whole JSON object and its components."""

    total: int
    component: str
    content: int
    tool_args: int


_COMPONENT_OF_ROLE = {"user": "user", "assistant": "assistant", "tool": "tool_results"}


def message_size(message: Message) -> MessageSize:
    """The size of one message in the canonical JSON, measured once and cached on the message."""
    cached: MessageSize | None = message.size_cache
    if cached is not None:
        return cached
    calls = message.tool_calls
    size = MessageSize(
        len(dumps(message_payload(message))),
        _COMPONENT_OF_ROLE[message.role],
        escaped_length(message.content),
        sum(escaped_length(c.arguments) for c in calls) if calls else 0,
    )
    message.size_cache = size
    return size


def _specs_size(tools: list[ToolSpec]) -> int:
    # A spec is built once per tool and resent on every call: its size is kept on it.
    size = 0
    for spec in tools:
        known = spec.size_cache
        if known is None:
            known = spec.size_cache = len(dumps(tool_payload(spec)))
        size += known
    return size


def _schema_size(schema: OutputSchema) -> int:
    return len(dumps(schema_payload(schema)))


# The parts of a request's JSON that are not its fields' values, read off the canonical form:
# the braces, keys and brackets of an empty request, and the key an output schema adds.
_EMPTY = ModelRequest("", [])
_REQUEST_FRAME = len(canonical_request(_EMPTY)) - len(dumps(""))
_NO_SCHEMA = OutputSchema("", {})
_SCHEMA_KEY = (
    len(canonical_request(ModelRequest("", [], output_schema=_NO_SCHEMA)))
    - len(canonical_request(_EMPTY))
    - _schema_size(_NO_SCHEMA)
)


def request_sizes(request: ModelRequest, tally: HistoryTally | None = None) -> dict[str, int]:
    """Characters sent by component; ``sum(values) == len(canonical_request(request))``.

    Returns the components (in the order of `COMPONENTS`) plus ``total``. With a
    `HistoryTally` (the run loop keeps one per agent), only the messages appended since the
    tally's last request are visited, and an unchanged prompt and tool list are not measured again.
    """
    text, specs, schema = request.system, request.tools, request.output_schema
    fixed = tally.fixed if tally is not None else None
    if fixed is not None and fixed[0] is text and fixed[1] == tuple(specs):
        system, tools = fixed[2], fixed[3]
    else:
        system = escaped_length(text)
        tools = _specs_size(specs) if specs else 0
        if tally is not None and type(text) is str:  # a str cannot change: keep its size
            tally.fixed = (text, tuple(specs), system, tools)
    if schema is not None:
        tools += _schema_size(schema)
    messages = request.messages
    n = len(messages)
    # the prompt's JSON (its text and quotes), the specs, the frame, the commas between items
    total = (system + 2 if isinstance(text, str) else len(dumps(text))) + tools + _REQUEST_FRAME
    total += max(n - 1, 0) + max(len(specs) - 1, 0)
    if schema is not None:
        total += _SCHEMA_KEY
    if tally is None:
        start, sums = 0, _empty_sums()
    else:
        start = tally.sizes.prefix(messages)
        sums = tally.sizes.values or _empty_sums()
    for i in range(start, n):  # only what is new since the tally's last request
        size = message_size(messages[i])
        sums["total"] += size.total
        sums[size.component] += size.content
        sums["tool_args"] += size.tool_args
    if tally is not None:
        tally.sizes.values = sums
        tally.sizes.advance(messages)
    total += sums["total"]
    user, assistant = sums["user"], sums["assistant"]
    tool_args, tool_results = sums["tool_args"], sums["tool_results"]
    return {
        "system": system,
        "tools": tools,
        "user": user,
        "assistant": assistant,
        "tool_args": tool_args,
        "tool_results": tool_results,
        "framing": total - (system + tools + user + assistant + tool_args + tool_results),
        "total": total,
    }


def _empty_sums() -> dict[str, int]:
    return {"total": 0, "user": 0, "assistant": 0, "tool_results": 0, "tool_args": 0}


def response_chars(response: ModelResponse) -> int:
    """Characters generated: the answer's text plus the arguments of its tool calls."""
    n = len(response.text or "")
    for call in response.tool_calls:
        n += len(call.arguments)
    return n
