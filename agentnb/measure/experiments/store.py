"""The experiment store: one SQLite file (``agentnb.db``) holding experiments, runs, calls, spans
and cached responses, readable with SQL or as pandas frames.

The schema is `SCHEMA`, at version `SCHEMA_VERSION` (the ``meta`` table says which version
wrote a file; docs/experiments.md describes every table). SQLite rather than a server: one file
that needs no setup, WAL mode so readers never block the writer, and a commit well under a
millisecond. Rows are only ever inserted: a failed run adds a row beside the earlier ones, so
nothing stored is lost or overwritten.

Faults name the file and what to do (a `UserError`): a file that is not a database or is
damaged, a store of an unknown schema version, a store locked by another process past
`BUSY_TIMEOUT_S`, a read-only file, a path that is not a regular file (a FIFO, a device: refused
before it is opened, since opening one can block forever). A store written at schema version 1
is upgraded in place when it is opened for writing (`upgrade`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import checks
from ...errors import UserError

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 2
"""Written to ``meta.schema_version``; a store of another version is refused, not guessed at."""

DEFAULT_STORE = "agentnb.db"

BUSY_TIMEOUT_S = 10.0
"""How long a write waits for another process's lock before the store is reported locked."""

CALL_FIELDS = (
    "run_id", "span_id", "parent_id", "agent", "model", "path", "depth", "turn",
    "started", "ended", "latency_s", "wait_s", "ttft_s",
    "chars_in", "chars_in_system", "chars_in_tools", "chars_in_user", "chars_in_assistant",
    "chars_in_tool_args", "chars_in_tool_results", "chars_in_framing", "chars_out",
    "tokens_in", "tokens_out", "tokens_method", "provider_tokens_in", "provider_tokens_out",
    "tokens_in_cached", "tokens_in_cache_write", "tokens_out_reasoning", "tokens_in_overhead",
    "tool_calls", "stop_reason", "retries", "status", "cached",
)  # fmt: skip
"""The call columns the ``calls`` table holds as columns (the trace's, at schema version 1).
Any other column of a call row (a pattern's ``branch``, a column added later) is kept in
``extra`` as JSON; ``prefix`` (fingerprints for cache estimates) is not stored."""

SPAN_FIELDS = (
    "span_id", "parent_id", "kind", "name", "agent", "path", "depth", "started", "ended", "status",
)  # fmt: skip

RUN_TOTALS = (
    "calls", "cached_calls", "chars_in", "chars_out", "tokens_in", "tokens_out", "cost",
    "rounds", "judge_calls", "judge_chars_in", "judge_chars_out", "judge_tokens_in",
    "judge_tokens_out",
)  # fmt: skip
"""Per-run totals of the ``runs`` table. ``cost`` is money paid (cached calls count zero;
NaN when a model has no price); ``rounds`` the drafts of a `verify_loop` (NULL for other
runs); ``judge_*`` are the score function's own model calls."""

RUN_FIELDS = (
    "experiment_id", "config", "config_key", "params", "trial", "item", "item_key", "attempt",
    "position", "ok", "error", "score", "score_type", "score_error", "wall_s", "critical_s",
    "timing", *RUN_TOTALS, "tool_errors", "subagent_errors", "started", "ended",
)  # fmt: skip
"""The ``runs`` table's columns. A run is identified by ``params`` (its configuration as
canonical JSON), ``trial`` and ``item_key`` (its dataset item's content, `item_keys`), never by
the indices ``config`` and ``item``, which say where it stood when it ran."""

_V2_RUN_COLUMNS = {
    "item_key": "TEXT", "position": "INTEGER", "timing": "TEXT", "tool_errors": "INTEGER",
    "subagent_errors": "INTEGER",
}  # fmt: skip
_V2_RESPONSE_COLUMNS = {"checksum": "TEXT", "wall_s": "REAL", "critical_s": "REAL"}

_REVISIONS = """CREATE TABLE IF NOT EXISTS revisions (
    experiment_id INTEGER NOT NULL REFERENCES experiments (id),
    revision INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    fn TEXT,
    grid TEXT NOT NULL,
    dataset TEXT,
    params TEXT NOT NULL,
    created REAL NOT NULL,
    UNIQUE (experiment_id, revision)
);"""
"""A `resume="continue"` under a changed fn, grid or dataset: each definition the experiment
was run under, after the first (which is its ``experiments`` row)."""

_CALL_TABLE = ",\n    ".join(f"{c}" for c in CALL_FIELDS[1:])

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS experiments (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    fn TEXT,
    grid TEXT NOT NULL,
    dataset TEXT,
    params TEXT NOT NULL,
    created REAL NOT NULL,
    UNIQUE (name, version)
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments (id),
    config INTEGER NOT NULL,
    config_key TEXT NOT NULL,
    params TEXT NOT NULL,
    trial INTEGER NOT NULL,
    item INTEGER,
    item_key TEXT,
    attempt INTEGER NOT NULL,
    position INTEGER,
    ok INTEGER NOT NULL,
    error TEXT,
    score REAL,
    score_type TEXT,
    score_error TEXT,
    wall_s REAL,
    critical_s REAL,
    timing TEXT,
    {", ".join(f"{c} {'REAL' if c == 'cost' else 'INTEGER'}" for c in RUN_TOTALS)},
    tool_errors INTEGER,
    subagent_errors INTEGER,
    started REAL,
    ended REAL
);
CREATE INDEX IF NOT EXISTS runs_of_experiment ON runs (experiment_id, config_key, trial, item);
{_REVISIONS}
CREATE TABLE IF NOT EXISTS calls (
    run INTEGER NOT NULL REFERENCES runs (id),
    run_id TEXT,
    {_CALL_TABLE},
    extra TEXT
);
CREATE INDEX IF NOT EXISTS calls_of_run ON calls (run);
CREATE TABLE IF NOT EXISTS spans (
    run INTEGER NOT NULL REFERENCES runs (id),
    run_id TEXT,
    {", ".join(SPAN_FIELDS)},
    attrs TEXT
);
CREATE INDEX IF NOT EXISTS spans_of_run ON spans (run);
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT,
    trial INTEGER,
    path TEXT,
    turn INTEGER,
    latency_s REAL,
    response TEXT NOT NULL,
    created REAL NOT NULL,
    checksum TEXT,
    wall_s REAL,
    critical_s REAL
);
CREATE INDEX IF NOT EXISTS responses_of_trial ON responses (trial);
"""
"""The store's tables (schema version 2); docs/experiments.md says what each column holds."""


def store_path(store: str | os.PathLike[str] | None, caller: str) -> Path:
    """The store's file: ``store=`` or ``agentnb.db`` in the working folder; a folder, a FIFO
    or a device is refused here, before anything opens it (opening a FIFO blocks)."""
    if store is None:
        return Path(DEFAULT_STORE)
    if not isinstance(store, (str, os.PathLike)) or "\x00" in os.fspath(store):
        raise checks.fail(f"{caller}(store=...)", "a file path (str or Path) or None", store)
    path = Path(store)
    if path.is_dir():
        raise UserError(f"store={str(path)!r} is a folder; give the database file's path")
    if path.exists() and not path.is_file():
        raise UserError(
            f"store={str(path)!r} is not a regular file (a FIFO, a socket or a device); give "
            "the path of a database file"
        )
    return path


def fault(path: Path, exc: BaseException) -> UserError:
    """A SQLite error (or a value the store could not read) as what the user should do about
    it, naming the file."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return UserError(
            f"The store {str(path)!r} is locked by another process (another experiment writing "
            "to it?). Wait for it to finish, or pass store= another file."
        )
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return UserError(
            f"The store {str(path)!r} cannot be written (read-only file or folder). Make it "
            "writable, or pass store= a file in a writable folder; agentnb.open_experiment can "
            "still read it."
        )
    if "full" in text:
        return UserError(
            f"The store {str(path)!r} is full (the disk, or a size limit). Free some space and "
            "run the experiment again (what was committed is kept), or pass store= a file on "
            "another disk."
        )
    if (
        "not a database" in text
        or "malformed" in text
        or "corrupt" in text
        or "no such" in text
        or "no column" in text
        or isinstance(exc, (ValueError, KeyError, TypeError))
    ):
        return UserError(
            f"The store {str(path)!r} is damaged or is not a database agentnb can read "
            f"({type(exc).__name__}: {str(exc)[:200]}). Move it aside and pass store= a new "
            "file (agentnb cannot read what it holds)."
        )
    return UserError(f"The store {str(path)!r} failed: {exc}. Pass store= another file.")


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection to the store, created, checked (schema version) and upgraded on the way."""
    path = store_path(path, "connect")  # a FIFO given here too blocks nothing
    try:
        if readonly:
            if not path.exists():
                raise UserError(
                    f"There is no store at {str(path)!r}; run agentnb.experiment(...) first "
                    "or pass store= the file it wrote."
                )
            conn = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro",
                uri=True,
                timeout=BUSY_TIMEOUT_S,
                check_same_thread=False,
            )
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        try:
            _check(conn, path, readonly)
        except BaseException:
            conn.close()
            raise
    except sqlite3.Error as exc:
        raise fault(path, exc) from None
    except OSError as exc:  # the folder cannot be made
        raise UserError(
            f"The store {str(path)!r} cannot be created ({exc.strerror}); pass store= a file "
            "in a writable folder"
        ) from None
    return conn


def upgrade(path: str | os.PathLike[str]) -> None:
    """Upgrade a store written by an older agentnb (schema version 1) to this one's, in place
    (what `agentnb.experiment` does when it opens one); a store already current is left as is."""
    connect(store_path(path, "upgrade")).close()


def _check(conn: sqlite3.Connection, path: Path, readonly: bool) -> None:
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if tables and "meta" not in tables:
        raise UserError(
            f"{str(path)!r} is a SQLite database but not an agentnb store (no meta table); "
            "pass store= another file."
        )
    version = None
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = row[0] if row else None
        if version == "1" and readonly:
            raise UserError(
                f"The store {str(path)!r} was written by an older agentnb (schema version 1); "
                "upgrade it once with agentnb.measure.experiments.store.upgrade(path) (or by "
                "running an experiment in it), then read it."
            )
        if version is None:
            raise UserError(
                f"The store {str(path)!r} holds no schema version (its meta table was changed); "
                "move it aside and pass store= a new file."
            )
        if version not in ("1", str(SCHEMA_VERSION)):
            raise UserError(
                f"The store {str(path)!r} has schema version {version}, this agentnb reads "
                f"version {SCHEMA_VERSION}. Use the agentnb that wrote it, or pass store= a "
                "new file."
            )
    if readonly:
        _check_tables(conn, path)
        return
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # WAL: a commit survives a killed process
    if "meta" not in tables:
        with conn:
            conn.executescript(SCHEMA)
            conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)", (str(time.time()),))
    elif version == "1":
        _upgrade_from_1(conn)
    _check_tables(conn, path)


@functools.cache
def _schema_columns() -> dict[str, frozenset[str]]:
    """Each table of `SCHEMA` and its columns."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(SCHEMA)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: frozenset(r[1] for r in conn.execute(f"PRAGMA table_info({t})")) for t in tables}
    finally:
        conn.close()


def _check_tables(conn: sqlite3.Connection, path: Path) -> None:
    """A store missing a table or a column is refused when opened, before any run is made
    (a run made and then not storable would be paid for and lost)."""
    for table, columns in _schema_columns().items():
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        missing = sorted(columns - have)
        if missing:
            what = f"the table {table!r}" if not have else f"{table}.{missing[0]}"
            raise UserError(
                f"The store {str(path)!r} is damaged: it has no {what}. Move it aside and pass "
                "store= a new file."
            )


def _upgrade_from_1(conn: sqlite3.Connection) -> None:
    """Version 1 → 2: the new columns and tables, and each stored run's ``item_key`` from the
    dataset its experiment stored."""
    with conn:
        for table, columns in (("runs", _V2_RUN_COLUMNS), ("responses", _V2_RESPONSE_COLUMNS)):
            have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            for column, kind in columns.items():
                if column not in have:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        conn.execute(_REVISIONS)
        for exp_id, dataset in conn.execute("SELECT id, dataset FROM experiments").fetchall():
            if dataset is None:
                continue
            keys = item_keys(json.loads(dataset))
            conn.executemany(
                "UPDATE runs SET item_key = ? WHERE experiment_id = ? AND item = ?",
                [(key, exp_id, i) for i, key in enumerate(keys)],
            )
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
        )


def _plain(value: Any) -> Any:
    """What JSON cannot write, as the stable text it is stored by: a set as its sorted items
    (whatever the hash seed), anything else by its ``repr``."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=to_json)
    return repr(value)


def to_json(value: Any) -> str:
    """Parameters and items as stored and matched: canonical JSON (sorted keys, sets sorted),
    anything else by its ``repr``."""
    return json.dumps(value, default=_plain, sort_keys=True, ensure_ascii=False)


def item_keys(items: list[Any]) -> list[str]:
    """Each dataset item's identity: a digest of its content, and which of the equal items it
    is (the second of two equal items is another item)."""
    seen: dict[str, int] = {}
    keys = []
    for item in items:
        digest = hashlib.sha256(to_json(item).encode()).hexdigest()[:16]
        seen[digest] = seen.get(digest, -1) + 1
        keys.append(f"{digest}:{seen[digest]}")
    return keys


def frame(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> pd.DataFrame:
    """The rows of a query as a frame (column names from the query)."""
    import pandas as pd

    cursor = conn.execute(sql, args)
    if cursor.description is None:
        raise UserError(f"The statement {sql[:80]!r} returns no rows; give a SELECT")
    names = [d[0] for d in cursor.description]
    return pd.DataFrame.from_records(cursor.fetchall(), columns=names)
