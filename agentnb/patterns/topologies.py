"""The four recurring shapes of a multi-agent system, as small builders.

- `star`: a triage agent hands the conversation to one of N specialists (handoffs, centre out);
  no cycle is possible, the specialist answers the user.
- `hierarchy`: an orchestrator calls N workers as tools and synthesises; control stays with it.
- `pipeline`: a fixed sequence of stages (`chain`): no routing decision to get wrong.
- `mesh`: every agent can call (or hand off to) every other. Cycles become possible and are
  stopped by the guards: depth and path for agents as tools, the handoff cycle guard for handoffs.

Pick in this order: known sequence -> pipeline; one domain per request -> star; contributions
to combine -> hierarchy; the mesh only when none of those fits.

Builders never change the agents they are given: they return wired clones inside a `Topology`,
which can be run (``await topo.run(input)``), drawn (``topo.edges()``) and traced like any run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .. import checks
from ..errors import UserError
from ..runtime import Agent, BaseTool, Handoff, HandoffConfig, run
from .chains import ChainResult, chain

Kind = Literal["star", "hierarchy", "chain", "mesh"]


@dataclass(eq=False)
class Topology:
    """Wired agents of one shape; ``agents[0]`` is where a run starts."""

    kind: Kind
    agents: list[Agent]

    @property
    def entry(self) -> Agent:
        return self.agents[0]

    def agent(self, name: str) -> Agent:
        """The wired agent called ``name`` (the clone the topology runs, not the original)."""
        for agent in self.agents:
            if agent.name == name:
                return agent
        raise UserError(
            f"No agent named {name!r} in this {self.kind}: {[a.name for a in self.agents]}"
        )

    async def run(self, input: Any, **options: Any) -> Any:
        """Run the topology: a `RunResult` (a `ChainResult` for a pipeline)."""
        if self.kind == "chain":
            return await chain(self.agents, input, **options)
        return await run(self.entry, input, **options)

    def edges(self) -> list[tuple[str, str, str]]:
        """``(source, target, how)`` for every connection; ``how`` is tool, handoff, route or next."""
        if self.kind == "chain":
            return [(a.name, b.name, "next") for a, b in zip(self.agents, self.agents[1:])]
        out: list[tuple[str, str, str]] = []
        for agent in self.agents:
            for item in agent.tools:
                if isinstance(item, Agent):
                    out.append((agent.name, item.name, "tool"))
                    continue
                if isinstance(item, BaseTool):
                    out.extend((agent.name, sub.name, "tool") for _, sub in item.sub_agents())
            for h in agent.handoff_list():
                out.append(
                    (agent.name, (h.target if isinstance(h, Handoff) else h).name, "handoff")
                )
            route = agent.routing()
            if route is not None and hasattr(route, "targets"):
                out.extend((agent.name, t.name, "route") for t in route.targets())
        return out

    def graph(self) -> Any:
        """The entry agent's `Agent.graph()` (for a pipeline: one graph per stage)."""
        if self.kind == "chain":
            return [a.graph() for a in self.agents]
        return self.entry.graph()

    def __repr__(self) -> str:
        return f"Topology({self.kind}: {', '.join(f'{s}-{h}->{t}' for s, t, h in self.edges()) or self.entry.name})"


def star(
    center: Agent, specialists: Sequence[Agent], *, config: HandoffConfig | None = None
) -> Topology:
    """A triage agent with one handoff per specialist (LLM-routed; for code routing give the
    centre a `HandoffRoute` instead)."""
    _agents([center, *_listed(specialists, "star(specialists)")], "star")
    if not specialists:
        raise UserError("star() needs at least one specialist")
    handoffs = [Handoff(s, config=config or HandoffConfig()) for s in specialists]
    hub = center.clone(handoffs=[*center.handoff_list(), *handoffs])
    return Topology("star", [hub, *specialists])


def hierarchy(orchestrator: Agent, workers: Sequence[Agent], **as_tool_options: Any) -> Topology:
    """An orchestrator with each worker as a tool (``as_tool_options`` apply to every worker)."""
    _agents([orchestrator, *_listed(workers, "hierarchy(workers)")], "hierarchy")
    if not workers:
        raise UserError("hierarchy() needs at least one worker")
    tools = [w.as_tool(**as_tool_options) for w in workers]
    boss = orchestrator.clone(tools=[*orchestrator.tools, *tools])
    return Topology("hierarchy", [boss, *workers])


def pipeline(*stages: Agent) -> Topology:
    """A fixed sequence of agents: run it with ``await topo.run(input)`` (see `chain`)."""
    if len(stages) == 1 and isinstance(stages[0], (list, tuple)):
        stages = tuple(stages[0])
    _agents(list(stages), "pipeline")
    if not stages:
        raise UserError("pipeline() needs at least one agent")
    return Topology("chain", list(stages))


def mesh(
    agents: Sequence[Agent], *, via: Literal["tools", "handoffs"] = "tools", **options: Any
) -> Topology:
    """Every agent connected to every other; runs start at ``agents[0]``.

    ``via="tools"``: each agent can call the others as tools (``options`` go to ``as_tool``);
    a cycle A -> B -> A is refused by the path guard, deep nesting by the depth guard
    (``Limits(max_depth=...)``). ``via="handoffs"``: each can hand the conversation to the others
    (``options`` go to `Handoff`); handing back to an agent that already had control is refused.
    """
    _agents(list(_listed(agents, "mesh(agents)")), "mesh")
    if len(agents) < 2:
        raise UserError("mesh() needs at least two agents")
    if via not in ("tools", "handoffs"):
        raise UserError(f"mesh(via=...) must be 'tools' or 'handoffs', got {via!r}")
    clones = [a.clone() for a in agents]
    for clone, original in zip(clones, agents):
        others = [c for c in clones if c is not clone]
        if via == "tools":
            clone.tools = [*original.tools, *(o.as_tool(**options) for o in others)]
        else:
            clone.handoffs = [*original.handoff_list(), *(Handoff(o, **options) for o in others)]
        clone.tool_map()  # fail now on a name clash
    return Topology("mesh", clones)


def _agents(agents: list[Any], where: str) -> None:
    names: set[str] = set()
    for agent in agents:
        if not isinstance(agent, Agent):
            raise UserError(f"{where}() takes Agents, got {type(agent).__name__}")
        if agent.name in names:
            raise UserError(f"{where}(): two agents are named {agent.name!r}; names must be unique")
        names.add(agent.name)


def _listed(agents: Any, where: str) -> Sequence[Any]:
    if not isinstance(agents, (list, tuple)):
        raise checks.fail(where, "a list of Agents", agents)
    return agents


__all__ = ["ChainResult", "Topology", "hierarchy", "mesh", "pipeline", "star"]
