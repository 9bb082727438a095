"""The mutable state of one agent's run inside a hierarchy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...models.types import Message, Usage
from ...trace.history import HistoryTally
from ...trace.spans import Span

if TYPE_CHECKING:
    from .context import RunContext, TokenBudget
    from .events import Watchers
    from .protocols import AgentLike


@dataclass
class AgentRun:
    """One agent running: its history, its place in the tree, what it has used so far.

    Depth and path travel by value (each sub-agent gets its own `AgentRun`), so sibling
    sub-agents running in parallel never see each other's position.
    """

    agent: AgentLike
    messages: list[Message]
    depth: int
    path: str
    lineage: tuple[AgentLike, ...]
    """The agents from the root to this one (this one included): the recursion guard reads it."""
    span: Span
    budgets: tuple[TokenBudget, ...] = ()
    turns: int = 0
    output: Any = None
    last_text: str | None = None
    usage: Usage = field(default_factory=Usage)
    chars_in: int = 0
    handoffs: list[str] = field(default_factory=list)
    """Names of the agents control passed to, in order."""
    tally: HistoryTally = field(default_factory=HistoryTally, repr=False)
    """Running size and token sums over ``messages``: a turn measures only what is new."""
    watchers: Watchers | None = field(default=None, repr=False)
    """What watches this agent (a stream, hooks); None when nothing does. Set as it starts."""
    resumed_at: int | None = None
    """For an agent going on from a paused run: the turn it had reached, whose tool calls the
    resumed run answered. Its next turn is the one after, as after any turn that called tools."""


def discard(active: list[AgentRun], state: AgentRun) -> None:
    """Remove ``state`` from the running agents, found by identity: ``list.remove`` would
    compare it field by field with each run before it."""
    for i in range(len(active) - 1, -1, -1):
        if active[i] is state:
            del active[i]
            return
    raise ValueError("the sub-agent's run is not among the running agents")


def sub_agent_started(ctx: RunContext, state: AgentRun) -> None:
    """A sub-agent (called as a tool, or a child run a tool started) starts: it is among the
    running agents, and a ``sub_agent_start`` log line says where."""
    ctx.active.append(state)
    ctx.trace.log("sub_agent_start", depth=state.depth, path=state.path, agent=state.agent.name)


def sub_agent_ended(
    ctx: RunContext, state: AgentRun, span: Span, status: str, error: str | None = None
) -> None:
    """A sub-agent stopped with ``status`` (``error``: what went wrong, for the log): it is no
    longer running, what was still open under its span is cut short, the span ends and a
    ``sub_agent_end`` log line says how. ``span`` is the one it started in, named for the agent
    that started (a handoff inside it moves ``state.span`` on)."""
    discard(ctx.active, state)
    ctx.trace.close_open_under(span, "cancelled" if status == "ok" else status)
    ctx.trace.end(span, status, turns=state.turns)
    ctx.trace.log(
        "sub_agent_end",
        depth=state.depth,
        path=state.path,
        agent=span.name,
        turns=state.turns,
        status=status,
        **({"error": error} if error is not None else {}),
    )
