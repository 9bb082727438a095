"""Provider-neutral types: what a model is sent and what it answers.

They are plain slotted dataclasses rather than pydantic models because the run loop creates
several per model call and framework overhead is a measured target. Adapters (OpenAI, Anthropic,
recordings) convert these to and from a wire format; nothing above the adapters knows a provider.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import UserError

if TYPE_CHECKING:
    from .settings import ModelSettings

Role = Literal["user", "assistant", "tool"]
_ROLES = frozenset(("user", "assistant", "tool"))


@dataclass(slots=True)
class ToolCall:
    """One call the model asked for. ``arguments`` is the raw JSON text the model generated."""

    name: str
    arguments: str = "{}"
    id: str = ""
    """Empty when the model did not give one; the runner then assigns ``call_<turn>_<index>``."""

    def parsed(self) -> Any:
        """The arguments decoded from JSON (raises ``json.JSONDecodeError`` on bad JSON)."""
        return json.loads(self.arguments) if self.arguments else {}


@dataclass(slots=True)
class Message:
    """One entry of a conversation history, in the shape every chat API shares.

    Messages are treated as immutable once appended to a history: the trace caches each
    message's size on it, so a long history is measured once, not on every turn.
    """

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    """For assistant messages: the tool calls of that turn."""
    tool_call_id: str | None = None
    """For tool messages: which call this is the result of."""
    name: str | None = None
    """For tool messages: the tool's name."""
    generated: bool = field(default=False, compare=False)
    """True for a message agentnb wrote into the history in the user's role (the re-ask after
    an answer that did not fit the output type): not the user's own words. Not sent."""
    items: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    """For assistant messages: what the provider did in that turn beside its text and tool
    calls (reasoning items, hosted-tool calls: the Responses API's ``reasoning`` and
    ``hosted_tool`` events), kept for the record and for `to_json`. Not sent."""
    size_cache: Any = field(default=None, init=False, repr=False, compare=False)
    """The trace's measured size of this message (`agentnb.trace.sizes.message_size`).

    Caches are not init fields, so that ``dataclasses.replace(message, content=...)`` makes a
    message measured afresh rather than one carrying the old message's size."""
    tokens_cache: Any = field(default=None, init=False, repr=False, compare=False)
    """The trace's token count of this message (`agentnb.trace.tokens`), with its tokenizer."""

    def __post_init__(self) -> None:
        if not isinstance(self.role, str) or self.role not in _ROLES:  # not a KeyError mid-run
            raise UserError(
                f"Message(role=...) must be 'user', 'assistant' or 'tool', got {self.role!r}"
            )

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", text)

    @classmethod
    def assistant(
        cls,
        text: str | None,
        tool_calls: tuple[ToolCall, ...] = (),
        items: tuple[dict[str, Any], ...] = (),
    ) -> Message:
        return cls("assistant", text, tuple(tool_calls), items=tuple(items))

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON-able dict; `Message.from_json` reads it back unchanged (tool
        calls, tool results, reasoning and hosted-tool items, the ``generated`` mark)."""
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [
                {"name": c.name, "arguments": c.arguments, "id": c.id} for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            data["name"] = self.name
        if self.generated:
            data["generated"] = True
        if self.items:
            data["items"] = [dict(item) for item in self.items]
        return data

    @classmethod
    def from_json(cls, data: Any) -> Message:
        """A message from `to_json`'s dict (or its JSON text); a `UserError` naming what is
        wrong with anything else."""
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError as exc:
                raise UserError(f"Message.from_json: not JSON ({exc})") from None
        if not isinstance(data, dict) or "role" not in data:
            raise UserError(
                f"Message.from_json takes a dict from Message.to_json(), got {str(data)[:80]!r}"
            )
        known = {"role", "content", "tool_calls", "tool_call_id", "name", "generated", "items"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UserError(f"Message.from_json: unknown field(s) {', '.join(unknown)}")
        try:
            calls = tuple(
                ToolCall(c["name"], c.get("arguments", "{}"), c.get("id", ""))
                for c in data.get("tool_calls") or ()
            )
            items = tuple(dict(i) for i in data.get("items") or ())
        except (KeyError, TypeError, ValueError):
            raise UserError(
                "Message.from_json: tool_calls must be a list of {name, arguments, id} and "
                "items a list of dicts"
            ) from None
        return cls(
            data["role"],
            data.get("content"),
            calls,
            data.get("tool_call_id"),
            data.get("name"),
            generated=bool(data.get("generated", False)),
            items=items,
        )

    @classmethod
    def tool(cls, call: ToolCall, content: str) -> Message:
        return cls("tool", content, tool_call_id=call.id, name=call.name)


def messages_to_json(messages: list[Message]) -> list[dict[str, Any]]:
    """A history as a JSON-able list (`Message.to_json` of each)."""
    return [m.to_json() for m in messages]


def messages_from_json(data: Any) -> list[Message]:
    """A history from `messages_to_json`'s list (or its JSON text)."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise UserError(f"messages_from_json: not JSON ({exc})") from None
    if not isinstance(data, list):
        raise UserError(
            f"messages_from_json takes a list of message dicts, got {type(data).__name__}"
        )
    return [Message.from_json(d) for d in data]


@dataclass(slots=True)
class ToolSpec:
    """What a model is told about one tool: its name, description and JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]
    size_cache: int | None = field(default=None, init=False, repr=False, compare=False)
    """The spec's size in the canonical request (`agentnb.trace.sizes`): a spec is resent on
    every call, so it is measured once; kept on the spec, it goes when the spec goes."""

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


RESPONSE_FIELD = "response"
"""The field that holds an answer whose own schema is not an object (a number, a list, ...)
where a provider needs an object, as openai-agents and pydantic-ai name it."""


def wrapped_in_object(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as the one required field `RESPONSE_FIELD` of an object; ``$defs`` stay at
    the top, where references point."""
    inner = {k: v for k, v in schema.items() if k != "$defs"}
    outer: dict[str, Any] = {
        "type": "object",
        "properties": {RESPONSE_FIELD: inner},
        "required": [RESPONSE_FIELD],
    }
    if "$defs" in schema:
        outer["$defs"] = schema["$defs"]
    return outer


@dataclass(slots=True)
class OutputSchema:
    """A structured-output request: the final answer must be JSON matching ``schema``."""

    name: str
    schema: dict[str, Any]


@dataclass(slots=True)
class ModelRequest:
    """Everything one model call is sent."""

    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    output_schema: OutputSchema | None = None
    agent: str = ""
    """The name of the agent making the call: for error messages and recordings, not sent."""
    max_output_tokens: int | None = None
    settings: ModelSettings | None = None
    """Sampling and tool-choice settings (`ModelSettings`); None: the provider's defaults."""

    @property
    def last_user_text(self) -> str:
        """The newest user message's text ('' when there is none): handy in scripts."""
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content or ""
        return ""

    @property
    def tool_results(self) -> list[str]:
        """Every tool result in the history, in order."""
        return [m.content or "" for m in self.messages if m.role == "tool"]


def token_count(value: Any) -> int | None:
    """A token count as a provider reported it: a whole number of zero or more, else ``None``
    (not reported, or not a count: a gateway's ``"lots"``, a negative number, a bool)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


@dataclass(slots=True)
class Usage:
    """Tokens reported by a provider. ``None`` means "not reported", never zero.

    Adding two usages keeps ``None`` only where both sides are ``None``. The three detail
    fields are parts of the totals, as the providers report them: cached and cache-write
    tokens are part of ``input_tokens``, reasoning tokens part of ``output_tokens``.
    """

    input_tokens: int | None = None
    """Every input token of the request, cache reads and writes included."""
    output_tokens: int | None = None
    """Every generated token, reasoning included."""
    requests: int = 0
    cached_input_tokens: int | None = None
    """Input tokens served from the provider's prompt cache (OpenAI
    ``prompt_tokens_details.cached_tokens``, Anthropic ``cache_read_input_tokens``)."""
    cache_write_tokens: int | None = None
    """Input tokens written to the prompt cache (Anthropic ``cache_creation_input_tokens``)."""
    reasoning_tokens: int | None = None
    """Output tokens spent reasoning (OpenAI ``completion_tokens_details.reasoning_tokens``)."""

    def add(self, other: Usage, *, requests: int | None = None) -> None:
        """Add ``other`` to this usage in place; ``requests`` (when given) is counted instead
        of ``other.requests`` (the run loop adds a provider's usage as one request)."""
        self.input_tokens = _add(self.input_tokens, other.input_tokens)
        self.output_tokens = _add(self.output_tokens, other.output_tokens)
        self.requests += other.requests if requests is None else requests
        self.cached_input_tokens = _add(self.cached_input_tokens, other.cached_input_tokens)
        self.cache_write_tokens = _add(self.cache_write_tokens, other.cache_write_tokens)
        self.reasoning_tokens = _add(self.reasoning_tokens, other.reasoning_tokens)

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        total = dataclasses.replace(self)
        total.add(other)
        return total

    def __radd__(self, other: object) -> Usage:
        # ``sum(usages)`` starts from 0
        if other == 0:
            return self + Usage()
        return NotImplemented

    @property
    def total_tokens(self) -> int | None:
        return _add(self.input_tokens, self.output_tokens)


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


StopReason = Literal["stop", "tool_calls", "length", "error"]


@dataclass(slots=True)
class ModelResponse:
    """A model's answer: text, tool calls or both, with the provider's usage if it reported any."""

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    model: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    """What the adapter did on the way: retries, time waiting for a concurrency slot. Traced."""
