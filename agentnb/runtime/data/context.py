"""Limits and the run context shared by every agent of one hierarchy."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from ... import checks
from ...errors import UserError
from ...models.types import Message, Usage
from ...trace.spans import Trace, new_run_id

if TYPE_CHECKING:
    from ...models.base import ModelClient
    from ...models.settings import ModelSettings
    from .approvals import ApprovalRecord
    from .events import Watchers
    from .options import RunOptions
    from .state import AgentRun


@dataclass(frozen=True)
class Limits:
    """Limits for a whole run, sub-agents included. Exceeding one ends the run with ``ok=False``
    (except the depth limit, which the calling agent is told about in text and can recover from)."""

    max_depth: int = 2
    """How deep sub-agents may nest: the root agent is depth 0, its sub-agents depth 1."""
    max_model_calls: int | None = None
    """Model calls allowed across the hierarchy; exhausting it raises `BudgetExceeded`."""
    max_tokens: int | None = None
    """Tokens (input + output) allowed across the hierarchy, counted the best way available."""
    timeout: float | None = None
    """Wall-clock seconds for the whole run."""

    def __post_init__(self) -> None:
        checks.non_negative_int(self.max_depth, "Limits(max_depth=...)")
        checks.positive_int(self.max_model_calls, "Limits(max_model_calls=...)")
        checks.positive_int(self.max_tokens, "Limits(max_tokens=...)")
        checks.positive_seconds(self.timeout, "Limits(timeout=...)")


_NO_LIMITS = Limits()
"""The defaults, built once: `Limits` is frozen, so every run can share it."""


@dataclass
class TokenBudget:
    """A token allowance for one scope: the run (fatal) or one sub-agent call (not fatal)."""

    limit: int
    label: str
    fatal: bool
    used: int = 0
    method: str = "unavailable"


@dataclass
class RunContext:
    """State shared by every agent in one run: ids, limits, artifacts, counters, the trace."""

    run_id: str
    limits: Limits
    trace: Trace
    artifacts: dict[str, str] = field(default_factory=dict)
    approver: Any = None
    deps: Any = None
    """Whatever the caller passed as ``run(..., deps=...)``; tools reach it through their context."""
    max_turns: int | None = None
    """The root agent's turn limit for this run (None: the agent's own ``max_turns``)."""
    model_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    active: list[AgentRun] = field(default_factory=list)
    """Agents running now (several when sub-agents run in parallel)."""
    root: AgentRun | None = None
    default_model: ModelClient | None = None
    """``run(model=...)``: the model of every agent of the run that has none."""
    model_settings: ModelSettings | None = None
    """``run(model_settings=...)``: overrides every agent's own settings, field by field."""
    approvals: list[ApprovalRecord] = field(default_factory=list)
    """Every approval decision of the run, in order (``result.approvals``)."""
    watchers: Watchers | None = None
    """What watches the run: its event sink (a stream, ``on_event``) and hooks
    (`agentnb.runtime.data.events.Watchers`); None when nobody watches."""
    interruptions: list[Any] = field(default_factory=list)
    """The calls a paused run left waiting (`agentnb.runtime.engine.resume.Interruption`)."""
    preapproved: dict[tuple[str, str], Any] = field(default_factory=dict)
    """Calls approved on `agentnb.resume`, by (caller's path, call id): what was approved
    (`agentnb.runtime.engine.resume.Granted`). Only that exact call runs without asking."""
    resumed: Any = None
    """For a resumed run: ``fn(state, ctx)`` run before the first turn (the waiting calls)."""
    paused_agents: dict[str, tuple[str, AgentRun]] = field(default_factory=dict)
    """Sub-agents a pause went through, by path, each with the id of the call that ran it:
    their histories are part of the state."""
    scripts: dict[str, int] = field(default_factory=dict)
    """For a paused run: how far each `ScriptedModel` of its agents had gone in its script
    when the run paused, by agent name ("" for the run's default model). The engine writes it
    as the run ends (it knows the agents); the state records it."""
    paused_twice: list[str] = field(default_factory=list)
    """Sub-agent paths a pause went through in two calls at once (parallel calls of one
    sub-agent): a state cannot hold both, so ``to_state()`` refuses, saying what to do."""
    inputs: tuple[Message, ...] = ()
    """The messages the root agent started from (``result.new_items`` is what came after)."""
    ended: BaseException | None = None
    """A failure inside a run a tool started (`agentnb.runtime.engine.delegation`) that ends
    this whole run: raised as soon as the tool returns."""
    session: Any = None
    history: int = 0
    """How many of ``inputs`` (the first ones) came from the session's history."""
    """``run(session=...)``: the `agentnb.Session` whose history the run continues."""
    open_resources: dict[Any, Any] = field(default_factory=dict)
    """What the run opened and closes when it ends, each with an async ``close()``: the
    connections to MCP servers (`agentnb.runtime.tools.mcp`), shared by the hierarchy."""
    agent_loop: AgentLoop | None = None
    """How this run runs an agent below one of its agents (`run_below`): the engine's
    `agentnb.runtime.engine.runner.run_below`, given by the engine that made this context
    (this floor, and the concepts above it, do not import the engine)."""

    @classmethod
    def create(cls, options: RunOptions, *, t0: float | None = None) -> RunContext:
        """A run's context from its checked options. ``t0``: a shared clock origin
        (``perf_counter``) for runs a pattern starts together."""
        run_id = options.run_id or new_run_id()
        ctx = cls(
            run_id,
            options.run_limits or _NO_LIMITS,
            Trace(run_id, t0),
            dict(options.artifacts or {}),
            options.approver,
            options.deps,
            max_turns=options.max_turns,
        )
        return ctx

    def portable(self) -> RunContext:
        """A copy that pickles, for a pickled or copied `RunResult`: the run's records (ids,
        limits, trace, artifacts, usage, approvals) without what belonged to the live run
        (agents, models, the approver, hooks and streams, ``deps``)."""
        return replace(
            self,
            approver=None,
            deps=None,
            active=[],
            root=None,
            default_model=None,
            watchers=None,
            approvals=list(self.approvals),
            ended=None,  # the result's own error says it (a user's exception may not pickle)
            open_resources={},
            agent_loop=None,
        )

    async def run_below(self, state: AgentRun, max_turns: int, call_id: str | None = None) -> Any:
        """Run ``state`` (an agent below another of this run: a sub-agent called as a tool, a
        guardrail's agent) until it answers, within ``max_turns``; returns its final output.
        ``call_id`` names the tool call that runs a sub-agent, so that a resumed run goes on
        from the history it had at the pause (`agentnb.runtime.engine.resume`)."""
        if self.agent_loop is None:
            raise UserError(
                "This RunContext was made by hand and cannot run agents; run the agent with "
                "agentnb.run(...), which makes the context."
            )
        return await self.agent_loop(state, self, max_turns, call_id)

    @property
    def depth(self) -> int:
        """The depth of the deepest agent running now (0 when only the root runs, or none)."""
        return max((a.depth for a in self.active), default=0)


class AgentLoop(Protocol):
    """What runs an agent below another of a run until it answers (the engine supplies it)."""

    def __call__(
        self, state: AgentRun, ctx: RunContext, max_turns: int, call_id: str | None = None
    ) -> Awaitable[Any]: ...
