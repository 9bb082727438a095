"""`Hooks`: code of yours called at each point of a run (agents, model calls, tools, handoffs).

Subclass `Hooks` and override the methods you need. ``run(..., hooks=MyHooks())`` sees every
agent of the run, sub-agents and handoff targets included; ``Agent(..., hooks=MyHooks())``
sees that agent only. Hooks are awaited in the run (run hooks first, then the agent's), so a
slow hook slows the run; a plain ``def`` hook runs in a worker thread, so one that blocks does
not stop the event loop, and the run's ``timeout`` still ends it on time. A hook that raises ends the run with ``ok=False`` and its exception
as ``RunResult.error``, the calls made so far kept in the trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import UserError
from .callbacks import check_hook_names

if TYPE_CHECKING:
    from ...models.types import ModelRequest, ModelResponse
    from .context import RunContext
    from .protocols import AgentLike


class Hooks:
    """Lifecycle hooks: every method does nothing until overridden (``async def``; a plain
    ``def`` works too). ``ctx`` is the run's `RunContext` (run id, deps, usage so far)."""

    async def on_agent_start(self, ctx: RunContext, agent: AgentLike) -> None:
        """An agent begins: the root, a sub-agent called as a tool, a handoff's target."""

    async def on_agent_end(self, ctx: RunContext, agent: AgentLike, output: Any) -> None:
        """An agent gave its final ``output`` (not called for one that handed off or failed)."""

    async def on_model_start(
        self, ctx: RunContext, agent: AgentLike, request: ModelRequest
    ) -> None:
        """``agent`` is about to send ``request`` to its model."""

    async def on_model_end(
        self, ctx: RunContext, agent: AgentLike, response: ModelResponse, call: dict[str, Any]
    ) -> None:
        """A model call answered. ``call`` is its row of ``RunResult.calls`` as a dict (sizes,
        tokens, usage, timings already recorded): a live cost line reads it."""

    async def on_tool_start(
        self, ctx: RunContext, agent: AgentLike, tool_name: str, arguments: str
    ) -> None:
        """``agent`` is about to run a tool; ``arguments`` is the model's JSON text."""

    async def on_tool_end(
        self, ctx: RunContext, agent: AgentLike, tool_name: str, result_text: str
    ) -> None:
        """A tool finished; ``result_text`` is what the model will read."""

    async def on_handoff(self, ctx: RunContext, source: AgentLike, target: AgentLike) -> None:
        """``source`` hands the conversation to ``target`` (the target's own hooks see it too)."""


def check_hooks(hooks: Any, where: str) -> None:
    """Hooks must be an `agentnb.Hooks` (a subclass's instance), not the class itself, whose
    ``on_*`` methods are hooks agentnb calls, each able to take the arguments it passes."""
    if not isinstance(hooks, Hooks):
        given = f"the class {hooks.__name__}" if isinstance(hooks, type) else type(hooks).__name__
        raise UserError(
            f"{where} takes an instance of agentnb.Hooks (or a subclass), got {given}: "
            "pass MyHooks(), not MyHooks."
        )
    check_hook_names(hooks, Hooks, where)


def reads_rows(hooks: object) -> bool:
    """Whether ``hooks`` has its own ``on_model_end``, which is given each call's row (and
    so makes the run count its tokens as it goes, rather than when the rows are read)."""
    own = getattr(type(hooks), "on_model_end", None)
    return own is not None and own is not Hooks.on_model_end
