"""Output validators: ``Agent(output_validators=[fn])``, as pydantic-ai has them.

``fn(ctx, output)`` (sync or async) gets the agent's final output, already validated against
its ``output_type``, and returns it, possibly changed. Raising ``agentnb.ModelRetry("why")``
sends "why" back to the model, which tries again; those tries count with the re-asks for a
malformed answer against the agent's ``output_retries``, and each is an ``output_retry``
event in the trace's log. Any other exception ends the run with it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UserError
from ...models.types import Message
from ..data.callbacks import check_callable

if TYPE_CHECKING:
    from ..data.context import RunContext
    from ..data.state import AgentRun


def check_output_validators(items: Any, where: str) -> tuple[Callable[..., Any], ...]:
    """The validators given to an agent, as a tuple of functions ``(ctx, output)``."""
    if not isinstance(items, (list, tuple)):
        raise UserError(
            f"{where} must be a list of functions fn(ctx, output) -> output, got {items!r}"
        )
    for fn in items:
        check_callable(fn, where, ("ctx", "output"))
    return tuple(items)


async def validated_output(
    validators: Sequence[Callable[..., Any]], ctx: RunContext, output: Any
) -> Any:
    """``output`` passed through every validator in order (a `ModelRetry` propagates)."""
    for fn in validators:
        output = fn(ctx, output)
        if inspect.isawaitable(output):
            output = await output
    return output


def retried(state: AgentRun, ctx: RunContext, reason: str) -> None:
    """Tell the model why its answer was refused (a generated user message) and log it."""
    state.messages.append(Message("user", reason, generated=True))
    state.span.attrs["output_retries"] = state.span.attrs.get("output_retries", 0) + 1
    ctx.trace.log(
        "output_retry",
        depth=state.depth,
        path=state.path,
        agent=state.agent.name,
        reason=reason,
    )
