"""A summarising session's summary, written inside the run before its agent starts.

`agentnb.runtime.data.memory` says what is summarised; this module runs the summariser as a
child of the run (like ``ctx.delegate``): its agent span hangs under the run's span with
``session_summary=True``, its model calls are rows of the run's calls table at path
``<agent>/<summariser>``, its usage adds to the run's, and the run's limits cover it. A
summary that cannot be written ends the run ``ok=False`` (the turns are never sent silently
incomplete).
"""

from __future__ import annotations

import weakref

from ...errors import AgentRunError
from ...models.base import ModelClient
from ...models.types import Message
from ..agents.agent import Agent, model_client
from ..data.context import RunContext
from ..data.memory import Fold, SummarizeOlder, summary_message
from ..data.outcome import to_text
from ..data.state import AgentRun, discard
from .runner import agent_loop

_AGENTS: weakref.WeakKeyDictionary[SummarizeOlder, Agent] = weakref.WeakKeyDictionary()
"""The summariser agent of each strategy, made once (a spec string is resolved once)."""


def summarizer(strategy: SummarizeOlder, default: ModelClient | None) -> Agent:
    """The agent that writes ``strategy``'s summaries; a `UserError` now (before the run
    starts) when it has no usable model."""
    agent = _AGENTS.get(strategy)
    if agent is None:
        model = strategy.model
        agent = (
            model
            if isinstance(model, Agent)
            else Agent(strategy.name, strategy.instructions, model=model)
        )
        _AGENTS[strategy] = agent
    model_client(agent, default)
    return agent


async def summarize(fold: Fold, root: AgentRun, ctx: RunContext) -> tuple[int, str]:
    """Write the new summary of ``fold`` and put it, with the kept turns, in place of the
    history at the head of ``root``'s messages. Returns (turns covered, summary text)."""
    agent = summarizer(fold.strategy, ctx.default_model)
    trace = ctx.trace
    path = f"{root.path}/{agent.name}"
    span = trace.start(
        "agent", agent.name, root.span, agent=agent.name, path=path, depth=1, session_summary=True
    )
    state = AgentRun(agent, [Message.user(fold.prompt())], 1, path, (agent,), span, root.budgets)
    ctx.active.append(state)
    trace.log("session_summary_start", depth=1, path=path, agent=agent.name, turns=len(fold.turns))
    status = "error"
    try:
        output = await agent_loop(state, ctx, agent.max_turns)
        status = "ok"
    except AgentRunError as exc:
        raise AgentRunError(
            f"{path}: the summary of the session's older turns could not be written "
            f"({type(exc).__name__}: {exc}); the run's agent was not started. Check the "
            "SummarizeOlder model, or use Session(keep_last=n)."
        ) from exc
    finally:
        discard(ctx.active, state)
        trace.close_open_under(span, "cancelled" if status == "ok" else status)
        trace.end(span, status, turns=state.turns)
        trace.log("session_summary_end", depth=1, path=path, agent=agent.name, status=status)
    text = to_text(output)
    history = [summary_message(text), *fold.kept]
    before = ctx.history
    root.messages[:before] = history
    ctx.inputs = (*history, *ctx.inputs[before:])
    ctx.history = len(history)
    return fold.covered, text
