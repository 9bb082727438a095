"""agentnb's types to and from the OpenAI Responses API wire format.

The Responses API (``POST /v1/responses``) differs from Chat Completions in shape, not in
substance, for what agentnb sends: the system prompt is ``instructions``, the history is a
list of ``input`` items (messages, ``function_call`` and ``function_call_output`` items),
a function tool is flat (``{"type": "function", "name": ...}``), and structured output is
``text.format``. What only it has comes back as output items agentnb does not execute:
reasoning items and the calls of hosted tools (web search, file search, code interpreter),
which the server ran itself. They are kept as events of the response, so the trace shows
them; their text, when the model quotes it, is in the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ....errors import UserError
from ...settings import TOOL_CHOICES, ModelSettings, unsupported
from ...types import Message, ModelRequest, ModelResponse, StopReason, ToolCall, Usage, token_count

HOSTED_TYPES = (
    "web_search",
    "web_search_preview",
    "file_search",
    "code_interpreter",
    "image_generation",
    "computer_use_preview",
    "mcp",
)
"""Hosted tools the Responses API documents; another type is sent as given, for newer ones."""

HOSTED_CALLS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "computer_call",
        "mcp_call",
        "mcp_list_tools",
    }
)
"""Output items of tools the server runs: traced, never run by agentnb."""


class HostedTool:
    """A tool the provider runs on its side (``HostedTool("web_search")``,
    ``HostedTool("file_search", vector_store_ids=["vs_1"])``,
    ``HostedTool("code_interpreter", container={"type": "auto"})``).

    Given to `OpenAIResponsesModel(tools=[...])`, it is sent with every request beside the
    agent's own tools. agentnb does not run it: the server does, and its call comes back as
    an output item, traced as a ``hosted_tool`` event of the model call.
    """

    __slots__ = ("options", "type")

    def __init__(self, type: str, **options: Any) -> None:  # noqa: A002 (the API's word)
        if not isinstance(type, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", type):
            raise UserError(
                f"HostedTool(type) takes a Responses API tool type such as "
                f"{', '.join(repr(t) for t in HOSTED_TYPES[:4])}; got {type!r}"
            )
        if type == "function":
            raise UserError(
                "HostedTool('function') is not a hosted tool: give the agent a Python function "
                "as a tool instead (agentnb runs it)"
            )
        try:
            json.dumps(options, allow_nan=False)
        except (TypeError, ValueError):
            raise UserError(
                f"HostedTool({type!r}, ...) options are sent as JSON: give str, numbers, bools, "
                f"lists and dicts of them; got {options!r}"[:300]
            ) from None
        self.type = type
        self.options: dict[str, Any] = dict(options)

    def as_wire(self) -> dict[str, Any]:
        """The tool as the request's ``tools`` lists it."""
        return {"type": self.type, **self.options}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HostedTool):
            return NotImplemented
        return self.as_wire() == other.as_wire()

    __hash__ = None  # type: ignore[assignment]  # its options may be dicts

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"HostedTool({self.type!r}{extra})"


STATE_FIELDS = ("store", "previous_response_id")
"""Fields ``OpenAIResponsesModel(conversation=...)`` sets: neither its ``params`` nor
``ModelSettings(extra=...)`` may, or the trace would not show what the server kept."""


def message_items(message: Message) -> list[dict[str, Any]]:
    """One history message as Responses input items (an assistant turn with tool calls is its
    text, if any, then one ``function_call`` item per call)."""
    if message.role == "tool":
        return [
            {
                "type": "function_call_output",
                "call_id": message.tool_call_id or "",
                "output": message.content or "",
            }
        ]
    items: list[dict[str, Any]] = []
    if message.role == "user" or message.content or not message.tool_calls:
        items.append({"role": message.role, "content": message.content or ""})
    for call in message.tool_calls:
        items.append(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments or "{}",
            }
        )
    return items


def _schema_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"


def request_to_wire(
    model: str,
    request: ModelRequest,
    messages: Sequence[Message],
    hosted: Sequence[HostedTool] = (),
) -> dict[str, Any]:
    """The keyword arguments of ``responses.create`` for ``request``, whose history is sent as
    ``messages`` (all of it, or only what is new since the previous response)."""
    body: dict[str, Any] = {"model": model}
    if request.system:
        body["instructions"] = request.system
    body["input"] = [item for m in messages for item in message_items(m)]
    tools: list[dict[str, Any]] = [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "strict": False,  # agentnb validates the arguments; strict schemas forbid defaults
        }
        for t in request.tools
    ]
    tools += [h.as_wire() for h in hosted]
    if tools:
        body["tools"] = tools
    schema = request.output_schema
    if schema is not None:
        body["text"] = {
            "format": {
                "type": "json_schema",
                "name": _schema_name(schema.name),
                "schema": schema.schema,
            }
        }
    if request.max_output_tokens is not None:
        body["max_output_tokens"] = request.max_output_tokens
    if request.settings is not None:
        _apply_settings(body, request.settings, request)
    return body


def _apply_settings(body: dict[str, Any], settings: ModelSettings, request: ModelRequest) -> None:
    """The Responses API's names for `ModelSettings` (raises `UserError` before any request)."""
    for name in ("temperature", "top_p"):
        value = getattr(settings, name)
        if value is not None:
            body[name] = value
    if settings.seed is not None:
        raise unsupported("the Responses API", "seed", settings.seed, "it takes no seed")
    if settings.stop is not None:
        raise unsupported("the Responses API", "stop", settings.stop, "it takes no stop words")
    if settings.max_tokens is not None:
        body["max_output_tokens"] = settings.max_tokens
    choice = settings.tool_choice
    if choice is not None:
        names = [t.name for t in request.tools]
        if choice in TOOL_CHOICES:
            body["tool_choice"] = choice
        elif choice in names:
            body["tool_choice"] = {"type": "function", "name": choice}
        else:
            raise unsupported(
                "the Responses API",
                "tool_choice",
                choice,
                f"{request.agent} has no tool of that name (its tools: {', '.join(names)}; "
                f"or one of {', '.join(TOOL_CHOICES)})",
            )
    if settings.parallel_tool_calls is not None and request.tools:
        body["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.extra:
        for key in STATE_FIELDS:
            if key in settings.extra:
                raise unsupported(
                    "the Responses API",
                    f"extra[{key!r}]",
                    settings.extra[key],
                    "OpenAIResponsesModel(conversation=...) sets it",
                )
        body["extra_body"] = dict(settings.extra)


class MalformedReply(ValueError):
    """The server's 200 answer is not a response agentnb can read."""


_INCOMPLETE: dict[str, StopReason] = {"max_output_tokens": "length", "content_filter": "error"}


def response_from_wire(reply: Any) -> tuple[ModelResponse, str | None]:
    """A `ModelResponse` from a parsed ``Response`` (the SDK's object or `._sse.attrs` of its
    JSON), and the response's id (raises `MalformedReply`)."""
    output = getattr(reply, "output", None)
    if output is None:
        raise MalformedReply("it has no output")
    if not isinstance(output, list):
        raise MalformedReply(f"its output is {type(output).__name__}, not a list of items")
    status = getattr(reply, "status", None)
    if status == "failed":
        error = getattr(reply, "error", None)
        raise MalformedReply(f"the response failed: {getattr(error, 'message', error)}")
    texts: list[str] = []
    calls: list[ToolCall] = []
    events: list[dict[str, Any]] = []
    for item in output:
        kind = getattr(item, "type", None)
        if kind == "message":
            content = getattr(item, "content", None) or []
            if not isinstance(content, list):
                raise MalformedReply(
                    f"a message's content is {type(content).__name__}, not a list of parts"
                )
            for part in content:
                if getattr(part, "type", None) == "output_text":
                    texts.append(_text(part.text, "an output_text"))
                elif getattr(part, "type", None) == "refusal":
                    texts.append(_text(part.refusal, "a refusal"))
                    events.append({"event": "refusal"})
        elif kind == "function_call":
            name = getattr(item, "name", None)
            if not name:
                raise MalformedReply(f"a function call has no name: {item!r}"[:200])
            calls.append(ToolCall(name, item.arguments or "{}", item.call_id or ""))
        elif kind == "reasoning":
            events.append(_reasoning_event(item))
        elif kind in HOSTED_CALLS:
            events.append(_hosted_event(item))
        else:  # a newer item type: shown, not dropped silently
            events.append({"event": "output_item", "type": str(kind)})
    stop: StopReason = "tool_calls" if calls else "stop"
    if status == "incomplete" and not calls:
        details = getattr(reply, "incomplete_details", None)
        stop = _INCOMPLETE.get(str(getattr(details, "reason", None)), "length")
    response = ModelResponse(
        text="".join(texts) if texts else None,
        tool_calls=calls,
        usage=usage_from_wire(getattr(reply, "usage", None)),
        stop_reason=stop,
        model=getattr(reply, "model", None),
        events=events,
    )
    return response, getattr(reply, "id", None)


def _text(value: Any, what: str) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    raise MalformedReply(f"{what} part's text is {type(value).__name__}, not a string")


def _reasoning_event(item: Any) -> dict[str, Any]:
    summary = [getattr(s, "text", "") or "" for s in getattr(item, "summary", None) or []]
    return {"event": "reasoning", "id": getattr(item, "id", None), "summary": "\n".join(summary)}


_HOSTED_DETAIL = ("action", "queries", "code", "results", "outputs", "server_label", "name")
"""What a hosted call's event keeps of its item, when present (ids and status besides)."""


def _hosted_event(item: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "event": "hosted_tool",
        "type": item.type,
        "id": getattr(item, "id", None),
        "status": getattr(item, "status", None),
    }
    for name in _HOSTED_DETAIL:
        value = getattr(item, name, None)
        if value is not None:
            event[name] = _plain(value)
    return event


def _plain(value: Any) -> Any:
    """An SDK object (pydantic) or `._sse.attrs` namespace as plain JSON-able data."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "__dict__"):
        return {k: _plain(v) for k, v in vars(value).items() if v is not None}
    return value


def usage_from_wire(usage: Any) -> Usage:
    """`Usage` from a response's ``usage`` (the billed input: the whole context, also when the
    request sent only a ``previous_response_id`` and new items)."""
    inputs = getattr(usage, "input_tokens_details", None)
    outputs = getattr(usage, "output_tokens_details", None)
    return Usage(
        token_count(getattr(usage, "input_tokens", None)),
        token_count(getattr(usage, "output_tokens", None)),
        1,
        token_count(getattr(inputs, "cached_tokens", None)),
        None,
        token_count(getattr(outputs, "reasoning_tokens", None)),
    )
