"""A Ctrl-C that the loop reads just as one `run_here` wait ends is not lost: the loop queues
its callback and runs it at its next start, where the next wait takes it."""

from __future__ import annotations

import asyncio
import signal
import threading

import pytest

from agentnb.runtime.engine.thread_loop import run_here

pytestmark = [
    pytest.mark.skipif(not hasattr(signal, "raise_signal"), reason="needs signal.raise_signal"),
]


def test_a_ctrl_c_read_as_a_wait_ends_reaches_the_next_wait():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    interrupted: list[str] = []

    async def ends_with_a_ctrl_c() -> str:
        signal.raise_signal(signal.SIGINT)  # read by the loop after this wait has ended
        return "done"

    first = run_here(ends_with_a_ctrl_c(), on_interrupt=lambda: interrupted.append("first"))
    second = run_here(asyncio.sleep(0.01, "slept"), on_interrupt=lambda: interrupted.append("next"))

    assert (first, second) == ("done", "slept")
    assert len(interrupted) == 1  # taken once, by whichever wait the loop was running
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_without_a_handler_it_cancels_the_next_work_and_raises_as_asyncio_run_does():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")

    async def ends_with_a_ctrl_c() -> str:
        signal.raise_signal(signal.SIGINT)
        return "done"

    async def long_work() -> None:
        await asyncio.sleep(5)  # (before the fix, the Ctrl-C was lost and this ran out)

    assert run_here(ends_with_a_ctrl_c()) == "done"  # the work ended first: its result stands
    with pytest.raises(KeyboardInterrupt):
        run_here(long_work())
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
