"""Runs that pause at calls needing approval, and resume later (even in another process).

``run(..., approver="pause")`` does not ask anyone: a call that needs approval is left
undone, the other calls of that turn run, and the run ends with ``ok=False``, `RunPaused` as
its error and ``result.interruptions`` listing the calls waiting (call id, tool, arguments).
``result.to_state(key=None)`` is a `RunState`, a JSON-able dict of everything needed to go
on: the conversation, the calls waiting, the usage and the calls table so far, the documents,
and where each `ScriptedModel` of the agents stands in its script (so an offline example
resumes in a new process), sealed with digests and, given a key, signed
(`agentnb.runtime.data.run_state`). ``await agentnb.resume(agent, state, approvals, key=None,
**run_options)`` (or ``run_sync(agentnb.resume(...))``) takes the same agent definition,
checks the whole state (`agentnb.runtime.data.state_checks`), runs exactly the calls approved,
tells the model about the refused ones, and continues the same run: same run id, usage,
calls, turns and limits carried on. A state that was changed or damaged is a `UserError`
before anything runs.

A pause inside a sub-agent called as a tool (at any depth) is part of the state: each agent
on the way down keeps its history, and on resume each goes on from it, the approved call run
at the bottom. Calls of the same turns that had not finished when the pause came (a parallel
sibling cancelled by it) run again on resume; those needing approval are asked again. Inside
`parallel` / `chain` / `verify_loop` a pause is a `UserError`: those patterns keep no state to
go on from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import UserError
from ...models.scripted import ScriptedModel
from ...models.types import Message, ToolCall, Usage
from ...trace.calls import CallRow

# The pause marker is in data/approvals.py, and what writes the state (`run_state`, for
# `RunResult.to_state`) in data/run_state.py; these names stay importable from here.
from ..data.approvals import PAUSE as PAUSE
from ..data.approvals import ApprovalRecord, Granted, Interruption
from ..data.approvals import Paused as Paused
from ..data.approvals import canonical_arguments as canonical_arguments
from ..data.approvals import pause_run as pause_run
from ..data.approvals import paused_call as paused_call
from ..data.options import shows_run_keywords
from ..data.run_state import run_state as run_state
from ..data.run_state import unanswered, verify
from ..data.state_checks import check_calls, check_shape, row_values

if TYPE_CHECKING:
    from ..agents.agent import Agent
    from ..data.context import RunContext
    from ..data.result import RunResult
    from ..data.state import AgentRun
    from ..data.state_checks import MessageState, StateShape
    from ..guards.approval import Approval

# -- the state (written by `agentnb.runtime.data.run_state.run_state`, ``result.to_state()``)


def keep_paused(ctx: RunContext, state: AgentRun, call_id: str) -> None:
    """A sub-agent a pause went through (run by the caller's call ``call_id``): its history
    is part of the paused run's state. A second call of the same sub-agent paused at once is
    noted, never kept in the first one's place: `agentnb.runtime.data.run_state` refuses a
    state of such a run."""
    kept = ctx.paused_agents.get(state.path)
    if kept is not None and kept[0] != call_id:
        ctx.paused_twice.append(state.path)
        return
    ctx.paused_agents[state.path] = (call_id, state)


def _from_message(m: MessageState) -> Message:
    calls = tuple(ToolCall(name, arguments, call_id) for name, arguments, call_id in m.tool_calls)
    return Message(m.role, m.content, calls, m.tool_call_id, m.name, generated=m.generated)


def _agents(root: Agent) -> dict[str, Agent]:
    """Every agent reachable from ``root``: its sub-agents and handoff targets, by name."""
    from ..handoffs.handoff import HandoffTool

    found: dict[str, Agent] = {}
    stack = [root]
    while stack:
        agent = stack.pop()
        if agent.name in found:
            continue
        found[agent.name] = agent
        for each in agent.tool_map().values():
            stack.extend(sub for _, sub in each.sub_agents())
            if isinstance(each, HandoffTool):
                stack.append(each.handoff.target)
    return found


def script_positions(current: Agent, ctx: RunContext) -> dict[str, int]:
    """How far each `ScriptedModel` of the agents has gone in its script ("" for the run's
    default model): what a paused run's state records (`RunContext.scripts`), so that an
    offline example resumes where it stood."""
    positions = {
        name: agent.model.position
        for name, agent in _agents(current).items()
        if isinstance(agent.model, ScriptedModel)
    }
    if isinstance(ctx.default_model, ScriptedModel):
        positions[""] = ctx.default_model.position
    return positions


# -- resuming


@shows_run_keywords
async def resume(
    agent: Agent,
    state: dict[str, Any],
    approvals: Any = True,
    *,
    key: str | bytes | None = None,
    **options: Any,
) -> RunResult:
    """Continue a paused run from ``state`` (``result.to_state()``, perhaps read back from
    JSON, or a `RunState`).

    ``approvals`` decides the waiting calls: True (approve every one), False (refuse every
    one), an `Approval` (for every one; ``Approval(False, reason)`` refuses and the model
    reads the reason), or a dict deciding each waiting call and only those, keyed by call id
    (or by ``interruption.key`` where two agents' calls share an id), each value True, False
    or an `Approval`. ``key`` is the one given to ``to_state(key=...)``: a signed state needs
    it, and with it an unsigned state is refused. ``agent`` is the run's root agent (the same
    definition); ``options`` are those of `agentnb.run` (``approver="pause"`` again to pause at
    later calls; ``timeout`` and ``limits`` bound the whole resumed run, the approved calls
    included). The whole state is checked before anything runs: a changed or damaged state
    is a `UserError`. Like `run`, it never raises once the run has started."""
    from ..agents.agent import Agent as AgentType
    from ..data.options import RunOptions
    from .runner import execute, start_context

    if not isinstance(agent, AgentType):
        raise UserError(f"resume() takes the run's root Agent first, got {type(agent).__name__}")
    if not isinstance(state, dict):
        raise UserError(
            "resume() takes the state result.to_state() gave (or the same read back from "
            f"JSON), got {type(state).__name__}"
        )
    verify(state, key)
    shape = check_shape(state)
    waiting = [Interruption(**i.model_dump()) for i in shape.interruptions]
    decisions = _decisions(approvals, waiting)
    agents = _agents(agent)
    missing = sorted({shape.agent, *(s.agent for s in shape.sub_agents.values())} - set(agents))
    if missing:
        raise UserError(
            f"resume(): the run paused in agent(s) {', '.join(map(repr, missing))}, which "
            f"{agent.name!r} cannot reach; pass the root agent the run was started with "
            f"({', '.join(agents)} found)."
        )
    unknown = sorted(set(shape.scripts) - set(agents) - {""})
    if unknown:
        raise UserError(f"resume(): the state's scripts name unknown agent(s) {unknown}.")
    current = agents[shape.agent]
    _check_sub_agents(shape, agents)
    options.setdefault("run_id", shape.run_id)
    artifacts = {**shape.artifacts, **(options.pop("artifacts", None) or {})}
    run_options = RunOptions.of(artifacts=artifacts or None, **options)
    if run_options.session is not None:  # the state holds the history already
        raise UserError(
            "resume() does not take session=: the paused state holds the run's history."
        )
    limits = run_options.run_limits
    check_calls(
        shape,
        run_options.max_turns or current.max_turns,
        limits.max_model_calls if limits is not None else None,
        limits.max_tokens if limits is not None else None,
    )
    messages = [_from_message(m) for m in shape.messages]
    ctx = start_context(current, messages, run_options)  # nothing has run yet
    ctx.artifacts["input"] = shape.input
    ctx.usage = Usage(**shape.usage.model_dump())
    ctx.model_calls = shape.model_calls
    ctx.trace.call_rows.extend(CallRow(**row_values(row)) for row in shape.calls)
    _carry_approvals(ctx, shape)
    for name, position in shape.scripts.items():
        model = agents[name].model if name else ctx.default_model
        if isinstance(model, ScriptedModel):
            model.skip_to(position)
    ctx.resumed = Resumption(shape, waiting, decisions)
    return await execute(current, messages, ctx)


def _check_sub_agents(shape: StateShape, agents: dict[str, Agent]) -> None:
    """A `UserError` unless each kept sub-agent is one its caller's tool of that name runs."""
    names = {shape.path: shape.agent, **{p: s.agent for p, s in shape.sub_agents.items()}}
    for path, sub in shape.sub_agents.items():
        parent, _, tool_name = path.rpartition("/")
        caller = agents.get(names.get(parent, ""))
        tool = caller.tool_map().get(tool_name) if caller is not None else None
        runs = {agent.name for _, agent in tool.sub_agents()} if tool is not None else set()
        if sub.agent not in runs:
            raise UserError(
                f"resume(): the state's sub_agents.{path} is not a sub-agent: the tool "
                f"{tool_name!r} of {names.get(parent)!r} does not run {sub.agent!r}."
            )


def _carry_approvals(ctx: RunContext, shape: StateShape) -> None:
    """The decisions made before the pause, marked as carried; those that approved a call
    into a paused sub-agent let that exact call go on without asking again."""
    into = {(path.rpartition("/")[0], sub.call_id) for path, sub in shape.sub_agents.items()}
    for record in shape.approvals:
        ctx.approvals.append(ApprovalRecord(**{**record.model_dump(), "carried": True}))
        where = (record.path, record.call_id)
        if record.decision == "approved" and where in into:
            decided = canonical_arguments(record.arguments)
            if decided is not None:
                ctx.preapproved[where] = Granted(record.tool, decided=decided)


def _decisions(approvals: Any, waiting: list[Interruption]) -> dict[tuple[str, str], Approval]:
    """Each waiting call's decision, by its key: exact forms only, every call decided."""
    if isinstance(approvals, dict):
        by_id: dict[str, list[Interruption]] = {}
        for i in waiting:
            by_id.setdefault(i.call_id, []).append(i)
        decided: dict[tuple[str, str], Approval] = {}
        for given, decision in approvals.items():
            if isinstance(given, tuple) and any(i.key == given for i in waiting):
                call = next(i for i in waiting if i.key == given)
            elif isinstance(given, str) and len(by_id.get(given, ())) == 1:
                call = by_id[given][0]
            elif isinstance(given, str) and given in by_id:
                keys = ", ".join(repr(i.key) for i in by_id[given])
                raise UserError(
                    f"resume(approvals=...): call id {given!r} names {len(by_id[given])} waiting "
                    f"calls; key them by interruption.key: {keys}."
                )
            else:
                raise UserError(
                    f"resume(approvals=...): {given!r} is not a waiting call; the waiting calls "
                    f"are {', '.join(repr(i.call_id) for i in waiting)}."
                )
            if call.key in decided:
                raise UserError(f"resume(approvals=...): call {call.call_id} is decided twice.")
            decided[call.key] = _decision(decision, call.call_id)
        missing = [i.call_id for i in waiting if i.key not in decided]
        if missing:
            raise UserError(
                f"resume(approvals=...) must decide each waiting call: missing {missing}."
            )
        return decided
    if isinstance(approvals, (list, tuple, set)):
        raise UserError(
            "resume(approvals=...) must be True, False, an agentnb.Approval or a dict of call "
            f"id -> decision, got {type(approvals).__name__}"
        )
    every = _decision(approvals, "every waiting call")
    return {i.key: every for i in waiting}


def _decision(value: Any, call: str) -> Approval:
    from ..guards.approval import Approval

    if value is True or value is False:
        return Approval(value, "decided on resume")
    if isinstance(value, Approval):
        return value
    raise UserError(
        f"resume(approvals=...): the decision for {call} is {value!r}; a decision is True, "
        "False or agentnb.Approval(approved, reason) (nothing else is read as a yes or a no)."
    )


class Resumption:
    """What a resumed run does before each paused agent's next turn: answer the calls its last
    message asked for. A waiting call runs if approved (that exact call, without asking again)
    or gets its refusal; a call into a sub-agent the pause went through runs again, that
    sub-agent going on from its kept history (`resumed_history`); a call cut short runs again."""

    def __init__(
        self,
        shape: StateShape,
        waiting: list[Interruption],
        decisions: dict[tuple[str, str], Approval],
    ) -> None:
        self.path = shape.path
        self.waiting = {i.key: i for i in waiting}
        self.decisions = decisions
        self.subs = dict(shape.sub_agents)
        self.turns: dict[str, int] = {shape.path: shape.turns}
        self.tokens_used = shape.tokens_used
        """What the run's token budget counted before the pause (it goes on from there)."""

    async def __call__(self, state: AgentRun, ctx: RunContext) -> None:
        from ..guards.approval import record_decision
        from .runner import run_tools

        turn = self.turns.pop(state.path, state.turns)
        state.turns = state.resumed_at = turn
        for call in unanswered(state.messages):
            waiting = self.waiting.pop((state.path, call.id), None)
            if waiting is not None:
                decision = self.decisions[waiting.key]
                reason = decision.reason or "decided on resume"
                record_decision(
                    ctx,
                    state,
                    waiting.tool,
                    waiting.tool,
                    waiting.arguments,
                    "resume",
                    decision.approved,
                    reason,
                    0.0,
                    call.id,
                )
                if not decision.approved:
                    text = f"call to {waiting.tool} rejected: {reason}"
                    state.messages.append(Message.tool(call, text))
                    continue
                ctx.preapproved[waiting.key] = Granted(waiting.tool, sent=waiting.arguments_text)
            await run_tools([call], state, ctx, turn)  # in the order of the calls
            ctx.preapproved.pop((state.path, call.id), None)  # a grant lives for its call only

    def history(self, path: str, call_id: str) -> tuple[list[Message], int] | None:
        """A paused sub-agent's kept history and turns, once, for the call that ran it."""
        kept = self.subs.get(path)
        if kept is None or kept.call_id != call_id:
            return None
        del self.subs[path]
        return [_from_message(m) for m in kept.messages], kept.turns


def resumed_history(ctx: RunContext, path: str, call_id: str) -> list[Message] | None:
    """For a sub-agent starting in a resumed run: the history it had when the run paused."""
    resumption = ctx.resumed
    if not isinstance(resumption, Resumption):
        return None
    kept = resumption.history(path, call_id)
    if kept is None:
        return None
    messages, turns = kept
    resumption.turns[path] = turns
    return messages


async def answer_pending(state: AgentRun, ctx: RunContext) -> None:
    """Before a resumed sub-agent's next turn: answer the calls it was waiting on."""
    resumption = ctx.resumed
    if isinstance(resumption, Resumption) and state.path in resumption.turns:
        await resumption(state, ctx)
