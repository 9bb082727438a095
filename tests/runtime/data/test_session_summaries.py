"""Session(summarize=SummarizeOlder(...)): the older turns sent as a rolling summary that a
model writes inside the run, counted apart from the conversation's own calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentnb import (
    Agent,
    BudgetExceeded,
    Limits,
    ScriptedModel,
    Session,
    SummarizeOlder,
    UserError,
    conversation_cost,
    run_sync,
    say,
)
from agentnb.models.canonical import dumps, message_payload
from agentnb.models.types import ModelRequest
from agentnb.runtime.data.memory import SUMMARY_HEADING


def _summaries() -> ScriptedModel:
    """A summariser whose summary names how many summaries it has written."""
    written: list[str] = []

    def reply(request: ModelRequest) -> object:
        written.append(f"summary {len(written) + 1}")
        return say(written[-1])

    return ScriptedModel(reply)


def _chat(turns: int) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel([say(f"a{i}") for i in range(turns)])
    return Agent("chat", "Answer.", model=model), model


def _sent(model: ScriptedModel, i: int) -> list[str | None]:
    return [m.content for m in model.requests[i].messages if m.role != "system"]


def _prompt(model: ScriptedModel, i: int) -> str:
    (message,) = [m for m in model.requests[i].messages if m.role == "user"]
    return message.content or ""


def test_older_turns_are_sent_as_a_summary_and_the_last_ones_as_they_were() -> None:
    agent, chat = _chat(4)
    summarizer = _summaries()
    session = Session(summarize=SummarizeOlder(summarizer, keep_last=2))
    for i in range(3):
        assert run_sync(agent, f"q{i}", session=session).ok
    assert summarizer.requests == []  # three turns: two kept, the third is the new input
    assert _sent(chat, 2) == ["q0", "a0", "q1", "a1", "q2"]

    result = run_sync(agent, "q3", session=session)
    assert result.ok, result.error
    # the summariser received the turn that fell out of the last two, and no summary yet
    assert (
        _prompt(summarizer, 0)
        == "Summary so far: none.\nTurns to add to it:\nuser: q0\nassistant: a0"
    )
    assert summarizer.requests[0].system == SummarizeOlder(summarizer).instructions
    # the conversation's model received the summary, then the last two turns as they were
    assert _sent(chat, 3) == [f"{SUMMARY_HEADING}\nsummary 1", "q1", "a1", "q2", "a2", "q3"]
    assert session.summary() == (1, "summary 1")
    assert len(session.turns()) == 4  # every turn is still stored


def test_the_summary_rolls_the_summary_so_far_into_the_next_one() -> None:
    agent, chat = _chat(5)
    summarizer = _summaries()
    session = Session(summarize=SummarizeOlder(summarizer, keep_last=2))
    for i in range(5):
        assert run_sync(agent, f"q{i}", session=session).ok
    assert len(summarizer.requests) == 2
    assert _prompt(summarizer, 1) == (
        "Summary so far:\nsummary 1\nTurns to add to it:\nuser: q1\nassistant: a1"
    )
    assert _sent(chat, 4) == [f"{SUMMARY_HEADING}\nsummary 2", "q2", "a2", "q3", "a3", "q4"]
    assert session.summary() == (2, "summary 2")


def test_the_summarisers_calls_are_rows_of_the_run_counted_apart() -> None:
    agent, chat = _chat(4)
    summarizer = _summaries()
    session = Session(summarize=SummarizeOlder(summarizer, keep_last=2, name="memory"))
    results = [run_sync(agent, f"q{i}", session=session) for i in range(4)]
    calls = results[3].calls
    assert list(zip(calls["agent"], calls["path"], calls["depth"], strict=True)) == [
        ("memory", "chat/memory", 1),
        ("chat", "chat", 0),
    ]
    assert results[3].usage.requests == 2  # the summariser's call adds to the run's usage
    table = conversation_cost(session)
    assert list(table["summary_calls"]) == [0, 0, 0, 1]
    assert list(table["model_calls"]) == [1, 1, 1, 1]  # the conversation's own calls
    summary_row = calls[calls["agent"] == "memory"].iloc[0]
    chat_row = calls[calls["agent"] == "chat"].iloc[0]
    assert table["chars_summary"].iloc[3] == summary_row["chars_in"]
    assert table["chars_sent"].iloc[3] == chat_row["chars_in"]
    # the history the conversation's call resent: the summary message and the two kept turns
    history = [m for m in chat.requests[3].messages if m.role != "system"][:-1]
    assert table["history_messages"].iloc[3] == 5
    assert table["chars_history"].iloc[3] == sum(
        len(dumps(message_payload(m))) + 1 for m in history
    )


def test_a_summary_in_a_file_is_read_by_a_later_session_object(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    agent, chat = _chat(5)
    summarizer = _summaries()
    for i in range(4):
        strategy = SummarizeOlder(summarizer, keep_last=2)
        assert run_sync(agent, f"q{i}", session=Session(path, id="u", summarize=strategy)).ok
    assert Session(path, id="u").summary() == (1, "summary 1")
    # a new object on the file folds in only the turn that fell out since
    later = Session(path, id="u", summarize=SummarizeOlder(summarizer, keep_last=2))
    assert run_sync(agent, "q4", session=later).ok
    assert _prompt(summarizer, 1).startswith("Summary so far:\nsummary 1\n")
    assert _prompt(summarizer, 1).endswith("user: q1\nassistant: a1")
    # a session opened without the strategy sends every turn
    assert len(Session(path, id="u").sent()) == 10
    later.clear()
    assert later.summary() is None and later.turns() == []


def test_a_summary_that_cannot_be_written_ends_the_run_and_stores_nothing() -> None:
    agent, chat = _chat(3)
    summarizer = ScriptedModel([])  # no reply: the summary fails
    session = Session(summarize=SummarizeOlder(summarizer, keep_last=1))
    for i in range(2):
        assert run_sync(agent, f"q{i}", session=session).ok
    result = run_sync(agent, "q2", session=session)
    assert not result.ok
    assert "summary of the session's older turns could not be written" in str(result.error)
    assert len(summarizer.requests) == 1 and len(chat.requests) == 2  # the agent never ran
    assert len(session.turns()) == 2 and session.summary() is None


def test_the_runs_limits_cover_the_summariser() -> None:
    agent, chat = _chat(3)
    session = Session(summarize=SummarizeOlder(_summaries(), keep_last=1))
    for i in range(2):
        assert run_sync(agent, f"q{i}", session=session).ok
    result = run_sync(agent, "q2", session=session, limits=Limits(max_model_calls=1))
    assert isinstance(result.error, BudgetExceeded)  # the summary took the run's one call
    assert list(result.calls["agent"]) == ["summarizer"] and len(chat.requests) == 2


def test_bad_strategies_are_user_errors_before_any_run() -> None:
    model = ScriptedModel([say("x")])
    with pytest.raises(UserError, match=r"SummarizeOlder\(model\) must be"):
        SummarizeOlder(42)
    with pytest.raises(UserError, match="keep_last"):
        SummarizeOlder(model, keep_last=0)
    with pytest.raises(UserError, match="not both"):
        Session(keep_last=1, summarize=SummarizeOlder(model))
    with pytest.raises(UserError, match="SummarizeOlder"):
        Session(summarize="short")  # type: ignore[arg-type]
    agent, chat = _chat(2)
    session = Session(summarize=SummarizeOlder("nowhere:model", keep_last=1))
    run_sync(agent, "q0", session=session)
    run_sync(agent, "q1", session=session)
    with pytest.raises(UserError, match="provider .nowhere."):  # before the run starts
        run_sync(agent, "q2", session=session)
    assert len(chat.requests) == 2
