"""Guardrails: checks on an agent's input and output, as functions or as agents.

A guardrail is ``fn(ctx, agent, value) -> GuardrailResult`` (sync or async), or an agent wrapped
with `agent_guardrail`. ``Agent(input_guardrails=[...])`` checks the agent's input: by default
concurrently with its first model call, which is cancelled if a tripwire fires
(`input_guardrail(fn, blocking=True)` checks before the call instead). ``output_guardrails``
check the final, validated output. A tripwire ends the run with `GuardrailTripped`; on a
sub-agent called as a tool, its caller is told in text (unless
``as_tool(propagate_guardrails=True)``). A guardrail that raises ends the run with that
exception. Each check is a ``guardrail`` span in the trace and a ``guardrail`` log event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from ... import checks
from ...errors import CallbackRaised, GuardrailTripped, UserError
from ...models.types import Message, ModelResponse
from ..data.callbacks import check_callable
from ..data.events import being_cancelled
from ..data.off_loop import off_loop
from ..data.outcome import to_text
from ..data.state import AgentRun
from ..data.tasks import run_concurrently
from ..tools.function import truncate

if TYPE_CHECKING:
    from ...trace.spans import Span
    from ..agents.agent import Agent
    from ..data.context import RunContext


@dataclass(frozen=True, slots=True)
class GuardrailResult:
    """What a guardrail found: ``tripwire=True`` ends the run; ``info`` says why (any value)."""

    tripwire: bool
    info: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.tripwire, bool):  # "no" and [] would read as True and False
            raise UserError(
                f"GuardrailResult(tripwire=...) must be True or False, got {self.tripwire!r}"
            )


GuardrailFunction = Callable[..., Union[GuardrailResult, Awaitable[GuardrailResult]]]  # noqa: UP007
"""``fn(ctx, agent, value) -> GuardrailResult``, sync or async."""


@dataclass(frozen=True, eq=False)
class Guardrail:
    """A named check of an agent's input or output; build it with `input_guardrail`,
    `output_guardrail` or `agent_guardrail` (a plain function in the lists is wrapped)."""

    fn: GuardrailFunction | None
    name: str
    blocking: bool = False
    """For input guardrails: check before the first model call rather than alongside it."""
    agent: Agent | None = None
    """For `agent_guardrail`: the agent that checks."""
    trip_when: Callable[[Any], Any] | None = None
    """For `agent_guardrail`: ``trip_when(checking_agent_output) -> bool``."""


def input_guardrail(
    fn: GuardrailFunction | None = None, *, blocking: bool = False, name: str | None = None
) -> Any:
    """An input guardrail: ``input_guardrail(fn, blocking=True)`` or ``@input_guardrail(...)``.

    ``blocking=False`` (the default) runs it alongside the agent's first model call."""

    checks.flag(blocking, "input_guardrail(blocking=...)")
    checks.text(name, "input_guardrail(name=...)", optional=True)

    def build(f: GuardrailFunction) -> Guardrail:
        return Guardrail(_callable(f, "input_guardrail"), name or _name(f), blocking)

    return build(fn) if fn is not None else build


def output_guardrail(fn: GuardrailFunction | None = None, *, name: str | None = None) -> Any:
    """An output guardrail (a plain function in ``output_guardrails`` is the same)."""

    checks.text(name, "output_guardrail(name=...)", optional=True)

    def build(f: GuardrailFunction) -> Guardrail:
        return Guardrail(_callable(f, "output_guardrail"), name or _name(f))

    return build(fn) if fn is not None else build


def agent_guardrail(
    agent: Agent,
    trip_when: Callable[[Any], Any],
    *,
    name: str | None = None,
    blocking: bool = False,
) -> Guardrail:
    """An agent as a guardrail: it reads the checked value (as text) and answers;
    ``trip_when(its_output)`` decides. Its model calls are in ``result.calls`` under its own
    name, below a ``guardrail`` span."""
    from ..agents.agent import Agent

    if not isinstance(agent, Agent):
        raise checks.fail("agent_guardrail(agent, ...)", "an Agent", agent)
    _callable(trip_when, "agent_guardrail(trip_when=...)", ("output",))
    checks.text(name, "agent_guardrail(name=...)", optional=True)
    checks.flag(blocking, "agent_guardrail(blocking=...)")
    return Guardrail(None, name or agent.name, blocking, agent, trip_when)


def as_guardrails(items: Any, where: str) -> tuple[Guardrail, ...]:
    """The guardrails of an agent field: plain functions wrapped; anything else a `UserError`."""
    from ..agents.agent import Agent

    if items is None:
        return ()
    if not isinstance(items, (list, tuple)):
        raise UserError(f"{where} must be a list of guardrails, got {type(items).__name__}")
    made = []
    for item in items:
        if isinstance(item, Guardrail):
            made.append(item)
        elif isinstance(item, Agent):
            raise UserError(
                f"{where}: wrap the agent {item.name!r} with agentnb.agent_guardrail(agent, "
                "trip_when=...) to say when its answer trips the guardrail."
            )
        else:
            made.append(Guardrail(_callable(item, where), _name(item)))
    return tuple(made)


def _callable(fn: Any, where: str, form: tuple[str, ...] = ("ctx", "agent", "value")) -> Any:
    checks.function(fn, where, what="a function (sync or async)")
    check_callable(fn, where, form)
    return fn


def _name(fn: Any) -> str:
    return str(getattr(fn, "__name__", type(fn).__name__))


# -- running them


async def check(guard: Guardrail, value: Any, state: AgentRun, ctx: RunContext, stage: str) -> None:
    """Run one guardrail on ``value`` in its own span; raise `GuardrailTripped` on a tripwire."""
    trace = ctx.trace
    agent = state.agent
    span = trace.start(
        "guardrail",
        guard.name,
        state.span,
        agent=agent.name,
        path=state.path,
        depth=state.depth,
        stage=stage,
    )
    with trace.ends_on_failure(span):
        if guard.agent is not None:
            result = await _ask_agent(guard, value, state, ctx, span)
        else:
            assert guard.fn is not None
            try:
                result = await off_loop(guard.fn, ctx, agent, value)
            except asyncio.CancelledError:
                if being_cancelled():  # the run is being cancelled, not failing
                    raise
                # raised by the guardrail itself: the run ends with it (RunCancelled), as a
                # hook's would, instead of it leaving run_sync as the run's own cancellation
                raise CallbackRaised(asyncio.CancelledError()) from None
        if not isinstance(result, GuardrailResult):
            raise UserError(
                f"Guardrail {guard.name!r} returned {type(result).__name__}; it must return "
                "agentnb.GuardrailResult(tripwire=..., info=...)."
            )
    tripped = bool(result.tripwire)
    shown = None if result.info is None else truncate(to_text(result.info), 200)
    trace.end(span, "tripped" if tripped else "ok", tripwire=tripped, info=shown)
    trace.log(
        "guardrail",
        depth=state.depth,
        path=state.path,
        agent=agent.name,
        guardrail=guard.name,
        stage=stage,
        tripwire=tripped,
    )
    if tripped:
        raise GuardrailTripped(
            f"guardrail {guard.name!r} tripped on {agent.name}'s {stage}"
            + (f": {shown}" if shown else ""),
            guardrail=guard.name,
            agent=agent.name,
            stage=stage,
            info=result.info,
        )


async def run_guardrails(
    guards: Sequence[Guardrail], value: Any, state: AgentRun, ctx: RunContext, stage: str
) -> None:
    """Run ``guards`` together; the first tripwire (or error) stops the others."""
    if len(guards) == 1:
        await check(guards[0], value, state, ctx, stage)
    else:
        await run_concurrently([check(g, value, state, ctx, stage) for g in guards])


async def start_input_checks(
    guards: Sequence[Guardrail], state: AgentRun, ctx: RunContext
) -> asyncio.Task[None] | None:
    """Check the agent's input: blocking guardrails now, the others in a task returned to be
    raced with the first model call (see `first_call`)."""
    value = _input_of(state.messages)
    blocking = [g for g in guards if g.blocking]
    if blocking:
        await run_guardrails(blocking, value, state, ctx, "input")
    concurrent = [g for g in guards if not g.blocking]
    if not concurrent:
        return None
    return asyncio.create_task(run_guardrails(concurrent, value, state, ctx, "input"))


async def first_call(
    call: Coroutine[Any, Any, ModelResponse], checks: asyncio.Task[None]
) -> ModelResponse:
    """The first model call, raced with the input guardrails: a tripwire cancels the call in
    flight; a response that arrives first is held until the guardrails pass."""
    task = asyncio.create_task(call)
    try:
        done, _ = await asyncio.wait((task, checks), return_when=asyncio.FIRST_COMPLETED)
        if checks in done:
            checks.result()  # a tripwire or a guardrail's error raises; the call is cancelled below
            return await task
        if task.exception() is not None:
            return task.result()  # the call failed: its error ends the run
        await checks
        return task.result()
    finally:
        pending = [t for t in (task, checks) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


async def _ask_agent(
    guard: Guardrail, value: Any, state: AgentRun, ctx: RunContext, span: Span
) -> GuardrailResult:
    """Run the guardrail's agent on ``value`` below ``span``; its answer decides."""
    agent = guard.agent
    assert agent is not None and guard.trip_when is not None
    if any(agent is above for above in state.lineage):
        raise UserError(
            f"The guardrail {guard.name!r} runs the agent {agent.name!r}, which is already "
            f"running here ({state.path}): a guardrail agent may not guard itself or an agent "
            "that runs it. Give the guardrail an agent of its own, without that guardrail."
        )
    trace = ctx.trace
    depth, path = state.depth + 1, f"{state.path}/{guard.name}"
    agent_span = trace.start(
        "agent", agent.name, span, agent=agent.name, path=path, depth=depth, role="guardrail"
    )
    sub = AgentRun(
        agent,
        [Message.user(to_text(value))],
        depth,
        path,
        (*state.lineage, agent),
        agent_span,
        state.budgets,
    )
    ctx.active.append(sub)
    status = "error"
    try:
        output = await ctx.run_below(sub, agent.max_turns)
        status = "ok"
    except asyncio.CancelledError:
        status = "cancelled"
        raise
    finally:
        ctx.active[:] = [a for a in ctx.active if a is not sub]
        trace.close_open_under(agent_span, "cancelled" if status == "ok" else status)
        trace.end(agent_span, status, turns=sub.turns)
    tripped = await off_loop(guard.trip_when, output)
    return GuardrailResult(bool(tripped), output)


def _input_of(messages: list[Message]) -> str:
    """What an input guardrail checks: the newest user message."""
    for message in reversed(messages):
        if message.role == "user":
            return message.content or ""
    return ""
