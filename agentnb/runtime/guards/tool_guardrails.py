"""Checks around one tool call: input guardrails, approval, output guardrails.

``@tool(input_guardrails=[...], output_guardrails=[...], needs_approval=...)`` (and the same
on ``as_tool``). An input guardrail is ``fn(ctx, tool_name, arguments)`` with the arguments as
a dict, an output one ``fn(ctx, tool_name, arguments, result_text)``; sync or async, each
returns a `ToolGuardrail`: ``allow()``, ``reject(message)`` (the model reads the message as the
tool's result: the tool does not run, or its result is replaced) or ``stop(message)`` (the run
ends with `GuardrailTripped`). Each check is a ``guardrail`` span under the tool call's span.

A tool with none of these goes straight to `BaseTool.invoke`: the run loop asks
`BaseTool.checked`. A rejection is a `ToolOutcome` of kind ``rejected``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Union

from ... import checks
from ...errors import CallbackRaised, GuardrailTripped, UserError
from ..data.callbacks import check_callable
from ..data.events import being_cancelled
from ..data.off_loop import off_loop
from ..data.outcome import ToolOutcome, model_text
from ..tools.context import ToolCallContext
from ..tools.function import BaseTool


@dataclass(frozen=True, slots=True)
class ToolGuardrail:
    """A tool guardrail's verdict: build it with `allow`, `reject` or `stop`."""

    action: Literal["allow", "reject", "stop"]
    message: str = ""

    def __post_init__(self) -> None:
        checks.one_of(self.action, "ToolGuardrail(action)", ("allow", "reject", "stop"))
        checks.text(self.message, "ToolGuardrail(message=...)")

    @classmethod
    def allow(cls) -> ToolGuardrail:
        """Let the call (or its result) through."""
        return cls("allow")

    @classmethod
    def reject(cls, message: str) -> ToolGuardrail:
        """The model reads ``message`` as the tool's result; the tool does not run (input) or
        its result is replaced (output). The run goes on."""
        return cls("reject", str(message))

    @classmethod
    def stop(cls, message: str) -> ToolGuardrail:
        """End the run: ``ok=False`` with `GuardrailTripped` carrying ``message``."""
        return cls("stop", str(message))


ToolGuardrailFunction = Callable[..., Union[ToolGuardrail, Awaitable[ToolGuardrail]]]  # noqa: UP007


def check_tool_guardrails(
    items: Any, where: str, stage: Literal["input", "output"]
) -> tuple[ToolGuardrailFunction, ...]:
    """The guardrails given to ``@tool`` or ``as_tool``, as a tuple of callables, each able to
    take what a guardrail of ``stage`` is passed."""
    if items is None:
        return ()
    if not isinstance(items, (list, tuple)) or not all(callable(f) for f in items):
        raise UserError(f"{where} must be a list of functions (sync or async), got {items!r}")
    form = ("ctx", "tool_name", "arguments") + (("result_text",) if stage == "output" else ())
    for fn in items:
        check_callable(fn, where, form)
    return tuple(items)


async def invoke_checked(
    tool: BaseTool, arguments: dict[str, Any], tcx: ToolCallContext
) -> ToolOutcome:
    """`BaseTool.invoke` with the tool's guardrails and approval around it. The guardrails
    receive the arguments the tool receives (read once by the run loop)."""
    for fn in tool.input_guardrails:
        verdict = await _verdict(fn, (tcx.run, tool.name, arguments), tool, tcx, "tool_input")
        if verdict is not None:
            return ToolOutcome.rejected(verdict)
    if tool.needs_approval and tool.approval_here:
        from .approval import ask_tool_approval

        refusal = await ask_tool_approval(tool, arguments, tcx.arguments, tcx)
        if refusal is not None:
            return ToolOutcome.rejected(refusal)
    outcome = await tool.invoke(arguments, tcx)
    if outcome.kind != "handed_off":
        result = model_text(outcome)
        for fn in tool.output_guardrails:
            verdict = await _verdict(
                fn, (tcx.run, tool.name, arguments, result), tool, tcx, "tool_output"
            )
            if verdict is not None:
                return ToolOutcome.rejected(verdict)
    return outcome


async def _verdict(
    fn: ToolGuardrailFunction,
    args: tuple[Any, ...],
    tool: BaseTool,
    tcx: ToolCallContext,
    stage: str,
) -> str | None:
    """Run one tool guardrail in its span: None to go on, the rejection text, or a raise."""
    ctx, caller = tcx.run, tcx.caller
    trace = ctx.trace
    name = str(getattr(fn, "__name__", type(fn).__name__))
    span = trace.start(
        "guardrail",
        name,
        tcx.span,
        agent=caller.agent.name,
        path=caller.path,
        depth=caller.depth,
        stage=stage,
        tool=tool.name,
    )
    with trace.ends_on_failure(span):
        try:
            verdict = await off_loop(fn, *args)
        except asyncio.CancelledError:
            if being_cancelled():
                raise
            raise CallbackRaised(asyncio.CancelledError()) from None  # the guardrail's own
        if not isinstance(verdict, ToolGuardrail):
            raise UserError(
                f"Tool guardrail {name!r} returned {type(verdict).__name__}; it must return "
                "agentnb.ToolGuardrail.allow(), .reject(message) or .stop(message)."
            )
    action = verdict.action
    trace.end(span, "ok" if action == "allow" else "tripped", action=action)
    trace.log(
        "guardrail",
        depth=caller.depth,
        path=caller.path,
        agent=caller.agent.name,
        guardrail=name,
        stage=stage,
        tool=tool.name,
        action=action,
    )
    if action == "allow":
        return None
    if action == "reject":
        return verdict.message
    raise GuardrailTripped(
        f"guardrail {name!r} stopped the run at {tool.name}'s "
        f"{'arguments' if stage == 'tool_input' else 'result'}: {verdict.message}",
        guardrail=name,
        agent=tool.name,
        stage=stage,
        info=verdict.message,
    )
