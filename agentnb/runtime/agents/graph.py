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
    from ..handoffs.handoff import Handoff
    from ..tools.function import BaseTool
    from .agent import Agent

    if any(a is agent for a in ancestors):
        return {"agent": agent.name, "cycle": True}
    below = (*ancestors, agent)
    tools: list[str] = []
    delegates: list[dict[str, Any]] = []
    for item in agent.tools:
        made = item.as_tool() if isinstance(item, Agent) else item
        if isinstance(made, BaseTool) and made.sub_agents():
            delegates.extend(
                {"tool": made.name, **({"member": member} if member else {}), **_node(sub, below)}
                for member, sub in made.sub_agents()
            )
        else:
            tools.append(getattr(made, "name", getattr(made, "__name__", str(made))))
    handoffs = []
    for h in agent.handoff_list():
        target = h.target if isinstance(h, Handoff) else h
        handoffs.append(_node(target, below))
    route = agent.routing()
    if route is not None and hasattr(route, "targets"):
        handoffs.extend({"routed": True, **_node(t, below)} for t in route.targets())
    return {"agent": agent.name, "tools": tools, "delegates": delegates, "handoffs": handoffs}
