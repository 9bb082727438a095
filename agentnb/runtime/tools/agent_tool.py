"""An agent exposed as a tool, with governance at the boundary.

The caller keeps control: the sub-agent runs in a fresh history (it sees only its own
instructions and what the call hands it), and the caller always gets text back — the answer,
or a plain statement of what went wrong ("did not answer within 0.3 s"), never a blank.
Before each call the guards run in order: depth, recursion (the agent already on the path),
then the run's model-call budget (the only one that ends the run).

The tool is a concept, like any tool; running the sub-agent's turns is the engine's, reached
through the run's context (`RunContext.run_below`), so this floor never imports the engine.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Unpack

from pydantic import BaseModel, Field

from ... import checks
from ...errors import (
    BudgetExceeded,
    CallbackRaised,
    GuardrailTripped,
    MaxTurnsExceeded,
    ReplayMismatch,
    RunPaused,
    UserError,
)
from ...models.types import Message, ToolSpec
from ...trace.tokens import preload
from ...words import plural
from ..data.context import RunContext, TokenBudget
from ..data.deadline import DeadlinePassed, within
from ..data.options import AS_TOOL_KEYWORDS as AS_TOOL_KEYWORDS
from ..data.options import AsToolOptions
from ..data.options import NeedsApproval as NeedsApproval
from ..data.outcome import ToolOutcome, ToolStatus, model_text
from ..data.result import RunResult
from ..data.signatures import lists_keywords
from ..data.state import AgentRun, sub_agent_ended, sub_agent_started
from ..guards.approval import ask_approval, check_needs_approval
from ..guards.tool_guardrails import check_tool_guardrails
from . import handles
from .context import ToolCallContext
from .enabled import check_is_enabled
from .function import (
    DEFAULT_MAX_RESULT_CHARS,
    BaseTool,
    clip_result,
    truncate,
    validate_arguments,
)
from .schema import clean_schema

if TYPE_CHECKING:
    from ..agents.agent import Agent


class SubAgentInput(BaseModel):
    """What a call of a sub-agent's default input is validated against; the schema the model
    is shown is `.handles`' (its ``artifacts`` offered only where there is a document)."""

    input: str = Field(description="The task.")
    artifacts: list[str] = Field(
        default_factory=list, description="Document handles to attach; never paste documents."
    )


_INPUT_ONLY = {handles.INPUT: ""}
"""The documents of a run that has only its input: what `spec` (outside a run) describes."""


class _Admitted(NamedTuple):
    """A call that passed the guards and the approval: what the sub-agent runs on."""

    text: str
    path: str


_FAILURES: tuple[tuple[type[BaseException], ToolStatus, str], ...] = (
    (DeadlinePassed, "timeout", "{tool} did not answer within {timeout:g} s."),
    (BudgetExceeded, "error", "{tool} stopped: {error}"),
    (MaxTurnsExceeded, "error", "{tool} stopped after {turns} without a final answer."),
    (Exception, "error", "{tool} failed: {kind}: {error}"),
)
"""A sub-agent's failure -> ``(span status, text its caller reads)``: the first row whose
exception type matches. Failures that end the whole run are not here (see `ends_the_run`)."""


def ends_the_run(exc: BaseException, propagate_guardrails: bool) -> bool:
    """Failures a caller cannot act on: they end the run instead of becoming text."""
    if isinstance(exc, BudgetExceeded):
        return exc.fatal  # the run's own budget; a sub-agent's own budget only ends it
    if isinstance(exc, GuardrailTripped):
        return propagate_guardrails
    # A replay that went off the recording, agentnb used the wrong way (no approver), a hook
    # or on_event that raised: each needs fixing by a person. Cancellation and interrupts
    # are not Exceptions.
    return isinstance(
        exc, (ReplayMismatch, RunPaused, UserError, CallbackRaised)
    ) or not isinstance(exc, Exception)


@dataclass(eq=False)
class AgentTool(BaseTool):
    """An agent as a tool, made by `Agent.as_tool` (see there for each option).

    A call goes through three steps: `admit` (arguments, guards, approval), `run` (the
    sub-agent in its own history, within its limits) and `report` (the text the caller reads).
    """

    agent: Agent
    max_turns: int | None = None
    timeout: float | None = None
    max_tokens: int | None = None
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    input_schema: type[BaseModel] | None = None
    input_builder: Callable[[Any, RunContext], str] | None = None
    extractor: Callable[[RunResult], str | Awaitable[str]] | None = None
    """``fn(result) -> str`` (sync or async): what goes back to the caller."""
    propagate_guardrails: bool = False
    """A guardrail tripped inside the sub-agent ends the whole run instead of becoming
    ``ERROR: ...`` text for the caller."""
    by_handle: bool | None = None
    """Whether the default input offers document handles (``artifacts``): None when the run
    holds a document beyond its input, True always (the input by its handle ``input``
    included), False never. See `.handles`."""
    _run_specs: dict[tuple[str, ...], ToolSpec] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    approval_here: ClassVar[bool] = False  # asked in admit(), after the depth and path guards

    @classmethod
    def build(
        cls,
        agent: Agent,
        name: str | None = None,
        description: str | None = None,
        **options: Unpack[AsToolOptions],
    ) -> AgentTool:
        """Check the options (raises `UserError`) and make the tool; see `Agent.as_tool`."""
        unknown = sorted(set(options) - AS_TOOL_KEYWORDS)
        if unknown:
            raise UserError(
                f"Unknown as_tool option(s) {', '.join(unknown)}; as_tool takes name, "
                f"description, {', '.join(sorted(AS_TOOL_KEYWORDS))}."
            )
        max_turns = options.get("max_turns")
        timeout = options.get("timeout")
        max_tokens = options.get("max_tokens")
        max_result_chars = options.get("max_result_chars", DEFAULT_MAX_RESULT_CHARS)
        input_schema = options.get("input_schema")
        input_builder = options.get("input_builder")
        extractor = options.get("extractor")
        needs_approval = options.get("needs_approval", False)
        propagate_guardrails = options.get("propagate_guardrails", False)
        by_handle = handles.check_by_handle(options.get("by_handle"), "as_tool")
        checks.text(name, "as_tool(name=...)", optional=True)
        checks.text(description, "as_tool(description=...)", optional=True)
        tool_name = name or re.sub(r"[^a-z0-9_]+", "_", agent.name.lower()).strip("_") or "agent"
        if not isinstance(tool_name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool_name):
            raise UserError(
                f"Tool name {tool_name!r} is not usable: letters, digits, _ or -, at most 64."
            )
        checks.positive_int(max_turns, "as_tool(max_turns=...)")
        checks.positive_seconds(timeout, "as_tool(timeout=...)")
        checks.positive_int(max_tokens, "as_tool(max_tokens=...)")
        if max_tokens is not None:  # the budget counts during runs: load the tokenizer now
            preload(None, *([agent.model] if agent.model is not None else []))
        checks.positive_int(max_result_chars, "as_tool(max_result_chars=...)")
        if input_schema is not None and not (
            isinstance(input_schema, type) and issubclass(input_schema, BaseModel)
        ):
            raise UserError(
                f"as_tool(input_schema=...) must be a pydantic model class, got {input_schema!r}"
            )
        if input_builder is not None and input_schema is None:
            raise UserError(
                "input_builder needs input_schema: the builder receives the parsed schema object"
            )
        for label, fn in (("input_builder", input_builder), ("extractor", extractor)):
            if fn is not None and not callable(fn):
                raise UserError(f"as_tool({label}=...) must be a function, got {fn!r}")
        check_needs_approval(needs_approval, "as_tool")
        guards = (
            check_tool_guardrails(
                options.get("input_guardrails"), "as_tool(input_guardrails=...)", "input"
            ),
            check_tool_guardrails(
                options.get("output_guardrails"), "as_tool(output_guardrails=...)", "output"
            ),
        )
        if not isinstance(propagate_guardrails, bool):
            raise UserError(
                "as_tool(propagate_guardrails=...) must be True or False, "
                f"got {propagate_guardrails!r}"
            )
        parameters = (
            clean_schema(input_schema.model_json_schema())
            if input_schema
            else handles.sub_agent_parameters(handles.offered(_INPUT_ONLY, by_handle))
        )
        text = description or agent.description or f"Ask the {agent.name} agent."
        return cls(
            tool_name,
            text,
            parameters,
            agent,
            max_turns=max_turns,
            timeout=timeout,
            max_tokens=max_tokens,
            max_result_chars=max_result_chars,
            input_schema=input_schema,
            input_builder=input_builder,
            extractor=extractor,
            needs_approval=needs_approval,
            input_guardrails=guards[0],
            output_guardrails=guards[1],
            propagate_guardrails=propagate_guardrails,
            by_handle=by_handle,
            is_enabled=check_is_enabled(options.get("is_enabled", True), "as_tool"),
        )

    def sub_agents(self) -> tuple[tuple[str | None, Agent], ...]:
        """The one agent this tool runs."""
        return ((None, self.agent),)

    def spec_for(self, ctx: RunContext) -> ToolSpec:
        """The spec with the run's document handles as an enum, or with no ``artifacts``
        parameter when there is nothing to route (see `.handles`); an ``input_schema``'s as is."""
        if self.input_schema is not None:
            return self.spec
        offered = handles.offered(ctx.artifacts, self.by_handle)
        spec = self._run_specs.get(offered)
        if spec is None:
            if len(self._run_specs) > 64:  # runs with ever new document names
                self._run_specs.clear()
            parameters = handles.sub_agent_parameters(offered)
            spec = self._run_specs[offered] = ToolSpec(self.name, self.description, parameters)
        return spec

    async def invoke(self, arguments: dict[str, Any], tcx: ToolCallContext) -> ToolOutcome:
        """Admit the call, run the sub-agent, report to the caller (see the class docstring)."""
        admitted = await self.admit(arguments, tcx)
        if isinstance(admitted, ToolOutcome):
            return admitted
        state, failure = await self.run(admitted, tcx)
        return await self.report(state, failure, tcx)

    async def admit(
        self, arguments: dict[str, Any], tcx: ToolCallContext
    ) -> _Admitted | ToolOutcome:
        """Validate the arguments, run the guards and ask for approval. Returns what the
        sub-agent runs on, or how the call ended instead."""
        ctx, caller = tcx.run, tcx.caller
        parsed = validate_arguments(self.input_schema or SubAgentInput, self.name, arguments)
        if isinstance(parsed, ToolOutcome):  # what was wrong with the arguments, for the caller
            return parsed
        path = f"{caller.path}/{self.name}"
        refusal = self._guard(ctx, caller, path)
        if refusal is not None:
            ctx.trace.log(
                "guard",
                depth=caller.depth,
                path=caller.path,
                agent=caller.agent.name,
                target=self.agent.name,
                tool=self.name,
                reason=model_text(refusal),
            )
            return refusal
        try:
            text = self._input_text(parsed, ctx)
        except LookupError as exc:
            return ToolOutcome.error(str(exc.args[0]))
        if self.needs_approval:
            verdict = await ask_approval(self, parsed, text, tcx)
            if verdict is not None:
                return ToolOutcome.rejected(verdict)
        return _Admitted(text, path)

    async def run(
        self, admitted: _Admitted, tcx: ToolCallContext
    ) -> tuple[AgentRun, ToolOutcome | None]:
        """Run the sub-agent under its own span, within this tool's limits. Returns its run and,
        if it failed, the outcome its caller reads; a failure that ends the run is raised."""
        agent, ctx, caller = self.agent, tcx.run, tcx.caller
        trace, depth, path = ctx.trace, caller.depth + 1, admitted.path
        span = trace.start(
            "agent", agent.name, tcx.span, agent=agent.name, path=path, depth=depth, tool=self.name
        )
        budgets = caller.budgets
        if self.max_tokens is not None:
            budget = TokenBudget(self.max_tokens, f"{self.name} (as_tool max_tokens)", fatal=False)
            budgets = (*budgets, budget)
        state = AgentRun(
            agent,
            [Message.user(admitted.text)],
            depth,
            path,
            (*caller.lineage, agent),
            span,
            budgets,
        )
        sub_agent_started(ctx, state)
        status, failure = "ok", None
        try:
            turns = self.max_turns or agent.max_turns
            await within(ctx.run_below(state, turns, tcx.call_id), self.timeout)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                status = "cancelled"
                raise
            if ends_the_run(exc, self.propagate_guardrails):
                status = "error"
                raise
            failure = self._failure(exc, state)
            status = failure.status
        finally:
            error = model_text(failure) if failure is not None else None
            sub_agent_ended(ctx, state, span, status, error)
        return state, failure

    async def report(
        self, state: AgentRun, failure: ToolOutcome | None, tcx: ToolCallContext
    ) -> ToolOutcome:
        """What the caller reads: the answer (or the extractor's, awaited when it is async),
        cut to ``max_result_chars``; for a failure, what went wrong and the partial answer.
        An extractor that raises is a failed call, told to the caller like any other."""
        if failure is not None:
            if state.last_text:
                partial = f" Partial result: {truncate(state.last_text, 500)}"
                return ToolOutcome.error(failure.message + partial, status=failure.status)
            return failure
        if self.extractor is None:
            return ToolOutcome.ok(clip_result(state.output, self.max_result_chars))
        result = RunResult(
            state.output,
            True,
            None,
            state.usage,
            state.agent,
            tcx.run.trace,
            state.messages,
            tcx.run,
            path=state.path,
        )
        try:
            extracted = self.extractor(result)
            if inspect.isawaitable(extracted):
                extracted = await extracted
        except Exception as exc:
            return ToolOutcome.error(f"{self.name}'s extractor failed: {type(exc).__name__}: {exc}")
        return ToolOutcome.ok(clip_result(extracted, self.max_result_chars))

    def _failure(self, exc: BaseException, state: AgentRun) -> ToolOutcome:
        for kind, status, template in _FAILURES:
            if isinstance(exc, kind):
                text = template.format(
                    tool=self.name,
                    timeout=self.timeout or 0,
                    turns=plural(state.turns, "turn"),
                    kind=type(exc).__name__,
                    error=exc,
                )
                return ToolOutcome.error(text, status=status)
        raise AssertionError("the last row of _FAILURES matches every Exception")

    def _guard(self, ctx: RunContext, caller: AgentRun, path: str) -> ToolOutcome | None:
        """The depth and recursion guards: a refusal the caller can recover from, or None."""
        limits = ctx.limits
        if caller.depth >= limits.max_depth:
            return ToolOutcome.error(
                f"maximum depth reached ({limits.max_depth}) at {caller.path}: {self.name} was not called. "
                "Answer with the data you have and say what is missing.",
                status="refused",
            )
        for on_path in caller.lineage:  # by identity: two agents may be equal field by field
            if on_path is self.agent:
                return ToolOutcome.error(
                    f"{self.name} is already on the call path {caller.path}. "
                    "Recursion is not allowed: conclude with the data you have.",
                    status="refused",
                )
        budget = limits.max_model_calls
        if budget is not None and ctx.model_calls >= budget:
            raise BudgetExceeded(
                f"Model-call budget exhausted before calling {path}: {plural(ctx.model_calls, 'call')} made, "
                f"Limits(max_model_calls={budget}) allows {budget}."
            )
        return None

    def _input_text(self, parsed: Any, ctx: RunContext) -> str:
        if self.input_builder is not None:
            return str(self.input_builder(parsed, ctx))
        if self.input_schema is not None:
            return str(parsed.model_dump_json())
        text: str = parsed.input
        for handle in parsed.artifacts:
            if handle not in ctx.artifacts:
                known = ", ".join(ctx.artifacts) or "none"
                raise LookupError(f"unknown document handle {handle!r}. Known handles: {known}.")
            text += f"\n\n## Document: {handle}\n{ctx.artifacts[handle]}"
        return text

    def __repr__(self) -> str:
        return f"AgentTool({self.name!r} -> {self.agent.name!r})"


def as_tool_defaults() -> dict[str, Any]:
    """The defaults of the as-tool options: `AgentTool`'s fields'."""
    return {f.name: f.default for f in fields(AgentTool) if f.default is not MISSING}


# `build` takes ``**options: Unpack[AsToolOptions]``: its signature lists them, as `Agent.as_tool`'s does.
lists_keywords(AgentTool.build, AsToolOptions, as_tool_defaults())
