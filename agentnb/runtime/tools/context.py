"""What a tool receives about its call when it asks for it (a parameter annotated
``ToolCallContext``): the run, its span in the trace, the calling agent, and a way to run
another agent as a child of the run (`ToolCallContext.delegate`: ``run`` already names the
`RunContext`, read as ``ctx.run.deps`` by every tool)."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ...errors import UserError

if TYPE_CHECKING:
    from ...models.types import Message
    from ...trace.spans import Span
    from ..agents.agent import Agent
    from ..data.context import RunContext
    from ..data.result import RunResult
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

    children: ChildRuns | None = None
    """How this run starts child runs: the engine's `agentnb.runtime.engine.delegation.run_child`,
    given by the run loop that made this context (this floor does not import the engine)."""

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
        (``ok=False`` when it failed); see `agentnb.runtime.engine.delegation`."""
        if self.children is None:
            raise UserError(
                "ctx.delegate(...) needs the ToolCallContext a run hands its tool; this one was "
                "made by hand. Declare a tool parameter annotated ToolCallContext instead."
            )
        return await self.children(self, agent, input, max_turns=max_turns, timeout=timeout)


class ChildRuns(Protocol):
    """What starts a child run of a tool call (the engine supplies it)."""

    def __call__(
        self,
        parent: ToolCallContext,
        agent: Agent,
        input: str | list[Message],
        *,
        max_turns: int | None = None,
        timeout: float | None = None,
    ) -> Awaitable[RunResult]: ...
