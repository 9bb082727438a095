"""The mutable state of one agent's run inside a hierarchy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...models.types import Message, Usage
from ...trace.history import HistoryTally
from ...trace.spans import Span

if TYPE_CHECKING:
    from .context import TokenBudget
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
