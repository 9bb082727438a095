"""A person's approval before a tool call: ``@tool(needs_approval=...)`` for a function,
``as_tool(..., needs_approval=...)`` for a sub-agent.

Who approves is set per run: ``run(..., approver=fn)``, where ``fn(pending) -> Approval`` may be
sync (run in a worker thread, off the event loop, since it may wait for a person) or async.
`approve_all` and `reject_all` are for tests and scripts. A run that sets none uses the default
approver installed with `set_default_approver`: the notebook layer installs one when it loads
(a widget showing the call, with Approve / Reject and a reason), so in Jupyter a person is asked.
The runtime never imports the notebook layer.

What happens:

- approved: the tool (or sub-agent) runs as usual;
- rejected: the caller gets ``"call to <tool> rejected: <reason>"`` as the tool result and the
  run goes on (the model can rephrase, ask for something else, or answer without it);
- no approver and no notebook: the run ends with ``ok=False`` and a `NoApprover` error. A call
  that needs approval is never approved silently. In a notebook, a cell blocked in `run_sync`
  (``%%agent_run``) cannot receive a widget's click, since the kernel's thread is the one
  waiting: there the question is asked as text on the stdin channel, like ``input()``
  (``await agentnb.run(...)`` gets the widget);
- an approver or a ``needs_approval`` callable that raises counts as a rejection (fail closed).

Every decision is listed in ``result.approvals`` (`ApprovalRecord`: tool, arguments, who,
decision, reason, time). The wait is traced apart from model latency: an ``approval`` span under the tool-call span,
``approval_wait_s`` on the tool-call span, and an ``approval`` log event with ``wait_s``.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Protocol, Union

from ... import checks
from ...errors import NoApprover, UserError
from ..data.approvals import PAUSE, paused_call
from ..data.approvals import ApprovalRecord as ApprovalRecord
from ..data.callbacks import check_callable
from ..data.off_loop import off_loop
from ..tools.context import ToolCallContext
from ..tools.function import APPROVAL_FORMS, BaseTool

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..data.protocols import AgentLike
    from ..data.state import AgentRun


@dataclass(frozen=True, slots=True)
class Approval:
    """An approver's decision. A rejection's ``reason`` is passed on to the calling agent."""

    approved: bool
    reason: str = ""

    def __post_init__(self) -> None:
        checks.flag(self.approved, "Approval(approved)")
        checks.text(self.reason, "Approval(reason=...)")


@dataclass(frozen=True)
class PendingCall:
    """A sub-agent call waiting for approval: what an approver (or a person) gets to see."""

    agent: str
    """The sub-agent that would run."""
    tool: str
    """The tool name the caller used."""
    input: str
    """The task as the caller wrote it (for a structured input, the text built from it)."""
    artifacts: dict[str, str] = field(default_factory=dict)
    """Documents attached by handle, with their text."""
    path: str = ""
    """Where the sub-agent would run, e.g. ``coordinator/legal``."""
    caller: str = ""
    """The calling agent."""
    arguments: Any = None
    """The parsed arguments (a pydantic object), for ``needs_approval`` callables that need fields."""
    run_id: str = ""


Approver = Callable[[PendingCall], Union[Approval, bool, Awaitable[Union[Approval, bool]]]]  # noqa: UP007
"""A function pending -> Approval (or True / False), sync or async."""


def approve_all(pending: PendingCall) -> Approval:
    """An approver that approves every call."""
    return Approval(True, "approve_all")


def reject_all(pending: PendingCall) -> Approval:
    """An approver that rejects every call."""
    return Approval(False, "the run's approver rejects every call (reject_all)")


_INSTANT: frozenset[Any] = frozenset({approve_all, reject_all})
"""Approvers known not to block: called on the loop, without a worker thread."""


class SubAgentCall(Protocol):
    """What approval reads of an agent called as a tool (`AgentTool`, which imports this)."""

    @property
    def name(self) -> str: ...

    @property
    def agent(self) -> AgentLike: ...

    @property
    def input_schema(self) -> type[BaseModel] | None: ...

    @property
    def needs_approval(self) -> Any: ...


async def ask_approval(
    tool: SubAgentCall, parsed: Any, text: str, tcx: ToolCallContext
) -> str | None:
    """Ask for approval of a call to the sub-agent ``tool`` if it needs one (see `decide`)."""
    ctx, caller = tcx.run, tcx.caller
    handles = list(getattr(parsed, "artifacts", None) or []) if tool.input_schema is None else []
    pending = PendingCall(
        agent=tool.agent.name,
        tool=tool.name,
        input=parsed.input if tool.input_schema is None else text,
        artifacts={h: ctx.artifacts[h] for h in handles if h in ctx.artifacts},
        path=f"{caller.path}/{tool.name}",
        caller=caller.agent.name,
        arguments=parsed,
        run_id=ctx.run_id,
    )
    return await decide(tool.needs_approval, pending, parsed.model_dump(mode="json"), tcx)


async def ask_tool_approval(
    tool: BaseTool, arguments: dict[str, Any], text: str, tcx: ToolCallContext
) -> str | None:
    """Ask for approval of a call to the function tool ``tool`` if it needs one (see `decide`)."""
    ctx, caller = tcx.run, tcx.caller
    pending = PendingCall(
        agent=tool.name,
        tool=tool.name,
        input=text,
        path=caller.path,
        caller=caller.agent.name,
        arguments=arguments,
        run_id=ctx.run_id,
    )
    return await decide(tool.needs_approval, pending, arguments, tcx)


def check_needs_approval(value: Any, where: str) -> None:
    """A `UserError` unless ``value`` is True, False or a callable taking ``(ctx, arguments)``
    or ``(pending)``."""
    if value is not True and value is not False and not callable(value):
        raise UserError(
            f"{where}(needs_approval=...) must be True, False or a callable "
            f"(ctx, arguments) -> bool, got {value!r}"
        )
    if callable(value):
        check_callable(value, f"{where}(needs_approval=...)", *APPROVAL_FORMS)


async def decide(
    needs_approval: Any, pending: PendingCall, arguments: dict[str, Any], tcx: ToolCallContext
) -> str | None:
    """Ask whoever approves about ``pending`` if ``needs_approval`` says it must be asked.

    Returns None when the call may go ahead, else the text the model gets back as the tool's
    result. Raises `NoApprover` (which ends the run) when nobody can be asked. A
    ``needs_approval`` callable takes ``(ctx, arguments)`` or, as ``as_tool`` has always
    accepted, ``(pending)``.
    """
    ctx, caller = tcx.run, tcx.caller
    trace = ctx.trace
    if needs_approval is not True:
        try:
            args = (ctx, arguments) if _takes_two(needs_approval) else (pending,)
            needed = await off_loop(needs_approval, *args)
        except Exception as exc:
            reason = f"needs_approval raised {type(exc).__name__}: {exc}"
            _record(ctx, caller, pending, arguments, "needs_approval", False, reason, 0.0, tcx)
            return f"call to {pending.tool} rejected: {reason}"
        if not needed:
            return None
    granted = ctx.preapproved.pop((caller.path, tcx.call_id), None)
    if granted is not None:  # approved on agentnb.resume (recorded there): this exact call only
        if granted.matches(pending.tool, tcx.arguments, arguments):
            return None
        return f"call to {pending.tool} rejected: it is not the call that was approved"
    if ctx.approver == PAUSE:
        return paused_call(ctx, caller, pending.tool, tcx.call_id, arguments, tcx.arguments)
    approver = ctx.approver if ctx.approver is not None else default_approver(pending)
    span = trace.start(
        "approval",
        pending.tool,
        tcx.span,
        agent=caller.agent.name,
        path=caller.path,
        depth=caller.depth,
        target=pending.agent,
    )
    started = time.perf_counter()
    with trace.ends_on_failure(span):
        try:
            verdict = await _ask(approver, pending)
        except UserError:
            raise
        except Exception as exc:  # a broken approver rejects: a call is never approved by accident
            verdict = Approval(False, f"the approver failed ({type(exc).__name__}: {exc})")
    waited = time.perf_counter() - started
    status = "ok" if verdict.approved else "refused"
    trace.end(span, status, approved=verdict.approved, reason=verdict.reason, wait_s=waited)
    tcx.span.attrs["approval_wait_s"] = waited
    who = str(getattr(approver, "__name__", type(approver).__name__))
    _record(ctx, caller, pending, arguments, who, verdict.approved, verdict.reason, waited, tcx)
    if verdict.approved:
        return None
    return f"call to {pending.tool} rejected: {verdict.reason or 'no reason given'}"


def _record(
    ctx: Any,
    caller: AgentRun,
    pending: PendingCall,
    arguments: dict[str, Any],
    who: str,
    approved: bool,
    reason: str,
    waited: float,
    tcx: ToolCallContext,
) -> None:
    record_decision(
        ctx,
        caller,
        pending.agent,
        pending.tool,
        arguments,
        who,
        approved,
        reason,
        waited,
        tcx.call_id,
    )


def record_decision(
    ctx: Any,
    caller: AgentRun,
    target: str,
    tool: str,
    arguments: Any,
    who: str,
    approved: bool,
    reason: str,
    waited: float,
    call_id: str,
) -> None:
    """A decision, as a log line of the trace and a row of ``result.approvals`` (also used
    by `agentnb.resume` for the decisions given to it)."""
    ctx.trace.log(
        "approval",
        depth=caller.depth,
        path=caller.path,
        agent=target,
        tool=tool,
        approved=approved,
        reason=reason,
        wait_s=waited,
    )
    ctx.approvals.append(
        ApprovalRecord(
            tool,
            arguments,
            who,
            "approved" if approved else "rejected",
            reason,
            ctx.trace.now(),
            waited,
            caller.path,
            call_id,
        )
    )


def _takes_two(fn: Any) -> bool:
    """Whether ``fn`` takes ``(ctx, arguments)`` rather than ``(pending)``."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


async def _ask(approver: Any, pending: PendingCall) -> Approval:
    is_async = inspect.iscoroutinefunction(approver) or inspect.iscoroutinefunction(
        type(approver).__call__  # an object with an async __call__
    )
    if is_async or any(approver is instant for instant in _INSTANT):
        answer = approver(pending)
    else:  # a sync approver may wait for a person: keep the loop (and other branches) running
        answer = await asyncio.to_thread(approver, pending)
    if inspect.isawaitable(answer):
        answer = await answer
    if isinstance(answer, bool):
        return Approval(answer)
    if not isinstance(answer, Approval):
        raise UserError(
            f"The approver returned {type(answer).__name__}; it must return "
            "agentnb.Approval(approved, reason) (or True / False)."
        )
    return answer


DefaultApprover = Callable[[PendingCall], Optional[Approver]]  # noqa: UP045
"""Picks the approver for a call when the run set none; None when nobody can be asked here."""

_default: DefaultApprover | None = None


def set_default_approver(default: DefaultApprover | None) -> DefaultApprover | None:
    """Install the approver used by runs that set none (None: no default); returns the old one.

    The notebook layer installs one when it loads; it returns None outside a kernel, where a
    call that needs approval then ends the run with `NoApprover`.
    """
    global _default
    previous, _default = _default, default
    return previous


def default_approver(pending: PendingCall) -> Approver:
    """The approver of a run that set none: the installed default's pick, else `NoApprover`."""
    approver = _default(pending) if _default is not None else None
    if approver is not None:
        return approver
    raise NoApprover(
        f"The call to {pending.tool} at {pending.path} needs approval, but the run has no "
        "approver. Pass run(..., approver=fn) with fn(pending) -> agentnb.Approval(...), "
        "or approver=agentnb.approve_all / agentnb.reject_all in tests and scripts."
    )


def in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (where a widget can ask a person)."""
    if "ipykernel" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None
