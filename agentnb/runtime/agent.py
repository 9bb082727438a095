"""`Agent`: configuration only. Running an agent is the runner's job."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Union

from ..errors import UserError
from ..models import checks
from ..models.base import ModelClient
from ..models.settings import ModelSettings, check_settings
from .guardrails import Guardrail, as_guardrails
from .hooks import check_hooks
from .output import OutputSpec, output_spec
from .settings import ToolUseBehavior, check_behavior
from .tools import DEFAULT_MAX_RESULT_CHARS, BaseTool, function_tool

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .agent_tool import AgentTool, NeedsApproval
    from .context import RunContext
    from .hooks import Hooks
    from .prompt import PromptSection
    from .result import RunResult
    from .state import AgentRun


Instructions = Union[str, Sequence[Union["PromptSection", str]], Callable[..., Any]]  # noqa: UP007
"""A system prompt: text, prompt sections (`PromptSection` or text), or a function (sync or
async) ``(ctx) -> str`` or ``(ctx, agent) -> str``."""

ToolLike = Union[BaseTool, "Agent", Callable[..., Any]]  # noqa: UP007
"""What ``Agent(tools=...)`` takes: a function (made a tool), a `Tool`, or an agent (``as_tool()``)."""


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
    """The system prompt: a string, a list of `PromptSection`, or a function (sync or async)
    ``(ctx) -> str`` or ``(ctx, agent) -> str`` called at the start of each run of the agent."""
    model: ModelClient | str | None = None
    """A model client, or a spec string such as ``"openai:gpt-4o-mini"``."""
    tools: Sequence[ToolLike] = field(default_factory=list)
    """Functions (made tools), `Tool` objects, and agents (made tools with ``as_tool()``)."""
    output_type: Any = None
    """Any type pydantic validates (a model, ``int``, ``list[X]``, ``Literal[...]``, a union,
    a dataclass, a TypedDict): the final answer is validated against it. None or ``str``: text.
    Typed ``Any`` because a type form (``list[int]``, ``A | B``) is not a ``type`` to mypy."""
    max_turns: int = 10
    """Model calls this agent may make in one run before it is stopped."""
    handoffs: Any = field(default_factory=list)
    """Agents (or `Handoff` objects) this agent may transfer the conversation to; or a
    `HandoffRoute`, which is the same as ``route=``."""
    description: str = ""
    """What the agent does, in a sentence: the default description when it becomes a tool."""
    output_retries: int = 1
    """How many times a final answer that fails ``output_type`` is re-asked before the run fails."""
    route: Route | None = None
    """A `HandoffRoute`: routes this agent's structured output to another agent in code."""
    model_settings: ModelSettings | None = None
    """Temperature, tool choice, ...: see `ModelSettings` (``run(model_settings=...)`` overrides)."""
    tool_use_behavior: ToolUseBehavior = "run_llm_again"
    """``"run_llm_again"`` (the default), ``"stop_on_first_tool"`` or ``StopAtTools(...)``: with
    a stop, the first (or a named) tool's result is the agent's output, with no further call;
    if that tool call fails, the run ends ``ok=False`` with `agentnb.errors.ToolFailed`."""
    input_guardrails: Sequence[Guardrail | Callable[..., Any]] = ()
    """Checks of the agent's input (see `agentnb.GuardrailResult`); by default alongside the
    first model call, which a tripwire cancels."""
    output_guardrails: Sequence[Guardrail | Callable[..., Any]] = ()
    """Checks of the agent's final, validated output."""
    hooks: Hooks | None = None
    """`agentnb.Hooks` that see this agent only (``run(..., hooks=...)`` sees every agent)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise UserError("An Agent needs a non-empty name: Agent(name='reviewer', ...)")
        checks.positive_int(self.max_turns, "max_turns", optional=False)
        checks.non_negative_int(self.output_retries, f"Agent({self.name!r}, output_retries=...)")
        if not isinstance(self.description, str):
            raise UserError(
                f"Agent({self.name!r}, description=...) must be text, got {self.description!r}"
            )
        for label, items in (("tools", self.tools), ("handoffs", self.handoffs)):
            if not isinstance(items, (list, tuple)) and not hasattr(items, "apply"):
                # a list (a HandoffRoute, with its ``apply``, may stand for the handoffs)
                raise UserError(f"Agent({self.name!r}, {label}=...) must be a list, got {items!r}")
        self.tools = list(self.tools)
        self.handoffs = self._split_route(self.handoffs)
        check_settings(self.model_settings, f"Agent {self.name!r}: model_settings")
        check_behavior(self.tool_use_behavior, self.name)
        self.input_guardrails = as_guardrails(self.input_guardrails, "input_guardrails")
        self.output_guardrails = as_guardrails(self.output_guardrails, "output_guardrails")
        if self.route is not None and not _is_route(self.route):
            raise checks.fail(
                f"Agent({self.name!r}, route=...)", "a HandoffRoute or None", self.route
            )
        if (
            self.route is not None
            and self.output_type is None
            and hasattr(self.route, "output_type")
        ):
            self.output_type = self.route.output_type()  # a HandoffRoute: Respond | its intents
        self.output_adapter()  # fail now on an output type pydantic cannot handle
        if self.hooks is not None:
            check_hooks(self.hooks, f"Agent({self.name!r}, hooks=...)")
        self.tool_map()  # fail now on duplicate or unusable tools

    def _split_route(self, handoffs: Any) -> list[Any]:
        """``handoffs=HandoffRoute(...)`` is ``route=``: the route moves there."""
        items = [handoffs] if _is_route(handoffs) else list(handoffs)
        routes = [h for h in items if _is_route(h)]
        if not routes:
            return items
        if len(items) > 1:
            raise UserError(
                f"Agent {self.name!r}: handoffs mixes a HandoffRoute with other handoffs; give "
                "either a HandoffRoute (routed in code) or a list of agents / Handoffs (chosen by "
                "the model), not both."
            )
        if self.route is not None and self.route is not routes[0]:
            raise UserError(
                f"Agent {self.name!r}: a HandoffRoute is given both as handoffs= and as route=; "
                "give it once."
            )
        self.route = routes[0]
        return []

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
        """The system prompt now (a synchronous callable only: the run loop uses
        `agentnb.runtime.instructions.system_prompt`, which also awaits async ones)."""
        instructions = self.instructions
        if callable(instructions):
            return str(instructions(context))
        if isinstance(instructions, (list, tuple)):
            from .prompt import assemble_prompt

            return assemble_prompt(instructions)
        return str(instructions or "")

    def output_adapter(self) -> OutputSpec | None:
        """How the final answer is requested and validated (None: plain text)."""
        cached: tuple[Any, OutputSpec | None] | None = self.__dict__.get("_output_cache")
        if cached is not None and cached[0] is self.output_type:
            return cached[1]
        spec = output_spec(self.output_type)
        self.__dict__["_output_cache"] = (self.output_type, spec)
        return spec

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
        input_guardrails: Sequence[Callable[..., Any]] | None = None,
        output_guardrails: Sequence[Callable[..., Any]] | None = None,
        propagate_guardrails: bool = False,
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
                ``fn(ctx, arguments) -> bool`` (or ``fn(pending) -> bool``) to decide per
                call; see `agentnb.Approval`.
            input_guardrails: Tool guardrails ``fn(ctx, tool_name, arguments)`` run before
                each call (see `agentnb.ToolGuardrail`).
            output_guardrails: Tool guardrails ``fn(ctx, tool_name, arguments, result)`` run
                on the answer before the caller reads it.
            propagate_guardrails: A guardrail tripped inside the sub-agent ends the whole run
                instead of becoming ``ERROR: ...`` text for the caller.

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
            input_guardrails=input_guardrails,
            output_guardrails=output_guardrails,
            propagate_guardrails=propagate_guardrails,
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


def _is_route(value: Any) -> bool:
    """A `HandoffRoute` (from the patterns layer, recognised by what the run loop calls)."""
    return hasattr(value, "apply") and hasattr(value, "output_type") and hasattr(value, "targets")
