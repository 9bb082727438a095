"""Runs that pause at calls needing approval, and resume later (even in another process).

``run(..., approver="pause")`` does not ask anyone: a call that needs approval is left
undone, the other calls of that turn run, and the run ends with ``ok=False``, `RunPaused` as
its error and ``result.interruptions`` listing the calls waiting (call id, tool, arguments).
``result.to_state()`` is a JSON-able dict of everything needed to go on: the conversation,
the calls waiting, the usage and the calls table so far, the documents, and where each
`ScriptedModel` of the agents stands in its script (so an offline example resumes in a new
process). ``await agentnb.resume(agent, state, approvals, **run_options)`` (or
``run_sync(agentnb.resume(...))``) takes the same agent definition, runs the approved calls,
tells the model about the refused ones, and continues the same run: same run id, usage and
calls carried on.

A pause inside a sub-agent called as a tool (at any depth) is part of the state: each agent
on the way down keeps its history, and on resume each goes on from it, the approved call run
at the bottom. Calls of the same turns that had not finished when the pause came (a parallel
sibling cancelled by it) run again on resume; those needing approval are asked again. Inside
`parallel` / `chain` / `verify_loop` a pause is a `UserError` this round.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any

from ...errors import RunPaused, UserError
from ...models.scripted import ScriptedModel
from ...models.types import Message, ToolCall, Usage
from ...trace.calls import CallRow

# The pause marker moved to data/approvals.py; these names stay importable from here.
from ..data.approvals import PAUSE as PAUSE
from ..data.approvals import ApprovalRecord, Interruption
from ..data.approvals import Paused as Paused
from ..data.approvals import pause_run as pause_run
from ..data.approvals import paused_call as paused_call
from ..data.options import shows_run_keywords

if TYPE_CHECKING:
    from ..agents.agent import Agent
    from ..data.context import RunContext
    from ..data.result import RunResult
    from ..data.state import AgentRun

STATE_VERSION = 1


# -- the state


def run_state(result: RunResult) -> dict[str, Any]:
    """``result.to_state()``: a JSON-able dict to resume a paused run from."""
    from .runner import running

    ctx = result.context
    if ctx is None or not isinstance(result.error, RunPaused) or ctx.root is None:
        raise UserError(
            "to_state() is for a paused run (approver='pause', error RunPaused); this run "
            f"ended with {type(result.error).__name__ if result.error else 'ok=True'}."
        )
    state = ctx.root
    return {
        "agentnb_state": STATE_VERSION,
        "run_id": ctx.run_id,
        "agent": state.agent.name,
        "turns": state.turns,
        "messages": [_message(m) for m in state.messages],
        "interruptions": [asdict(i) for i in ctx.interruptions],
        "artifacts": {k: v for k, v in ctx.artifacts.items() if k != "input"},
        "input": ctx.artifacts.get("input", ""),
        "usage": asdict(ctx.usage),
        "model_calls": ctx.model_calls,
        "calls": [_jsonable(row.as_dict()) for row in ctx.trace.call_rows],
        "approvals": [_jsonable(asdict(r)) for r in ctx.approvals],
        "scripts": _positions(running(state), ctx),
        "sub_agents": {
            path: {"agent": sub.agent.name, "turns": sub.turns, "messages": _messages(sub)}
            for path, sub in ctx.paused_agents.items()
        },
    }


def _messages(state: AgentRun) -> list[dict[str, Any]]:
    return [_message(m) for m in state.messages]


def keep_paused(ctx: RunContext, state: AgentRun) -> None:
    """A sub-agent a pause went through: its history is part of the paused run's state."""
    ctx.paused_agents[state.path] = state


def _message(m: Message) -> dict[str, Any]:
    return {
        "role": m.role,
        "content": m.content,
        "tool_calls": [[c.name, c.arguments, c.id] for c in m.tool_calls],
        "tool_call_id": m.tool_call_id,
        "name": m.name,
        "generated": m.generated,
    }


def _from_message(d: dict[str, Any]) -> Message:
    calls = tuple(ToolCall(*c) for c in d.get("tool_calls", ()))
    return Message(
        d["role"],
        d.get("content"),
        calls,
        d.get("tool_call_id"),
        d.get("name"),
        generated=bool(d.get("generated")),
    )


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    """A row with what JSON cannot hold (NaN) as None, checked to be JSON."""
    clean = {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
    json.dumps(clean, default=str)
    return {k: (v if _is_json(v) else str(v)) for k, v in clean.items()}


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


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


def _positions(current: Agent, ctx: RunContext) -> dict[str, int]:
    """How far each `ScriptedModel` of the agents has gone in its script ("" for the run's
    default model)."""
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
    approvals: bool | dict[str, bool] = True,
    **options: Any,
) -> RunResult:
    """Continue a paused run from ``state`` (``result.to_state()``, perhaps read back from
    JSON): ``approvals`` is True (approve every waiting call), False (refuse every one) or a
    dict of call id -> bool covering each. ``agent`` is the run's root agent (the same
    definition); ``options`` are those of `agentnb.run` (``approver="pause"`` again to pause at
    later calls). Like `run`, it never raises once the run has started."""
    from ..data.options import RunOptions
    from .runner import execute, start_context

    if not isinstance(state, dict) or state.get("agentnb_state") != STATE_VERSION:
        raise UserError(
            "resume() takes the dict result.to_state() gave (or the same read back from JSON); "
            f"got {type(state).__name__}"
        )
    waiting = [Interruption(**i) for i in state["interruptions"]]
    decisions = _decisions(approvals, waiting)
    agents = _agents(agent)
    current = agents.get(state["agent"])
    if current is None:
        raise UserError(
            f"resume(): the run paused in agent {state['agent']!r}, which {agent.name!r} cannot "
            f"reach; pass the root agent the run was started with ({', '.join(agents)} found)."
        )
    messages = [_from_message(m) for m in state["messages"]]
    options.setdefault("run_id", state["run_id"])
    artifacts = {**state.get("artifacts", {}), **(options.pop("artifacts", None) or {})}
    run_options = RunOptions.of(artifacts=artifacts or None, **options)
    ctx = start_context(current, messages, run_options)
    ctx.artifacts["input"] = state.get("input", ctx.artifacts["input"])
    ctx.usage = Usage(**state["usage"])
    ctx.model_calls = int(state["model_calls"])
    columns = {f.name for f in fields(CallRow)}
    ctx.trace.call_rows.extend(
        CallRow(**{k: v for k, v in row.items() if k in columns}) for row in state["calls"]
    )
    ctx.approvals.extend(ApprovalRecord(**r) for r in state.get("approvals", []))
    for name, position in state.get("scripts", {}).items():
        model = agents[name].model if name in agents else ctx.default_model
        if isinstance(model, ScriptedModel):
            model.skip_to(position)
    ctx.resumed = Resumption(waiting, decisions, state.get("sub_agents", {}))
    ctx.resumed.turns[current.name] = int(state.get("turns", 0))  # the root's path
    return await execute(current, messages, ctx)


def _decisions(approvals: Any, waiting: list[Interruption]) -> dict[str, bool]:
    if isinstance(approvals, bool):
        return {i.call_id: approvals for i in waiting}
    if not isinstance(approvals, dict):
        raise UserError(
            f"resume(approvals=...) must be True, False or a dict of call id -> bool, got {approvals!r}"
        )
    missing = [i.call_id for i in waiting if i.call_id not in approvals]
    unknown = sorted(set(approvals) - {i.call_id for i in waiting})
    if missing or unknown:
        raise UserError(
            f"resume(approvals=...) must decide each waiting call: waiting {[i.call_id for i in waiting]}, "
            f"missing {missing}, unknown {unknown}."
        )
    return {k: bool(v) for k, v in approvals.items()}


class Resumption:
    """What a resumed run does before each paused agent's next turn: answer the calls its last
    message asked for. A waiting call runs if approved (without asking again) or gets its
    refusal; a call into a sub-agent the pause went through runs again, that sub-agent going on
    from its kept history (`resumed_history`); any other unfinished call runs again."""

    def __init__(
        self, waiting: list[Interruption], decisions: dict[str, bool], subs: dict[str, Any]
    ) -> None:
        self.waiting = {i.call_id: i for i in waiting}
        self.decisions = decisions
        self.subs = dict(subs)
        self.turns: dict[str, int] = {}

    async def __call__(self, state: AgentRun, ctx: RunContext) -> None:
        from .runner import run_tools

        turn = self.turns.pop(state.path, state.turns)
        for call in _unanswered(state.messages):
            waiting = self.waiting.pop(call.id, None)
            if waiting is not None:
                approved = self.decisions[call.id]
                ctx.approvals.append(
                    ApprovalRecord(
                        waiting.tool,
                        waiting.arguments,
                        "resume",
                        "approved" if approved else "rejected",
                        "decided on resume",
                        ctx.trace.now(),
                        0.0,
                        state.path,
                    )
                )
                if not approved:
                    text = f"call to {waiting.tool} rejected: decided on resume"
                    state.messages.append(Message.tool(call, text))
                    continue
                ctx.preapproved.add(call.id)
            elif f"{state.path}/{call.name}" in self.subs:  # approved before the pause
                ctx.preapproved.add(call.id)
            await run_tools([call], state, ctx, turn)  # in the order of the calls

    def history(self, path: str) -> tuple[list[Message], int] | None:
        """A paused sub-agent's kept history and turns, once (None when it has none)."""
        kept = self.subs.pop(path, None)
        if kept is None:
            return None
        return [_from_message(m) for m in kept["messages"]], int(kept.get("turns", 0))


def resumed_history(ctx: RunContext, path: str) -> list[Message] | None:
    """For a sub-agent starting in a resumed run: the history it had when the run paused."""
    resumption = ctx.resumed
    if not isinstance(resumption, Resumption):
        return None
    kept = resumption.history(path)
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


def _unanswered(messages: list[Message]) -> list[ToolCall]:
    """The calls of the last assistant message that have no result in the history."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
            return [c for c in message.tool_calls if c.id not in answered]
    return []
