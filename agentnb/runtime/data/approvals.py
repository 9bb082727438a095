"""The data of approvals: each decision's record, and the marker of a call left waiting for one.

`ApprovalRecord` is what ``result.approvals`` lists; `Paused` is the result text of a call that
needs approval in a run with ``approver="pause"``, which the run loop recognises and ends the
run at (`pause_run`). Deciding is the guards' job (`agentnb.runtime.guards.approval`), resuming
the engine's (`agentnb.runtime.engine.resume`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ...errors import RunPaused, UserError
from .run_state import canonical
from .state_checks import canonical_text

if TYPE_CHECKING:
    from .context import RunContext
    from .state import AgentRun


@dataclass(frozen=True)
class ApprovalRecord:
    """One decision on a call that needed approval (``result.approvals`` lists them)."""

    tool: str
    arguments: Any
    """The call's arguments as a dict (a sub-agent's: ``input`` and ``artifacts``, or its schema's fields)."""
    who: str
    """The approver's name (``approve_all``, ``widget_approver``, your function's), or
    ``needs_approval`` when that callable failed (which rejects)."""
    decision: Literal["approved", "rejected"]
    reason: str
    time: float
    """When it was decided, in seconds on the run's trace clock."""
    wait_s: float
    path: str
    """The calling agent's path."""
    call_id: str = ""
    """The id of the call decided (with ``path``, it names the call in its agent's history)."""
    carried: bool = False
    """True in a resumed run for a decision made before the pause, read from the state."""


PAUSE = "pause"
"""``run(approver="pause")``: stop at calls that need approval instead of asking."""


@dataclass(frozen=True)
class Interruption:
    """A call that needs approval, waiting in a paused run: the call as a person sees it and
    as it will run if approved."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    """The arguments the model sent, read from its JSON."""
    agent: str
    """The agent that asked for the call."""
    path: str = ""
    """Where that agent sits: ``coordinator/legal`` for a sub-agent's call."""
    arguments_text: str = ""
    """The arguments exactly as the model sent them (JSON text): what runs."""

    @property
    def key(self) -> tuple[str, str]:
        """``(path, call_id)``: names the call even where two agents' calls share an id, as a
        key of ``resume(approvals={...})``."""
        return (self.path, self.call_id)


class Paused(str):
    """The result text of a call left waiting: a `str`, so that every path that returns a
    refusal returns it unchanged; the run loop recognises it and pauses the run."""

    interruption: Interruption

    def __new__(cls, interruption: Interruption) -> Paused:
        made = super().__new__(cls, f"call to {interruption.tool} is waiting for approval")
        made.interruption = interruption
        return made


def paused_call(
    ctx: RunContext, caller: AgentRun, tool: str, call_id: str, arguments: Any, sent: str
) -> str:
    """The marker for a call left waiting (``sent``: its arguments as the model sent them)."""
    try:
        shown = json.loads(sent) if sent.strip() else {}
    except ValueError:
        shown = None
    if not isinstance(shown, dict):  # the arguments a tool was checked with, when not the text
        shown = arguments if isinstance(arguments, dict) else {"input": arguments}
    ctx.trace.log(
        "approval_paused", depth=caller.depth, path=caller.path, agent=caller.agent.name, tool=tool
    )
    return Paused(Interruption(call_id, tool, shown, caller.agent.name, caller.path, sent))


def pause_run(ctx: RunContext, paused: list[Paused]) -> None:
    """End the run at its waiting calls (raises `RunPaused`)."""
    ctx.interruptions.extend(p.interruption for p in paused)
    names = ", ".join(f"{p.interruption.tool} ({p.interruption.call_id})" for p in paused)
    raise RunPaused(
        f"The run paused at {len(paused)} call(s) needing approval: {names}. "
        "Use agentnb.resume(agent, result.to_state(), approvals) to go on."
    )


def canonical_arguments(arguments: Any) -> str | None:
    """The canonical JSON of decided arguments (None when they are not JSON)."""
    try:
        return canonical(arguments)
    except UserError:
        return None


@dataclass(frozen=True)
class Granted:
    """A call approved on resume: run without asking only if it is this exact call."""

    tool: str
    sent: str | None = None
    """The arguments text the person approved (a waiting call)."""
    decided: str | None = None
    """The canonical arguments of a decision carried from before the pause (never None)."""

    def matches(self, tool: str, sent: str, arguments: Any) -> bool:
        if tool != self.tool:
            return False
        if self.sent is not None:
            return sent == self.sent
        # a decision records the arguments as the tool read them, or as sent (made on resume)
        return self.decided in (canonical_arguments(arguments), canonical_text(sent))
