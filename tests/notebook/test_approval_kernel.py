"""Approval in a real ipykernel (this interpreter, started by the test), answered the way a
frontend answers: a click sent as a ``comm_msg`` on the shell channel while an awaiting cell
runs, and an ``input_reply`` on the stdin channel while a cell is blocked in `run_sync`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from jupyter_client import KernelClient
from jupyter_core.utils import ensure_event_loop
from notebook_support import errors, execute, running_kernel

SETUP = """
import agentnb as a

def team():
    legal_model = a.ScriptedModel([a.say("risky")])
    legal = a.Agent("legal", "Review.", legal_model)
    boss_model = a.ScriptedModel([a.tool_call("legal", input="review it"), a.say("done")])
    boss = a.Agent("boss", "Coordinate.", boss_model, [legal.as_tool(needs_approval=True)])
    return boss, boss_model

def sql_analyst():
    @a.tool(needs_approval=True)
    def query(sql: str) -> str:
        "Run SQL."
        return "3 rows"

    model = a.ScriptedModel([a.tool_call("query", sql="select 1"), a.say("done")])
    return a.Agent("analyst", "Answer with SQL.", model, [query]), model
"""
REPORT = "print(res.ok, bm.requests[1].tool_results, [e['approved'] for e in res.trace.records if e['event'] == 'approval'])"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelClient]:
    with running_kernel(tmp_path_factory.mktemp("jupyter")) as (_, client):
        run_cell(client, SETUP)
        yield client


def run_cell(
    client: KernelClient,
    code: str,
    *,
    on_message: Callable[[dict[str, Any]], None] | None = None,
    allow_stdin: bool = False,
) -> list[dict[str, Any]]:
    """`execute` ``code``; fail on an error."""
    seen = execute(client, code, on_message=on_message, allow_stdin=allow_stdin)
    assert not errors(seen), errors(seen)
    return seen


def printed(messages: list[dict[str, Any]]) -> str:
    return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")


def send_comm(client: KernelClient, comm_id: str, data: dict[str, Any]) -> None:
    """What the browser sends when a person types in or clicks a widget."""
    client.shell_channel.send(client.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))


def test_an_awaiting_cell_shows_the_widget_and_a_click_approves(kernel):
    widgets: dict[str, str] = {}

    def browser(msg: dict[str, Any]) -> None:
        if msg["msg_type"] != "comm_open":
            return
        state = msg["content"]["data"]["state"]
        label = state.get("description")
        if label in ("Approve", "Reason"):
            widgets[label] = msg["content"]["comm_id"]
        if len(widgets) == 2 and "clicked" not in widgets:
            widgets["clicked"] = "yes"
            send_comm(
                kernel,
                widgets["Reason"],
                {"method": "update", "state": {"value": "fine"}, "buffer_paths": []},
            )
            send_comm(
                kernel, widgets["Approve"], {"method": "custom", "content": {"event": "click"}}
            )

    cell = run_cell(
        kernel, f"boss, bm = team()\nres = await a.run(boss, 'go')\n{REPORT}", on_message=browser
    )

    assert widgets.get("clicked") == "yes"
    assert printed(cell).strip() == "True ['risky'] [True]"


def test_a_cell_blocked_in_run_sync_asks_on_stdin_and_a_reason_rejects(kernel):
    answered: list[str] = []

    def person() -> None:
        try:
            request = kernel.get_stdin_msg(timeout=30)
            answered.append(request["content"]["prompt"])
            kernel.input("ask finance first")
        finally:  # the event loop jupyter_core made for this thread's blocking calls
            ensure_event_loop().close()

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    cell = run_cell(
        kernel, f"boss, bm = team()\nres = a.run_sync(boss, 'go')\n{REPORT}", allow_stdin=True
    )
    thread.join(timeout=30)

    assert answered == ["Approve? y = yes; a reason (or n) rejects: "]
    out = printed(cell)
    assert "Approval needed: boss wants to call legal (tool legal) at boss/legal" in out
    assert out.strip().endswith("True ['call to legal rejected: ask finance first'] [False]")


def test_a_function_tool_needing_approval_shows_the_widget_and_a_click_approves(kernel):
    widgets: dict[str, str] = {}

    def browser(msg: dict[str, Any]) -> None:
        if msg["msg_type"] != "comm_open":
            return
        label = msg["content"]["data"]["state"].get("description")
        if label == "Approve" and "clicked" not in widgets:
            widgets["clicked"] = "yes"
            send_comm(
                kernel,
                msg["content"]["comm_id"],
                {"method": "custom", "content": {"event": "click"}},
            )

    code = (
        "analyst, am = sql_analyst()\nres = await a.run(analyst, 'go')\n"
        "print(res.ok, am.requests[1].tool_results, [(r.tool, r.arguments, r.decision) for r in res.approvals])"
    )
    cell = run_cell(kernel, code, on_message=browser)

    assert widgets.get("clicked") == "yes"
    assert printed(cell).strip() == "True ['3 rows'] [('query', {'sql': 'select 1'}, 'approved')]"
