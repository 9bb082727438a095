"""One experiment, one owner: a second process on the same experiment is refused, naming the
first; one killed midway leaves its lock to the next at once, and what it stored is kept and
never made again (issue 32, point 2)."""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import agentnb as a
from agentnb.errors import UserError

OWNER = textwrap.dedent(
    """
    import asyncio, pathlib, sys, time
    import agentnb as a

    store, pause_at = sys.argv[1], int(sys.argv[2])
    go = pathlib.Path(store + ".go")

    async def fn(k, trial):
        print("run", k, trial, flush=True)
        if k == pause_at and trial == 0:
            print("paused", flush=True)
            deadline = time.monotonic() + 120
            while not go.exists() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
        model = a.ScriptedModel([a.say(f"{k}/{trial}")])
        return await a.run(a.Agent("solo", "Answer.", model), "q")

    try:
        exp = a.run_sync(a.experiment("shared", fn, {"k": list(range(20))}, trials=2,
                                      store=store, progress=False))
    except a.UserError as exc:
        print("refused", exc, flush=True)
        sys.exit(3)
    print("done", exp.made, len(exp.runs), flush=True)
    """
)


class Owner:
    """The script run in a process of its own; its printed lines read by a thread, so every
    wait on them is bounded."""

    def __init__(self, script, store, pause_at: int) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen(
            [sys.executable, str(script), str(store), str(pause_at)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.pid = self.proc.pid
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def read_until(self, word: str, timeout: float = 120.0) -> list[str]:
        """The lines printed up to the first that starts with ``word``."""
        got: list[str] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1.0)
            except queue.Empty:
                continue
            if line is None:
                break
            got.append(line)
            if line.startswith(word):
                return got
        raise AssertionError(f"no {word!r} line in {timeout}s; got {got}")

    def end(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=60)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def stored_runs(store) -> int:
    with sqlite3.connect(store) as conn:
        return conn.execute("SELECT count(*) FROM runs").fetchone()[0]


def test_a_second_process_is_refused_naming_the_first_and_nothing_runs_twice(tmp_path):
    script, store = tmp_path / "owner.py", tmp_path / "x.db"
    script.write_text(OWNER)
    first = Owner(script, store, pause_at=5)
    try:
        before = first.read_until("paused")
        second = subprocess.run(
            [sys.executable, str(script), str(store), "-1"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            timeout=120,
        )
        assert second.returncode == 3, second.stderr
        assert f"is being run by process {first.pid} on " in second.stdout
        assert [x for x in second.stdout.splitlines() if x.startswith("run")] == []  # none made
        (tmp_path / "x.db.go").touch()
        after = first.read_until("done")
    finally:
        first.end()
    made = [line for line in before + after if line.startswith("run")]
    assert len(made) == 40 and after[-1] == "done 40 40"
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT params, trial, count(*) FROM runs GROUP BY 1, 2").fetchall()
    assert len(rows) == 40 and {n for *_, n in rows} == {1}


def test_a_killed_owner_leaves_the_experiment_to_the_next_keeping_what_it_stored(tmp_path):
    script, store = tmp_path / "owner.py", tmp_path / "x.db"
    script.write_text(OWNER)
    first = Owner(script, store, pause_at=10)
    try:
        first.read_until("paused")  # the 10 runs before it made
        deadline = time.monotonic() + 60
        while stored_runs(store) < 10 and time.monotonic() < deadline:
            time.sleep(0.05)  # the writer commits them while the run waits
        assert stored_runs(store) == 10
        with sqlite3.connect(store) as conn:
            kept = conn.execute("SELECT id, params, started FROM runs ORDER BY id").fetchall()
        os.kill(first.pid, signal.SIGKILL)  # holding the lock, mid-run
        first.proc.wait(timeout=60)
    finally:
        first.end()
    (tmp_path / "x.db.go").touch()
    second = Owner(script, store, pause_at=-1)
    try:
        lines = second.read_until("done")
    finally:
        second.end()
    assert sum(line.startswith("run") for line in lines) == 30  # only what was not stored
    assert lines[-1] == "done 30 40"
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT id, params, started FROM runs ORDER BY id").fetchall()
        counts = conn.execute("SELECT count(*) FROM runs GROUP BY params, trial").fetchall()
    assert rows[:10] == kept  # the killed process's rows, as they were
    assert len(rows) == 40 and {n for (n,) in counts} == {1}


async def test_two_experiments_of_one_process_on_one_name_are_two_owners(tmp_path):
    release = asyncio.Event()
    made: list[int] = []

    async def fn(k: int, trial: int) -> a.RunResult:
        made.append(k)
        await asyncio.wait_for(release.wait(), timeout=60)
        return await a.run(a.Agent("solo", "A.", a.ScriptedModel([a.say("x")])), "q")

    store = tmp_path / "x.db"
    first = asyncio.ensure_future(a.experiment("same", fn, {"k": [1]}, store=store, progress=False))
    for _ in range(6000):  # (at most a minute) until the first owns it and is running
        if made:
            break
        await asyncio.sleep(0.01)
    assert made == [1]
    with pytest.raises(
        UserError, match=rf"'same' in .*x.db' is being run by process {os.getpid()}"
    ):
        await a.experiment("same", fn, {"k": [1]}, store=store, progress=False)
    release.set()
    exp = await asyncio.wait_for(first, timeout=60)
    assert made == [1] and len(exp.runs) == 1
    again = await a.experiment("same", fn, {"k": [1]}, store=store, progress=False)
    assert again.made == 0 and made == [1]  # the lock is free once the first ended
