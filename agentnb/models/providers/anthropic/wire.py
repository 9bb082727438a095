"""agentnb's types to and from the Anthropic Messages API.

The Messages API differs from Chat Completions in four ways that matter here:

- the system prompt is a top-level ``system`` field, not a message;
- an assistant turn is a list of content blocks: ``text`` and ``tool_use`` (whose ``input`` is
  a JSON object, not a string);
- tool results are ``tool_result`` blocks inside a *user* message, and the results of one
  turn's parallel calls must travel together in one user message (so consecutive tool
  messages, and any user text right after them, are merged into one user turn);
- structured output: every model accepts a tool it is made to call (``"tool"``, the default),
  recent ones a JSON schema (``output_config``, ``"native"``), any an instruction (``"prompt"``).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from ...settings import ModelSettings, unsupported
from ...types import (
    RESPONSE_FIELD,
    Message,
    ModelRequest,
    ModelResponse,
    OutputSchema,
    StopReason,
    ToolCall,
    Usage,
    token_count,
    wrapped_in_object,
)
from ..openai.wire import _check_tool_name, schema_instruction

StructuredMode = Literal["tool", "native", "prompt"]
CacheMode = Literal["auto"] | None

EPHEMERAL = {"type": "ephemeral"}
"""The ``cache_control`` of a prompt-cache breakpoint (the default 5-minute cache)."""

OUTPUT_TOOL = "final_answer"
"""The tool a structured answer is given through in ``"tool"`` mode."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _tool_input(arguments: str) -> dict[str, Any]:
    # The API wants an object. Arguments that are not one only come from histories made
    # elsewhere (a script, another provider); keep them visible rather than drop them.
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_raw_arguments": arguments}


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    """A message as (role, content blocks) of the Messages API."""
    if message.role == "tool":
        result = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": message.content or "",
        }
        return "user", [result]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": _tool_input(call.arguments),
            }
        )
    if not blocks:
        blocks.append({"type": "text", "text": message.content or ""})
    return message.role, blocks


def messages_to_wire(messages: list[Message]) -> list[dict[str, Any]]:
    """The history as alternating user / assistant turns; consecutive same-role messages
    (parallel tool results, a note after them) become one turn. A user turn that is a single
    text block is sent as a plain string."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role, blocks = _blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        content = turn["content"]
        if turn["role"] == "user" and len(content) == 1 and content[0]["type"] == "text":
            turn["content"] = content[0]["text"]
    return turns


def _object_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """A schema usable as a tool's input (an object), and whether it had to be wrapped."""
    if schema.get("type") == "object":
        return schema, False
    return wrapped_in_object(schema), True


def output_tool_name(request: ModelRequest) -> str:
    """The output tool's name, kept clear of the agent's own tools."""
    name = OUTPUT_TOOL
    taken = {t.name for t in request.tools}
    while name in taken:
        name += "_"
    return name


def request_to_wire(
    model: str,
    request: ModelRequest,
    mode: StructuredMode,
    max_tokens: int,
    cache: CacheMode = None,
) -> dict[str, Any]:
    """The keyword arguments of ``messages.create`` for one request.

    ``cache="auto"`` marks prompt-cache breakpoints (`mark_breakpoints`).
    """
    system = request.system
    schema: OutputSchema | None = request.output_schema
    if schema is not None and mode == "prompt":
        system = (
            f"{system}\n\n{schema_instruction(schema)}" if system else schema_instruction(schema)
        )
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_output_tokens or max_tokens,
        "messages": messages_to_wire(request.messages),
    }
    if system:
        body["system"] = system
    tools = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters}
        for t in request.tools
    ]
    if schema is not None and mode == "tool":
        name = output_tool_name(request)
        tools.append(
            {
                "name": name,
                "description": f"Give your final answer ({schema.name}) by calling this tool; "
                "call it once, when you are done.",
                "input_schema": _object_schema(schema.schema)[0],
            }
        )
        # With other tools the model may still use them first; without, it must answer now.
        body["tool_choice"] = {"type": "any"} if request.tools else {"type": "tool", "name": name}
    elif schema is not None and mode == "native":
        body["output_config"] = {"format": {"type": "json_schema", "schema": schema.schema}}
    if tools:
        body["tools"] = tools
    if request.settings is not None:
        _apply_settings(body, request.settings, request, mode)
    if cache == "auto":
        mark_breakpoints(body)
    return body


def _apply_settings(
    body: dict[str, Any], settings: ModelSettings, request: ModelRequest, mode: StructuredMode
) -> None:
    """The Messages API's names for `ModelSettings` (raises `UserError` before any request)."""
    if settings.seed is not None:
        raise unsupported("The Anthropic Messages API", "seed", settings.seed, "it has no seed")
    # The client's create() no longer takes sampling parameters as keywords (anthropic 2.x);
    # they travel in extra_body, which the client merges into the request's JSON as they are.
    sampling = {
        name: getattr(settings, name)
        for name in ("temperature", "top_p")
        if getattr(settings, name) is not None
    }
    if settings.max_tokens is not None:
        body["max_tokens"] = settings.max_tokens
    if settings.stop is not None:
        body["stop_sequences"] = list(settings.stop)
    choice = settings.tool_choice
    output_tool = request.output_schema is not None and mode == "tool"
    if choice is not None and (request.tools or output_tool):
        if choice == "none" and output_tool:
            raise unsupported(
                "Anthropic's structured output in 'tool' mode",
                "tool_choice",
                choice,
                "the answer is given through a tool; use AnthropicModel(structured='native')",
            )
        if choice == "auto":
            body["tool_choice"] = {"type": "auto"}
        elif choice == "required":
            body["tool_choice"] = {"type": "any"}
        elif choice == "none":
            body["tool_choice"] = {"type": "none"}
        else:
            _check_tool_name(choice, request, "The Anthropic Messages API")
            body["tool_choice"] = {"type": "tool", "name": choice}
    elif choice not in (None, "auto", "none"):
        raise unsupported(
            "The Anthropic Messages API", "tool_choice", choice, f"{request.agent} has no tools"
        )
    if settings.parallel_tool_calls is False and "tools" in body:
        body["tool_choice"] = {
            **body.get("tool_choice", {"type": "auto"}),
            "disable_parallel_tool_use": True,
        }
    if sampling or settings.extra:
        body["extra_body"] = {**sampling, **(settings.extra or {})}


def mark_breakpoints(body: dict[str, Any]) -> None:
    """Prompt-cache breakpoints where Anthropic's documentation puts them for an agent loop:
    after the tool specs, after the system prompt, and on the last block of the history, so
    each turn reads what the previous turn wrote and writes what it adds. The API caches the
    prefix in the order tools, system, messages; three of its four breakpoints are used."""
    tools = body.get("tools")
    if tools:
        tools[-1] = {**tools[-1], "cache_control": EPHEMERAL}
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": EPHEMERAL}]
    messages = body.get("messages")
    if messages:
        last = messages[-1]
        content = last["content"]
        if isinstance(content, str):  # the API reads a string as one text block
            content = [{"type": "text", "text": content}]
        last["content"] = [*content[:-1], {**content[-1], "cache_control": EPHEMERAL}]


_STOP: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "error",
}


class MalformedReply(ValueError):
    """The server's 200 answer is not a message agentnb can read."""


def response_from_wire(message: Any, request: ModelRequest, mode: StructuredMode) -> ModelResponse:
    """A `ModelResponse` from a parsed ``Message`` (raises `MalformedReply`).

    In ``"tool"`` mode a call of the output tool is the final answer: its input, as JSON
    text, becomes the response's text (other calls of the same turn are dropped, and an
    ``output_tool`` event says so).
    """
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise MalformedReply("it has no content list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use":
            if not getattr(block, "name", None):
                raise MalformedReply(f"a tool_use block has no name: {block!r}"[:200])
            calls.append(ToolCall(block.name, _dumps(block.input or {}), block.id or ""))
    text: str | None = "".join(texts) if texts else None
    events: list[dict[str, Any]] = []
    reason = str(getattr(message, "stop_reason", None))
    stop: StopReason = _STOP.get(reason, "stop")
    if reason in ("refusal", "pause_turn"):
        events.append({"event": reason})
    schema = request.output_schema
    if schema is not None and mode == "tool":
        name = output_tool_name(request)
        final = next((c for c in calls if c.name == name), None)
        if final is not None:
            value = json.loads(final.arguments)
            if _object_schema(schema.schema)[1] and isinstance(value, dict):
                value = value.get(RESPONSE_FIELD, value)
            events.append({"event": "output_tool", "dropped_calls": len(calls) - 1})
            text, calls, stop = _dumps(value), [], "stop"
    if calls:
        stop = "tool_calls"
    usage = getattr(message, "usage", None)
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=Usage(
            _input_tokens(usage),
            token_count(getattr(usage, "output_tokens", None)),
            1,
            token_count(getattr(usage, "cache_read_input_tokens", None)),
            token_count(getattr(usage, "cache_creation_input_tokens", None)),
        ),
        stop_reason=stop,
        model=getattr(message, "model", None),
        events=events,
    )


def _input_tokens(usage: Any) -> int | None:
    """Every input token the request was billed for: cache reads and writes are reported
    apart from ``input_tokens``, and leaving them out would understate what was sent."""
    reported = token_count(getattr(usage, "input_tokens", None))
    if reported is None:
        return None
    written = token_count(getattr(usage, "cache_creation_input_tokens", None)) or 0
    read = token_count(getattr(usage, "cache_read_input_tokens", None)) or 0
    return reported + written + read
