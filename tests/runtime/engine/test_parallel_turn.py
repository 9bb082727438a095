"""Tool calls of one turn run concurrently; the first run-ending error stops the others.

These pin down what the run loop promises about a turn with several tool calls (order of the
results, siblings cancelled on a run-ending error, an interrupt reaching every call), whatever
the mechanism that waits for them.
"""

from __future__ import annotations

import asyncio
import inspect

import pytest

import agentnb as a


def _slow(name: str, started: asyncio.Event) -> a.Agent:
    async def answer(request: a.ModelRequest) -> str:
        started.set()
        await asyncio.sleep(30)
        return "too late"

    return a.Agent(name, "Take your time.", a.FunctionModel(answer))


def _span(result: a.RunResult, kind: str, agent: str) -> a.Span:
    return next(s for s in result.spans if s.kind == kind and s.agent == agent)


async def test_results_come_back_in_the_order_of_the_calls():
    async def late(request: a.ModelRequest) -> str:
        await asyncio.sleep(0.01)
        return "first, but late"

    first = a.Agent("first", "x", a.FunctionModel(late))
    second = a.Agent("second", "x", a.ScriptedModel(["second, at once"]))
    boss = a.Agent(
        "boss",
        "x",
        a.ScriptedModel(
            [[a.tool_call("first", input="?"), a.tool_call("second", input="?")], "ok"]
        ),
        [first, second],
    )

    result = await a.run(boss, "go")

    assert result.ok
    assert boss.model.requests[1].tool_results == ["first, but late", "second, at once"]
    assert _span(result, "agent", "second").ended < _span(result, "agent", "first").ended


async def test_a_run_ending_error_in_one_call_cancels_its_siblings():
    def broken(request: a.ModelRequest) -> object:
        return 42  # not a script step: a UserError, which ends the run

    started = asyncio.Event()
    slow = _slow("slow", started)
    boss = a.Agent(
        "boss",
        "x",
        a.ScriptedModel([[a.tool_call("broken", input="?"), a.tool_call("slow", input="?")], "x"]),
        [a.Agent("broken", "x", a.FunctionModel(broken)), slow],
    )

    result = await asyncio.wait_for(a.run(boss, "go"), 5)

    assert started.is_set()  # the sibling had started when the error came
    assert isinstance(result.error, a.UserError) and "Cannot use 42" in str(result.error)
    assert _span(result, "model_call", "slow").status == "cancelled"
    assert _span(result, "agent", "slow").status == "cancelled"
    assert _span(result, "tool_call", "boss").status == "error"
    assert all(s.ended is not None for s in result.spans)
    assert result.context.active == []


async def test_a_run_ending_error_in_a_later_call_ends_the_run_with_that_error():
    # the slow call is listed first and is still running when the later one fails: the run
    # must report the failure (ok=False), not the cancellation of the earlier sibling
    def broken(request: a.ModelRequest) -> object:
        return 42

    started = asyncio.Event()
    slow = _slow("slow", started)
    boss = a.Agent(
        "boss",
        "x",
        a.ScriptedModel([[a.tool_call("slow", input="?"), a.tool_call("broken", input="?")], "x"]),
        [slow, a.Agent("broken", "x", a.FunctionModel(broken))],
    )

    result = await asyncio.wait_for(a.run(boss, "go"), 5)

    assert not result.ok
    assert isinstance(result.error, a.UserError) and "Cannot use 42" in str(result.error)
    assert _span(result, "agent", "slow").status == "cancelled"


async def test_an_interrupt_reaches_every_call_of_the_turn():
    started = [asyncio.Event(), asyncio.Event()]
    boss = a.Agent(
        "boss",
        "x",
        a.ScriptedModel([[a.tool_call("one", input="?"), a.tool_call("two", input="?")], "x"]),
        [_slow("one", started[0]), _slow("two", started[1])],
    )
    task = asyncio.ensure_future(a.run(boss, "go"))
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 5)

    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)


async def test_a_call_cancelled_before_it_starts_does_not_leave_the_turn_waiting():
    async def cancel_my_siblings() -> str:
        """Cancels the other calls of its turn, which have not started yet."""
        for task in asyncio.all_tasks():
            if inspect.getcoroutinestate(task.get_coro()) == inspect.CORO_CREATED:
                task.cancel()
        return "done"

    second = a.Agent("second", "x", a.ScriptedModel(["never asked"]))
    boss = a.Agent(
        "boss",
        "x",
        a.ScriptedModel(
            [[a.tool_call("cancel_my_siblings"), a.tool_call("second", input="?")], "x"]
        ),
        [cancel_my_siblings, second],
    )

    # The run ends (today with the cancelled call's CancelledError): it does not wait forever.
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(a.run(boss, "go"), 5)
    assert second.model.requests == []


async def test_two_calls_ending_the_run_together_leave_no_exception_unretrieved(caplog):
    """Both sub-agent calls hit the run's model-call budget in the same loop pass: the run
    ends with the first one's error, and the second's is retrieved, not logged by asyncio
    when its task is collected ("Task exception was never retrieved")."""
    import gc

    subs = [a.Agent(n, "x", a.ScriptedModel(["never asked"])) for n in ("one", "two")]
    boss = a.Agent(
        "boss",
        "x",
        a.ScriptedModel([[a.tool_call("one", input="?"), a.tool_call("two", input="?")], "ok"]),
        tools=subs,
    )
    with caplog.at_level("ERROR", logger="asyncio"):
        result = await a.run(boss, "go", limits=a.Limits(max_model_calls=1))
        error = result.error
        del result  # its error's traceback holds the turn's tasks: let them be collected
        error.__traceback__ = None
        gc.collect()
    assert isinstance(error, a.BudgetExceeded) and "one" in str(error)
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
