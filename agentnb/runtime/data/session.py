"""`Session`: a conversation kept across runs, in memory or in a SQLite file.

``run(agent, input, session=s)`` reads the session's history before the run and puts it
before the new input; when the run ends ok, the new input and the run's new items are
appended as one turn (one SQLite transaction). A failed run appends nothing; a turn that
cannot be stored (a full disk, a read-only or damaged file) ends the run ``ok=False`` with
`SessionNotSaved`, its output and trace kept, rather than raising. Two runs on one
session at once are refused with a `UserError` (in one process by a flag; across processes
by a claim row holding the owner's pid, taken under ``BEGIN IMMEDIATE``), never interleaved.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

from ... import checks
from ...errors import SessionNotSaved, UserError
from ...models.types import Message
from .memory import Fold, SummarizeOlder, summary_message

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentnb_session_messages (
    session_id TEXT NOT NULL, turn INTEGER NOT NULL, position INTEGER NOT NULL,
    message TEXT NOT NULL, PRIMARY KEY (session_id, turn, position));
CREATE TABLE IF NOT EXISTS agentnb_session_claims (
    session_id TEXT PRIMARY KEY, pid INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS agentnb_session_summaries (
    session_id TEXT PRIMARY KEY, turns INTEGER NOT NULL, summary TEXT NOT NULL);
"""


class Session:
    """A conversation's history across runs: ``Session()`` in memory, or
    ``Session("chat.db", id="user-42")`` in a SQLite file (its own tables, created if missing).

    ``keep_last=n`` sends only the last n turns to the model; ``summarize=SummarizeOlder(model,
    keep_last=n)`` sends the last n and a summary of the older ones (`agentnb.runtime.data.memory`).
    Every turn is still stored."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        id: str = "default",
        keep_last: int | None = None,
        summarize: SummarizeOlder | None = None,
    ) -> None:
        if type(id) is not str or not id:
            raise UserError(f"Session id must be a non-empty string, got {id!r}")
        checks.positive_int(keep_last, "keep_last")
        if summarize is not None and not isinstance(summarize, SummarizeOlder):
            raise checks.fail("Session(summarize=...)", "agentnb.SummarizeOlder(...)", summarize)
        if summarize is not None and keep_last is not None:
            raise UserError(
                "Session takes keep_last= or summarize=, not both: the turns a summarising "
                "session keeps are SummarizeOlder(model, keep_last=n)."
            )
        self.id = id
        self.keep_last = keep_last
        self.summarize = summarize
        self._summary: tuple[int, str] | None = None
        self.path = None if path is None else Path(path)
        self._turns: list[list[Message]] = []
        self.results: list[Any] = []
        """The results of this object's runs that ended ok, in order (in memory only):
        what `agentnb.conversation_cost` measures."""
        self._busy = threading.Lock()
        if self.path is not None:
            with closing(self._connect()) as conn:
                conn.executescript(_SCHEMA)

    def __repr__(self) -> str:
        where = "memory" if self.path is None else str(self.path)
        return f"Session(id={self.id!r}, {where}, {len(self.turns())} turns)"

    def turns(self) -> list[list[Message]]:
        """Every stored turn (the input and new items of one run), oldest first."""
        if self.path is None:
            return [list(t) for t in self._turns]
        with closing(self._connect()) as conn:
            rows = conn.execute(
                "SELECT turn, message FROM agentnb_session_messages WHERE session_id=? "
                "ORDER BY turn, position",
                (self.id,),
            ).fetchall()
        turns: dict[int, list[Message]] = {}
        for turn, text in rows:
            try:
                message = Message.from_json(text)
            except UserError as exc:  # the file was changed outside agentnb: nothing runs on it
                raise UserError(
                    f"Session {self.id!r} in {str(self.path)!r}: a stored message of turn {turn} "
                    f"cannot be read ({exc}). The file was changed outside agentnb; restore it "
                    "from a copy, or start a new session id."
                ) from None
            turns.setdefault(turn, []).append(message)
        return list(turns.values())

    def history(self) -> list[Message]:
        """Every stored message, oldest first."""
        return [m for turn in self.turns() for m in turn]

    def sent(self) -> list[Message]:
        """The messages a run puts before its input: the last ``keep_last`` turns, or all; on
        a summarising session, the stored summary and the turns after it (`fold` says what a
        run summarises first)."""
        turns = self.turns()
        if self.keep_last is not None:
            turns = turns[-self.keep_last :]
        summary = self.summary() if self.summarize is not None else None
        if summary is None:
            return [m for turn in turns for m in turn]
        covered, text = summary
        return [summary_message(text)] + [m for turn in turns[covered:] for m in turn]

    def summary(self) -> tuple[int, str] | None:
        """The stored summary of a summarising session: (how many turns it covers, its text)."""
        if self.path is None:
            return self._summary
        with closing(self._connect()) as conn:
            row = conn.execute(
                "SELECT turns, summary FROM agentnb_session_summaries WHERE session_id=?",
                (self.id,),
            ).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def fold(self) -> Fold | None:
        """What a run must summarise before it starts: the turns that fell out of the last
        ``keep_last`` since the stored summary (None when there are none, or no strategy)."""
        strategy = self.summarize
        if strategy is None:
            return None
        turns = self.turns()
        covered, summary = self.summary() or (0, None)
        end = len(turns) - strategy.keep_last
        if end <= covered:
            return None
        kept = [m for turn in turns[end:] for m in turn]
        return Fold(strategy, summary, turns[covered:end], end, kept)

    def append(self, messages: list[Message], summary: tuple[int, str] | None = None) -> None:
        """Store ``messages`` as one new turn, and a new ``summary`` (turns covered, text) with
        it (one transaction in SQLite)."""
        if not all(isinstance(m, Message) for m in messages):
            raise UserError("Session.append takes a list of agentnb.Message")
        if self.path is None:
            self._turns.append(list(messages))
            self._summary = summary or self._summary
            return
        conn = self._connect()
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                (last,) = conn.execute(
                    "SELECT COALESCE(MAX(turn), -1) FROM agentnb_session_messages WHERE session_id=?",
                    (self.id,),
                ).fetchone()
                conn.executemany(
                    "INSERT INTO agentnb_session_messages VALUES (?, ?, ?, ?)",
                    [
                        (self.id, last + 1, i, json.dumps(m.to_json()))
                        for i, m in enumerate(messages)
                    ],
                )
                if summary is not None:
                    conn.execute(
                        "INSERT OR REPLACE INTO agentnb_session_summaries VALUES (?, ?, ?)",
                        (self.id, *summary),
                    )
        except sqlite3.OperationalError as exc:
            raise self._failed(exc) from None
        finally:
            conn.close()

    def clear(self) -> None:
        """Forget every turn of this session."""
        self._turns.clear()
        self._summary = None
        if self.path is not None:
            with closing(self._connect()) as conn, conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("DELETE FROM agentnb_session_messages WHERE session_id=?", (self.id,))
                conn.execute("DELETE FROM agentnb_session_summaries WHERE session_id=?", (self.id,))

    def claim(self) -> None:
        """Mark the session as in use by a run; a `UserError` if another run holds it."""
        if not self._busy.acquire(blocking=False):
            raise self._refused("another run in this process")
        if self.path is None:
            return
        try:
            self._claim_row()
        except BaseException:
            self._busy.release()
            raise

    def release(self) -> None:
        """End the claim of `claim`."""
        try:
            if self.path is not None:
                conn = self._connect()
                try:
                    with conn:
                        conn.execute(
                            "DELETE FROM agentnb_session_claims WHERE session_id=? AND pid=?",
                            (self.id, os.getpid()),
                        )
                finally:
                    conn.close()
        finally:
            self._busy.release()

    def end_run(
        self, result: Any, history: int, summary: tuple[int, str] | None = None
    ) -> SessionNotSaved | None:
        """After a run that `claim` let start: store its turn when it ended ok (the input
        after the first ``history`` messages, then its new items) and the new ``summary`` the
        run made (`fold`), and end the claim.

        Returns what went wrong rather than raising (the run has ended and must not raise)."""
        error = None
        if result.ok:
            try:
                self.append(list(result.inputs[history:]) + result.new_items, summary)
            except Exception as exc:
                error = self._not_saved(
                    f"its turn was not stored ({exc}); the session's history is as it was "
                    "before the run, and the result keeps its output and trace"
                )
            else:
                self.results.append(result)
        try:
            self.release()
        except Exception as exc:
            error = error or self._not_saved(
                f"its claim on the session could not be ended ({exc}); the session stays "
                f"claimed by this process ({os.getpid()}) until it exits"
            )
        return error

    def _not_saved(self, what: str) -> SessionNotSaved:
        return SessionNotSaved(
            f"The run ended ok on session {self.id!r}, but {what}.",
            session=self.id,
            path=None if self.path is None else str(self.path),
        )

    def _claim_row(self) -> None:
        conn = self._connect()
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                row = conn.execute(
                    "SELECT pid FROM agentnb_session_claims WHERE session_id=?", (self.id,)
                ).fetchone()
                if row is not None and _alive(row[0]):
                    raise self._refused(f"the run of process {row[0]}")
                conn.execute(
                    "INSERT OR REPLACE INTO agentnb_session_claims VALUES (?, ?)",
                    (self.id, os.getpid()),
                )
        except sqlite3.OperationalError as exc:
            raise self._failed(exc) from None
        finally:
            conn.close()

    def _refused(self, holder: str) -> UserError:
        return UserError(
            f"Session {self.id!r} is in use by {holder}; runs on one session are refused, "
            "never interleaved: wait for that run to end, or use another session id."
        )

    def _connect(self) -> sqlite3.Connection:
        path = self.path
        assert path is not None
        if path.exists() and not path.is_file():
            raise UserError(
                f"Session file {path} is not a regular file; pass the path of a SQLite file."
            )
        try:
            conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
        except sqlite3.DatabaseError as exc:
            raise self._failed(exc) from None
        try:
            conn.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise self._failed(exc) from None
        return conn

    def _failed(self, exc: sqlite3.Error) -> UserError:
        if "locked" in str(exc) or "busy" in str(exc):
            return UserError(
                f"Session file {self.path} is locked by another program ({exc}); close it or "
                "retry when it is free."
            )
        if "full" in str(exc):
            return UserError(
                f"Session file {self.path} is full ({exc}); free space on its disk or pass "
                "another path."
            )
        if "readonly" in str(exc) or "read-only" in str(exc):
            return UserError(
                f"Session file {self.path} cannot be written ({exc}); make it writable or pass "
                "another path."
            )
        return UserError(
            f"Session file {self.path} is not a usable SQLite file ({exc}); move it aside or "
            "pass another path."
        )


def _alive(pid: int) -> bool:
    """Whether the process ``pid`` still runs (a claim of a dead process is stale)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
