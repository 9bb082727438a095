"""What openai-agents hands its model, in agentnb's terms (see docs/characters.md).

The SDK sends a model the system instructions, a list of input items in the OpenAI Responses
format, its tools and handoffs and an output schema. agentnb measures the same call as an
agentnb `ModelRequest`: the instructions are the system prompt; a user (or system/developer)
message is a user message; an assistant message and the ``function_call`` items that follow it
in one response are one assistant message with tool calls; a ``function_call_output`` is a tool
message; any other item (reasoning, a hosted tool's call) is assistant text holding the item's
canonical JSON. Tools and handoffs are tool specs (a handoff is the ``transfer_to_...`` tool
the model sees), and the output schema is the output schema.

The history only grows between two calls of one agent, so an `ItemHistory` converts only the
items appended since its last call and keeps the same `Message` objects for the rest: agentnb's
per-message caches and `HistoryTally` then measure each message once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..models.types import Message, ModelResponse, OutputSchema, ToolCall, ToolSpec, Usage
from ..trace.sizes import dumps


def as_dict(item: Any) -> dict[str, Any]:
    """An input or output item as a plain dict (the SDK passes dicts; pydantic items are dumped)."""
    if isinstance(item, dict):
        return item
    dumped = item.model_dump(exclude_unset=True, mode="json")
    return dumped if isinstance(dumped, dict) else {"value": dumped}


def _content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    parts = []
    for part in content:
        part = as_dict(part)
        text = part.get("text")
        parts.append(text if isinstance(text, str) else dumps(part))
    return "".join(parts)


_USER_ROLES = ("user", "system", "developer")


def _article_component(item: dict[str, Any]) -> str:
    kind, role = item.get("type"), item.get("role")
    if kind == "function_call":
        return "tool_args"
    if kind == "function_call_output":
        return "tool_results"
    return "user" if role in _USER_ROLES else "assistant"


@dataclass
class ItemHistory:
    """One agent's input items converted once each, as messages and as the article's lengths."""

    count: int = 0
    first: Any = None
    last: Any = None
    messages: list[Message] = field(default_factory=list)
    article: list[tuple[str, int]] = field(default_factory=list)
    """``(component, len(json.dumps(item)))`` per item, for ``count="article"``."""

    def update(self, items: list[Any], article: bool) -> None:
        """Convert what was appended to ``items`` since the last call (everything if it changed)."""
        n = self.count
        if not (n and len(items) >= n and items[0] == self.first and items[n - 1] == self.last):
            n = 0
            self.messages, self.article = [], []
        batch = len(self.messages)
        for item in items[n:]:
            d = as_dict(item)
            if article:
                self.article.append((_article_component(d), len(json.dumps(d))))
            self._append(d, batch)
        self.count = len(items)
        self.first = items[0] if items else None
        self.last = items[-1] if items else None

    def _append(self, d: dict[str, Any], batch: int) -> None:
        kind, role, messages = d.get("type"), d.get("role"), self.messages
        if kind == "function_call":
            call = ToolCall(d.get("name") or "", d.get("arguments") or "", d.get("call_id") or "")
            last = messages[-1] if len(messages) > batch else None
            if last is not None and last.role == "assistant":  # the same response's text
                messages[-1] = Message("assistant", last.content, (*last.tool_calls, call))
            else:
                messages.append(Message("assistant", None, (call,)))
        elif kind == "function_call_output":
            output = d.get("output")
            text = output if isinstance(output, str) else _content_text(output) or ""
            messages.append(Message("tool", text, tool_call_id=d.get("call_id")))
        elif kind in (None, "message") and role in _USER_ROLES:
            messages.append(Message("user", _content_text(d.get("content"))))
        elif kind in (None, "message") and role == "assistant":
            messages.append(Message("assistant", _content_text(d.get("content"))))
        else:
            messages.append(Message("assistant", dumps(d)))

    def article_sizes(self, system: str | None, tools: list[Any]) -> dict[str, int]:
        """The reference article's rule, by component (each item counted whole)."""
        sizes = dict.fromkeys(("user", "assistant", "tool_args", "tool_results"), 0)
        for component, length in self.article:
            sizes[component] += length
        n = len(self.article)
        specs = [(t.name, t.description, t.params_json_schema) for t in tools if _is_function(t)]
        out = {"system": len(system or ""), "tools": len(json.dumps(specs)), **sizes}
        out["framing"] = 2 + (2 * (n - 1) if n else 0)  # the list's brackets and ", "
        out["total"] = sum(out.values())
        return out


def as_input_items(input: Any) -> list[Any]:
    """The SDK's input as a list of items (a text input is one user message)."""
    if isinstance(input, str):
        return [{"content": input, "role": "user"}]
    return input if isinstance(input, list) else list(input)


def _is_function(tool: Any) -> bool:
    return hasattr(tool, "params_json_schema") and hasattr(tool, "description")


def tool_specs(tools: list[Any], handoffs: list[Any], cache: dict[int, Any]) -> list[ToolSpec]:
    """Tool specs for the SDK's tools and handoffs, one object per tool kept in ``cache``."""
    specs = []
    for tool in (*tools, *handoffs):
        hit = cache.get(id(tool))
        if hit is None or hit[0] is not tool:
            if hasattr(tool, "tool_name"):  # a Handoff: the model sees transfer_to_<agent>
                spec = ToolSpec(tool.tool_name, tool.tool_description, tool.input_json_schema)
            elif _is_function(tool):
                spec = ToolSpec(tool.name, tool.description, tool.params_json_schema)
            else:  # a hosted tool: its name is all the model is told in the request
                spec = ToolSpec(getattr(tool, "name", type(tool).__name__), "", {})
            hit = cache[id(tool)] = (tool, spec)
        specs.append(hit[1])
    return specs


def output_schema(schema: Any) -> OutputSchema | None:
    """The SDK's output schema as agentnb's (None for plain text)."""
    if schema is None or schema.is_plain_text():
        return None
    return OutputSchema(schema.name(), schema.json_schema())


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def response(output: list[Any], usage: Any) -> ModelResponse:
    """The SDK's model response as agentnb's: text, tool calls, provider usage."""
    texts, calls = [], []
    for item in output:  # pydantic output items, read in place (dumping each one is slow)
        kind = _field(item, "type")
        if kind == "function_call":
            name, arguments = _field(item, "name") or "", _field(item, "arguments") or ""
            calls.append(ToolCall(name, arguments, _field(item, "call_id") or ""))
        elif kind == "message":
            parts = _field(item, "content") or ()
            texts.append("".join(t for p in parts if isinstance(t := _field(p, "text"), str)))
    return ModelResponse(
        "".join(texts) if texts else None,
        calls,
        provider_usage(usage),
        "tool_calls" if calls else "stop",
    )


def provider_usage(usage: Any) -> Usage:
    """The SDK's usage; an empty one (no requests, no tokens: a fake model's) is "not reported"."""
    if usage is None:
        return Usage()
    tokens_in, tokens_out = getattr(usage, "input_tokens", 0), getattr(usage, "output_tokens", 0)
    if not (getattr(usage, "requests", 0) or tokens_in or tokens_out):
        return Usage()
    details = getattr(usage, "input_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    written = getattr(details, "cache_write_tokens", None)
    reasoning = getattr(getattr(usage, "output_tokens_details", None), "reasoning_tokens", None)
    return Usage(tokens_in, tokens_out, 1, cached, written, reasoning)
