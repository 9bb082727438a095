"""Widgets that survive saving: every agentnb widget output carries a static ``text/html``
snapshot of the widget's state beside the widget view, replaced (by display id) when the state
changes, so a saved notebook, nbviewer, GitHub and the docs site show the final table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbval.plugin import get_sanitize_patterns
from traitlets.config import Config

import agentnb as a
from agentnb.notebook import RunMonitor, SweepDashboard, TraceExplorer, run_live

VIEW = "application/vnd.jupyter.widget-view+json"
SANITIZE_FILE = Path(__file__).parents[2] / "notebooks" / "nbval_sanitize.cfg"


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    return InteractiveShell.instance(config=config)


def team() -> a.Agent:
    legal = a.Agent("legal", "You review law.", a.ScriptedModel([a.say("lawful")]))
    script = [a.tool_call("legal", input="clause 7"), a.say("approved")]
    return a.Agent("boss", "Coordinate.", a.ScriptedModel(script), [legal])


def snapshot_text(data: dict) -> str:
    """The snapshot's words, tags dropped."""
    html = data["text/html"]
    assert html.startswith("<!-- agentnb snapshot -->")
    assert html.endswith("<!-- /agentnb snapshot -->")
    return re.sub(r"<[^>]+>", " ", html)


def test_a_run_monitor_output_ends_with_the_final_table(shell, dummy_comm):
    agent = team()
    with capture_output() as captured:
        result = run_live(agent, "review clause 7")

    first, *updates = captured.outputs
    assert set(first.data) == {"text/plain", "text/html", VIEW}
    assert first.data["text/plain"] == "RunMonitor('boss')"
    assert "waiting" in snapshot_text(first.data)
    display_id = first.transient["display_id"]
    # The final state replaces the snapshot in the same output (same display id), beside the view.
    last = updates[-1]
    assert last.update and last.transient["display_id"] == display_id
    assert last.data[VIEW] == first.data[VIEW]
    final = snapshot_text(last.data)
    assert "ok" in final and "boss" in final and "legal" in final
    assert "3 model calls" in final and f"{result.chars_in:,} chars sent" in final
    assert agent.model.requests[1].tool_results == ["lawful"]


def test_the_explorer_and_the_dashboard_carry_their_state_as_html(shell, dummy_comm):
    result = a.run_sync(team(), "review")
    explorer = TraceExplorer(result)
    shell.user_ns["explorer"] = explorer
    with capture_output() as captured:
        shell.run_cell("explorer")  # a cell's value is shown as display() shows it
    (shown,) = captured.outputs
    assert VIEW in shown.data
    text = snapshot_text(shown.data)
    assert "agent boss" in text and "tool legal" in text and "tool schemas" in text

    explorer.select(next(s.span_id for s in result.spans if s.kind == "tool_call"))
    with capture_output() as captured:
        explorer.refresh_snapshot()
    assert "argument chars" in snapshot_text(captured.outputs[-1].data)

    from IPython.display import display

    board = SweepDashboard(k=1, max_k=2, latency=0.0)
    with capture_output() as captured:
        display(board)
        board.k.value = 2  # a slider moves: the saved output follows
    first, last = captured.outputs[0], captured.outputs[-1]
    assert "1 sub-agent " in snapshot_text(first.data)
    assert last.update and "2 sub-agents" in snapshot_text(last.data)
    assert last.data["text/html"].count('src="data:image/png;base64,') == 2


def test_an_approval_prompt_output_ends_with_its_decision(shell, dummy_comm):
    from agentnb.notebook.approval_widget import ApprovalPrompt, _show
    from agentnb.runtime.guards.approval import PendingCall

    pending = PendingCall(
        run_id="r1",
        caller="boss",
        agent="legal",
        tool="legal",
        path="boss/legal",
        input="review clause 7",
        artifacts={"clause": "The supplier may terminate."},
    )
    prompt = ApprovalPrompt(pending)
    with capture_output() as captured:
        _show(prompt.widget)
        prompt.decide(False, "not on Fridays")

    first, last = captured.outputs[0], captured.outputs[-1]
    assert VIEW in first.data
    waiting = snapshot_text(first.data)
    assert "boss" in waiting and "review clause 7" in waiting and "clause" in waiting
    assert "Waiting for a decision" in waiting
    assert last.update and last.transient["display_id"] == first.transient["display_id"]
    assert "Rejected: not on Fridays" in snapshot_text(last.data)


def test_nbval_compares_snapshots_as_their_marker_only():
    """nbval sees a widget's first display, the saved notebook its last one: the shipped
    sanitize file makes them equal, as it already ignores the widget view."""
    rules = get_sanitize_patterns(SANITIZE_FILE.read_text())
    monitor = RunMonitor("boss")
    before = monitor._repr_mimebundle_()["text/html"]
    monitor.finish(a.run_sync(team(), "review"))
    after = monitor._repr_mimebundle_()["text/html"]
    assert before != after

    def sanitize(text: str) -> str:
        for regex, replace in rules:
            text = re.sub(regex, replace, text)
        return text

    assert sanitize(before) == sanitize(after) == "<!-- agentnb snapshot -->"
