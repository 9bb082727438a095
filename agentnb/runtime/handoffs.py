"""Handoffs: control passes to another agent and does not come back.

`Transfer` is what the run loop acts on; `Handoff` builds the ``transfer_to_<name>`` tool an
LLM-routed agent is offered.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..models.types import Message
from .tools import Tool, ToolCallContext
from .transfer import Transfer

if TYPE_CHECKING:
    from .agent import Agent


HistoryFilter = Callable[[list[Message]], list[Message]]


@dataclass
class Handoff:
    """An LLM-routed handoff to ``target``: the source agent gets a ``transfer_to_<name>`` tool."""

    target: Agent
    description: str | None = None
    input_filter: HistoryFilter | None = None
    tool_name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.tool_name or "transfer_to_" + re.sub(
            r"[^a-z0-9_]+", "_", self.target.name.lower()
        ).strip("_")

    def forward(self, history: list[Message]) -> list[Message]:
        """The history the target starts from (the full history unless filtered)."""
        messages = [
            m for m in history if not (m.role == "assistant" and m.tool_calls and not m.content)
        ]
        messages = [m for m in messages if m.role != "tool"]
        return self.input_filter(messages) if self.input_filter else messages

    def tool(self) -> Tool:
        handoff = self

        async def transfer(ctx: ToolCallContext) -> Any:
            history = list(ctx.caller.messages) if ctx.caller is not None else []
            return Transfer(
                handoff.target, handoff.forward(history), f"Transferred to {handoff.target.name}."
            )

        description = self.description or f"Hand the conversation over to {self.target.name}" + (
            f": {self.target.description}" if self.target.description else "."
        )
        return Tool(
            self.name,
            description,
            {"type": "object", "properties": {}},
            transfer,
            None,
            None,
            "ctx",
        )
