"""What a tool receives about its call when it asks for it (a parameter annotated
``ToolCallContext``): the run, its span in the trace, the calling agent, and a way to run
another agent as a child of the run (`ToolCallContext.delegate`: ``run`` already names the
`RunContext`, read as ``ctx.run.deps`` by every tool)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...models.types import Message
    from ...trace.spans import Span
    from ..agents.agent import Agent
    from ..loop.context import RunContext
    from ..loop.result import RunResult
    from ..loop.state import AgentRun


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

    async def delegate(
        self,
        agent: Agent,
        input: str | list[Message],
        *,
        max_turns: int | None = None,
        timeout: float | None = None,
    ) -> RunResult:
        """Run ``agent`` as a child of this run (from an async tool): its calls join this run's
        trace and tables under ``<caller path>/<agent>``, its usage adds to the run's, and the
        run's limits (model calls, tokens, timeout, depth) cover it. Returns its `RunResult`
        (``ok=False`` when it failed); see `agentnb.runtime.tools.delegation`."""
        from .delegation import check_parent, run_child

        check_parent(self, {}, "ctx.delegate")
        return await run_child(agent, input, self, max_turns=max_turns, timeout=timeout)
