"""The canonical JSON of a request: the wire-neutral form every size and recording is taken from.

A request is the object::

    {"system":"...","messages":[m1,m2,...],"tools":[t1,t2,...]}

followed by ``,"output_schema":{"name":...,"schema":...}`` before the closing brace when the
agent asks for structured output. The JSON is compact (no spaces after ``,`` or ``:``), keeps
non-ASCII characters as they are (``ensure_ascii=False``) and keeps dict keys in insertion
order. A message is::

    {"role":"user","content":"..."}
    {"role":"assistant","content":"..."|null,"tool_calls":[{"id":"...","name":"...","arguments":"..."}]}
    {"role":"tool","tool_call_id":"...","content":"..."}

(``tool_calls`` only when there are some). Tool arguments are a JSON *string*, as in the OpenAI
wire format, so their quotes are escaped and counted.

`agentnb.trace.sizes` measures "characters sent" as the length of this text;
`agentnb.models.recorded.recorder` stores requests in this form.
"""

from __future__ import annotations

import json
from typing import Any

from .types import Message, ModelRequest, OutputSchema, ToolSpec

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _not_json(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# `JSONEncoder.encode` makes a new C encoder on every call; every request measures each new
# message, so the encoder with the canonical options is made once (the pure-Python encoder
# where the C one is missing).
_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODER = (
    _make_encoder(
        None, _not_json, json.encoder.encode_basestring, None, ":", ",", False, False, True
    )
    if _make_encoder is not None
    else None
)


def dumps(value: object) -> str:
    """``value`` as canonical JSON text (compact, non-ASCII kept, keys in insertion order)."""
    if type(value) is str:
        return json.encoder.encode_basestring(value)
    if _C_ENCODER is None:
        return _ENCODER.encode(value)
    return "".join(_C_ENCODER(value, 0))


def message_payload(message: Message) -> dict[str, object]:
    """A message as its canonical JSON object."""
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


def tool_payload(spec: ToolSpec) -> dict[str, object]:
    """A tool spec as its canonical JSON object."""
    return spec.as_dict()


def schema_payload(schema: OutputSchema) -> dict[str, object]:
    """An output schema as its canonical JSON object."""
    return {"name": schema.name, "schema": schema.schema}


def request_payload(request: ModelRequest) -> dict[str, object]:
    """The whole request as its canonical JSON object."""
    payload: dict[str, object] = {
        "system": request.system,
        "messages": [message_payload(m) for m in request.messages],
        "tools": [tool_payload(t) for t in request.tools],
    }
    if request.output_schema is not None:
        payload["output_schema"] = schema_payload(request.output_schema)
    return payload


def canonical_request(request: ModelRequest) -> str:
    """The canonical JSON text of a request: its length is "characters sent"."""
    return dumps(request_payload(request))
