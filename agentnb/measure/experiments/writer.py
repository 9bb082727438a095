"""The store's writer: one thread that inserts what runs send it and commits in batches.

Runs end on the driver (or come back from an executor's workers); the driver hands each one to
`Writer.put_run` and goes on. The thread inserts a run with its calls, its spans and the cached
answers it made in one go (a savepoint), so a run is stored whole or not at all, and commits at
least every `FLUSH_S`: a process killed with SIGKILL loses at most the runs in flight, those
queued for less than a second included. A value SQLite cannot hold (an integer beyond 64 bits,
an object JSON cannot write) is stored as its text; a run that still cannot be stored is stored
as a failed run saying why (``refused``), so it runs again on resume. Any other failure (a full
disk, a lock held too long, a bug) stops the writer: what it committed stays, and the error
(`StoreFailed`) says how many runs were made, stored and lost. `StoreResponses` is the response
cache's view of the store.
"""

from __future__ import annotations

import hashlib
import json
import operator
import sqlite3
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from ...errors import UserError
from .store import CALL_FIELDS, RUN_FIELDS, SPAN_FIELDS, connect, fault

FLUSH_S = 0.25
"""How often the thread takes what the driver handed it and commits: the longest a finished
run waits to be stored (plus the time to write it)."""

_INSERT_RUN = (
    f"INSERT INTO runs ({', '.join(RUN_FIELDS)}) VALUES ({', '.join('?' * len(RUN_FIELDS))})"
)
_INSERT_RUN_WITH_ID = (
    f"INSERT INTO runs (id, {', '.join(RUN_FIELDS)}) "
    f"VALUES ({', '.join('?' * (len(RUN_FIELDS) + 1))})"
)
_INSERT_CALL = f"INSERT INTO calls VALUES ({', '.join('?' * (len(CALL_FIELDS) + 2))})"
_INSERT_SPAN = f"INSERT INTO spans VALUES ({', '.join('?' * (len(SPAN_FIELDS) + 3))})"
_RESPONSE_FIELDS = (
    "key",
    "model",
    "trial",
    "path",
    "turn",
    "latency_s",
    "response",
    "created",
    "checksum",
    "wall_s",
    "critical_s",
)
_INSERT_RESPONSE = (
    f"INSERT OR {{}} INTO responses ({', '.join(_RESPONSE_FIELDS)}) "
    f"VALUES ({', '.join('?' * len(_RESPONSE_FIELDS))})"
)
_CALL_SET = frozenset(CALL_FIELDS) | {"prefix"}
_RUN_VALUES = operator.itemgetter(*RUN_FIELDS)
"""A ``runs`` row's values in the table's order."""
_UNWRITABLE = (OverflowError, TypeError, ValueError, RecursionError, sqlite3.InterfaceError)
"""What a value SQLite or JSON cannot take raises (a nesting too deep included): that run is
stored as text, or refused; anything else stops the writer."""
_INT64 = (-(2**63), 2**63 - 1)


class StoreFailed(UserError):
    """The store stopped taking runs (a full disk, a lock, a fault): what was committed is
    kept; ``made``, ``stored`` and ``lost`` count the runs of this call, ``unstored`` holds
    the ``runs`` rows of those it could not store (their parameters, trial, item, outcome,
    score and totals) and ``experiment`` the `Experiment`, to read what was stored."""

    def __init__(
        self,
        message: str,
        made: int = 0,
        stored: int = 0,
        unstored: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.cause = message
        self.made, self.stored, self.lost = made, stored, made - stored
        self.unstored: list[dict[str, Any]] = unstored or []
        self.experiment: Any = None

    def __str__(self) -> str:
        return (
            f"{self.cause} Runs made: {self.made}, stored: {self.stored}, not stored: "
            f"{self.lost} (they run again when the experiment is resumed)."
        )


class Writer:
    """Inserts runs and their cached responses on its own thread (see the module docstring).

    The driver only appends to a deque (thread-safe, no lock, no wake-up): a thread woken for
    every run would take the interpreter lock from the run loop each time. The thread takes
    the whole deque every `FLUSH_S` and commits it in one transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.error: UserError | None = None
        self.made = 0
        """Runs handed over."""
        self.stored = 0
        """Runs committed (the refused ones included, as failed runs saying why)."""
        self.refused = 0
        """Runs stored as failed because the store could not hold what they returned."""
        self._conn = connect(path)  # here, so a store that cannot be written fails at once
        self._conn.isolation_level = None  # transactions and savepoints said explicitly
        self._items: deque[tuple[Any, ...]] = deque()
        self._failed: list[dict[str, Any]] = []
        """The runs of a batch whose commit failed (the writer stopped)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="agentnb-store", daemon=True)
        self._thread.start()

    def put_run(
        self,
        record: dict[str, Any],
        rows: list[dict[str, Any]],
        spans: list[Any],
        responses: list[tuple[str, dict[str, Any]]] = (),  # type: ignore[assignment]
    ) -> None:
        """Hand over one ended run: its ``runs`` row, its call rows, its span rows and the
        answers it added to the response cache (stored with it, or not at all). Raises
        `StoreFailed` once the writer has stopped (the run is counted as made, not stored)."""
        self.made += 1
        self._items.append((record, rows, spans, responses))
        self._raise()

    def close(self) -> None:
        """Write what was handed over, commit, stop the thread; raise what went wrong."""
        self._stop.set()
        self._thread.join()
        self._raise()

    def _raise(self) -> None:
        if self.error is not None:
            unstored = [*self._failed, *(item[0] for item in self._items)]
            raise StoreFailed(str(self.error), self.made, self.stored, unstored)

    def _loop(self) -> None:
        conn = self._conn
        try:
            while True:
                stopping = self._stop.wait(FLUSH_S)
                if self._items:
                    self._write_batch(conn)
                if stopping:
                    return
        except BaseException as exc:  # noqa: BLE001 (any failure stops the writer, and says so)
            self.error = (
                fault(self.path, exc)
                if isinstance(exc, sqlite3.Error)
                else UserError(
                    f"The store {str(self.path)!r} stopped writing: {type(exc).__name__}: "
                    f"{str(exc)[:300]}."
                )
            )
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
        finally:
            conn.close()

    def _write_batch(self, conn: sqlite3.Connection) -> None:
        """Write what the driver handed over, in one transaction. When it fails (a full disk:
        SQLite then rolls the whole transaction back), the batch is written again one run per
        transaction up to the run that fails: only what the store could not take is lost, and
        counted (``_failed``, beside what stays queued)."""
        items = self._items
        batch = [items.popleft() for _ in range(len(items))]
        try:
            self._commit(conn, batch)
        except Exception:
            if len(batch) == 1:
                self._failed = [batch[0][0]]
                raise
            for n, item in enumerate(batch):
                try:
                    self._commit(conn, [item])
                except Exception:
                    self._failed = [i[0] for i in batch[n:]]
                    raise

    def _commit(self, conn: sqlite3.Connection, batch: list[tuple[Any, ...]]) -> None:
        conn.execute("BEGIN IMMEDIATE")  # the write lock first: the run ids are taken here
        try:
            try:
                _write_at_once(conn, batch)
                refused = 0
            except _UNWRITABLE:  # a value to store as text: run by run, each in a savepoint
                conn.execute("ROLLBACK")
                conn.execute("BEGIN IMMEDIATE")
                refused = sum(_write_whole(conn, item) for item in batch)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.stored += len(batch)
        self.refused += refused


def _write_at_once(conn: sqlite3.Connection, batch: list[tuple[Any, ...]]) -> None:
    """Insert a batch of runs as they are (the common case: values SQLite holds as given),
    each table's rows as one flat list of values. The runs' ids are numbered here, under the
    write lock."""
    (first,) = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM runs").fetchone()
    runs: list[Any] = []
    calls: list[Any] = []
    spans: list[Any] = []
    answers: dict[str, list[tuple[Any, ...]]] = {"IGNORE": [], "REPLACE": []}
    for n, (record, rows, span_rows, responses) in enumerate(batch):
        run = first + n
        runs.append(run)
        runs.extend(_RUN_VALUES(record))
        for row in rows:
            calls.extend(_call(run, row))
        for span in span_rows:
            spans.extend((run, *span[:-1], _json(span[-1])))
        for key, entry in responses:
            how = "REPLACE" if entry.get("replace") else "IGNORE"
            answers[how].append(_response_row(key, entry, record))
    _insert(conn, _INSERT_RUN_WITH_ID, runs)
    _insert(conn, _INSERT_CALL, calls)
    _insert(conn, _INSERT_SPAN, spans)
    for how, rows in answers.items():  # (a REPLACE after an IGNORE of one key ends the same)
        conn.executemany(_INSERT_RESPONSE.format(how), rows)


_MAX_VALUES = 999
"""The most values one statement may bind on any SQLite (the limit before SQLite 3.32)."""


def _insert(conn: sqlite3.Connection, sql: str, values: list[Any]) -> None:
    """Insert rows given as one flat list of values (as many per row as ``sql`` has), as many
    rows per statement as SQLite binds at once. Not ``executemany``: SQLite runs a statement
    with the interpreter lock released, and the writer has to take the lock back after each
    one, waiting for a run loop that keeps it busy; one statement per row made the writer
    wait once per row."""
    head, _, row = sql.partition("VALUES ")
    width = row.count("?")
    step = _MAX_VALUES // width * width
    for start in range(0, len(values), step):
        part = values[start : start + step]
        conn.execute(head + "VALUES " + ",".join([row] * (len(part) // width)), part)


def _write_whole(conn: sqlite3.Connection, item: tuple[Any, ...]) -> int:
    """Insert one run whole; 1 when it had to be stored as refused (a failed run saying
    why). Any other failure is raised, and its transaction is rolled back."""
    conn.execute("SAVEPOINT run")
    refused = _write_or_refuse(conn, item)
    conn.execute("RELEASE run")
    return refused


def _write_or_refuse(conn: sqlite3.Connection, item: tuple[Any, ...]) -> int:
    try:
        _write(conn, item, plain=False)
    except _UNWRITABLE:
        conn.execute("ROLLBACK TO run")  # a value SQLite or JSON cannot take: as text
        try:
            _write(conn, item, plain=True)
        except _UNWRITABLE as exc:
            conn.execute("ROLLBACK TO run")
            record = dict(item[0])
            record.update({f: None for f in ("score", "score_type", "score_error")})
            record.update(
                ok=0,
                error=f"the store could not hold this run ({type(exc).__name__}: {exc})"[:500],
            )
            conn.execute(_INSERT_RUN, [_storable(record.get(f)) for f in RUN_FIELDS])
            return 1
    return 0


def _write(conn: sqlite3.Connection, item: tuple[Any, ...], *, plain: bool) -> None:
    record, rows, spans, responses = item
    fix = _storable if plain else _same
    run = conn.execute(_INSERT_RUN, [fix(record[f]) for f in RUN_FIELDS]).lastrowid
    if rows:
        conn.executemany(_INSERT_CALL, [[fix(v) for v in _call(run, row)] for row in rows])
    if spans:
        conn.executemany(
            _INSERT_SPAN, [[fix(v) for v in (run, *span[:-1], _json(span[-1]))] for span in spans]
        )
    for key, e in responses:
        conn.execute(
            _INSERT_RESPONSE.format("REPLACE" if e.get("replace") else "IGNORE"),
            [fix(v) for v in _response_row(key, e, record)],
        )


def _response_row(key: str, e: dict[str, Any], record: dict[str, Any]) -> tuple[Any, ...]:
    text = response_text(e["response"])
    return (
        key,
        e["model"],
        e["trial"],
        e["path"],
        e["turn"],
        e["latency_s"],
        text,
        time.time(),
        checksum(text),
        record.get("wall_s"),
        record.get("critical_s"),
    )


def _same(value: Any) -> Any:
    return value


def _storable(value: Any) -> Any:
    """A value as SQLite can hold it without loss: an integer beyond 64 bits as its digits,
    anything but a number, text or bytes as JSON."""
    if value is None or isinstance(value, (str, float, bytes)):
        return value
    if isinstance(value, int):
        return value if _INT64[0] <= value <= _INT64[1] else str(value)
    return _ENCODER.encode(value)


def _call(run: Any, row: dict[str, Any]) -> tuple[Any, ...]:
    extra = {k: v for k, v in row.items() if k not in _CALL_SET}
    return (
        run,
        *[row.get(c) for c in CALL_FIELDS],
        _json(extra) if extra else None,
    )


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=repr)


def _json(value: Any) -> str | None:
    """Span attributes and a row's extra columns as JSON (anything else by its ``repr``)."""
    return _ENCODER.encode(value) if value else None


def response_text(response: dict[str, Any]) -> str:
    """A cached answer as stored (an event value JSON cannot write: by its ``repr``)."""
    return _ENCODER.encode(response)


def checksum(text: str) -> str:
    """What a stored answer is checked against when read: a damaged row is not served."""
    return hashlib.sha256(text.encode()).hexdigest()


class StoreResponses:
    """The response cache of an experiment run in this process: the store, plus the answers
    of runs handed to the writer and not yet committed (so a run right after sees them too).

    The answers a run makes are held apart (`take`) until the run ends and are handed to the
    writer with it: a run cut short stores none, so its rerun makes the calls an unbroken run
    makes. A stored row whose checksum does not match is not served (`get` returns a
    ``refused`` entry, and the fresh answer replaces the row)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self._path = path
        self._recent: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self._recent.get(key) or self._pending.get(key)
        if entry is not None:
            return entry
        try:
            row = self._conn.execute(
                "SELECT latency_s, response, checksum, wall_s, critical_s FROM responses "
                "WHERE key = ?",
                (key,),
            ).fetchone()
        except sqlite3.Error as exc:
            raise fault(self._path, exc) from None
        return None if row is None else stored_entry(*row)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        if key not in self._recent:
            self._pending.setdefault(key, entry)

    def take(self) -> list[tuple[str, dict[str, Any]]]:
        """The answers of the run that just ended, to be stored with it."""
        made, self._pending = self._pending, {}
        self._recent.update(made)
        return list(made.items())

    def drop(self) -> None:
        """Forget the answers of a run that was cut short."""
        self._pending = {}

    def of_trial(self, trial: int) -> dict[str, dict[str, Any]]:
        """Every stored answer of one trial: what an executor's job may need, sent with it."""
        try:
            found = {
                key: stored_entry(*rest)
                for key, *rest in self._conn.execute(
                    "SELECT key, latency_s, response, checksum, wall_s, critical_s "
                    "FROM responses WHERE trial = ?",
                    (trial,),
                )
            }
        except sqlite3.Error as exc:
            raise fault(self._path, exc) from None
        found.update((k, e) for k, e in self._recent.items() if e.get("trial") == trial)
        return found


def stored_entry(
    latency: Any, text: Any, digest: Any, wall: Any = None, critical: Any = None
) -> dict[str, Any]:
    """A ``responses`` row as the cache reads it; ``{"refused": reason}`` for one that is
    damaged (no checksum, another checksum, not JSON): it is asked for again, not served."""
    if not isinstance(text, str) or digest != checksum(text):
        return {"refused": "its checksum does not match (the row was changed or damaged)"}
    try:
        response = json.loads(text)
    except ValueError:
        return {"refused": "it is not JSON"}
    return {"latency_s": latency, "response": response, "wall_s": wall, "critical_s": critical}


class JobResponses:
    """The response cache on an executor's worker: the answers sent with the job, and the
    new ones, sent back with its outcome for the driver to store."""

    def __init__(self, known: dict[str, dict[str, Any]]) -> None:
        self.known = known
        self.new: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        return self.new.get(key) or self.known.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self.new.setdefault(key, entry)
