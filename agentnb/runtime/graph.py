"""`Agent.graph()`: the topology reachable from an agent, cycles marked rather than followed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent import Agent


def agent_graph(agent: Agent) -> dict[str, Any]:
    """Nested dicts: ``{"agent", "tools", "delegates": [{"tool", ...}], "handoffs": [...]}``.

    An agent already on the way down is shown as ``{"agent": name, "cycle": True}``.
    """
    return _node(agent, ())


def _node(agent: Agent, ancestors: tuple[Agent, ...]) -> dict[str, Any]:
    from .agent_tool import AgentTool
    from .handoffs import Handoff
    from .team import TeamTool

    if any(a is agent for a in ancestors):
        return {"agent": agent.name, "cycle": True}
    below = (*ancestors, agent)
    tools: list[str] = []
    delegates: list[dict[str, Any]] = []
    for item in agent.tools:
        made = (
            item.as_tool() if hasattr(item, "as_tool") and not isinstance(item, AgentTool) else item
        )
        if isinstance(made, TeamTool):
            delegates.extend(
                {"tool": made.name, "member": m.name, **_node(m.agent, below)}
                for m in made.members
                if m.agent is not None
            )
        elif isinstance(made, AgentTool) and made.agent is not None:
            delegates.append({"tool": made.name, **_node(made.agent, below)})
        else:
            tools.append(getattr(made, "name", getattr(made, "__name__", str(made))))
    handoffs = []
    for h in agent.handoffs:
        target = h.target if isinstance(h, Handoff) else h
        handoffs.append(_node(target, below))
    if agent.route is not None and hasattr(agent.route, "targets"):
        handoffs.extend({"routed": True, **_node(t, below)} for t in agent.route.targets())
    return {"agent": agent.name, "tools": tools, "delegates": delegates, "handoffs": handoffs}
