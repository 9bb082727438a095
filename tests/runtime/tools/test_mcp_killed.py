"""An MCP server over stdio killed (SIGKILL) in the middle of a tool call: the call ends in a
clean error the model reads, without waiting for the call's timeout, and the run goes on."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason='the MCP tests need the mcp SDK: pip install -e ".[mcp]"')

import agentnb  # noqa: E402
from agentnb import Agent, ModelRequest, ScriptedModel, say, tool_call  # noqa: E402

SERVER = str(Path(__file__).resolve().parents[3] / "notebooks" / "recordings" / "mcp_server.py")
TIMEOUT = 60  # the call's own bound: the kill must end the call long before it


def _servers() -> list[int]:
    """The test server processes this process started (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getpid() and SERVER.encode() in command:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the server's process in /proc")
def test_a_server_killed_mid_call_is_an_error_the_model_reads_then_the_run_goes_on():
    killed: list[int] = []

    def kill_soon() -> None:
        for pid in _servers():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    def step(request: ModelRequest):
        if not request.tool_results:  # the server is up (its tools were listed): call it
            threading.Timer(0.5, kill_soon).start()
            return tool_call("sleep", seconds=TIMEOUT * 2)
        if len(request.tool_results) == 1:
            return tool_call("add", a=1, b=1)
        return say("the server died")

    model = ScriptedModel(step)
    server = agentnb.mcp.stdio(sys.executable, [SERVER, "--faults"], name="test", timeout=TIMEOUT)
    result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[server]), "go")

    assert len(killed) == 1
    assert result.ok and result.output == "the server died", result.error
    first, second = model.requests[-1].tool_results
    assert first.startswith("ERROR: sleep failed:") and "did not answer within" not in first
    assert second.startswith("ERROR: add failed:")  # the dead server is not called again
    spans = [s for s in result.spans if s.kind == "tool_call"]
    assert [s.status for s in spans] == ["error", "error"]
    assert spans[0].duration is not None and spans[0].duration < TIMEOUT / 2  # not the timeout
