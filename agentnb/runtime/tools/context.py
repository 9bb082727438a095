"""What a tool receives about its call when it asks for it (a parameter annotated
``ToolCallContext``): the run, its span in the trace, and the calling agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...trace.spans import Span
    from ..data.context import RunContext
    from ..data.state import AgentRun


@dataclass(slots=True)
class ToolCallContext:
    """What a tool that asks for it (a parameter annotated ``ToolCallContext``) receives."""

    run: RunContext
    """The `RunContext` of the run: run id, depth, path, artifacts, ``deps``."""
    span: Span
    """The tool call's `Span` in the trace."""
    call_id: str
    caller: AgentRun
    """The calling agent's `AgentRun`: its history, depth and path."""
    arguments: str = ""
    """The model's arguments as it sent them (JSON text)."""
