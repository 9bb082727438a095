"""`Transfer`: the signal that hands the run over to another agent (see `handoffs`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...models.types import Message

if TYPE_CHECKING:
    from .protocols import AgentLike


@dataclass
class Transfer:
    """Returned by a handoff tool or a route: the run goes on with ``target`` on ``messages``."""

    target: AgentLike
    messages: list[Message]
    note: str = ""
    """The tool result the source agent's history records for the transfer call."""
    routing: str = "llm"
    """``"llm"`` (a transfer tool the model called) or ``"code"`` (a `HandoffRoute`)."""
