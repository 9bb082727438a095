"""`Agent`: configuration only. Running an agent is the runner's job."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Union

from pydantic import BaseModel, TypeAdapter

from ..errors import UserError
from ..models.base import ModelClient
from ..models.types import OutputSchema
from .tools import DEFAULT_MAX_RESULT_CHARS, BaseTool, clean_schema, function_tool

if TYPE_CHECKING:
    from .agent_tool import AgentTool, NeedsApproval
    from .context import RunContext
    from .handoffs import Handoff
    from .prompt import PromptSection
    from .result import RunResult
    from .state import AgentRun


Instructions = Union[str, Sequence[Union["PromptSection", str]], Callable[[Any], str]]  # noqa: UP007
"""A system prompt: text, prompt sections (`PromptSection` or text), or ``fn(context) -> str``."""

ToolLike = Union[BaseTool, "Agent", Callable[..., Any]]  # noqa: UP007
"""What ``Agent(tools=...)`` takes: a function (made a tool), a `Tool`, or an agent (``as_tool()``)."""

OutputType = Union[type[BaseModel], types.UnionType]  # noqa: UP007
"""A pydantic model class, or a union of them (``Approve | Reject``)."""


class Route(Protocol):
    """Routes an agent's structured answer in code (`agentnb.HandoffRoute` is one)."""

    def output_type(self) -> Any:
        """The output type the routed agent must answer with."""

    def apply(self, output: Any, state: AgentRun) -> Any:
        """A `Transfer` to another agent, or the final output."""


@dataclass(eq=False)
class Agent:
    """A named model with instructions, tools and, optionally, a structured output type."""

    name: str
    """Shown in traces and paths; also the default tool name when the agent becomes a tool."""
    instructions: Instructions = ""
    """The system prompt: a string, a list of `PromptSection`, or a callable ``context -> str``."""
    model: ModelClient | str | None = None
    """A model client, or a spec string such as ``"openai:gpt-4o-mini"``."""
    tools: Sequence[ToolLike] = field(default_factory=list)
    """Functions (made tools), `Tool` objects, and agents (made tools with ``as_tool()``)."""
    output_type: OutputType | None = None
    """A pydantic model (or a union of them): the final answer is validated against it."""
    max_turns: int = 10
    """Model calls this agent may make in one run before it is stopped."""
    handoffs: Sequence[Agent | Handoff] = field(default_factory=list)
    """Agents (or `Handoff` objects) this agent may transfer the conversation to."""
    description: str = ""
    """What the agent does, in a sentence: the default description when it becomes a tool."""
    output_retries: int = 1
    """How many times a final answer that fails ``output_type`` is re-asked before the run fails."""
    route: Route | None = None
    """A `HandoffRoute`: routes this agent's structured output to another agent in code."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise UserError("An Agent needs a non-empty name: Agent(name='reviewer', ...)")
        if not isinstance(self.max_turns, int) or self.max_turns < 1:
            raise UserError(f"max_turns must be a positive integer, got {self.max_turns!r}")
        self.tools = list(self.tools)
        self.handoffs = list(self.handoffs)
        if (
            self.route is not None
            and self.output_type is None
            and hasattr(self.route, "output_type")
        ):
            self.output_type = self.route.output_type()  # a HandoffRoute: Respond | its intents
        if self.output_type is not None:
            check_output_type(self.output_type)
        self.tool_map()  # fail now on duplicate or unusable tools

    # -- derived configuration, computed when needed (tools may be assigned after construction)

    def tool_map(self) -> dict[str, BaseTool]:
        """The tools by name, functions and agents converted; duplicate names are an error."""
        cache_key = (tuple(map(id, self.tools)), tuple(map(id, self.handoffs)))  # every run asks
        cached: tuple[Any, dict[str, BaseTool]] | None = self.__dict__.get("_tool_cache")
        if cached is not None and cached[0] == cache_key:
            return cached[1]
        tools: dict[str, BaseTool] = {}
        for item in [*self.tools, *(_handoff_tool(h) for h in self.handoffs)]:
            made = item.as_tool() if isinstance(item, Agent) else function_tool(item)
            if made.name in tools:
                raise UserError(
                    f"Agent {self.name!r} has two tools named {made.name!r}: rename one "
                    "(tool(fn, name=...) or agent.as_tool(name=...))."
                )
            tools[made.name] = made
        self.__dict__["_tool_cache"] = (cache_key, tools)
        return tools

    def system_prompt(self, context: Any = None) -> str:
        instructions = self.instructions
        if callable(instructions):
            return str(instructions(context))
        if isinstance(instructions, (list, tuple)):
            from .prompt import assemble_prompt

            return assemble_prompt(instructions)
        return str(instructions or "")

    def output_adapter(self) -> tuple[TypeAdapter[Any], OutputSchema] | None:
        if self.output_type is None:
            return None
        cached: tuple[Any, tuple[TypeAdapter[Any], OutputSchema]] | None = self.__dict__.get(
            "_output_cache"
        )
        if cached is not None and cached[0] is self.output_type:
            return cached[1]
        output_type: Any = self.output_type  # a class or a union: pydantic takes both
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        union = _is_union(self.output_type)
        members = typing.get_args(self.output_type) if union else (self.output_type,)
        # one model: "verdict"; a union: "refusal_or_approval"
        name = "_or_".join(_snake(getattr(m, "__name__", "output")) for m in members)
        name = name if len(name) <= 64 else "output"  # providers cap a schema's name at 64
        schema = OutputSchema(name, clean_schema(adapter.json_schema()))
        self.__dict__["_output_cache"] = (self.output_type, (adapter, schema))
        return adapter, schema

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        max_turns: int | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
        input_schema: type[BaseModel] | None = None,
        input_builder: Callable[[Any, RunContext], str] | None = None,
        extractor: Callable[[RunResult], str] | None = None,
        needs_approval: NeedsApproval = False,
    ) -> AgentTool:
        """This agent as a tool another agent can call, governed at the boundary.

        The sub-agent runs in a fresh history: it sees its instructions and the input the
        call hands it, nothing else of the caller's conversation. Its caller always gets text
        back: the answer, or what went wrong (a timeout, a budget, too many turns).

        Args:
            name: The tool's name (default: the agent's name in snake case).
            description: What the caller's model is told the tool does (default: the
                agent's ``description``).
            max_turns: The sub-agent's turn limit for calls through this tool (default: the
                agent's own ``max_turns``).
            timeout: Seconds before the caller is told the sub-agent did not answer.
            max_tokens: A token budget for each call, the sub-agent's own sub-agents included;
                exhausting it ends that call, not the run.
            max_result_chars: The longest answer handed back; a longer one is cut, with a note
                saying so (default 20,000, as for function tools; None: no limit).
            input_schema: A pydantic model for structured input instead of the default
                ``{input, artifacts}``.
            input_builder: ``fn(parsed, run_context) -> str``: the sub-agent's input from the
                parsed ``input_schema`` object (default: the object as JSON).
            extractor: ``fn(result) -> str``: what goes back to the caller from the sub-agent's
                `RunResult` (default: its output as text).
            needs_approval: ``True`` to ask the run's approver before every call, or
                ``fn(pending) -> bool`` to decide per call; see `agentnb.Approval`.

        Raises:
            UserError: an option has a value it does not accept.
        """
        from .agent_tool import AgentTool

        return AgentTool.build(
            self,
            name=name,
            description=description,
            max_turns=max_turns,
            timeout=timeout,
            max_tokens=max_tokens,
            max_result_chars=max_result_chars,
            input_schema=input_schema,
            input_builder=input_builder,
            extractor=extractor,
            needs_approval=needs_approval,
        )

    def clone(self, **changes: Any) -> Agent:
        """A copy with some fields changed: ``reviewer.clone(name='tax', model=...)``."""
        import dataclasses

        return dataclasses.replace(self, **changes)

    def graph(self) -> dict[str, Any]:
        """The topology reachable from this agent, as nested dicts; cycles are marked, not followed."""
        from .graph import agent_graph

        return agent_graph(self)

    def __repr__(self) -> str:
        model = (
            self.model
            if isinstance(self.model, str)
            else getattr(self.model, "name", type(self.model).__name__)
        )
        parts = [f"name={self.name!r}", f"model={model!r}"]
        if self.tools:
            parts.append(f"tools={[t.name for t in self.tool_map().values()]}")
        if self.output_type is not None:
            parts.append(f"output_type={getattr(self.output_type, '__name__', self.output_type)}")
        return f"Agent({', '.join(parts)})"


def _handoff_tool(item: Any) -> BaseTool:
    from .handoffs import Handoff

    handoff = item if isinstance(item, Handoff) else Handoff(item)
    return handoff.tool()


def check_output_type(output_type: Any) -> None:
    """An output type must be a pydantic model or a union of them."""
    members = typing.get_args(output_type) if _is_union(output_type) else (output_type,)
    for member in members:
        if not (isinstance(member, type) and issubclass(member, BaseModel)):
            raise UserError(
                f"output_type must be a pydantic model (a BaseModel subclass) or a union of them, "
                f"got {member!r}. Define `class Answer(BaseModel): ...` and pass output_type=Answer."
            )


def _is_union(tp: Any) -> bool:
    origin = typing.get_origin(tp)
    return origin is Union or origin is types.UnionType


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
