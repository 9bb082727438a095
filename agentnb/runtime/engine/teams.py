"""Several agents behind one tool: a cheaper shape for a coordinator with many sub-agents.

Each sub-agent behind its own tool costs its tool spec on every turn of the caller. A team
puts them behind one tool whose arguments name the member (an enum in the schema) and carry
its input, so an added member costs one enum entry instead of a whole spec. Each member stays
an `AgentTool` with its own governance (timeout, turns, budget, approval, result cap), its own
trace rows and its own path (``coordinator/legal``): the team only routes the call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ... import checks
from ...errors import UserError
from ...models.types import ToolSpec
from ..data.outcome import ToolOutcome
from ..guards.tool_guardrails import invoke_checked
from ..tools import handles
from ..tools.agent_tool import AgentTool
from ..tools.context import ToolCallContext
from ..tools.function import BaseTool

if TYPE_CHECKING:
    from ..agents.agent import Agent
    from ..data.context import RunContext


@dataclass(eq=False)
class TeamTool(BaseTool):
    """`agentnb.team`'s result: one tool that hands a task to the member it names."""

    members: tuple[AgentTool, ...] = ()
    by_handle: bool | None = None
    """Whether the members' input offers document handles; see `AgentTool.by_handle`."""
    _run_specs: dict[tuple[str, ...], ToolSpec] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def spec_for(self, ctx: RunContext) -> ToolSpec:
        """The spec with the run's document handles as an enum, or without ``artifacts``
        when there is nothing to route (see `.handles`)."""
        offered = handles.offered(ctx.artifacts, self.by_handle)
        spec = self._run_specs.get(offered)
        if spec is None:
            if len(self._run_specs) > 64:  # runs with ever new document names
                self._run_specs.clear()
            names = [m.name for m in self.members]
            parameters = _schema(names, offered)
            spec = self._run_specs[offered] = ToolSpec(self.name, self.description, parameters)
        return spec

    def sub_agents(self) -> tuple[tuple[str | None, Agent], ...]:
        """Each member's agent, with the member name that picks it."""
        return tuple((m.name, m.agent) for m in self.members)

    def member(self, name: str) -> AgentTool | None:
        """The member called ``name``, or None."""
        for item in self.members:
            if item.name == name:
                return item
        return None

    async def invoke(self, arguments: dict[str, Any], tcx: ToolCallContext) -> ToolOutcome:
        """Route the call to the member it names; how the member's call ends is the outcome."""
        member_arguments = dict(arguments)
        name = member_arguments.pop("member", None)
        target = self.member(name) if isinstance(name, str) else None
        if target is None:
            names = ", ".join(m.name for m in self.members)
            return ToolOutcome.error(f"{self.name} has no member {name!r}. Members: {names}.")
        if target.checked:  # the member's own tool guardrails
            return await invoke_checked(target, member_arguments, tcx)
        return await target.invoke(member_arguments, tcx)

    def __repr__(self) -> str:
        return f"TeamTool({self.name!r}, members={[m.name for m in self.members]})"


def team(
    members: Sequence[Agent | AgentTool],
    *,
    name: str = "consult",
    description: str | None = None,
    by_handle: bool | None = None,
) -> TeamTool:
    """Put several agents behind one tool: ``{"member": "legal", "input": ..., "artifacts": [...]}``.

    Args:
        members: agents (each becomes ``agent.as_tool()``) or `AgentTool`s made with
            ``as_tool(...)`` to give a member its own name and governance. Members take the
            default input (a task and document handles); a member with an ``input_schema``
            needs a tool of its own.
        name: the tool's name, as the caller's model sees it.
        description: what the model reads about the tool; by default each member's name and
            description, one per line (once, when all members share one description).
        by_handle: whether the members' input offers document handles (``artifacts``, an
            enum of the run's handles): None when the run holds a document beyond its input,
            True always (the input by its handle ``input`` included), False never.
    """
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
        raise UserError(
            f"team(name={name!r}) is not a usable tool name: letters, digits, _ or -, at most 64."
        )
    checks.text(description, "team(description=...)", optional=True)
    handles.check_by_handle(by_handle, "team")
    if not isinstance(members, (list, tuple)):
        raise checks.fail("team(members)", "a list of Agents or agent.as_tool(...) tools", members)
    tools = tuple(_as_member(m) for m in members)
    if not tools:
        raise UserError("team(members=...) needs at least one agent.")
    names = [t.name for t in tools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UserError(
            f"team members need distinct names; {', '.join(duplicates)} appears more than once. "
            "Name them with agent.as_tool(name=...)."
        )
    text = description or _describe(tools)
    parameters = _schema(names, handles.offered({handles.INPUT: ""}, by_handle))
    return TeamTool(name, text, parameters, members=tools, by_handle=by_handle)


def _describe(tools: Sequence[AgentTool]) -> str:
    """Each member's description, once: members that all do the same thing share one line
    (the enum already names them, and this text is resent on every turn of the caller)."""
    texts = {t.description for t in tools}
    if len(texts) == 1:
        return f"Ask one member of the team. Each member: {texts.pop()}"
    return "Ask one member of the team.\n" + "\n".join(f"{t.name}: {t.description}" for t in tools)


def _as_member(item: Any) -> AgentTool:
    if isinstance(item, AgentTool):
        tool = item
    elif hasattr(item, "as_tool") and not isinstance(item, BaseTool):
        tool = item.as_tool()
    else:
        raise checks.fail("team(members)", "a list of Agents or agent.as_tool(...) tools", item)
    if tool.input_schema is not None:
        raise UserError(
            f"team member {tool.name!r} has an input_schema; a team passes the default input "
            "(a task and document handles). Give it a tool of its own."
        )
    return tool


def _schema(names: list[str], offered: tuple[str, ...]) -> dict[str, Any]:
    """The team's parameters: the member, then the default sub-agent input (with the
    ``offered`` handles)."""
    properties: dict[str, Any] = {"member": {"enum": names}, "input": dict(handles.TASK)}
    if offered:
        properties["artifacts"] = handles.handles_property(offered)
    return {"type": "object", "properties": properties, "required": ["member", "input"]}
