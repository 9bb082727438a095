"""One experiment, one owner: a second process starting or resuming an experiment that another
is running in the same store is refused with a `UserError` naming that process.

Refusing, rather than waiting or sharing the work: a second process that waited would then
find nothing to do (or repeat the first one's failures), and one that shared the runs would
need every run claimed in the store before it starts, a write per run that a killed process
leaves behind. The owner holds an exclusive lock on a small file beside the store
(``.agentnb.db.<digest of the name>.lock``, holding the owner's process id, host and start
time); the operating system releases the lock when the process ends, however it ends
(SIGKILL included), so a killed experiment can be resumed at once. Two experiments of one
process (two ``experiment(...)`` calls gathered) are two owners too.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from pathlib import Path
from typing import IO, Any

from ...errors import UserError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


def lock_path(store: Path, name: str) -> Path:
    """The lock file of experiment ``name`` in ``store``."""
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return store.with_name(f".{store.name}.{digest}.lock")


class Owner:
    """This process's hold on one experiment of one store, until `release` (or its end)."""

    def __init__(self, store: Path, name: str) -> None:
        self.path = lock_path(store, name)
        try:
            handle: IO[str] = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (kept)
        except OSError as exc:
            raise UserError(
                f"The store {str(store)!r} cannot be written ({exc.strerror}: {self.path.name}); "
                "make its folder writable, or pass store= a file in a writable folder"
            ) from None
        if not _lock(handle):
            handle.seek(0)
            holder = _describe(handle.read())
            handle.close()
            raise UserError(
                f"Experiment {name!r} in {str(store)!r} is being run by {holder}; wait for it "
                "to end (then run it again to resume), stop it, or give this one another name "
                "or store."
            )
        handle.seek(0)
        handle.truncate()
        handle.write(
            json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()})
        )
        handle.flush()
        self._handle: IO[str] | None = handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing releases the lock
            self._handle = None

    def __enter__(self) -> Owner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _lock(handle: IO[str]) -> bool:
    """Take the file's exclusive lock without waiting; False when another holds it."""
    if fcntl is not None:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    import msvcrt  # pragma: no cover (Windows)

    try:  # pragma: no cover
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
    except OSError:  # pragma: no cover
        return False
    return True  # pragma: no cover


def _describe(text: str) -> str:
    try:
        holder = json.loads(text)
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(holder["since"])))
        return f"process {int(holder['pid'])} on {str(holder['host'])[:80]} (since {since})"
    except (ValueError, KeyError, TypeError):
        return "another process"
