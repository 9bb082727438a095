"""run_sync: blocking runs on the calling thread's own loop in scripts, on agentnb's background
loop inside a running loop (Jupyter)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import agentnb as a
from agentnb.runtime.engine import blocking as _loop
from agentnb.runtime.engine.runner import build_result, execute, start_context
from agentnb.runtime.engine.thread_loop import thread_loop


@a.tool
def fetch(key: str) -> str:
    """Fetch a value."""
    return f"<{key}>"


def simple_agent() -> tuple[a.Agent, a.ScriptedModel]:
    model = a.ScriptedModel([a.tool_call("fetch", key="k"), a.say("done")])
    return a.Agent("w", "x", model, [fetch]), model


def test_run_sync_in_plain_code():
    agent, model = simple_agent()

    result = a.run_sync(agent, "go")

    assert result.ok and result.output == "done"
    assert model.requests[1].tool_results == ["<k>"]


def test_run_sync_in_a_plain_script_process():
    script = textwrap.dedent(
        """
        import agentnb as a
        model = a.ScriptedModel([a.say("from a script")])
        result = a.run_sync(a.Agent("w", "x", model), "go")
        print(result.ok, result.output, len(result.calls))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "AGENTNB_TOKENIZER": "off"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True from a script 1"


async def test_run_sync_inside_a_running_event_loop():
    """As in a Jupyter cell: a loop runs in this thread and run_sync must not deadlock on it."""
    asyncio.get_running_loop()  # there is one
    agent, model = simple_agent()

    result = a.run_sync(agent, "go", timeout=10)

    assert result.ok and result.output == "done"
    assert len(model.requests) == 2


async def test_run_sync_runs_on_the_background_loop_not_the_caller_s():
    loops: list[asyncio.AbstractEventLoop] = []

    def reply(request: a.ModelRequest) -> a.Say:
        loops.append(asyncio.get_running_loop())
        return a.say("ok")

    a.run_sync(a.Agent("w", "x", a.FunctionModel(reply)), "go")

    assert loops == [_loop.background_loop()]
    assert loops[0] is not asyncio.get_running_loop()


def test_run_sync_of_an_awaitable():
    agent, _ = simple_agent()

    result = a.run_sync(a.run(agent, "go"))
    value = a.run_sync(asyncio.sleep(0, result="slept"))

    assert isinstance(result, a.RunResult) and result.output == "done"
    assert value == "slept"


def test_run_sync_of_an_awaitable_re_raises_its_error():
    async def fail() -> None:
        raise LookupError("missing")

    with pytest.raises(LookupError, match="missing"):
        a.run_sync(fail())


class LoopBoundModel:
    """Like the httpx client inside ``openai``: bound to the loop of its first call."""

    name = "loop-bound"

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.calls = 0

    async def request(self, request: a.ModelRequest) -> a.ModelResponse:
        loop = asyncio.get_running_loop()
        if self.loop is None:
            self.loop = loop
        elif loop is not self.loop:
            raise RuntimeError("Event loop is closed")  # what a loop-bound client would say
        self.calls += 1
        return a.ModelResponse(text=f"answer {self.calls}")


def test_the_same_thread_loop_serves_every_call_from_plain_code():
    model = LoopBoundModel()
    agent = a.Agent("w", "x", model)

    first = a.run_sync(agent, "one")
    second = a.run_sync(agent, "two")
    third = a.run_sync(a.run(agent, "three"))

    assert [r.output for r in (first, second, third)] == ["answer 1", "answer 2", "answer 3"]
    assert model.loop is thread_loop() and model.loop is not _loop.background_loop()


async def test_the_same_background_loop_serves_every_call_inside_a_running_loop():
    model = LoopBoundModel()
    agent = a.Agent("w", "x", model)

    first = a.run_sync(agent, "one")
    second = a.run_sync(a.run(agent, "two"))

    assert [first.output, second.output] == ["answer 1", "answer 2"]
    assert model.loop is _loop.background_loop()


def test_run_sync_runs_on_the_calling_thread_in_plain_code():
    """A sqlite3 connection is bound to the thread that made it: async instructions and async
    tools read it (plain `def` callbacks run in worker threads so that a timeout holds over them,
    so they cannot)."""
    connection = sqlite3.connect(":memory:")
    connection.execute("create table notes (text)")
    connection.execute("insert into notes values ('from the calling thread')")
    threads: list[threading.Thread] = []

    async def instructions(ctx: a.RunContext) -> str:
        threads.append(threading.current_thread())
        return connection.execute("select text from notes").fetchone()[0]

    @a.tool
    async def count_notes() -> int:
        """How many notes there are."""
        return int(connection.execute("select count(*) from notes").fetchone()[0])

    model = a.ScriptedModel([a.tool_call("count_notes"), a.say("one note")])
    result = a.run_sync(a.Agent("w", instructions, model, [count_notes]), "go")

    assert result.ok, result.error
    assert model.requests[0].system == "from the calling thread"
    assert model.requests[1].tool_results == ["1"]
    assert threads == [threading.current_thread()]
    events = list(a.stream_sync(a.Agent("w", instructions, a.ScriptedModel([a.say("hi")])), "go"))
    assert events[-1].result.ok and threads[-1] is threading.current_thread()
    connection.close()


def test_run_sync_from_inside_the_agentnb_loop_is_a_user_error():
    async def nested() -> object:
        agent, _ = simple_agent()
        return a.run_sync(agent, "go")

    with pytest.raises(a.UserError, match=r"inside agentnb's event loop.*await agentnb.run"):
        a.run_sync(nested())


def test_an_async_tool_calling_run_sync_tells_the_model():
    @a.tool
    async def delegate(task: str) -> str:
        """Delegate a task (the wrong way)."""
        inner, _ = simple_agent()
        return a.run_sync(inner, task).output

    model = a.ScriptedModel([a.tool_call("delegate", task="t"), a.say("gave up")])
    result = a.run_sync(a.Agent("boss", "x", model, [delegate]), "go")

    assert result.ok
    sent = model.requests[1].tool_results[0]
    assert sent.startswith(
        "ERROR: delegate failed: UserError: run_sync was called from inside agentnb's"
    )


def test_a_sync_tool_may_call_run_sync_from_its_worker_thread():
    @a.tool
    def delegate(task: str) -> str:
        """Delegate a task."""
        inner, _ = simple_agent()
        return a.run_sync(inner, task).output

    model = a.ScriptedModel([a.tool_call("delegate", task="t"), a.say("ok")])
    result = a.run_sync(a.Agent("boss", "x", model, [delegate]), "go")

    assert model.requests[1].tool_results == ["done"]
    assert result.ok


def test_bad_arguments_to_run_sync():
    with pytest.raises(a.UserError, match="Agent and its input, or an awaitable"):
        a.run_sync("agent", "go")
    with pytest.raises(a.UserError, match="takes no other arguments"):
        a.run_sync(asyncio.sleep(0), "extra")


# -- interrupts


def hanging_agent(started: threading.Event) -> tuple[a.Agent, a.FunctionModel]:
    async def reply(request: a.ModelRequest) -> object:
        if not request.tool_results:
            return a.tool_call("fetch", key="first")
        started.set()
        await asyncio.sleep(60)
        return a.say("never")

    model = a.FunctionModel(reply, name="hanging")
    return a.Agent("w", "x", model, [fetch]), model


def check_partial(result: a.RunResult) -> None:
    assert not result.ok and result.output is None
    assert isinstance(result.error, a.RunCancelled)
    assert list(result.calls["status"]) == ["ok", "cancelled"]
    assert [s.kind for s in result.spans].count("tool_call") == 1
    assert all(s.ended is not None for s in result.spans)
    assert result.spans[0].status == "cancelled"
    assert "RunCancelled" in repr(result)


async def test_a_cancelled_run_builds_a_partial_result():
    started = threading.Event()
    agent, _ = hanging_agent(started)
    ctx = start_context(agent, "go")
    task = asyncio.ensure_future(execute(agent, "go", ctx))
    while not started.is_set():
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    check_partial(build_result(ctx, None, asyncio.CancelledError()))


def _main_thread_waits() -> bool:
    """Whether the main thread is blocked: on its loop's select (run_sync in plain code)."""
    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    return (
        frame is not None
        and frame.f_code.co_name in ("select", "poll")
        and "selectors" in frame.f_code.co_filename
    )


# Bounded: the model (or the work) sleeps 60 s, so a Ctrl-C that waited for the loop's next
# timer (the race set_wakeup_fd closes) fails here instead of passing a minute later.
@pytest.mark.timeout(30)
@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")
def test_ctrl_c_during_run_sync_returns_the_partial_result():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    started = threading.Event()
    agent, model = hanging_agent(started)

    def press_ctrl_c() -> None:
        started.wait(10)
        deadline = time.monotonic() + 10
        while not _main_thread_waits() and time.monotonic() < deadline:
            time.sleep(0.001)  # until run_sync blocks on the result
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    try:
        result = a.run_sync(agent, "go")
    except KeyboardInterrupt:
        pytest.fail("run_sync let the interrupt escape instead of returning the partial result")

    check_partial(result)
    assert len(model.requests) == 2


# Bounded: the model (or the work) sleeps 60 s, so a Ctrl-C that waited for the loop's next
# timer (the race set_wakeup_fd closes) fails here instead of passing a minute later.
@pytest.mark.timeout(30)
@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")
def test_ctrl_c_during_run_sync_of_an_awaitable_cancels_it_and_re_raises():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    started = threading.Event()
    finished: list[str] = []

    async def work() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            finished.append("cleaned up")
            raise

    def press_ctrl_c() -> None:
        started.wait(10)
        deadline = time.monotonic() + 10
        while not _main_thread_waits() and time.monotonic() < deadline:
            time.sleep(0.001)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        a.run_sync(work())
    assert finished == ["cleaned up"]  # the cancellation finished before run_sync returned
