"""``%%agent_run`` in a real ipykernel (this interpreter, started by the test): the live monitor
is updated from agentnb's loop thread while the cell runs, both outputs land in the cell that
ran, and Kernel -> Interrupt cancels every sub-agent, keeps the partial trace and leaves the
kernel responsive."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client import KernelClient, KernelManager
from notebook_support import errors, execute, running_kernel

SETUP = """
%load_ext agentnb
import agentnb as a
expert_a = a.Agent("expert_a", "Check.", a.ScriptedModel([a.say("fine")], latency={sub}))
expert_b = a.Agent("expert_b", "Check.", a.ScriptedModel([a.say("fine")], latency={sub}))
boss_model = a.ScriptedModel(
    [[a.tool_call("expert_a", input="1"), a.tool_call("expert_b", input="2")], a.say("all fine")],
    latency=0.2,
)
"""


@pytest.fixture(scope="module")
def kernel(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[KernelManager, KernelClient]]:
    with running_kernel(tmp_path_factory.mktemp("jupyter")) as started:
        yield started


def monitor_values(messages: list[dict[str, Any]]) -> list[str]:
    return [
        m["content"]["data"]["state"]["value"]
        for m in messages
        if m["msg_type"] == "comm_msg" and "value" in m["content"]["data"].get("state", {})
    ]


def plain(messages: list[dict[str, Any]], kind: str = "display_data") -> list[str]:
    return [m["content"]["data"]["text/plain"] for m in messages if m["msg_type"] == kind]


def test_the_monitor_moves_during_the_run_and_the_outputs_land_in_the_cell(kernel):
    _, client = kernel
    assert not errors(execute(client, SETUP.format(sub=0.3)))
    execute(client, "%%agent boss --model boss_model --tools expert_a,expert_b\nDecide.")
    run = execute(client, "%%agent_run boss -o res --no-stream\nReview the contract.")

    assert not errors(run)
    values = monitor_values(run)
    running = [v for v in values if "· running ·" in v]
    # Updates sent while the run was going on come from agentnb's loop thread, not the cell's.
    assert any("expert_a" in v and "expert_b" in v for v in running)
    assert "✔ <b>boss</b> · ok" in values[-1]
    shown = plain(run)
    assert shown[0] == "RunMonitor('boss')"
    assert shown[1].startswith("RunResult ✔ boss answered · 4 model calls")
    cell_id = run[0]["parent_header"]["msg_id"]
    displays = [m for m in run if m["msg_type"] == "display_data"]
    assert all(m["parent_header"]["msg_id"] == cell_id for m in displays)


def test_a_streamed_run_shows_each_agent_s_text_as_written_then_the_result_in_its_place(kernel):
    _, client = kernel
    setup = SETUP.format(sub=0.05).replace(
        'a.say("fine")], latency=0.05)',
        'a.say("expert opinion: fine")], chunk_chars=3, chunk_latency=0.06)',
    )
    assert not errors(execute(client, setup))
    execute(client, "%%agent boss --model boss_model --tools expert_a,expert_b\nDecide.")
    run = execute(client, "%%agent_run boss -o res\nReview the contract.")

    assert not errors(run)
    values = monitor_values(run)
    # the sub-agents' text appeared while it was being written, under their paths
    for path in ("boss/expert_a", "boss/expert_b"):
        shown = [m.group(1) for v in values if (m := re.search(f"{path}:</span> ([^<]*)", v))]
        assert shown[-1] == "expert opinion: fine"
        assert any(len(text) < len(shown[-1]) for text in shown)  # seen before it was whole
    # the result took the live view's place: displayed, and the monitor closed
    shown = [m["content"]["data"]["text/plain"] for m in run if m["msg_type"] == "display_data"]
    assert shown[0] == "RunMonitor('boss')"
    assert shown[1].startswith("RunResult ✔ boss answered · 4 model calls")
    closed = [m for m in run if m["msg_type"] == "comm_close"]
    assert len(closed) >= 2  # the monitor and its view
    check = execute(client, "print(res.calls['ttft_s'].notna().all())")
    assert "".join(m["content"]["text"] for m in check if m["msg_type"] == "stream") == "True\n"


def test_kernel_interrupt_cancels_every_sub_agent_and_keeps_the_partial_trace(kernel):
    manager, client = kernel
    assert not errors(execute(client, SETUP.format(sub=30)))
    execute(client, "%%agent boss --model boss_model --tools expert_a,expert_b\nDecide.")
    interrupted: list[bool] = []

    def interrupt_once_both_experts_wait(msg: dict[str, Any]) -> None:
        values = monitor_values([msg])
        if not interrupted and values and values[-1].count("waiting for the model") == 2:
            interrupted.append(True)
            manager.interrupt_kernel()

    run = execute(
        client, "%%agent_run boss -o res\nReview.", on_message=interrupt_once_both_experts_wait
    )

    assert interrupted and not errors(run)
    assert "RunCancelled" in plain(run)[-1]
    assert "✘ <b>boss</b> · failed" in monitor_values(run)[-1]
    check = execute(
        client,
        "print(res.ok, type(res.error).__name__, sorted({s.agent for s in res.spans}),"
        " all(s.ended is not None for s in res.spans),"
        " [s.status for s in res.spans if s.agent.startswith('expert') and s.kind == 'agent'])",
    )
    printed = "".join(m["content"]["text"] for m in check if m["msg_type"] == "stream")
    assert printed.strip() == (
        "False RunCancelled ['boss', 'expert_a', 'expert_b'] True ['cancelled', 'cancelled']"
    )
    assert plain(execute(client, "6 * 7"), "execute_result") == ["42"]  # still responsive
