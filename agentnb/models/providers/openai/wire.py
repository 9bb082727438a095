"""agentnb's types to and from the Chat Completions wire format.

Chat Completions is the API every OpenAI-compatible server speaks (OpenAI, Azure, vLLM,
Ollama, LM Studio, llama.cpp server), so this is the one conversion most users rely on.
Structured output has three strengths, because servers differ in what they accept:

- ``json_schema``: ``response_format`` with the schema (OpenAI, recent vLLM);
- ``json_object``: ``response_format={"type": "json_object"}`` plus the schema in the system prompt;
- ``prompt``: the schema in the system prompt only (any server).

What is sent must also be accepted by the strict servers users run locally, whose request
models follow the OpenAI reference more closely than OpenAI does: an assistant message with
tool calls carries ``"content": ""`` rather than ``null`` (llama-cpp-python's server refuses a
null). The canonical form (`.canonical`), which "characters sent" is measured on, keeps the
null: this is a detail of the wire, not of the request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from ....errors import ModelHTTPError, UserError
from ...settings import TOOL_CHOICES, ModelSettings, unsupported
from ...types import (
    Message,
    ModelRequest,
    ModelResponse,
    OutputSchema,
    StopReason,
    ToolCall,
    Usage,
    token_count,
)

StructuredMode = Literal["json_schema", "json_object", "prompt"]
WEAKER: dict[str, StructuredMode] = {"json_schema": "json_object", "json_object": "prompt"}


def weaker_mode(
    structured: str,
    mode: StructuredMode | None,
    status: int | None,
    message: str,
    events: list[dict[str, Any]],
) -> StructuredMode | None:
    """With ``structured="auto"``, the next weaker way to ask for structured output after a
    server refused ``mode`` (a 400 or 422), recorded in ``events``; None: nothing weaker to try.
    ``message`` is what the server said, already scrubbed of the key."""
    weaker = WEAKER.get(mode or "") if structured == "auto" else None
    if status not in (400, 422) or weaker is None:
        return None
    events.append(
        {
            "event": "structured_fallback",
            "from": mode,
            "to": weaker,
            "status": status,
            "message": message[:200],
        }
    )
    return weaker


def schema_instruction(schema: OutputSchema) -> str:
    """What the system prompt says when the server cannot be given the schema directly."""
    text = json.dumps(schema.schema, ensure_ascii=False, separators=(",", ":"))
    return (
        "Give your final answer as a single JSON object, with no other text and no code fence, "
        f"matching this JSON schema ({schema.name}):\n{text}"
    )


def message_to_wire(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content or "",
        }
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or "",
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments or "{}"},
                }
                for c in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content or ""}


def _schema_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"


def request_to_wire(
    model: str,
    request: ModelRequest,
    mode: StructuredMode | None,
    *,
    max_tokens_param: str = "max_tokens",
    tool_choices: ToolChoices | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for one request (``tool_choices``:
    what the server does with ``tool_choice``; OpenAI's behaviour when None)."""
    system = request.system
    schema = request.output_schema
    if schema is not None and mode in ("json_object", "prompt"):
        system = (
            f"{system}\n\n{schema_instruction(schema)}" if system else schema_instruction(schema)
        )
    messages = [{"role": "system", "content": system}] if system else []
    messages += [message_to_wire(m) for m in request.messages]
    body: dict[str, Any] = {"model": model, "messages": messages}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
    if schema is not None and mode == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": _schema_name(schema.name), "schema": schema.schema},
        }
    elif schema is not None and mode == "json_object":
        body["response_format"] = {"type": "json_object"}
    if request.max_output_tokens is not None:
        body[max_tokens_param] = request.max_output_tokens
    choices = tool_choices or OPENAI_TOOL_CHOICES
    if request.settings is not None:
        _apply_settings(body, request.settings, request, max_tokens_param, choices)
    if request.tools and "tool_choice" not in body and choices.send_auto:
        body["tool_choice"] = "auto"
    return body


@dataclass(frozen=True, slots=True)
class ToolChoices:
    """What a server does with ``tool_choice``, where servers differ from OpenAI.

    - ``send_auto``: send ``"auto"`` when tools are given and no choice is set. OpenAI's
      default is ``"auto"`` already; llama-cpp-python's ``chatml-function-calling`` format
      leaves the tools out of the prompt unless a choice is sent.
    - ``required``: whether the server honours ``"required"``. llama-cpp-python's server
      answers it with HTTP 500 (an assertion, with an empty message); where it is False, an
      agent with one tool has ``"required"`` sent as that tool's name (the same demand), and
      an agent with several gets a `UserError` before any request.
    """

    send_auto: bool = False
    required: bool = True


OPENAI_TOOL_CHOICES = ToolChoices()
LLAMA_CPP_TOOL_CHOICES = ToolChoices(send_auto=True, required=False)


def _forced(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


def _required(request: ModelRequest, choices: ToolChoices) -> str | dict[str, Any]:
    """``"required"`` as this server can be asked for it."""
    if choices.required:
        return "required"
    names = [t.name for t in request.tools]
    if len(names) == 1:
        return _forced(names[0])
    raise UserError(
        f"This server cannot honour ModelSettings(tool_choice='required') (llama-cpp-python's "
        f"answers it with HTTP 500), and {request.agent} has {len(names)} tools, so agentnb "
        f"cannot send it as the one tool's name. Name the tool to call instead, e.g. "
        f"ModelSettings(tool_choice={names[0]!r}) (its tools: {', '.join(names)})."
    )


def required_refused(error: ModelHTTPError, request: ModelRequest) -> ModelHTTPError:
    """``error`` with what to do added, when it may be the server refusing ``"required"``
    (a 400, 422 or 500 to a request that asked for it; llama-cpp-python's 500 says nothing)."""
    settings = request.settings
    if (
        settings is None
        or settings.tool_choice != "required"
        or error.status not in (400, 422, 500)
        or not request.tools
    ):
        return error
    first = request.tools[0].name
    return type(error)(
        f"{error}. The request asked for tool_choice='required', which some servers do not "
        f"support (llama-cpp-python's answers HTTP 500): name the tool to call instead, e.g. "
        f"ModelSettings(tool_choice={first!r}), or make the model with "
        "OpenAIModel(tool_choices=ToolChoices(required=False)), which does so for an agent "
        "with one tool",
        status=error.status,
        events=error.events,
    )


def _apply_settings(
    body: dict[str, Any],
    settings: ModelSettings,
    request: ModelRequest,
    max_tokens_param: str,
    choices: ToolChoices,
) -> None:
    """Chat Completions' names for `ModelSettings` (raises `UserError` before any request)."""
    for name in ("temperature", "top_p", "seed"):
        value = getattr(settings, name)
        if value is not None:
            body[name] = value
    if settings.max_tokens is not None:
        body[max_tokens_param] = settings.max_tokens
    if settings.stop is not None:
        body["stop"] = list(settings.stop)
    choice = settings.tool_choice
    if choice is not None:
        if not request.tools:  # the API refuses tool_choice without tools
            if choice not in ("auto", "none"):
                raise unsupported(
                    "Chat Completions", "tool_choice", choice, f"{request.agent} has no tools"
                )
        elif choice == "required":
            body["tool_choice"] = _required(request, choices)
        elif choice in TOOL_CHOICES:
            body["tool_choice"] = choice
        else:
            _check_tool_name(choice, request, "Chat Completions")
            body["tool_choice"] = _forced(choice)
    if settings.parallel_tool_calls is not None and request.tools:
        body["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.extra:  # the client sends extra_body's fields in the request's JSON as they are
        body["extra_body"] = dict(settings.extra)


def _check_tool_name(choice: str, request: ModelRequest, provider: str) -> None:
    names = [t.name for t in request.tools]
    if choice not in names:
        raise unsupported(
            provider,
            "tool_choice",
            choice,
            f"{request.agent} has no tool of that name (its tools: {', '.join(names)}; "
            f"or one of {', '.join(TOOL_CHOICES)})",
        )


_STOP: dict[str, StopReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "error",
}


class MalformedReply(ValueError):
    """The server's 200 answer is not a chat completion agentnb can read."""


def response_from_wire(completion: Any) -> ModelResponse:
    """A `ModelResponse` from a parsed ``ChatCompletion`` (raises `MalformedReply`)."""
    choices = getattr(completion, "choices", None)
    if not choices:
        raise MalformedReply("it has no choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise MalformedReply("its first choice has no message")
    calls = []
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        if function is None or not getattr(function, "name", None):
            raise MalformedReply(f"a tool call has no function name: {call!r}"[:200])
        calls.append(ToolCall(function.name, function.arguments or "{}", call.id or ""))
    text = message.content
    events: list[dict[str, Any]] = []
    refusal = getattr(message, "refusal", None)
    if text is None and refusal:
        text = refusal
        events.append({"event": "refusal"})
    reason = choices[0].finish_reason
    stop = "tool_calls" if calls else _STOP.get(str(reason), "stop")
    usage = getattr(completion, "usage", None)
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=usage_from_wire(usage),
        stop_reason=stop,
        model=getattr(completion, "model", None),
        events=events,
    )


def usage_from_wire(usage: Any) -> Usage:
    """`Usage` from Chat Completions' ``usage`` (cached and reasoning details when reported)."""
    prompt = getattr(usage, "prompt_tokens_details", None)
    completion = getattr(usage, "completion_tokens_details", None)
    return Usage(
        token_count(getattr(usage, "prompt_tokens", None)),
        token_count(getattr(usage, "completion_tokens", None)),
        1,
        token_count(getattr(prompt, "cached_tokens", None)),
        None,
        token_count(getattr(completion, "reasoning_tokens", None)),
    )
