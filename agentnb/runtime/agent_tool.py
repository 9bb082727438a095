"""An agent exposed as a tool, with governance at the boundary.

The caller keeps control: the sub-agent runs in a fresh history (it sees only its own
instructions and what the call hands it), and the caller always gets text back — the answer,
or a plain statement of what went wrong ("did not answer within 0.3 s"), never a blank.
Before each call the guards run in order: depth, recursion (the agent already on the path),
then the run's model-call budget (the only one that ends the run).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field, ValidationError

from ..errors import (
    AgentRunError,
    BudgetExceeded,
    CallbackRaised,
    GuardrailTripped,
    MaxTurnsExceeded,
    ReplayMismatch,
    UserError,
)
from ..models.types import Message
from .approval import check_needs_approval
from .context import RunContext, TokenBudget
from .result import RunResult
from .runner import _InnerTimeout, _own_timeouts, agent_loop
from .state import AgentRun
from .tool_guardrails import check_tool_guardrails
from .tools import Tool, ToolCallContext, _brief, _clean_schema, result_text, truncate

if TYPE_CHECKING:
    from .agent import Agent


class SubAgentInput(BaseModel):
    input: str = Field(description="The task.")
    artifacts: list[str] = Field(
        default_factory=list, description="Document handles to attach; never paste documents."
    )


# Written out by hand, not generated: this spec is resent on every turn of the caller, so
# every character counts (see the cost tables in the README).
_DEFAULT_SCHEMA = {
    "type": "object",
    "properties": {
        "input": {"type": "string", "description": "The task."},
        "artifacts": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Document handles to attach; never paste documents.",
        },
    },
    "required": ["input"],
}


@dataclass(eq=False)
class AgentTool(Tool):
    """`Agent.as_tool()`'s result. Governance options (all optional):

    - ``max_turns``: the sub-agent's turn limit for this tool (default: the agent's own);
    - ``timeout``: seconds before the caller is told the sub-agent did not answer;
    - ``max_tokens``: a token budget for the sub-agent and its own sub-agents;
    - ``max_result_chars``: the longest answer handed back (longer ones are cut, with a note);
    - ``input_schema`` + ``input_builder(parsed, context) -> str``: structured input;
    - ``extractor(result) -> str``: what goes back to the caller;
    - ``needs_approval``: ``True`` or ``callable(ctx, arguments) -> bool`` (or, as before,
      ``callable(pending) -> bool``); see `agentnb.Approval`;
    - ``input_guardrails`` / ``output_guardrails``: tool guardrails (see `agentnb.ToolGuardrail`);
    - ``propagate_guardrails``: a guardrail tripped inside the sub-agent ends the whole run
      instead of becoming ``ERROR: ...`` text for the caller.
    """

    approval_here: ClassVar[bool] = False  # asked in invoke(), after the depth and path guards

    agent: Agent | None = None
    max_turns: int | None = None
    timeout: float | None = None
    max_tokens: int | None = None
    input_schema: type[BaseModel] | None = None
    input_builder: Callable[[Any, RunContext], str] | None = None
    extractor: Callable[[RunResult], str] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    propagate_guardrails: bool = False

    @classmethod
    def build(
        cls,
        agent: Agent,
        *,
        name: str | None = None,
        description: str | None = None,
        max_turns: int | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
        max_result_chars: int | None = None,
        input_schema: type[BaseModel] | None = None,
        input_builder: Callable[[Any, RunContext], str] | None = None,
        extractor: Callable[[RunResult], str] | None = None,
        needs_approval: Any = False,
        input_guardrails: Sequence[Callable[..., Any]] | None = None,
        output_guardrails: Sequence[Callable[..., Any]] | None = None,
        propagate_guardrails: bool = False,
    ) -> AgentTool:
        tool_name = name or re.sub(r"[^a-z0-9_]+", "_", agent.name.lower()).strip("_") or "agent"
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool_name):
            raise UserError(
                f"Tool name {tool_name!r} is not usable: letters, digits, _ or -, at most 64."
            )
        for label, value in (
            ("max_turns", max_turns),
            ("timeout", timeout),
            ("max_tokens", max_tokens),
            ("max_result_chars", max_result_chars),
        ):
            if value is not None and value <= 0:
                raise UserError(f"as_tool({label}=...) must be positive, got {value!r}")
        if input_schema is not None and not (
            isinstance(input_schema, type) and issubclass(input_schema, BaseModel)
        ):
            raise UserError("input_schema must be a pydantic model class")
        if input_builder is not None and input_schema is None:
            raise UserError(
                "input_builder needs input_schema: the builder receives the parsed schema object"
            )
        check_needs_approval(needs_approval, "as_tool")
        checks = (
            check_tool_guardrails(input_guardrails, "as_tool(input_guardrails=...)"),
            check_tool_guardrails(output_guardrails, "as_tool(output_guardrails=...)"),
        )
        parameters = (
            _clean_schema(input_schema.model_json_schema()) if input_schema else _DEFAULT_SCHEMA
        )
        text = description or agent.description or f"Ask the {agent.name} agent."
        return cls(
            tool_name,
            text,
            parameters,
            _unused,
            input_schema or SubAgentInput,
            max_result_chars,
            None,
            agent=agent,
            max_turns=max_turns,
            timeout=timeout,
            max_tokens=max_tokens,
            input_schema=input_schema,
            input_builder=input_builder,
            extractor=extractor,
            needs_approval=needs_approval,
            input_guardrails=checks[0],
            output_guardrails=checks[1],
            propagate_guardrails=bool(propagate_guardrails),
        )

    async def invoke(self, arguments: str, tcx: ToolCallContext) -> Any:
        agent = self.agent
        assert agent is not None
        ctx: RunContext = tcx.run
        caller: AgentRun = tcx.caller
        trace = ctx.trace
        parsed = self._parse(arguments)
        if isinstance(parsed, str):  # what was wrong with the arguments, for the caller
            tcx.status = "error"
            return parsed

        path = f"{caller.path}/{self.name}"
        refusal = self._guard(ctx, caller, path)
        if refusal is not None:
            tcx.status = "refused"
            trace.log(
                "guard",
                depth=caller.depth,
                path=caller.path,
                agent=caller.agent.name,
                target=agent.name,
                tool=self.name,
                reason=refusal,
            )
            return refusal
        try:
            text = self._input_text(parsed, ctx)
        except LookupError as exc:
            tcx.status = "error"
            return str(exc.args[0])

        if self.needs_approval:
            from .approval import check_approval

            verdict = await check_approval(self, parsed, text, tcx)
            if verdict is not None:
                tcx.status = "refused"
                return verdict

        depth = caller.depth + 1
        span = trace.start(
            "agent", agent.name, tcx.span, agent=agent.name, path=path, depth=depth, tool=self.name
        )
        budgets = caller.budgets
        if self.max_tokens is not None:
            budgets = (
                *budgets,
                TokenBudget(self.max_tokens, f"{self.name} (as_tool max_tokens)", fatal=False),
            )
        state = AgentRun(
            agent, [Message.user(text)], depth, path, (*caller.lineage, agent), span, budgets
        )
        ctx.active.append(state)
        trace.log("sub_agent_start", depth=depth, path=path, agent=agent.name)
        status, error = "ok", None
        try:
            loop = agent_loop(state, ctx, self.max_turns or agent.max_turns)
            if self.timeout is None:
                await loop
            else:  # a client's own TimeoutError must not pass for this tool's timeout
                await asyncio.wait_for(_own_timeouts(loop), self.timeout)
        except _InnerTimeout as inner:
            cause = inner.error
            if not isinstance(cause, Exception):  # SystemExit and the like end the whole run
                status = "error"
                raise cause from None
            status, error = "error", f"ERROR: {self.name} failed: {type(cause).__name__}: {cause}"
        except asyncio.TimeoutError:
            status, error = (
                "timeout",
                f"ERROR: {self.name} did not answer within {self.timeout:g} s.",
            )
        except BudgetExceeded as exc:
            if exc.fatal:
                status = "error"
                raise
            status, error = "error", f"ERROR: {self.name} stopped: {exc}"
        except MaxTurnsExceeded:
            status, error = (
                "error",
                f"ERROR: {self.name} stopped after {state.turns} turns without a final answer.",
            )
        except (ReplayMismatch, CallbackRaised):  # a hook or listener raised: the run ends
            status = "error"
            raise
        except GuardrailTripped as exc:
            status = "error"
            if self.propagate_guardrails:
                raise
            error = f"ERROR: {self.name} failed: {type(exc).__name__}: {exc}"
        except AgentRunError as exc:
            status, error = "error", f"ERROR: {self.name} failed: {type(exc).__name__}: {exc}"
        except asyncio.CancelledError:
            status = "cancelled"
            raise
        except UserError:  # agentnb used the wrong way (e.g. no approver): fix the call
            status = "error"
            raise
        except Exception as exc:  # a client crashed: the caller is told, as for any failure
            status, error = "error", f"ERROR: {self.name} failed: {type(exc).__name__}: {exc}"
        except BaseException:  # SystemExit and the like from user code end the whole run
            status = "error"
            raise
        finally:
            _discard(ctx.active, state)
            trace.close_open_under(span, "cancelled" if status == "ok" else status)
            trace.end(span, status, turns=state.turns)
            trace.log(
                "sub_agent_end",
                depth=depth,
                path=path,
                agent=agent.name,
                turns=state.turns,
                status=status,
                **({"error": error} if error is not None else {}),
            )
        if error is not None:
            tcx.status = status
            if state.last_text:
                error += f" Partial result: {truncate(state.last_text, 500)}"
            return error
        if self.extractor is None:
            return result_text(state.output, self.max_result_chars)
        result = RunResult(
            state.output,
            True,
            None,
            state.usage,
            state.agent,
            trace,
            state.messages,
            ctx,
            path=path,
        )
        return truncate(self.extractor(result), self.max_result_chars)

    def _parse(self, arguments: str) -> Any:
        """The arguments as the input model, or the error to hand back (a str)."""
        if (self.args_model or SubAgentInput) is SubAgentInput:
            # Fast path: pydantic parses and validates in one pass, 2-3x cheaper than json.loads
            # then model_validate. For this schema (a str and a list of str) the two accept the
            # same JSON and build the same object (a test compares them); what the fast path
            # rejects takes the plain path, which words the error.
            try:
                return SubAgentInput.model_validate_json(arguments)
            except ValidationError:
                pass
        return self._parse_plain(arguments)

    def _parse_plain(self, arguments: str) -> Any:
        try:
            raw = json.loads(arguments) if arguments.strip() else {}
            return (self.args_model or SubAgentInput).model_validate(raw)
        except json.JSONDecodeError as exc:
            return f"Tool error: the arguments for {self.name} are not valid JSON ({exc.msg})."
        except ValidationError as exc:
            return f"Tool error: invalid arguments for {self.name}: {_brief(exc)}. Fix them and call again."

    def _guard(self, ctx: RunContext, caller: AgentRun, path: str) -> str | None:
        limits = ctx.limits
        if caller.depth >= limits.max_depth:
            return (
                f"ERROR: maximum depth reached ({limits.max_depth}) at {caller.path}: {self.name} was not called. "
                "Answer with the data you have and say what is missing."
            )
        for on_path in caller.lineage:  # by identity (a loop: no generator on every call)
            if on_path is self.agent:
                return (
                    f"ERROR: {self.name} is already on the call path {caller.path}. "
                    "Recursion is not allowed: conclude with the data you have."
                )
        budget = limits.max_model_calls
        if budget is not None and ctx.model_calls >= budget:
            raise BudgetExceeded(
                f"Model-call budget exhausted before calling {path}: {ctx.model_calls} calls made, "
                f"Limits(max_model_calls={budget}) allows {budget}."
            )
        return None

    def _input_text(self, parsed: Any, ctx: RunContext) -> str:
        if self.input_builder is not None:
            return str(self.input_builder(parsed, ctx))
        if self.input_schema is not None:
            return parsed.model_dump_json()
        text = parsed.input
        for handle in parsed.artifacts:
            if handle not in ctx.artifacts:
                known = ", ".join(ctx.artifacts) or "none"
                raise LookupError(
                    f"ERROR: unknown document handle {handle!r}. Known handles: {known}."
                )
            text += f"\n\n## Document: {handle}\n{ctx.artifacts[handle]}"
        return text

    def __repr__(self) -> str:
        return f"AgentTool({self.name!r} -> {self.agent.name if self.agent else None!r})"


def _discard(active: list[AgentRun], state: AgentRun) -> None:
    """Remove ``state`` from the running agents, found by identity: ``list.remove`` would
    compare it field by field with each run before it."""
    for i in range(len(active) - 1, -1, -1):
        if active[i] is state:
            del active[i]
            return
    raise ValueError("the sub-agent's run is not among the running agents")


async def _unused(**_: Any) -> Any:  # an AgentTool overrides invoke(); its fn is never called
    raise NotImplementedError
