"""Runs started inside a tool belong to the run that called the tool.

A tool that runs another agent (``await ctx.delegate(agent, input)``, or
``agentnb.run(agent, input, parent=ctx)``, pydantic-ai's delegation) starts a *child* of the
calling run, not a run of its own: the child's spans hang under the tool call's span, its
model calls are rows of the caller's calls table with their path (``boss/lookup/researcher``),
its usage adds to the caller's, and the caller's limits cover it — the model-call budget, the
token budget, the timeout (the child runs inside the caller's deadline) and the depth.

The tool gets a `RunResult` for the child (``ok=False`` with its error when it failed, like
any run), and decides what to tell its model. A failure that ends the whole run (the run's own
budget, a setup mistake, a hook that raised) ends the caller's run as soon as the tool returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ... import checks
from ...errors import AgentRunError, RunPaused, RunTimeout, UserError
from ...models.types import Message, Usage
from ..agents.agent import Agent, model_client
from ..data.deadline import DeadlinePassed, within
from ..data.result import RunResult
from ..data.state import AgentRun, sub_agent_ended, sub_agent_started
from ..tools.agent_tool import ends_the_run
from ..tools.context import ToolCallContext
from .runner import agent_loop

if TYPE_CHECKING:
    from ...trace.calls import CallRow

CHILD_OPTIONS = frozenset({"max_turns", "timeout"})
"""The run options a child run takes: everything else (limits, approver, deps, hooks, model,
...) is the calling run's."""


def check_parent(parent: Any, options: Mapping[str, Any], where: str) -> ToolCallContext:
    """``parent`` as a live tool call's context, or a one-line `UserError`."""
    if not isinstance(parent, ToolCallContext):
        raise checks.fail(
            f"{where}(parent=...)",
            "the ToolCallContext of the tool that is running (a tool parameter annotated "
            "ToolCallContext)",
            parent,
        )
    if parent.span.ended is not None or not any(a is parent.caller for a in parent.run.active):
        raise UserError(
            f"{where}(parent=...): that ToolCallContext belongs to the tool call "
            f"{parent.span.name!r} of run {parent.run.run_id}, which has ended; pass the ctx of "
            "the tool that is running now."
        )
    contradicting = sorted(set(options) - CHILD_OPTIONS)
    if contradicting:
        raise UserError(
            f"{where}(parent=...) runs inside the calling run, which sets "
            f"{', '.join(contradicting)}; pass only {' or '.join(sorted(CHILD_OPTIONS))} "
            "with parent=, or run without parent=."
        )
    return parent


async def run_child(
    agent: Agent,
    input: str | list[Message],
    parent: ToolCallContext,
    *,
    max_turns: int | None = None,
    timeout: float | None = None,
) -> RunResult:
    """Run ``agent`` on ``input`` as a child of ``parent``'s run (see the module docstring).
    Raises `UserError` before it starts for a bad agent, input or option; once started it
    does not raise (a cancellation of the calling run goes through)."""
    check_parent(parent, {}, "ctx.delegate")
    if not isinstance(agent, Agent):
        raise checks.fail("ctx.delegate(agent, ...)", "an Agent", agent)
    if not isinstance(input, str) and not (
        isinstance(input, list) and all(isinstance(m, Message) for m in input)
    ):
        raise checks.fail("ctx.delegate(..., input)", "text or a list of agentnb.Message", input)
    checks.positive_int(max_turns, "ctx.delegate(max_turns=...)")
    checks.positive_seconds(timeout, "ctx.delegate(timeout=...)")
    ctx, caller = parent.run, parent.caller
    model_client(agent, ctx.default_model)  # a UserError now for an agent without a model
    trace = ctx.trace
    depth, path = caller.depth + 1, f"{caller.path}/{agent.name}"
    messages = [Message.user(input)] if isinstance(input, str) else list(input)
    inputs = tuple(messages)
    first_row = len(trace.call_rows)
    span = trace.start(
        "agent", agent.name, parent.span, agent=agent.name, path=path, depth=depth, delegated=True
    )
    state = AgentRun(agent, messages, depth, path, (*caller.lineage, agent), span, caller.budgets)
    limit = ctx.limits.max_depth
    if caller.depth >= limit:
        error: BaseException | None = AgentRunError(
            f"maximum depth reached ({limit}) at {caller.path}: {agent.name} was not run. "
            "Raise Limits(max_depth=...) or answer with the data you have."
        )
        trace.end(span, "refused")
        return _result(state, ctx, error, inputs, first_row)
    sub_agent_started(ctx, state)
    status, error = "ok", None
    waiting = len(ctx.interruptions)
    try:
        await within(agent_loop(state, ctx, max_turns or agent.max_turns), timeout)
    except asyncio.CancelledError:
        status = "cancelled"
        raise
    except DeadlinePassed:
        status = "timeout"
        error = RunTimeout(f"{agent.name} did not finish within ctx.delegate(timeout={timeout:g}).")
    except RunPaused:  # a resume could not find its way back into the tool: fail closed
        del ctx.interruptions[waiting:]
        status = "error"
        error = UserError(
            f"{path} needs approval, and approver='pause' cannot pause inside a run a tool "
            "started (ctx.delegate): give the run an approver function instead."
        )
        if ctx.ended is None:
            ctx.ended = error
    except Exception as exc:  # the child's failure: the tool reads it in the result
        status, error = "error", exc
        if ends_the_run(exc, propagate_guardrails=False) and ctx.ended is None:
            ctx.ended = exc  # the caller's run ends with it once the tool returns
    except BaseException:  # SystemExit, a hook that raised: the caller's run ends with it
        status = "error"
        raise
    finally:
        told = f"{type(error).__name__}: {error}" if error is not None else None
        sub_agent_ended(ctx, state, span, status, told)
    return _result(state, ctx, error, inputs, first_row)


def _result(
    state: AgentRun, ctx: Any, error: BaseException | None, inputs: tuple[Message, ...], first: int
) -> RunResult:
    """The child's `RunResult`: its subtree of the caller's trace (``calls`` is filtered to its
    path), its usage summed over the calls it made."""
    rows = [
        r
        for r in ctx.trace.call_rows[first:]
        if r.path == state.path or r.path.startswith(state.path + "/")
    ]
    result = RunResult(
        state.output if error is None else None,
        error is None,
        error,
        _usage(rows),
        state.agent,
        ctx.trace,
        state.messages,
        ctx,
        partial=state.last_text if error is not None else None,
        path=state.path,
        inputs=inputs,
    )
    return result


def _usage(rows: list[CallRow]) -> Usage:
    """The provider-reported usage of ``rows`` (None where no row reported it)."""

    def total(values: list[int | None]) -> int | None:
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    return Usage(
        input_tokens=total([r.provider_tokens_in for r in rows]),
        output_tokens=total([r.provider_tokens_out for r in rows]),
        requests=sum(1 for r in rows if r.status == "ok"),
        cached_input_tokens=total([r.tokens_in_cached for r in rows]),
        cache_write_tokens=total([r.tokens_in_cache_write for r in rows]),
        reasoning_tokens=total([r.tokens_out_reasoning for r in rows]),
    )
