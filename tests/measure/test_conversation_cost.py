"""conversation_cost: one row per turn, history against new."""

from __future__ import annotations

import pytest

from agentnb import (
    Agent,
    Prices,
    ScriptedModel,
    Session,
    UserError,
    conversation_cost,
    run_sync,
    say,
)
from agentnb.models.canonical import dumps, message_payload


def _conversation(turns: int, keep_last: int | None = None) -> tuple[Session, ScriptedModel]:
    model = ScriptedModel([say(f"answer {i}") for i in range(turns)])
    agent = Agent("a", "Answer.", model=model)
    session = Session(keep_last=keep_last)
    for i in range(turns):
        assert run_sync(agent, f"question {i}", session=session).ok
    return session, model


def test_each_turn_sends_the_history_and_it_grows() -> None:
    session, model = _conversation(4)
    table = conversation_cost(session)
    assert list(table["turn"]) == [1, 2, 3, 4]
    assert list(table["history_messages"]) == [0, 2, 4, 6]
    assert table["chars_history"].iloc[0] == 0
    assert table["chars_history"].is_monotonic_increasing
    assert (table["chars_history"] + table["chars_new"] == table["chars_sent"]).all()
    # the history counted is what the model received before the new input
    sent = [m for m in model.requests[3].messages if m.role != "system"][:-1]
    assert table["chars_history"].iloc[3] == sum(len(dumps(message_payload(m))) + 1 for m in sent)
    # what is new does not grow with the history: the instructions and one question
    assert table["chars_new"].max() - table["chars_new"].min() < 10
    assert table["chars_sent"].iloc[3] > table["chars_sent"].iloc[0]


def test_keep_last_caps_the_history_sent() -> None:
    full, _ = _conversation(5)
    capped, model = _conversation(5, keep_last=1)
    assert list(conversation_cost(capped)["history_messages"]) == [0, 2, 2, 2, 2]
    assert len([m for m in model.requests[4].messages if m.role != "system"]) == 3
    assert (
        conversation_cost(capped)["chars_sent"].sum() < conversation_cost(full)["chars_sent"].sum()
    )


def test_prices_and_caching_add_columns() -> None:
    session, _ = _conversation(2)
    table = conversation_cost(session.results, prices=Prices(), caching="openai")
    assert {"cost", "tokens_in_cached_est"} <= set(table.columns)
    assert len(table) == 2


@pytest.mark.parametrize("bad", [{"data": "chat"}, {"caching": "gemini"}, {"prices": {"x": 1}}])
def test_bad_input_is_a_user_error(bad: dict[str, object]) -> None:
    session, _ = _conversation(1)
    data = bad.pop("data", session)
    with pytest.raises(UserError):
        conversation_cost(data, **bad)  # type: ignore[arg-type]
