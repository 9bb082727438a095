"""The experiment store's faults: each one a UserError naming the file and what to do."""

from __future__ import annotations

import sqlite3

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
