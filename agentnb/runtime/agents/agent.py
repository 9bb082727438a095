"""`Agent`: configuration only. Running an agent is the runner's job.

What is computed from an agent's fields (its tools by name, its output adapter, its guardrails
as `Guardrail` objects, the client its model spec names) is kept in `_Derived`, beside the
agent rather than in it: one typed record per live agent, in a `WeakKeyDictionary` that lets it
go with its agent. A run never writes into an agent; its ``repr`` is the same before and after.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, Union, Unpack, cast

from ... import checks
from ...errors import UserError
from ...models.base import ModelClient
from ...models.settings import ModelSettings, check_settings
from ..data.callbacks import check_callable
from ..data.hooks import check_hooks
from ..data.options import AsToolOptions
from ..data.signatures import lists_keywords
from ..guards.guardrails import Guardrail, as_guardrails
from ..tools.agent_tool import AgentTool, as_tool_defaults
from ..tools.function import BaseTool, function_tool
from ..tools.mcp import Server, check_servers
from .instructions import check_sections
from .output import OutputSpec, output_spec
from .output_validators import check_output_validators
from .settings import ToolUseBehavior, check_behavior

if TYPE_CHECKING:
    from ..data.hooks import Hooks
    from ..data.state import AgentRun
    from .prompt import PromptSection


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
    """``"run_llm_again"`` (the default), ``"stop_on_first_tool"``, ``StopAtTools(...)`` or a
    function ``fn(ctx, results) -> ToolsToFinalOutputResult``: with a stop, the first (or a
    named) tool's result is the agent's output (read as ``output_type`` when there is one),
    with no further call; if that tool call fails, the run ends ``ok=False`` with
    `agentnb.errors.ToolFailed`. A function decides from the turn's results."""
    reset_tool_choice: bool = True
    """Whether a forced ``tool_choice`` (``"required"``, a tool's name) goes back to ``"auto"``
    after the turn that called tools, so that the agent can answer; False keeps forcing it
    (with a ``tool_use_behavior`` that stops, or a turn limit, to end the run)."""
    input_guardrails: Sequence[Guardrail | Callable[..., Any]] = ()
    """Checks of the agent's input (see `agentnb.GuardrailResult`); by default alongside the
    first model call, which a tripwire cancels."""
    output_guardrails: Sequence[Guardrail | Callable[..., Any]] = ()
    """Checks of the agent's final, validated output."""
    hooks: Hooks | None = None
    """`agentnb.Hooks` that see this agent only (``run(..., hooks=...)`` sees every agent)."""
    output_validators: Sequence[Callable[..., Any]] = ()
    """``fn(ctx, output) -> output`` (sync or async), run on the final, validated output;
    raising ``agentnb.ModelRetry("why")`` makes the model try again (bounded by
    ``output_retries``). See `agentnb.runtime.agents.output_validators`."""
    mcp_servers: Sequence[Server] = ()
    """MCP servers (`agentnb.mcp.stdio`, `agentnb.mcp.http`) whose tools the agent is offered
    beside ``tools``: listed when the agent starts, once per run at most; see
    `agentnb.runtime.tools.mcp`."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise UserError("An Agent needs a non-empty name: Agent(name='reviewer', ...)")
        self._check_instructions_and_model()
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
        self._split_route()  # fail now on a route given twice or mixed with handoffs
        check_settings(self.model_settings, f"Agent {self.name!r}: model_settings")
        check_behavior(self.tool_use_behavior, self.name)
        if not isinstance(self.reset_tool_choice, bool):
            raise checks.fail(
                f"Agent({self.name!r}, reset_tool_choice=...)",
                "True or False",
                self.reset_tool_choice,
            )
        for stage in ("input", "output"):  # fail now on a guardrail that is not one
            given = getattr(self, f"{stage}_guardrails")
            if given or not isinstance(given, (list, tuple)):
                self.guardrails(stage)
        if self.route is not None and not _is_route(self.route):
            raise checks.fail(
                f"Agent({self.name!r}, route=...)", "a HandoffRoute or None", self.route
            )
        self.output_adapter()  # fail now on an output type pydantic cannot handle
        if self.hooks is not None:
            check_hooks(self.hooks, f"Agent({self.name!r}, hooks=...)")
        check_output_validators(
            self.output_validators, f"Agent({self.name!r}, output_validators=...)"
        )
        if callable(self.instructions):
            where = f"Agent({self.name!r}, instructions=...)"
            check_callable(self.instructions, where, ("ctx",), ("ctx", "agent"))
        elif isinstance(self.instructions, (list, tuple)):
            check_sections(self.instructions, self.name)
        self.tool_map()  # fail now on duplicate or unusable tools
        if self.mcp_servers:
            check_servers(self.mcp_servers, f"Agent({self.name!r}, mcp_servers=...)")

    def _check_instructions_and_model(self) -> None:
        """Agent's order is (name, instructions, model, tools): a model given as instructions,
        or text given as the model that is no spec, is caught here rather than at run time."""
        order = "Agent's arguments are (name, instructions, model, tools)"
        if hasattr(self.instructions, "request") and not callable(self.instructions):
            raise UserError(
                f"Agent({self.name!r}): instructions got a model client ({self.instructions!r}); "
                f"{order}: write Agent({self.name!r}, 'You review...', model)"
            )
        if isinstance(self.model, str) and ":" not in self.model:
            hint = (
                f"; {order}: were instructions and model swapped?"
                if not isinstance(self.instructions, str) or " " in self.model.strip()
                else ""
            )
            raise UserError(
                f"Agent({self.name!r}, model={self.model!r}): a model is a client such as "
                "ScriptedModel([...]) or a spec string 'provider:model' such as "
                f"'openai:gpt-4o-mini'{hint}"
            )
        if (
            self.model is not None
            and not isinstance(self.model, str)
            and not hasattr(self.model, "request")
        ):
            raise checks.fail(
                f"Agent({self.name!r}, model=...)",
                "a model client (ScriptedModel, OpenAIModel, ...), a spec string "
                "'provider:model', or None to take run(..., model=...)",
                self.model,
            )

    def _split_route(self) -> tuple[list[Any], Route | None]:
        """The handoffs the model chooses from, and the route in code: ``handoffs=HandoffRoute(...)``
        is the same as ``route=``."""
        handoffs = self.handoffs
        if not handoffs and isinstance(handoffs, (list, tuple)):  # most agents: nothing to split
            return [], self.route
        items = [handoffs] if _is_route(handoffs) else list(handoffs)
        routes = [h for h in items if _is_route(h)]
        if not routes:
            return items, self.route
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
        return [], routes[0]

    def handoff_list(self) -> list[Any]:
        """The agents (or `Handoff` objects) the model may transfer to: ``handoffs``, or none
        when ``handoffs`` is a `HandoffRoute`."""
        return self._split_route()[0]

    def routing(self) -> Route | None:
        """The `HandoffRoute` that routes this agent's answer in code (given as ``route=`` or
        as ``handoffs=``), or None."""
        return self._split_route()[1]

    # -- derived configuration, computed when needed (tools may be assigned after construction)

    def tool_map(self) -> dict[str, BaseTool]:
        """The tools by name, functions and agents converted; duplicate names are an error."""
        derived = _derived(self)
        seen = derived.tools
        handoffs = self.handoffs if isinstance(self.handoffs, (list, tuple)) else ()
        if seen is not None and _same(seen[0], self.tools) and _same(seen[1], handoffs):
            return seen[2]  # every run asks: the same tools as last time
        tools: dict[str, BaseTool] = {}
        for item in [*self.tools, *(_handoff_tool(h) for h in self.handoff_list())]:
            made = item.as_tool() if isinstance(item, Agent) else function_tool(item)
            if made.name in tools:
                raise UserError(
                    f"Agent {self.name!r} has two tools named {made.name!r}: rename one "
                    "(tool(fn, name=...) or agent.as_tool(name=...))."
                )
            tools[made.name] = made
        derived.tools = (tuple(self.tools), tuple(handoffs), tools)
        return tools

    def guardrails(self, stage: Literal["input", "output"]) -> tuple[Guardrail, ...]:
        """The agent's input or output guardrails as `Guardrail` objects (plain functions
        wrapped); a `UserError` for anything that is not one."""
        derived = _derived(self)
        given = self.input_guardrails if stage == "input" else self.output_guardrails
        seen = derived.input_guardrails if stage == "input" else derived.output_guardrails
        if seen is not None and seen[0] is given:
            return seen[1]
        made = as_guardrails(given, f"{stage}_guardrails")
        if stage == "input":
            derived.input_guardrails = (given, made)
        else:
            derived.output_guardrails = (given, made)
        return made

    def system_prompt(self, context: Any = None) -> str:
        """The system prompt now (a synchronous callable only: the run loop uses
        `agentnb.runtime.agents.instructions.system_prompt`, which also awaits async ones)."""
        instructions = self.instructions
        if callable(instructions):
            return str(instructions(context))
        if isinstance(instructions, (list, tuple)):
            from .prompt import assemble_prompt

            return assemble_prompt(instructions)
        return str(instructions or "")

    def output_adapter(self) -> OutputSpec | None:
        """How the final answer is requested and validated (None: plain text)."""
        derived = _derived(self)
        seen = derived.output
        if seen is not None and seen[:3] == (self.output_type, self.route, self.handoffs):
            return seen[3]
        answer = self.output_type
        route = self.routing()
        if answer is None and route is not None and hasattr(route, "output_type"):
            answer = route.output_type()  # a HandoffRoute: Respond | its intents
        spec = output_spec(answer)
        derived.output = (self.output_type, self.route, self.handoffs, spec)
        return spec

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        **options: Unpack[AsToolOptions],
    ) -> AgentTool:
        """This agent as a tool another agent can call, governed at the boundary.

        The sub-agent runs in a fresh history: it sees its instructions and the input the
        call hands it, nothing else of the caller's conversation. Its caller always gets text
        back: the answer, or what went wrong (a timeout, a budget, too many turns).

        Args:
            name: The tool's name (default: the agent's name in snake case).
            description: What the caller's model is told the tool does (default: the
                agent's ``description``).
            **options: The options below (`agentnb.runtime.data.options.AsToolOptions`).

        Keyword Args:
            max_turns (int | None): The sub-agent's turn limit for calls through this tool (default: the
                agent's own ``max_turns``).
            timeout (float | None): Seconds before the caller is told the sub-agent did not answer.
            max_tokens (int | None): A token budget for each call, the sub-agent's own sub-agents included;
                exhausting it ends that call, not the run.
            max_result_chars (int | None): The longest answer handed back; a longer one is cut, with a note
                saying so (default 20,000, as for function tools; None: no limit).
            input_schema (type[BaseModel] | None): A pydantic model for structured input instead of the default
                ``{input, artifacts}``.
            input_builder (Callable | None): ``fn(parsed, run_context) -> str``: the sub-agent's input from the
                parsed ``input_schema`` object (default: the object as JSON).
            extractor (Callable | None): ``fn(result) -> str`` (sync or async): what goes back to the caller from the sub-agent's
                `RunResult` (default: its output as text).
            needs_approval (bool | Callable): ``True`` to ask the run's approver before every call, or
                ``fn(ctx, arguments) -> bool`` (or ``fn(pending) -> bool``) to decide per
                call; see `agentnb.Approval`.
            input_guardrails (list | None): Tool guardrails ``fn(ctx, tool_name, arguments)`` run before
                each call (see `agentnb.ToolGuardrail`).
            output_guardrails (list | None): Tool guardrails ``fn(ctx, tool_name, arguments, result)`` run
                on the answer before the caller reads it.
            propagate_guardrails (bool): A guardrail tripped inside the sub-agent ends the whole run
                instead of becoming ``ERROR: ...`` text for the caller.
            is_enabled (bool | Callable): ``False`` or ``fn(ctx, agent) -> bool`` (asked each
                time the calling agent starts) to offer the tool only in some runs.
            by_handle (bool | None): Whether the default input offers document handles
                (``artifacts``, an enum of the run's handles): None (the default) when the run
                holds a document beyond its input, True always (the input itself by its handle
                ``input`` included), False never.

        Raises:
            UserError: an option has a value it does not accept.
        """
        return AgentTool.build(self, name, description, **options)

    @contextmanager
    def override(self, *, model: ModelClient | str) -> Iterator[Agent]:
        """Run this agent with ``model`` inside the ``with`` block, wherever it runs (as the
        root, a sub-agent or a handoff target, in any thread), for tests of code that builds
        its agents elsewhere: ``with support.override(model=agentnb.TestModel()): ...``.
        The agent itself is left as it is; blocks nest, the innermost wins."""
        if isinstance(model, str):
            from ...models.registry import model_from_spec

            model = model_from_spec(model)
        if not hasattr(model, "request"):
            raise checks.fail(
                f"Agent({self.name!r}).override(model=...)",
                "a model client (agentnb.TestModel(), a ScriptedModel, ...) or a spec string",
                model,
            )
        derived = _derived(self)
        previous = derived.override
        derived.override = cast(ModelClient, model)
        try:
            yield self
        finally:
            derived.override = previous

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


# ``as_tool`` takes ``**options: Unpack[AsToolOptions]``: its signature lists them, for help().
lists_keywords(Agent.as_tool, AsToolOptions, as_tool_defaults())


@dataclass(slots=True)
class _Derived:
    """What is computed from one agent's fields, each with the field value it was computed
    from (a field may be reassigned after construction: then it is computed again)."""

    tools: tuple[tuple[Any, ...], tuple[Any, ...], dict[str, BaseTool]] | None = None
    output: tuple[Any, Any, Any, OutputSpec | None] | None = None
    """The output adapter, with the output type, route and handoffs it was made from."""
    input_guardrails: tuple[Any, tuple[Guardrail, ...]] | None = None
    output_guardrails: tuple[Any, tuple[Guardrail, ...]] | None = None
    model: tuple[str, ModelClient] | None = None
    """The client made from the agent's model spec string, once (runs share it)."""
    override: ModelClient | None = None
    """The model of an `Agent.override` block in force (it wins over ``model``)."""


_DERIVED: weakref.WeakKeyDictionary[Agent, _Derived] = weakref.WeakKeyDictionary()
"""Each live agent's derived data; an entry goes when its agent is collected."""


def _derived(agent: Agent) -> _Derived:
    found = _DERIVED.get(agent)
    if found is None:
        found = _DERIVED[agent] = _Derived()
    return found


def _same(seen: tuple[Any, ...], items: Sequence[Any]) -> bool:
    """Whether ``items`` holds the very objects ``seen`` held, in order."""
    return len(seen) == len(items) and all(a is b for a, b in zip(seen, items))


def model_client(agent: Agent, default: ModelClient | None = None) -> ModelClient:
    """The client ``agent`` runs with: an `Agent.override` in force, else its own (a spec
    string resolved once per agent, the agent left as it is), else ``default`` (``run(model=...)``); a `UserError` if neither."""
    found = _DERIVED.get(agent)
    if found is not None and found.override is not None:  # inside agent.override(model=...)
        return found.override
    model = agent.model
    if isinstance(model, str):
        derived = _derived(agent)
        seen = derived.model
        if seen is not None and seen[0] == model:
            return seen[1]
        from ...models.registry import model_from_spec

        client: ModelClient = model_from_spec(model)
        derived.model = (model, client)
        return client
    if model is None and default is not None:
        return default
    if model is None or not hasattr(model, "request"):
        raise UserError(
            f"Agent {agent.name!r} has no model: give it one, Agent({agent.name!r}, instructions, "
            "model) with ScriptedModel([...]), OpenAIModel('gpt-4o-mini') or a spec such as "
            "'openai:gpt-4o-mini', or give the run one: run(..., model=...)."
        )
    return model


def _handoff_tool(item: Any) -> BaseTool:
    from ..handoffs.handoff import Handoff

    handoff = item if isinstance(item, Handoff) else Handoff(item)
    return handoff.tool()


def _is_route(value: Any) -> bool:
    """A `HandoffRoute` (from the patterns layer, recognised by what the run loop calls)."""
    return hasattr(value, "apply") and hasattr(value, "output_type") and hasattr(value, "targets")
