"""The experiment store's faults: each one a UserError naming the file and what to do."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

import agentnb as a
from agentnb.errors import UserError
from agentnb.measure.experiments import store as store_module


async def solo(k: int, trial: int) -> a.RunResult:
    return await a.run(a.Agent("solo", "Answer.", a.ScriptedModel([a.say(f"{k}")])), "q")


async def test_a_damaged_file_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "agentnb.db"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(
        UserError, match=r"agentnb.db' is damaged or is not a database.*Move it aside"
    ):
        await a.experiment("x", solo, {"k": 1}, store=path, progress=False)
    assert path.read_bytes() == b"this is not a database at all" * 100


async def test_a_store_of_an_unknown_schema_version_is_refused(tmp_path):
    path = tmp_path / "x.db"
    await a.experiment("x", solo, {"k": 1}, store=path, progress=False)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(
        UserError, match=r"x.db' has schema version 99, this agentnb reads version 2"
    ):
        await a.experiment("x", solo, {"k": 1}, store=path, progress=False)
    with pytest.raises(UserError, match="schema version 99"):
        a.open_experiment("x", path)


async def test_another_programs_database_is_not_written_to(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE people (name TEXT)")
    with pytest.raises(UserError, match="not an agentnb store"):
        await a.experiment("x", solo, {"k": 1}, store=path, progress=False)
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert tables == ["people"]


async def test_a_store_locked_by_another_process_says_so(tmp_path, monkeypatch):
    path = tmp_path / "x.db"
    await a.experiment("x", solo, {"k": 1}, store=path, progress=False)
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.05)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA journal_mode=DELETE")  # an exclusive lock blocks readers too
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(UserError, match=r"x.db' is locked by another process.*store= another"):
            await a.experiment("x", solo, {"k": 1}, trials=2, store=path, progress=False)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(a.open_experiment("x", path).runs) == 1  # what was stored is still there


async def test_a_read_only_store_says_what_to_do(tmp_path, monkeypatch):
    path = tmp_path / "x.db"
    await a.experiment("x", solo, {"k": 1}, store=path, progress=False)
    real = sqlite3.connect

    def read_only(database, *args, **kwargs):  # tests run as root: chmod would not stop them
        conn = real(database, *args, **kwargs)
        if "mode=ro" not in str(database):
            conn.close()
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return conn

    monkeypatch.setattr(store_module.sqlite3, "connect", read_only)
    with pytest.raises(UserError, match=r"x.db' cannot be written.*open_experiment can still read"):
        await a.experiment("x", solo, {"k": 1}, trials=2, store=path, progress=False)
    assert len(a.open_experiment("x", path).runs) == 1


async def test_a_folder_given_as_the_store_is_refused(tmp_path):
    with pytest.raises(UserError, match="is a folder; give the database file's path"):
        await a.experiment("x", solo, {"k": 1}, store=tmp_path, progress=False)


async def test_the_store_is_agentnb_db_in_the_working_folder_by_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exp = await a.experiment("x", solo, {"k": [1, 2]}, progress=False)
    assert (tmp_path / "agentnb.db").exists()
    assert len(a.open_experiment("x").runs) == 2 and exp.path.name == "agentnb.db"


async def stored(tmp_path, **kwargs):
    """A store holding experiment ``x`` (2 configurations × 3 trials), all in its main file."""
    path = tmp_path / "x.db"
    await a.experiment("x", solo, {"k": [1, 2]}, trials=3, store=path, progress=False, **kwargs)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def truncated(path):
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)


def garbage_pages(path):
    with open(path, "r+b") as f:
        f.seek(4096 * 2)
        f.write(bytes(range(256)) * 32)


def garbage_header(path):
    with open(path, "r+b") as f:
        f.write(b"garbage!" * 8)


@pytest.mark.parametrize("damage", [truncated, garbage_pages, garbage_header])
async def test_a_damaged_file_is_refused_for_reading_and_writing_and_left_as_it_was(
    tmp_path, damage
):
    path = await stored(tmp_path)
    damage(path)
    before = path.read_bytes()
    made = []

    async def fn(k: int, trial: int) -> a.RunResult:
        made.append(k)
        return await solo(k, trial)

    with pytest.raises(UserError, match=r"x.db' is damaged or is not a database.*Move it aside"):
        _ = a.open_experiment("x", path).runs
    with pytest.raises(UserError, match=r"x.db' is damaged or is not a database.*Move it aside"):
        await a.experiment("x", fn, {"k": [1, 2]}, trials=4, store=path, progress=False)
    assert made == [] and path.read_bytes() == before


EDITS = {
    "a run's params not JSON": "UPDATE runs SET params = '{not json' WHERE id = 1",
    "a run's params not an object": "UPDATE runs SET params = '[1, 2]' WHERE id = 1",
    "the grid not JSON": "UPDATE experiments SET grid = 'nope'",
    "the dataset not JSON": "UPDATE experiments SET dataset = '{'",
    "a call's extra not JSON": "UPDATE calls SET extra = '{bad' WHERE rowid = 1",
    "a span's attrs not JSON": "UPDATE spans SET attrs = '{bad' WHERE rowid = 1",
}


@pytest.mark.parametrize("edit", list(EDITS.values()), ids=list(EDITS))
async def test_an_edited_row_is_a_user_error_naming_the_file_when_read(tmp_path, edit):
    path = await stored(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE calls SET extra = '{}'")  # so that there is one to damage
        conn.execute(edit)
    exp = a.open_experiment("x", path)
    with pytest.raises(UserError, match=r"x.db' is damaged or is not a database agentnb can read"):
        exp.runs, exp.calls, exp.spans, exp.summary("calls")


@pytest.mark.parametrize("fingerprint", ["[1]", "not json"])
async def test_an_edited_fingerprint_is_refused_before_anything_runs(tmp_path, fingerprint):
    path = await stored(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE experiments SET fingerprint = ?", (fingerprint,))
    made = []

    async def fn(k: int, trial: int) -> a.RunResult:
        made.append(k)
        return await solo(k, trial)

    with pytest.raises(UserError, match=r"x.db' is damaged"):
        await a.experiment("x", fn, {"k": [1, 2]}, trials=4, store=path, progress=False)
    assert made == []


MISSING = {
    "a table": ("DROP TABLE revisions", "the table 'revisions'"),
    "a column": ("ALTER TABLE runs DROP COLUMN timing", "runs.timing"),
    "a column of the cache": ("ALTER TABLE responses DROP COLUMN checksum", "responses.checksum"),
}


@pytest.mark.parametrize("edit, named", list(MISSING.values()), ids=list(MISSING))
async def test_a_store_missing_a_table_or_column_is_refused_before_a_run_is_made(
    tmp_path, edit, named
):
    path = await stored(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute(edit)
    made = []

    async def fn(k: int, trial: int) -> a.RunResult:
        made.append(k)
        return await solo(k, trial)

    message = rf"x.db' is damaged: it has no {named}\. Move it aside"
    with pytest.raises(UserError, match=message):
        await a.experiment("x", fn, {"k": [1, 2]}, trials=4, store=path, progress=False)
    with pytest.raises(UserError, match=message):
        a.open_experiment("x", path)
    assert made == []  # nothing made that could not be stored


async def test_a_store_whose_schema_version_was_removed_is_refused(tmp_path):
    path = await stored(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM meta")
    with pytest.raises(UserError, match=r"x.db' holds no schema version"):
        await a.experiment("x", solo, {"k": [1, 2]}, trials=3, store=path, progress=False)
    with pytest.raises(UserError, match=r"x.db' holds no schema version"):
        a.open_experiment("x", path)


async def test_a_version_1_store_is_upgraded_when_opened_for_writing(tmp_path):
    path = tmp_path / "x.db"
    await a.experiment(
        "x", solo_item, {"k": [1]}, dataset=["p", "q"], trials=2, store=path, progress=False
    )
    with sqlite3.connect(path) as conn:  # as agentnb wrote it at schema version 1
        conn.execute("DROP TABLE revisions")
        for column in ("item_key", "position", "timing", "tool_errors", "subagent_errors"):
            conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        for column in ("checksum", "wall_s", "critical_s"):
            conn.execute(f"ALTER TABLE responses DROP COLUMN {column}")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with pytest.raises(UserError, match=r"schema version 1.*store.upgrade\(path\)"):
        a.open_experiment("x", path)

    made = await a.experiment(
        "x", solo_item, {"k": [1]}, dataset=["p", "q"], trials=2, store=path, progress=False
    )
    assert made.made == 0  # the four stored runs, matched by their items once upgraded
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            "2",
        )
        keys = conn.execute("SELECT item_key FROM runs ORDER BY id").fetchall()
    assert all(k is not None for (k,) in keys) and len(keys) == 4
    assert len(a.open_experiment("x", path).runs) == 4


async def solo_item(k: int, trial: int, item: str) -> a.RunResult:
    return await solo(k, trial)


FIFO = """
import os, sys
import agentnb as a
for open_it in (lambda: a.open_experiment("x", sys.argv[1]),
                lambda: a.run_sync(a.experiment("x", lambda k, trial: None, {"k": [1]},
                                                store=sys.argv[1], progress=False))):
    try:
        open_it()
    except a.UserError as exc:
        print("refused:", exc)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_given_as_the_store_is_refused_at_once(tmp_path):
    fifo, script = tmp_path / "x.db", tmp_path / "fifo.py"
    os.mkfifo(fifo)
    script.write_text(FIFO)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(  # in a process of its own: a blocked open cannot hang the tests
        [sys.executable, str(script), str(fifo)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert len(lines) == 2 and all("is not a regular file (a FIFO" in line for line in lines)


async def test_readers_refuse_what_they_cannot_answer_with_a_user_error(tmp_path):
    path = await stored(tmp_path, score=lambda run, **_: 1.0)
    exp = a.open_experiment("x", path)
    with pytest.raises(UserError, match=r"pareto\(experiment, ...\) must be an Experiment"):
        a.pareto("x", "cost", "score")
    with pytest.raises(UserError, match=r"summary\(by=...\): no column 'unknown'"):
        exp.summary(by=["unknown"])
    for statement in (
        f"ATTACH DATABASE '{tmp_path / 'other.db'}' AS other",
        "PRAGMA journal_mode=DELETE",
        "INSERT INTO meta VALUES ('a', 'b')",
        "DELETE FROM runs",
        "SELECT load_extension('x')",
    ):
        with pytest.raises(UserError, match="The query failed on .*x.db': not authorized"):
            exp.query(statement)
    assert not (tmp_path / "other.db").exists() and len(exp.runs) == 6
    for metric in ("error", "score_error", "timing"):  # text, even where every value is empty
        with pytest.raises(UserError, match=f"the column '{metric}' holds text, not numbers"):
            a.compare(exp, {"k": 1}, {"k": 2}, metric)
        with pytest.raises(UserError, match=f"the column '{metric}' holds text, not numbers"):
            a.pareto(exp, metric, "score")
        with pytest.raises(UserError, match=f"the column '{metric}' holds text, not numbers"):
            exp.summary(metric)


async def test_a_new_experiment_in_a_locked_store_says_so(tmp_path, monkeypatch):
    path = await stored(tmp_path)
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.05)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a writer's lock
    try:
        with pytest.raises(UserError, match=r"x.db' is locked by another process"):
            await a.experiment("new", solo, {"k": [1]}, store=path, progress=False)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert [n for (n,) in sqlite3.connect(path).execute("SELECT name FROM experiments")] == ["x"]
