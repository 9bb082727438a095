"""agentnb.Session: history read before a run, the run's turn appended after it ends ok."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agentnb
from agentnb import (
    Agent,
    ScriptedModel,
    Session,
    UserError,
    run_streamed,
    run_sync,
    say,
    stream_sync,
)
from agentnb.models.types import Message


def _agent(*replies: str) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel([say(r) for r in replies])
    return Agent("a", "Answer.", model=model), model


def _sent(model: ScriptedModel, i: int) -> list[tuple[str, str | None]]:
    return [(m.role, m.content) for m in model.requests[i].messages if m.role != "system"]


def test_a_memory_session_sends_its_history_before_the_new_input() -> None:
    agent, model = _agent("a1", "a2", "a3")
    session = Session()
    assert run_sync(agent, "q1", session=session).output == "a1"
    assert run_sync(agent, "q2", session=session).output == "a2"
    result = run_sync(agent, "q3", session=session)
    assert _sent(model, 0) == [("user", "q1")]
    assert _sent(model, 2) == [
        ("user", "q1"),
        ("assistant", "a1"),
        ("user", "q2"),
        ("assistant", "a2"),
        ("user", "q3"),
    ]
    assert [m.content for m in result.new_items] == ["a3"]
    assert [[m.content for m in t] for t in session.turns()] == [
        ["q1", "a1"],
        ["q2", "a2"],
        ["q3", "a3"],
    ]


def test_a_failed_run_appends_nothing() -> None:
    agent, model = _agent("a1")  # the second run's model has no reply left: the run fails
    session = Session()
    run_sync(agent, "q1", session=session)
    result = run_sync(agent, "q2", session=session)
    assert not result.ok
    assert [m.content for m in session.history()] == ["q1", "a1"]


def test_keep_last_sends_the_last_turns_and_stores_all() -> None:
    agent, model = _agent("a1", "a2", "a3")
    session = Session(keep_last=1)
    for q in ("q1", "q2", "q3"):
        run_sync(agent, q, session=session)
    assert _sent(model, 2) == [("user", "q2"), ("assistant", "a2"), ("user", "q3")]
    assert len(session.history()) == 6


def test_a_sqlite_session_survives_a_new_object(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    agent, model = _agent("a1", "a2")
    run_sync(agent, "q1", session=Session(path, id="user-42"))
    run_sync(agent, "q2", session=Session(path, id="user-42"))
    assert _sent(model, 1) == [("user", "q1"), ("assistant", "a1"), ("user", "q2")]
    assert Session(path, id="someone-else").history() == []
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "agentnb_session_messages" in tables


def test_tool_calls_round_trip_through_the_file(tmp_path: Path) -> None:
    from agentnb.models.types import ToolCall

    call = ToolCall("f", {"x": 1}, "c1")
    messages = [
        Message.user("q"),
        Message("assistant", None, tool_calls=(call,)),
        Message.tool(call, "42"),
        Message.assistant("done"),
    ]
    session = Session(tmp_path / "c.db")
    session.append(messages)
    assert Session(tmp_path / "c.db").history() == messages


def test_run_streamed_and_stream_sync_take_the_session() -> None:
    agent, model = _agent("a1", "a2", "a3")
    session = Session()
    run_sync(agent, "q1", session=session)

    async def go() -> object:
        stream = run_streamed(agent, "q2", session=session)
        async for _ in stream:
            pass
        return await stream.result()

    asyncio.run(asyncio.wait_for(go(), 30))
    assert _sent(model, 1) == [("user", "q1"), ("assistant", "a1"), ("user", "q2")]
    assert len(session.turns()) == 2
    events = list(stream_sync(agent, "q3", session=session))
    assert events[-1].result.ok  # type: ignore[attr-defined]
    assert _sent(model, 2)[-3:] == [("user", "q2"), ("assistant", "a2"), ("user", "q3")]


def test_a_second_run_on_a_busy_session_is_refused() -> None:
    agent, model = _agent("a1")
    session = Session()
    session.claim()
    try:
        with pytest.raises(UserError, match="in use"):
            run_sync(agent, "q", session=session)
    finally:
        session.release()
    assert model.requests == []
    assert run_sync(agent, "q", session=session).ok


@pytest.mark.parametrize("kind", ["garbage", "directory"])
def test_a_bad_file_is_a_user_error_naming_it(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "chat.db"
    if kind == "garbage":
        path.write_bytes(b"not a database at all" * 100)
    else:
        path.mkdir()
    with pytest.raises(UserError, match=r"chat\.db") as info:
        Session(path)
    assert "\n" not in str(info.value)


def test_a_bad_session_option_is_a_user_error() -> None:
    agent, model = _agent("a1")
    with pytest.raises(UserError, match="agentnb.Session"):
        run_sync(agent, "q", session=[])  # type: ignore[arg-type]
    with pytest.raises(UserError):
        Session(keep_last=0)
    assert model.requests == []


_HOLDER = textwrap.dedent(
    """
    import sys, time
    from agentnb import Session
    s = Session(sys.argv[1], id="shared")
    s.claim()
    print("claimed", flush=True)
    sys.stdin.readline()  # hold the claim until the test says so
    s.release()
    print("released", flush=True)
    """
)

_TRIER = textwrap.dedent(
    """
    import sys
    from agentnb import Session, UserError
    try:
        Session(sys.argv[1], id="shared").claim()
    except UserError as exc:
        print("refused:", exc)
    else:
        print("claimed")
    """
)


def test_two_processes_on_one_file_never_interleave(tmp_path: Path) -> None:
    path = str(tmp_path / "chat.db")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdin is not None
            assert holder.stdout.readline().strip() == "claimed"
            tried = subprocess.run(
                [sys.executable, "-c", _TRIER, path],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            assert tried.stdout.startswith("refused:") and f"process {holder.pid}" in tried.stdout
            holder.stdin.write("\n")
            holder.stdin.flush()
            assert holder.stdout.readline().strip() == "released"
            holder.wait(timeout=30)
            again = subprocess.run(
                [sys.executable, "-c", _TRIER, path],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            assert again.stdout.strip() == "claimed"
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait(timeout=10)


def test_a_dead_processes_claim_is_stale(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    Session(path, id="shared")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("INSERT INTO agentnb_session_claims VALUES ('shared', ?)", (int(dead.stdout),))
    conn.close()
    agent, model = _agent("a1")
    assert run_sync(agent, "q", session=Session(path, id="shared")).ok
    assert agentnb.Session is Session


def test_a_pattern_or_a_resume_refuses_a_session() -> None:
    agent, model = _agent("a1", "a2")
    with pytest.raises(UserError, match="pattern"):
        asyncio.run(agentnb.parallel({"x": agent, "y": agent}, "q", session=Session()))
    assert model.requests == []


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every SQLite connection from now on may not grow its file (SQLITE_FULL on a new page)."""
    connect = sqlite3.connect

    def full(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)  # type: ignore[arg-type]
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    monkeypatch.setattr(sqlite3, "connect", full)


def test_a_turn_that_cannot_be_stored_ends_the_run_not_ok_and_keeps_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chat.db"
    long = "x" * 20_000  # needs new pages of the file, which is full
    agent, model = _agent(long, long, "again")
    Session(path, id="u")  # the tables exist before the disk fills
    with monkeypatch.context() as patched:
        _full_disk(patched)
        session = Session(path, id="u")
        result = run_sync(agent, "q1", session=session)
        events = list(stream_sync(agent, "q2", session=session))
    assert not result.ok and isinstance(result.error, agentnb.errors.SessionNotSaved)
    message = str(result.error)
    assert "chat.db" in message and "not stored" in message and "full" in message
    assert "\n" not in message and result.error.path == str(path)
    assert result.output == long and result.partial == long  # nothing the run did is lost
    assert len(result.calls) == 1 and _sent(model, 0) == [("user", "q1")]
    assert any(r["event"] == "session_not_saved" for r in result.trace.records)
    streamed = events[-1].result  # type: ignore[attr-defined]
    assert not streamed.ok and isinstance(streamed.error, agentnb.errors.SessionNotSaved)
    assert session.results == []
    # Nothing was stored and the claim was ended: the next run starts from an empty history.
    assert Session(path, id="u").history() == []
    assert run_sync(agent, "q3", session=Session(path, id="u")).ok
    assert _sent(model, 2) == [("user", "q3")]


def test_a_file_damaged_during_the_run_ends_it_not_ok_without_raising(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"

    def damage() -> str:
        """Overwrite the session's file."""
        path.write_bytes(b"not a database at all" * 100)
        return "done"

    model = ScriptedModel([agentnb.tool_call("damage"), say("a1")])
    agent = Agent("a", "Answer.", model=model, tools=[damage])
    session = Session(path, id="u")
    result = run_sync(agent, "q1", session=session)
    assert not result.ok and isinstance(result.error, agentnb.errors.SessionNotSaved)
    assert "not stored" in str(result.error) and "chat.db" in str(result.error)
    assert result.output == "a1" and len(result.calls) == 2
    # The in-process claim ended too: the next run is refused only for the damaged file.
    with pytest.raises(UserError, match="not a usable SQLite file"):
        run_sync(agent, "q2", session=session)


@pytest.mark.parametrize(
    "stored", ["{not json", "[1, 2]", '{"role": 7}', '{"role": "user", "x": 1}']
)
def test_a_stored_message_edited_outside_agentnb_stops_the_run_before_the_model_is_asked(
    tmp_path, stored
):
    path = tmp_path / "chat.db"
    session = agentnb.Session(path, id="u1")
    agentnb.run_sync(
        agentnb.Agent("chat", "x", agentnb.ScriptedModel([agentnb.say("hi")])),
        "hello",
        session=session,
    )
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE agentnb_session_messages SET message = ? WHERE position = 0", (stored,)
        )
    model = agentnb.ScriptedModel([agentnb.say("never")])

    with pytest.raises(
        agentnb.UserError, match=r"Session 'u1' in '.*chat\.db': a stored message of turn"
    ):
        agentnb.run_sync(
            agentnb.Agent("chat", "x", model), "again", session=agentnb.Session(path, id="u1")
        )
    assert model.requests == []  # nothing ran on the damaged history
    # the session is not left claimed: once restored, the next run goes on
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM agentnb_session_messages")
    again = agentnb.run_sync(
        agentnb.Agent("chat", "x", model), "again", session=agentnb.Session(path, id="u1")
    )
    assert again.ok and [m.content for m in model.requests[0].messages] == ["again"]
