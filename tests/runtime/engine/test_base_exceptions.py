"""A BaseException from user code (SystemExit, KeyboardInterrupt, GeneratorExit, one of the
user's own) ends the run with ok=False and that exception as .error; agentnb's loop survives."""

from __future__ import annotations

import asyncio
import threading

import pytest

import agentnb as a
from agentnb.runtime.engine import blocking as _loop


class Abort(BaseException):
    """A user's own BaseException, as some libraries define for "stop everything"."""


def raiser(kind: type[BaseException]):
    def explode(x: str) -> str:
        """Raise."""
        raise kind("from the tool")

    return a.tool(explode, name="explode")


def failing_agent(
    kind: type[BaseException], *, sync: bool = True
) -> tuple[a.Agent, a.ScriptedModel]:
    model = a.ScriptedModel([a.tool_call("explode", x="1"), a.say("never")])
    if sync:
        tool = raiser(kind)
    else:

        async def explode(x: str) -> str:
            """Raise."""
            raise kind("from the tool")

        tool = a.tool(explode)
    return a.Agent("worker", "Work.", model, [tool]), model


def check_failed(result: a.RunResult, kind: type[BaseException]) -> None:
    assert not result.ok
    assert type(result.error) is kind
    assert result.output is None
    tool_span = next(s for s in result.spans if s.kind == "tool_call")
    assert tool_span.status == "error"
    assert result.spans[0].status == "error"  # the run span, kept and closed
    assert any('"run_end"' in line and kind.__name__ in line for line in result.log_lines())


@pytest.mark.parametrize("kind", [SystemExit, KeyboardInterrupt, GeneratorExit, Abort])
@pytest.mark.parametrize("sync", [True, False], ids=["sync-tool", "async-tool"])
def test_a_base_exception_in_a_tool_ends_the_run_and_the_loop_lives_on(kind, sync):
    agent, model = failing_agent(kind, sync=sync)
    loop = _loop.background_loop()

    result = a.run_sync(agent, "go")

    check_failed(result, kind)
    assert len(model.requests) == 1  # the model was not asked again after the tool failed
    assert _loop.background_loop() is loop and loop.is_running()
    again = a.run_sync(a.Agent("next", "x", a.ScriptedModel([a.say("still here")])), "hi")
    assert again.output == "still here"


def test_an_instructions_function_that_exits_ends_the_run():
    def instructions(ctx) -> str:
        raise SystemExit(3)

    model = a.ScriptedModel([a.say("never")])

    result = a.run_sync(a.Agent("worker", instructions, model), "go")

    assert not result.ok and isinstance(result.error, SystemExit)
    assert result.error.code == 3
    assert model.requests == []  # the prompt could not be built, so nothing was sent


def test_parallel_tool_calls_one_exiting_end_the_run_on_the_background_loop():
    @a.tool
    def fine(x: str) -> str:
        """Fine."""
        return "ok"

    model = a.ScriptedModel([[a.tool_call("fine", x="1"), a.tool_call("explode", x="2")]])
    agent = a.Agent("worker", "Work.", model, [fine, raiser(SystemExit)])

    result = a.run_sync(agent, "go")

    assert isinstance(result.error, SystemExit)
    statuses = {s.name: s.status for s in result.spans if s.kind == "tool_call"}
    assert statuses["explode"] == "error"
    assert _loop.background_loop().is_running()


async def test_parallel_tool_calls_one_exiting_leave_the_caller_s_loop_running():
    # The test's own loop stands in for Jupyter's: a SystemExit out of a task would stop it.
    model = a.ScriptedModel(
        [[a.tool_call("explode", x="1"), a.tool_call("explode", x="2")], a.say("never")]
    )
    agent = a.Agent("worker", "Work.", model, [raiser(KeyboardInterrupt)])

    result = await a.run(agent, "go")

    assert isinstance(result.error, KeyboardInterrupt)
    await asyncio.sleep(0)  # the loop still runs this coroutine


def test_a_sub_agent_s_tool_that_exits_ends_the_whole_run():
    inner_model = a.ScriptedModel([a.tool_call("explode", x="1"), a.say("never")])
    helper = a.Agent("helper", "Help.", inner_model, [raiser(SystemExit)])
    lead_model = a.ScriptedModel([a.tool_call("helper", input="do it"), a.say("never")])
    lead = a.Agent("lead", "Lead.", lead_model, [helper])

    result = a.run_sync(lead, "go")

    assert isinstance(result.error, SystemExit)
    helper_span = next(s for s in result.spans if s.kind == "agent" and s.name == "helper")
    assert helper_span.status == "error"
    assert len(lead_model.requests) == 1 and len(inner_model.requests) == 1


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit, Abort])
def test_run_sync_of_an_awaitable_re_raises_a_base_exception_and_the_loop_lives_on(kind):
    loop = _loop.background_loop()

    async def work() -> None:
        await asyncio.sleep(0)
        raise kind("stop")

    with pytest.raises(kind, match="stop") as caught:
        a.run_sync(work())

    assert caught.value.__context__ is None  # not chained to how it was carried
    assert _loop.background_loop() is loop and loop.is_running()
    assert a.run_sync(asyncio.sleep(0, result="alive")) == "alive"


def test_a_caller_waiting_on_a_dead_loop_is_told_instead_of_hanging():
    loop = _loop.background_loop()
    started = threading.Event()
    outcome: list[BaseException | str] = []

    async def forever() -> None:
        started.set()
        await asyncio.sleep(3600)

    async def in_a_cell() -> (
        None
    ):  # a running loop, as in Jupyter: run_sync uses the background loop
        a.run_sync(forever())

    def caller() -> None:
        try:
            asyncio.run(in_a_cell())
            outcome.append("returned")
        except BaseException as exc:
            outcome.append(exc)

    waiting = threading.Thread(target=caller, daemon=True)
    waiting.start()
    assert started.wait(10)
    loop.call_soon_threadsafe(loop.stop)  # the loop's thread ends: nothing will finish the call
    waiting.join(30)  # a bound for a broken build only: the caller is told within a second

    assert not waiting.is_alive(), "the caller is still waiting on a loop that is gone"
    assert len(outcome) == 1 and isinstance(outcome[0], a.AgentnbError)
    assert "background event loop stopped" in str(outcome[0])
    assert a.run_sync(asyncio.sleep(0, result="new loop")) == "new loop"
    assert _loop.background_loop() is not loop
    loop.close()


def test_with_timeouts_an_exit_in_an_async_tool_does_not_stop_the_caller_s_loop():
    # Before Python 3.12, asyncio.wait_for runs its work in a task of its own: a SystemExit
    # raised there would leave that task's step and stop the loop (here asyncio.run's).
    async def explode(x: str) -> str:
        """Raise."""
        raise SystemExit(4)

    async def main() -> tuple[BaseException | None, BaseException | None]:
        alone = a.Agent("w", "Work.", a.ScriptedModel([a.tool_call("explode", x="1")]), [explode])
        first = await a.run(alone, "go", timeout=30)
        inner = a.Agent(
            "helper", "Help.", a.ScriptedModel([a.tool_call("explode", x="1")]), [explode]
        )
        lead_model = a.ScriptedModel([a.tool_call("helper", input="go")])
        lead = a.Agent("lead", "Lead.", lead_model, [inner.as_tool(timeout=30)])
        second = await a.run(lead, "go")
        return first.error, second.error

    first, second = asyncio.run(main())  # would raise SystemExit if it had reached the loop

    assert isinstance(first, SystemExit) and first.code == 4
    assert isinstance(second, SystemExit) and second.code == 4


@pytest.mark.parametrize("kind", [SystemExit, KeyboardInterrupt, Abort])
def test_a_guardrail_that_raises_a_base_exception_ends_the_run(kind):
    def guard(ctx, agent, value):
        raise kind("from the guardrail")

    model = a.ScriptedModel([a.say("never")])
    agent = a.Agent("worker", "Work.", model, input_guardrails=[guard])

    result = a.run_sync(agent, "go")

    assert not result.ok and type(result.error) is kind
    assert _loop.background_loop().is_running()


def test_a_stray_task_that_exits_does_not_end_the_loop_s_thread():
    loop = _loop.background_loop()

    async def stray() -> None:
        raise SystemExit("from a task nobody awaits")

    async def work() -> str:
        task = asyncio.get_running_loop().create_task(stray())
        await asyncio.sleep(0.01)  # the task runs, and its SystemExit leaves run_forever
        assert task.done()
        return "still served"

    assert a.run_sync(work()) == "still served"
    assert _loop.background_loop() is loop and loop.is_running()


def test_a_stream_read_from_a_dead_loop_is_told_instead_of_hanging():
    loop = _loop.background_loop()
    started = threading.Event()

    async def hang(request: a.ModelRequest) -> a.ModelResponse:
        started.set()
        await asyncio.sleep(3600)
        raise AssertionError("never")

    agent = a.Agent("w", "Work.", a.FunctionModel(hang))
    outcome: list[BaseException | str] = []

    async def in_a_cell() -> None:  # a running loop: stream_sync reads from the background loop
        for _ in a.stream_sync(agent, "go"):
            pass

    def reader() -> None:
        try:
            asyncio.run(in_a_cell())
            outcome.append("ended")
        except BaseException as exc:
            outcome.append(exc)

    waiting = threading.Thread(target=reader, daemon=True)
    waiting.start()
    assert started.wait(10)
    loop.call_soon_threadsafe(loop.stop)
    waiting.join(30)  # a bound for a broken build only: the reader is told within a second

    assert not waiting.is_alive(), "the stream's reader is still waiting on a loop that is gone"
    assert len(outcome) == 1 and isinstance(outcome[0], a.AgentnbError)
    loop.close()


@pytest.mark.parametrize("kind", [SystemExit, KeyboardInterrupt, Abort])
def test_a_hook_that_raises_a_base_exception_ends_the_run(kind):
    class Exiting(a.Hooks):
        async def on_tool_start(self, *args, **kwargs) -> None:
            raise kind("from the hook")

    model = a.ScriptedModel([a.tool_call("explode", x="1"), a.say("never")])
    agent = a.Agent("worker", "Work.", model, [raiser(ValueError)])

    result = a.run_sync(agent, "go", hooks=Exiting())

    assert not result.ok and type(result.error) is kind
    assert len(model.requests) == 1
    assert _loop.background_loop().is_running()
