"""A paused run's state is written from the run's data alone (`agentnb.runtime.data.run_state`):
where each script stood is what the engine wrote down as the run paused, and a context that no
engine made cannot run an agent below another."""

from __future__ import annotations

import asyncio

import pytest

import agentnb as a
from agentnb.runtime.data.options import RunOptions


@a.tool(needs_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def _paused() -> tuple[a.RunResult, a.ScriptedModel]:
    model = a.ScriptedModel([a.tool_call("refund", order="7"), a.say("Refunded order 7.")])
    result = a.run_sync(a.Agent("support", "You help.", model, [refund]), "go", approver="pause")
    assert isinstance(result.error, a.RunPaused)
    return result, model


def test_the_state_records_where_the_script_stood_when_the_run_paused_not_later():
    result, model = _paused()
    model.skip_to(2)  # the same model used again before the state is written

    state = result.to_state()

    assert state["scripts"] == {"support": 1}
    assert model.requests[0].messages[-1].content == "go"


def test_a_paused_state_resumes_from_the_recorded_position():
    result, model = _paused()
    state = result.to_state()

    resumed = a.run_sync(a.resume(a.Agent("support", "You help.", model, [refund]), state))

    assert resumed.ok and resumed.output == "Refunded order 7."
    assert model.requests[-1].tool_results == ["refunded 7"]


def test_a_context_no_engine_made_cannot_run_an_agent_below_another():
    ctx = a.RunContext.create(RunOptions())
    root, _ = _paused()
    assert root.context is not None and root.context.root is not None
    state = root.context.root

    with pytest.raises(a.UserError, match="made by hand"):
        asyncio.run(ctx.run_below(state, 3))
