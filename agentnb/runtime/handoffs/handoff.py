"""Handoffs: control passes to another agent and does not come back.

An agent with ``handoffs=[...]`` is offered one ``transfer_to_<name>`` tool per target. When the
model calls one, the tool returns a `Transfer` and the run loop goes on with the target, on the
history the `Handoff` forwards. What is forwarded is the cost of a handoff (the target rereads it
on every turn), so it is chosen in three steps, each visible in the trace (``handoff_context``):

1. the `HandoffConfig` strategy: ``full`` history, the ``last_n`` messages (plus the user's
   newest message when the window starts after it), or ``intent_only`` (the user's message,
   plus the typed intent when the handoff has an ``input_type``);
2. the ``input_filter`` (see `agentnb.filters`);
3. the config's token ``budget``: the oldest messages are dropped until the rest fits.

Control that passes back to an agent that already held it in this run is a cycle: the transfer
is refused with a text the model can act on, as the depth and path guards do for agents as tools.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ... import checks
from ...errors import CallbackRaised, UserError
from ...models.types import Message
from ...trace.sizes import message_size
from ...trace.tokens import message_tokens, preload, tokenizer
from ..data.callbacks import check_callable
from ..data.events import being_cancelled
from ..data.outcome import ToolOutcome
from ..data.transfer import Transfer
from ..tools.context import ToolCallContext
from ..tools.enabled import check_is_enabled
from ..tools.function import BaseTool, validate_arguments
from ..tools.schema import clean_schema
from .filters import HistoryFilter, last_messages

if TYPE_CHECKING:
    from ..agents.agent import Agent
    from ..data.context import RunContext
    from ..data.state import AgentRun

Strategy = Literal["full", "last_n", "intent_only"]
STRATEGIES: tuple[str, ...] = ("full", "last_n", "intent_only")
DEFAULT_WINDOW = 10

# The run loop's re-ask after an answer that failed the output type is a user message too;
# it is never "the user's message" a target should receive.


@dataclass(frozen=True)
class HandoffConfig:
    """How much of the source agent's conversation a handoff forwards to its target."""

    strategy: Strategy = "full"
    """``full``: the whole history (tool calls included); ``last_n``: the last ``window``
    messages; ``intent_only``: no history, only the user's message and the typed intent."""
    window: int | None = None
    """Messages kept by ``last_n`` (default 10). A window counts messages, not meaning: when it
    starts after the user's newest message (the source made several tool calls since), that
    message is put back in front of the window, so the target still reads the request; the
    target then receives ``window + 1`` messages."""
    budget: int | None = None
    """Tokens the forwarded messages may take, applied last. Counted with the tokenizer when one
    is available, otherwise estimated as characters/4 (the trace event says which)."""

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise UserError(
                f"HandoffConfig(strategy={self.strategy!r}) is not a strategy: use one of {', '.join(STRATEGIES)}."
            )
        if self.window is not None:
            if self.strategy != "last_n":
                raise UserError(
                    f"HandoffConfig(window=...) only applies to strategy='last_n', not {self.strategy!r}."
                )
            checks.positive_int(self.window, "HandoffConfig(window=...)")
        checks.positive_int(self.budget, "HandoffConfig(budget=...)")
        if self.budget is not None:  # counted during runs: load the tokenizer now, not then
            preload()


@dataclass
class Forwarded:
    """What a handoff forwards, and how it got there (for the trace)."""

    messages: list[Message]
    available: int
    """Messages in the source's history when it transferred."""
    tokens: int | None = None
    """The forwarded messages' tokens, when a budget was checked."""
    tokens_method: str | None = None


@dataclass(eq=False)
class Handoff:
    """An LLM-routed handoff to ``target``: the source agent gets a ``transfer_to_<name>`` tool.

    ``input_type`` (a pydantic model) makes the transfer call carry a typed intent, validated
    before control passes; ``config`` and ``input_filter`` decide what the target receives.
    """

    target: Agent
    description: str | None = None
    input_type: type[BaseModel] | None = None
    config: HandoffConfig = HandoffConfig()
    input_filter: HistoryFilter | None = None
    tool_name: str | None = None
    on_handoff: Callable[..., Any] | None = None
    """Called when control passes (sync or async): ``fn(ctx, input)`` with the validated
    ``input_type`` object, or ``fn(ctx)`` without one. What it raises ends the run."""
    is_enabled: Any = True
    """``True``, ``False`` or ``fn(ctx, agent) -> bool``, asked each time the source agent
    starts: a handoff not enabled is not offered."""

    def __post_init__(self) -> None:
        from ..agents.agent import Agent

        if not isinstance(self.target, Agent):
            raise UserError(f"Handoff(target) must be an Agent, got {type(self.target).__name__}")
        if self.input_type is not None and not (
            isinstance(self.input_type, type) and issubclass(self.input_type, BaseModel)
        ):
            raise UserError("Handoff(input_type=...) must be a pydantic model class")
        if not isinstance(self.config, HandoffConfig):
            raise UserError("Handoff(config=...) must be agentnb.HandoffConfig(...)")
        if self.input_filter is not None and not callable(self.input_filter):
            raise UserError(
                "Handoff(input_filter=...) must be a function list[Message] -> list[Message]"
            )
        if self.input_filter is not None:
            check_callable(self.input_filter, "Handoff(input_filter=...)", ("messages",))
        check_is_enabled(self.is_enabled, "Handoff")
        if self.on_handoff is not None:
            form = ("ctx", "input") if self.input_type is not None else ("ctx",)
            check_callable(self.on_handoff, "Handoff(on_handoff=...)", form)
        checks.text(self.tool_name, "Handoff(tool_name=...)", optional=True)
        checks.text(self.description, "Handoff(description=...)", optional=True)
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.name):
            raise UserError(
                f"Handoff tool name {self.name!r} is not usable: pass tool_name= with letters, digits, _ or -."
            )

    @property
    def name(self) -> str:
        return self.tool_name or "transfer_to_" + re.sub(
            r"[^a-z0-9_]+", "_", self.target.name.lower()
        ).strip("_")

    @property
    def note(self) -> str:
        """The transfer call's result, as the source's history records it."""
        return f"Transferred to {self.target.name}."

    def forward(
        self,
        history: list[Message],
        *,
        call_id: str | None = None,
        intent: BaseModel | None = None,
        source: str = "the previous agent",
    ) -> list[Message]:
        """The messages the target starts from, given the source's history at the transfer."""
        return self._forward(history, call_id=call_id, intent=intent, source=source).messages

    def _forward(
        self,
        history: list[Message],
        *,
        call_id: str | None,
        intent: BaseModel | None,
        source: str,
    ) -> Forwarded:
        settled = _settle(history, call_id, self.note)
        config = self.config
        if config.strategy == "full":
            messages = settled
        elif config.strategy == "last_n":
            messages = last_with_request(settled, config.window or DEFAULT_WINDOW)
        else:
            messages = [Message.user(intent_message(user_message(settled), intent, source))]
        if self.input_filter is not None:
            messages = list(self.input_filter(list(messages)))
        forwarded = Forwarded(messages, len(settled))
        if config.budget is not None:
            forwarded.messages, forwarded.tokens, forwarded.tokens_method = fit_budget(
                messages, config.budget
            )
        if (
            not forwarded.messages
        ):  # a filter removed everything: the target still needs the request
            forwarded.messages = [
                Message.user(intent_message(user_message(settled), intent, source))
            ]
        return forwarded

    def tool(self) -> HandoffTool:
        """The ``transfer_to_<name>`` tool the source agent is offered."""
        target = self.target
        description = self.description or f"Hand the conversation over to {target.name}" + (
            f": {target.description}" if target.description else "."
        )
        parameters = (
            clean_schema(self.input_type.model_json_schema())
            if self.input_type is not None
            else {"type": "object", "properties": {}}
        )
        return HandoffTool(self.name, description, parameters, self, is_enabled=self.is_enabled)

    def __repr__(self) -> str:
        extra = "" if self.config == HandoffConfig() else f", config={self.config}"
        return f"Handoff({self.name!r} -> {self.target.name!r}{extra})"


@dataclass(eq=False)
class HandoffTool(BaseTool):
    """A ``transfer_to_<name>`` tool: validates the intent, guards cycles, returns a `Transfer`."""

    handoff: Handoff

    async def invoke(self, arguments: dict[str, Any], tcx: ToolCallContext) -> ToolOutcome:
        handoff = self.handoff
        ctx: RunContext = tcx.run
        caller: AgentRun = tcx.caller
        intent = None
        if handoff.input_type is not None:
            intent = validate_arguments(handoff.input_type, self.name, arguments)
            if isinstance(intent, ToolOutcome):
                return intent
        holders = control_holders(ctx, caller)
        target = handoff.target
        if target.name in holders:
            chain = " -> ".join(holders)
            ctx.trace.log(
                "guard",
                depth=caller.depth,
                path=caller.path,
                agent=caller.agent.name,
                target=target.name,
                tool=self.name,
                reason="handoff cycle",
            )
            return ToolOutcome.error(
                f"{target.name} already had control in this run ({chain}); handing back "
                "would make a cycle. Answer with what you have and say what is missing.",
                status="refused",
            )
        if handoff.on_handoff is not None:
            await _call_on_handoff(handoff, ctx, intent)
        forwarded = handoff._forward(
            list(caller.messages), call_id=tcx.call_id, intent=intent, source=caller.agent.name
        )
        ctx.trace.log(
            "handoff_context",
            depth=caller.depth,
            path=caller.path,
            agent=caller.agent.name,
            target=target.name,
            strategy=handoff.config.strategy,
            available=forwarded.available,
            forwarded=len(forwarded.messages),
            chars=sum(message_size(m).total for m in forwarded.messages),
            tokens=forwarded.tokens,
            tokens_method=forwarded.tokens_method,
            intent=intent.model_dump(mode="json") if intent is not None else None,
        )
        return ToolOutcome.handed_off(Transfer(target, forwarded.messages, handoff.note))

    def __repr__(self) -> str:
        return f"HandoffTool({self.name!r})"


async def _call_on_handoff(handoff: Handoff, ctx: RunContext, intent: BaseModel | None) -> None:
    """The handoff's ``on_handoff``; what it raises ends the run (as a hook's exception does)."""
    fn = handoff.on_handoff
    assert fn is not None
    try:
        value = fn(ctx, intent) if handoff.input_type is not None else fn(ctx)
        if inspect.isawaitable(value):
            await value
    except asyncio.CancelledError:
        if being_cancelled():
            raise
        raise CallbackRaised(asyncio.CancelledError()) from None
    except BaseException as exc:  # user code: any exception ends the run, as its error
        raise CallbackRaised(exc) from None


def _settle(history: list[Message], call_id: str | None, note: str) -> list[Message]:
    """The history made whole: the transfer turn keeps only the transfer call, with its result.

    When the transfer tool runs, the source's last message is the assistant turn asking for it,
    and no result of that turn's calls is in the history yet; a tool call without its result
    is rejected by chat APIs, so the other calls of that turn are dropped.
    """
    messages = list(history)
    if messages and messages[-1].role == "assistant" and messages[-1].tool_calls:
        last = messages.pop()
        call = next((c for c in last.tool_calls if c.id == call_id), None)
        if call is not None:
            messages.append(Message.assistant(last.content, (call,)))
            messages.append(Message.tool(call, note))
        elif last.content:
            messages.append(Message.assistant(last.content))
    return messages


def last_with_request(messages: list[Message], n: int) -> list[Message]:
    """The last ``n`` messages (see `last_messages`), preceded by the user's newest message
    when the window cut it off: without it the target knows what was looked up, not what the
    user asked for."""
    kept = last_messages(messages, n)
    start = len(messages) - len(kept)
    for i in range(len(messages) - 1, -1, -1):
        if _is_users(messages[i]):
            return [messages[i], *kept] if i < start else kept
    return kept


def _is_users(message: Message) -> bool:
    """A message the user wrote (the run loop's re-ask after a bad answer is not one)."""
    return message.role == "user" and not message.generated


def user_message(messages: list[Message]) -> str:
    """The newest message the user wrote ('' if none): what a target must not miss."""
    for message in reversed(messages):
        if _is_users(message):
            return message.content or ""
    return ""


def intent_message(user_text: str, intent: BaseModel | None, source: str) -> str:
    """The user's message followed by the intent as JSON (code routes and ``intent_only``)."""
    if intent is None:
        return user_text
    return f"{user_text}\n\n{source} passed this on as {type(intent).__name__}: {intent.model_dump_json()}"


def fit_budget(messages: list[Message], budget: int) -> tuple[list[Message], int, str]:
    """Drop the oldest messages until the rest fit ``budget`` tokens; cut the last one if alone.

    Returns the messages, their tokens and how the tokens were counted.
    """
    count, method = tokenizer()

    def size(m: Message) -> int:
        if count is not None:
            return message_tokens(m, count, method)
        return math.ceil(message_size(m).total / 4)

    how = method if count is not None else "estimate: characters/4"
    kept = list(messages)
    total = sum(size(m) for m in kept)
    while len(kept) > 1 and total > budget:
        total -= size(kept.pop(0))
        while len(kept) > 1 and kept[0].role == "tool":
            total -= size(kept.pop(0))
    if total > budget and len(kept) == 1 and kept[0].content and not kept[0].tool_calls:
        only = kept[0]
        text = only.content or ""
        keep = max(int(len(text) * budget / total) - 60, 0)
        cut = f"{text[:keep]}\n[cut to fit a handoff budget of {budget} tokens]"
        kept = [Message(only.role, cut, tool_call_id=only.tool_call_id, name=only.name)]
        total = size(kept[0])
    return kept, total, how


def control_holders(ctx: RunContext, state: AgentRun) -> list[str]:
    """Names of the agents that have held control of ``state`` so far, in order.

    Every agent that takes over opens an agent span next to the previous one (same parent,
    same path), so the trace already records the succession.
    """
    parent = state.span.parent_id
    return [
        s.agent
        for s in ctx.trace.spans
        if s.kind == "agent" and s.parent_id == parent and s.path == state.path
    ]


__all__ = [
    "Forwarded",
    "Handoff",
    "HandoffConfig",
    "HandoffTool",
    "Strategy",
    "control_holders",
    "fit_budget",
    "intent_message",
    "last_with_request",
    "user_message",
]
