"""The store's writer: one thread that inserts what runs send it and commits in batches.

Runs end on the driver (or come back from an executor's workers); the driver hands each one to
`Writer.put` and goes on. The thread inserts a run with its calls and spans in one go, so a run
is stored whole or not at all, and commits whenever its queue runs dry and at least every
`FLUSH_S`: a process killed with SIGKILL loses at most the runs in flight, those queued for
less than a second included. `StoreResponses` is the response cache's view of the store.
"""

from __future__ import annotations

import json
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
_INSERT_CALL = f"INSERT INTO calls VALUES ({', '.join('?' * (len(CALL_FIELDS) + 2))})"
_INSERT_SPAN = f"INSERT INTO spans VALUES ({', '.join('?' * (len(SPAN_FIELDS) + 3))})"
_INSERT_RESPONSE = "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
_CALL_SET = frozenset(CALL_FIELDS) | {"prefix"}


class Writer:
    """Inserts runs and cached responses on its own thread (see the module docstring).

    The driver only appends to a deque (thread-safe, no lock, no wake-up): a thread woken for
    every run would take the interpreter lock from the run loop each time. The thread takes
    the whole deque every `FLUSH_S` and commits it in one transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.error: UserError | None = None
        self._conn = connect(path)  # here, so a store that cannot be written fails at once
        self._items: deque[tuple[Any, ...]] = deque()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="agentnb-store", daemon=True)
        self._thread.start()

    def put_run(self, record: dict[str, Any], rows: list[dict[str, Any]], spans: list[Any]) -> None:
        """Hand over one ended run: its ``runs`` row, its call rows, its span rows."""
        self._raise()
        self._items.append(("run", record, rows, spans))

    def put_response(self, key: str, entry: dict[str, Any]) -> None:
        self._raise()
        self._items.append(("response", key, entry))

    def close(self) -> None:
        """Write what was handed over, commit, stop the thread; raise what went wrong."""
        self._stop.set()
        self._thread.join()
        self._raise()

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error

    def _loop(self) -> None:
        conn = self._conn
        try:
            while True:
                stopping = self._stop.wait(FLUSH_S)
                items = self._items
                if items:
                    while items:
                        _write(conn, items.popleft())
                    conn.commit()
                if stopping:
                    return
        except sqlite3.Error as exc:
            self.error = fault(self.path, exc)
        finally:
            conn.close()


def _write(conn: sqlite3.Connection, item: tuple[Any, ...]) -> None:
    if item[0] == "response":
        _, key, e = item
        conn.execute(
            _INSERT_RESPONSE,
            (
                key,
                e["model"],
                e["trial"],
                e["path"],
                e["turn"],
                e["latency_s"],
                json.dumps(e["response"], ensure_ascii=False),
                time.time(),
            ),
        )
        return
    _, record, rows, spans = item
    run = conn.execute(_INSERT_RUN, [record[f] for f in RUN_FIELDS]).lastrowid
    if rows:
        conn.executemany(_INSERT_CALL, [_call(run, row) for row in rows])
    if spans:
        conn.executemany(_INSERT_SPAN, [(run, *span[:-1], _json(span[-1])) for span in spans])


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


class StoreResponses:
    """The response cache of an experiment run in this process: the store, plus the answers
    handed to the writer and not yet committed (so a run right after sees them too)."""

    def __init__(self, conn: sqlite3.Connection, writer: Writer) -> None:
        self._conn = conn
        self._writer = writer
        self._recent: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self._recent.get(key)
        if entry is not None:
            return entry
        row = self._conn.execute(
            "SELECT latency_s, response FROM responses WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return {"latency_s": row[0], "response": json.loads(row[1])}

    def put(self, key: str, entry: dict[str, Any]) -> None:
        if key not in self._recent:
            self._recent[key] = entry
            self._writer.put_response(key, entry)

    def of_trial(self, trial: int) -> dict[str, dict[str, Any]]:
        """Every stored answer of one trial: what an executor's job may need, sent with it."""
        found = {
            key: {"latency_s": latency, "response": json.loads(text)}
            for key, latency, text in self._conn.execute(
                "SELECT key, latency_s, response FROM responses WHERE trial = ?", (trial,)
            )
        }
        found.update((k, e) for k, e in self._recent.items() if e.get("trial") == trial)
        return found


class JobResponses:
    """The response cache on an executor's worker: the answers sent with the job, and the
    new ones, sent back with its outcome for the driver to store."""

    def __init__(self, known: dict[str, dict[str, Any]]) -> None:
        self.known = known
        self.new: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        return self.known.get(key) or self.new.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self.new.setdefault(key, entry)
