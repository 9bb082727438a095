"""What "characters sent" means: the one rule, used everywhere in agentnb.

A model call's size is the length of the canonical JSON of the request as the model client
received it::

    {"system":"...","messages":[m1,m2,...],"tools":[t1,t2,...]}

followed by ``,"output_schema":{...}`` before the closing brace when the agent asks for
structured output. The JSON is compact (no spaces after ``,`` or ``:``), keeps non-ASCII
characters as they are (``ensure_ascii=False``) and keeps dict keys in insertion order. A message is::

    {"role":"user","content":"..."}
    {"role":"assistant","content":"..."|null,"tool_calls":[{"id":"...","name":"...","arguments":"..."}]}
    {"role":"tool","tool_call_id":"...","content":"..."}

(``tool_calls`` only when there are some). Tool arguments are a JSON *string*, as in the OpenAI
wire format, so their quotes are escaped and counted.

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

The components add up exactly to the total. Each message's share is computed once and cached
on the message, so measuring a long history costs one pass over the new messages only.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from ..models.types import Message, ModelRequest, ModelResponse, OutputSchema, ToolSpec
from .history import HistoryTally

COMPONENTS = ("system", "tools", "user", "assistant", "tool_args", "tool_results", "framing")


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# One encoder for every call: json.dumps with options builds a new one each time, which was
# a measurable share of the per-call overhead. A string alone goes straight to the escaper.
_encode_string = json.encoder.encode_basestring


def dumps(value: object) -> str:
    """The canonical JSON encoding used for every size in agentnb."""
    return _ENCODER.encode(value)


def _text(value: str | None) -> int:
    """Escaped length of a string's content, without its two quotes (0 for None)."""
    if value is None:
        return 0
    if type(value) is str:
        return len(_encode_string(value)) - 2
    return len(dumps(value)) - 2


class MessageSize(NamedTuple):
    total: int
    component: str
    content: int
    tool_args: int


_COMPONENT_OF_ROLE = {"user": "user", "assistant": "assistant", "tool": "tool_results"}


_TOOL_MESSAGE = len('{"role":"tool","tool_call_id":,"content":}')
_MESSAGE = len('{"role":,"content":}')
_TOOL_CALLS = len(',"tool_calls":[]')
_TOOL_CALL = len('{"id":,"name":,"arguments":}')


def message_size(message: Message) -> MessageSize:
    """The size of one message in the canonical JSON, cached on the message.

    The total is ``len(dumps(message_payload(message)))`` added up field by field: encoding the
    payload dict was the largest share of the trace's per-call cost. Each text is escaped once,
    for its component and for the total (a field's JSON is its escaped text and two quotes, or
    ``null``). A test compares this with `message_payload` on random messages.
    """
    cached = message._size
    if cached is not None:
        return cached
    text = message.content
    content = len(_encode_string(text)) - 2 if type(text) is str else _text(text)
    total = 4 if text is None else content + 2
    calls = message.tool_calls
    args = 0
    if message.role == "tool":
        total += _TOOL_MESSAGE + _json_length(message.tool_call_id)
        if calls:  # a tool message has none in practice
            args = sum(_text(call.arguments) for call in calls)
    else:
        total += _MESSAGE + _json_length(message.role)
        if calls:
            total += _TOOL_CALLS + len(calls) - 1
            for c in calls:
                arg = _text(c.arguments)
                args += arg
                total += _TOOL_CALL + _json_length(c.id) + _json_length(c.name)
                total += 4 if c.arguments is None else arg + 2
    size = MessageSize(total, _COMPONENT_OF_ROLE[message.role], content, args)
    message._size = size
    return size


def _json_length(value: object) -> int:
    """Length of ``value``'s canonical JSON, with fast paths for strings and None."""
    if type(value) is str:
        return len(_encode_string(value))
    if value is None:
        return 4  # null
    return len(dumps(value))


def message_payload(message: Message) -> dict[str, object]:
    """A message as the canonical JSON object (the rule in this module's docstring)."""
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.content,
        }
    payload: dict[str, object] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        payload["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    return payload


def request_payload(request: ModelRequest) -> dict[str, object]:
    """The whole request as the canonical JSON object."""
    payload: dict[str, object] = {
        "system": request.system,
        "messages": [message_payload(m) for m in request.messages],
        "tools": [t.as_dict() for t in request.tools],
    }
    if request.output_schema is not None:
        payload["output_schema"] = {
            "name": request.output_schema.name,
            "schema": request.output_schema.schema,
        }
    return payload


def canonical_request(request: ModelRequest) -> str:
    """The canonical JSON text of a request: its length is "characters sent"."""
    return dumps(request_payload(request))


_spec_cache: dict[int, tuple[object, int]] = {}


def _specs_size(tools: list[ToolSpec]) -> int:
    # Tool specs are rebuilt rarely (once per agent per run), so cache by identity,
    # holding the object so that its id cannot be reused while cached.
    size = 0
    for spec in tools:
        hit = _spec_cache.get(id(spec))
        if hit is None or hit[0] is not spec:
            hit = (spec, len(dumps(spec.as_dict())))
            if len(_spec_cache) > 50_000:
                _spec_cache.clear()
            _spec_cache[id(spec)] = hit
        size += hit[1]
    return size


def _schema_size(schema: OutputSchema) -> int:
    return len(dumps({"name": schema.name, "schema": schema.schema}))


_REQUEST_FRAME = len('{"system":,"messages":[],"tools":[]}')
_SCHEMA_KEY = len(',"output_schema":')


def request_sizes(request: ModelRequest, tally: HistoryTally | None = None) -> dict[str, int]:
    """Characters sent by component; ``sum(values) == len(canonical_request(request))``.

    Returns the components (in the order of `COMPONENTS`) plus ``total``. With a
    `HistoryTally` (the run loop keeps one per agent), only the messages appended since the
    tally's last request are visited.
    """
    text, specs, schema = request.system, request.tools, request.output_schema
    fixed = tally.fixed if tally is not None else None
    if fixed is not None and fixed[0] is text and fixed[1] == tuple(specs):
        system, tools = fixed[2], fixed[3]  # the same prompt and specs as the last request
    else:
        system = len(_encode_string(text)) - 2 if type(text) is str else _text(text)
        tools = _specs_size(specs) if specs else 0
        if tally is not None and type(text) is str:  # a str cannot change: keep its size
            tally.fixed = (text, tuple(specs), system, tools)
    if schema is not None:
        tools += _schema_size(schema)
    messages = request.messages
    n = len(messages)
    # the system prompt's JSON, the specs, the frame, and the commas between items
    total = (system + 2 if isinstance(text, str) else len(dumps(text))) + tools + _REQUEST_FRAME
    total += (n - 1 if n else 0) + (len(specs) - 1 if specs else 0)
    if schema is not None:
        total += _SCHEMA_KEY
    if tally is None:
        start, sums = 0, _empty_sums()
    else:
        start = tally.sizes.prefix(messages)
        sums = tally.sizes.values or _empty_sums()
    if start < n:  # only what is new since the tally's last request
        history, args = sums["total"], sums["tool_args"]
        for i in range(start, n):
            size = messages[i]._size or message_size(messages[i])
            history += size.total
            sums[size.component] += size.content
            args += size.tool_args
        sums["total"], sums["tool_args"] = history, args
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
