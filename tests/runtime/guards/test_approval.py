"""Human approval of sub-agent calls: approve, reject, decide per call, async, none, the widget."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import agentnb as a
from agentnb.measure.approvals import approval_wait, approvals
from agentnb.notebook import approval_widget
from agentnb.runtime.guards import approval
from agentnb.runtime.guards.approval import Approval, PendingCall, approve_all, reject_all

CLAUSE = "The supplier may terminate at any time without notice."


def legal_team(
    needs_approval: Any = True, *, attach: bool = False, boss_script: list[Any] | None = None
) -> tuple[a.Agent, a.ScriptedModel, a.ScriptedModel]:
    """boss -> legal (as a tool needing approval); boss asks legal once, then says "done"."""
    legal_model = a.ScriptedModel([a.say("risky #0")])
    legal = a.Agent("legal", "You review clauses.", legal_model)
    handles = ["clause"] if attach else []
    boss_model = a.ScriptedModel(
        boss_script or [a.tool_call("legal", input="review it", artifacts=handles), a.say("done")]
    )
    boss = a.Agent(
        "boss", "You coordinate.", boss_model, [legal.as_tool(needs_approval=needs_approval)]
    )
    return boss, boss_model, legal_model


def test_an_approved_call_runs_and_the_approver_sees_agent_input_and_documents():
    seen: list[PendingCall] = []

    def approver(pending: PendingCall) -> Approval:
        seen.append(pending)
        return Approval(True, "ok by me")

    boss, boss_model, legal_model = legal_team(attach=True)
    result = a.run_sync(boss, "go", approver=approver, artifacts={"clause": CLAUSE})

    assert result.ok and result.output == "done"
    assert boss_model.requests[1].tool_results == ["risky #0"]
    assert len(legal_model.requests) == 1
    (pending,) = seen
    assert (pending.agent, pending.tool, pending.caller) == ("legal", "legal", "boss")
    assert pending.input == "review it"
    assert pending.artifacts == {"clause": CLAUSE}
    assert pending.path == "boss/legal"
    assert pending.run_id == result.run_id
    event = next(e for e in result.trace.records if e["event"] == "approval")
    assert event["approved"] is True and event["reason"] == "ok by me"


def test_a_rejection_goes_back_to_the_caller_as_text_and_the_run_goes_on():
    boss, boss_model, legal_model = legal_team()
    result = a.run_sync(boss, "go", approver=reject_all, artifacts={"clause": CLAUSE})

    assert result.ok and result.output == "done"
    assert legal_model.requests == []  # the sub-agent never ran
    (text,) = boss_model.requests[1].tool_results
    assert text == "call to legal rejected: the run's approver rejects every call (reject_all)"
    tool_span = next(s for s in result.spans if s.kind == "tool_call")
    assert tool_span.status == "refused"


def test_a_rejection_without_a_reason_says_so():
    boss, boss_model, _ = legal_team()
    result = a.run_sync(boss, "go", approver=lambda pending: Approval(False))

    assert result.ok
    assert boss_model.requests[1].tool_results == ["call to legal rejected: no reason given"]


def test_a_callable_decides_per_call_which_calls_need_approval():
    asked: list[str] = []

    def approver(pending: PendingCall) -> Approval:
        asked.append(pending.input)
        return Approval(False, "not without a lawyer")

    script = [
        [
            a.tool_call("legal", input="summarise"),
            a.tool_call("legal", input="sign it", artifacts=["clause"]),
        ],
        a.say("done"),
    ]
    boss, boss_model, legal_model = legal_team(
        lambda pending: bool(pending.artifacts), boss_script=script
    )
    result = a.run_sync(boss, "go", approver=approver, artifacts={"clause": CLAUSE})

    assert result.ok
    assert asked == ["sign it"]
    assert [r.last_user_text for r in legal_model.requests] == ["summarise"]
    assert boss_model.requests[1].tool_results == [
        "risky #0",
        "call to legal rejected: not without a lawyer",
    ]
    table = approvals(result)  # only the call somebody was asked about
    assert table[["path", "agent", "approved", "reason"]].to_dict("records") == [
        {"path": "boss", "agent": "legal", "approved": False, "reason": "not without a lawyer"}
    ]
    assert approval_wait(result) == table["wait_s"].sum()


async def test_an_async_approver_is_awaited_and_the_wait_is_traced_apart_from_model_latency():
    asked, released = asyncio.Event(), asyncio.Event()

    async def approver(pending: PendingCall) -> Approval:
        asked.set()
        await released.wait()
        return Approval(True)

    boss, _, legal_model = legal_team()
    task = asyncio.ensure_future(a.run(boss, "go", approver=approver))
    await asyncio.wait_for(asked.wait(), 5)
    assert legal_model.requests == []  # the sub-agent waits for the decision
    released.set()
    result = await task

    assert result.ok and len(legal_model.requests) == 1
    spans = {s.kind: s for s in result.spans if s.kind in ("tool_call", "approval")}
    sub_agent = next(s for s in result.spans if s.kind == "agent" and s.agent == "legal")
    assert spans["approval"].parent_id == spans["tool_call"].span_id
    assert spans["approval"].ended <= sub_agent.started  # the sub-agent started after the decision
    wait = spans["approval"].attrs["wait_s"]
    assert wait == spans["tool_call"].attrs["approval_wait_s"]
    assert [e["wait_s"] for e in result.trace.records if e["event"] == "approval"] == [wait]
    assert len(result.calls) == 3  # model-call rows only: the wait is not a model's latency
    assert result.calls["ended"].iloc[0] <= spans["approval"].started


async def test_sync_approvers_run_off_the_event_loop():
    threads: list[threading.Thread] = []

    def approver(pending: PendingCall) -> Approval:
        threads.append(threading.current_thread())
        return Approval(True)

    boss, _, _ = legal_team()
    result = await a.run(boss, "go", approver=approver)

    assert result.ok
    assert threads and threads[0] is not threading.current_thread()


def test_without_an_approver_outside_a_notebook_the_run_ends_with_a_clear_error():
    boss, boss_model, legal_model = legal_team()
    result = a.run_sync(boss, "go")

    assert not result.ok
    assert isinstance(result.error, a.NoApprover)
    assert "approver=" in str(result.error) and "boss/legal" in str(result.error)
    assert legal_model.requests == [] and len(boss_model.requests) == 1


def test_a_missing_approver_deeper_down_still_ends_the_run():
    boss, _, _ = legal_team()
    top_model = a.ScriptedModel([a.tool_call("boss", input="delegate"), a.say("never")])
    top = a.Agent("top", "You delegate.", top_model, [boss])
    result = a.run_sync(top, "go")

    assert not result.ok and isinstance(result.error, a.NoApprover)
    assert "top/boss/legal" in str(result.error)


def test_an_approver_that_raises_rejects_the_call():
    def broken(pending: PendingCall) -> Approval:
        raise RuntimeError("approval service down")

    boss, boss_model, legal_model = legal_team()
    result = a.run_sync(boss, "go", approver=broken)

    assert result.ok and legal_model.requests == []
    assert boss_model.requests[1].tool_results == [
        "call to legal rejected: the approver failed (RuntimeError: approval service down)"
    ]


def test_an_approver_returning_something_else_ends_the_run():
    boss, _, _ = legal_team()
    result = a.run_sync(boss, "go", approver=lambda pending: "yes")

    assert not result.ok and isinstance(result.error, a.UserError)
    assert "agentnb.Approval" in str(result.error)


def test_an_approver_that_is_not_callable_is_refused_before_the_run():
    boss, _, _ = legal_team()
    with pytest.raises(a.UserError, match="approver must be a function"):
        a.run_sync(boss, "go", approver=True)


def test_approve_all_and_bool_answers():
    assert approve_all(PendingCall("x", "x", "task")).approved
    boss, _, legal_model = legal_team()
    result = a.run_sync(boss, "go", approver=lambda pending: True)
    assert result.ok and len(legal_model.requests) == 1


# -- the notebook widget, through a dummy comm -------------------------------------------


@pytest.fixture
def notebook(
    monkeypatch: pytest.MonkeyPatch, dummy_comm: Any
) -> list[approval_widget.ApprovalPrompt]:
    """A fake notebook: widgets talk to dummy comms; prompts shown are collected."""
    monkeypatch.setattr(approval, "in_notebook", lambda: True)
    monkeypatch.setattr(approval_widget, "in_notebook", lambda: True)
    shown: list[approval_widget.ApprovalPrompt] = []
    original = approval_widget.ApprovalPrompt

    class Recorded(original):  # type: ignore[misc, valid-type]
        def __init__(self, pending: PendingCall) -> None:
            super().__init__(pending)
            shown.append(self)

    monkeypatch.setattr(approval_widget, "ApprovalPrompt", Recorded)
    monkeypatch.setattr(approval_widget, "_show", lambda widget: None)
    return shown


def _click_from_the_kernel_thread(prompt: Any, button: str, reason: str) -> threading.Thread:
    def browser() -> None:
        prompt.reason.comm.from_frontend({"method": "update", "state": {"value": reason}})
        getattr(prompt, button).comm.from_frontend(
            {"method": "custom", "content": {"event": "click"}}
        )

    thread = threading.Thread(target=browser)
    thread.start()
    return thread


async def test_in_a_notebook_the_widget_asks_and_a_click_approves(notebook):
    boss, _, legal_model = legal_team(attach=True)
    task = asyncio.ensure_future(a.run(boss, "go", artifacts={"clause": CLAUSE}))
    while not notebook and not task.done():
        await asyncio.sleep(0.001)
    (prompt,) = notebook
    opened = prompt.header.comm.opened["data"]["state"]["value"]
    assert "boss" in opened and "legal" in opened and "boss/legal" in opened
    assert prompt.input.comm.opened["data"]["state"]["value"] == "review it"
    assert prompt.artifacts.get_title(0) == f"clause ({len(CLAUSE)} characters)"
    assert not legal_model.requests  # waiting for the person

    _click_from_the_kernel_thread(prompt, "approve_button", "looks fine").join()
    result = await task

    assert result.ok and len(legal_model.requests) == 1
    event = next(e for e in result.trace.records if e["event"] == "approval")
    assert event["approved"] is True and event["reason"] == "looks fine"
    assert prompt.approve_button.disabled and "Approved" in prompt.status.value


async def test_in_a_notebook_a_rejection_with_a_reason_reaches_the_caller(notebook):
    boss, boss_model, legal_model = legal_team()
    task = asyncio.ensure_future(a.run(boss, "go"))
    while not notebook and not task.done():
        await asyncio.sleep(0.001)
    _click_from_the_kernel_thread(notebook[0], "reject_button", "ask finance first").join()
    result = await task

    assert result.ok and legal_model.requests == []
    assert boss_model.requests[1].tool_results == ["call to legal rejected: ask finance first"]
    assert "Rejected: ask finance first" in notebook[0].status.value


class FakeKernel:
    """A kernel whose stdin channel answers ``raw_input`` from a list (or raises)."""

    def __init__(self, *answers: str | BaseException) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def raw_input(self, prompt: str = "") -> str:
        self.prompts.append(prompt)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer


@pytest.fixture
def kernel_stdin(notebook, monkeypatch: pytest.MonkeyPatch):
    import IPython

    def use(*answers: str | BaseException) -> FakeKernel:
        kernel = FakeKernel(*answers)
        shell = type("Shell", (), {"kernel": kernel})()
        monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
        return kernel

    return use


@pytest.mark.parametrize(
    ("answer", "tool_result"),
    [
        ("y", "risky #0"),
        ("ask finance first", "call to legal rejected: ask finance first"),
        ("n", "call to legal rejected: no reason given"),
    ],
)
def test_a_cell_blocked_in_run_sync_asks_on_the_stdin_channel(
    kernel_stdin, notebook, capsys, answer, tool_result
):
    kernel = kernel_stdin(answer)
    boss, boss_model, _ = legal_team(attach=True)
    result = a.run_sync(boss, "go", artifacts={"clause": CLAUSE})

    assert result.ok and notebook == []  # no widget: its click could not arrive
    assert boss_model.requests[1].tool_results == [tool_result]
    assert kernel.prompts == ["Approve? y = yes; a reason (or n) rejects: "]
    shown = capsys.readouterr().out
    assert "boss wants to call legal (tool legal) at boss/legal" in shown
    assert f"clause ({len(CLAUSE)} characters)" in shown


def test_a_frontend_without_stdin_is_a_clear_error(kernel_stdin):
    from IPython.core.error import StdinNotImplementedError

    kernel_stdin(StdinNotImplementedError("no stdin"))
    boss, _, legal_model = legal_team()
    result = a.run_sync(boss, "go")

    assert not result.ok and isinstance(result.error, a.NoApprover)
    assert "cannot ask for input" in str(result.error) and legal_model.requests == []
